"""Sliding windows on a stream: WQL's streaming job against Spark's streaming window() and WQL's batch run.

    python benchmarks/streaming.py [--rows N | --rows-per-trigger N] [--files 10] [--files-per-trigger 1]
                                   [--ratios 1,10,60,240] [--no-sessions] [--json] [--repeat 2] [--verbose]

N rows (default 5,000,000) of 100 keys, a reading every 0.1 s, written once as --files parquet files
in time order. Each contender reads them from disk (nothing cached), one file per trigger; with
--files-per-trigger K each trigger's rows are K files instead (as a source that lands many small files
does), so a trigger's scan is K tasks rather than one:

- wql:    the job `wql compile --stream` prints (slack 0: the files arrive in order), windows written
          to Spark's noop sink as they close, then drained;
- native: what a Spark user writes: readStream, withWatermark("ts", "0 seconds"),
          groupBy(k, window(ts, RANGE, SLIDE)).agg(…), append mode, the noop sink, availableNow;
- batch:  WQL's batch job over the same files.

SLIDE is 1 minute and RANGE = ratio × SLIDE; sum, count and max per key and window. For each
ratio it prints the seconds, the ratios, the largest state WQL kept after a trigger (cells of the
open windows, in rows) and, once, the fixed cost of a trigger: the time of a trigger with no rows.
WQL's windows are counted as they are written (an Observation, no extra job) and checked against
the batch run, and the Spark jobs each trigger of WQL's stream ran (`jobs_per_trigger`). Machines are
shared and noisy: read the ratios, not the seconds.

Before anything is timed, each contender runs once over two small files (a fiftieth of the rows): the
JVM's first trigger compiles and loads much of Spark (several seconds), and without the warm-up that
cost would fall on whichever contender happens to run first. Even so a process's first full run of a
plan is slower than its second, so each contender runs --repeat times (2) and the fastest counts.

Beside them, two floors that are not contenders: Structured Streaming with foreachBatch aggregating
each trigger's rows once into per-key panes and writing them nowhere, no state, no windows (`floor_s`:
the least any streaming plan does per trigger), and the same stream with a foreachBatch that does nothing
(`empty_stream_s`: Structured Streaming's own cost of the triggers, offsets, commits and the call into
Python, before a row is read). `floor_over_batch` says how close to the batch run a stream can get here
with this many triggers. Each ratio's line also gives issue 12's targets in seconds: `needed_for_10x_s`
(a tenth of native) and `needed_for_2x_batch_s` (twice the batch run), to set against the floors.

Then a session case (unless --no-sessions) on files of the same size with pauses (each key reads every
10 s for 450 s, then pauses 60 s): [SESSION GAP 30 SECONDS WATTR ts PATTR k] on WQL's stream against
Spark's streaming session_window with a watermark (append mode) and WQL's batch run; its JSON line has
`case` "session" and the same keys but ratio.
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

from harness import counting_sink, described, land_parquet, noop_stream, session

SLIDE_SECONDS = 60
KEYS = 100
GAP_SECONDS = 30  # the session case: readings 10 s apart, pauses of 60 s
PAUSE_EVERY = 500  # rows: each key's 50 readings per 500 rows, one block in ten left out
SCHEMA = "k INT, v DOUBLE, ts TIMESTAMP"
PER_TRIGGER = [1]  # files a trigger reads (--files-per-trigger), set once in main before any stream starts


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, default=10, help="parquet files, one per trigger")
    parser.add_argument("--rows-per-trigger", type=int, help="rows of each trigger (sets --rows to this × --files)")
    parser.add_argument(
        "--files-per-trigger", type=int, default=1, help="files each trigger reads (its rows split into them)"
    )
    parser.add_argument("--ratios", default="1,10,60,240", help="RANGE/SLIDE ratios, comma-separated")
    parser.add_argument("--skip-native-above", type=int, default=None, help="leave out native above this ratio")
    parser.add_argument("--json", action="store_true", help="one JSON object per ratio")
    parser.add_argument("--verbose", action="store_true", help="each WQL trigger's status line")
    parser.add_argument(
        "--sessions", action=argparse.BooleanOptionalAction, default=True, help="the session case (default: on)"
    )
    parser.add_argument("--master", default="local[*]")
    parser.add_argument(
        "--state",
        choices=["store", "files"],
        default="store",
        help="where WQL's stream keeps its state (spark.wql.stream.state): Spark's state store where the "
        "query allows it (the default), or the checkpoint's own files",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="runs of each contender, the fastest kept (default 2: a process's "
        "first run of a plan is slower, warm-up or not)",
    )
    return parser.parse_args()


def write_files(spark: Any, rows: int, files: int, folder: Path, pauses: bool = False) -> None:
    """The stream's files, in time order: file i holds rows [i·N/files, (i+1)·N/files), older mtimes first
    (Spark's file source takes files by modification time). With `pauses` (the session case), every tenth
    block of 500 rows is left out: each key reads every 10 s for 450 s, then pauses 60 s."""
    from pyspark.sql import functions as F

    folder.mkdir(parents=True)
    for index in range(files):
        first, last = index * rows // files, (index + 1) * rows // files
        ids = spark.range(first, last, numPartitions=1)
        if pauses:
            ids = ids.where((F.col("id") / PAUSE_EVERY).cast("long") % 10 != 9)
        frame = ids.select(
            (F.col("id") % KEYS).cast("int").alias("k"),
            (F.rand(7 + index) * 100).alias("v"),
            F.timestamp_seconds(F.col("id") / 10).alias("ts"),
        )
        land_parquet(frame, folder, index)


def stream_wql(spark: Any, compiled: Any, verbose: bool) -> tuple[float, int, int, int, float]:
    """WQL's streaming job, one file per trigger, then drained: (seconds, windows emitted, triggers, the
    largest state a trigger left, in rows, Spark jobs per trigger). Structured Streaming runs a query's
    jobs in a job group named by its run, so Spark's status tracker counts them, AQE's stage jobs too."""
    counted: list[int] = []
    sink = counting_sink(counted)
    report = (lambda t: print("  " + t.line(), file=sys.stderr)) if verbose else None
    started = time.perf_counter()
    run = compiled.start(spark, sink=sink, once=True, max_files=PER_TRIGGER[0], on_trigger=report)
    run.wait()
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(str(run.query.runId)))
    run.drain()
    seconds = time.perf_counter() - started
    run.close()
    triggers = len(run.triggers)
    return seconds, sum(counted), triggers, max(t.state_rows for t in run.triggers), jobs / max(1, triggers)


def stream_native(spark: Any, folder: Path, work: Path, aggregate: Any) -> float:
    """Spark's own streaming aggregation (`aggregate` of the watermarked stream), append mode, noop sink."""
    checkpoint = tempfile.mkdtemp(prefix="wql-bench-native-", dir=work)
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", PER_TRIGGER[0]).parquet(str(folder))
    windows = aggregate(stream.withWatermark("ts", "0 seconds"))
    seconds, _ = noop_stream(windows, checkpoint)
    return seconds


