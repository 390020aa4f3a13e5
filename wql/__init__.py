"""WQL: declarative window queries over streams, compiled to Apache Spark.

The public API. The CLI, the REPL and the notebook magic are thin shells over
these functions:

    import wql
    wql.check(text)                  # [] or a list of WQLError
    wql.explain(text)                # one Explanation per query
    program = wql.load("q.wql")      # every statement of a file, analyzed
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from wql.compiler.explain import Explanation, explain_query
from wql.compiler.program import Program, Statement, analyze_program
from wql.compiler.schema import Catalog, Stream, schema_from_mapping
from wql.grammar.ast import Script
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


def catalog(streams: StreamSchemas | None = None) -> Catalog:
    """A catalog from {name: {column: TYPE}} (or Spark schemas/DataFrames, converted by the runtime)."""
    result = Catalog()
    for name, schema in (streams or {}).items():
        if isinstance(schema, Stream):
            result.add(schema)
        elif isinstance(schema, Mapping):
            result.add(schema_from_mapping(name, schema))
        else:
            from wql.runtime.spark_schema import stream_from_spark

            result.add(stream_from_spark(name, schema))
    return result


def analyze(text: str, path: str | None = None, *, streams: StreamSchemas | None = None) -> Program:
    """Every statement of a script, analyzed in order; errors are recorded, not raised."""
    return analyze_program(text, path, catalog(streams))


def load(path: str, *, streams: StreamSchemas | None = None) -> Program:
    """Analyze a .wql file. Relative stream paths in it are relative to the file."""
    return analyze(read_source(path), os.fspath(path), streams=streams)


def check(text: str, path: str | None = None, *, streams: StreamSchemas | None = None) -> list[WQLError]:
    """All errors in a script, each with its position; [] when it is fine."""
    return analyze(text, path, streams=streams).errors


def explain(text: str, path: str | None = None, *, streams: StreamSchemas | None = None) -> list[Explanation]:
    """What each query means: the window with defaults, its class and why, wids, aggregate kinds."""
    program = analyze(text, path, streams=streams)
    if program.errors:
        raise program.errors[0]
    return [explain_statement(s) for s in program.queries]


def explain_statement(statement: Statement) -> Explanation:
    assert statement.query is not None
    return explain_query(statement.query, statement.number, statement.line)


__all__ = [
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
    "explain",
    "format",
    "load",
    "parse",
    "read_source",
]
