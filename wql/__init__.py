"""WQL: declarative window queries over streams, compiled to Apache Spark.

The public API. The CLI, the REPL and the notebook magic are thin shells over
these functions:

    import wql
    wql.check(text)                  # [] or a list of WQLError
    wql.explain(text)                # one Explanation per query
    program = wql.load("q.wql")      # every statement of a file, analyzed
    q = wql.compile(text)            # a CompiledQuery: .code, .explain(), .run(spark, stream=df)
    run = q.start(spark, checkpoint="ck", output="out")   # the same query on a stream (.stream_code)
    spark = wql.configure(SparkSession.builder).getOrCreate()  # your own session, with WQL's kernels

Inside a PySpark program: `wql.compile(text, streams={"events": df}).run(spark)` runs on the DataFrame,
and `CREATE STREAM events FROM TABLE name` reads a temp view or a catalog table (its columns from the
catalog of `spark=`, or of the active session).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping
from typing import Any

from wql.compiler.compile import Compiled, compile_query
from wql.compiler.explain import Explanation, PlanChoice, explain_query
from wql.compiler.program import Program, Statement, analyze_program
from wql.compiler.schema import Catalog, Stream, schema_from_mapping
from wql.grammar.ast import CreateStream, Script
from wql.grammar.errors import (
    WQLError,
    WQLNameError,
    WQLNotSupportedError,
    WQLRuntimeError,
    WQLSemanticError,
    WQLSyntaxError,
    WQLTypeError,
)
from wql.grammar.formatter import format_script
from wql.grammar.parser import parse as _parse

__version__ = "0.1.0"

StreamSchemas = Mapping[str, Any]


def parse(text: str, path: str | None = None) -> Script:
    """The syntax tree of a script; raises WQLSyntaxError with the position of the problem."""
    return _parse(text, path)


def format(text: str) -> str:
    """Canonical WQL text for a script."""
    return format_script(_parse(text))


def read_source(path: str) -> str:
    """A query file's text, or a WQLRuntimeError that says what is wrong with the path."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        raise WQLRuntimeError(f"no such file: {path}", path=path) from None
    except IsADirectoryError:
        raise WQLRuntimeError(f"{path} is a directory, not a .wql file", path=path) from None
    except PermissionError:
        raise WQLRuntimeError(f"cannot read {path}: permission denied", path=path) from None
    except UnicodeDecodeError as error:
        raise WQLRuntimeError(f"{path} is not UTF-8 text ({error.reason})", path=path) from None
    except OSError as error:
        raise WQLRuntimeError(f"cannot read {path}: {error.strerror}", path=path) from None


def catalog(streams: StreamSchemas | None = None, spark: Any = None) -> Catalog:
    """A catalog from {name: {column: TYPE}} (or Spark schemas/DataFrames, converted by the runtime). With a
    SparkSession (or a function that gives one when first needed; by default the active session of a PySpark
    program; False for none), streams declared FROM TABLE take their columns from Spark's catalog."""
    result = Catalog(tables=_tables(spark))
    for name, schema in (streams or {}).items():
        if isinstance(schema, Stream):
            result.add(schema)
        elif isinstance(schema, Mapping):
            result.add(schema_from_mapping(name, schema))
        else:
            from wql.runtime.spark_schema import stream_from_spark

            result.add(stream_from_spark(name, schema))
    return result


def _tables(spark: Any) -> Any:
    """Spark's catalog for FROM TABLE: the session given, or the active one of a PySpark program (there is none
    unless pyspark was imported), or None (and with `spark=False`): then such a stream must declare its columns."""
    if spark is False:
        return None
    if spark is None and "pyspark.sql" in sys.modules:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
    if spark is None:
        return None
    from wql.runtime.spark_schema import SparkTables

    return SparkTables(spark)


def _frames(streams: StreamSchemas | None) -> dict[str, Any]:
    """The DataFrames among `streams=`, by lower-case name: what a query on that stream runs on."""
    if not streams or "pyspark.sql" not in sys.modules:
        return {}
    from wql.runtime.spark_schema import is_dataframe

    return {name.lower(): value for name, value in streams.items() if is_dataframe(value)}


def analyze(text: str, path: str | None = None, *, streams: StreamSchemas | None = None, spark: Any = None) -> Program:
    """Every statement of a script, analyzed in order; errors are recorded, not raised. `streams` gives
    streams by name (a DataFrame, a Spark schema or {column: TYPE}); a DataFrame is also what a query on that
    stream runs on. `spark` is the session whose catalog FROM TABLE reads (see `catalog`)."""
    program = analyze_program(text, path, catalog(streams, spark))
    program.frames = _frames(streams)
    return program


