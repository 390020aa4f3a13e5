"""Streams and their schemas, as the compiler sees them.

A catalog is built from CREATE STREAM statements or handed in through the API
(for DataFrames the runtime converts Spark schemas into this form), so the
compiler never needs Spark itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from sqlglot import exp

from wql.compiler.aggregates import aggregate_name
from wql.grammar import ast
from wql.grammar.errors import Span, WQLError, WQLNameError, WQLSemanticError, WQLTypeError, did_you_mean, relocate
from wql.grammar.expressions import render_sql
from wql.grammar.formatter import format_table
from wql.grammar.parser import FORMATS, TYPE_NAMES

ROW_NUM = "row_num"
WINDOW_COLUMNS = ("wid", "window_start", "window_end")


INTEGRAL_TYPES = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT"})
FLOATING_TYPES = frozenset({"FLOAT", "DOUBLE"})


class Domain(Enum):
    """How a column's values behave as a window attribute."""

    TIMESTAMP = "timestamp"  # microseconds since the epoch
    DATE = "date"  # days since the epoch
    INTEGER = "integer"
    FLOAT = "float"  # IEEE double
    DECIMAL = "decimal"
    ROW_NUM = "row_num"  # arrival position, rows
    OTHER = "other"  # strings, booleans: not orderable as a window attribute


_DOMAINS = {
    "TIMESTAMP": Domain.TIMESTAMP,
    "DATE": Domain.DATE,
    "INT": Domain.INTEGER,
    "BIGINT": Domain.INTEGER,
    "SMALLINT": Domain.INTEGER,
    "TINYINT": Domain.INTEGER,
    "DOUBLE": Domain.FLOAT,
    "FLOAT": Domain.FLOAT,
    "DECIMAL": Domain.DECIMAL,
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # canonical Spark type name, e.g. BIGINT or DECIMAL(10,2)

    @property
    def base_type(self) -> str:
        return self.type.split("(")[0]

    @property
    def domain(self) -> Domain:
        return _DOMAINS.get(self.base_type, Domain.OTHER)

    @property
    def is_numeric(self) -> bool:
        return self.domain in {Domain.INTEGER, Domain.FLOAT, Domain.DECIMAL}


@dataclass(frozen=True)
class Stream:
    name: str
    columns: tuple[Column, ...]
    path: str | None = None
    format: str | None = None
    options: tuple[tuple[str, str | int | float | bool], ...] = ()
    row_num: str | None = None  # a column that numbers arrivals, instead of file order
    punctuation: str | None = None  # Spark SQL predicate: rows that are punctuations, not data
    span: Span | None = field(default=None, compare=False)
    # FROM wrote a relative path, which `path` holds resolved against the query file's directory: a job
    # compiled from it carries it relative to where it is compiled, not this machine's absolute path.
    relative: bool = False
    table: tuple[str, ...] = ()  # FROM TABLE: the table's name, its parts (catalog, database, table)

    @property
    def source(self) -> str:
        """Where rows come from: "files" (a path of csv/json/parquet), "table" (a temp view or a catalog table),
        "rate" (Spark's generator) or "kafka"."""
        if self.table:
            return "table"
        return self.format if self.format in {"rate", "kafka"} else "files"

    @property
    def table_identifier(self) -> str | None:
        return spark_identifier(self.table) if self.table else None

    def column(self, name: str) -> Column | None:
        key = name.lower()
        return next((c for c in self.columns if c.name.lower() == key), None)

    def require(self, name: str, span: Span | None) -> Column:
        found = self.column(name)
        if found is None:
            raise WQLNameError(
                f"unknown column '{name}' in stream '{self.name}'",
                span=span,
                hint=did_you_mean(name, [c.name for c in self.columns])
                or f"columns are: {', '.join(c.name for c in self.columns)}",
            )
        return found

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def ddl(self) -> str:
        """The schema as a Spark DDL string, with every name quoted."""
        return ", ".join(f"`{c.name.replace('`', '``')}` {c.type}" for c in self.columns)


def spark_identifier(parts: tuple[str, ...]) -> str:
    """A table's name as Spark parses it, every part backquoted: no name is ever read as anything else."""
    return ".".join("`" + part.replace("`", "``") + "`" for part in parts)


class Tables(Protocol):
    """Spark's catalog as the compiler asks it, for a stream declared FROM TABLE without its columns. The
    runtime answers from a SparkSession (wql.runtime.spark_schema); the compiler itself never needs Spark."""

    def columns(self, identifier: str) -> tuple[Column, ...] | None:
        """The table's columns (`identifier` as Spark parses it), or None when there is no such table or view."""
        ...

    def names(self) -> list[str]:
        """The tables and views the catalog knows: for a hint when a name is not one of them."""
        ...


class Catalog:
    """Streams by case-insensitive name; later definitions replace earlier ones (as in a REPL). `tables`, when
    a Spark session is at hand, answers for the columns of streams declared FROM TABLE without a column list."""

    def __init__(self, streams: Iterable[Stream] = (), tables: Tables | None = None) -> None:
        self._streams: dict[str, Stream] = {}
        self.tables = tables
        for stream in streams:
            self.add(stream)

    def add(self, stream: Stream) -> None:
        self._streams[stream.name.lower()] = stream

    def get(self, name: str) -> Stream | None:
        return self._streams.get(name.lower())

    def require(self, name: ast.Name) -> Stream:
        found = self.get(name.text)
        if found is None:
            known = [s.name for s in self._streams.values()]
            hint = did_you_mean(name.text, known)
            if hint is None:
                hint = (
                    f"declare it first: CREATE STREAM {name.text} (col TYPE, ...) FROM 'path';"
                    if not known
                    else f"known streams: {', '.join(known)}"
                )
            raise WQLNameError(f"unknown stream '{name.text}'", span=name.span, hint=hint)
        return found

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._streams.values())

    def __len__(self) -> int:
        return len(self._streams)

    def copy(self) -> Catalog:
        return Catalog(self._streams.values(), self.tables)


