"""A stream whose state Spark's state store keeps: grid windows' cells or sessions, through flatMapGroupsWithState.

Copied into streaming jobs whose query the state store can take (STREAMING["store"]: grid windows over
panes or slices of partial states, or sessions without MAX); the job runs
this engine when Spark has WQL's JVM kernels (the StreamCells or StreamSessions function in
wql-kernels.jar) and the one of streaming.py, with its state in the checkpoint's own files, otherwise
(or with spark.wql.stream.state=files).

Why: with its state in its own files, a trigger reads and rewrites the open cells of every key, so its
cost grows with the state kept. Here each key's open cells are one state in Spark's state store, which
keeps them between triggers (in memory, or in RocksDB) and writes only those a trigger changed;
Spark calls the JVM function only for the keys a trigger brings rows for and for those whose next
window the watermark has passed (an event-time timeout). docs/semantics.md §8.12 has the measurements
that chose flatMapGroupsWithState over transformWithState and over WQL's own files.

Spark's watermark carries WQL's punctuation exactly: each tuple's event time is its window attribute
in base units, as milliseconds, plus BASE; the delay is SLACK plus HIDDEN. The watermark is then the
punctuation plus BASE − HIDDEN, and Spark's own dropping of rows below the watermark never reaches a
row less than HIDDEN base units late: the JVM function decides what is late, and the trigger's rows as read
(a second branch of the micro-batch, beside the windows) give the counts, the late-rows output and the
punctuation the next trigger starts with, as in the other engine.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # names the job defines, or other support code copied beside this (job.pyi)
    from wql.compiler.kernels.job import (
        STREAMING,
        closed,
        finish,
        lower,
        prepare,
        shares,
        show_point,
        window_attribute,
    )
    from wql.compiler.kernels.job_support import CORRUPT, jvm_class, spark_errors
    from wql.compiler.kernels.streaming import (
        changelog,
        ended,
        fault,
        newest_meta,
        next_punctuation,
        save_meta,
        start_query,
        trigger_report,
        vanished,
        write_late,
    )

BASE = 1 << 52  # the event time of attribute value 0, in milliseconds (Spark's watermark never goes below 0)
HIDDEN = 1 << 50  # added to the delay: Spark drops no row less late than this
REACH = (1 << 53) - BASE  # attribute values (base units) the watermark carries: from −(BASE − HIDDEN) to this


def stores_state(spark):
    """Whether this job's state lives in Spark's state store: its query can (STREAMING["store"]), Spark
    has WQL's function for it (wql-kernels.jar on the classpath) and spark.wql.stream.state is not "files"."""
    if STREAMING.get("store") is None or spark.conf.get("spark.wql.stream.state", "store") == "files":
        return False
    return jvm_class(spark, store_function()) is not None  # not under Spark Connect, nor without the jar


def store_function():
    """The JVM function of flatMapGroupsWithState that keeps this query's state: a grid's open cells
    (StreamCells) or a key's open sessions (StreamSessions)."""
    return "StreamSessions" if STREAMING["store"]["kind"] == "session" else "StreamCells"


def stored_tuples(frame):
    """The stream's tuples as the store's function takes them: for grid windows each a cell of its own (the
    shares stage); for sessions the prepared tuples, each with its count (the windows stage counts in batch)
    and, outside WHERE, no share of any state: such a tuple still joins and bridges sessions."""
    from pyspark.sql import functions as F

    store = STREAMING["store"]
    if store["kind"] != "session":
        return shares(prepare(frame))
    rows = prepare(frame)
    inside = F.col("_in") if "_in" in rows.columns else F.lit(True)
    for column in store["columns"]:
        share = F.lit(1).cast("bigint") if column in store["counted"] else F.col(column)
        rows = rows.withColumn(column, F.when(inside, share))
    return rows.drop("_in")


def stored_request():
    import json

    return json.dumps({**STREAMING["store"], "shift": BASE - HIDDEN})


