"""Stream state at scale: what a trigger costs as the keys (and so the state) grow, rows per trigger fixed.

    python benchmarks/stream_state.py [--keys 10000,100000,1000000] [--ratios 1,60] [--rows-per-trigger N]
                                      [--triggers 6] [--engines wql,native] [--provider memory|rocksdb] [--json]

Each trigger's file holds N rows (default 500,000) over one minute of event time, the next minute in the
next file, with keys drawn uniformly from K: the same rows and the same span of event time in every
trigger, so that what a trigger must read and emit stays the same while the state (the open windows'
cells or entries of every key) and the windows each trigger closes grow with K. The query is
[RANGE ratio MINUTES SLIDE 1 MINUTE WATTR ts SLACK 0 SECONDS] with count, sum and max by key:

- wql:    the job `wql compile --stream` prints, one file per trigger (nothing drained, nothing timed
          but the triggers);
- files:  the same job with spark.wql.stream.state=files: its state in the checkpoint's own files (the
          engine every window keeps its state in where Spark's state store cannot take it);
- native: Spark's streaming groupBy(k, window(ts, RANGE, SLIDE)) with a watermark of 0 seconds, append
          mode.

Both keep their state in Spark's state store (WQL's where its JVM kernels are on the classpath, which
the benchmark's session has; without them, in its checkpoint's own files): in memory (Spark's default,
HDFS-backed) or, with --provider rocksdb, in RocksDB with changelog checkpointing. Each engine first
runs once, untimed, over small files.

Every trigger's time comes from Structured Streaming's own progress (triggerExecution), so a stream's
start and its first trigger (which loads much of Spark) are reported apart: the median trigger is over
triggers 2 and on. Per key count and ratio it prints, for each engine, the median trigger, the state
after the last trigger (state_rows: WQL's kept rows or cells, native's state store rows), rows and
windows per trigger, Spark jobs per trigger (counted from Spark's status tracker) and the cost per unit
of work, the median trigger's seconds over (rows in + windows out). Machines are shared and noisy: read
the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import counting_sink, land_parquet, session

SLIDE_SECONDS = 60
SCHEMA = "k STRING, v DOUBLE, ts TIMESTAMP"
BASE_SECONDS = 1_700_000_040  # a minute boundary


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", default="10000,100000,1000000", help="key counts, comma-separated")
    parser.add_argument("--ratios", default="1,60", help="RANGE/SLIDE ratios, comma-separated")
    parser.add_argument("--rows-per-trigger", type=int, default=500_000)
    parser.add_argument("--triggers", type=int, default=6, help="files, one per trigger")
    parser.add_argument("--engines", default="wql,native", help="wql, files and native, comma-separated")
    parser.add_argument("--json", action="store_true", help="one JSON object per key count and ratio")
    parser.add_argument(
        "--provider",
        choices=("memory", "rocksdb"),
        default="memory",
        help="Spark's state store: in memory (HDFS-backed, the default) or RocksDB with changelog checkpointing",
    )
    parser.add_argument(
        "--native-limit",
        type=int,
        default=10_000_000,
        help="skip Spark's window() where its state (keys × RANGE/SLIDE entries) would exceed this",
    )
    parser.add_argument("--master", default="local[*]")
    return parser.parse_args()


def write_files(spark: Any, keys: int, rows: int, triggers: int, folder: Path) -> None:
    """File i: `rows` rows over minute i, keys uniform over `keys`, older modification times first."""

    from pyspark.sql import functions as F

    folder.mkdir(parents=True)
    for index in range(triggers):
        ids = spark.range(0, rows, numPartitions=2)
        frame = ids.select(
            F.concat(F.lit("k"), (F.rand(11 + index) * keys).cast("long").cast("string")).alias("k"),
            (F.rand(7 + index) * 100).alias("v"),
            F.timestamp_seconds(F.lit(BASE_SECONDS + index * SLIDE_SECONDS) + F.rand(3 + index) * SLIDE_SECONDS).alias(
                "ts"
            ),
        )
        land_parquet(frame, folder, index)


def jobs_of(spark: Any, query: Any) -> int:
    """The Spark jobs a streaming query ran: Structured Streaming runs them in a job group named by the run."""
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(str(query.runId)))


def triggers_of(query: Any) -> list[dict[str, Any]]:
    """Each trigger that read rows: its seconds, rows and the state the engine reports after it."""
    out = []
    for progress in query.recentProgress:
        rows = progress.get("numInputRows", 0)
        state = sum(op.get("numRowsTotal", 0) for op in progress.get("stateOperators", []))
        out.append({"seconds": progress["durationMs"].get("triggerExecution", 0) / 1000, "rows": rows, "state": state})
    return out


def run_wql(spark: Any, folder: Path, ratio: int, engine: str) -> dict[str, Any]:
    """WQL's job with its state in Spark's state store ("wql"), or in its checkpoint's files ("files")."""
    import wql

    spark.conf.set("spark.wql.stream.state", "files" if engine == "files" else "store")
    text = (
        f"CREATE STREAM bench ({SCHEMA}) FROM '{folder}' FORMAT parquet;\n"
        f"SELECT k, count(*) AS n, sum(v) AS total, max(v) AS top FROM bench "
        f"[RANGE {ratio} MINUTES SLIDE 1 MINUTE WATTR ts SLACK 0 SECONDS] GROUP BY k"
    )
    compiled = wql.compile(text)
    windows: list[int] = []
    run = compiled.start(spark, sink=counting_sink(windows), once=True, max_files=1)
    run.wait()
    jobs = jobs_of(spark, run.query)
    found = triggers_of(run.query)
    state = run.triggers[-1].state_rows if run.triggers else 0
    run.close()
    return {"triggers": found, "windows": windows, "jobs": jobs, "state_rows": state}