def stream_floor(spark: Any, folder: Path, work: Path, ratio: int) -> float:
    """What any streaming plan must at least do: Structured Streaming's own work per trigger (offsets,
    commits, one job) and one aggregation of the trigger's rows into per-key panes, written nowhere
    (foreachBatch, noop sink). No state, no windows: a lower bound for WQL's trigger, not a contender."""
    from pyspark.sql import functions as F

    checkpoint = tempfile.mkdtemp(prefix="wql-bench-floor-", dir=work)
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", PER_TRIGGER[0]).parquet(str(folder))
    pane = F.floor(F.unix_micros("ts") / (SLIDE_SECONDS * 1_000_000)).alias("pane")

    def aggregate(rows: Any, batch: int) -> None:
        rows.groupBy("k", pane).agg(*measures()).write.format("noop").mode("overwrite").save()

    started = time.perf_counter()
    query = stream.writeStream.foreachBatch(aggregate).option("checkpointLocation", checkpoint)
    query.trigger(availableNow=True).start().awaitTermination()
    return time.perf_counter() - started


def stream_empty(spark: Any, folder: Path, work: Path) -> float:
    """Structured Streaming's own cost of the triggers: the same source and trigger as the floor, and a
    foreachBatch that reads nothing (offsets, commits, planning the micro-batch, the call into Python)."""
    checkpoint = tempfile.mkdtemp(prefix="wql-bench-empty-stream-", dir=work)
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", PER_TRIGGER[0]).parquet(str(folder))
    started = time.perf_counter()
    query = stream.writeStream.foreachBatch(lambda rows, batch: None).option("checkpointLocation", checkpoint)
    query.trigger(availableNow=True).start().awaitTermination()
    return time.perf_counter() - started


def fastest(runs: int, contender: Callable[..., Any], *arguments: Any) -> Any:
    """The fastest of `runs` runs of contender(*arguments), which returns (seconds, …) or seconds."""
    results = [contender(*arguments) for _ in range(max(1, runs))]
    return min(results, key=lambda r: r[0] if isinstance(r, tuple) else r)


