from typing import TYPE_CHECKING

if TYPE_CHECKING:  # names the job defines, or other support code copied beside this (job.pyi)
    from wql.compiler.kernels.job import APP_NAME, SHOWN_IN, STREAMS, query


CORRUPT = "_corrupt_record"


def read_stream(spark, name, stream, path=None):
    """Read a declared stream with its schema: its table, or its files."""
    if stream.get("table"):
        return read_table(spark.read, name, stream, path)
    return load_declared(spark.read, name, stream, path)


def load_declared(reader, name, stream, path=None, extra=None):
    """A declared stream of files read with its schema, by a batch or a streaming reader; `extra`, reader
    options before the stream's own (which win).

    Malformed csv/json lines are kept in _corrupt_record so they can be counted,
    never silently dropped. When the query numbers rows, each row also carries
    the file and block it came from, which fixes its arrival position.
    """
    from pyspark.sql import functions as F

    path = path or stream["path"]
    if not path:
        raise ValueError(f"stream {name!r} has no FROM path; give one with --input {name}=PATH")
    textual = stream["format"] in ("csv", "json")
    schema = stream["schema"] + (f", `{CORRUPT}` STRING" if textual else "")
    reader = reader.format(stream["format"]).schema(schema)
    if textual:
        reader = reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)
    if stream["format"] == "csv" and str(stream["options"].get("header", "false")).lower() == "true":
        reader = reader.option("enforceSchema", False)  # a file whose header differs from the declaration fails
    for key, value in {**(extra or {}), **stream["options"]}.items():
        reader = reader.option(key, value)
    frame = reader.load(path)
    if stream["numbered"]:
        frame = frame.select(
            "*",
            F.col("_metadata.file_path").alias("__wql_file"),
            F.col("_metadata.file_block_start").alias("__wql_block"),
        )
    return frame


def read_table(reader, name, stream, path=None, streaming=False):
    """A stream declared FROM TABLE: a temp view or a catalog table of the session, through `reader`
    (spark.read, or spark.readStream on a stream), with the stream's OPTIONS; its columns those declared, cast
    to the declared types (a no-op where the table's types are those, as when they were read from it)."""
    table = stream["table"]
    if path:
        raise ValueError(f"stream {name!r} reads table {table}: --input gives a path of files, not a table")
    for key, value in stream["options"].items():
        reader = reader.option(key, value)
    try:
        frame = reader.table(table)
        is_stream = frame.isStreaming
    except spark_errors() as error:
        if not streaming or "streaming" not in str(error).lower():
            raise
        raise ValueError(
            f"table {table} is not a streaming source (a batch view, or a table whose format Spark cannot "
            "read as a stream): run the query on it in batch"
        ) from None
    if is_stream and not streaming:
        raise ValueError(f"table {table} is a stream (a view of a streaming DataFrame): run the query with --stream")
    return frame.select(*(spark_column(column).cast(kind).alias(column) for column, kind in stream["columns"]))


def inspect_stream(name, frame, stream, late=None):
    """Count what the query will not see, and drop malformed rows; returns (frame, report lines).

    With `late` (a directory), the malformed rows are kept there as NAME.csv, with the columns a stream
    writes for its late and malformed rows: the stream's columns as far as they parsed, wql_reason
    ("malformed"), wql_missed, wql_punctuation and wql_trigger (NULL in a batch run) and wql_record,
    the line as read."""
    import os

    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    frame = frame.cache()
    textual = CORRUPT in frame.columns
    ok = F.col(CORRUPT).isNull() if textual else F.lit(True)
    checks = [F.count(F.lit(1)).alias("rows")]
    if textual:
        checks.append(F.count(F.col(CORRUPT)).alias("malformed"))
    for attribute in stream["window_attributes"]:
        checks.append(F.count_if(ok & F.col(f"`{attribute}`").isNull()).alias(f"null:{attribute}"))
    # Counted as the cache fills, in the one job that fills it: an aggregation over the cached rows took a
    # job more (two more under adaptive execution), a fifth of a small query's time.
    counted = Observation()
    frame.observe(counted, *checks).write.format("noop").mode("overwrite").save()
    stats = counted.get
    report = [f"{name}: {stats['rows']:,} row{'s' if stats['rows'] != 1 else ''} read"]
    if textual:
        malformed = stats["malformed"]
        if malformed:
            example = malformed_example(frame, stream)
            rows = f"{malformed:,} malformed row{'s' if malformed != 1 else ''}"
            if late is None:
                report.append(f"{name}: {rows} skipped (e.g. {example})")
            else:
                columns = [c for c in frame.columns if c != CORRUPT and not c.startswith("__wql_")]
                kept = frame.where(F.col(CORRUPT).isNotNull()).select(
                    *(F.col(f"`{c}`") for c in columns),
                    F.lit("malformed").alias("wql_reason"),
                    F.lit(None).cast("string").alias("wql_missed"),
                    F.lit(None).cast("string").alias("wql_punctuation"),
                    F.lit(None).cast("bigint").alias("wql_trigger"),
                    F.col(CORRUPT).alias("wql_record"),
                )
                if "://" not in late or late.startswith("file:"):
                    os.makedirs(late[len("file:") :] if late.startswith("file:") else late, exist_ok=True)
                written = write_result(kept, f"{late.rstrip('/')}/{name}.csv", "csv")
                report.append(f"{name}: {rows} skipped, kept in {written} (e.g. {example})")
        frame = frame.where(ok).drop(CORRUPT)
    for attribute in stream["window_attributes"]:
        nulls = stats[f"null:{attribute}"]
        if nulls:
            rows = f"{nulls:,} row{'s' if nulls != 1 else ''} with NULL {attribute}"
            report.append(f"{name}: {rows} belong{'s' if nulls == 1 else ''} to no window")
    return frame, report


