"""Apache Flink's side of benchmarks/peers.py and of the deep test tests/test_flink_peer.py.

    .venv-flink/bin/python benchmarks/peer_flink.py --input DIR --mode batch|streaming [--watermark 5]
                                                    [--repeat 2] [--cases 0,1,…]
    .venv-flink/bin/python benchmarks/peer_flink.py --check SPEC.json --out RESULTS.jsonl

Runs only under the Python of Flink's own virtual environment (`make peers` builds .venv-flink with
PyFlink, whose wheel carries Flink's runtime: the SQL planner, the filesystem connector, the csv format
and the blackhole sink); WQL never imports it, and nothing is downloaded when it runs. Flink runs as a
local mini-cluster with one slot per core, a new one for each job, as PyFlink's local execution does.

The first form times Flink SQL over the csv files in DIR (peer_cases.py's layout) in batch or streaming
mode (a watermark --watermark seconds behind the data), one JSON line per case of
peer_cases.BENCH_CASES: each window first runs once untimed, its windows written as csv files that
Python counts with the rows in them (it warms the JVM), then --repeat times into Flink's blackhole sink,
which keeps nothing; the best run counts. A window that Flink's table-valued function refuses runs,
where Flink has one, with its older group-window function; a window both refuse is a line with Flink's
reason. One more line times the scan alone (the rows read into the blackhole: the floor of any query
here), and one the start of the JVM and the table environment.

The second form is for the deep test: SPEC.json names tables (csv paths, a watermark each) and windows
over them (peer_cases.Case fields); in each mode of SPEC["modes"] every window runs, all in one job (a
UNION ALL), and each result row is a JSON line of RESULTS.jsonl; a window Flink refuses is a line with
the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from peer_cases import BENCH_CASES, Case, flink_group_window, flink_table, flink_tvf, millis_of
from pyflink.table import EnvironmentSettings, TableEnvironment

SCAN_SINK = "CREATE TABLE scan_sink (k INT, v DOUBLE, ts TIMESTAMP(3)) WITH ('connector' = 'blackhole')"
WINDOW_COLUMNS = "k INT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT, total DOUBLE, top DOUBLE"
WINDOW_SINK = f"CREATE TABLE window_sink ({WINDOW_COLUMNS}) WITH ('connector' = 'blackhole')"
COUNT_SINK = (
    "CREATE TABLE count_sink ({columns}) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')"
)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", help="a directory of csv files (peer_cases.py's layout)")
    parser.add_argument("--mode", choices=("batch", "streaming"), default="batch")
    parser.add_argument("--watermark", type=int, default=5, help="streaming: seconds behind the largest timestamp")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs of each window; the best is kept")
    parser.add_argument("--cases", help="indexes into peer_cases.BENCH_CASES, comma-separated (default: all)")
    parser.add_argument("--check", type=Path, help="the deep test's SPEC.json")
    parser.add_argument("--out", type=Path, help="with --check: the result rows, as JSON lines")
    return parser.parse_args()


def environment(mode: str) -> TableEnvironment:
    """A table environment in `mode`, timestamps in UTC, one task slot per core (as Spark's local[*])."""
    settings = EnvironmentSettings.in_batch_mode() if mode == "batch" else EnvironmentSettings.in_streaming_mode()
    tables = TableEnvironment.create(settings)
    tables.get_config().set("table.local-time-zone", "UTC")
    tables.get_config().set("parallelism.default", str(os.cpu_count() or 1))
    return tables


def refusal(error: BaseException) -> str:
    """Flink's reason, one line: the first line of its exception, without the exception's class; where that
    line only introduces a plan ("Cannot generate a valid execution plan …:"), the line that says what is
    not supported."""
    lines = [text.strip() for text in str(error).splitlines() if text.strip()] or [repr(error)]
    _, found, message = lines[0].partition("Exception: ")
    message = (message if found else lines[0]).strip()
    if message.endswith(":"):
        message = next((text for text in lines if "not supported" in text), message)
    return message[:300]


def planned(tables: TableEnvironment, case: Case, table: str) -> tuple[str, str | None, str | None]:
    """(form, query, reason): the window as a table-valued function if Flink plans it, else as a group
    window if that plans, else no query and Flink's reason for refusing the table-valued function."""
    query = flink_tvf(case, table)
    try:
        tables.explain_sql(query)
        return "tvf", query, None
    except Exception as error:  # Flink's planner raises its TableException through py4j
        reason = refusal(error)
    fallback = flink_group_window(case, table)
    if fallback is not None:
        try:
            tables.explain_sql(fallback)
            return "group window", fallback, reason
        except Exception as error:
            reason = f"{reason}; group window: {refusal(error)}"
    return "refused", None, reason


def counted(tables: TableEnvironment, query: str, folder: Path) -> tuple[int, int]:
    """(windows, rows in them) of the query's result: its windows written as csv into `folder` (the table
    count_sink), counted here, then deleted. Why not a global COUNT(*): in streaming mode it is a changelog
    reaching Python once a window (most of the benchmark's hour), and Flink's mini-batch, which shortens
    it, changes the plan; up to this sink the plan is the timed runs' own. Files Flink has not committed
    (hidden, in progress) are left out, so a short count shows as a difference from WQL's windows."""
    tables.execute_sql(f"INSERT INTO count_sink {query}").wait()
    windows = rows = 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if not path.name.startswith((".", "_")):
            with path.open(encoding="utf-8") as lines:
                for line in lines:
                    windows += 1
                    rows += int(line.split(",")[3])  # n: after k and the two timestamps, which hold no comma
        path.unlink()
    return windows, rows


def best_of(tables: TableEnvironment, statement: str, repeat: int) -> float:
    """The fastest of `repeat` runs of an INSERT, each a job of its own, waited for."""
    best = float("inf")
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        tables.execute_sql(statement).wait()
        best = min(best, time.perf_counter() - started)
    return best


def bench(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    tables = environment(args.mode)
    tables.execute_sql(
        flink_table("readings", str(Path(args.input).resolve()), args.watermark if args.mode == "streaming" else None)
    )
    tables.execute_sql(SCAN_SINK)
    tables.execute_sql(WINDOW_SINK)
    counts = Path(tempfile.mkdtemp(prefix="flink-counts-"))
    tables.execute_sql(COUNT_SINK.format(columns=WINDOW_COLUMNS, path=counts))
    emit({"case": "start", "seconds": round(time.perf_counter() - started, 3)})
    chosen = range(len(BENCH_CASES)) if not args.cases else [int(i) for i in args.cases.split(",")]
    try:
        for index in chosen:
            case = BENCH_CASES[index]
            form, query, reason = planned(tables, case, "readings")
            row: dict[str, Any] = {"case": case.name, "form": form}
            if reason is not None:
                row["refused"] = reason
            if query is not None:
                row["windows"], row["rows"] = counted(tables, query, counts)
                row["seconds"] = round(best_of(tables, f"INSERT INTO window_sink {query}", args.repeat), 3)
            emit(row)
    finally:
        shutil.rmtree(counts, ignore_errors=True)
    scan = best_of(tables, "INSERT INTO scan_sink SELECT k, v, ts FROM readings", args.repeat)
    emit({"case": "scan", "seconds": round(scan, 3)})


def check(args: argparse.Namespace) -> None:
    """Every window of the spec in each of its modes, one job a mode, the rows written as JSON lines."""
    spec = json.loads(args.check.read_text(encoding="utf-8"))
    with args.out.open("w", encoding="utf-8") as out:
        for mode in spec["modes"]:
            tables = environment(mode)
            for table in spec["tables"]:
                tables.execute_sql(
                    flink_table(table["name"], table["path"], table["watermark"] if mode == "streaming" else None)
                )
            parts = []
            for query in spec["queries"]:
                case = Case(query["kind"], query["size"], query.get("slide", 0))
                form, sql, reason = planned(tables, case, query["table"])
                out.write(json.dumps({"mode": mode, "id": query["id"], "form": form, "refused": reason}) + "\n")
                if sql is not None:
                    parts.append(f"SELECT {query['id']} AS id, k, window_start, window_end, n, total, top FROM ({sql})")
            if not parts:
                continue
            with tables.execute_sql(" UNION ALL ".join(parts)).collect() as results:
                for row in results:
                    identifier, k, start, end, n, total, top = row
                    fields = {
                        "k": k,
                        "start": millis_of(start),
                        "end": millis_of(end),
                        "n": n,
                        "total": total,
                        "top": top,
                    }
                    out.write(json.dumps({"mode": mode, "id": identifier, **fields}) + "\n")


def emit(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


def main() -> int:
    args = arguments()
    if args.check is not None:
        check(args)
    else:
        bench(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
