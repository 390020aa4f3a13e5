"""WQL's and Spark's own side of benchmarks/peers.py, one engine and mode per process.

    python benchmarks/peer_spark.py --engine wql|spark --mode batch|stream --input DIR
                                    [--slack 5] [--repeat 2] [--cases 0,1,…]

Reads the csv files in DIR (peer_cases.py's layout) and prints one JSON line per case of
peer_cases.BENCH_CASES, each window's result written whole to Spark's noop sink, which keeps nothing:

- wql, batch:    the query as `wql run` runs it (the stream read from its csv files and checked, then
                 the plan WQL chooses); one more line ("scan") times that read alone: the csv parsed
                 with a column for malformed lines, its rows counted and cached, as every case's run
                 does before its windows;
- spark, batch:  what a Spark user writes: groupBy(k, window(ts, size, slide)) for TUMBLE and HOP,
                 session_window for SESSION, and for CUMULATE (Spark has no such window) window() of the
                 step and then a running aggregate over each period's steps, as benchmarks/sliding.py;
                 one more line times the scan alone (the csv read into the noop sink);
- wql, stream:   WQL's streaming job with SLACK --slack seconds, one file per trigger, then drained (as
                 `wql run --stream --once --drain`);
- spark, stream: Spark's streaming window() or session_window with a watermark of --slack seconds,
                 append mode, one file per trigger; one more line times the stream that only reads.

A batch window first runs once untimed into a count of its windows and of the rows in them (warming the
JVM), then --repeat times into the noop sink; a stream first runs once untimed over a few rows, then
--repeat times over the files, counting what it writes (an Observation). The best run counts. A window
an engine refuses is a line with its reason.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import noop_stream, session
from peer_cases import BENCH_CASES, SPARK_SCHEMA, Case, wql_query
from pyspark.errors import AnalysisException

from wql.grammar.errors import WQLError

OBSERVED = "peer"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("wql", "spark"), required=True)
    parser.add_argument("--mode", choices=("batch", "stream"), required=True)
    parser.add_argument("--input", required=True, help="a directory of csv files (peer_cases.py's layout)")
    parser.add_argument("--slack", type=int, default=5, help="streams: seconds of disorder allowed (the watermark)")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs of each window; the best is kept")
    parser.add_argument("--cases", help="indexes into peer_cases.BENCH_CASES, comma-separated (default: all)")
    parser.add_argument("--master", default="local[*]")
    return parser.parse_args()


def spark_windows(case: Case, rows: Any) -> Any:
    """Spark's own form of the window over `rows` (a DataFrame or a watermarked stream)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    measures = (F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"), F.max("v").alias("top"))
    if case.kind == "session":
        grouped = rows.groupBy("k", F.session_window("ts", f"{case.size} seconds").alias("w"))
    elif case.kind == "cumulate":
        steps = rows.groupBy("k", F.window("ts", f"{case.slide} seconds").alias("w")).agg(*measures)
        period = F.floor(F.unix_seconds("w.start") / case.size)
        so_far = Window.partitionBy("k", period).orderBy("w.start").rowsBetween(Window.unboundedPreceding, 0)
        return steps.select(
            "k",
            F.timestamp_seconds(period * case.size).alias("window_start"),
            F.col("w.end").alias("window_end"),
            F.sum("n").over(so_far).alias("n"),
            F.sum("total").over(so_far).alias("total"),
            F.max("top").over(so_far).alias("top"),
        )
    else:
        slide = case.slide if case.kind == "hop" else case.size
        grouped = rows.groupBy("k", F.window("ts", f"{case.size} seconds", f"{slide} seconds").alias("w"))
    return grouped.agg(*measures).select(
        "k", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "n", "total", "top"
    )


def counts(frame: Any) -> tuple[int, int]:
    """(windows, rows in them) of a result."""
    from pyspark.sql import functions as F

    row = frame.agg(F.count(F.lit(1)).alias("w"), F.sum("n").alias("r")).first()
    return int(row["w"]), int(row["r"] or 0)


def batch(spark: Any, build: Callable[[], Any], repeat: int) -> dict[str, Any]:
    """One untimed count of build()'s result, then the best of `repeat` runs into the noop sink."""
    windows, rows = counts(build())
    spark.catalog.clearCache()
    best = float("inf")
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        build().write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - started)
        spark.catalog.clearCache()  # WQL caches the stream it read and checked; the next run reads again
    return {"windows": windows, "rows": rows, "seconds": round(best, 3)}


def wql_read(spark: Any, folder: str, repeat: int) -> float:
    """The best of `repeat` reads of the stream as WQL's batch run reads it (load_inputs: parsed, checked,
    counted and cached), the cache cleared after each: the share of every case's time that is the read."""
    import wql

    compiled = wql.compile(wql_query(BENCH_CASES[0], "readings", folder))
    best = float("inf")
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        compiled.load_inputs(spark)
        best = min(best, time.perf_counter() - started)
        spark.catalog.clearCache()
    return best


def observed_sink(totals: list[int]) -> Callable[[Any, Any], int]:
    """A WQL stream's sink: the trigger's windows into the noop sink, counted on the same job."""

    def sink(windows: Any, trigger: Any) -> int:
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        seen = Observation()
        observed = windows.observe(seen, F.count(F.lit(1)).alias("w"), F.sum("n").alias("r"))
        observed.write.format("noop").mode("overwrite").save()
        totals[0] += int(seen.get["w"])
        totals[1] += int(seen.get["r"] or 0)
        return int(seen.get["w"])

    return sink