def stream_from_ast(stmt: ast.CreateStream, base_dir: str | None = None, tables: Tables | None = None) -> Stream:
    """Check a CREATE STREAM and turn it into a catalog entry."""
    seen: dict[str, Span] = {}
    columns = []
    for col in stmt.columns:
        type_name = col.type.name + (f"({','.join(str(p) for p in col.type.params)})" if col.type.params else "")
        columns.append(_column(Column(col.name.text, type_name), col.name.span, seen, "rename the column"))
    if stmt.table:
        columns = table_columns(stmt, tuple(columns), seen, tables)
    elif not stmt.columns:
        raise WQLSemanticError(
            f"stream '{stmt.name.text}' declares no columns",
            span=stmt.name.span,
            hint=f"CREATE STREAM {stmt.name.text} (column TYPE, …) FROM 'path'; only a stream FROM TABLE takes the "
            "table's columns",
        )
    stream = Stream(name=stmt.name.text, columns=tuple(columns), span=stmt.span)

    seen_options: set[str] = set()
    for option in stmt.options:
        if option.key.lower() in seen_options:
            raise WQLSemanticError(f"option '{option.key}' is given twice", span=option.span)
        seen_options.add(option.key.lower())

    row_num = None
    if stmt.row_num is not None:
        column = stream.require(stmt.row_num.text, stmt.row_num.span)
        if column.domain is not Domain.INTEGER:
            raise WQLTypeError(
                f"ROW_NUM needs an integer column; '{column.name}' is {column.type}",
                span=stmt.row_num.span,
            )
        row_num = column.name
    elif stream.column(ROW_NUM) is not None:
        raise WQLSemanticError(
            "a column named row_num would hide the arrival position",
            span=seen[ROW_NUM],
            hint="if it numbers the rows in arrival order, add ROW_NUM row_num; otherwise rename it",
        )

    path = stmt.path
    fmt = stmt.format
    relative = False
    if fmt in {"rate", "kafka"} and path is not None:
        raise WQLSemanticError(
            f"a {fmt} stream has no FROM path",
            span=stmt.path_span or stmt.span,
            hint="its source is configured with OPTIONS (…)"
            + (": 'kafka.bootstrap.servers' and subscribe" if fmt == "kafka" else ", e.g. rowsPerSecond"),
        )
    if path is not None:
        if fmt is None:
            fmt = infer_format(path)
            if fmt is None:
                raise WQLSemanticError(
                    f"cannot tell the format of '{path}' from its name",
                    span=stmt.path_span or stmt.span,
                    hint=f"add FORMAT {' | '.join(FORMATS)}",
                )
        relative = "://" not in path and not os.path.isabs(path)
        path = resolve_path(path, base_dir)
    options = tuple((o.key, _option_value(o.value)) for o in stmt.options)
    punctuation = _punctuation(stream, stmt.punctuation) if stmt.punctuation is not None else None
    return Stream(
        name=stream.name,
        columns=stream.columns,
        path=path,
        format=fmt,
        options=options,
        row_num=row_num,
        punctuation=punctuation,
        span=stmt.span,
        relative=relative,
        table=tuple(part.text for part in stmt.table),
    )


def _column(column: Column, span: Span, seen: dict[str, Span], rename: str) -> Column:
    """A stream's column, checked against the names before it and the result's own columns."""
    key = column.name.lower()
    if key in seen:
        raise WQLSemanticError(f"column '{column.name}' is declared twice", span=span)
    if key in WINDOW_COLUMNS:
        raise WQLSemanticError(
            f"'{column.name}' is the name of a WQL output column",
            span=span,
            hint=f"{rename}: every result carries wid, window_start and window_end",
        )
    seen[key] = span
    return column


