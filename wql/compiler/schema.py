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

from sqlglot import exp

from wql.compiler.aggregates import aggregate_name
from wql.grammar import ast
from wql.grammar.errors import Span, WQLNameError, WQLSemanticError, WQLTypeError, did_you_mean
from wql.grammar.expressions import render_sql
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

    @property
    def source(self) -> str:
        """Where rows come from: "files" (a path of csv/json/parquet), "rate" (Spark's generator) or "kafka"."""
        return self.format if self.format in {"rate", "kafka"} else "files"

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


class Catalog:
    """Streams by case-insensitive name; later definitions replace earlier ones (as in a REPL)."""

    def __init__(self, streams: Iterable[Stream] = ()) -> None:
        self._streams: dict[str, Stream] = {}
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
        return Catalog(self._streams.values())


def stream_from_ast(stmt: ast.CreateStream, base_dir: str | None = None) -> Stream:
    """Check a CREATE STREAM and turn it into a catalog entry."""
    seen: dict[str, ast.ColumnDef] = {}
    columns = []
    for col in stmt.columns:
        key = col.name.key
        if key in seen:
            raise WQLSemanticError(f"column '{col.name.text}' is declared twice", span=col.name.span)
        if key in WINDOW_COLUMNS:
            raise WQLSemanticError(
                f"'{col.name.text}' is the name of a WQL output column",
                span=col.name.span,
                hint="rename the column: every result carries wid, window_start and window_end",
            )
        seen[key] = col
        type_name = col.type.name + (f"({','.join(str(p) for p in col.type.params)})" if col.type.params else "")
        columns.append(Column(col.name.text, type_name))
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
            span=seen[ROW_NUM].name.span,
            hint="if it numbers the rows in arrival order, add ROW_NUM row_num; otherwise rename it",
        )

    path = stmt.path
    fmt = stmt.format
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
    )


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