def run_native(spark: Any, folder: Path, ratio: int, work: Path) -> dict[str, Any]:
    from pyspark.sql import functions as F

    checkpoint = tempfile.mkdtemp(prefix="wql-bench-native-", dir=work)
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(folder))
    window = F.window("ts", f"{ratio * SLIDE_SECONDS} seconds", f"{SLIDE_SECONDS} seconds")
    counted = stream.withWatermark("ts", "0 seconds").groupBy("k", window)
    result = counted.agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"), F.max("v").alias("top"))
    windows: list[int] = []
    query = (
        result.writeStream.outputMode("append")
        .foreachBatch(counting_sink(windows))
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    jobs = jobs_of(spark, query)
    found = triggers_of(query)
    return {"triggers": found, "windows": windows, "jobs": jobs, "state_rows": found[-1]["state"] if found else 0}


def summary(engine: str, keys: int, ratio: int, rows: int, measured: dict[str, Any], provider: str) -> dict[str, Any]:
    triggers = measured["triggers"]
    data = [t for t in triggers if t["rows"]]
    later = [t["seconds"] for t in data[1:]] or [t["seconds"] for t in data]
    median = statistics.median(later) if later else 0.0
    emitted = measured["windows"]
    per_trigger = statistics.median(emitted[1:]) if len(emitted) > 1 else (emitted[0] if emitted else 0)
    return {
        "engine": engine,
        "provider": provider,
        "keys": keys,
        "ratio": ratio,
        "state_rows": measured["state_rows"],
        "rows_per_trigger": rows,
        "windows_per_trigger": per_trigger,
        "trigger_s": round(median, 3),
        "first_trigger_s": round(data[0]["seconds"], 3) if data else None,
        "triggers": len(triggers),
        "jobs_per_trigger": round(measured["jobs"] / max(1, len(triggers)), 1),
        "s_per_million_units": round(median / ((rows + per_trigger) / 1e6), 3),
    }


def joined(found: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One JSON line per key count and ratio: each engine's figures under its name (Spark's window() where it
    ran), and WQL's also as state_rows and jobs_per_trigger."""
    wql, native = found.get("wql"), found.get("native")
    first = next(iter(found.values()))
    line = {k: first[k] for k in ("provider", "keys", "ratio", "rows_per_trigger", "windows_per_trigger")}
    for name, measured in found.items():
        line[f"{name}_trigger_s"] = measured["trigger_s"]
        line[f"{name}_state_rows"] = measured["state_rows"]
        line[f"{name}_jobs_per_trigger"] = measured["jobs_per_trigger"]
        line[f"{name}_s_per_million_units"] = measured["s_per_million_units"]
    if wql is not None:
        line["state_rows"] = wql["state_rows"]
        line["jobs_per_trigger"] = wql["jobs_per_trigger"]
    if wql is not None and native is not None and wql["trigger_s"]:
        line["native_over_wql"] = round(native["trigger_s"] / wql["trigger_s"], 2)
    return line


def described(line: dict[str, Any]) -> str:
    head = f"{line['keys']:>9,} keys ratio {line['ratio']:>3} {line['engine']:>6}"
    return (
        f"{head}: trigger {line['trigger_s']:6.2f} s (first {line['first_trigger_s']} s), "
        f"state {line['state_rows']:>11,} rows, {line['windows_per_trigger']:>9,} windows/trigger, "
        f"{line['jobs_per_trigger']} jobs/trigger, {line['s_per_million_units']} s per million units"
    )


def main() -> int:
    args = arguments()
    spark = session(args.master, "stream state")
    spark.sparkContext.setLogLevel("ERROR")
    if args.provider == "rocksdb":
        spark.conf.set(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        spark.conf.set("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
    engines = args.engines.split(",")
    with tempfile.TemporaryDirectory(prefix="wql-bench-state-") as scratch:
        work = Path(scratch)
        # Each engine once over small files, untimed: a process's first streaming query pays for compiling and
        # loading much of Spark, which would otherwise fall on whichever engine runs first.
        warm = work / "warm-up"
        write_files(spark, 1_000, 20_000, 3, warm)
        for ratio in {int(r) for r in args.ratios.split(",")}:
            for engine in ("wql", "files"):
                if engine in engines:
                    run_wql(spark, warm, ratio, engine)
            if "native" in engines:
                run_native(spark, warm, ratio, work)
        for keys in (int(k) for k in args.keys.split(",")):
            folder = work / f"keys-{keys}"
            started = time.perf_counter()
            write_files(spark, keys, args.rows_per_trigger, args.triggers, folder)
            print(f"{keys:,} keys: files written in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            for ratio in (int(r) for r in args.ratios.split(",")):
                found = {}
                for engine in ("wql", "files"):
                    if engine in engines:
                        measured = run_wql(spark, folder, ratio, engine)
                        found[engine] = summary(engine, keys, ratio, args.rows_per_trigger, measured, args.provider)
                if "native" in engines and keys * ratio <= args.native_limit:
                    measured = run_native(spark, folder, ratio, work)
                    found["native"] = summary("native", keys, ratio, args.rows_per_trigger, measured, args.provider)
                elif "native" in engines:
                    print(
                        f"{keys:,} keys ratio {ratio}: window() skipped, its state ({keys * ratio:,} entries) is "
                        f"above --native-limit",
                        file=sys.stderr,
                    )
                if args.json:
                    print(json.dumps(joined(found)), flush=True)
                else:
                    for line in found.values():
                        print(described(line), flush=True)
                    if {"wql", "native"} <= found.keys() and found["wql"]["trigger_s"]:
                        ratio_text = found["native"]["trigger_s"] / found["wql"]["trigger_s"]
                        print(f"{'':>24} native / wql: {ratio_text:.2f}x", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