def malformed_example(frame, stream):
    """The first malformed line and why it is: the first column whose text is not of its declared type, with
    the text (Spark's try_cast of the line's own fields, split as the reader splits them), else how many fields
    it has against the columns declared. The line is shortened to 80 characters."""
    from pyspark.sql import functions as F

    fields = [f for f in frame.schema.fields if f.name != CORRUPT and not f.name.startswith("__wql_")]
    texts = ", ".join("`" + f.name.replace("`", "``") + "` STRING" for f in fields) + ", `__wql_more` STRING"
    line = F.col(CORRUPT)
    if stream["format"] == "csv":
        raw = F.from_csv(line, texts, {k: str(v) for k, v in stream["options"].items()})
    else:
        raw = F.from_json(line, texts)
    failing = [
        F.when(raw[f.name].isNotNull() & (F.trim(raw[f.name]) != "") & raw[f.name].try_cast(f.dataType).isNull(), i)
        for i, f in enumerate(fields)
    ]
    found = frame.where(line.isNotNull()).select(line, raw.alias("raw"), F.coalesce(*failing, F.lit(None))).first()
    text, values, bad = found[0], found[1], found[2]
    why = "it does not parse as the declared columns"
    if bad is not None:
        field = fields[bad]
        why = f"{field.name} is not a {field.dataType.simpleString().upper()}: {values[field.name]!r}"
    elif values is None:
        why = "it is not a JSON object" if stream["format"] == "json" else why
    elif stream["format"] == "csv":
        given = sum(values[f.name] is not None for f in fields) + (values["__wql_more"] is not None)
        if values["__wql_more"] is not None:
            why = f"more fields than the {len(fields)} declared"
        elif given < len(fields):
            why = f"{given} field{'s' if given != 1 else ''} where {len(fields)} are declared"
    return f"{text.strip()[:80]!r}: {why}"


