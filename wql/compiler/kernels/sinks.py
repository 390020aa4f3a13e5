"""Where a stream's windows and late rows go: files named after their trigger, written aside and renamed into
place (exactly once, whatever point a run stops at), or the terminal.

Copied into every streaming job.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # other support code copied beside this
    from wql.compiler.kernels.faults import fault
    from wql.compiler.kernels.job_support import for_csv, shown_in_order
    from wql.compiler.kernels.stream_io import hadoop_fs, is_local

STAGING = "_wql_staging"


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
