"""The streaming driver: a query's stages run trigger by trigger, with WQL's own state in the checkpoint.

Copied verbatim into every streaming job (it imports nothing of WQL at run time). The job
defines the stages (number, prepare, lift, merge, windows, finish), the window
rules (window_attribute, is_final, retain, missed) and the constants STREAMS and
STREAMING; this code calls them (declared, with their types, in job.pyi).

Why Spark's foreachBatch and not its stateful operators: a stateful operator
drops late rows before user code sees them (they must be counted, written to
the late-rows output and, with GENEROUS slack, still counted in open windows),
takes no punctuations from the input, and cannot number rows across triggers.
So each trigger is a batch job over the trigger's rows and the state the
previous trigger left, and that state is WQL's: parquet files and a small JSON
file per trigger under CHECKPOINT/wql, next to Spark's own offsets.

Exactly once. Spark's file source logs which files a trigger reads before it
runs and replays an unfinished trigger with the same files and batch id. A
trigger reads the state the trigger before it wrote, and writes its outputs
under names made from its batch id, replacing what an interrupted attempt of
the same trigger left: a replay writes the same files again, so every window
is in the output once. A drain is a record of its own (CHECKPOINT/wql/drain.json),
written before its windows: it refuses while a trigger Spark logged has not
finished, and once it has begun the stream has ended, so no trigger runs on that
checkpoint again and only a drain can be finished there.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # names the job defines, or other support code copied beside this (job.pyi)
    from wql.compiler.kernels.job import (
        APP_NAME,
        STREAMING,
        STREAMS,
        anchors_seen,
        closed,
        closing,
        data_end,
        finish,
        is_final,
        lift,
        lower,
        merge,
        missed,
        number,
        prepare,
        reached,
        replay,
        retain,
        shares,
        show_point,
        window_attribute,
        windows,
    )
    from wql.compiler.kernels.job_support import CORRUPT, for_csv, read_table, shown_in_order, spark_errors
    from wql.compiler.kernels.state_algebra import state_combine_columns
    from wql.compiler.kernels.store import drain_stored, start_stored, stores_state

STATE_DIR = "wql"
STAGING = "_wql_staging"
LATE_COLUMNS = ("wql_reason", "wql_missed", "wql_punctuation", "wql_trigger", "wql_record")
# EMIT CHANGES of sessions: the column that says whether a row is a session's new version or takes back one
# emitted before (docs/semantics.md §8.7).
CHANGE = "wql_change"


def is_local(path):
    """A plain path, written with Python's own file functions; a URL (file:, hdfs://, s3a://, …) goes through
    Hadoop's FileSystem, as Spark reads it."""
    return "://" not in path and not path.startswith("file:")


def fault(point, batch=None):
    """A fault a test injects at a named point of a trigger or a drain: WQL_FAULT="POINT[@TRIGGER][:kill]"
    raises there, or with ":kill" ends the process group at once, as a crash would (docs/cli.md lists the
    points). Unset, it does nothing."""
    import os

    wanted = os.environ.get("WQL_FAULT")
    if not wanted:
        return
    spec, _, how = wanted.partition(":")
    name, _, at = spec.partition("@")
    if name != point or (at and at != str(batch)):
        return
    if how == "kill":
        import signal

        os.killpg(os.getpgrp(), signal.SIGKILL)
    raise RuntimeError(f"WQL_FAULT: a fault injected at {point}" + ("" if batch is None else f" ({batch})"))


def hadoop_fs(spark, path):
    """Hadoop's FileSystem for a non-local path (HDFS, S3, …), through the driver's JVM."""
    jvm = spark.sparkContext._jvm
    target = jvm.org.apache.hadoop.fs.Path(path)
    return target.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), target