def number_rows(frame, first_row=0):
    """Add row_num, the arrival position first_row, first_row + 1, ...: consecutive, unlike
    monotonically_increasing_id (a stream's trigger starts where the one before it ended).

    Arrival order is file order (files by path, then line) for file sources, and
    partition order otherwise. Rows are counted per block, the blocks' offsets
    summed, and each row numbered within its block. The helper columns are named
    __wql_… so that they never meet the stream's own.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    blocks = ["__wql_file", "__wql_block"] if "__wql_file" in frame.columns else ["__wql_part"]
    ids = frame.withColumn("__wql_part", F.spark_partition_id()).withColumn("__wql_id", F.monotonically_increasing_id())
    sizes = ids.groupBy(*blocks).agg(F.min("__wql_id").alias("__wql_first"), F.count(F.lit(1)).alias("__wql_rows"))
    before = Window.orderBy(*blocks).rowsBetween(Window.unboundedPreceding, -1)
    offsets = sizes.withColumn("__wql_offset", F.coalesce(F.sum("__wql_rows").over(before), F.lit(0)))
    numbered = ids.join(F.broadcast(offsets), blocks)
    position = F.col("__wql_offset") + F.col("__wql_id") - F.col("__wql_first") + F.lit(first_row)
    numbered = numbered.withColumn("row_num", position)
    return numbered.drop(
        "__wql_part", "__wql_id", "__wql_first", "__wql_rows", "__wql_offset", "__wql_file", "__wql_block"
    )


def arrival_order(frame):
    """Add row_num where only its order matters (to order tuples of equal value): the arrival position
    itself for files (number_rows), and for a DataFrame monotonically_increasing_id, which orders its
    rows as row_num does (partition, then position) without the pass that counts them."""
    from pyspark.sql import functions as F

    if "__wql_file" in frame.columns:
        return number_rows(frame)
    return frame.withColumn("row_num", F.monotonically_increasing_id())


def load_inputs(spark, streams, paths=None, late=None):
    """Read and inspect every stream; returns ({parameter: DataFrame}, report lines). With `late`, a
    directory, malformed rows are kept there (inspect_stream)."""
    paths = paths or {}
    unknown = sorted(set(paths) - set(streams))
    if unknown:
        raise ValueError(f"unknown stream {unknown[0]!r}; the query reads {', '.join(streams)}")
    inputs, report = {}, []
    for name, stream in streams.items():
        frame = read_stream(spark, name, stream, paths.get(name))
        frame, lines = inspect_stream(name, frame, stream, late)
        inputs[stream["parameter"]] = frame
        report.extend(lines)
    return inputs, report


def write_result(result, path, fmt="csv"):
    """Write the result: csv and json as one file at `path`, parquet as Spark's directory of parts."""
    import glob
    import os
    import shutil

    if fmt == "csv":
        result = for_csv(result)
    local = "://" not in path or path.startswith("file:")
    if fmt == "parquet" or not local:
        result.write.mode("overwrite").format(fmt).save(path)
        return path
    target = path[len("file:") :] if path.startswith("file:") else path
    parts = target + ".parts"
    writer = result.coalesce(1).write.mode("overwrite").format(fmt)
    if fmt == "csv":
        writer = writer.option("header", True)
    writer.save(parts)
    if not os.path.isdir(parts):  # Spark wrote it on another machine (a Connect server, a cluster)
        raise ValueError(
            f"Spark wrote {parts} where this process cannot see it: give the output a path or URL "
            "(hdfs://, s3a://, file: on a shared disk) that Spark and this process share, or write parquet"
        )
    produced = sorted(glob.glob(os.path.join(parts, "part-*")))
    if os.path.isdir(target):
        shutil.rmtree(target)
    if produced:
        shutil.move(produced[0], target)
    else:
        open(target, "w").close()
    shutil.rmtree(parts, ignore_errors=True)
    return target


def for_csv(result):
    """The rows as a csv file holds them: arrays, maps and structs as JSON, and timestamps as Spark SQL writes
    them (`2024-03-15 07:02:00`, as a result table shows them), not in the csv writer's ISO form with its zone."""
    from pyspark.sql import functions as F

    columns = []
    for field in result.schema.fields:
        kind = field.dataType.typeName()
        column = spark_column(field.name)
        if kind in ("array", "map", "struct"):
            column = F.to_json(column).alias(field.name)
        elif kind in ("timestamp", "timestamp_ntz"):
            column = column.cast("string").alias(field.name)
        columns.append(column)
    return result.select(*columns)


def shown_in_order(result):
    """The rows as a person reads windows (SHOWN_IN: wid, then the keys), or the query's own ORDER BY."""
    from pyspark.sql import functions as F

    if not SHOWN_IN:
        return result
    return result.orderBy(*(F.col("`" + name.replace("`", "``") + "`").asc_nulls_first() for name in SHOWN_IN))


