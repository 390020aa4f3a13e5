"""A stream's life in a streaming job: started on Structured Streaming with the engine that keeps its state,
waited for, drained; and the job's own command line.

Copied into every streaming job (it imports nothing of WQL at run time). Exactly once: Spark's file source
logs which files a trigger reads before it runs and replays an unfinished trigger with the same files and
batch id; a trigger reads the state the trigger before it left and writes its outputs under names made from
its batch id, replacing what an interrupted attempt of the same trigger left (engine.py). A drain is a
record of its own (CHECKPOINT/wql/drain.json), written before its windows: it refuses while a trigger Spark
logged has not finished, and once it has begun the stream has ended, so no trigger runs on that checkpoint
again and only a drain can be finished there.
"""

from typing import TYPE_CHECKING

from wql.compiler.kernels.files_engine import FilesEngine  # a job holds its own copies, beside these functions
from wql.compiler.kernels.store_engine import StoreEngine

if TYPE_CHECKING:  # names the job defines, or other support code copied beside this (job.pyi)
    from wql.compiler.kernels.checkpoint import (
        StreamEnded,
        TriggerUnfinished,
        drain_record,
        ended,
        logged_triggers,
        newest_meta,
        state_root,
    )
    from wql.compiler.kernels.engine import no_counts, trigger_report
    from wql.compiler.kernels.faults import fault
    from wql.compiler.kernels.job import APP_NAME, STREAMS
    from wql.compiler.kernels.job_support import input_paths, spark_errors
    from wql.compiler.kernels.sinks import console_sink, file_sink
    from wql.compiler.kernels.stream_io import put_text
    from wql.compiler.kernels.stream_source import open_stream

# The engines a stream can keep its state with, in order: the first that runs a job starts its stream, the first
# that owns a checkpoint goes on with it (engine.py has their protocol). The files engine runs every job.
ENGINES = (StoreEngine, FilesEngine)


def start_stream(
    spark,
    emit,
    checkpoint,
    paths=None,
    late=None,
    late_format="csv",
    once=False,
    report=None,
    max_files=None,
    interval=None,
):
    """Start the query on Structured Streaming, each micro-batch a trigger of the stream's engine; Spark's
    StreamingQuery. `emit(windows, name)` takes each trigger's windows; `once` processes the input that is
    there and stops (trigger availableNow). Raises StreamEnded on a checkpoint whose stream was drained."""
    paths = paths or {}
    unknown = sorted(set(paths) - set(STREAMS))
    if unknown:
        raise ValueError(f"unknown stream {unknown[0]!r}; the query reads {', '.join(STREAMS)}")
    stopped = ended(spark, checkpoint)
    if stopped is not None:
        raise stopped
    [(name, stream)] = STREAMS.items()
    source = open_stream(spark, name, stream, paths.get(name), max_files)
    engine = chosen_engine(spark, checkpoint, newest_meta(spark, checkpoint))
    streamed, facts = engine.streamed(spark, source)

    def on_batch(micro, batch):
        run_trigger(spark, micro, batch, checkpoint, emit, late, late_format, report, engine, facts)

    running = start_query(streamed, on_batch, checkpoint, once, interval)
    facts["query"] = running
    return running


def run_trigger(
    spark, micro, batch, checkpoint, emit, late=None, late_format="csv", report=None, engine=None, facts=None
):
    """One trigger of the stream over the micro-batch `micro`, on `engine` (the files engine when none is
    given, which runs a micro-batch a caller makes): what is late against the punctuation it starts with, the
    windows it closes (to `emit(windows, name)`), the state it leaves; `late`, a directory for late and
    malformed rows; `facts`, what the engine's start gave its triggers."""
    (engine or FilesEngine)(spark, micro, batch, checkpoint, facts).run(emit, late, late_format, report)


def chosen_engine(spark, checkpoint, meta):
    """The engine a stream runs with: the first of ENGINES that runs this job here, or the one the checkpoint's
    stream began with. Neither engine reads the other's state: a stream begun in the checkpoint's own files (by
    a WQL before the state store took its query) goes on there when no engine is named, since the files engine
    runs every query; a run that names the other engine with spark.wql.stream.state, or lacks what the
    checkpoint's engine needs, refuses in one line."""
    engine = next(e for e in ENGINES if e.runs(spark))
    if meta["batch"] is None:
        return engine
    begun = engine_of(meta)
    named = spark.conf.get("spark.wql.stream.state", None) is not None
    if begun is engine or (not named and begun.runs(spark)):
        return begun
    raise ValueError(
        f"the stream in {checkpoint} keeps its state in {begun.place}: run it with spark.wql.stream.state="
        f"{begun.name} (and WQL's kernels for the state store), or start a new stream with another --checkpoint"
    )


