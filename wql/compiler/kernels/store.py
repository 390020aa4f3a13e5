"""A stream whose state Spark's state store keeps: grid windows' cells through flatMapGroupsWithState.

Copied into streaming jobs whose query the state store can take (STREAMING["store"]: grid windows over
panes or slices of partial states); the job runs this engine when Spark has WQL's JVM kernels (the
StreamCells function in wql-kernels.jar) and the one of streaming.py, with its state in the checkpoint's
own files, otherwise (or with spark.wql.stream.state=files).

Why: with its state in its own files, a trigger reads and rewrites the open cells of every key, so its
cost grows with the state kept. Here each key's open cells are one state in Spark's state store, which
keeps them between triggers (in memory, or in RocksDB) and writes only those a trigger changed;
Spark calls the JVM function only for the keys a trigger brings rows for and for those whose next
window the watermark has passed (an event-time timeout). docs/semantics.md §8.12 has the measurements
that chose flatMapGroupsWithState over transformWithState and over WQL's own files.

Spark's watermark carries WQL's punctuation exactly: each tuple's event time is its window attribute
in base units, as milliseconds, plus BASE; the delay is SLACK plus HIDDEN. The watermark is then the
punctuation plus BASE − HIDDEN, and Spark's own dropping of rows below the watermark never reaches a
row less than HIDDEN base units late: StreamCells decides what is late, and the trigger's rows as read
(a second branch of the micro-batch, beside the windows) give the counts, the late-rows output and the
punctuation the next trigger starts with, as in the other engine.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # names the job defines, or other support code copied beside this (job.pyi)
    from wql.compiler.kernels.job import STREAMING, finish, lower, prepare, shares, show_point, window_attribute
    from wql.compiler.kernels.job_support import CORRUPT, jvm_class
    from wql.compiler.kernels.streaming import (
        ended,
        fault,
        newest_meta,
        next_punctuation,
        save_meta,
        start_query,
        trigger_report,
        write_late,
    )

BASE = 1 << 52  # the event time of attribute value 0, in milliseconds (Spark's watermark never goes below 0)
HIDDEN = 1 << 50  # added to the delay: Spark drops no row less late than this
REACH = (1 << 53) - BASE  # attribute values (base units) the watermark carries: from −(BASE − HIDDEN) to this


def stores_state(spark):
    """Whether this job's state lives in Spark's state store: its query can (STREAMING["store"]), Spark
    has WQL's StreamCells (wql-kernels.jar on the classpath) and spark.wql.stream.state is not "files"."""
    if STREAMING.get("store") is None or spark.conf.get("spark.wql.stream.state", "store") == "files":
        return False
    return jvm_class(spark, "StreamCells") is not None  # not under Spark Connect, nor without the jar


def stored_request():
    import json

    return json.dumps({**STREAMING["store"], "shift": BASE - HIDDEN})


