"""Run the benchmarks' --json modes and keep their lines in one results file, for benchmarks/plots.py.

    python benchmarks/record.py [--results benchmarks/results.jsonl] [--only sliding,streaming,…] [--list]

Each benchmark runs in a process of its own, as `make bench` runs it, with --json. Every JSON line it
prints is kept with three more keys: `benchmark` (its name below), `args` (its command line) and
`load` (the machine's 1-minute load average when the line arrived: the machine is shared, and the
seconds mean little without it). A run replaces the lines of the benchmarks it ran and keeps the
others, so one benchmark can be measured again (`--only intervals`) without the rest. The file is
written again after each benchmark, so an interrupted run keeps what it finished.

Plotting is separate (benchmarks/plots.py reads the file), so the charts can be redrawn without
running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.jsonl"

# name -> the benchmark's command line after `python benchmarks/`; the figures of docs/performance.md.
BENCHMARKS: dict[str, list[str]] = {
    "sliding": ["sliding.py", "--json"],
    "streaming": ["streaming.py", "--json", "--ratios", "1,60", "--repeat", "1"],
    # The same rows as four files a trigger, as a source that lands small files does: a trigger's scan is four tasks.
    "streaming_4_files": ["streaming.py", "--json", "--ratios", "1", "--files-per-trigger", "4", "--repeat", "1"],
    "stream_state": ["stream_state.py", "--json", "--provider", "rocksdb"],
    # In memory, tumbling only: a million keys at ratio 60 outgrow a 4g driver in Spark's default provider.
    "stream_state_memory": ["stream_state.py", "--json", "--provider", "memory", "--ratios", "1"],
    "slide_by_tuple": ["slide_by_tuple.py", "--json"],
    "slide_by_tuple_max": ["slide_by_tuple.py", "--json", "--aggregate", "max"],
    "sessions": ["sessions.py", "--json"],
    "intervals": ["intervals.py", "--json", "--repeat", "1"],  # its slowest contenders take minutes a run
    "calendar": ["calendar_windows.py", "--json"],  # not calendar.py: it would hide the standard library's
    "peers": ["peers.py", "--json"],  # Flink in .venv-flink: `make peers` builds it
}


def read(path: Path) -> list[dict[str, object]]:
    """The results file's lines (none if it is not there)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write(path: Path, rows: list[dict[str, object]]) -> None:
    """All lines, in the order of BENCHMARKS, written whole (a reader never sees half a file)."""
    order = {name: index for index, name in enumerate(BENCHMARKS)}
    rows = sorted(rows, key=lambda row: order.get(str(row.get("benchmark")), len(order)))
    partial = path.with_suffix(".partial")
    partial.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    partial.replace(path)


def run(name: str) -> list[dict[str, object]]:
    """One benchmark's JSON lines, each with its name, command line and the load average then."""
    command = [sys.executable, str(HERE / BENCHMARKS[name][0]), *BENCHMARKS[name][1:]]
    print(f"{name}: {' '.join(BENCHMARKS[name])} (load average {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    started = time.monotonic()
    rows = []
    with subprocess.Popen(command, cwd=HERE.parent, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        for printed in process.stdout:
            line = printed.strip()
            if not line.startswith("{"):
                continue
            row = {"benchmark": name, "args": BENCHMARKS[name][1:], **json.loads(line)}
            row["load"] = round(os.getloadavg()[0], 1)
            rows.append(row)
            print(f"  {line}", file=sys.stderr, flush=True)
    if process.returncode != 0:
        raise SystemExit(f"{name} failed (exit {process.returncode}); the results file keeps the earlier lines")
    print(f"{name}: {len(rows)} lines in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON lines file (default %(default)s)")
    parser.add_argument("--only", help=f"comma-separated, of: {', '.join(BENCHMARKS)}")
    parser.add_argument("--list", action="store_true", help="print the benchmarks' command lines and stop")
    args = parser.parse_args()
    if args.list:
        for name, command in BENCHMARKS.items():
            print(f"{name}: python benchmarks/{' '.join(command)}")
        return 0
    names = list(BENCHMARKS) if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    rows = read(args.results)
    for name in names:
        fresh = run(name)
        rows = [row for row in rows if row.get("benchmark") != name] + fresh
        write(args.results, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
