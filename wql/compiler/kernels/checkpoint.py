"""WQL's own records in a stream's checkpoint (CHECKPOINT/wql, beside Spark's offsets and commits logs): the
meta each trigger commits, the parts of the state the files engine writes, and the drain's record.

Copied into every streaming job. A trigger's meta (meta-NNNNNNNN.json) is written after everything else the
trigger does, so it is what makes the trigger done; a trigger reads the meta of the trigger before it, never
its own, so a replay starts from where its first attempt started. Every file is named after the trigger that
wrote it and replaced whole by a replay. A drain is a record of its own (drain.json), written before its
windows: once it exists the stream has ended.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # other support code copied beside this
    from wql.compiler.kernels.faults import fault
    from wql.compiler.kernels.stream_io import get_text, list_names, put_text, remove

STATE_DIR = "wql"


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


def save_state(spark, checkpoint, rows, part, batch, one_file=True):
    """Write one part of the state for the next trigger: its name, size in rows and schema. `one_file` when the
    rows are few or cached (one task writes one file); rows read from the micro-batch keep its partitions."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    name = f"{part}-{batch:08d}"
    counted = Observation(f"wql_{name}")
    if one_file:
        rows = rows.coalesce(1)
    rows.observe(counted, F.count(F.lit(1)).alias("rows")).write.mode("overwrite").parquet(
        f"{state_root(checkpoint)}/{name}"
    )
    fault("state-part", batch)
    return {"name": name, "rows": counted.get["rows"], "schema": rows.schema.json()}
