"""PROTOTYPE probe: streaming sessions in Spark's state store (flatMapGroupsWithState + SessionStore.java)
against Spark's streaming session_window, on benchmarks/streaming.py's session case.

    python benchmarks/session_store/probe.py [--rows 5000000] [--files 10] [--repeat 2]
                                             [--providers memory,rocksdb] [--variants rows,premerge]
                                             [--no-local-merge] [--no-floor] [--no-verify] [--json] [--verbose]

The data is streaming.py's session case, written by its own write_files(pauses=True): --rows ids (default
5,000,000, of which a tenth are left out as pauses), 100 keys, each reading every 10 s for 450 s then
pausing 60 s, --files parquet files in time order. Every contender reads them from disk, one file per trigger
(maxFilesPerTrigger 1, availableNow), with a watermark of 0 s on ts, append mode, noop sink:

- session_window:       groupBy(k, session_window(ts, "30 seconds")).agg(sum, count, max) after
                        withWatermark("ts", "0 seconds"), as streaming.py's native session contender;
- session_window_local: the same with Spark's own map-side merge of sessions
                        (spark.sql.streaming.sessionWindow.merge.sessions.in.local.partition=true; off by
                        default, so not what streaming.py measures);
- store_rows:           groupBy(k).as(...).flatMapGroupsWithState(SessionStore) over the rows (k, t, v): each
                        key's open sessions one byte[] state, event-time timeout at its first session's end;
- store_premerge:       the same, but each task first chains its rows per key into runs within the gap
                        (mapPartitions), so the shuffle carries a row per run instead of one per tuple.

SessionStore declares its watermark itself (on each row's session end ts + 30 s, delay 30 s: the same
max(ts) − 0 s, and Spark then drops as late exactly the rows session_window drops); see SessionStore.java.

Each runs once untimed over two small files (the warm-up), then --repeat times, interleaved, the fastest kept,
under each state store provider asked for (memory: Spark's default HDFS-backed one; rocksdb: the RocksDB
provider with changelog checkpointing, as benchmarks/stream_state.py sets it). Spark jobs are counted from
Spark's status tracker by the query's run id (as streaming.py's jobs_per_trigger), per trigger (every
progress event, the no-data trigger that closes the last sessions included) and per trigger that read a file.
Trigger times come from Structured Streaming's progress (triggerExecution, and addBatch: the micro-batch's
job), medians over the triggers that read rows, the first one left out; state_update_ms and state_commit_ms
are the stateful operator's own (summed over its tasks). The floor, empty_stream_s, is streaming.py's: the
same source and triggers with a foreachBatch that reads nothing.

Unless --no-verify, an untimed run of each contender to the memory sink checks that its sessions are
session_window's: the same (k, start, end, n, max) and totals equal to 1e-9 relative (a sum of doubles
in another order can differ in its last bits). check.py does the same on rows out of order and late.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # benchmarks/: harness, streaming
sys.path.insert(0, str(HERE))

from harness import described  # noqa: E402
from session_jar import jar  # noqa: E402
from streaming import GAP_SECONDS, SCHEMA, measures, stream_empty, write_files  # noqa: E402

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
LOCAL_MERGE = "spark.sql.streaming.sessionWindow.merge.sessions.in.local.partition"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--providers", default="memory,rocksdb", help="memory and/or rocksdb, comma-separated")
    parser.add_argument("--variants", default="rows,premerge", help="prototype variants: rows, premerge")
    parser.add_argument(
        "--local-merge",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also session_window with Spark's own map-side merge (" + LOCAL_MERGE + "=true)",
    )
    parser.add_argument(
        "--floor",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also two floors: streaming.py's empty stream (a foreachBatch that reads nothing) and shuffle_only "
        "(store_rows' rows into flatMapGroupsWithState, read and dropped)",
    )
    parser.add_argument("--verify", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--json", action="store_true", help="one JSON line per provider")
    parser.add_argument("--verbose", action="store_true", help="every run and trigger breakdown on stderr")
    parser.add_argument("--master", default="local[*]")
    return parser.parse_args()


def start_session(master: str) -> Any:
    """harness.session's settings (4 shuffle partitions, 4g driver, WQL's session conf) plus the prototype's jar."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from wql.runtime.session import default_jvm_log, local_session

    return local_session(
        master,
        app_name="wql benchmark: session store probe",
        shuffle_partitions=int(os.environ.get("WQL_BENCH_PARTITIONS", "4")),
        extra={"spark.driver.memory": "4g", "spark.jars": jar()},
        jvm_log=default_jvm_log(),
    )


