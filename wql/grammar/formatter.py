"""Syntax tree to canonical WQL text.

The output re-parses to an equal tree (`parse(format_script(s)) == s`), which the
tests check over every example and a generated corpus. Keywords come out
upper-case, expressions in sqlglot's canonical Spark SQL, and names are quoted
only where a bare name would read as something else.
"""

from __future__ import annotations

import re
from decimal import Decimal

from wql.grammar import ast

# Words that would lex as WQL keywords in some position; quoting them is always safe.
KEYWORDS = frozenset(
    """CREATE STREAM FORMAT OPTIONS EXPLAIN SELECT FROM AS WHERE GROUP BY HAVING ORDER LIMIT EMIT EMPTY FINAL
    CHANGES PUNCTUATION WHEN TABLE
    NULLS ASC DESC FIRST LAST RANGE SLIDE WATTR RATTR SATTR PATTR ALIGN SLACK UNBOUNDED KAFKA CUMULATE FULL OWN RANK
    START END TIMESTAMP CONSISTENT GENEROUS TRUE FALSE SESSION GAP MAX FRAME THRESHOLD DELTA AGGREGATE MIN ON""".split()
)
_UNIT_WORD = re.compile(r"(ROWS?|MICROSECONDS?|MILLISECONDS?|SECONDS?|MINUTES?|HOURS?|DAYS?|WEEKS?)", re.I)
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def format_name(name: ast.Name | str) -> str:
    text = name.text if isinstance(name, ast.Name) else name
    if _PLAIN.fullmatch(text) and text.upper() not in KEYWORDS and not _UNIT_WORD.fullmatch(text):
        return text
    return "`" + text.replace("`", "``") + "`"


def format_table(parts: tuple[ast.Name, ...] | tuple[str, ...]) -> str:
    """A table's name as WQL writes it: its parts (catalog, database, table) joined by dots, each quoted only
    where it must be."""
    return ".".join(format_name(part) for part in parts)


def format_string(value: str) -> str:
    out = []
    for ch in value:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("\\'")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 32 or 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def format_number(value: Decimal) -> str:
    text = format(value, "f")
    return text


def format_quantity(quantity: ast.Quantity) -> str:
    number = format_number(quantity.value)
    if quantity.unit is None:
        return number
    return f"{number} {quantity.unit.spelled(quantity.value)}"


def format_clause(clause: ast.WindowClause) -> str:
    match clause:
        case ast.RangeClause(quantity=None):
            return "RANGE UNBOUNDED"
        case ast.RangeClause(quantity=q) if q is not None:
            return f"RANGE {format_quantity(q)}"
        case ast.SlideClause(quantity=None):
            return "SLIDE KAFKA"
        case ast.SlideClause(quantity=q) if q is not None:
            return f"SLIDE {format_quantity(q)}"
        case ast.WattrClause(attrs=(single,)):
            return f"WATTR {format_name(single)}"
        case ast.WattrClause(attrs=attrs):
            return f"WATTR ({', '.join(format_name(a) for a in attrs)})"
        case ast.RattrClause(attr=attr):
            return f"RATTR {format_name(attr)}"
        case ast.SattrClause(attr=attr, rank=True):
            return f"SATTR RANK({format_name(attr)})"
        case ast.SattrClause(attr=attr):
            return f"SATTR {format_name(attr)}"
        case ast.PattrClause(attrs=attrs):
            return f"PATTR {', '.join(format_name(a) for a in attrs)}"
        case ast.AlignClause(value=value, anchor=anchor):
            prefix = "ALIGN START " if anchor == "start" else "ALIGN "
            if value is None:
                return prefix + "FIRST"
            if isinstance(value, str):
                return f"{prefix}TIMESTAMP {format_string(value)}"
            return prefix + format_quantity(value)
        case ast.SlackClause(quantity=q, mode=mode):
            suffix = f" {mode.upper()}" if mode else ""
            return f"SLACK {format_quantity(q)}{suffix}"
        case ast.SnapshotClause():
            return "SNAPSHOT"
        case ast.ClipClause():
            return "CLIP"
        case ast.SnapClause():
            return "SNAP"
        case ast.SessionClause(gap=gap, max=longest):
            return f"SESSION GAP {format_quantity(gap)}" + (f" MAX {format_quantity(longest)}" if longest else "")
        case ast.FrameClause():
            return format_frame(clause)
        case ast.CumulateClause():
            return "CUMULATE"
        case ast.KafkaClause():
            return "KAFKA"
        case ast.FullClause(end=end):
            return f"FULL {end.upper()}" if end else "FULL"
        case ast.OwnEndClause():
            return "OWN END"
        case ast.TimeZoneClause(zone=zone):
            return f"TIME ZONE {format_string(zone)}"
    raise TypeError(f"not a window clause: {clause!r}")


