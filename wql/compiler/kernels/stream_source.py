"""The stream a streaming job reads: a directory new files land in, Spark's rate source, or Kafka.

Copied into every streaming job.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # other support code copied beside this
    from wql.compiler.kernels.job_support import CORRUPT, load_declared, read_table, spark_errors


def open_stream(spark, name, stream, path=None, max_files=None):
    """The declared stream as a streaming DataFrame: a directory new files land in (read as a batch job reads
    them, in name order where files land together), Spark's rate source, or Kafka (values parsed into the
    declared columns). Malformed csv/json rows are kept in _corrupt_record, to be counted and written to the
    late-rows output, never dropped silently."""
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
    extra = {"maxFilesPerTrigger": max_files} if max_files else None
    return load_declared(spark.readStream, name, stream, path and in_name_order(path), extra)


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
