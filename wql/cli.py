"""The `wql` command: a thin shell over the public API in `wql/__init__.py`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from rich.console import Console
from rich.text import Text

import wql
from wql import server_command
from wql.compiler.optimizer import PLAN_CHOICES
from wql.display import error_renderable, explanation_renderable

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2
# check, explain and compile start no Spark and ask no session's catalog, whatever runs in this process: a
# stream FROM TABLE declares its columns for them (`wql run` asks its own session).
NO_SPARK = False
REMOTE_HELP = "run on this Spark Connect server (default $SPARK_REMOTE, as PySpark reads it)"


class _Unpadded:
    """Standard output for a pipe or a file: rich pads each line of a table to the console's width, which on
    a terminal is invisible and in a file is trailing spaces; they are dropped here, line by line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.pending = ""

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            self.stream.write(line.rstrip(" ") + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.write(self.pending)
        self.pending = ""
        self.stream.flush()


def _consoles() -> tuple[Console, Console]:
    """Rich consoles; when output is not a terminal, wide enough that tables do not wrap, and unpadded."""
    out = Console(highlight=False)
    if not out.is_terminal:
        width = None if "COLUMNS" in os.environ else 200
        out = Console(highlight=False, width=width, file=_Unpadded(sys.stdout))  # type: ignore[arg-type]
    return out, Console(stderr=True, highlight=False, soft_wrap=True)  # messages stay on one line


def _add_spark_options(parser: argparse.ArgumentParser) -> None:
    """Spark settings as spark-submit spells them, for the commands that start Spark."""
    group = parser.add_argument_group("Spark", "settings for the Spark session WQL starts (as spark-submit takes them)")
    group.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    group.add_argument(
        "--packages", metavar="G:A:V,…", help="Maven coordinates of packages to add (spark.jars.packages)"
    )
    group.add_argument("--jars", metavar="JAR,…", help="jars to add to the classpath (spark.jars)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wql",
        description="WQL: declarative window queries over streams, compiled to Apache Spark.",
        epilog="Run 'wql COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"wql {wql.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser("check", help="parse and check queries; exit 1 on any error")
    check.add_argument("files", nargs="+", metavar="FILE", help=".wql files")

    explain = commands.add_parser(
        "explain", help="show each query's window with defaults, class, wids, aggregate kinds and plans"
    )
    explain.add_argument("file", metavar="FILE")
    explain.add_argument("--json", action="store_true", help="one JSON object per query, one per line")
    explain.add_argument("--plan", choices=PLAN_CHOICES, help="explain as if this plan were forced")
    explain.add_argument(
        "--draw",
        metavar="FILE.svg",
        help="also draw the first windows over a sample of the stream (several queries: FILE_1.svg, …)",
    )

    compile_ = commands.add_parser("compile", help="print the PySpark program for a query")
    compile_.add_argument("file", metavar="FILE")
    compile_.add_argument("-o", "--output", metavar="JOB.py", help="write the program here")
    compile_.add_argument("--plan", choices=PLAN_CHOICES, help="force a plan instead of the cheapest")
    compile_.add_argument("--query", type=int, metavar="N", help="which query of the file (1-based)")
    compile_.add_argument("--stream", action="store_true", help="the Spark Structured Streaming job instead")

    run = commands.add_parser("run", help="run the queries of a file on Spark")
    run.add_argument("file", metavar="FILE")
    run.add_argument("--input", action="append", default=[], metavar="STREAM=PATH", help="read a stream from PATH")
    run.add_argument("--output", metavar="PATH", help="write the result (csv/json: one file) instead of printing it")
    run.add_argument("--format", choices=("csv", "json", "parquet"), default="csv", help="output format")
    run.add_argument("--master", default=None, metavar="URL", help="Spark master (default local[*])")
    run.add_argument("--remote", default=None, metavar="sc://HOST:PORT", help=REMOTE_HELP)
    run.add_argument("--local", action="store_true", help=server_command.LOCAL_HELP)
    run.add_argument("--plan", choices=PLAN_CHOICES, help="force a plan instead of the cheapest")
    run.add_argument("--query", type=int, metavar="N", help="run only this query (1-based)")
    run.add_argument("--limit", type=int, default=20, metavar="N", help="rows to print (default 20)")
    run.add_argument(
        "--late", metavar="DIR", help="keep malformed rows (and on a stream, late rows) here, with the reason"
    )
    run.add_argument("--verbose", action="store_true", help="show Spark's own log and the settings given")
    _add_spark_options(run)
    stream = run.add_argument_group("streams", "run the query continuously on Spark Structured Streaming")
    stream.add_argument("--stream", action="store_true", help="read the stream's directory as files land in it")
    stream.add_argument("--checkpoint", metavar="DIR", help="progress and open windows (needed with --output)")
    stream.add_argument("--once", action="store_true", help="process the input that is there, then stop")
    stream.add_argument("--drain", action="store_true", help="then end the stream: emit every open window")
    stream.add_argument("--idle", type=float, metavar="SECONDS", help="stop after this long without new input")
    stream.add_argument("--max-files", type=int, metavar="N", help="files per trigger")
    stream.add_argument("--interval", type=float, metavar="SECONDS", help="seconds between triggers")

    repl = commands.add_parser("repl", help="an interactive shell: type statements, see tables")
    repl.add_argument("files", nargs="*", metavar="FILE", help=".wql files to run first")
    repl.add_argument("--remote", default=None, metavar="sc://HOST:PORT", help=REMOTE_HELP)
    repl.add_argument("--local", action="store_true", help=server_command.LOCAL_HELP)
    _add_spark_options(repl)

    server = commands.add_parser("server", help="a warm Spark in the background for run, repl and %%wql")
    server_command.add_arguments(server)
    _add_spark_options(server)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    out, err = _consoles()
    try:
        if args.command == "check":
            return _check(args.files, out, err)
        if args.command == "explain":
            return _explain(args.file, args.json, args.plan, out, err, args.draw)
        if args.command == "compile":
            return _compile(args, out, err)
        if args.command == "run":
            from wql.runner import run_file

            server_command.use_server(args, err)
            return run_file(args, out, err)
        if args.command == "repl":
            from wql.repl import main as repl_main
            from wql.runtime.session import spark_settings

            server_command.use_server(args, err)
            return repl_main(args.files, remote=args.remote, conf=spark_settings(args.conf, args.packages, args.jars))
        if args.command == "server":
            from wql.runtime.session import spark_settings

            settings = spark_settings(args.conf, args.packages, args.jars)
            return server_command.command(args, settings, out, err)
    except wql.WQLError as error:
        err.print(error_renderable(error))
        return EXIT_ERRORS
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    parser.error(f"unknown command {args.command}")
    return EXIT_USAGE


def _check(files: Sequence[str], out: Console, err: Console) -> int:
    failed = 0
    for path in files:
        try:
            program = wql.load(path, spark=NO_SPARK)
        except wql.WQLError as error:
            err.print(error_renderable(error))
            failed += 1
            continue
        errors = sorted([*program.errors, *wql.missing_inputs(program)], key=lambda e: e.line or 0)
        for error in errors:
            err.print(error_renderable(error))
            err.print()
        if errors:
            failed += 1
        else:
            count = len(program.queries)
            out.print(Text.assemble(("✓ ", "green"), f"{path}: {count} quer{'y' if count == 1 else 'ies'} OK"))
    return EXIT_ERRORS if failed else EXIT_OK


def _chosen(program: wql.Program, number: int | None) -> list[wql.Statement]:
    queries = program.queries
    if number is None:
        return queries
    return [program.query(number)]


def _compile(args: argparse.Namespace, out: Console, err: Console) -> int:
    program = wql.load(args.file, spark=NO_SPARK)
    for error in program.errors:
        err.print(error_renderable(error))
    if program.errors:
        return EXIT_ERRORS
    queries = _chosen(program, args.query)
    if not queries:
        raise wql.WQLSemanticError(f"{args.file} has no query to compile")
    if len(queries) > 1:
        raise wql.WQLSemanticError(f"{args.file} has {len(queries)} queries; pick one with --query 1…{len(queries)}")
    compiled = wql.compile_statement(program, queries[0], plan=args.plan, stream=args.stream)
    code = compiled.stream_code if args.stream else compiled.code
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(code)
        except OSError as error:
            raise wql.WQLRuntimeError(f"cannot write {args.output}: {error.strerror}") from None
        err.print(Text.assemble(("✓ ", "green"), f"wrote {args.output} (plan: {compiled.plan})"))
    else:
        sys.stdout.write(code)
    return EXIT_OK


def _explain(path: str, as_json: bool, plan: str | None, out: Console, err: Console, draw: str | None = None) -> int:
    program = wql.load(path, spark=NO_SPARK)
    for error in program.errors:
        err.print(error_renderable(error))
    if program.errors:
        return EXIT_ERRORS
    for index, statement in enumerate(program.queries):
        if draw:
            target = draw if len(program.queries) == 1 else _numbered(draw, statement.query_number or index + 1)
            drawing = wql.draw_statement(statement)
            try:
                with open(target, "w", encoding="utf-8") as handle:
                    handle.write(drawing.svg)
            except OSError as error:
                raise wql.WQLRuntimeError(f"cannot write {target}: {error.strerror}") from None
            err.print(Text.assemble(("✓ ", "green"), f"drew {target}: {drawing.summary()}"))
        explanation = wql.explain_statement(statement, plan=plan)
        if as_json:
            sys.stdout.write(json.dumps(explanation.to_dict(), ensure_ascii=False) + "\n")
            continue
        if index:
            out.print()
        out.print(explanation_renderable(explanation))
    return EXIT_OK


def _numbered(path: str, number: int) -> str:
    root, ext = os.path.splitext(path)
    return f"{root}_{number}{ext}"


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