def engine_of(meta):
    """The engine whose state a checkpoint's newest meta names."""
    return next(e for e in ENGINES if e.owns(meta))


def drain_stream(spark, checkpoint, emit, report=None):
    """End the stream: the punctuation goes to +∞, so every window still open is emitted, once. Returns the
    number of windows emitted.

    The drain is recorded (drain.json) before its windows are written, so that from then on the stream has
    ended: no trigger runs on the checkpoint again, and a drain that was stopped halfway is finished by
    draining again (it writes the same windows under the same name)."""
    import json

    record = drain_record(spark, checkpoint)
    if record is not None and record["status"] == "done":
        return 0
    meta = newest_meta(spark, checkpoint)
    engine = engine_of(meta)
    if record is None:
        record = begin_drain(spark, checkpoint, meta, engine)
    fault("drain", meta["batch"])
    windows = engine.drained(spark, checkpoint, meta)
    emitted = 0 if windows is None else emit(windows, f"drain-{meta['batch']:08d}")
    fault("drained", meta["batch"])
    record = {**record, "status": "done", "windows": emitted}
    put_text(spark, f"{state_root(checkpoint)}/drain.json", json.dumps(record, sort_keys=True))
    if report is not None:
        report(trigger_report("drain", no_counts(), emitted, "end of stream", 0))
    return emitted


def begin_drain(spark, checkpoint, meta, engine):
    """The drain's record, written before its windows. Refused while a trigger Spark logged has not finished:
    that trigger's rows would otherwise be lost, or come out twice; or while the engine's state cannot be
    drained yet."""
    import datetime
    import json

    logged = logged_triggers(spark, checkpoint)
    if logged and (meta["batch"] is None or logged[-1] > meta["batch"]):
        raise TriggerUnfinished(
            f"trigger {logged[-1]} of the stream in {checkpoint} stopped before it finished, so the stream "
            "was not drained: run it again (it finishes that trigger first) with --drain"
        )
    refusal = engine.refuses_drain(spark, checkpoint, meta)
    if refusal is not None:
        raise TriggerUnfinished(refusal)
    at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    record = {"after": meta["batch"], "at": at, "status": "begun"}
    put_text(spark, f"{state_root(checkpoint)}/drain.json", json.dumps(record, sort_keys=True))
    return record


def start_query(frame, on_batch, checkpoint, once, interval):
    """Structured Streaming over frame, each micro-batch through on_batch(micro, trigger); a trigger's own
    error is kept, so that the query's failure can name its cause (await_stream)."""
    failure = {}

    def guarded(micro, batch):
        try:
            without_adaptive_execution(micro.sparkSession)
            on_batch(micro, batch)
        except BaseException as error:
            failure.setdefault("error", error)
            failure.setdefault("trigger", batch)
            raise

    writer = frame.writeStream.foreachBatch(guarded).option("checkpointLocation", checkpoint)
    if once:
        writer = writer.trigger(availableNow=True)
    elif interval:
        writer = writer.trigger(processingTime=f"{interval} seconds")
    running = writer.start()
    running.wql_failure = failure
    return running


def without_adaptive_execution(session):
    """A trigger's own work (its counts, state and windows) runs without adaptive query execution, in the
    query's session (a clone Structured Streaming makes; the job's session keeps its setting). A trigger's
    data is small, and adaptive execution runs each shuffle and broadcast stage as a Spark job of its own
    and plans again between them: sessions took 15 jobs a trigger with it and 6 without (docs/design.md §2.1).
    Structured Streaming already turns it off for a query with a stateful operator (the state store
    engine's); this is for the others. A session that sets spark.sql.adaptive.enabled itself keeps it, and
    spark.wql.stream.adaptive=true keeps adaptive execution on. Without it nothing coalesces the shuffles'
    partitions: where the session does not set spark.sql.shuffle.partitions, a trigger's shuffles get one
    partition a core (Spark's 200 would be 200 tasks and files per shuffle, each a few rows)."""
    if session.conf.get("spark.wql.stream.adaptive", "false").lower() == "true":
        return
    chosen = session.conf.getAll
    if "spark.sql.adaptive.enabled" in chosen:
        return
    session.conf.set("spark.sql.adaptive.enabled", "false")
    if "spark.sql.shuffle.partitions" in chosen:
        return
    try:
        cores = session.sparkContext.defaultParallelism
    except spark_errors():  # a Spark Connect session shows no SparkContext: Spark's own setting stays
        return
    session.conf.set("spark.sql.shuffle.partitions", str(max(1, cores)))


