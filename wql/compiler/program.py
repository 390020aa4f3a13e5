"""A whole script: CREATE STREAM statements build the catalog, queries are analyzed in order.

Errors are collected per statement, so `wql check` reports every broken
statement in a file, not just the first.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from wql.compiler.analysis import Query, analyze
from wql.compiler.schema import Catalog, Stream, stream_from_ast
from wql.grammar import ast
from wql.grammar.errors import WQLError
from wql.grammar.parser import parse


@dataclass(frozen=True)
class Statement:
    number: int  # 1-based position in the script
    node: ast.Statement
    query: Query | None = None  # for SELECT and EXPLAIN
    stream: Stream | None = None  # for CREATE STREAM
    error: WQLError | None = None

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

    @property
    def errors(self) -> list[WQLError]:
        if self.syntax_error is not None:
            return [self.syntax_error]
        return [s.error for s in self.statements if s.error is not None]

    @property
    def queries(self) -> list[Statement]:
        return [s for s in self.statements if s.query is not None]


def analyze_program(source: str, path: str | None = None, catalog: Catalog | None = None) -> Program:
    """Parse and analyze every statement; never raises for a bad query, it records the error."""
    base_dir = os.path.dirname(os.path.abspath(path)) if path else None
    program = Program(source=source, path=path, catalog=catalog.copy() if catalog else Catalog())
    try:
        script = parse(source, path)
    except WQLError as error:
        program.syntax_error = error
        return program
    for number, node in enumerate(script.statements, start=1):
        program.statements.append(_analyze_statement(program, number, node, base_dir))
    return program


def _analyze_statement(program: Program, number: int, node: ast.Statement, base_dir: str | None) -> Statement:
    try:
        if isinstance(node, ast.CreateStream):
            stream = stream_from_ast(node, base_dir)
            program.catalog.add(stream)
            return Statement(number, node, stream=stream)
        select = node.select if isinstance(node, ast.Explain) else node
        return Statement(number, node, query=analyze(select, program.catalog))
    except WQLError as error:
        return Statement(number, node, error=error.with_source(program.source, program.path))