def set_provider(spark: Any, provider: str) -> None:
    if provider == "rocksdb":
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
        spark.conf.set("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
    else:
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", HDFS)
        spark.conf.unset("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled")


def sessions_of(spark: Any, folder: Path, contender: str) -> Any:
    """The contender's sessions of the watermarked stream over `folder`, one file per trigger."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(folder))
    if contender in ("session_window", "session_window_local"):
        watermarked = stream.withWatermark("ts", "0 seconds")
        return watermarked.groupBy("k", F.session_window("ts", f"{GAP_SECONDS} seconds")).agg(*measures())
    # SessionStore declares the watermark itself (0 s on ts: the same max(ts) per trigger), on each row's
    # session end ts + gap with the delay gap + 0, so that the rows Spark drops as late are session_window's.
    store = spark.sparkContext._jvm.wqlbench.SessionStore
    if contender == "shuffle_only":  # a floor: store_rows' shuffle into the operator, no sessions, no state
        return DataFrame(store.shuffleOnly(stream._jdf, "k", "ts", "v", GAP_SECONDS * 1_000_000), spark)
    premerge = contender == "store_premerge"
    return DataFrame(store.apply(stream._jdf, "k", "ts", "v", GAP_SECONDS * 1_000_000, 0, premerge), spark)


def normalized(frame: Any, contender: str) -> Any:
    """(k, session_start, session_end in microseconds, n, total, top), whichever contender made it."""
    from pyspark.sql import functions as F

    if contender.startswith("session_window"):
        frame = frame.select(
            "k",
            F.unix_micros("session_window.start").alias("session_start"),
            F.unix_micros("session_window.end").alias("session_end"),
            "n",
            "total",
            "top",
        )
    return frame.select("k", "session_start", "session_end", "n", "total", "top")


def run(spark: Any, folder: Path, work: Path, contender: str, sink: str = "noop") -> dict[str, Any]:
    """One run of the contender to `sink` (noop, or memory under a table named after it): seconds from start
    to the end of availableNow, Spark jobs, and each trigger's progress."""
    checkpoint = tempfile.mkdtemp(prefix=f"probe-{contender}-", dir=work)
    # session_window_local: Spark's own map-side merge of sessions before the shuffle (off by default), read
    # when each trigger is planned, so set for the whole run of that query only
    spark.conf.set(LOCAL_MERGE, str(contender == "session_window_local").lower())
    sessions = sessions_of(spark, folder, contender)
    writer = sessions.writeStream.outputMode("append").option("checkpointLocation", checkpoint)
    if sink == "memory":
        writer = writer.format("memory").queryName(f"probe_{contender}")
    else:
        writer = writer.format("noop")
    started = time.perf_counter()
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination()
    seconds = time.perf_counter() - started
    spark.conf.unset(LOCAL_MERGE)
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(str(query.runId)))
    progress = list(query.recentProgress)
    shutil.rmtree(checkpoint, ignore_errors=True)
    return {"seconds": seconds, "jobs": jobs, "progress": progress}