def load(path: str, *, streams: StreamSchemas | None = None, spark: Any = None) -> Program:
    """Analyze a .wql file. Relative stream paths in it are relative to the file."""
    return analyze(read_source(path), os.fspath(path), streams=streams, spark=spark)


def check(
    text: str, path: str | None = None, *, streams: StreamSchemas | None = None, spark: Any = None
) -> list[WQLError]:
    """All errors in a script, each with its position; [] when it is fine."""
    return analyze(text, path, streams=streams, spark=spark).errors


def missing_inputs(program: Program) -> list[WQLError]:
    """An error, with a caret under its FROM clause, for each stream whose FROM path is a local one that is not
    there. Not part of `check`: a program may be analyzed on one machine and run where its data is; `wql check`
    asks, on the machine that will read it. URLs (hdfs://, s3a://) only Spark can tell about."""
    errors: list[WQLError] = []
    for statement in program.statements:
        stream, node = statement.stream, statement.node
        if stream is None or stream.path is None or not isinstance(node, CreateStream):
            continue
        local = stream.path.removeprefix("file://") if stream.path.startswith("file://") else stream.path
        local = local.removeprefix("file:")
        if "://" in local or os.path.exists(local):
            continue
        relative = os.path.relpath(local)
        shown = local if relative.startswith("..") else relative
        error = WQLRuntimeError(
            f"stream '{stream.name}': no such file or directory: {shown}",
            span=node.path_span or node.span,
            hint="a relative FROM path is relative to the query file's directory; "
            f"`wql run --input {stream.name}=PATH` reads another path",
        )
        errors.append(error.with_source(program.source, program.path))
    return errors


def explain(
    text: str, path: str | None = None, *, streams: StreamSchemas | None = None, spark: Any = None
) -> list[Explanation]:
    """What each query means: the window with defaults, its class and why, wids, aggregate kinds."""
    program = analyze(text, path, streams=streams, spark=spark)
    if program.errors:
        raise program.errors[0]
    return [explain_statement(s) for s in program.queries]


def explain_statement(statement: Statement, *, plan: str | None = None) -> Explanation:
    """The explanation of one analyzed query, with the candidate plans and the choice."""
    from wql.compiler.optimizer import candidates, choose

    assert statement.query is not None
    chosen = None
    try:
        chosen, choices = choose(statement.query, plan)
    except WQLNotSupportedError:
        if plan not in (None, "auto"):
            raise
        choices = tuple(PlanChoice(c.name.value, None, c.note) for c in candidates(statement.query))
    explanation = explain_query(statement.query, statement.query_number or 1, statement.line, choices, chosen)
    return _with_data(explanation, statement.query.stream)


def _with_data(explanation: Explanation, stream: Stream) -> Explanation:
    """The explanation, saying how much data the stream holds where this process can see it."""
    from wql.runtime.sample import data_size

    return dataclasses.replace(explanation, data=data_size(stream))


def draw_statement(statement: Statement, *, path: str | None = None, windows: int = 12) -> Any:
    """A picture (SVG) of the query's first `windows` windows over a sample of its stream (the FROM path,
    or `path`; a synthetic sample where neither can be read here), from the reference evaluator,
    without Spark: a `Drawing` with `.svg`, `.windows` and `.summary()`."""
    assert statement.query is not None
    return _draw(statement.query, path, windows)


def _draw(query: Any, path: str | None, windows: int) -> Any:
    from wql.runtime.drawing import draw
    from wql.runtime.sample import sample

    return draw(query, sample(query, path), windows)


