"""Small files under a stream's checkpoint, read and written whole: on a local disk with Python's own file
functions, anywhere else (HDFS, S3, a file: URL) through Hadoop's FileSystem, as Spark reads them.

Copied into every streaming job.
"""


def is_local(path):
    """A plain path, written with Python's own file functions; a URL (file:, hdfs://, s3a://, …) goes through
    Hadoop's FileSystem, as Spark reads it."""
    return "://" not in path and not path.startswith("file:")


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