def main(argv=None):
    """Run the query as a job: python job.py [--input STREAM=PATH] [--output PATH] [--format csv]."""
    import argparse
    import sys

    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0] if __doc__ else None)
    parser.add_argument("--input", action="append", default=[], metavar="STREAM=PATH", help="read a stream from PATH")
    parser.add_argument("--output", metavar="PATH", help="write the result here instead of printing it")
    parser.add_argument("--format", choices=("csv", "json", "parquet"), default="csv")
    parser.add_argument("--show", type=int, default=20, metavar="N", help="rows to print without --output")
    parser.add_argument("--late", metavar="DIR", help="keep malformed rows here, with the reason")
    args = parser.parse_args(argv)
    paths = input_paths(parser, args.input)
    builder = SparkSession.builder.appName(APP_NAME).config("spark.sql.session.timeZone", "UTC")
    SparkContext._ensure_initialized()  # the JVM's settings, so that spark-submit's --conf can be read
    if SparkConf().get("spark.log.level", None) is None:  # spark-submit --conf spark.log.level=INFO overrides
        builder = builder.config("spark.log.level", "WARN")  # not spark-submit's hundreds of INFO lines
    spark = builder.getOrCreate()
    inputs, report = load_inputs(spark, STREAMS, paths, args.late)
    for line in report:
        print(f"wql: {line}", file=sys.stderr)
    result = query(**inputs)
    if args.output:
        written = write_result(result, args.output, args.format)
        print(f"wql: wrote {written}", file=sys.stderr)
    else:
        shown_in_order(result).show(args.show, truncate=False)
    spark.stop()
    return 0


def input_paths(parser, items):
    """The --input STREAM=PATH arguments of a job's command line, by stream; a usage error otherwise."""
    paths = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            parser.error(f"--input takes STREAM=PATH, got {item!r}")
        paths[name] = path
    return paths


def continue_positions(rows, offsets, partitions):
    """On a stream: positions within each partition continue from where earlier triggers left them
    (`offsets`: the partition columns and `_first`, the rows the partition had before)."""
    from pyspark.sql import functions as F

    match = None
    for name in partitions:
        same = F.col(f"r.`{name}`").eqNullSafe(F.col(f"o.`{name}`"))
        match = same if match is None else match & same
    joined = rows.alias("r").join(F.broadcast(offsets.alias("o")), match, "left")
    shifted = F.col("r._pos") + F.coalesce(F.col("o._first"), F.lit(0))
    return joined.select(*(F.col(f"r.`{c}`") for c in rows.columns if c != "_pos"), shifted.alias("_pos"))


def array_percentile(values, p):
    """Spark's exact percentile (linear interpolation) of a sorted array column; NULL when it is empty.

    Spark refuses percentile and median over a window frame, so frames collect
    their values and this picks the percentile from the sorted list.
    """
    from pyspark.sql import functions as F

    count = F.size(values)
    position = F.lit(float(p)) * (count - 1)
    low = F.floor(position).cast("int")
    high = F.ceil(position).cast("int")
    below = F.element_at(values, low + 1)
    above = F.element_at(values, high + 1)
    return F.when(count > 0, below + (position - low) * (above - below))


KERNEL_PROTOCOL = "1"  # the version of the requests below that wql-kernels.jar must read
_kernel_servers = {}  # id(owner) -> (owner, whether its Spark has WQL's extension); see kernel_extension


def jvm_kernel(frame, request):
    """`frame` through WQL's JVM kernel that `request` names, as a DataFrame, or None: then the job runs its
    numpy kernel, with the same results.

    A Spark started with WQL's extension (`--jars wql-kernels.jar --conf
    spark.sql.extensions=wql.kernels.WqlExtensions`: a Spark Connect server, a cluster, spark-submit) gets
    the request as a hint, which a client without a JVM can send too. A classic session with the jar on
    its classpath alone gets it through py4j. None when neither has the kernels, when the kernel refuses
    the request (a type only numpy handles), or when spark.wql.combine is "arrow" (numpy forced).
    """
    import json

    from pyspark.sql import DataFrame

    spark = frame.sparkSession
    if spark.conf.get("spark.wql.combine", "auto") == "arrow":
        return None
    text = json.dumps({"protocol": KERNEL_PROTOCOL, **request})
    if kernel_extension(spark):
        try:
            # select: a Connect client keeps a hint's input schema without asking the server; a
            # projection's schema it asks for, which analyzes the request (the server refuses it there)
            # by name where the request names its output: a "*" can be expanded against the hint's input
            # before the server turns the hint into the kernel, and the input has columns the output lacks
            output = request.get("output")
            names = [field["name"] for field in json.loads(output)["fields"]] if output else ["*"]
            quoted = [n if n == "*" else "`" + n.replace("`", "``") + "`" for n in names]
            windows = frame.hint("wql_kernel", text).select(*quoted)
            windows.schema  # noqa: B018
        except spark_errors() as error:
            if "WQL kernel refused" in str(error):
                return None
            raise
        return windows
    kernels = jvm_class(spark, "Kernels")
    if kernels is None:
        return None  # Spark Connect without the extension, or no jar
    windows = kernels.apply(frame._jdf, text)
    return None if windows is None else DataFrame(windows, spark)