def batch_wql(spark: Any, compiled: Any) -> tuple[float, int]:
    """WQL's batch job over the same files: (seconds, windows)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    started = time.perf_counter()
    inputs, _ = compiled.load_inputs(spark)
    seen = Observation()
    result = compiled.run(spark, **inputs).observe(seen, F.count(F.lit(1)).alias("n"))
    result.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started, int(seen.get["n"])


def measures() -> Any:
    from pyspark.sql import functions as F

    return F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"), F.max("v").alias("top")


def sliding_query(folder: Path, ratio: int) -> str:
    return (
        f"CREATE STREAM bench ({SCHEMA}) FROM '{folder}' FORMAT parquet;\n"
        f"SELECT k, sum(v) AS total, count(*) AS n, max(v) AS top "
        f"FROM bench [RANGE {ratio} MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY k"
    )


def native_sliding(ratio: int) -> Any:
    """What a Spark user writes: groupBy(k, window(ts, RANGE, SLIDE)) of the watermarked stream."""
    from pyspark.sql import functions as F

    return lambda watermarked: watermarked.groupBy(
        "k", F.window("ts", f"{ratio * SLIDE_SECONDS} seconds", f"{SLIDE_SECONDS} seconds")
    ).agg(*measures())


def warm_up(spark: Any, work: Path, rows: int, ratio: int) -> None:
    """Each contender once over two small files, untimed: the JVM's first trigger pays for compiling and
    loading much of Spark, which would otherwise fall on whichever contender runs first."""
    import wql

    folder = work / "warm-up"
    write_files(spark, rows, 2, folder)
    compiled = wql.compile(sliding_query(folder, ratio))
    stream_wql(spark, compiled, False)
    stream_native(spark, folder, work, native_sliding(ratio))
    batch_wql(spark, compiled)


def main() -> int:
    args = arguments()
    if args.rows_per_trigger:
        args.rows = args.rows_per_trigger * args.files

    import wql

    spark = session(args.master, "streaming")
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("spark.wql.stream.state", args.state)
    work = Path(tempfile.mkdtemp(prefix="wql-bench-stream-"))
    folder = work / "in"
    PER_TRIGGER[0] = args.files_per_trigger
    write_files(spark, args.rows, args.files * args.files_per_trigger, folder)
    ratios = [int(r) for r in args.ratios.split(",") if r]
    empty_shown = False
    try:
        warm_up(spark, work, args.rows // 50, ratios[0])
        for ratio in ratios:
            compiled = wql.compile(sliding_query(folder, ratio))
            wql_s, emitted, triggers, state_rows, jobs = fastest(args.repeat, stream_wql, spark, compiled, args.verbose)
            if not empty_shown:  # the fixed cost: a trigger with no rows, on a stream with open windows
                checkpoint = tempfile.mkdtemp(prefix="wql-bench-empty-", dir=work)
                spark.conf.set("spark.wql.stream.state", "files")  # a trigger the driver runs by itself
                warm = compiled.start(
                    spark, sink=lambda w, t: 0, once=True, max_files=PER_TRIGGER[0], checkpoint=checkpoint
                )
                warm.wait()
                nothing = spark.read.schema(SCHEMA).parquet(str(folder)).limit(0)
                batch_number = len(warm.triggers)
                started = time.perf_counter()
                warm.module.run_trigger(spark, nothing, batch_number, checkpoint, warm.emit)
                empty_s = time.perf_counter() - started
                warm.close()
                spark.conf.set("spark.wql.stream.state", args.state)

            # Spark's own streaming window() with a watermark, append mode.
            native_s = None
            if args.skip_native_above is None or ratio <= args.skip_native_above:
                native_s = fastest(args.repeat, stream_native, spark, folder, work, native_sliding(ratio))
            batch_s, batch_windows = fastest(args.repeat, batch_wql, spark, compiled)
            floor_s = fastest(args.repeat, stream_floor, spark, folder, work, ratio)
            empty_stream_s = fastest(args.repeat, stream_empty, spark, folder, work)

            row = {
                "ratio": ratio,
                "plan": compiled.plan,
                "wql_s": round(wql_s, 3),
                "native_s": None if native_s is None else round(native_s, 3),
                "batch_s": round(batch_s, 3),
                "floor_s": round(floor_s, 3),
                "empty_stream_s": round(empty_stream_s, 3),
                "needed_for_10x_s": None if native_s is None else round(native_s / 10, 3),
                "needed_for_2x_batch_s": round(2 * batch_s, 3),
                "state_rows": state_rows,
                "triggers": triggers,
                "rows_per_trigger": args.rows // args.files,
                "files_per_trigger": args.files_per_trigger,
                "jobs_per_trigger": round(jobs, 1),
                "empty_trigger_s": round(empty_s, 3),
                "windows_equal_batch": emitted == batch_windows,
                "native_over_wql": None if native_s is None else round(native_s / wql_s, 2),
                "wql_over_batch": round(wql_s / batch_s, 2),
                "floor_over_batch": round(floor_s / batch_s, 2),
                "where": described(args.master),
                "state": args.state,
            }
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                native = "     —" if native_s is None else f"{native_s:7.2f}s"
                speedup = "" if native_s is None else f"  native/wql {native_s / wql_s:5.1f}x"
                print(
                    f"{row['where']}: ratio {ratio:>4}: {compiled.plan:<6} wql {wql_s:7.2f}s  native {native}"
                    f"  batch {batch_s:6.2f}s"
                    f"{speedup}  wql/batch {wql_s / batch_s:4.2f}x  floor/batch {floor_s / batch_s:4.2f}x"
                    f"  state {state_rows:,} rows  {jobs:.1f} jobs/trigger"
                    f"  windows = batch: {'yes' if row['windows_equal_batch'] else 'NO'}",
                    flush=True,
                )
                if not empty_shown:
                    print(f"            an empty trigger: {empty_s:.2f}s", flush=True)
                tenth = "" if native_s is None else f"10x native needs {native_s / 10:.2f}s, "
                print(
                    f"            targets: {tenth}2x batch needs {2 * batch_s:.2f}s; floors: one aggregation a"
                    f" trigger {floor_s:.2f}s, Structured Streaming alone {empty_stream_s:.2f}s",
                    flush=True,
                )
            empty_shown = True
        if args.sessions:
            session_case(spark, args, work)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def session_case(spark: Any, args: argparse.Namespace, work: Path) -> None:
    """Sessions on a stream: WQL's [SESSION GAP 30 SECONDS WATTR ts PATTR k] against Spark's streaming
    groupBy(k, session_window(ts, "30 seconds")) with a watermark, and WQL's batch run, on the same files."""
    from pyspark.sql import functions as F

    import wql

    folder = work / "sessions"
    write_files(spark, args.rows, args.files * args.files_per_trigger, folder, pauses=True)
    text = (
        f"CREATE STREAM bench ({SCHEMA}) FROM '{folder}' FORMAT parquet;\n"
        f"SELECT sum(v) AS total, count(*) AS n, max(v) AS top "
        f"FROM bench [SESSION GAP {GAP_SECONDS} SECONDS WATTR ts PATTR k]"
    )
    compiled = wql.compile(text)
    wql_s, emitted, triggers, state_rows, jobs = fastest(args.repeat, stream_wql, spark, compiled, args.verbose)

    def sessions(watermarked: Any) -> Any:
        return watermarked.groupBy("k", F.session_window("ts", f"{GAP_SECONDS} seconds")).agg(*measures())

    native_s = fastest(args.repeat, stream_native, spark, folder, work, sessions)
    batch_s, batch_windows = fastest(args.repeat, batch_wql, spark, compiled)
    row = {
        "case": "session",
        "plan": compiled.plan,
        "wql_s": round(wql_s, 3),
        "native_s": round(native_s, 3),
        "batch_s": round(batch_s, 3),
        "state_rows": state_rows,
        "triggers": triggers,
        "rows_per_trigger": args.rows // args.files,
        "files_per_trigger": args.files_per_trigger,
        "jobs_per_trigger": round(jobs, 1),
        "windows_equal_batch": emitted == batch_windows,
        "native_over_wql": round(native_s / wql_s, 2),
        "wql_over_batch": round(wql_s / batch_s, 2),
        "where": described(args.master),
    }
    if args.json:
        print(json.dumps(row), flush=True)
    else:
        print(
            f"session:    {compiled.plan:<6} wql {wql_s:7.2f}s  session_window {native_s:7.2f}s"
            f"  batch {batch_s:6.2f}s"
            f"  native/wql {native_s / wql_s:5.1f}x  wql/batch {wql_s / batch_s:4.2f}x  state {state_rows:,} rows"
            f"  {jobs:.1f} jobs/trigger"
            f"  windows = batch: {'yes' if row['windows_equal_batch'] else 'NO'}",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
