"""The stream engine protocol: what one trigger of a stream does, phase by phase, whichever engine keeps its state.

Copied into every streaming job. The job runs its query on Spark Structured Streaming and hands each
micro-batch (a trigger) to `foreachBatch`, which runs it through one engine. An engine is a subclass of
TriggerRun: its class methods serve the stream as a whole, its methods one trigger. Why foreachBatch and
not only Spark's stateful operators: a trigger must count its late rows, write them with the windows they
missed, take punctuations from the input and number rows across triggers, none of which a stateful
operator does; so every engine ends each trigger here, whatever it leaves to Spark.

The stream, by class method:
- runs(spark): whether the engine can run this job in this Spark (the state store engine needs WQL's JVM
  kernels and a query it takes; the files engine runs every query).
- owns(meta): whether a checkpoint is the engine's (its newest meta says so). Neither engine reads the
  other's state, so a stream stays with the engine that began it (stream_run.chosen_engine).
- streamed(spark, source): the streaming DataFrame its triggers read, and what they need of the stream
  (the files engine: the rows as read; the state store engine: the windows Spark's state store closed,
  beside the rows as read).
- drained(spark, checkpoint, meta): the windows still open when the stream ends (the drain: punctuation
  +∞), or None; refuses_drain says when the engine's state cannot be drained yet.

One trigger, by phase, in this order (`run`); the phases both engines need are written here, once:
- begin (here): refuse a stream that has ended; read the meta the trigger before committed and the
  punctuation the trigger starts with. A trigger reads the meta before it, never its own: a replay of a
  trigger starts where its first attempt did, which is what makes every output exactly once.
- admit (engine): sort the micro-batch's rows into tuples, late tuples, malformed rows and punctuation rows
  (the late rule, `late_rule`, and the counts, `trigger_counts`, are written here), and say which tuples
  join windows, in the plan's terms. Why a phase: what is late is the stream's rule, what joins windows is
  the plan's (cells or rows; GENEROUS closing points).
- keep (engine): merge the state the trigger before left with the trigger's tuples. The counts are taken
  by its end, then `counted` (here) gives the punctuation after the trigger and the rows so far: in admit by
  an aggregation of their own, or here in the Spark job that builds the state, through an Observation
  (`observed`), which saves a pass over the micro-batch. Why before close: the windows a trigger closes and
  the state it leaves depend on the punctuation after it.
- close (engine): the windows the trigger emits, or None when it changes nothing, and the parts of the
  state to write for the next trigger (none where Spark's state store keeps it).
- emit (here): the windows to the sink under the trigger's name, each state part written beside it in a
  thread of its own (their fixed costs overlap); a failing emit fails the trigger once every part has ended.
- set aside (here; the engine's `rejected` names the rows): late and malformed rows to the late-rows
  output, with the windows each missed.
- commit (here; the engine's `recorded` gives its entries of the meta and `state_rows` its size): the meta
  that makes the trigger done, then the trigger's report.
- release (engine): what the trigger cached, whether it ended or failed.
The drain (stream_run.drain_stream) is written once too: its record, its faults and its report.

What each engine keeps, and where:
- the files engine (files_engine.py), everything in CHECKPOINT/wql: a meta per trigger (the punctuation, the
  largest value seen, the data's end, the rows so far, the parts it names) and the parts, parquet files
  named after the trigger that wrote them: "state" (the rows or cells open windows still need), "windows"
  (PATTR sessions and frames: each key's open windows as computed), "closings" (GENEROUS sessions and frames:
  each key's closing point), "positions" (rows counted per partition) and "anchors" (ALIGN FIRST's first
  arrivals).
- the state store engine (store_engine.py): each key's open cells or sessions in Spark's state store
  (flatMapGroupsWithState through WQL's JVM functions, versioned by trigger with Spark's own checkpoint);
  in CHECKPOINT/wql only the meta, with meta["store"]["input"], the schema of the rows the function takes,
  which the drain needs to read the state back.
Both keep drain.json there once a drain begins (checkpoint.py).

An engine variant (another layout of the state in Spark's state store, another way to count and close in
fewer Spark jobs: partial states merged before the shuffle, the counts and late rows taken in the pass that
feeds the state store) is one more subclass, of TriggerRun or of the engine it refines: it says which jobs it
runs and which checkpoints it owns (its meta entries mark them), builds its streamed query, implements
admit, keep, close, rejected, recorded, state_rows and release (or inherits them), and is listed in
stream_run.ENGINES, where the first engine that runs a job starts its stream and the first that owns a
checkpoint goes on with it. Nothing else branches on the engine.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # names the job defines, or other support code copied beside this (job.pyi)
    from wql.compiler.kernels.checkpoint import ended, newest_meta, save_meta, save_state
    from wql.compiler.kernels.faults import fault
    from wql.compiler.kernels.job import STREAMING, missed, show_point
    from wql.compiler.kernels.job_support import CORRUPT, spark_errors
    from wql.compiler.kernels.sinks import publish


class TriggerRun:
    """One trigger of a stream, run by an engine (a subclass): the phases in order, and those written once.

    What every engine's run holds: the job's SparkSession (`spark`), the micro-batch (`micro`) and the
    SparkSession it belongs to (`micro_spark`: an Observation reports only to queries of the session it was
    made in, so what the trigger reads joins the micro-batch there), the trigger's number (`batch`, Spark's
    batch id), what the engine's start gave its triggers (`facts`); then, phase by phase, the meta before,
    the counts and the punctuations before and after."""

    name = None  # how spark.wql.stream.state names the engine
    place = None  # where it keeps a stream's state, as a person reads it

    def __init__(self, spark, micro, batch, checkpoint, facts=None):
        self.spark, self.micro, self.batch, self.checkpoint = spark, micro, batch, checkpoint
        self.micro_spark = micro.sparkSession
        self.facts = facts or {}
        self.meta = self.before = self.after = self.stats = None
        self.max_seen = self.reach = None
        self.next_row = 0
        self.emitted = 0
        self.saved = {}

    # ---------------------------------------------------------- the stream (each engine's own)

    @classmethod
    def runs(cls, spark):
        """Whether this engine can run the job in this Spark."""
        raise NotImplementedError

    @classmethod
    def owns(cls, meta):
        """Whether a checkpoint whose newest meta is `meta` keeps its state with this engine."""
        raise NotImplementedError

    @classmethod
    def streamed(cls, spark, source):
        """The streaming DataFrame this engine's triggers read, from the stream's rows as read (`source`), and
        what its triggers need of the stream (a dict, filled further once the query runs: "query")."""
        raise NotImplementedError

    @classmethod
    def refuses_drain(cls, spark, checkpoint, meta):
        """Why the state the meta names cannot be drained yet, or None."""
        return None

    @classmethod
    def drained(cls, spark, checkpoint, meta):
        """The windows a drain emits (every window still open, the punctuation at +∞), or None."""
        raise NotImplementedError

    # ---------------------------------------------------------- one trigger

    def run(self, sink, late=None, late_format="csv", report=None):
        """The trigger's phases in order. `sink(windows, name)` takes the windows; `late`, a directory for late
        and malformed rows; `report`, the trigger's counts."""
        self.begin()
        try:
            self.admit()
            self.keep()
            self.emit(sink)
            self.set_aside(late, late_format)
            self.commit(report)
        finally:
            self.release()

    def begin(self):
        """The meta of the trigger before (its punctuation, row count, state) and the punctuation the trigger
        starts with; a drained stream has ended, and no trigger runs on its checkpoint again."""
        stopped = ended(self.spark, self.checkpoint)
        if stopped is not None:
            raise stopped
        fault("trigger", self.batch)
        self.meta = newest_meta(self.spark, self.checkpoint, before=self.batch)
        self.before = self.meta["punctuation"]

    def admit(self):
        """The engine's: the rows sorted, the counts to take, what joins windows."""
        raise NotImplementedError

    def keep(self):
        """The engine's: the state merged with the trigger's tuples, and the counts taken (`counted`)."""
        raise NotImplementedError

    def counted(self, stats):
        """The trigger's counts: the largest value seen, the punctuation after the trigger, the data's end, the
        rows so far."""
        self.stats = stats
        self.max_seen, self.after = next_punctuation(self.meta, stats, self.before)
        self.reach = _larger(self.meta.get("reach"), stats["reach"]) if STREAMING.get("reaches") else None
        self.next_row = self.meta["next_row"] + stats["rows"]

    def close(self):
        """The engine's: (the windows the trigger emits or None, {part name: (rows, one file)} to write)."""
        raise NotImplementedError

    def emit(self, sink):
        """The windows to the sink, named after the trigger, with the state parts written beside them; the
        parts' jobs end before the trigger goes on, or fail it with the emit's error, or their own."""
        windows, parts = self.close()
        if windows is None:  # the trigger changes nothing: no windows, no state
            return
        spark, checkpoint, batch = self.spark, self.checkpoint, self.batch
        saving = {name: beside(save_part(spark, checkpoint, batch, name, *part)) for name, part in parts.items()}
        try:
            fault("emit", batch)
            self.emitted = sink(windows, f"batch-{batch:08d}")
            fault("emitted", batch)
        finally:
            for wait in saving.values():  # every part's job ends before the trigger goes on, or fails with
                wait(quiet=True)  # the emit's error
        self.saved = {name: wait() for name, wait in saving.items()}  # or the first part's error

    def set_aside(self, late, late_format):
        """Late and malformed rows, to the late-rows output with the windows each missed."""
        stats = self.stats
        if late is None or not stats["late"] + stats["malformed"]:
            return
        rejected, columns = self.rejected()
        before = None if STREAMING["positions"] else self.before
        write_late(rejected, columns, before, self.batch, late, late_format)

    def rejected(self):
        """The engine's: (the late and malformed rows, the columns of the rows as read)."""
        raise NotImplementedError

    def commit(self, report):
        """The meta that makes the trigger done: its punctuation, its counts and the engine's entries (the state
        the next trigger reads); then the trigger's report."""
        entries = self.recorded()
        point = None if STREAMING["positions"] else self.after
        fault("meta", self.batch)
        meta = {"batch": self.batch, "punctuation": point, "max_seen": self.max_seen, "next_row": self.next_row}
        save_meta(self.spark, self.checkpoint, {**meta, **entries}, previous=self.meta)
        fault("committed", self.batch)
        if report is not None:
            shown = "rows counted per partition" if STREAMING["positions"] else show_point(self.after)
            report(trigger_report(self.batch, self.stats, self.emitted, shown, self.state_rows(entries)))

    def recorded(self):
        """The engine's entries of the trigger's meta."""
        raise NotImplementedError

    def state_rows(self, entries):
        """The engine's: how many rows (or keys) of state the stream keeps after the trigger."""
        raise NotImplementedError

    def release(self):
        """The engine's: what the trigger cached, uncached."""
        raise NotImplementedError