class CompiledQuery:
    """One query, planned and turned into a PySpark program.

    `code` is the whole program (what `wql compile` prints); `run` executes
    that same code on a SparkSession and returns the result DataFrame. A DataFrame
    given for the stream (`wql.compile(text, streams={"events": df})`) is what it
    runs on: handed to the program's `query` function when it runs, never part of
    the code, which reads the stream's FROM as a standalone job does.
    """

    def __init__(self, compiled: Compiled, source_path: str | None = None, frame: Any = None) -> None:
        self._compiled = compiled
        self.source_path = source_path
        self.frame = frame  # the DataFrame the query runs on, when one was given for its stream
        self._module: Any = None
        self._stream_module: Any = None
        self._stream_code: str | None = None

    @property
    def code(self) -> str:
        """The batch program: what `wql compile` prints and `run` executes."""
        return self._compiled.code

    @property
    def stream_code(self) -> str:
        """The Structured Streaming program from the same plan: what `wql compile --stream` prints and
        `start` executes. Raises WQLNotSupportedError, with the reason, for what cannot run on a stream yet."""
        if self._stream_code is None:
            self._stream_code = self._compiled.stream_code(self.source_path)
        return self._stream_code

    @property
    def plan(self) -> str:
        return self._compiled.plan.name.value

    @property
    def columns(self) -> tuple[str, ...]:
        return self._compiled.query.columns

    @property
    def stream(self) -> Stream:
        return self._compiled.query.stream

    @property
    def query(self) -> Any:
        return self._compiled.query

    def explain(self) -> Explanation:
        return _with_data(self._compiled.explain(), self.stream)

    def module(self) -> Any:
        """The generated program, loaded as a module (once)."""
        if self._module is None:
            from wql.runtime.execute import load_job

            self._module = load_job(self.code)
        return self._module

    def load_inputs(self, spark: Any, late: str | None = None, /, **paths: str) -> tuple[dict[str, Any], list[str]]:
        """Read the declared streams (FROM paths, or these overrides) as the job does: DataFrames by
        stream name, and report lines (rows read, malformed rows skipped, NULL window attributes). With
        `late`, a directory, malformed rows are kept there with the reason, as a stream keeps them."""
        from wql.runtime.errors import translate

        name = self.stream.name
        if self.frame is not None and not any(n.lower() == name.lower() for n in paths):
            from wql.runtime.execute import check_input

            check_input(self.stream, self.frame, tuple(self.query.input_columns))
            return {name: self.frame}, []
        if self.stream.path is not None and not paths:  # read where it is, whatever the working directory now
            paths = {name: self.stream.path}
        module = self.module()
        try:
            frames, report = module.load_inputs(spark, module.STREAMS, paths, late)
        except Exception as error:
            raise translate(error, f"stream {name}") from None
        by_name = {name: frames[spec["parameter"]] for name, spec in module.STREAMS.items()}
        return by_name, report

    def run(self, spark: Any = None, **inputs: Any) -> Any:
        """The result DataFrame. Inputs are DataFrames by stream name; without them, the DataFrame given for the
        stream at compile time, or the stream's FROM (a path: malformed rows dropped and counted, as `wql run`
        does; a table of `spark`'s catalog)."""
        from wql.runtime.execute import check_input, run_query

        if not inputs:
            if spark is None and self.frame is None:
                raise WQLRuntimeError(f"stream '{self.stream.name}' is read by a SparkSession: pass it, q.run(spark)")
            inputs, _ = self.load_inputs(spark)
        else:
            needed = tuple(self.query.input_columns)
            for name, frame in inputs.items():
                if name.lower() == self.stream.name.lower():
                    check_input(self.stream, frame, needed)
        return run_query(self.module(), inputs)

    def start(
        self,
        spark: Any,
        *,
        output: str | None = None,
        format: str = "csv",
        checkpoint: str | None = None,
        late: str | None = None,
        once: bool = False,
        sink: Any = None,
        on_trigger: Any = None,
        max_files: int | None = None,
        interval: float | None = None,
        drain: bool = False,
        **paths: str,
    ) -> Any:
        """Run the query on Structured Streaming over its stream's FROM directory (or a path by stream name).

        Windows go to `output` (a directory of csv/json/parquet files, one per trigger, exactly once with
        `checkpoint`), to `sink(windows_dataframe, trigger)` (Spark's foreachBatch, for anything else), or
        are collected in the returned `StreamRun.rows`. Late and malformed rows go to `late`, with the reason.
        `once` processes what is there and stops; `StreamRun.stop(drain=True)` ends the stream, emitting
        every open window. `on_trigger(Trigger)` hears each trigger's counts, punctuation and state size.
        A checkpoint whose stream was drained refuses to run (it has ended); with `drain`, one whose drain
        was stopped halfway gives a run that only finishes the drain.
        """
        from wql.runtime.streaming import start

        name = self.stream.name
        given = any(n.lower() == name.lower() for n in paths)
        if self.frame is not None and not given:
            raise WQLNotSupportedError(
                f"stream '{name}' is a DataFrame given from Python, which runs in batch (q.run)",
                hint=f"for a streaming DataFrame, make it a view (df.createOrReplaceTempView('{name}')) and declare "
                f"CREATE STREAM {name} FROM TABLE {name}",
            )
        if self.stream.path is not None and not given:  # read where it is, whatever the working directory now
            paths = {**paths, name: self.stream.path}
        if self._stream_module is None:
            from wql.runtime.execute import load_job

            self._stream_module = load_job(self.stream_code)
        return start(
            self._stream_module,
            spark,
            paths=paths,
            output=output,
            fmt=format,
            checkpoint=checkpoint,
            late=late,
            once=once,
            sink=sink,
            on_trigger=on_trigger,
            max_files=max_files,
            interval=interval,
            drain=drain,
        )

    def draw(self, *, path: str | None = None, windows: int = 12) -> Any:
        """A picture of the first windows over a sample of the stream (see `draw_statement`)."""
        return _draw(self.query, path, windows)

    def in_window_order(self, result: Any) -> Any:
        """The result as a person reads windows: by wid, then the keys, when the query has no ORDER BY.

        Spark returns a grouped result in whatever order its shuffle left it, so the CLI, the REPL
        and the notebook sort what they show through this; with ORDER BY the query's order stands.
        """
        if self.query.order_by:
            return result
        from pyspark.sql import functions as F

        names = ("wid", *self.query.key_names)
        return result.orderBy(*(F.col("`" + name.replace("`", "``") + "`").asc_nulls_first() for name in names))

    def write(self, result: Any, path: str, fmt: str = "csv") -> str:
        """Write a result as the job does: csv/json as one file, parquet as a directory."""
        return str(self.module().write_result(result, path, fmt))


