"""WQL against its peers on the same csv: Spark's own windows and Apache Flink SQL, batch and stream.

    python benchmarks/peers.py [--rows N] [--files 10] [--repeat 2] [--engines …] [--smoke] [--json]

N rows (default 2,000,000) of 100 keys, a reading every 0.1 s (each key every 10 s) whose timestamps
lag by up to 3 s at random (so the rows arrive up to 3 s out of order), with a pause of 60 s in each key's
readings every 450 s (sessions end there); written once as --files csv files in time order. Six windows,
count, sum and max of v per key and window, as peer_cases.BENCH_CASES lists them: TUMBLE(1 min),
HOP(5 min, 1 min), HOP(1 h, 1 min), HOP(90 s, 40 s), CUMULATE(1 h, 5 min) and SESSION(30 s).

Each engine and mode runs in a process of its own, one after the other, on the same files, each window's
result written whole into a sink that keeps nothing (benchmarks/peer_spark.py and peer_flink.py say how
each is timed):

- wql, native:       WQL's batch run and what a Spark user writes (window(), session_window), Spark's
                     noop sink; beside them Spark's scan of the csv alone (the floor of either);
- flink batch, flink streaming: Flink SQL's window functions in its batch and streaming modes (streaming
                     with a watermark 5 s behind the data, beyond its disorder), Flink's blackhole sink,
                     and Flink's own scan alone in each mode; Flink runs in its own virtual environment
                     (`make peers` builds .venv-flink; WQL never imports Flink);
- wql stream, native stream: the same files as a stream, one file a trigger: WQL's streaming job with
                     SLACK 5 SECONDS, drained at the end (`wql run --stream --once --drain`), and Spark's
                     streaming window() or session_window with a 5 s watermark; and Spark's stream that only
                     reads. Flink's streaming mode is the third stream: it reads the same rows as one csv
                     in the same order (given the files, its source reads them in parallel in an order
                     of its own, and its watermark drops rows of files still to come).

One JSON line per window (--json) with each engine's seconds (best of --repeat), Flink's form of the
window (its table-valued function, or its older group window where it refuses that), what each engine
refused and why, the windows each produced where they differ from WQL's, and the load average before and
after each process; then one line with the scans alone (WQL's is its read: the csv parsed, checked,
counted and cached, as each of its batch runs does first) and Flink's start. --smoke is 20,000 rows in 2
files, one run each. The machine is shared: read the ratios, with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from peer_cases import BENCH_CASES

HERE = Path(__file__).resolve().parent
FLINK_PYTHON = HERE.parent / ".venv-flink" / "bin" / "python"
KEYS = 100
STEP_MS = 100  # between readings (of all keys)
DISORDER_MS = 3_000
WATERMARK_S = 5  # Flink's watermark and WQL's and Spark's slack: beyond the disorder
RUN, PAUSE = 4_500, 500  # readings of all keys before each pause, and the readings the pause leaves out
BASE_MS = 1_704_067_200_000  # 2024-01-01 00:00:00 UTC: a day's start, so no window is cut by the epoch
ENGINES = ("wql", "native", "flink_batch", "flink_streaming", "wql_stream", "native_stream")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=10, help="csv files, one per trigger of the streams")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs of each window; the best is kept")
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated, of: {', '.join(ENGINES)}")
    parser.add_argument("--smoke", action="store_true", help="20,000 rows in 2 files, one run each")
    parser.add_argument("--json", action="store_true", help="one JSON object per window, and one for the scans")
    parser.add_argument("--flink-python", type=Path, default=FLINK_PYTHON, help="the Python of Flink's environment")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.files, args.repeat = 20_000, 2, 1
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = sorted(set(args.engines) - set(ENGINES))
    if unknown:
        parser.error(f"unknown engine {', '.join(unknown)}; choose from {', '.join(ENGINES)}")
    return args


def write_rows(folder: Path, rows: int, files: int, seed: int = 7) -> None:
    """The csv files, in time order, with older modification times first (Spark's file stream takes files in
    that order). Row j is reading i = j + (j // RUN) * PAUSE: key i % KEYS at i × 0.1 s, less up to 3 s."""
    draw = np.random.default_rng(seed)
    j = np.arange(rows, dtype=np.int64)
    reading = j + (j // RUN) * PAUSE
    millis = BASE_MS + reading * STEP_MS - draw.integers(0, DISORDER_MS + 1, rows)
    stamps = np.datetime_as_string(millis.astype("datetime64[ms]"), unit="ms")
    values = np.round(draw.random(rows) * 100, 2).tolist()
    keys = (reading % KEYS).tolist()
    folder.mkdir(parents=True)
    for index in range(files):
        first, last = index * rows // files, (index + 1) * rows // files
        lines = [
            f"{k},{v!r},{stamp.replace('T', ' ')}\n"
            for k, v, stamp in zip(keys[first:last], values[first:last], stamps[first:last], strict=True)
        ]
        path = folder / f"part-{index:05d}.csv"
        path.write_text("".join(lines), encoding="utf-8")
        stamp = 1_700_000_000 + index
        os.utime(path, (stamp, stamp))


def one_file(folder: Path, target: Path) -> Path:
    """The files of `folder` as one csv in `target`, in name (and time) order: Flink's streaming mode reads it.
    Why: given the files, Flink's source reads them in parallel in an order of its own, so its watermark passes
    rows still to come in earlier files and it drops them as late (it counted 40–60% of the rows); one file is
    one split, read in order, as WQL's and Spark's streams read one file a trigger in name order."""
    target.mkdir(parents=True)
    with (target / "rows.csv").open("w", encoding="utf-8") as out:
        for part in sorted(folder.glob("part-*.csv")):
            out.write(part.read_text(encoding="utf-8"))
    return target


def commands(args: argparse.Namespace, folder: Path, in_order: Path) -> dict[str, list[str]]:
    """Each engine's process: its command line (Flink's streaming mode reads `in_order`, the rows as one file)."""
    spark = [sys.executable, str(HERE / "peer_spark.py"), "--input", str(folder), "--repeat", str(args.repeat)]

    def flink(rows: Path) -> list[str]:
        return [str(args.flink_python), str(HERE / "peer_flink.py"), "--input", str(rows), "--repeat", str(args.repeat)]

    slack = ["--slack", str(WATERMARK_S)]
    return {
        "wql": [*spark, "--engine", "wql", "--mode", "batch"],
        "native": [*spark, "--engine", "spark", "--mode", "batch"],
        "flink_batch": [*flink(folder), "--mode", "batch"],
        "flink_streaming": [*flink(in_order), "--mode", "streaming", "--watermark", str(WATERMARK_S)],
        "wql_stream": [*spark, "--engine", "wql", "--mode", "stream", *slack],
        "native_stream": [*spark, "--engine", "spark", "--mode", "stream", *slack],
    }


def run(engine: str, command: list[str]) -> tuple[dict[str, dict[str, Any]], tuple[float, float]]:
    """One engine's lines by case, and the load average before and after it ran."""
    before = os.getloadavg()[0]
    print(f"{engine}: {' '.join(command[1:])} (load average {before:.1f})", file=sys.stderr, flush=True)
    done = subprocess.run(command, cwd=HERE.parent, stdout=subprocess.PIPE, text=True, check=False)
    after = os.getloadavg()[0]
    if done.returncode != 0:
        raise SystemExit(f"{engine} failed (exit {done.returncode}); its output is above")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    for line in lines:
        print(f"  {json.dumps(line)}", file=sys.stderr, flush=True)
    return {line["case"]: line for line in lines}, (before, after)


def merged(case: str, results: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """One case's line: each engine's seconds, Flink's forms, refusals, and the windows each engine produced
    where they differ from WQL's batch run."""
    row: dict[str, Any] = {"case": case}
    refused, differ = {}, {}
    reference = results.get("wql", {}).get(case, {})
    for engine, lines in results.items():
        line = lines.get(case)
        if line is None:
            continue
        row[f"{engine}_s"] = line.get("seconds")
        if "plan" in line:
            row["plan"] = line["plan"]
        if "form" in line:
            row[f"{engine}_form"] = line["form"]
        if line.get("refused"):
            refused[engine] = line["refused"]
        if (
            "windows" in line
            and reference
            and (line["windows"], line["rows"]) != (reference["windows"], reference["rows"])
        ):
            differ[engine] = {"windows": line["windows"], "rows": line["rows"]}
    if reference:
        row["windows"], row["rows_in_windows"] = reference["windows"], reference["rows"]
    flink = [row[k] for k in ("flink_batch_s", "flink_streaming_s") if row.get(k) is not None]
    if flink and row.get("wql_s"):
        row["flink_over_wql"] = round(min(flink) / row["wql_s"], 2)
    if row.get("native_s") and row.get("wql_s"):
        row["native_over_wql"] = round(row["native_s"] / row["wql_s"], 2)
    if row.get("flink_streaming_s") and row.get("wql_stream_s"):
        row["flink_streaming_over_wql_stream"] = round(row["flink_streaming_s"] / row["wql_stream_s"], 2)
    row["refused"], row["differ"] = refused, differ
    return row


def main() -> int:
    args = arguments()
    if any(e.startswith("flink") for e in args.engines) and not args.flink_python.exists():
        print(f"Flink's environment is missing ({args.flink_python}): `make peers` builds it", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="wql-peers-"))
    try:
        write_rows(work / "rows", args.rows, args.files)
        every = commands(args, work / "rows", one_file(work / "rows", work / "in-order"))
        results, loads = {}, []
        for engine in args.engines:
            results[engine], load = run(engine, every[engine])
            loads.extend(load)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    common = {
        "rows": args.rows,
        "files": args.files,
        "load_low": round(min(loads), 1),
        "load_high": round(max(loads), 1),
    }
    lines = [{**merged(case.name, results), **common} for case in BENCH_CASES]
    scans = {f"{e}_s": results[e]["scan"]["seconds"] for e in results if "scan" in results[e]}
    start = results.get("flink_batch", {}).get("start") or results.get("flink_streaming", {}).get("start")
    lines.append({"case": "scan", **scans, "flink_start_s": start and start["seconds"], **common})
    for line in lines:
        print(json.dumps(line) if args.json else text(line), flush=True)
    return 0


def text(line: dict[str, Any]) -> str:
    """A line for a person: the seconds of each engine that ran, what was refused."""
    figures = "  ".join(f"{e} {line[f'{e}_s']:.2f}s" for e in ENGINES if line.get(f"{e}_s") is not None)
    refused = "".join(f"\n    {e} refuses: {why}" for e, why in line.get("refused", {}).items())
    differ = "".join(f"\n    {e} windows: {c}" for e, c in line.get("differ", {}).items())
    return f"{line['case']:<22} {figures}{refused}{differ}"


if __name__ == "__main__":
    sys.exit(main())