def table_columns(
    stmt: ast.CreateStream, declared: tuple[Column, ...], seen: dict[str, Span], tables: Tables | None
) -> list[Column]:
    """A FROM TABLE stream's columns: the table's, from Spark's catalog, or those declared (each of which the
    table must have, when a catalog is at hand to say so). Errors point at the table's name."""
    span = stmt.table[0].span.merge(stmt.table[-1].span)
    shown = format_table(stmt.table)
    identifier = spark_identifier(tuple(part.text for part in stmt.table))
    if tables is None:
        if declared:
            return list(declared)
        raise WQLSemanticError(
            f"the columns of table '{shown}' are in Spark's catalog, and there is no Spark session here to ask",
            span=span,
            hint=f"declare them: CREATE STREAM {stmt.name.text} (column TYPE, …) FROM TABLE {shown}; or give a "
            "session (wql.compile(text, spark=spark)); `wql run` asks its own",
        )
    try:
        found = tables.columns(identifier)
    except WQLError as error:  # a name Spark's catalog refuses: point at it
        raise relocate(error, span) from None
    if found is None:
        known = tables.names()
        raise WQLNameError(
            f"unknown table '{shown}'",
            span=span,
            hint=did_you_mean(shown, known)
            or (f"tables and views: {', '.join(known[:12])}" if known else "Spark's catalog has no tables or views")
            + "; a temp view is known only to the session that made it",
        )
    if not declared:
        rename = f"select the other columns in a view, and read it FROM TABLE (table '{shown}')"
        return [_column(column, span, seen, rename) for column in found]
    have = {column.name.lower() for column in found}
    for column, definition in zip(declared, stmt.columns, strict=True):
        if column.name.lower() not in have:
            raise WQLNameError(
                f"table '{shown}' has no column '{column.name}'",
                span=definition.name.span,
                hint=did_you_mean(column.name, [c.name for c in found])
                or f"its columns: {', '.join(c.name for c in found)}",
            )
    return list(declared)


def _punctuation(stream: Stream, predicate: ast.Expr) -> str:
    """PUNCTUATION WHEN (…) as Spark SQL over the stream's columns, as declared (a row-level predicate)."""
    tree = predicate.tree.copy()
    for node in list(tree.walk()):
        if isinstance(node, exp.Expression) and aggregate_name(node) is not None:
            raise WQLSemanticError("a punctuation is one row: aggregates are not allowed here", span=predicate.span)
        if isinstance(node, exp.Subquery | exp.Select | exp.Window):
            raise WQLSemanticError("PUNCTUATION WHEN takes a condition on one row's columns", span=predicate.span)
        if isinstance(node, exp.Column):
            column = stream.column(str(node.name))
            if column is None:
                raise WQLNameError(
                    f"unknown column '{node.name}' in stream '{stream.name}'",
                    span=predicate.span,
                    hint=did_you_mean(str(node.name), list(stream.column_names))
                    or f"columns are: {', '.join(stream.column_names)}",
                )
            node.replace(exp.column(exp.to_identifier(column.name)))
    return render_sql(tree)


def _option_value(value: ast.OptionValue) -> str | int | float | bool:
    if isinstance(value, bool | str):
        return value
    return int(value) if value == value.to_integral_value() else float(value)


def infer_format(path: str) -> str | None:
    lowered = path.lower().rstrip("/")
    for suffix, fmt in (
        (".csv", "csv"),
        (".json", "json"),
        (".jsonl", "json"),
        (".ndjson", "json"),
        (".parquet", "parquet"),
        (".pq", "parquet"),
    ):
        if lowered.endswith(suffix):
            return fmt
    return None


def resolve_path(path: str, base_dir: str | None) -> str:
    """Relative paths are relative to the query file, so a query runs from any directory."""
    if "://" in path or os.path.isabs(path) or base_dir is None:
        return path
    return os.path.normpath(os.path.join(base_dir, path))


def schema_from_mapping(name: str, schema: Mapping[str, str]) -> Stream:
    """A stream from {column: type}, for API users who have no CREATE STREAM."""
    columns = []
    for column, type_name in schema.items():
        base = type_name.strip().upper()
        canonical = TYPE_NAMES.get(base.split("(")[0])
        if canonical is None:
            raise WQLTypeError(f"unknown type '{type_name}' for column '{column}'")
        if canonical == "DECIMAL" and "(" in base:
            canonical = "DECIMAL(" + base.split("(", 1)[1].replace(" ", "")
        columns.append(Column(column, canonical))
    return Stream(name=name, columns=tuple(columns))
