"""The grammar layer: parse trees of the examples, spans, lexical details and positioned syntax errors."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, fields, is_dataclass
from decimal import Decimal
from enum import Enum
from pathlib import Path

import pytest

import wql
from tests.conftest import EXAMPLES, check_golden
from wql.grammar import ast
from wql.grammar.errors import WQLError

EXAMPLE_FILES: list[Path] = sorted(EXAMPLES.rglob("*.wql"))


# ------------------------------------------------------------------ a stable dump of a syntax tree


def dump(node: object) -> str:
    """An indented, span-free rendering of a tree: class names and compared fields, Expr as its SQL."""
    return "\n".join(_dump(node)) + "\n"


def _dump(value: object) -> list[str]:
    if isinstance(value, ast.Expr):
        return [f"Expr {value.sql!r}"]
    if isinstance(value, ast.Name):
        return [f"Name {value.text!r}"]
    if isinstance(value, Enum):
        return [f"{type(value).__name__}.{value.name}"]
    if isinstance(value, Decimal):
        return [f"Decimal('{value}')"]
    if is_dataclass(value) and not isinstance(value, type):
        out = [type(value).__name__]
        for field in fields(value):
            if field.compare:  # skips span (and Expr.tree/text, handled above)
                out += _dump_field(field.name, getattr(value, field.name))
        return out
    return [repr(value)]


def _dump_field(name: str, value: object) -> list[str]:
    if isinstance(value, tuple) and (not value or is_dataclass(value[0])):
        if not value:
            return [f"  {name}: ()"]
        out = [f"  {name}:"]
        for item in value:
            first, *rest = _dump(item)
            out.append(f"    - {first}")
            out += [f"      {line}" for line in rest]
        return out
    first, *rest = _dump(value)
    return [f"  {name}: {first}", *(f"  {line}" for line in rest)]


def golden_name(path: Path) -> str:
    return "parse/" + path.relative_to(EXAMPLES).as_posix().replace("/", "__") + ".txt"


def test_examples_are_found() -> None:
    names = {p.relative_to(EXAMPLES).as_posix() for p in EXAMPLE_FILES}
    assert {"traffic.wql", "paper/q1.wql", "paper/q5.wql"} <= names


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_golden_parse_tree(path: Path) -> None:
    script = wql.parse(path.read_text(encoding="utf-8"))
    check_golden(golden_name(path), dump(script))


def test_dump_shows_content_but_not_spans() -> None:
    a = wql.parse("SELECT max(x) AS m FROM s [RANGE 5 MINUTES]")
    b = wql.parse("\n\n  select   MAX( x )  as m\nfrom s\n[range 5 minute]  ;")
    c = wql.parse("SELECT max(y) AS m FROM s [RANGE 5 MINUTES]")
    assert dump(a) == dump(b)
    assert dump(a) != dump(c)
    assert "Expr 'MAX(x)'" in dump(a)
    assert "Span" not in dump(a)


# ------------------------------------------------------------------ positions

POSITIONED = """-- header comment
CREATE STREAM traffic (seg_id STRING, speed DOUBLE)
  FROM 'x.csv';
SELECT seg_id,
       max(speed) AS m   -- trailing
FROM   traffic
  [RANGE 5 MINUTES
   SLIDE 1 MINUTE WATTR ts]
