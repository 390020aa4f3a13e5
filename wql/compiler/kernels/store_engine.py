"""The state store engine: grid windows' cells or sessions kept in Spark's state store, through
flatMapGroupsWithState.

Copied into streaming jobs whose query the state store can take (STREAMING["store"]: grid windows over
panes or slices of partial states, or sessions without MAX); the job runs this engine when Spark has WQL's
JVM kernels (the StreamCells or StreamSessions function in wql-kernels.jar), and the files engine
(files_engine.py) otherwise, or with spark.wql.stream.state=files. It implements the stream engine protocol
(engine.py).

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

from wql.compiler.kernels.engine import TriggerRun  # a job holds its own copy, beside this class

if TYPE_CHECKING:  # names the job defines, or other support code copied beside this (job.pyi)
    from wql.compiler.kernels.checkpoint import committed_trigger
    from wql.compiler.kernels.engine import (
        as_read,
        is_malformed,
        is_punctuation,
        late_rule,
        no_counts,
        observed,
        trigger_counts,
    )
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
    from wql.compiler.kernels.job_support import jvm_class
    from wql.compiler.kernels.session_changes import changelog, vanished

BASE = 1 << 52  # the event time of attribute value 0, in milliseconds (Spark's watermark never goes below 0)
HIDDEN = 1 << 50  # added to the delay: Spark drops no row less late than this
REACH = (1 << 53) - BASE  # attribute values (base units) the watermark carries: from −(BASE − HIDDEN) to this


class StoreEngine(TriggerRun):
    """One trigger of the state store engine. Its micro-batch has two branches: the windows the JVM function
    gave (`_kind` "window"; with EMIT CHANGES of sessions also "held", a version emitted before; under GENEROUS
    slack "closing", a key's closing point), each as one struct (`_window`), and the trigger's rows as read
    (`_kind` "raw"). One Spark job runs it (keep), so the state store is updated once a trigger: it counts the
    rows as they pass (an Observation) and caches only the windows and the late and malformed rows (`found`),
    which the writes after it read."""

    name = "store"
    place = "Spark's state store"
    # What a trigger's phases set, as they find it (a trigger's own, on its instance).
    raw = malformed = is_late = counting = taken = found = None

    @classmethod
    def runs(cls, spark):
        return stores_state(spark)

    @classmethod
    def owns(cls, meta):
        return meta.get("store") is not None

    @classmethod
    def streamed(cls, spark, source):
        """The trigger's tuples (each a cell of its own for grid windows), keyed, through the JVM function,
        whose windows and the trigger's rows as read reach foreachBatch together; and the schema of the rows
        the function takes ("input"), which the drain needs to read the state back."""
        from pyspark.sql import DataFrame
        from pyspark.sql import functions as F

        timed = timed_tuples(source)
        function = store_function()
        windows = getattr(spark.sparkContext._jvm.wql.kernels, function).apply(timed._jdf, stored_request())
        if windows is None:
            raise ValueError(f"WQL's {function} refused this query: run it with spark.wql.stream.state=files")
        windows = DataFrame(windows, spark)
        # The windows as one struct (their names may be the stream's too), beside the trigger's rows as read,
        # whose columns stay as they are: the job's rules (window_attribute, PUNCTUATION WHEN) read them by name.
        found = windows.select(
            F.struct(*(F.col(f"`{c}`") for c in windows.columns if c != "_kind")).alias("_window"),
            F.col("_kind"),  # "window"; with EMIT CHANGES of sessions also "held", a version emitted before
        )
        both = found.unionByName(source.withColumn("_kind", F.lit("raw")), allowMissingColumns=True)
        return both, {"input": timed.schema.json()}

    @classmethod
    def refuses_drain(cls, spark, checkpoint, meta):
        """Its cells are in Spark's state store, whose reader takes only triggers Spark recorded as done."""
        if committed_trigger(spark, checkpoint) >= meta["batch"]:
            return None
        return (
            f"trigger {meta['batch']} of the stream in {checkpoint} finished, but Spark had not recorded it "
            "when the stream stopped, so the stream was not drained: run it again (Spark runs that trigger "
            "again, writing the same windows) with --drain"
        )

    @classmethod
    def drained(cls, spark, checkpoint, meta):
        """Each key's cells as the last trigger left them (Spark's state data source), every window after the
        last one emitted; None when nothing is kept (or with EMIT CHANGES: every version is out already)."""
        from pyspark.sql import DataFrame
        from pyspark.sql import functions as F

        schema = stored_input(meta)
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

    def admit(self):
        """The rows as read sorted (the windows' rows are none of them), and the counts to take as they pass;
        which tuples join windows the JVM function decided, in the same job."""
        from pyspark.sql import functions as F

        micro = self.micro
        self.raw = raw = F.col("_kind") == "raw"
        self.malformed = malformed = raw & is_malformed(micro)
        marked = raw & ~malformed & is_punctuation()
        tuples = raw & ~malformed & ~marked
        t = window_attribute(micro)  # NULL on the windows' rows
        self.is_late = late_rule(t, self.before)
        statistics, signals = trigger_counts(t, tuples, self.is_late, malformed, marked)
        self.counting = statistics + signals
        self.taken = ~raw | malformed | (tuples & self.is_late)  # what the writes after the job read

    def keep(self):
        """The one job: Spark's state store updated, the rows counted, the windows and rejected rows cached.
        Where Spark's optimizer dropped the counting, the micro-batch was empty: every count is 0 (it is not
        read again, which would update the state store twice)."""
        from pyspark.sql import Observation

        seen = Observation(f"wql_store_{self.batch}")
        self.found = self.micro.observe(seen, *self.counting).where(self.taken).persist()
        self.found.count()
        self.counted(observed(seen, no_counts))

    def counted(self, stats):
        """Also a value Spark's watermark cannot carry stops the stream, with the setting that runs it."""
        super().counted(stats)
        for value in (self.max_seen, stats["marked"]):
            if value is not None and not -(BASE - HIDDEN) < value - (STREAMING["slack"] or 0) < REACH:
                raise ValueError(
                    f"the window attribute's value {show_point(value)} is beyond what Spark's watermark carries "
                    "for this stream: run it with spark.wql.stream.state=files"
                )

    def close(self):
        return stored_windows(self.found), {}

    def rejected(self):
        """The rows as read that are late or malformed; under GENEROUS slack, with each key's closing point as
        the function held it when the trigger began (for the keys with late tuples): a late row at or before it
        is in no session, one after it was placed (the job's missed rule)."""
        from pyspark.sql import functions as F

        rows = self.found.where(self.raw).drop("_kind", "_window")
        columns = as_read(rows.columns)
        if STREAMING["store"].get("generous") and STREAMING["store"]["state"] == "session":
            points = self.found.where(F.col("_kind") == "closing").select("_window.*")
            points = points.select(
                *(F.col(f"`{c}`") for c in STREAMING["store"]["keys"]), F.col("wid").alias("_closed_t")
            )
            rows = closed(rows, points)
        return rows, columns

    def recorded(self):
        return {"state": None, "store": {"input": self.facts["input"]}}

    def state_rows(self, entries):
        """The keys Spark's state store kept after the trigger before (its last progress report)."""
        running = self.facts.get("query")
        progress = running.lastProgress if running is not None else None
        if not progress:
            return 0
        return sum(op.get("numRowsTotal", 0) for op in progress.get("stateOperators", []))

    def release(self):
        if self.found is not None:
            self.found.unpersist()


def stored_input(meta):
    """The schema of the rows the JVM function takes, as a trigger's meta records it ("cells" in checkpoints
    written before sessions took the state store too), or None."""
    store = meta.get("store") or {}
    return store.get("input", store.get("cells"))


def stores_state(spark):
    """Whether this job's state lives in Spark's state store: its query can (STREAMING["store"]), Spark
    has WQL's function for it (wql-kernels.jar on the classpath) and spark.wql.stream.state is not "files"."""
    if STREAMING.get("store") is None or spark.conf.get("spark.wql.stream.state", "store") == "files":
        return False
    return jvm_class(spark, store_function()) is not None  # not under Spark Connect, nor without the jar


def store_function():
    """The JVM function of flatMapGroupsWithState that keeps this query's state: a grid's open cells
    (StreamCells) or a key's open sessions (StreamSessions)."""
    return "StreamSessions" if STREAMING["store"]["state"] == "session" else "StreamCells"


def timed_tuples(source):
    """The rows the JVM function takes: the stream's tuples (stored_tuples) and its punctuation rows, each with
    its event time (`_wm`), under Spark's watermark."""
    from pyspark.sql import functions as F

    malformed, marked, slack = is_malformed(source), is_punctuation(), STREAMING["slack"]
    tuples = stored_tuples(source.where(~malformed & ~marked)).withColumn("_kind", F.lit(0))
    # Each tuple's event time; without SLACK only punctuation rows move time, and they enter at their value
    # (plus SLACK), each as a row that is no tuple.
    moving = F.col("_t") if slack is not None else F.lit(None).cast("bigint")
    tuples = tuples.withColumn("_event", moving)
    punctuations = source.where(marked & ~malformed).select(
        window_attribute(source).alias("_t"),
        (window_attribute(source) + F.lit(slack or 0)).alias("_event"),
        F.lit(2).alias("_kind"),
    )
    timed = tuples.unionByName(punctuations, allowMissingColumns=True) if STREAMING["punctuation"] else tuples
    event = F.least(F.greatest(F.col("_event"), F.lit(-(BASE - HIDDEN))), F.lit(REACH))
    timed = timed.withColumn("_wm", F.timestamp_millis(event + F.lit(BASE))).drop("_event")
    return timed.withWatermark("_wm", f"{(slack or 0) + HIDDEN} milliseconds")


def stored_tuples(rows):
    """The stream's tuples as the store's function takes them: for grid windows each a cell of its own (the
    shares stage); for sessions the prepared tuples, each with its count (the windows stage counts in batch)
    and, outside WHERE, no share of any state: such a tuple still joins and bridges sessions."""
    from pyspark.sql import functions as F

    store = STREAMING["store"]
    if store["state"] != "session":
        return shares(prepare(rows))
    tuples = prepare(rows)
    inside = F.col("_in") if "_in" in tuples.columns else F.lit(True)
    for column in store["columns"]:
        share = F.lit(1).cast("bigint") if column in store["counted"] else F.col(column)
        tuples = tuples.withColumn(column, F.when(inside, share))
    return tuples.drop("_in")


def stored_request():
    import json

    return json.dumps({**STREAMING["store"], "shift": BASE - HIDDEN})


def stored_windows(found):
    """What the trigger emits of the windows the JVM function gave: each through the job's lower and finish
    stages; with EMIT CHANGES of sessions, as the files engine's changelog, the versions the function held
    taken back where their session is gone and the changed sessions emitted where their result differs."""
    from pyspark.sql import functions as F

    windows = found.where(F.col("_kind") == "window").select("_window.*")
    if STREAMING["store"]["state"] != "session" or STREAMING["store"]["emit"] != "changes":
        return finish(lower(windows))
    current = lower(windows)
    held = lower(found.where(F.col("_kind") == "held").select("_window.*"))
    return changelog(finish(current), finish(held), finish(vanished(held, current, STREAMING["retracts"])))