def summary(measured: dict[str, Any]) -> dict[str, Any]:
    progress = measured["progress"]
    data = [p for p in progress if p.get("numInputRows", 0)]
    times = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in data]
    later = times[1:] or times
    ops = [op for p in data[1:] or data for op in p.get("stateOperators", [])]

    def median_of(name: str) -> float | None:
        values = [op.get(name) for op in ops if op.get(name) is not None]
        return statistics.median(values) if values else None

    add_batch = [p["durationMs"].get("addBatch", 0) / 1000 for p in data[1:] or data]
    state_rows = [sum(op.get("numRowsTotal", 0) for op in p.get("stateOperators", [])) for p in progress]
    return {
        "seconds": round(measured["seconds"], 3),
        "triggers": len(progress),
        "data_triggers": len(data),
        "jobs": measured["jobs"],
        "jobs_per_trigger": round(measured["jobs"] / max(1, len(progress)), 2),
        "jobs_per_data_trigger": round(measured["jobs"] / max(1, len(data)), 2),
        "median_trigger_s": round(statistics.median(later), 3) if later else None,
        "first_trigger_s": round(times[0], 3) if times else None,
        "median_add_batch_s": round(statistics.median(add_batch), 3) if add_batch else None,
        # the rest of a trigger: offsets, the write-ahead log, planning, the commit log
        "median_outside_batch_s": round(statistics.median(t - a for t, a in zip(later, add_batch, strict=True)), 3)
        if later and len(later) == len(add_batch)
        else None,
        "sum_trigger_s": round(sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000, 3),
        "state_rows_max": max(state_rows) if state_rows else 0,
        "state_update_ms_median": median_of("allUpdatesTimeMs"),
        "state_commit_ms_median": median_of("commitTimeMs"),
        "state_memory_bytes_max": max((op.get("memoryUsedBytes", 0) for op in ops), default=0),
        "rows_dropped_by_watermark": sum(
            op.get("numRowsDroppedByWatermark", 0) for p in progress for op in p.get("stateOperators", [])
        ),
    }


def verify(spark: Any, folder: Path, work: Path, contenders: list[str]) -> dict[str, Any]:
    """Each prototype's sessions against session_window's, from untimed runs to the memory sink."""
    from pyspark.sql import functions as F

    found = {}
    dropped = {}
    for contender in ["session_window", *contenders]:
        measured = run(spark, folder, work, contender, sink="memory")
        found[contender] = normalized(spark.table(f"probe_{contender}"), contender).cache()
        dropped[contender] = summary(measured)["rows_dropped_by_watermark"]
    native = found["session_window"]
    out: dict[str, Any] = {"session_window_sessions": native.count()}
    out.update({f"{contender}_dropped_as_late": n for contender, n in dropped.items()})
    for contender in contenders:
        mine = found[contender]
        joined = native.alias("a").join(mine.alias("b"), ["k", "session_start", "session_end"], "full_outer")
        bad = joined.where(
            F.col("a.n").isNull()
            | F.col("b.n").isNull()
            | (F.col("a.n") != F.col("b.n"))
            | (F.col("a.top") != F.col("b.top"))
            | (F.abs(F.col("a.total") - F.col("b.total")) > 1e-9 * F.greatest(F.lit(1.0), F.abs(F.col("a.total"))))
        )
        mismatches = bad.count()
        out[f"{contender}_sessions"] = mine.count()
        out[f"{contender}_mismatches"] = mismatches
        out[f"{contender}_equal"] = mismatches == 0 and out[f"{contender}_sessions"] == out["session_window_sessions"]
        if mismatches:
            print(f"{contender}: {mismatches} sessions differ, e.g.", file=sys.stderr)
            bad.orderBy("k", "session_start").show(10, truncate=False)
    out["admitted_behind_watermark_last_store_query"] = int(spark.sparkContext._jvm.wqlbench.SessionStore.lateRows())
    for frame in found.values():
        frame.unpersist()
    return out