def late_rule(t, before):
    """Whether a tuple (its window attribute `t`) is late: below the punctuation the trigger starts with
    (docs/semantics.md §8.3), or under Kafka's rule below the close time it arrives at."""
    from pyspark.sql import functions as F

    if STREAMING["mode"] == "kafka":
        # Kafka's rule: a record is late against the close time it arrives at, stream time (the largest
        # attribute up to it, across keys) less the grace, however the records are cut into triggers.
        return F.coalesce(t < F.col("_seen") - F.lit(STREAMING["slack"]), F.lit(False))
    if before is None or STREAMING["positions"]:
        return F.lit(False)  # no punctuation yet, or rows that arrive in row order: never late
    # A tuple with no window attribute is never late: it is in no window, but it still holds its place among
    # the arrivals that name windows (SLIDE n ROWS counts it).
    return F.coalesce(t < F.lit(before), F.lit(False))


def trigger_counts(t, tuples, late, malformed, marked, reach=None):
    """What a trigger counts, as aggregate columns over its rows: of the tuples (rows, late, no window
    attribute, the largest attribute `t`, the data's end where windows wait for it), and of the rest (malformed
    rows, punctuation rows and the largest punctuation). Two lists, since the files engine counts them apart
    where it numbers rows first."""
    from pyspark.sql import functions as F

    statistics = [
        F.count_if(tuples).alias("rows"),
        F.count_if(tuples & late).alias("late"),
        F.count_if(tuples & t.isNull()).alias("nulls"),
        F.max(F.when(tuples, t)).alias("max_seen"),
    ]
    if reach is not None:
        statistics.append(reach.alias("reach"))
    signals = [
        F.count_if(malformed).alias("malformed"),
        F.count_if(marked).alias("punctuations"),
        (F.max(F.when(marked, t)) if STREAMING["punctuation"] else F.lit(None)).alias("marked"),
    ]
    return statistics, signals