def start_stored(spark, name, stream, source, emit, checkpoint, late, late_format, once, report, interval):
    """The query on Structured Streaming with its cells in Spark's state store: the trigger's tuples as cells
    of one tuple each, keyed, through StreamCells, whose windows and the trigger's rows as read reach the
    sink together (stored_batch)."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    frame = source
    malformed = F.col(CORRUPT).isNotNull() if CORRUPT in frame.columns else F.lit(False)
    marked = F.coalesce(F.expr(STREAMING["punctuation"]), F.lit(False)) if STREAMING["punctuation"] else F.lit(False)
    slack = STREAMING["slack"]
    tuples = shares(prepare(frame.where(~malformed & ~marked))).withColumn("_kind", F.lit(0))
    # Each tuple's event time; without SLACK only punctuation rows move time, and they enter at their value
    # (plus SLACK), each as a row that is no tuple.
    moving = F.col("_t") if slack is not None else F.lit(None).cast("bigint")
    tuples = tuples.withColumn("_event", moving)
    punctuations = frame.where(marked & ~malformed).select(
        window_attribute(frame).alias("_t"),
        (window_attribute(frame) + F.lit(slack or 0)).alias("_event"),
        F.lit(2).alias("_kind"),
    )
    timed = tuples.unionByName(punctuations, allowMissingColumns=True) if STREAMING["punctuation"] else tuples
    event = F.least(F.greatest(F.col("_event"), F.lit(-(BASE - HIDDEN))), F.lit(REACH))
    timed = timed.withColumn("_wm", F.timestamp_millis(event + F.lit(BASE))).drop("_event")
    timed = timed.withWatermark("_wm", f"{(slack or 0) + HIDDEN} milliseconds")
    windows = spark.sparkContext._jvm.wql.kernels.StreamCells.apply(timed._jdf, stored_request())
    if windows is None:
        raise ValueError("WQL's StreamCells refused this query: run it with spark.wql.stream.state=files")
    windows = DataFrame(windows, spark)
    # The trigger's rows as read, beside the windows (as one struct: their names may be the windows' too).
    as_read = frame.select(
        F.struct(*(F.col(f"`{c}`") for c in frame.columns)).alias("_row"), F.lit("raw").alias("_kind")
    )
    both = windows.unionByName(as_read, allowMissingColumns=True)
    query = {}

    def on_batch(micro, batch):
        stored_batch(spark, micro, batch, checkpoint, emit, late, late_format, report, query.get("running"), timed)

    query["running"] = start_query(both, on_batch, checkpoint, once, interval)
    return query["running"]


def stored_batch(spark, micro, batch, checkpoint, emit, late, late_format, report, running, timed):
    """One trigger of the state-store engine: its windows (the ones StreamCells found final at the
    punctuation the trigger started with) to the sink; its rows as read counted, the late and malformed
    ones written, and the punctuation after it recorded, as in run_trigger."""
    from pyspark.sql import functions as F

    stopped = ended(spark, checkpoint)
    if stopped is not None:
        raise stopped
    fault("trigger", batch)
    meta = newest_meta(spark, checkpoint, before=batch)
    before = meta["punctuation"]
    micro = micro.persist()
    try:
        raw = micro.where(F.col("_kind") == "raw").select("_row.*")
        columns = [c for c in raw.columns if c != CORRUPT and not c.startswith("__wql_")]
        malformed = F.col(CORRUPT).isNotNull() if CORRUPT in raw.columns else F.lit(False)
        marked = (
            F.coalesce(F.expr(STREAMING["punctuation"]), F.lit(False)) if STREAMING["punctuation"] else F.lit(False)
        )
        rows = raw.where(~malformed & ~marked)
        t = window_attribute(rows)
        is_late = F.lit(False) if before is None else F.coalesce(t < F.lit(before), F.lit(False))
        stats = raw.agg(
            F.count_if(~malformed & ~marked).alias("rows"),
            F.count_if(~malformed & ~marked & is_late).alias("late"),
            F.count_if(~malformed & ~marked & t.isNull()).alias("nulls"),
            F.max(F.when(~malformed & ~marked, t)).alias("max_seen"),
            F.count_if(malformed).alias("malformed"),
            F.count_if(~malformed & marked).alias("punctuations"),
            (
                F.max(F.when(~malformed & marked, window_attribute(raw))) if STREAMING["punctuation"] else F.lit(None)
            ).alias("marked"),
        ).first()
        max_seen, after = next_punctuation(meta, stats, before)
        for value in (max_seen, stats["marked"]):
            if value is not None and not -(BASE - HIDDEN) < value - (STREAMING["slack"] or 0) < REACH:
                raise ValueError(
                    f"the window attribute's value {show_point(value)} is beyond what Spark's watermark carries "
                    "for this stream: run it with spark.wql.stream.state=files"
                )
        found = micro.where(F.col("_kind") == "window").drop("_kind", "_row")
        fault("emit", batch)
        emitted = emit(finish(lower(found)), f"batch-{batch:08d}")
        fault("emitted", batch)
        if late is not None and stats["late"] + stats["malformed"]:
            write_late(rows.where(is_late).unionByName(raw.where(malformed)), columns, before, batch, late, late_format)
        fault("meta", batch)
        save_meta(
            spark,
            checkpoint,
            {
                "batch": batch,
                "punctuation": after,
                "max_seen": max_seen,
                "next_row": meta["next_row"] + stats["rows"],
                "state": None,
                "store": {"cells": timed.schema.json()},
            },
            previous=meta,
        )
        fault("committed", batch)
        if report is not None:
            kept = 0
            progress = running.lastProgress if running is not None else None
            if progress:  # the keys Spark's state store kept after the trigger before
                kept = sum(op.get("numRowsTotal", 0) for op in progress.get("stateOperators", []))
            report(trigger_report(batch, stats, emitted, show_point(after), kept))
    finally:
        micro.unpersist()


def drain_stored(spark, checkpoint, meta):
    """The drain's windows from Spark's state store: each key's cells as the last trigger left them (Spark's
    state data source), every window after the last one emitted; None when nothing is kept."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    schema = (meta.get("store") or {}).get("cells")
    if schema is None or STREAMING["emit"] != "final":
        return None
    # The state the meta's trigger left (drain_stream has checked that Spark recorded that trigger as done):
    # an older one would still hold the windows that trigger emitted.
    kept = spark.read.format("statestore").option("batchId", meta["batch"]).load(checkpoint)
    kept = kept.select("key", F.col("value.groupState.value").alias("cells"))
    windows = spark.sparkContext._jvm.wql.kernels.StreamCells.drain(kept._jdf, stored_request(), schema)
    if windows is None:
        raise ValueError("WQL's StreamCells refused to drain this stream's state")
    return finish(lower(DataFrame(windows, spark).drop("_kind")))