class TriggerFailed(Exception):
    """A trigger's own error, which Spark reports only as the query's failure (STREAM_FAILED)."""

    def __init__(self, trigger, error):
        super().__init__(f"trigger {trigger} failed: {type(error).__name__}: {error}")
        self.trigger = trigger
        self.error = error


def await_stream(running, idle=None, poll=0.5):
    """Wait until the query stops or, with `idle`, until no new rows came for that many seconds. A query that
    failed raises TriggerFailed with the trigger's own error, when a trigger failed, or Spark's."""
    import time

    quiet_since = time.monotonic()
    while running.isActive:
        try:
            running.awaitTermination(poll)
        except spark_errors():  # it failed: told below, with its cause
            break
        progress = running.lastProgress
        if progress and progress.get("numInputRows"):
            quiet_since = time.monotonic()
        if idle is not None and time.monotonic() - quiet_since >= idle and not running.status["isTriggerActive"]:
            running.stop()
    if running.exception() is not None:
        failure = getattr(running, "wql_failure", {})
        if "error" in failure:
            raise TriggerFailed(failure["trigger"], failure["error"]) from failure["error"]
        raise running.exception()


def stream_main(argv=None):
    """Run the query on a stream: python job.py [--input STREAM=DIR] [--output DIR --checkpoint DIR]
    [--late DIR] [--once] [--drain] [--idle SECONDS]."""
    import argparse
    import os
    import sys
    import tempfile

    from pyspark.sql import SparkSession

    parser = argparse.ArgumentParser(description="A WQL window query on Spark Structured Streaming.")
    parser.add_argument("--input", action="append", default=[], metavar="STREAM=PATH", help="read a stream from PATH")
    parser.add_argument("--output", metavar="DIR", help="write each trigger's windows as files here (exactly once)")
    parser.add_argument("--format", choices=("csv", "json", "parquet"), default="csv")
    parser.add_argument("--checkpoint", metavar="DIR", help="where progress and open windows are kept")
    parser.add_argument("--late", metavar="DIR", help="write late and malformed rows here, with the reason")
    parser.add_argument("--once", action="store_true", help="process the input that is there, then stop")
    parser.add_argument("--drain", action="store_true", help="then end the stream: emit every open window")
    parser.add_argument("--idle", type=float, metavar="SECONDS", help="stop after this long without new input")
    parser.add_argument("--max-files", type=int, metavar="N", help="files per trigger (file sources)")
    parser.add_argument("--interval", type=float, metavar="SECONDS", help="seconds between triggers")
    args = parser.parse_args(argv)
    paths = input_paths(parser, args.input)
    if args.output and not args.checkpoint:
        parser.error("--output needs --checkpoint: it is what makes the output exactly once across restarts")
    checkpoint = args.checkpoint or tempfile.mkdtemp(prefix="wql-checkpoint-")
    spark = SparkSession.builder.appName(APP_NAME).config("spark.sql.session.timeZone", "UTC").getOrCreate()
    emit = file_sink(args.output, args.format) if args.output else console_sink()

    def report(status):
        print(
            f"wql: trigger {status['trigger']}: {status['rows']:,} rows, {status['late']:,} late, "
            f"{status['malformed']:,} malformed, {status['windows']:,} windows, "
            f"punctuation {status['punctuation']}, state {status['state_rows']:,} rows",
            file=sys.stderr,
            flush=True,
        )

    once = args.once or (args.drain and args.idle is None)
    try:
        try:
            running = start_stream(
                spark, emit, checkpoint, paths, args.late, args.format, once, report, args.max_files, args.interval
            )
        except StreamEnded as stopped:
            if not args.drain or stopped.finished:
                raise
            running = None  # a drain that was stopped halfway: finish it
        if running is not None:
            await_stream(running, args.idle)
        if args.drain:
            drain_stream(spark, checkpoint, emit, report)
    except (StreamEnded, TriggerUnfinished, TriggerFailed) as error:
        print(f"wql: {error}", file=sys.stderr)
        spark.stop()
        return 1
    if args.output:
        print(f"wql: windows in {os.path.abspath(args.output)}", file=sys.stderr)
    spark.stop()
    return 0
