"""A whole script: CREATE STREAM statements build the catalog, queries are analyzed in order.

Errors are collected per statement, so `wql check` reports every broken
statement in a file, not just the first.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from wql.compiler.analysis import Query, analyze
from wql.compiler.schema import Catalog, Stream, stream_from_ast
from wql.grammar import ast
from wql.grammar.errors import WQLError, WQLSemanticError
from wql.grammar.parser import parse


@dataclass(frozen=True)
class Statement:
    number: int  # 1-based position in the script, CREATE STREAMs included
    node: ast.Statement
    query: Query | None = None  # for SELECT and EXPLAIN
    stream: Stream | None = None  # for CREATE STREAM
    error: WQLError | None = None
    # 1-based among the script's SELECT and EXPLAIN statements (None for CREATE STREAM): the one number a
    # user sees for a query, in explain, run, the job's header and `--query N`.
    query_number: int | None = None

    @property
    def is_explain(self) -> bool:
        return isinstance(self.node, ast.Explain)

    @property
    def line(self) -> int:
        return self.node.span.line


@dataclass
class Program:
    source: str
    path: str | None
    statements: list[Statement] = field(default_factory=list)
    catalog: Catalog = field(default_factory=Catalog)
    syntax_error: WQLError | None = None
    # DataFrames given from Python by (lower-case) stream name: what a query on that stream runs on when the
    # script does not say where the stream comes from (no FROM). Opaque here: the runtime binds them.
    frames: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[WQLError]:
        if self.syntax_error is not None:
            return [self.syntax_error]
        return [s.error for s in self.statements if s.error is not None]

    @property
    def queries(self) -> list[Statement]:
        return [s for s in self.statements if s.query is not None]

    def query(self, number: int) -> Statement:
        """The query numbered `number` (1-based among SELECT and EXPLAIN statements, as explain and run
        name it), or a WQLSemanticError that says how many there are."""
        found = [s for s in self.statements if s.query_number is not None]
        for statement in found:
            if statement.query_number == number and statement.query is not None:
                return statement
        count = f"{len(found)} quer{'y' if len(found) == 1 else 'ies'}"
        raise WQLSemanticError(f"there is no query {number}; {self.path or 'the text'} has {count}")


def analyze_program(source: str, path: str | None = None, catalog: Catalog | None = None) -> Program:
    """Parse and analyze every statement; never raises for a bad query, it records the error."""
    base_dir = os.path.dirname(os.path.abspath(path)) if path else None
    program = Program(source=source, path=path, catalog=catalog.copy() if catalog is not None else Catalog())
    try:
        script = parse(source, path)
    except WQLError as error:
        program.syntax_error = error
        return program
    queries = 0
    for number, node in enumerate(script.statements, start=1):
        statement = _analyze_statement(program, number, node, base_dir)
        if not isinstance(node, ast.CreateStream):
            queries += 1
            statement = replace(statement, query_number=queries)
        program.statements.append(statement)
    return program


def _analyze_statement(program: Program, number: int, node: ast.Statement, base_dir: str | None) -> Statement:
    try:
        if isinstance(node, ast.CreateStream):
            stream = stream_from_ast(node, base_dir, program.catalog.tables)
            program.catalog.add(stream)
            return Statement(number, node, stream=stream)
        select = node.select if isinstance(node, ast.Explain) else node
        return Statement(number, node, query=analyze(select, program.catalog))
    except WQLError as error:
        return Statement(number, node, error=error.with_source(program.source, program.path))