WHERE speed > 0
GROUP BY seg_id
ORDER BY m DESC NULLS LAST
LIMIT 3;
"""


def _at(node: ast.Node, text: str = POSITIONED) -> tuple[str, int, int, int, int]:
    span = node.span
    return text[span.start : span.end], span.line, span.column, span.end_line, span.end_column


def test_spans_point_at_their_text() -> None:
    create, select = wql.parse(POSITIONED).statements
    assert isinstance(create, ast.CreateStream)
    assert isinstance(select, ast.Select)
    assert _at(create) == ("CREATE STREAM traffic (seg_id STRING, speed DOUBLE)\n  FROM 'x.csv'", 2, 1, 3, 15)
    assert _at(create.name) == ("traffic", 2, 15, 2, 22)
    assert _at(create.columns[1]) == ("speed DOUBLE", 2, 39, 2, 51)
    assert _at(create.columns[1].type) == ("DOUBLE", 2, 45, 2, 51)
    assert _at(select.items[1]) == ("max(speed) AS m", 5, 8, 5, 23)
    assert _at(select.items[1].expr) == ("max(speed)", 5, 8, 5, 18)
    assert select.items[1].alias is not None
    assert _at(select.items[1].alias) == ("m", 5, 22, 5, 23)
    assert _at(select.stream) == ("traffic", 6, 8, 6, 15)
    assert select.window is not None
    assert _at(select.window) == ("[RANGE 5 MINUTES\n   SLIDE 1 MINUTE WATTR ts]", 7, 3, 8, 28)
    rng, slide, wattr = select.window.clauses
    assert _at(rng) == ("RANGE 5 MINUTES", 7, 4, 7, 19)
    assert isinstance(rng, ast.RangeClause) and rng.quantity is not None
    assert _at(rng.quantity) == ("5 MINUTES", 7, 10, 7, 19)
    assert _at(slide) == ("SLIDE 1 MINUTE", 8, 4, 8, 18)
    assert _at(wattr) == ("WATTR ts", 8, 19, 8, 27)
    assert select.where is not None
    assert _at(select.where) == ("speed > 0", 9, 7, 9, 16)
    assert _at(select.group_by[0]) == ("seg_id", 10, 10, 10, 16)
    assert _at(select.order_by[0]) == ("m DESC NULLS LAST", 11, 10, 11, 27)
    assert _at(select.order_by[0].expr) == ("m", 11, 10, 11, 11)


def test_expression_text_is_kept_as_written() -> None:
    text = "SELECT max( speed )  /* c */ + 1 AS m FROM s"
    (select,) = wql.parse(text).statements
    assert isinstance(select, ast.Select)
    expr = select.items[0].expr
    assert expr.text == "max( speed )  /* c */ + 1"
    assert expr.sql == "MAX(speed) + 1"
    assert text[expr.span.start : expr.span.end] == expr.text


def test_spans_are_excluded_from_equality() -> None:
    a = wql.parse("SELECT a FROM s [RANGE 5 ROWS]")
    b = wql.parse("\n\n   SELECT   a\nFROM s\n [ RANGE 5 ROWS ] ;")
    assert a == b
    sa, sb = a.statements[0], b.statements[0]
    assert isinstance(sa, ast.Select) and isinstance(sb, ast.Select)
    assert sa.span != sb.span
    assert (sa.stream.span.line, sb.stream.span.line) == (1, 4)
    assert hash(sa.stream) == hash(sb.stream)


def test_expressions_compare_by_canonical_sql() -> None:
    a = wql.parse("SELECT MAX(x)+1 FROM s")
    b = wql.parse("SELECT max( x ) + 1 FROM s")
    c = wql.parse("SELECT max(x) + 2 FROM s")
    assert a == b
    assert a != c


# ------------------------------------------------------------------ lexical details


def _select(text: str) -> ast.Select:
    (statement,) = wql.parse(text).statements
    assert isinstance(statement, ast.Select)
    return statement


@pytest.mark.parametrize(
    ("text", "sqls"),
    [
        ("SELECT range, minutes, start, first FROM s", ["range", "minutes", "start", "first"]),
        ("SELECT last, rows, row, kafka, rank FROM s", ["last", "rows", "row", "kafka", "rank"]),
        ("SELECT slide, wattr, consistent, generous, unbounded FROM s", None),
        ("SELECT max(range) - min(start) FROM s", ["MAX(range) - MIN(start)"]),
        ("SELECT end - start FROM s", ["end - start"]),
        ("SELECT `select`, `from` + 1 FROM s", ["`select`", "`from` + 1"]),
        # sqlglot alone would read `range <` as the start of a nested type RANGE<...>
        ("SELECT range < 5, map < 1, array > 2 FROM s", ["range < 5", "map < 1", "array > 2"]),
        (
            "SELECT CAST(a AS ARRAY<INT>), CAST(b AS MAP<STRING, INT>) FROM s",
            ["CAST(a AS ARRAY<INT>)", "CAST(b AS MAP<STRING, INT>)"],
        ),
    ],
)
def test_keywords_as_column_names(text: str, sqls: list[str] | None) -> None:
    select = _select(text)
    if sqls is None:
        sqls = [w.strip() for w in text.removeprefix("SELECT ").removesuffix(" FROM s").split(",")]
    assert [item.expr.sql for item in select.items] == sqls


def test_keywords_as_names_in_other_places() -> None:
    select = _select(
        "SELECT start AS range, end AS minutes FROM rows [WATTR (start, end) PATTR first, last]"
        " WHERE start < end GROUP BY first, last ORDER BY last NULLS LAST"
    )
    assert [item.alias for item in select.items] == [ast.Name(text="range"), ast.Name(text="minutes")]
    assert select.stream == ast.Name(text="rows")
    assert select.window is not None
    assert select.window.clauses == (
        ast.WattrClause(attrs=(ast.Name(text="start"), ast.Name(text="end"))),
        ast.PattrClause(attrs=(ast.Name(text="first"), ast.Name(text="last"))),
    )
    assert select.where is not None and select.where.sql == "start < end"
    assert [e.sql for e in select.group_by] == ["first", "last"]
    assert select.order_by == (ast.OrderItem(expr=select.order_by[0].expr, nulls="last"),)
    assert select.order_by[0].expr.sql == "last"


def test_quoted_names() -> None:
    (create,) = wql.parse("CREATE STREAM `my stream` (`a``b` INT, `é` STRING, `range` DOUBLE)").statements
    assert isinstance(create, ast.CreateStream)
    assert create.name.text == "my stream"
    assert [c.name.text for c in create.columns] == ["a`b", "é", "range"]


def test_window_clauses_of_every_kind() -> None:
    select = _select(
        "SELECT x FROM s [RANGE UNBOUNDED SLIDE KAFKA WATTR ts RATTR r SATTR rank(ts) PATTR a, b"
        " ALIGN START TIMESTAMP '2024-01-01 00:00:00' SLACK 2 SECONDS GENEROUS"
        " ALIGN -1.5 HOURS SLACK 3 CONSISTENT SATTR row_num RANGE 1 ROW]"
    )
    assert select.window is not None
    assert select.window.clauses == (
        ast.RangeClause(quantity=None),
        ast.SlideClause(quantity=None),
        ast.WattrClause(attrs=(ast.Name(text="ts"),)),
        ast.RattrClause(attr=ast.Name(text="r")),
        ast.SattrClause(attr=ast.Name(text="ts"), rank=True),
        ast.PattrClause(attrs=(ast.Name(text="a"), ast.Name(text="b"))),
        ast.AlignClause(value="2024-01-01 00:00:00", anchor="start"),
        ast.SlackClause(quantity=ast.Quantity(value=Decimal(2), unit=ast.Unit.SECONDS), mode="generous"),
        ast.AlignClause(value=ast.Quantity(value=Decimal("-1.5"), unit=ast.Unit.HOURS)),
        ast.SlackClause(quantity=ast.Quantity(value=Decimal(3)), mode="consistent"),
        ast.SattrClause(attr=ast.Name(text="row_num")),
        ast.RangeClause(quantity=ast.Quantity(value=Decimal(1), unit=ast.Unit.ROWS)),
    )


def test_data_driven_window_clauses() -> None:
    """Sessions and frames: SESSION GAP [MAX], KAFKA, FRAME THRESHOLD [MIN] / DELTA … ON / AGGREGATE."""
    select = _select(
        "SELECT x FROM s [SESSION GAP 10 SECONDS MAX 1 HOUR KAFKA FRAME THRESHOLD (speed < 40) MIN 3 ROWS"
        " FRAME DELTA 2.5 ON speed FRAME DELTA 5 ON (a - b) FRAME AGGREGATE (sum(v) > 100 OR count(*) >= 9)]"
    )
    assert select.window is not None
    session, kafka, threshold, delta, delta_expr, aggregate = select.window.clauses
    assert session == ast.SessionClause(
        gap=ast.Quantity(value=Decimal(10), unit=ast.Unit.SECONDS),
        max=ast.Quantity(value=Decimal(1), unit=ast.Unit.HOURS),
    )
    assert kafka == ast.KafkaClause()
    assert isinstance(threshold, ast.FrameClause) and threshold.rule == "threshold"
    assert threshold.condition is not None and threshold.condition.sql == "speed < 40"
    assert threshold.minimum == ast.Quantity(value=Decimal(3), unit=ast.Unit.ROWS)
    assert delta == ast.FrameClause(rule="delta", delta=ast.Quantity(value=Decimal("2.5")), on=ast.Name(text="speed"))
    assert isinstance(delta_expr, ast.FrameClause) and isinstance(delta_expr.on, ast.Expr)
    assert delta_expr.on.sql == "a - b"
    assert isinstance(aggregate, ast.FrameClause) and aggregate.rule == "aggregate"
    assert aggregate.condition is not None and aggregate.condition.sql == "SUM(v) > 100 OR COUNT(*) >= 9"
    text = "SELECT x FROM s [FRAME THRESHOLD (speed < 40) MIN 3 ROWS]"
    (clause,) = _select(text).window.clauses  # type: ignore[union-attr]
    assert text[clause.span.start : clause.span.end] == "FRAME THRESHOLD (speed < 40) MIN 3 ROWS"
    assert isinstance(clause, ast.FrameClause) and clause.condition is not None
    assert text[clause.condition.span.start : clause.condition.span.end] == "speed < 40"


def test_data_driven_keywords_stay_names_elsewhere() -> None:
    """min, max, gap, on, frame, session … remain ordinary column and function names outside the brackets."""
    select = _select(
        "SELECT min(gap) AS lo, max(delta) AS hi, session, frame, threshold FROM s [SESSION GAP 1 MINUTE PATTR session]"
        " WHERE threshold > 0 AND aggregate IS NULL GROUP BY frame, threshold"
    )
    assert [item.expr.sql for item in select.items] == ["MIN(gap)", "MAX(delta)", "session", "frame", "threshold"]
    assert select.window is not None
    assert select.window.clauses[1] == ast.PattrClause(attrs=(ast.Name(text="session"),))


def test_align_end_and_bare_string() -> None:
    select = _select("SELECT x FROM s [ALIGN END '2024-01-01']")
    assert select.window is not None
    assert select.window.clauses == (ast.AlignClause(value="2024-01-01", anchor="end"),)


@pytest.mark.parametrize(
    ("word", "unit"),
    [
        ("ROW", ast.Unit.ROWS),
        ("rows", ast.Unit.ROWS),
        ("Microsecond", ast.Unit.MICROSECONDS),
        ("MILLISECONDS", ast.Unit.MILLISECONDS),
        ("second", ast.Unit.SECONDS),
        ("MINUTE", ast.Unit.MINUTES),
        ("hours", ast.Unit.HOURS),
        ("DAY", ast.Unit.DAYS),
        ("weeks", ast.Unit.WEEKS),
    ],
)
def test_units_singular_plural_any_case(word: str, unit: ast.Unit) -> None:
    select = _select(f"SELECT x FROM s [RANGE 2 {word}]")
    assert select.window is not None
    assert select.window.clauses == (ast.RangeClause(quantity=ast.Quantity(value=Decimal(2), unit=unit)),)


def test_create_stream_details() -> None:
    (create,) = wql.parse(
        "CREATE STREAM s (a VARCHAR, b LONG, c DECIMAL, d DECIMAL(5), e decimal(7, 2), f bool, g INTEGER)\n"
        "  FROM 'dir/it''s\\n.csv' FORMAT JSON OPTIONS (header = true, sep = ';', \"x y\" = -1.5e1,"
        " spark.sql.a = FALSE)\n  ROW_NUM n"
    ).statements
    assert create == ast.CreateStream(
        name=ast.Name(text="s"),
        columns=(
            ast.ColumnDef(name=ast.Name(text="a"), type=ast.TypeName(name="STRING")),
            ast.ColumnDef(name=ast.Name(text="b"), type=ast.TypeName(name="BIGINT")),
            ast.ColumnDef(name=ast.Name(text="c"), type=ast.TypeName(name="DECIMAL", params=(10, 0))),
            ast.ColumnDef(name=ast.Name(text="d"), type=ast.TypeName(name="DECIMAL", params=(5,))),
            ast.ColumnDef(name=ast.Name(text="e"), type=ast.TypeName(name="DECIMAL", params=(7, 2))),
            ast.ColumnDef(name=ast.Name(text="f"), type=ast.TypeName(name="BOOLEAN")),
            ast.ColumnDef(name=ast.Name(text="g"), type=ast.TypeName(name="INT")),
        ),
        path="dir/it's\n.csv",
        format="json",
        options=(
            ast.Option(key="header", value=True),
            ast.Option(key="sep", value=";"),
            ast.Option(key="x y", value=Decimal("-15")),
            ast.Option(key="spark.sql.a", value=False),
        ),
        row_num=ast.Name(text="n"),
    )


def test_create_stream_from_a_table() -> None:
    """FROM TABLE names a temp view or a catalog table, in parts; the column list may be left out. TABLE is a
    keyword only there: a stream or a column may be named table."""
    (create,) = wql.parse("CREATE STREAM s FROM TABLE cat.`my db`.events OPTIONS (a = 1)").statements
    assert create == ast.CreateStream(
        name=ast.Name(text="s"),
        columns=(),
        table=(ast.Name(text="cat"), ast.Name(text="my db"), ast.Name(text="events")),
        options=(ast.Option(key="a", value=Decimal(1)),),
    )
    assert isinstance(create, ast.CreateStream) and create.path_span is not None
    (create, select) = wql.parse(
        "CREATE STREAM table (table INT) FROM TABLE table; SELECT table FROM table [RANGE 2 ROWS]"
    ).statements
    assert isinstance(create, ast.CreateStream) and create.table == (ast.Name(text="table"),)
    assert isinstance(select, ast.Select) and select.stream.text == "table"


def test_select_clauses() -> None:
    select = _select(
        "SELECT a, count(*) AS n FROM s WHERE a > 1 AND b GROUP BY a, b HAVING count(*) > 2"
        " ORDER BY a ASC, n DESC NULLS FIRST LIMIT 10 EMIT EMPTY"
    )
    assert [i.expr.sql for i in select.items] == ["a", "COUNT(*)"]
    assert [i.alias for i in select.items] == [None, ast.Name(text="n")]
    assert select.where is not None and select.where.sql == "a > 1 AND b"
    assert [e.sql for e in select.group_by] == ["a", "b"]
    assert select.having is not None and select.having.sql == "COUNT(*) > 2"
    assert [(o.expr.sql, o.descending, o.nulls) for o in select.order_by] == [("a", False, None), ("n", True, "first")]
    assert select.limit == 10
    assert select.emit_empty is True
    (explain,) = wql.parse("EXPLAIN SELECT a FROM s").statements
    assert explain == ast.Explain(select=_select("SELECT a FROM s"))


def test_comments_anywhere() -> None:
    plain = wql.parse(
        "CREATE STREAM s (a INT) FROM 'p' FORMAT csv;"
        "SELECT a, max(b) AS m FROM s [RANGE 5 MINUTES SLIDE 1 MINUTE] WHERE a > 1 ORDER BY a DESC"
    )
    commented = wql.parse(
        "/* lead */ CREATE -- c1\n STREAM /* c2 */ s ( /* c3 */ a -- c4\n INT /**/) FROM /* c5 */ 'p'"
        " FORMAT /* ' not a string */ csv -- c6 ;\n;\n"
        "-- between statements\n"
        "SELECT /* c7 */ a /* c8 */, max( /* c9 */ b ) -- c10\n AS /* c11 */ m FROM -- c12\n s"
        " [ /* c13 */ RANGE -- c14\n 5 /* c15 */ MINUTES SLIDE 1 /* ] */ MINUTE /* c16 */ ]"
        " WHERE /* c17 */ a /* c18 */ > -- c19\n 1 ORDER /* c20 */ BY a /* c21 */ DESC -- end"
    )
    assert commented == plain
    assert wql.parse("/* multi\nline\ncomment */") == ast.Script(statements=())


def test_keywords_are_case_insensitive() -> None:
    upper = wql.parse(
        "CREATE STREAM s (a INT) FROM 'p' FORMAT CSV OPTIONS (h = TRUE) ROW_NUM r;"
        "EXPLAIN SELECT a AS b FROM s [RANGE UNBOUNDED SLIDE 1 MINUTE WATTR ts ALIGN START TIMESTAMP '1'"
        " SLACK 1 SECOND GENEROUS] WHERE a > 1 GROUP BY a HAVING a > 2 ORDER BY a DESC NULLS LAST LIMIT 1 EMIT EMPTY"
    )
    mixed = wql.parse(
        "create Stream s (a int) from 'p' format csv options (h = true) row_num r;"
        "Explain sElEcT a as b fRoM s [range unbounded Slide 1 minute wattr ts align start timestamp '1'"
        " slack 1 second generous] where a > 1 group by a having a > 2 order by a desc nulls last limit 1 emit empty"
    )
    assert upper == mixed
    assert len(upper.statements) == 2


def test_names_keep_their_case() -> None:
    assert _select("SELECT a FROM Traffic").stream.text == "Traffic"
    assert _select("SELECT a FROM Traffic").stream.key == "traffic"
    assert wql.parse("SELECT a FROM Traffic") != wql.parse("SELECT a FROM traffic")


@pytest.mark.parametrize(
    "text",
    ["SELECT x FROM s", "SELECT x FROM s;", "SELECT x FROM s ;;\n", ";SELECT x FROM s", "\n  SELECT x FROM s -- c\n"],
)
def test_final_semicolon_is_optional(text: str) -> None:
    assert wql.parse(text) == ast.Script(statements=(_select("SELECT x FROM s"),))


def test_several_statements() -> None:
    script = wql.parse("CREATE STREAM s (a INT);\nSELECT a FROM s;\n\nEXPLAIN SELECT a FROM s;;SELECT b FROM t")
    assert [type(s).__name__ for s in script.statements] == ["CreateStream", "Select", "Explain", "Select"]
    assert [s.span.line for s in script.statements] == [1, 2, 4, 4]


@pytest.mark.parametrize("text", ["", "   \n\t ", ";", ";;\n;", "-- only a comment", "/* */", "-- a\n/* b */ ;"])
def test_empty_input_gives_an_empty_script(text: str) -> None:
    assert wql.parse(text) == ast.Script(statements=())


def test_parse_statement_requires_exactly_one() -> None:
    from wql.grammar.parser import parse_statement

    assert parse_statement("SELECT a FROM s;") == _select("SELECT a FROM s")
    with pytest.raises(wql.WQLSyntaxError, match="expected one statement, found 2"):
        parse_statement("SELECT a FROM s; SELECT b FROM s")
    with pytest.raises(wql.WQLSyntaxError, match="found 0"):
        parse_statement("-- nothing")


@pytest.mark.parametrize(
    ("text", "limit"),
    [("SELECT x FROM s LIMIT 0", 0), ("SELECT x FROM s LIMIT 1e3", 1000), ("SELECT x FROM s LIMIT 7.0", 7)],
)
def test_limit_values(text: str, limit: int) -> None:
    assert _select(text).limit == limit


# ------------------------------------------------------------------ errors


@dataclass(frozen=True)
class Bad:
    """A query that must fail: where, with what message, caret over what, and which hint."""

    id: str
    text: str
    line: int
    column: int
    message: str  # a substring of the message
    marked: str | None = None  # the source text under the carets (span on one line)
    hint: str | None = None  # a substring of the hint; None: not checked
    kind: type[WQLError] = wql.WQLSyntaxError


BAD: list[Bad] = [
    Bad("table-string", "CREATE STREAM s FROM TABLE 'events'", 1, 28, "unexpected", "'events'"),
    Bad("table-twice", "CREATE STREAM s FROM TABLE t FROM 'x.csv'", 1, 30, "FROM is given twice", "FROM 'x.csv'"),
    Bad(
        "table-format",
        "CREATE STREAM s FROM TABLE t FORMAT parquet",
        1,
        30,
        "FORMAT does not apply to FROM TABLE",
        "FORMAT parquet",
        "leave FORMAT out",
    ),
    Bad("table-dots", "CREATE STREAM s FROM TABLE db..t", 1, 31, "unexpected '.'", "."),
    Bad("select-typo", "SELEC x FROM s", 1, 1, "unexpected 'SELEC'", "SELEC", "did you mean 'SELECT'?"),
    Bad("create-typo", "CREATE STREM s (a INT)", 1, 8, "unexpected 'STREM'; expected STREAM", "STREM", "'STREAM'"),
    Bad("where-typo", "SELECT x FROM s WHRE x > 1", 1, 17, "unexpected 'WHRE'", "WHRE", "did you mean 'WHERE'?"),
    Bad(
        "order-typo",
        "SELECT x\nFROM s [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts]\nORDR BY x",
        3,
        1,
        "unexpected 'ORDR'",
        "ORDR",
        "did you mean 'ORDER'?",
    ),
    Bad("clause-typo", "SELECT x FROM s [RANG 5 MINUTES]", 1, 18, "unexpected 'RANG'", "RANG", "'RANGE'"),
    Bad("slack-typo", "SELECT x FROM s [RANGE 5 MINUTES SLAK 1 SECOND]", 1, 34, "'SLAK'", "SLAK", "'SLACK'"),
    Bad("unit-typo", "SELECT x FROM s [RANGE 5 MINUTS]", 1, 26, "unexpected 'MINUTS'", "MINUTS", "'MINUTES'"),
    Bad(
        "unit-typo-line-2",
        "SELECT x\n  FROM s [RANGE 10 SECONDS SLIDE 2 SECNDS]",
        2,
        36,
        "unexpected 'SECNDS'",
        "SECNDS",
        "did you mean 'SECONDS'?",
    ),
    Bad(
        "unit-without-number",
        "SELECT x FROM s [RANGE MINUTES]",
        1,
        24,
        "unexpected 'MINUTES'",
        "MINUTES",
        "a unit follows a number",
    ),
    Bad(
        "clause-outside-brackets",
        "SELECT x FROM s RANGE 5 MINUTES",
        1,
        17,
        "unexpected 'RANGE'",
        "RANGE",
        "window clauses go inside the brackets",
    ),
    Bad(
        "clause-outside-brackets-multiline",
        "SELECT x\nFROM s\n  SLIDE 1 MINUTE",
        3,
        3,
        "unexpected 'SLIDE'",
        "SLIDE",
        "window clauses go inside the brackets",
    ),
    Bad(
        "session-without-gap",
        "SELECT x FROM s [SESSION 10 SECONDS]",
        1,
        26,
        "unexpected '10'; expected GAP",
        "10",
    ),
    Bad(
        "threshold-without-parentheses",
        "SELECT x FROM s [FRAME THRESHOLD speed < 40]",
        1,
        34,
        "unexpected 'speed'",
        "speed",
    ),
    Bad("frame-kind-typo", "SELECT x FROM s [FRAME TRESHOLD (a > 1)]", 1, 24, "'TRESHOLD'", "TRESHOLD", "'THRESHOLD'"),
    Bad("delta-without-on", "SELECT x FROM s [FRAME DELTA 5 speed]", 1, 32, "unexpected 'speed'", "speed", "ON column"),
    Bad(
        "alias-without-as",
        "SELECT max(x) m FROM s",
        1,
        8,
        "an alias needs AS: found 'm'",
        "max(x) m",
        "write 'MAX(x) AS m'",
    ),
    Bad(
        "alias-without-as-line-2",
        "SELECT\n  max(x) m,\n  y\nFROM s",
        2,
        3,
        "an alias needs AS",
        "max(x) m",
        "write 'MAX(x) AS m'",
    ),
    Bad(
        "missing-paren-in-create",
        "CREATE STREAM s (a INT, b INT FROM 'x'",
        1,
        31,
        "unexpected 'FROM'",
        "FROM",
        "a ')' is missing",
    ),
    Bad("three-wattr-attrs", "SELECT x FROM s [WATTR (a, b, c)]", 1, 29, "unexpected ','; expected ')'", ","),
    Bad(
        "missing-paren-in-expression",
        "SELECT a,\n  max(b +\n  * c) AS m\nFROM s",
        3,
        5,
        "missing ')'",
        "c",
    ),
    Bad("unterminated-string", "SELECT 'abc FROM s", 1, 8, "unterminated string", "'abc FROM s", "close it with '"),
    Bad(
        "unterminated-string-line-3",
        'SELECT x\nFROM s\nWHERE y = "abc\n',
        3,
        11,
        "unterminated string",
        '"abc',
        'close it with "',
    ),
    Bad("unterminated-quoted-name", "SELECT `x FROM s", 1, 8, "unterminated `quoted name`", "`"),
    Bad("bad-character", "SELECT x # y FROM s", 1, 10, "unexpected character '#'", "#"),
    Bad(
        "bad-type",
        "CREATE STREAM s (a INT, b STRNG)",
        1,
        27,
        "unknown type 'STRNG'",
        "STRNG",
        "did you mean 'STRING'?",
        wql.WQLTypeError,
    ),
    Bad(
        "bad-type-no-match",
        "CREATE STREAM s (\n  a INT,\n  b BLOB\n)",
        3,
        5,
        "unknown type 'BLOB'",
        "BLOB",
        "use one of BIGINT, BOOLEAN, DATE, DECIMAL",
        wql.WQLTypeError,
    ),
    Bad(
        "type-with-params",
        "CREATE STREAM s (a INT(3))",
        1,
        20,
        "type INT takes no parameters",
        "INT(3)",
        None,
        wql.WQLTypeError,
    ),
    Bad(
        "fractional-type-param",
        "CREATE STREAM s (a DECIMAL(3.5, 1))",
        1,
        28,
        "a type parameter must be a whole number ≥ 0, not 3.5",
        "3.5",
    ),
    Bad("bad-format", "CREATE STREAM s (a INT) FORMAT csvv", 1, 32, "unknown format 'csvv'", "csvv", "'csv'"),
    Bad(
        "unknown-format",
        "CREATE STREAM s (a INT)\n  FORMAT xml",
        2,
        10,
        "unknown format 'xml'",
        "xml",
        "use one of csv, json, parquet",
    ),
    Bad(
        "duplicate-from",
        "CREATE STREAM s (a INT) FROM 'a' FROM 'b'",
        1,
        34,
        "given twice",
        "FROM 'b'",
    ),
    Bad(
        "duplicate-options",
        "CREATE STREAM s (a INT) OPTIONS (a=1) OPTIONS (b=2)",
        1,
        39,
        "OPTIONS is given twice",
        "OPTIONS (b=2)",
    ),
    Bad(
        "duplicate-format",
        "CREATE STREAM s (a INT)\n  FORMAT csv\n  FORMAT json",
        3,
        3,
        "FORMAT is given twice",
        "FORMAT json",
    ),
    Bad("duplicate-row-num", "CREATE STREAM s (a INT) ROW_NUM r ROW_NUM q", 1, 35, "given twice", "ROW_NUM q"),
    Bad("bad-option-value", "CREATE STREAM s (a INT) OPTIONS (header = yes)", 1, 43, "unexpected 'yes'", "yes"),
    Bad("negative-limit", "SELECT x FROM s LIMIT -1", 1, 23, "LIMIT must be a whole number ≥ 0, not -1", "-1"),
    Bad("fractional-limit", "SELECT x FROM s\nLIMIT 1.5", 2, 7, "LIMIT must be a whole number", "1.5"),
    Bad(
        "unclosed-bracket",
        "SELECT x FROM s [RANGE 5 MINUTES",
        1,
        32,
        "unexpected end of input",
        "S",
        "close the window spec with ']'",
    ),
    Bad(
        "unclosed-bracket-then-where",
        "SELECT x\nFROM s [RANGE 5 MINUTES\nWHERE x > 1",
        3,
        1,
        "unexpected 'WHERE'; expected ']'",
        "WHERE",
    ),
    Bad("two-windows", "SELECT x FROM s [RANGE 5 MINUTES] [SLIDE 1 MINUTE]", 1, 35, "unexpected '['", "["),
    Bad("empty-slide", "SELECT x FROM s [SLIDE]", 1, 23, "unexpected ']'; expected KAFKA, a number", "]"),
    Bad("bad-align-anchor", "SELECT x FROM s [ALIGN MIDDLE 5]", 1, 24, "unexpected 'MIDDLE'", "MIDDLE"),
    Bad("bad-nulls", "SELECT x FROM s ORDER BY x DESC NULLS MIDDLE", 1, 39, "expected FIRST, LAST", "MIDDLE"),
    Bad("group-without-by", "SELECT x FROM s GROUP x", 1, 23, "unexpected 'x'; expected BY", "x"),
    Bad(
        "missing-semicolon",
        "SELECT x FROM s\nSELECT y FROM t",
        2,
        1,
        "unexpected 'SELECT'",
        "SELECT",
        "end the previous statement with ';'",
    ),
    Bad("explain-create", "EXPLAIN CREATE STREAM s (a INT)", 1, 9, "unexpected 'CREATE'; expected SELECT", "CREATE"),
    Bad("missing-stream", "SELECT x FROM", 1, 13, "unexpected end of input", "M"),
    Bad("emit-without-empty", "SELECT x FROM s EMIT", 1, 20, "expected CHANGES, EMPTY, FINAL", "T"),
    Bad(
        "incomplete-expression",
        "SELECT a\nFROM s\nWHERE a >\n  AND b",
        4,
        3,
        "incomplete expression: an operand is missing",
        "AND",
    ),
    Bad("dangling-operator", "SELECT x FROM s WHERE x >", 1, 25, "incomplete expression", ">"),
]


def _excerpt(rendered: str, line: int) -> tuple[str, int, str]:
    """From a rendering: the quoted source line, the caret start column and the caret run."""
    lines = rendered.split("\n")
    prefix = f"{line} | "
    (index,) = [i for i, text in enumerate(lines) if text.startswith(prefix)]
    source_line = lines[index][len(prefix) :]
    gutter = " " * len(str(line)) + " | "
    caret_line = lines[index + 1]
    assert caret_line.startswith(gutter)
    marks = caret_line[len(gutter) :]
    column = len(marks) - len(marks.lstrip(" ")) + 1
    return source_line, column, marks.strip(" ")


@pytest.mark.parametrize("case", BAD, ids=lambda c: c.id)
def test_error_position_message_and_hint(case: Bad) -> None:
    with pytest.raises(WQLError) as info:
        wql.parse(case.text)
    error = info.value
    assert type(error) is case.kind, error.render()
    assert (error.line, error.column) == (case.line, case.column), error.render()
    assert case.message in error.message
    assert error.source == case.text
    assert error.span is not None
    if case.marked is not None:
        assert case.text[error.span.start : error.span.end] == case.marked
    if case.hint is not None:
        assert error.hint is not None and case.hint in error.hint, error.render()
    rendered = error.render()
    assert rendered.startswith(f"{error.kind}: {error.message}\n  --> <query>:{case.line}:{case.column}\n")
    source_line, column, marks = _excerpt(rendered, case.line)
    assert source_line == case.text.split("\n")[case.line - 1]
    assert column == case.column
    assert marks and set(marks) == {"^"}
    if case.marked is not None and "\n" not in case.marked:
        assert len(marks) == len(case.marked)
    if error.hint:
        assert rendered.endswith(f"  = hint: {error.hint}")
    assert str(error).endswith(f"(line {case.line}, column {case.column})")


def test_error_corpus_is_large_and_distinct() -> None:
    assert len(BAD) >= 20
    assert len({c.text for c in BAD}) == len(BAD)
    assert len({c.id for c in BAD}) == len(BAD)


def test_error_carries_path() -> None:
    with pytest.raises(wql.WQLSyntaxError) as info:
        wql.parse("SELECT x\nFROM s [RANG 5 ROWS]", "queries/q.wql")
    assert info.value.path == "queries/q.wql"
    assert "  --> queries/q.wql:2:9\n" in info.value.render()


@pytest.mark.parametrize("case", BAD[::5], ids=lambda c: c.id)
def test_check_reports_the_same_error(case: Bad) -> None:
    (error,) = wql.check(case.text)
    assert type(error) is case.kind
    assert (error.line, error.column) == (case.line, case.column)
    assert case.message in error.message


# ------------------------------------------------------------------ regressions (bugs found by these tests, now fixed)


@pytest.mark.parametrize("text", ["SELECT max(x FROM s", "SELECT a FROM s WHERE a IN (1, 2"])
def test_missing_paren_in_expression_hint(text: str) -> None:
    with pytest.raises(wql.WQLSyntaxError) as info:
        wql.parse(text)
    assert info.value.hint is not None
    assert "')'" in info.value.hint
    assert "window spec" not in info.value.hint


def test_empty_select_list_points_at_from() -> None:
    with pytest.raises(wql.WQLSyntaxError) as info:
        wql.parse("SELECT FROM s")
    assert (info.value.line, info.value.column) == (1, 8)


def test_no_unit_hint_for_where() -> None:
    with pytest.raises(wql.WQLSyntaxError) as info:
        wql.parse("SELECT x FORM s WHERE x > 1")
    assert "WEEKS" not in (info.value.hint or "")


def test_end_of_input_error_is_not_inside_a_comment() -> None:
    text = "SELECT x FROM s [RANGE 5 MINUTES  -- the window\n"
    with pytest.raises(wql.WQLSyntaxError) as info:
        wql.parse(text)
    assert info.value.span is not None
    assert info.value.span.start < text.index("--")


@pytest.mark.parametrize(
    "text",
    [
        "SELECTx FROM s",
        "CREATE STREAMs (a INT)",
        "CREATESTREAM s (a INT)",
        "EXPLAINSELECT x FROM s",
        "SELECT x FROM s ORDER BYx",
        "SELECT x FROM s [RANGE5 MINUTES]",
    ],
)
def test_keywords_need_a_word_boundary(text: str) -> None:
    with pytest.raises(wql.WQLSyntaxError):
        wql.parse(text)


@pytest.mark.parametrize(
    ("text", "column"),
    [("CREATE STREAM s (a INT) FORMATT csv", 25), ("SELECT x FROM s [RANGEE 5 MINUTES]", 18)],
)
def test_keyword_with_extra_letters_is_reported_where_it_starts(text: str, column: int) -> None:
    with pytest.raises(wql.WQLSyntaxError) as info:
        wql.parse(text)
    assert info.value.column == column


@pytest.mark.parametrize("separator", ["\r", "\x0c", "\x0b", "\x85", "\u2028", "\x1c"])
def test_render_quotes_the_line_of_the_span(separator: str) -> None:
    text = f"-- a{separator}b\nSELECT x FROM s;\nSELEC y FROM s"
    with pytest.raises(wql.WQLSyntaxError) as info:
        wql.parse(text)
    assert (info.value.line, info.value.column) == (3, 1)
    source_line, column, _ = _excerpt(info.value.render(), 3)
    assert source_line == "SELEC y FROM s"
    assert column == 1


def test_huge_limit_is_rejected_quickly() -> None:
    code = "import wql\ntry:\n    wql.parse('SELECT x FROM s LIMIT 1e3000000')\nexcept wql.WQLError:\n    pass\n"
    try:
        subprocess.run([sys.executable, "-c", code], timeout=10, check=True, capture_output=True)
    except subprocess.TimeoutExpired:
        pytest.fail("parsing 'LIMIT 1e3000000' did not finish in 10 s")


# ------------------------------------------------------------------ the shipped parser tables


def test_the_parser_comes_from_the_shipped_tables_without_building_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the LALR tables took lark 1.5-2 s at every start of `wql`; the package ships them (`make
    grammar`), and they must be the ones this grammar and this lark give."""
    from importlib import resources

    import lark

    from wql.grammar import parser

    shipped = resources.files("wql.grammar").joinpath(parser.TABLES)
    assert shipped.is_file(), "the parser tables are missing: run `make grammar`"
    with shipped.open("rb") as handle:
        digest = handle.readline().decode().strip()
    assert digest == parser.tables_digest(parser.grammar_text()), "wql.lark changed: run `make grammar`"

    def no_building(*args: object, **kwargs: object) -> None:
        raise AssertionError("the parser was built from the grammar")

    monkeypatch.setattr(lark.Lark, "__init__", no_building)
    parser._lark.cache_clear()
    try:
        for path in EXAMPLE_FILES:
            assert wql.parse(path.read_text(), str(path)).statements
    finally:
        parser._lark.cache_clear()


def test_stale_tables_are_not_used_the_grammar_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables built from another grammar (wql.lark edited without `make grammar`) or by another lark are
    passed over: the parser is built from the grammar, and parses as the shipped one does."""
    import lark

    from wql.grammar import parser

    def no_loading(*args: object, **kwargs: object) -> None:
        raise AssertionError("stale tables were loaded")

    expected = {path: dump(wql.parse(path.read_text(), str(path))) for path in EXAMPLE_FILES}
    monkeypatch.setattr(parser, "tables_digest", lambda grammar: "another grammar")
    monkeypatch.setattr(lark.Lark, "load", no_loading)
    parser._lark.cache_clear()
    try:
        assert {path: dump(wql.parse(path.read_text(), str(path))) for path in EXAMPLE_FILES} == expected
    finally:
        parser._lark.cache_clear()