def main() -> int:
    args = arguments()
    contenders = ["session_window"] + (["session_window_local"] if args.local_merge else [])
    contenders += [f"store_{v}" for v in args.variants.split(",") if v]
    spark = start_session(args.master)
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="wql-probe-sessions-"))
    try:
        folder = work / "sessions"
        started = time.perf_counter()
        write_files(spark, args.rows, args.files, folder, pauses=True)
        print(f"files written in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        warm = work / "warm-up"
        write_files(spark, args.rows // 50, 2, warm, pauses=True)
        for provider in args.providers.split(","):
            set_provider(spark, provider)
            for contender in contenders:  # untimed: the first streaming query pays for loading much of Spark
                run(spark, warm, work, contender)
            load_before = os.getloadavg()[0]
            best: dict[str, dict[str, Any]] = {}
            for attempt in range(max(1, args.repeat)):
                for contender in contenders:  # interleaved, so that none gains from running after the others
                    measured = summary(run(spark, folder, work, contender))
                    if args.verbose:
                        print(f"  [{provider}] run {attempt + 1} {contender}: {json.dumps(measured)}", file=sys.stderr)
                    if contender not in best or measured["seconds"] < best[contender]["seconds"]:
                        best[contender] = measured
            checked = verify(spark, folder, work, contenders[1:]) if args.verify else {}
            shuffle = None
            if args.floor:  # store_rows' shuffle into flatMapGroupsWithState with a function that only reads
                shuffle = summary(
                    min(
                        (run(spark, folder, work, "shuffle_only") for _ in range(max(1, args.repeat))),
                        key=lambda m: m["seconds"],
                    )
                )
            empty_s = min(stream_empty(spark, folder, work) for _ in range(max(1, args.repeat))) if args.floor else None
            native_s = best["session_window"]["seconds"]
            row: dict[str, Any] = {
                "case": "session_store_probe",
                "provider": provider,
                "rows": args.rows,
                "files": args.files,
                "where": described(args.master),
                "load_1min_before": round(load_before, 1),
                "load_1min_after": round(os.getloadavg()[0], 1),
            }
            for contender, measured in best.items():
                for key, value in measured.items():
                    row[f"{contender}_{key}"] = value
                if contender != "session_window":
                    row[f"session_window_over_{contender}"] = round(native_s / measured["seconds"], 2)
            if empty_s is not None:
                row["empty_stream_s"] = round(empty_s, 3)
            if shuffle is not None:
                for key in ("seconds", "median_trigger_s", "median_add_batch_s", "jobs_per_trigger"):
                    row[f"shuffle_only_{key}"] = shuffle[key]
            row.update(checked)
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(
                    f"{described(args.master)}, state store {provider}, {args.rows:,} rows in {args.files} files "
                    f"(load {row['load_1min_before']} -> {row['load_1min_after']}):"
                )
                for contender, measured in best.items():
                    ratio = (
                        ""
                        if contender == "session_window"
                        else f"  session_window/this {native_s / measured['seconds']:.2f}x"
                    )
                    print(
                        f"  {contender:<20} {measured['seconds']:7.2f} s{ratio}  median trigger "
                        f"{measured['median_trigger_s']} s (first {measured['first_trigger_s']} s)  "
                        f"{measured['jobs_per_trigger']} jobs/trigger ({measured['jobs']} jobs, "
                        f"{measured['triggers']} triggers, {measured['data_triggers']} with rows)  "
                        f"state rows max {measured['state_rows_max']}",
                        flush=True,
                    )
                if shuffle is not None:
                    print(
                        f"  {'shuffle only':<20} {shuffle['seconds']:7.2f} s  median trigger "
                        f"{shuffle['median_trigger_s']} s  (store_rows' rows into the operator, no session logic)",
                        flush=True,
                    )
                if empty_s is not None:
                    print(f"  {'empty stream':<20} {empty_s:7.2f} s  (Structured Streaming alone)", flush=True)
                if checked:
                    print(f"  verify: {json.dumps(checked)}", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