def observed(seen, otherwise):
    """The counts an Observation took while the trigger's job ran, or `otherwise()`: Spark's optimizer drops the
    counting with the rows when it can tell they are empty (a LIMIT 0, an empty local relation, a filter
    that is always false), and then the Observation has no row (py4j: an assertion in
    PythonSQLUtils.toPyRow)."""
    try:
        return seen.get
    except spark_errors():
        return otherwise()


def no_counts():
    """The counts of a trigger with no rows."""
    stats = {"rows": 0, "late": 0, "nulls": 0, "max_seen": None, "malformed": 0, "punctuations": 0}
    return {**stats, "marked": None, "reach": None}


def next_punctuation(meta, stats, before):
    """The largest window attribute seen and the punctuation after a trigger: p = max(p, max_seen − SLACK,
    the punctuation rows' largest), from the trigger's counts and the meta of the trigger before."""
    max_seen = _larger(meta["max_seen"], stats["max_seen"])
    after = before
    if STREAMING["slack"] is not None and max_seen is not None:
        after = _larger(after, max_seen - STREAMING["slack"])
    return max_seen, _larger(after, stats["marked"])


def _larger(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def is_malformed(rows):
    """Whether a row as read is malformed: its line did not parse (kept in _corrupt_record)."""
    from pyspark.sql import functions as F

    return F.col(CORRUPT).isNotNull() if CORRUPT in rows.columns else F.lit(False)


def is_punctuation():
    """Whether a row as read is a punctuation row (PUNCTUATION WHEN): not data, it moves time."""
    from pyspark.sql import functions as F

    return F.coalesce(F.expr(STREAMING["punctuation"]), F.lit(False)) if STREAMING["punctuation"] else F.lit(False)


def as_read(columns):
    """The columns of the stream's rows as read, not the ones WQL adds to read them."""
    return [c for c in columns if c != CORRUPT and not c.startswith("__wql_")]


def write_late(rejected, columns, before, batch, late, late_format):
    """A trigger's late and malformed rows to the late-rows output: the row's columns as read, why, the
    windows a late row missed (the job's `missed` rule), the punctuation the trigger started with, the
    trigger and a malformed row's line as read."""
    from pyspark.sql import functions as F

    reason = F.when(F.col(CORRUPT).isNotNull(), F.lit("malformed")) if CORRUPT in rejected.columns else None
    described = missed(rejected, before).select(
        *(F.col(f"`{c}`") for c in columns),
        (F.lit("late") if reason is None else reason.otherwise(F.lit("late"))).alias("wql_reason"),
        (F.col("_missed") if reason is None else F.when(reason.isNull(), F.col("_missed"))).alias("wql_missed"),
        F.lit(show_point(before)).alias("wql_punctuation"),
        F.lit(batch).alias("wql_trigger"),
        (F.col(CORRUPT) if CORRUPT in rejected.columns else F.lit(None).cast("string")).alias("wql_record"),
    )
    publish(described, late, late_format, f"batch-{batch:08d}", "late-write")


def trigger_report(batch, stats, emitted, punctuation, state_rows):
    """What a trigger did, as its status line reads it."""
    return {
        "trigger": batch,
        "rows": stats["rows"],
        "late": stats["late"],
        "malformed": stats["malformed"],
        "nulls": stats["nulls"],
        "punctuations": stats["punctuations"],
        "windows": emitted,
        "punctuation": punctuation,
        "state_rows": state_rows,
    }


def save_part(spark, checkpoint, batch, name, rows, one_file):
    """The work of writing one part of the state, to run `beside` the emit."""
    return lambda: save_state(spark, checkpoint, rows, name, batch, one_file)


def beside(work):
    """Start `work()` in a thread whose Spark jobs carry the caller's job properties (an InheritableThread),
    so that its job's fixed costs overlap the caller's; the function returned waits for it and gives its
    result, or raises its error (not with `quiet`: the caller is already failing with its own)."""
    from pyspark import InheritableThread

    outcome = {}

    def run():
        try:
            outcome["value"] = work()
        except BaseException as error:  # handed to the caller, which raises it
            outcome["error"] = error

    thread = InheritableThread(target=run, daemon=True)
    thread.start()

    def result(quiet=False):
        thread.join()
        if "error" in outcome and not quiet:
            raise outcome["error"]
        return outcome.get("value")

    return result