def warm_up_rows(folder: str, work: Path, rows: int = 20_000) -> Path:
    """A directory with the first `rows` rows of the first file: a stream's untimed first run reads it (a
    process's first trigger of a plan compiles and loads much of Spark, which would fall on the timed run)."""
    target = work / "warm-up"
    if not target.exists():
        target.mkdir()
        first = sorted(Path(folder).glob("*.csv"))[0]
        with first.open(encoding="utf-8") as lines:
            (target / first.name).write_text(
                "".join(line for _, line in zip(range(rows), lines, strict=False)), encoding="utf-8"
            )
    return target


def wql_stream(spark: Any, case: Case, folder: str, slack: int, work: Path) -> tuple[float, int, int]:
    """WQL's streaming job over the files, one a trigger, then drained: (seconds, windows, rows)."""
    import wql

    compiled = wql.compile(wql_query(case, "readings", folder, slack))
    totals = [0, 0]
    started = time.perf_counter()
    run = compiled.start(spark, sink=observed_sink(totals), once=True, max_files=1)
    run.wait()
    run.drain()
    seconds = time.perf_counter() - started
    run.close()
    return seconds, totals[0], totals[1]


def spark_stream(spark: Any, case: Case | None, folder: str, slack: int, work: Path) -> tuple[float, int, int]:
    """Spark's streaming aggregation of the files, one a trigger, append mode, noop sink: (seconds, windows,
    rows). Without a case, the stream that only reads (the floor), its rows counted."""
    from pyspark.sql import functions as F

    stream = spark.readStream.schema(SPARK_SCHEMA).option("maxFilesPerTrigger", 1).csv(folder)
    if case is None:
        result = scan(stream)
    else:
        result = spark_windows(case, stream.withWatermark("ts", f"{slack} seconds"))
    result = result.observe(OBSERVED, F.count(F.lit(1)).alias("w"), F.sum("n").alias("r"))
    seconds, query = noop_stream(result, tempfile.mkdtemp(prefix="checkpoint-", dir=work))
    metrics = [p.observedMetrics.get(OBSERVED) for p in query.recentProgress]
    seen = [m for m in metrics if m is not None]
    return seconds, sum(int(m["w"]) for m in seen), sum(int(m["r"] or 0) for m in seen)


def streamed(run: Callable[[], tuple[float, int, int]], repeat: int) -> dict[str, Any]:
    """The best of `repeat` runs of a stream, with the windows and rows it wrote."""
    results = [run() for _ in range(max(1, repeat))]
    seconds, windows, rows = min(results)
    return {"windows": windows, "rows": rows, "seconds": round(seconds, 3)}


def refusal(error: BaseException) -> str:
    """The engine's reason, one line."""
    line = next((text for text in str(error).splitlines() if text.strip()), repr(error))
    return line.strip()[:300]


def measure(spark: Any, args: argparse.Namespace, case: Case, work: Path) -> dict[str, Any]:
    import wql

    folder = str(Path(args.input).resolve())
    if args.mode == "stream":
        stream = wql_stream if args.engine == "wql" else spark_stream
        stream(spark, case, str(warm_up_rows(folder, work)), args.slack, work)  # untimed: loads the plan's code
        return streamed(lambda: stream(spark, case, folder, args.slack, work), args.repeat)
    if args.engine == "wql":
        compiled = wql.compile(wql_query(case, "readings", folder))

        def build() -> Any:
            inputs, _ = compiled.load_inputs(spark)
            return compiled.run(spark, **inputs)

        return {"plan": compiled.plan, **batch(spark, build, args.repeat)}
    return batch(spark, lambda: spark_windows(case, spark.read.schema(SPARK_SCHEMA).csv(folder)), args.repeat)


def main() -> int:
    args = arguments()
    spark = session(args.master, f"peers: {args.engine} {args.mode}")
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="wql-peers-"))
    chosen = range(len(BENCH_CASES)) if not args.cases else [int(i) for i in args.cases.split(",")]
    try:
        for index in chosen:
            case = BENCH_CASES[index]
            try:
                row = measure(spark, args, case, work)
            except (WQLError, AnalysisException) as error:  # the engine refused the window: its reason
                row = {"refused": refusal(error)}
            emit({"case": case.name, **row})
        folder = str(Path(args.input).resolve())
        if args.engine == "wql" and args.mode == "batch":
            emit({"case": "scan", "seconds": round(wql_read(spark, folder, args.repeat), 3)})
        if args.engine == "spark":
            if args.mode == "batch":
                floor = batch(spark, lambda: scan(spark.read.schema(SPARK_SCHEMA).csv(folder)), args.repeat)
            else:
                floor = streamed(lambda: spark_stream(spark, None, folder, args.slack, work), args.repeat)
            emit({"case": "scan", "seconds": floor["seconds"], "rows": floor["rows"]})
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def scan(rows: Any) -> Any:
    """The rows as read, each counting as one (the floor's `n`, so that its count is the rows read)."""
    from pyspark.sql import functions as F

    return rows.withColumn("n", F.lit(1))


def emit(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    sys.exit(main())