def spark_errors():
    """What a failing Spark call raises in Python: PySpark's own errors, and py4j's for a JVM error that a
    classic session does not convert (a Spark Connect client may have no py4j at all)."""
    from pyspark.errors import PySparkException

    try:
        from py4j.protocol import Py4JError
    except ImportError:
        return (PySparkException,)
    return (PySparkException, Py4JError)


def jvm_class(spark, name):
    """WQL's JVM class wql.kernels.NAME in this session's Spark, or None: under Spark Connect there is no
    JVM in this process (the session has no _jvm), and without wql-kernels.jar py4j finds a package, not
    a class."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return None
    from py4j.java_gateway import JavaClass

    found = getattr(jvm.wql.kernels, name)
    return found if isinstance(found, JavaClass) else None


def kernel_extension(spark):
    """Whether the session's Spark runs WQL's extension: its function wql_kernels() answers this job's
    protocol. Asked once per SparkContext: extensions are its static configuration, and a stream's
    foreachBatch hands each trigger a new session (asking per session cost two jobs a trigger and kept every
    trigger's session alive). A Spark Connect client has no SparkContext: asked once per client session."""
    owner = getattr(spark, "sparkContext", None) or spark  # a Connect session has none: it raises AttributeError
    known = _kernel_servers.get(id(owner))
    if known is None or known[0] is not owner:
        present = spark.catalog.functionExists("wql_kernels")  # the function is the extension's mark
        answer = spark.sql("SELECT wql_kernels()").first()[0] if present else None
        known = _kernel_servers[id(owner)] = (owner, answer == KERNEL_PROTOCOL)
    return known[1]


def jvm_states(states):
    """(operation, columns) pairs as the JVM kernels take them: one operation per column."""
    operations = [operation for operation, names in states for _ in names]
    return operations, [name for _, names in states for name in names]


def batch_chunks(batches, held):
    """One Spark partition's sorted Arrow batches as chunks of whole batches: (table, last), `last` True
    for the partition's last chunk (its table None when nothing is left).

    A chunk goes on once it holds at least `held()` rows, what the kernel carries from one chunk to the
    next (the windows its last key still has in flight: cells, tuples, slices or window-ids): each
    chunk then costs a pass over its own rows and the carry, no more than twice its rows, so a walk
    stays linear in the partition's rows however long the carry grows, and holds a chunk and the
    carry, never a key's rows. The numpy combine, bins and interval passes all walk this way."""
    import pyarrow as pa

    pending, rows = [], 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        rows += batch.num_rows
        if rows >= held():
            yield pa.Table.from_batches(pending), False
            pending, rows = [], 0
    yield (pa.Table.from_batches(pending) if pending else None), True


def key_ids(table, names):
    """One integer per distinct combination of the named columns of an Arrow table (NULL is a value too)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not names:
        return np.zeros(table.num_rows, dtype=np.int64)
    combined = np.zeros(table.num_rows, dtype=np.int64)
    stride = 1
    for name in names:
        column = table.column(name)
        if pa.types.is_floating(column.type):
            column = pc.add(column, 0.0)  # -0.0 + 0.0 is 0.0: one key, as Spark groups them
        column = pc.dictionary_encode(column).combine_chunks()
        code = pc.fill_null(column.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
        if stride > 2**62 // (len(column.dictionary) + 1):  # too many combinations: renumber densely
            combined = np.unique(combined, return_inverse=True)[1].ravel().astype(np.int64)
            stride = int(combined.max()) + 1
        combined += code * stride
        stride *= len(column.dictionary) + 1
    return combined


def held_row(table, index, values):
    """Row `index` of `table` as a one-row table, with `values` ({column: value}, None for NULL) in place
    of its own: a row a kernel carries into its next chunk, where it stands for its key."""
    import pyarrow as pa

    row = table.slice(index, 1)
    for name, value in values.items():
        position = row.schema.get_field_index(name)
        field = row.schema.field(position)
        row = row.set_column(position, field, pa.array([value], type=field.type))
    return row


def by_keys(rows, partitions):
    """Every row of a key in one Spark partition: repartitioned by the keys, or all in one without keys."""
    if partitions:
        return rows.repartition(*(spark_column(name) for name in partitions))
    return rows.coalesce(1)


def spark_column(name):
    """A column of the rows by its name, quoted: a name may hold any character, a backtick or a dot too."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")