def compile_statement(
    program: Program, statement: Statement, *, plan: str | None = None, stream: bool = False
) -> CompiledQuery:
    """Plan and generate one analyzed query; with `stream`, also check now that it can run on a stream."""
    assert statement.query is not None
    select = statement.query.select
    try:
        compiled = compile_query(
            statement.query,
            plan=plan,
            number=statement.query_number or 1,
            line=statement.line,
            source_path=program.path,
        )
        source = statement.query.stream
        frame = program.frames.get(source.name.lower()) if source.source == "files" and not source.path else None
        result = CompiledQuery(compiled, program.path, frame)
        if stream:
            result.stream_code  # noqa: B018 (generating it checks the query)
    except WQLError as error:  # planning errors are about the window: point there
        if error.span is None and select is not None:
            error.span = select.window.span if select.window is not None and not stream else select.span
        raise error.with_source(program.source, program.path) from None
    return result


def compile(  # wql.compile is the natural name, shadowing the builtin here
    text: str,
    path: str | None = None,
    *,
    streams: StreamSchemas | None = None,
    plan: str | None = None,
    query: int | None = None,
    stream: bool = False,
    spark: Any = None,
) -> CompiledQuery:
    """Compile the query in `text` (with its CREATE STREAMs). With several queries, `query` picks one
    (1-based among the queries). `plan` forces bucket, pane, slice, … instead of the cheapest. `stream`
    checks now that it can also run on a stream (`CompiledQuery.stream_code`, `.start`). `streams` and `spark`
    are as in `analyze`: a DataFrame given for the stream is what `run` runs on; a stream FROM TABLE takes its
    columns from `spark`'s catalog (by default the active session's)."""
    program = analyze(text, path, streams=streams, spark=spark)
    if program.errors:
        raise program.errors[0]
    queries = program.queries
    if not queries:
        raise WQLSemanticError("no query to compile: the text has no SELECT")
    if query is None and len(queries) > 1:
        raise WQLSemanticError(f"the text has {len(queries)} queries; choose one with query=1…{len(queries)}")
    chosen = program.query(query or 1)
    try:
        return compile_statement(program, chosen, plan=plan, stream=stream)
    except WQLError as error:
        raise error.with_source(text, path) from None


def configure(builder: Any) -> Any:
    """A SparkSession builder of your own with WQL's settings added: its JVM kernels (jar and extension) and
    Python workers on this interpreter. `spark = wql.configure(SparkSession.builder).getOrCreate()`."""
    from wql.runtime.session import configure as add_settings  # the runtime, only for those who start Spark

    return add_settings(builder)


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext wql` in IPython/Jupyter: the %%wql and %wql magics (IPython is imported only then)."""
    from wql.notebook import load_ipython_extension as load

    load(ipython)


__all__ = [
    "CompiledQuery",
    "Explanation",
    "Program",
    "Statement",
    "WQLError",
    "WQLNameError",
    "WQLNotSupportedError",
    "WQLRuntimeError",
    "WQLSemanticError",
    "WQLSyntaxError",
    "WQLTypeError",
    "__version__",
    "analyze",
    "catalog",
    "check",
    "compile",
    "compile_statement",
    "configure",
    "draw_statement",
    "explain",
    "format",
    "load",
    "load_ipython_extension",
    "missing_inputs",
    "parse",
    "read_source",
]