def start_stored(spark, name, stream, source, emit, checkpoint, late, late_format, once, report, interval):
    """The query on Structured Streaming with its state in Spark's state store: the trigger's tuples (each a
    cell of its own for grid windows), keyed, through the JVM function, whose windows and the trigger's rows
    as read reach the sink together (stored_batch)."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    frame = source
    malformed = F.col(CORRUPT).isNotNull() if CORRUPT in frame.columns else F.lit(False)
    marked = F.coalesce(F.expr(STREAMING["punctuation"]), F.lit(False)) if STREAMING["punctuation"] else F.lit(False)
    slack = STREAMING["slack"]
    tuples = stored_tuples(frame.where(~malformed & ~marked)).withColumn("_kind", F.lit(0))
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
    function = store_function()
    windows = getattr(spark.sparkContext._jvm.wql.kernels, function).apply(timed._jdf, stored_request())
    if windows is None:
        raise ValueError(f"WQL's {function} refused this query: run it with spark.wql.stream.state=files")
    windows = DataFrame(windows, spark)
    # The windows as one struct (their names may be the stream's too), beside the trigger's rows as read, whose
    # columns stay as they are: the job's rules (window_attribute, PUNCTUATION WHEN) read them by name.
    found = windows.select(
        F.struct(*(F.col(f"`{c}`") for c in windows.columns if c != "_kind")).alias("_window"),
        F.col("_kind"),  # "window"; with EMIT CHANGES of sessions also "held", a version emitted before
    )
    both = found.unionByName(frame.withColumn("_kind", F.lit("raw")), allowMissingColumns=True)
    query = {}

    def on_batch(micro, batch):
        stored_batch(spark, micro, batch, checkpoint, emit, late, late_format, report, query.get("running"), timed)

    query["running"] = start_query(both, on_batch, checkpoint, once, interval)
    return query["running"]


def stored_batch(spark, micro, batch, checkpoint, emit, late, late_format, report, running, timed):
    """One trigger of the state-store engine: its windows (the ones the JVM function found final at the
    punctuation the trigger started with) to the sink; its rows as read counted, the late and malformed
    ones written, and the punctuation after it recorded, as in run_trigger."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    stopped = ended(spark, checkpoint)
    if stopped is not None:
        raise stopped
    fault("trigger", batch)
    meta = newest_meta(spark, checkpoint, before=batch)
    before = meta["punctuation"]
    raw = F.col("_kind") == "raw"
    malformed = raw & (F.col(CORRUPT).isNotNull() if CORRUPT in micro.columns else F.lit(False))
    marked = raw & ~malformed
    marked &= F.coalesce(F.expr(STREAMING["punctuation"]), F.lit(False)) if STREAMING["punctuation"] else F.lit(False)
    admitted = raw & ~malformed & ~marked
    t = window_attribute(micro)  # NULL on the windows' rows
    is_late = F.lit(False) if before is None else F.coalesce(t < F.lit(before), F.lit(False))
    counting = [
        F.count_if(admitted).alias("rows"),
        F.count_if(admitted & is_late).alias("late"),
        F.count_if(admitted & t.isNull()).alias("nulls"),
        F.max(F.when(admitted, t)).alias("max_seen"),
        F.count_if(malformed).alias("malformed"),
        F.count_if(marked).alias("punctuations"),
        (F.max(F.when(marked, t)) if STREAMING["punctuation"] else F.lit(None)).alias("marked"),
    ]
    # One job runs the micro-batch (the state store's one update) and counts its rows as read while it passes
    # (an Observation); only the windows and the late and malformed rows are cached for the writes after it,
    # not the trigger's every row.
    seen = Observation(f"wql_store_{batch}")
    kept = micro.observe(seen, *counting).where(~raw | malformed | (admitted & is_late)).persist()
    try:
        kept.count()
        try:
            stats = seen.get
        except spark_errors():
            # Spark's optimizer drops the counting with the rows when it can tell the micro-batch is empty: then
            # every count is 0 and there is no largest value.
            stats = {"rows": 0, "late": 0, "nulls": 0, "max_seen": None, "malformed": 0, "punctuations": 0}
            stats["marked"] = None
        max_seen, after = next_punctuation(meta, stats, before)
        for value in (max_seen, stats["marked"]):
            if value is not None and not -(BASE - HIDDEN) < value - (STREAMING["slack"] or 0) < REACH:
                raise ValueError(
                    f"the window attribute's value {show_point(value)} is beyond what Spark's watermark carries "
                    "for this stream: run it with spark.wql.stream.state=files"
                )
        fault("emit", batch)
        emitted = emit(stored_windows(kept), f"batch-{batch:08d}")
        fault("emitted", batch)
        if late is not None and stats["late"] + stats["malformed"]:
            rejected = kept.where(raw).drop("_kind", "_window")
            columns = [c for c in rejected.columns if c != CORRUPT and not c.startswith("__wql_")]
            if STREAMING["store"].get("generous") and STREAMING["store"]["kind"] == "session":
                # Each key's closing point, as the function held it when the trigger began (for the keys with late
                # tuples): a late row at or before it is in no session, one after it was placed (the job's missed).
                points = kept.where(F.col("_kind") == "closing").select("_window.*")
                points = points.select(
                    *(F.col(f"`{c}`") for c in STREAMING["store"]["keys"]), F.col("wid").alias("_closed_t")
                )
                rejected = closed(rejected, points)
            write_late(rejected, columns, before, batch, late, late_format)
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
            held = 0
            progress = running.lastProgress if running is not None else None
            if progress:  # the keys Spark's state store kept after the trigger before
                held = sum(op.get("numRowsTotal", 0) for op in progress.get("stateOperators", []))
            report(trigger_report(batch, stats, emitted, show_point(after), held))
    finally:
        kept.unpersist()


def stored_windows(kept):
    """What the trigger emits of the windows the JVM function gave: each through the job's lower and finish
    stages; with EMIT CHANGES of sessions, as the files engine's changelog, the versions the function held
    taken back where their session is gone and the changed sessions emitted where their result differs."""
    from pyspark.sql import functions as F

    found = kept.where(F.col("_kind") == "window").select("_window.*")
    if STREAMING["store"]["kind"] != "session" or STREAMING["store"]["emit"] != "changes":
        return finish(lower(found))
    current = lower(found)
    held = lower(kept.where(F.col("_kind") == "held").select("_window.*"))
    return changelog(finish(current), finish(held), finish(vanished(held, current, STREAMING["retracts"])))


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
    function = store_function()
    windows = getattr(spark.sparkContext._jvm.wql.kernels, function).drain(kept._jdf, stored_request(), schema)
    if windows is None:
        raise ValueError(f"WQL's {function} refused to drain this stream's state")
    return finish(lower(DataFrame(windows, spark).drop("_kind")))
