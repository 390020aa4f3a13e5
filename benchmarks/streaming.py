"""Sliding windows on a stream: WQL's streaming job against Spark's streaming window() and WQL's batch run.

    python benchmarks/streaming.py [--rows N] [--files 10] [--ratios 1,10,60,240] [--json] [--verbose]

N rows (default 5,000,000) of 100 keys, a reading every 0.1 s, written once as --files parquet files
in time order. Each contender reads them from disk (nothing cached), one file per trigger:

- wql:    the job `wql compile --stream` prints (slack 0: the files arrive in order), windows written
          to Spark's noop sink as they close, then drained;
- native: what a Spark user writes: readStream, withWatermark("ts", "0 seconds"),
          groupBy(k, window(ts, RANGE, SLIDE)).agg(…), append mode, the noop sink, availableNow;
- batch:  WQL's batch job over the same files.

SLIDE is 1 minute and RANGE = ratio × SLIDE; sum, count and max per key and window. For each
ratio it prints the seconds, the ratios, the largest state WQL kept after a trigger (cells of the
open windows, in rows) and, once, the fixed cost of a trigger: the time of a trigger with no rows.
WQL's windows are counted as they are written (an Observation, no extra job) and checked against
the batch run. Machines are shared and noisy: read the ratios, not the seconds.
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

from harness import session

SLIDE_SECONDS = 60
KEYS = 100
SCHEMA = "k INT, v DOUBLE, ts TIMESTAMP"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, default=10, help="parquet files, one per trigger")
    parser.add_argument("--ratios", default="1,10,60,240", help="RANGE/SLIDE ratios, comma-separated")
    parser.add_argument("--skip-native-above", type=int, default=None, help="leave out native above this ratio")
    parser.add_argument("--json", action="store_true", help="one JSON object per ratio")
    parser.add_argument("--verbose", action="store_true", help="each WQL trigger's status line")
    parser.add_argument("--master", default="local[*]")
    return parser.parse_args()


def write_files(spark: Any, rows: int, files: int, folder: Path) -> None:
    """The stream's files, in time order: file i holds rows [i·N/files, (i+1)·N/files), older mtimes first
    (Spark's file source takes files by modification time)."""
    from pyspark.sql import functions as F

    folder.mkdir(parents=True)
    for index in range(files):
        part = folder.parent / f"part-{index}"
        first, last = index * rows // files, (index + 1) * rows // files
        spark.range(first, last, numPartitions=1).select(
            (F.col("id") % KEYS).cast("int").alias("k"),
            (F.rand(7 + index) * 100).alias("v"),
            F.timestamp_seconds(F.col("id") / 10).alias("ts"),
        ).write.parquet(str(part))
        [written] = part.glob("part-*.parquet")
        target = folder / f"part-{index:05d}.parquet"
        written.rename(target)
        shutil.rmtree(part)
        stamp = 1_700_000_000 + index
        os.utime(target, (stamp, stamp))


def main() -> int:
    args = arguments()
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    import wql

    spark = session(args.master, "streaming")
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="wql-bench-stream-"))
    folder = work / "in"
    write_files(spark, args.rows, args.files, folder)
    empty_shown = False
    try:
        for ratio in [int(r) for r in args.ratios.split(",")]:
            text = (
                f"CREATE STREAM bench ({SCHEMA}) FROM '{folder}' FORMAT parquet;\n"
                f"SELECT k, sum(v) AS total, count(*) AS n, max(v) AS top "
                f"FROM bench [RANGE {ratio} MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY k"
            )
            compiled = wql.compile(text)

            # WQL's streaming job, one file per trigger, then drained.
            counted: list[int] = []

            def sink(windows: Any, trigger: int | str, counted: list[int] = counted) -> int:
                seen = Observation()
                windows.observe(seen, F.count(F.lit(1)).alias("n")).write.format("noop").mode("overwrite").save()
                counted.append(int(seen.get["n"]))
                return counted[-1]

            report = (lambda t: print("  " + t.line(), file=sys.stderr)) if args.verbose else None
            started = time.perf_counter()
            run = compiled.start(spark, sink=sink, once=True, max_files=1, on_trigger=report)
            run.wait()
            run.drain()
            wql_s = time.perf_counter() - started
            state_rows = max(t.state_rows for t in run.triggers)
            if not empty_shown:  # the fixed cost: a trigger with no rows, on a stream with open windows
                checkpoint = tempfile.mkdtemp(prefix="wql-bench-empty-", dir=work)
                warm = compiled.start(spark, sink=lambda w, t: 0, once=True, max_files=1, checkpoint=checkpoint)
                warm.wait()
                nothing = spark.read.schema(SCHEMA).parquet(str(folder)).limit(0)
                batch_number = len(warm.triggers)
                started = time.perf_counter()
                warm.module.run_trigger(spark, nothing, batch_number, checkpoint, warm.emit)
                empty_s = time.perf_counter() - started
                warm.close()
            run.close()

            # Spark's own streaming window() with a watermark, append mode.
            native_s = None
            if args.skip_native_above is None or ratio <= args.skip_native_above:
                checkpoint = tempfile.mkdtemp(prefix="wql-bench-native-", dir=work)
                stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(folder))
                windows = (
                    stream.withWatermark("ts", "0 seconds")
                    .groupBy("k", F.window("ts", f"{ratio * SLIDE_SECONDS} seconds", f"{SLIDE_SECONDS} seconds"))
                    .agg(F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"), F.max("v").alias("top"))
                )
                started = time.perf_counter()
                query = (
                    windows.writeStream.format("noop")
                    .outputMode("append")
                    .option("checkpointLocation", checkpoint)
                    .trigger(availableNow=True)
                    .start()
                )
                query.awaitTermination()
                native_s = time.perf_counter() - started

            # WQL's batch job over the same files.
            started = time.perf_counter()
            inputs, _ = compiled.load_inputs(spark)
            seen = Observation()
            result = compiled.run(spark, **inputs).observe(seen, F.count(F.lit(1)).alias("n"))
            result.write.format("noop").mode("overwrite").save()
            batch_s = time.perf_counter() - started
            batch_windows = int(seen.get["n"])

            row = {
                "ratio": ratio,
                "plan": compiled.plan,
                "wql_s": round(wql_s, 3),
                "native_s": None if native_s is None else round(native_s, 3),
                "batch_s": round(batch_s, 3),
                "state_rows": state_rows,
                "triggers": len(run.triggers),
                "empty_trigger_s": round(empty_s, 3),
                "windows_equal_batch": sum(counted) == batch_windows,
            }
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                native = "     —" if native_s is None else f"{native_s:7.2f}s"
                speedup = "" if native_s is None else f"  native/wql {native_s / wql_s:5.1f}x"
                print(
                    f"ratio {ratio:>4}: {compiled.plan:<6} wql {wql_s:7.2f}s  native {native}  batch {batch_s:6.2f}s"
                    f"{speedup}  wql/batch {wql_s / batch_s:4.2f}x  state {state_rows:,} rows"
                    f"  windows = batch: {'yes' if row['windows_equal_batch'] else 'NO'}",
                    flush=True,
                )
                if not empty_shown:
                    print(f"            an empty trigger: {empty_s:.2f}s", flush=True)
            empty_shown = True
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