def format_frame(clause: ast.FrameClause) -> str:
    if clause.rule == "delta":
        assert clause.delta is not None and clause.on is not None
        on = format_name(clause.on) if isinstance(clause.on, ast.Name) else f"({clause.on.sql})"
        return f"FRAME DELTA {format_quantity(clause.delta)} ON {on}"
    assert clause.condition is not None
    text = f"FRAME {clause.rule.upper()} ({clause.condition.sql})"
    return text + (f" MIN {format_quantity(clause.minimum)}" if clause.minimum is not None else "")


def format_window(window: ast.WindowSpec) -> str:
    return "[" + " ".join(format_clause(c) for c in window.clauses) + "]"


def _format_option_value(value: ast.OptionValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format_number(value)
    return format_string(value)


_RESERVED = frozenset({"SELECT", "FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT"})


def _format_option_key(key: str) -> str:
    parts = key.split(".")
    if all(_PLAIN.fullmatch(p) and p.upper() not in _RESERVED for p in parts):
        return key
    return format_string(key)


def format_create(stmt: ast.CreateStream) -> str:
    columns = ", ".join(f"{format_name(c.name)} {_format_type(c.type)}" for c in stmt.columns)
    lines = [f"CREATE STREAM {format_name(stmt.name)}" + (f" ({columns})" if columns else "")]
    if stmt.path is not None:
        lines.append(f"  FROM {format_string(stmt.path)}")
    if stmt.table:
        lines.append(f"  FROM TABLE {format_table(stmt.table)}")
    if stmt.format is not None:
        lines.append(f"  FORMAT {stmt.format}")
    if stmt.options:
        options = ", ".join(f"{_format_option_key(o.key)} = {_format_option_value(o.value)}" for o in stmt.options)
        lines.append(f"  OPTIONS ({options})")
    if stmt.row_num is not None:
        lines.append(f"  ROW_NUM {format_name(stmt.row_num)}")
    if stmt.punctuation is not None:
        lines.append(f"  PUNCTUATION WHEN ({stmt.punctuation.sql})")
    return "\n".join(lines)


def _format_type(type_name: ast.TypeName) -> str:
    if type_name.params:
        return f"{type_name.name}({', '.join(str(p) for p in type_name.params)})"
    return type_name.name


def format_select(stmt: ast.Select) -> str:
    items = ", ".join(item.expr.sql + (f" AS {format_name(item.alias)}" if item.alias else "") for item in stmt.items)
    lines = [f"SELECT {items}"]
    source = f"FROM {format_name(stmt.stream)}"
    if stmt.window is not None:
        source += " " + format_window(stmt.window)
    lines.append(source)
    if stmt.where is not None:
        lines.append(f"WHERE {stmt.where.sql}")
    if stmt.group_by:
        lines.append("GROUP BY " + ", ".join(e.sql for e in stmt.group_by))
    if stmt.having is not None:
        lines.append(f"HAVING {stmt.having.sql}")
    if stmt.order_by:
        lines.append("ORDER BY " + ", ".join(_format_order(o) for o in stmt.order_by))
    if stmt.limit is not None:
        lines.append(f"LIMIT {stmt.limit}")
    if stmt.emit is not None or stmt.emit_empty:
        words = [*([stmt.emit.upper()] if stmt.emit else []), *(["EMPTY"] if stmt.emit_empty else [])]
        lines.append("EMIT " + " ".join(words))
    return "\n".join(lines)


def _format_order(item: ast.OrderItem) -> str:
    text = item.expr.sql
    if item.descending:
        text += " DESC"
    if item.nulls:
        text += f" NULLS {item.nulls.upper()}"
    return text


def format_statement(stmt: ast.Statement) -> str:
    if isinstance(stmt, ast.CreateStream):
        return format_create(stmt)
    if isinstance(stmt, ast.Explain):
        return "EXPLAIN " + format_select(stmt.select)
    return format_select(stmt)


def format_script(script: ast.Script) -> str:
    return "".join(format_statement(s) + ";\n" for s in script.statements)