def put_text(spark, path, text):
    """Write a small text file whole: a reader sees the old file or the new one, never half of one."""
    import os

    if is_local(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(path + ".tmp", path)
        return
    fs, target = hadoop_fs(spark, path)
    stream = fs.create(target, True)
    stream.write(bytearray(text.encode("utf-8")))
    stream.close()


def get_text(spark, path):
    import os

    if is_local(path):
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    fs, target = hadoop_fs(spark, path)
    if not fs.exists(target):
        return None
    reader = spark.sparkContext._jvm.java.io.BufferedReader(
        spark.sparkContext._jvm.java.io.InputStreamReader(fs.open(target), "UTF-8")
    )
    lines = []
    line = reader.readLine()
    while line is not None:
        lines.append(line)
        line = reader.readLine()
    reader.close()
    return "\n".join(lines)


def list_names(spark, path):
    import os

    if is_local(path):
        return sorted(os.listdir(path)) if os.path.isdir(path) else []
    fs, target = hadoop_fs(spark, path)
    if not fs.exists(target):
        return []
    return sorted(status.getPath().getName() for status in fs.listStatus(target))


def remove(spark, path):
    import os
    import shutil

    if is_local(path):
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.exists(path):
            os.remove(path)
        return
    fs, target = hadoop_fs(spark, path)
    fs.delete(target, True)


def publish(result, directory, fmt, name, point="write"):
    """Write one trigger's rows as DIRECTORY/NAME.FMT, replacing what an earlier attempt wrote; the row count.

    The file appears whole or not at all: Spark writes it aside (DIRECTORY/_wql_staging/NAME), then it is
    renamed into place, with Python's file functions for a plain path and Hadoop's FileSystem for a URL
    (HDFS, S3, file:). A trigger that emits nothing removes what an interrupted attempt left under NAME.
    """
    import glob
    import os
    import shutil

    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    if fmt == "csv":
        result = for_csv(result)
    counted = Observation(f"wql_{name}")
    result = result.observe(counted, F.count(F.lit(1)).alias("rows"))
    root = directory.rstrip("/")
    writer = result.coalesce(1).write.mode("overwrite").format(fmt)
    writer = writer.option("header", True) if fmt == "csv" else writer
    writer.save(f"{root}/{STAGING}/{name}")
    rows = counted.get["rows"]
    number = name.rsplit("-", 1)[-1]
    fault(point, int(number) if number.isdigit() else name)
    if not is_local(directory):
        session = result.sparkSession
        fs, target = hadoop_fs(session, f"{root}/{name}.{fmt}")
        staging = hadoop_fs(session, f"{root}/{STAGING}")[1]
        written = [status.getPath() for status in fs.listStatus(hadoop_fs(session, f"{root}/{STAGING}/{name}")[1])]
        produced = sorted((path for path in written if path.getName().startswith("part-")), key=lambda p: p.getName())
        if fs.exists(target):
            fs.delete(target, False)
        if rows and produced and not fs.rename(produced[0], target):
            raise OSError(f"could not move {produced[0].toString()} to {target.toString()}")
        fs.delete(staging, True)
        return rows
    staging = os.path.join(root, STAGING, name)
    target = os.path.join(root, f"{name}.{fmt}")
    produced = sorted(glob.glob(os.path.join(staging, "part-*")))
    if rows and produced:
        os.replace(produced[0], target)
    elif os.path.exists(target):
        os.remove(target)
    shutil.rmtree(os.path.join(root, STAGING), ignore_errors=True)
    return rows


# ------------------------------------------------------------------ the state between triggers


def state_root(checkpoint):
    return checkpoint.rstrip("/") + "/" + STATE_DIR


def newest_meta(spark, checkpoint, before=None):
    """What the newest trigger before `before` (every one, if None) left: punctuation, rows so far, …"""
    import json

    root = state_root(checkpoint)
    versions = sorted(
        int(name[len("meta-") : -len(".json")])
        for name in list_names(spark, root)
        if name.startswith("meta-") and name.endswith(".json")
    )
    versions = [v for v in versions if before is None or v < before]
    if not versions:
        return {"batch": None, "punctuation": None, "max_seen": None, "next_row": 0, "state": None}
    return json.loads(get_text(spark, f"{root}/meta-{versions[-1]:08d}.json"))


class StreamEnded(ValueError):
    """A run on a checkpoint whose stream was drained (`finished`) or was being drained when it stopped."""

    def __init__(self, message, finished):
        super().__init__(message)
        self.finished = finished


class TriggerUnfinished(ValueError):
    """A drain asked for while a trigger Spark logged has not finished."""


def drain_record(spark, checkpoint):
    """What a drain of this checkpoint recorded (after which trigger, when, whether it finished), or None.
    A checkpoint drained before drains had a record of their own says so in its newest meta."""
    import json

    text = get_text(spark, f"{state_root(checkpoint)}/drain.json")
    if text is not None:
        return json.loads(text)
    meta = newest_meta(spark, checkpoint)
    if meta.get("drained"):
        return {"after": meta["batch"], "at": "an unknown time", "status": "done"}
    return None


def ended(spark, checkpoint):
    """StreamEnded when the stream on this checkpoint has been drained (or a drain of it began), else None."""
    record = drain_record(spark, checkpoint)
    if record is None:
        return None
    after = "before its first trigger" if record["after"] is None else f"after trigger {record['after']}"
    if record["status"] == "done":
        return StreamEnded(
            f"the stream in {checkpoint} was drained at {record['at']}, {after}: it has ended. Start a new stream "
            "with another --checkpoint directory (and --output directory)",
            True,
        )
    return StreamEnded(
        f"the stream in {checkpoint} was being drained at {record['at']}, {after}, when it stopped: run it "
        "again with --drain to finish the drain",
        False,
    )


def committed_trigger(spark, checkpoint):
    """The last trigger Spark recorded as done on this checkpoint (its commits log), or -1."""
    names = list_names(spark, checkpoint.rstrip("/") + "/commits")
    return max((int(name) for name in names if name.isdigit()), default=-1)


def logged_triggers(spark, checkpoint):
    """The triggers Spark has planned on this checkpoint (its offsets log), in order."""
    names = list_names(spark, checkpoint.rstrip("/") + "/offsets")
    return sorted(int(name) for name in names if name.isdigit())


def save_meta(spark, checkpoint, meta, previous=None):
    """Commit a trigger's state (its parquet files are written first), then drop versions two behind, except
    the files this meta or `previous` (the meta a replay of this trigger reads) still name: a trigger that
    changes nothing names the files of the trigger before it."""
    import json

    root = state_root(checkpoint)
    batch = meta["batch"]
    put_text(spark, f"{root}/meta-{batch:08d}.json", json.dumps(meta, sort_keys=True))
    named = {
        part["name"]
        for source in (meta, previous or {})
        for part in source.values()
        if isinstance(part, dict) and part.get("name")
    }
    for name in list_names(spark, root):
        version = name.split("-")[-1].split(".")[0]
        if version.isdigit() and int(version) < batch - 1 and name not in named:
            remove(spark, f"{root}/{name}")


def load_state(spark, checkpoint, meta, part):
    """The rows or cells (part "state"), partition positions ("positions"), first arrivals ("anchors", ALIGN
    FIRST) or open sessions and frames ("windows") a trigger left, or None. Read with the schema the meta
    records, so that Spark does not run a job to find it."""
    import json

    from pyspark.sql.types import StructType

    saved = meta.get(part) if isinstance(meta.get(part), dict) else {}
    if not saved.get("name"):
        return None
    reader = spark.read
    if saved.get("schema"):
        reader = reader.schema(StructType.fromJson(json.loads(saved["schema"])))
    return reader.parquet(f"{state_root(checkpoint)}/{saved['name']}")


def save_state(spark, checkpoint, frame, part, batch, one_file=True):
    """Write the state for the next trigger: its name, size in rows and schema. `one_file` when the frame is
    small or cached (one task writes one file); rows read from the micro-batch keep its partitions."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    name = f"{part}-{batch:08d}"
    counted = Observation(f"wql_{name}")
    if one_file:
        frame = frame.coalesce(1)
    frame.observe(counted, F.count(F.lit(1)).alias("rows")).write.mode("overwrite").parquet(
        f"{state_root(checkpoint)}/{name}"
    )
    fault("state-part", batch)
    return {"name": name, "rows": counted.get["rows"], "schema": frame.schema.json()}


# ------------------------------------------------------------------ sources


def open_stream(spark, name, stream, path=None, max_files=None):
    """The declared stream as a streaming DataFrame: a directory new files land in, Spark's rate source,
    or Kafka (values parsed into the declared columns). Malformed csv/json rows are kept in
    _corrupt_record, to be counted and written to the late-rows output, never dropped silently."""
    from pyspark.sql import functions as F

    source = stream["source"]
    options = dict(stream["options"])
    if source == "table":
        return read_table(spark.readStream, name, stream, path, streaming=True)
    if source == "rate":
        frame = spark.readStream.format("rate").options(**options).load()
        missing = [c for c, _ in stream["columns"] if c not in frame.columns]
        if missing:
            raise ValueError(
                f"stream {name!r}: Spark's rate source has columns timestamp and value, not {', '.join(missing)}"
            )
        return frame.select(*(F.col(f"`{c}`").cast(t).alias(c) for c, t in stream["columns"]))
    if source == "kafka":
        value_format = options.pop("value.format", "json")
        try:
            frame = spark.readStream.format("kafka").options(**options).load()
        except spark_errors() as error:
            if "kafka" in str(error).lower() and "data source" in str(error).lower():
                raise ValueError(
                    "Spark's Kafka connector is not on the classpath: start Spark with "
                    "--packages org.apache.spark:spark-sql-kafka-0-10_2.13:" + spark.version
                ) from None
            raise
        schema = stream["schema"] + f", `{CORRUPT}` STRING"
        parse = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
        text = F.col("value").cast("string")
        parsed = F.from_csv(text, schema, parse) if value_format == "csv" else F.from_json(text, schema, parse)
        return frame.select(parsed.alias("_value")).select("_value.*")
    path = path or stream["path"]
    if not path:
        raise ValueError(f"stream {name!r} has no FROM path; give one with --input {name}=PATH")
    textual = stream["format"] in ("csv", "json")
    schema = stream["schema"] + (f", `{CORRUPT}` STRING" if textual else "")
    path = in_name_order(path)
    reader = spark.readStream.format(stream["format"]).schema(schema)
    if textual:
        reader = reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)
    if stream["format"] == "csv" and str(options.get("header", "false")).lower() == "true":
        reader = reader.option("enforceSchema", False)  # a file whose header differs from the declaration fails
    if max_files:
        reader = reader.option("maxFilesPerTrigger", max_files)
    for key, value in options.items():
        reader = reader.option(key, value)
    frame = reader.load(path)
    if stream["numbered"]:
        frame = frame.select(
            "*",
            F.col("_metadata.file_path").alias("__wql_file"),
            F.col("_metadata.file_block_start").alias("__wql_block"),
        )
    return frame


def in_name_order(path):
    """The path to give Spark's file source so that files landing together are read in name order.

    Spark takes a directory's files by modification time, and files with equal times in the order it lists
    them, which on a local disk is the directory's own order, not the names'. A glob over the directory's
    files (DIR/*) is listed by name. Not for a path that is already a glob, a directory on HDFS or S3 (listed
    by name already), or one with subdirectories, which a glob would read into: that one keeps Spark's
    listing order, and a line on stderr says so."""
    import os
    import sys

    local = path.removeprefix("file://") if path.startswith("file://") else path.removeprefix("file:")
    if "://" in local or any(c in path for c in "*?[]{}") or not os.path.isdir(local):
        return path
    if any(e.is_dir() and not e.name.startswith(("_", ".")) for e in os.scandir(local)):
        print(
            f"wql: {path} has subdirectories: files that land in it with the same modification time are read "
            "in the order Spark lists them, not by name",
            file=sys.stderr,
        )
        return path
    return path.rstrip("/") + "/*"


# ------------------------------------------------------------------ one trigger


def run_trigger(spark, frame, batch, checkpoint, emit, late=None, late_format="csv", report=None):
    """One trigger: what is late against the punctuation it starts with, the windows it closes, the state
    it leaves. `emit(result, name)` receives the windows; `late`, a directory for late and malformed rows.
    Its phases, in order, over one TriggerRun (what each phase leaves for the next)."""
    trigger = TriggerRun(spark, frame, batch, checkpoint)
    trigger.start()
    trigger.count()
    trigger.admit()
    trigger.keep()
    trigger.close(emit)
    trigger.set_aside(late, late_format)
    trigger.commit(report)


class TriggerRun:
    """A trigger's state as its phases build it. start: the meta the trigger before left and the rows it
    admits (numbered); count: the micro-batch's counts and the punctuation after the trigger (for cell plans
    at keep, where one job builds the cells and counts); admit: what joins windows (late tuples out, or
    GENEROUS's rules) in the plan's terms; keep: the state from before merged with the trigger's; close: the
    windows it emits and the state parts it writes; set_aside: late and malformed rows; commit: the meta
    that makes the trigger done."""

    def __init__(self, spark, frame, batch, checkpoint):
        # The state is read in the micro-batch's session: an Observation reports only to queries of the
        # session it was made in, and a relation read through another session would take the trigger's job
        # there.
        self.spark, self.frame, self.batch, self.checkpoint = spark, frame, batch, checkpoint
        self.session = frame.sparkSession
        self.stats = self.seen = None
        self.positions = self.closings = self.cached = self.touched = self.computed = None
        self.emitted = 0
        self.saved = {}

    def start(self):
        """The meta of the trigger before (its punctuation, row count, state files) and the micro-batch's
        rows that are neither malformed nor punctuations, numbered where the window counts arrivals."""
        from pyspark.sql import functions as F

        stopped = ended(self.spark, self.checkpoint)
        if stopped is not None:  # a drained stream has ended: no trigger runs on its checkpoint again
            raise stopped
        fault("trigger", self.batch)
        self.meta = meta = newest_meta(self.spark, self.checkpoint, before=self.batch)
        self.before = meta["punctuation"]
        # The micro-batch is not cached: Spark's sources give the same rows for the same batch, and caching
        # half a million rows costs more than reading them twice (cell plans read them once; see `keep`). Row
        # numbers and first arrivals are the exception: they follow the rows' order, which one copy fixes.
        self.held = holds_micro_batch()
        if self.held:
            self.frame = self.frame.persist()
        frame = self.frame
        self.columns = [c for c in frame.columns if c != CORRUPT and not c.startswith("__wql_")]
        self.malformed = F.col(CORRUPT).isNotNull() if CORRUPT in frame.columns else F.lit(False)
        marked = F.lit(False)
        if STREAMING["punctuation"]:
            marked = F.coalesce(F.expr(STREAMING["punctuation"]), F.lit(False))
        self.marked = marked
        rows = frame.where(~self.malformed & ~marked)
        self.next_row = meta["next_row"]
        self.offsets = load_state(self.session, self.checkpoint, meta, "positions")
        self.anchors = load_state(self.session, self.checkpoint, meta, "anchors")
        if STREAMING["anchored"]:  # ALIGN FIRST: partitions seen before keep the first arrival they had
            rows = number(rows, self.next_row, self.offsets, self.anchors)
        elif STREAMING["mode"] == "kafka":  # Kafka's stream time as each row arrives, from what triggers before saw
            rows = number(rows, self.next_row, self.offsets, seen=meta["max_seen"])
        elif STREAMING["numbered"]:
            rows = number(rows, self.next_row, self.offsets)
        self.rows = rows

    def count(self):
        """The micro-batch counted in one pass: rows, late, the largest attribute, malformed rows,
        punctuations; and the punctuation after the trigger, which the windows it emits and the state it
        leaves depend on. Numbered rows are counted after numbering (their attribute may be the row number)."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        frame, malformed, marked = self.frame, self.malformed, self.marked
        t = window_attribute(self.rows)
        if STREAMING["mode"] == "kafka":
            # Kafka's rule: a record is late against the close time it arrives at, stream time (the largest
            # attribute up to it, across keys) less the grace, however the records are cut into triggers.
            self.is_late = F.coalesce(t < F.col("_seen") - F.lit(STREAMING["slack"]), F.lit(False))
        elif self.before is None or STREAMING["positions"]:
            self.is_late = F.lit(False)  # rows arrive in row order: never late
        else:
            # A tuple with no window attribute is never late: it is in no window, but it still holds its place
            # among the arrivals that name windows (SLIDE n ROWS counts it).
            self.is_late = F.coalesce(t < F.lit(self.before), F.lit(False))
        admissible = F.lit(True) if self.held else ~malformed & ~marked
        statistics = [
            F.count_if(admissible).alias("rows"),
            F.count_if(admissible & self.is_late).alias("late"),
            F.count_if(admissible & t.isNull()).alias("nulls"),
            F.max(F.when(admissible, t)).alias("max_seen"),
        ]
        if STREAMING.get("reaches"):  # the data's end, over the tuples the windows take in (WHERE or not)
            joins = admissible if STREAMING["mode"] == "generous" else admissible & ~self.is_late
            statistics.append(F.max(F.when(joins, data_end(self.rows))).alias("reach"))
        signals = [
            F.count_if(malformed).alias("malformed"),
            F.count_if(~malformed & marked).alias("punctuations"),
            (
                F.max(F.when(~malformed & marked, window_attribute(frame))) if STREAMING["punctuation"] else F.lit(None)
            ).alias("marked"),
        ]
        self.counting = statistics + signals
        # Cell plans count it while they build the trigger's cells, the one job that reads the micro-batch
        # (an Observation): the cells do not depend on the punctuation after the trigger, only on the one
        # before (`counted_with_cells`).
        if counted_with_cells():
            self.seen = Observation(f"wql_trigger_{self.batch}")
            self.rows = frame.observe(self.seen, *self.counting).where(~malformed & ~marked)
        elif self.held:
            self.counted(self.rows.agg(*statistics).crossJoin(frame.agg(*signals)).first())
        else:
            self.counted(frame.agg(*self.counting).first())

    def counted(self, stats):
        """The punctuation after the trigger, from its counts; whether the trigger changes nothing: it admits
        no tuple and moves no punctuation, so it emits nothing, writes no state, and its meta names the state
        files the trigger before it left."""
        self.stats = stats
        self.max_seen, self.after = next_punctuation(self.meta, stats, self.before)
        self.reach = _larger(self.meta.get("reach"), stats["reach"]) if STREAMING.get("reaches") else None
        self.unchanged = self.after == self.before and (
            stats["rows"] == 0
            or (
                stats["rows"] == stats["late"]
                and STREAMING["mode"] == "consistent"
                and not STREAMING["positions"]
                and not STREAMING["anchored"]
            )
        )
        self.next_row = self.meta["next_row"] + stats["rows"]

    def admit(self):
        """The tuples that join windows, in the plan's terms (cells, or rows): CONSISTENT leaves out the late
        ones; GENEROUS sessions and frames leave out those at or before their key's closing point."""
        from pyspark.sql import functions as F

        if STREAMING["positions"]:  # rows counted within each partition: each has its own punctuation
            added = self.rows.groupBy(*STREAMING["positions"]).agg(F.count(F.lit(1)).alias("_first"))
            positions = added if self.offsets is None else self.offsets.unionByName(added)
            self.positions = positions.groupBy(*STREAMING["positions"]).agg(F.sum("_first").alias("_first"))
        if STREAMING["closings"] is not None:
            # Sessions and frames, GENEROUS: a late tuple joins the windows only after the point its key's last
            # final window closes the key's history up to; at or before it (_closed), it is in no window.
            self.closings = load_state(self.session, self.checkpoint, self.meta, "closings")
            self.rows = closed(self.rows, self.closings)
            admitted = self.rows.where(~self.is_late | ~F.col("_closed"))
        else:
            # Kafka's rule: the replay decides which stored windows a late record joins (maybe none).
            admitted = self.rows if STREAMING["mode"] in ("generous", "kafka") else self.rows.where(~self.is_late)
        fresh = prepare(admitted)
        if STREAMING["keeps"] == "cells":
            fresh = shares(fresh).drop("_t") if STREAMING["shares"] else lift(fresh)
        self.fresh = fresh

    def keep(self):
        """The state the trigger before left, merged with the trigger's own (cached where it is read twice);
        for cell plans the counts, and so the punctuation after the trigger, come here."""
        from pyspark.sql import functions as F

        # Sessions and frames per key (STREAMING["keyed"]): only the keys this trigger's tuples touch are
        # computed again; the others' open windows are the ones the trigger before computed, kept beside.
        keyed, fresh = STREAMING["keyed"], self.fresh
        if keyed:
            self.touched = fresh.select(*(F.col(f"`{c}`") for c in keyed)).distinct()
            self.cached = load_state(self.session, self.checkpoint, self.meta, "windows")
        self.previous = load_state(self.session, self.checkpoint, self.meta, "state")
        if self.previous is not None:
            fresh = self.previous.unionByName(fresh)
        if STREAMING["keeps"] == "cells":
            fresh = merge(fresh)
        elif STREAMING.get("replays"):  # Kafka's rule: the trigger's records through the store the kept ones hold
            fresh = replay(fresh)
        # What the trigger keeps is read at least twice (the windows it emits, the state it leaves). Cells,
        # and the rows of sessions and frames, are few: they are cached, and the micro-batch is read once
        # more, not twice. Rows of other windows (half a million a trigger) cost more to cache than to read
        # again.
        self.held_state = (
            STREAMING["keeps"] == "cells"
            or bool(keyed)
            or STREAMING["closings"] is not None
            or bool(STREAMING.get("replays"))
        )
        if self.seen is None:
            self.kept = fresh.persist() if self.held_state and not self.unchanged else fresh
            return
        # One job builds the cells, caches them and counts the micro-batch (a count of the cells is the
        # cheapest action that runs it); the punctuation it finds says which windows close and which cells
        # the state keeps, written beside the windows from the cached cells.
        self.kept = fresh.persist()
        self.kept.count()
        try:
            stats = self.seen.get
        except spark_errors():
            # Spark's optimizer drops the counting with the rows when it can tell the micro-batch is empty
            # (a LIMIT 0, an empty local relation): the Observation has no row (py4j: an assertion in
            # PythonSQLUtils.toPyRow); then they are counted apart, which is cheap.
            stats = self.frame.agg(*self.counting).first()
        self.counted(stats)

    def close(self, emit):
        """The windows the trigger emits (final at the punctuation after it and not before, or with EMIT
        CHANGES every open window whose result changed), and the parts of the state it leaves, written
        beside the emit."""
        from pyspark.sql import functions as F

        if self.unchanged:
            fault("state", self.batch)
            return
        keyed, kept, offsets, positions = STREAMING["keyed"], self.kept, self.offsets, self.positions
        if self.cached is not None:
            computed = windows_of(same_keys(kept, self.touched, keyed, "left_semi"))
            computed = computed.unionByName(same_keys(self.cached, self.touched, keyed, "left_anti")).persist()
        else:
            computed = windows_of(kept).persist() if keyed else windows_of(kept)
        self.computed = computed
        before, after = self.before, self.after
        if positions is not None:
            before, after = F.col("_before"), F.col("_after")
        everything = with_points(computed, offsets, positions)
        # GENEROUS sessions and frames: the state holds no window emitted before, and a late tuple admitted
        # after its key's closing point can make a window that is final at once: every final one goes out.
        already = None if before is None or STREAMING["closings"] is not None else emitted_before(before, self.meta)
        held = gone = None
        if STREAMING["emit"] == "changes":
            # Every open window whose result differs from what the trigger before computed for it.
            chosen = everything if already is None else everything.where(~already)
            # The state is read again, not reused from `previous`: that relation is also below `chosen`, and
            # a kernel's node keeps its input's key attributes, which Spark cannot tell apart in exceptAll.
            earlier = None
            if self.previous is not None:
                earlier = load_state(self.session, self.checkpoint, self.meta, "state")
            if earlier is not None:
                earlier = with_points(windows_of(earlier), offsets, positions)
                earlier = earlier if already is None else earlier.where(~already)
                if STREAMING.get("retracts"):  # sessions: the versions whose session is gone are taken back
                    held, gone = earlier, vanished(earlier, everything, STREAMING.get("retracts"))
                else:
                    chosen = chosen.exceptAll(earlier)
        else:
            closes = F.lit(False) if after is None else is_final(after)
            chosen = everything.where(closes if already is None else closes & ~already)
        # What the next trigger starts from depends on the punctuation, not on the windows emitted: each part
        # is written beside the emit, in a thread of its own, so that the jobs' fixed costs (planning,
        # scheduling, a file commit) overlap rather than add up. They read the same cached state.
        parts = state_parts(
            kept, computed, self.touched, self.cached, self.closings, offsets, positions, after, self.held_state
        )
        spark, checkpoint, batch = self.spark, self.checkpoint, self.batch
        saving = {name: beside(save_part(spark, checkpoint, batch, name, *part)) for name, part in parts.items()}
        try:
            fault("emit", batch)
            result = finish(chosen.drop("_before", "_after"))
            if STREAMING.get("retracts"):
                if held is None:  # the first trigger with tuples: every session is new
                    result = changelog(result)
                else:
                    result = changelog(result, finish(held), finish(gone))
            self.emitted = emit(result, f"batch-{batch:08d}")
            fault("emitted", batch)
        finally:
            for wait in saving.values():  # every part's job ends before the trigger goes on, or fails with
                wait(quiet=True)  # the emit's error
        self.saved = {name: wait() for name, wait in saving.items()}  # or the first part's error
        if keyed:
            computed.unpersist()
        fault("state", batch)

    def set_aside(self, late, late_format):
        """Late and malformed rows, to the late-rows output with the windows each missed."""
        stats = self.stats
        if late is not None and stats["late"] + stats["malformed"]:
            rejected = self.rows.where(self.is_late).unionByName(
                self.frame.where(self.malformed), allowMissingColumns=True
            )
            before = None if STREAMING["positions"] else self.before
            write_late(rejected, self.columns, before, self.batch, late, late_format)

    def commit(self, report):
        """The meta that makes the trigger done: its punctuation and the state files the next one reads (a
        trigger that changes nothing names the files of the trigger before it)."""
        meta, unchanged, saved = self.meta, self.unchanged, self.saved
        state = meta["state"] if unchanged else saved.get("state")
        kept_windows = meta.get("windows") if unchanged else saved.get("windows")
        kept_closings = saved.get("closings", meta.get("closings"))
        kept_positions = meta.get("positions")
        if self.positions is not None and not unchanged:
            kept_positions = save_state(self.spark, self.checkpoint, self.positions, "positions", self.batch)
        kept_anchors = meta.get("anchors")
        if STREAMING["anchored"] and not unchanged:
            seen = anchors_seen(self.rows, self.anchors)
            kept_anchors = save_state(self.spark, self.checkpoint, seen, "anchors", self.batch)
        self.kept.unpersist()
        if self.held:
            self.frame.unpersist()
        point = None if STREAMING["positions"] else self.after
        fault("meta", self.batch)
        save_meta(
            self.spark,
            self.checkpoint,
            {
                "batch": self.batch,
                "punctuation": point,
                "max_seen": self.max_seen,
                "reach": self.reach,
                "next_row": self.next_row,
                "state": state,
                "windows": kept_windows,
                "closings": kept_closings,
                "positions": kept_positions,
                "anchors": kept_anchors,
            },
            previous=meta,
        )
        fault("committed", self.batch)
        if report is not None:
            shown = "rows counted per partition" if STREAMING["positions"] else show_point(self.after)
            rows = 0 if state is None else state["rows"]
            report(trigger_report(self.batch, self.stats, self.emitted, shown, rows))


def emitted_before(before, meta):
    """Whether a window was emitted before the trigger: final at the punctuation it starts with and, where
    windows go only as far as the data, reached by the data then. A window the punctuation passed beyond the
    data's end (a punctuation row, or an interval event ending before its start, moves the punctuation and not
    the data's end) is final but not among the windows yet: it is emitted once the data reaches it."""
    final = is_final(before)
    if not STREAMING.get("reaches") or "reach" not in meta:  # a checkpoint older than the rule: as it was
        return final
    return final & reached(meta["reach"])


def next_punctuation(meta, stats, before):
    """The largest window attribute seen and the punctuation after a trigger: p = max(p, max_seen − SLACK,
    the punctuation rows' largest), from the trigger's counts and the meta of the trigger before."""
    max_seen = _larger(meta["max_seen"], stats["max_seen"])
    after = before
    if STREAMING["slack"] is not None and max_seen is not None:
        after = _larger(after, max_seen - STREAMING["slack"])
    return max_seen, _larger(after, stats["marked"])


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


def windows_of(rows):
    """The job's windows over rows or cells: its windows stage, lowered to aggregates where the plan lowers
    combined partial states in a stage of its own."""
    combined = windows(rows)
    return lower(combined) if STREAMING["lowered"] else combined


def state_parts(kept, computed, touched, cached, closings, offsets, positions, after, held_state):
    """What the next trigger starts from, by part, as (frame, whether one task writes it): the rows or cells
    that windows not yet final can still need ("state"); with PATTR, the open windows as computed
    ("windows"); for sessions and frames under GENEROUS slack, each key's closing point ("closings")."""
    keyed = STREAMING["keyed"]
    if STREAMING["opened"] and after is not None:
        retained = from_open_windows(kept, computed if keyed else windows_of(kept), after, keyed)
    elif cached is not None:  # a key no tuple touched keeps its rows as they were until one does
        retained = retain(same_keys(kept, touched, keyed, "left_semi"), after)
        retained = retained.unionByName(same_keys(kept, touched, keyed, "left_anti"))
    else:
        retained = retain(with_points(kept, offsets, positions), after).drop("_before", "_after")
    cells = STREAMING["keeps"] == "cells"
    if not cells and held_state:
        # Rows of sessions and frames: few are kept, but they are picked from the whole trigger's rows, a
        # join that coalesce(1) would run in one task; gathered after it instead.
        retained = retained.repartition(1)
    parts = {"state": (retained, cells)}
    if keyed:
        parts["windows"] = (computed if after is None else computed.where(~is_final(after)), True)
    if STREAMING["closings"] is not None and after is not None:
        # Each key's closing point: the last final window's among its rows, else the one it had.
        points = closing(kept, after)
        if closings is not None:  # read once, when the trigger admitted its rows
            points = same_keys(closings, points, STREAMING["closings"], "left_anti").unionByName(points)
        parts["closings"] = (points, True)
    return parts


def save_part(spark, checkpoint, batch, name, frame, one_file):
    """The work of writing one part of the state, to run `beside` the emit."""
    return lambda: save_state(spark, checkpoint, frame, name, batch, one_file)


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


def counted_with_cells():
    """Whether a trigger counts its micro-batch in the job that builds its cells: cell plans whose cells
    depend only on the punctuation a trigger starts with (no row numbers or first arrivals, no closing
    points) build them, cache them and count the micro-batch in one job, before the punctuation after the
    trigger is known."""
    return STREAMING["keeps"] == "cells" and not holds_micro_batch() and STREAMING["closings"] is None


def holds_micro_batch():
    """Whether a trigger caches its micro-batch: row numbers and first arrivals follow the rows' order,
    which one copy fixes."""
    return STREAMING["numbered"] or STREAMING["anchored"] or bool(STREAMING["positions"])


def with_points(frame, before, after):
    """Partitioned row windows: each partition's punctuation, its row count before (_before) and after
    (_after) the trigger, joined to its windows or state; other windows have one punctuation for all."""
    from pyspark.sql import functions as F

    if after is None:
        return frame
    names, columns = STREAMING["positions"], STREAMING["partition_columns"]
    points = after.select(
        *(F.col(f"`{n}`").alias(c) for n, c in zip(names, columns, strict=True)), F.col("_first").alias("_after")
    )
    if before is not None:
        earlier = before.select(
            *(F.col(f"`{n}`").alias(c) for n, c in zip(names, columns, strict=True)), F.col("_first")
        )
        match = None
        for c in columns:
            same = F.col(f"p.`{c}`").eqNullSafe(F.col(f"b.`{c}`"))
            match = same if match is None else match & same
        points = (
            points.alias("p")
            .join(earlier.alias("b"), match, "left")
            .select(*(F.col(f"p.`{c}`") for c in columns), "_after", F.col("b._first").alias("_before"))
        )
    else:
        points = points.withColumn("_before", F.lit(None).cast("bigint"))
    points = points.withColumn("_before", F.coalesce("_before", F.lit(0)))
    match = None
    for c in columns:
        same = F.col(f"f.`{c}`").eqNullSafe(F.col(f"p.`{c}`"))
        match = same if match is None else match & same
    joined = frame.alias("f").join(F.broadcast(points.alias("p")), match, "left")
    return joined.select(*(F.col(f"f.`{c}`") for c in frame.columns), "_before", "_after")


def from_open_windows(rows, computed, punctuation, keys):
    """Plain sessions: each key's rows from its first session not final at `punctuation` on, read off the
    windows the trigger computed rather than found by walking the rows again in Python (retain): equal
    values are never in different sessions and every tuple is in one, so those rows are the open
    sessions' tuples. A key with no open session keeps none."""
    from pyspark.sql import functions as F

    # The keys under new names: the windows come from these rows, and a kernel's node keeps its input's key
    # attributes, which a join of the two could not tell apart.
    firsts = (
        computed.where(~is_final(punctuation))
        .groupBy(*(F.col(f"`{c}`").alias(f"_open_key_{i}") for i, c in enumerate(keys)))
        .agg(F.min("wid").alias("_open_from"))
    )
    match = F.lit(True)
    for i, c in enumerate(keys):
        match = match & F.col(f"wql_rows.`{c}`").eqNullSafe(F.col(f"wql_open._open_key_{i}"))
    joined = rows.alias("wql_rows").join(firsts.alias("wql_open"), match, "inner")
    return joined.where(F.col("wql_rows._t") >= F.col("wql_open._open_from")).select(
        *(F.col(f"wql_rows.`{c}`") for c in rows.columns)
    )


def vanished(earlier, current, columns):
    """EMIT CHANGES of sessions: the versions the trigger before left open (`earlier`) whose session is not
    among the trigger's windows (`current`): a tuple out of order merged it with another or moved its start.
    A session's row is named by `columns` (its wid and keys; NULL is a key too)."""
    from pyspark.sql import functions as F

    # The trigger's names under new names, as from_open_windows joins them: both sides come from kernels'
    # nodes, which keep their input's key attributes.
    names = [f"_now_{i}" for i in range(len(columns))]
    now = current.select(*(F.col(f"`{c}`").alias(n) for c, n in zip(columns, names, strict=True))).distinct()
    match = F.lit(True)
    for c, n in zip(columns, names, strict=True):
        match = match & F.col(f"wql_before.`{c}`").eqNullSafe(F.col(f"wql_now.`{n}`"))
    return earlier.alias("wql_before").join(now.alias("wql_now"), match, "left_anti")


def changelog(current, held=None, retracted=None):
    """EMIT CHANGES of sessions: a trigger's rows marked in the CHANGE column, 'retract' for each version taken
    back (`retracted`, as it was emitted), then 'update' for each of the trigger's sessions (`current`) whose
    version is not among those emitted before (`held`). Versions are compared as `finish` makes them: a plan's
    own columns (the starts plan numbers each key's sessions) depend on which sessions the state still holds.
    A consumer that deletes and upserts the rows in order, by keys and window_start, holds each session's
    current version."""
    from pyspark.sql import functions as F

    if held is None:
        return current.withColumn(CHANGE, F.lit("update"))
    marked = current.exceptAll(held).withColumn(CHANGE, F.lit("update"))
    return retracted.withColumn(CHANGE, F.lit("retract")).unionByName(marked)


def same_keys(frame, keys, columns, how):
    """The rows of `frame` whose key (the named columns; NULL is a value too) is among `keys` ("left_semi")
    or is not ("left_anti")."""
    from pyspark.sql import functions as F

    match = None
    for c in columns:
        same = F.col(f"wql_rows.`{c}`").eqNullSafe(F.col(f"wql_keys.`{c}`"))
        match = same if match is None else match & same
    if match is None:  # no key columns: the whole stream is one key
        match = F.lit(True)
    joined = frame.alias("wql_rows").join(keys.alias("wql_keys"), match, how)
    return joined.select(*(F.col(f"wql_rows.`{c}`") for c in frame.columns))


def merged_moments(n, mean, m2):
    """Cells' moments (count, mean, M2) from several triggers merged with Chan's parallel formula, into one
    struct; in any order, as the combine kernels merge them."""
    from pyspark.sql import functions as F

    def chan(a, b):
        parts = ("n", "mean", "m2")
        merged = state_combine_columns("moments", [a[p] for p in parts], [b[p] for p in parts])
        return F.struct(*(column.alias(p) for column, p in zip(merged, parts, strict=True)))

    part = F.struct(
        F.col(n).cast("bigint").alias("n"),
        F.coalesce(F.col(mean), F.lit(0.0)).alias("mean"),
        F.coalesce(F.col(m2), F.lit(0.0)).alias("m2"),
    )
    empty = F.struct(F.lit(0).cast("bigint").alias("n"), F.lit(0.0).alias("mean"), F.lit(0.0).alias("m2"))
    return F.aggregate(F.collect_list(part), empty, chan)


def _larger(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def drain_stream(spark, checkpoint, emit, report=None):
    """End the stream: the punctuation goes to +∞, so every window still open is emitted, once. Returns the
    number of windows emitted.

    The drain is recorded (drain.json) before its windows are written, so that from then on the stream has
    ended: no trigger runs on the checkpoint again, and a drain that was stopped halfway is finished by
    draining again (it writes the same windows under the same name). It refuses while a trigger Spark
    logged has not finished: that trigger's rows would otherwise be lost, or come out twice."""
    import datetime
    import json

    from pyspark.sql import functions as F

    record = drain_record(spark, checkpoint)
    if record is not None and record["status"] == "done":
        return 0
    meta = newest_meta(spark, checkpoint)
    logged = logged_triggers(spark, checkpoint)
    if record is None and logged and (meta["batch"] is None or logged[-1] > meta["batch"]):
        raise TriggerUnfinished(
            f"trigger {logged[-1]} of the stream in {checkpoint} stopped before it finished, so the stream "
            "was not drained: run it again (it finishes that trigger first) with --drain"
        )
    if record is None and meta.get("store") is not None and committed_trigger(spark, checkpoint) < meta["batch"]:
        # Its cells are in Spark's state store, whose reader takes only triggers Spark recorded as done.
        raise TriggerUnfinished(
            f"trigger {meta['batch']} of the stream in {checkpoint} finished, but Spark had not recorded it "
            "when the stream stopped, so the stream was not drained: run it again (Spark runs that trigger "
            "again, writing the same windows) with --drain"
        )
    if record is None:
        at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        record = {"after": meta["batch"], "at": at, "status": "begun"}
        put_text(spark, f"{state_root(checkpoint)}/drain.json", json.dumps(record, sort_keys=True))
    fault("drain", meta["batch"])
    before = meta["punctuation"]
    emitted = 0
    kept = load_state(spark, checkpoint, meta, "state")
    if meta.get("store") is not None:  # the open cells are in Spark's state store
        chosen = drain_stored(spark, checkpoint, meta)
        if chosen is not None:
            emitted = emit(chosen, f"drain-{meta['batch']:08d}")
    elif kept is not None and STREAMING["emit"] == "final":  # with EMIT CHANGES, every version is out already
        everything = windows_of(kept)
        if STREAMING["positions"]:  # each partition's windows its row count had not closed
            counts = load_state(spark, checkpoint, meta, "positions")
            everything = with_points(everything, counts, counts)
            before = F.col("_before")
        chosen = everything if before is None else everything.where(~emitted_before(before, meta))
        emitted = emit(finish(chosen.drop("_before", "_after")), f"drain-{meta['batch']:08d}")
    fault("drained", meta["batch"])
    record = {**record, "status": "done", "windows": emitted}
    put_text(spark, f"{state_root(checkpoint)}/drain.json", json.dumps(record, sort_keys=True))
    if report is not None:
        report(
            {
                "trigger": "drain",
                "rows": 0,
                "late": 0,
                "malformed": 0,
                "nulls": 0,
                "punctuations": 0,
                "windows": emitted,
                "punctuation": "end of stream",
                "state_rows": 0,
            }
        )
    return emitted


def file_sink(directory, fmt):
    """Windows to DIRECTORY/batch-NNNNNNNN.FMT, one file per trigger, and the drain's to drain-NNNNNNNN.FMT,
    exactly once."""

    def emit(result, name):
        return publish(result, directory, fmt, name, "drain-write" if name.startswith("drain") else "emit-write")

    return emit


def console_sink(limit=20):
    """Windows printed as each trigger closes them (a job run without --output)."""

    def emit(result, name):
        rows = shown_in_order(result).collect()  # by window, then keys, as batch prints them
        if rows:
            print(f"-- {name}: {len(rows):,} window row{'s' if len(rows) != 1 else ''}", flush=True)
            result.sparkSession.createDataFrame(rows, result.schema).show(limit, truncate=False)
        return len(rows)

    return emit


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
    """Start the query on Structured Streaming, each micro-batch running run_trigger; Spark's
    StreamingQuery. `once` processes the input that is there and stops (trigger availableNow). Raises
    StreamEnded on a checkpoint whose stream was drained."""
    paths = paths or {}
    unknown = sorted(set(paths) - set(STREAMS))
    if unknown:
        raise ValueError(f"unknown stream {unknown[0]!r}; the query reads {', '.join(STREAMS)}")
    stopped = ended(spark, checkpoint)
    if stopped is not None:
        raise stopped
    [(name, stream)] = STREAMS.items()
    source = open_stream(spark, name, stream, paths.get(name), max_files)
    stored = stores_state(spark)
    meta = newest_meta(spark, checkpoint)
    if stored and meta["batch"] is not None and not meta.get("store"):
        # A stream begun in the checkpoint's own files (by a WQL before the state store took its query) goes on
        # there: the files engine runs every query. Only an engine asked for by name is refused below.
        stored = spark.conf.get("spark.wql.stream.state", None) is not None
    if meta["batch"] is not None and stored != bool(meta.get("store")):
        kept = "Spark's state store" if meta.get("store") else "WQL's own files"
        setting = "store" if meta.get("store") else "files"
        raise ValueError(
            f"the stream in {checkpoint} keeps its state in {kept}: run it with spark.wql.stream.state={setting} "
            "(and WQL's kernels for the state store), or start a new stream with another --checkpoint"
        )
    if stored:
        return start_stored(spark, name, stream, source, emit, checkpoint, late, late_format, once, report, interval)

    def on_batch(frame, batch):
        run_trigger(spark, frame, batch, checkpoint, emit, late, late_format, report)

    return start_query(source, on_batch, checkpoint, once, interval)


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
    paths = {}
    for item in args.input:
        name, sep, path = item.partition("=")
        if not sep:
            parser.error(f"--input takes STREAM=PATH, got {item!r}")
        paths[name] = path
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
