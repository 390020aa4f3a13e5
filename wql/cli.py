"""The `wql` command: a thin shell over the public API in `wql/__init__.py`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from rich.console import Console

import wql
from wql.display import error_renderable, explanation_renderable

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2


def _consoles() -> tuple[Console, Console]:
    return Console(highlight=False), Console(stderr=True, highlight=False)


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
        "explain", help="show each query's window with defaults, class, wids and aggregate kinds"
    )
    explain.add_argument("file", metavar="FILE")
    explain.add_argument("--json", action="store_true", help="one JSON object per query, one per line")
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
            return _explain(args.file, args.json, out, err)
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
            program = wql.load(path)
        except wql.WQLError as error:
            err.print(error_renderable(error))
            failed += 1
            continue
        for error in program.errors:
            err.print(error_renderable(error))
            err.print()
        if program.errors:
            failed += 1
        else:
            count = len(program.queries)
            out.print(f"[green]✓[/] {path}: {count} quer{'y' if count == 1 else 'ies'} OK")
    return EXIT_ERRORS if failed else EXIT_OK


def _explain(path: str, as_json: bool, out: Console, err: Console) -> int:
    program = wql.load(path)
    for error in program.errors:
        err.print(error_renderable(error))
    if program.errors:
        return EXIT_ERRORS
    for index, statement in enumerate(program.queries):
        explanation = wql.explain_statement(statement)
        if as_json:
            sys.stdout.write(json.dumps(explanation.to_dict(), ensure_ascii=False) + "\n")
            continue
        if index:
            out.print()
        out.print(explanation_renderable(explanation))
    return EXIT_OK


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
