"""`wql run`: the generated programs of a file, executed on Spark with progress and readable output.

Part of the CLI shell: it only calls the public API and the generated code's own
functions (load_inputs, query, write_result), the same ones the job's main() uses.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from rich.console import Console
from rich.text import Text

import wql
from wql.display import error_renderable, explanation_renderable, results_table

EXIT_OK, EXIT_ERRORS = 0, 1


def _paths(items: list[str]) -> dict[str, str]:
    paths = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise wql.WQLRuntimeError(f"--input takes STREAM=PATH, got '{item}'")
        paths[name] = path
    return paths


def _preflight(compiled: list[wql.CompiledQuery], paths: dict[str, str], remote: bool = False) -> None:
    """Fail before Spark starts when an input is missing: a clear message instead of a Spark error.
    A Spark Connect server reads paths on its own machine: only it can tell whether they exist."""
    streams = {c.stream.name.lower(): c.stream for c in compiled}
    for name in paths:
        if name.lower() not in streams:
            known = ", ".join(sorted(s.name for s in streams.values()))
            raise wql.WQLRuntimeError(f"--input names stream '{name}', but the queries read {known}")
    for stream in streams.values():
        given = next((p for n, p in paths.items() if n.lower() == stream.name.lower()), None)
        if stream.table:
            if given is not None:
                raise wql.WQLRuntimeError(f"--input gives files, and stream '{stream.name}' reads a table")
            continue
        path = given or stream.path
        if path is None:
            raise wql.WQLRuntimeError(
                f"stream '{stream.name}' has no FROM path",
                hint=f"add FROM 'file' to its CREATE STREAM, or pass --input {stream.name}=PATH",
            )
        local = ("://" not in path or path.startswith("file:")) and not remote
        if local and not os.path.exists(path.removeprefix("file:")):
            where = "--input" if given else "its FROM clause"
            raise wql.WQLRuntimeError(f"stream '{stream.name}': no such file or directory: {path} (from {where})")


class RunSession:
    """The run's Spark session, started at most once: while the file is analyzed when a stream FROM TABLE takes
    its columns from Spark's catalog, else when the queries run. Stopped at the end if this run started it (an
    embedding session, e.g. a test's, stays up; a Spark Connect session is always the run's own)."""

    def __init__(self, args: argparse.Namespace, err: Console) -> None:
        from wql.runtime.session import default_jvm_log, spark_settings

        self.args, self.err = args, err
        self.log = None if args.verbose else default_jvm_log()
        self.settings = spark_settings(args.conf, args.packages, args.jars)
        self.spark: Any = None
        self.owned = False

    def __call__(self) -> Any:
        if self.spark is not None:
            return self.spark
        from wql.runtime.session import remote_url, start_session

        args, remote = self.args, remote_url(getattr(self.args, "remote", None))
        with self.err.status("starting Spark…", spinner="dots"):
            from pyspark.sql import SparkSession

            self.owned = remote is not None or SparkSession.getActiveSession() is None
            self.spark = start_session(
                args.master,
                remote,
                app_name=f"wql run {args.file}",
                verbose=args.verbose,
                jvm_log=self.log,
                extra=self.settings,
            )
        if args.verbose and self.settings:
            shown = ", ".join(f"{key}={self.spark.conf.get(key, None)}" for key in self.settings)
            self.err.print(Text(f"Spark settings given: {shown}", style="dim"))
        return self.spark

    def stop(self) -> None:
        if self.spark is not None and self.owned:
            self.spark.stop()
        self.spark = None


def run_file(args: argparse.Namespace, out: Console, err: Console) -> int:
    session = RunSession(args, err)
    try:
        return _run_file(args, out, err, session)
    finally:
        session.stop()


def _run_file(args: argparse.Namespace, out: Console, err: Console, session: RunSession) -> int:
    from wql.runtime.session import remote_url

    program = wql.load(args.file, spark=session)
    for error in program.errors:
        err.print(error_renderable(error))
    if program.errors:
        return EXIT_ERRORS
    statements = program.queries
    if args.query is not None:
        statements = [program.query(args.query)]
    if not statements:
        err.print(f"{args.file} has no queries to run")
        return EXIT_OK

    stream_only = [
        name for name in ("checkpoint", "once", "drain", "idle", "max_files", "interval") if getattr(args, name, None)
    ]
    if not getattr(args, "stream", False) and stream_only:
        option = "--" + stream_only[0].replace("_", "-")
        raise wql.WQLRuntimeError(f"{option} applies to streams", hint="add --stream to run the query on a stream")
    explains = [s for s in statements if s.is_explain]
    runs = [s for s in statements if not s.is_explain]
    remote = remote_url(getattr(args, "remote", None))
    if getattr(args, "stream", False):
        if remote is not None:
            raise wql.WQLNotSupportedError(
                f"--stream on Spark Connect ({remote}): the stream's foreachBatch step runs "
                "WQL's Python stages, which a Connect server would have to run in its own Python",
                hint="run the stream with a local or cluster master (--master), without --remote or SPARK_REMOTE",
            )
        for statement in explains:
            out.print(explanation_renderable(wql.explain_statement(statement, plan=args.plan)))
        if not runs:
            return EXIT_OK
        from wql.stream_runner import run_stream

        return run_stream(args, runs, program, out, err)
    for statement in explains:
        out.print(explanation_renderable(wql.explain_statement(statement, plan=args.plan)))
    compiled = [wql.compile_statement(program, s, plan=args.plan) for s in runs]
    if not compiled:
        return EXIT_OK
    paths = _paths(args.input)
    _preflight(compiled, paths, remote is not None)
    output = _client_path(args.output) if remote is not None and args.output else args.output
    spark = session()
    for index, (statement, query) in enumerate(zip(runs, compiled, strict=True), start=1):
        label = f"query {statement.query_number} (line {statement.line}, plan {query.plan})"
        if len(compiled) > 1 and not output:  # several tables: each says which query it is
            if index > 1:
                out.print()
            out.print(Text(label, style="bold"))
        try:
            target = output if len(compiled) == 1 or output is None else _numbered(output, index)
            _run_query(args, out, err, spark, query, label, _for_stream(paths, query), target)
        except KeyboardInterrupt:
            err.print(Text("cancelled", style="red"))
            return 130
        except wql.WQLError:
            raise
        except Exception as error:  # Spark and Py4J errors become one clear line
            from wql.runtime.errors import locate_in, translate

            span = statement.node.span
            locate = locate_in(program.source, span.start, span.end)
            raise translate(error, label, locate=locate, log=session.log) from None
    return EXIT_OK


def _run_query(
    args: argparse.Namespace,
    out: Console,
    err: Console,
    spark: Any,
    query: wql.CompiledQuery,
    label: str,
    paths: dict[str, str],
    target: str | None,
) -> None:
    """One query of the file: its input report, then its table, or its file (`target`)."""
    from wql.runtime.progress import spark_progress

    with spark_progress(spark, err, f"reading input for {label}"):
        inputs, report = query.load_inputs(spark, getattr(args, "late", None), **paths)
    for line in report:
        style = "yellow" if ("malformed" in line or "NULL" in line) else "dim"
        err.print(Text(line, style=style))
    result = query.run(spark, **inputs)
    if target is not None:
        with spark_progress(spark, err, f"running {label}"):
            written = query.write(result, target, args.format)
        err.print(Text.assemble(("✓ ", "green"), f"{label}: wrote {written}"))
        return
    with spark_progress(spark, err, f"running {label}"):
        result = result.cache()
        total = result.count()
        rows = query.in_window_order(result).limit(args.limit).collect()
    out.print(results_table(result.columns, [tuple(r) for r in rows], total))


def _client_path(output: str) -> str:
    """--output with --remote: a relative path means where the user is, not the Connect server's working
    directory (where Spark would write it, and where WQL's assembling of one csv file would look)."""
    if "://" in output or output.startswith("file:") or os.path.isabs(output):
        return output
    return os.path.abspath(output)


def _for_stream(paths: dict[str, str], query: wql.CompiledQuery) -> dict[str, str]:
    return {name: path for name, path in paths.items() if name.lower() == query.stream.name.lower()}


def _numbered(path: str, index: int) -> str:
    root, ext = os.path.splitext(path)
    return f"{root}_{index}{ext}"
