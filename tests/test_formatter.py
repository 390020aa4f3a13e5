"""The formatter: canonical text that re-parses to the same tree, for the examples and generated trees."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import wql
from tests.conftest import DEEP, EXAMPLES
from wql.grammar import ast
from wql.grammar.errors import Span
from wql.grammar.expressions import parse_expression
from wql.grammar.formatter import (
    KEYWORDS,
    format_name,
    format_quantity,
    format_script,
    format_statement,
    format_string,
)

EXAMPLE_FILES: list[Path] = sorted(EXAMPLES.rglob("*.wql"))


def roundtrip(script: ast.Script) -> str:
    """Format, re-parse and compare; returns the formatted text."""
    text = format_script(script)
    try:
        again = wql.parse(text)
    except wql.WQLError as error:
        raise AssertionError(f"formatted text does not parse:\n{text}\n{error.render()}") from None
    assert again == script, f"formatted text parses to another tree:\n{text}"
    return text


# ------------------------------------------------------------------ examples


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_examples_roundtrip(path: Path) -> None:
    script = wql.parse(path.read_text(encoding="utf-8"))
    assert script.statements
    roundtrip(script)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_examples_format_is_idempotent(path: Path) -> None:
    once = wql.format(path.read_text(encoding="utf-8"))
    assert wql.format(once) == once
    assert format_script(wql.parse(once)) == once


def test_format_of_an_example() -> None:
    text = (EXAMPLES / "traffic.wql").read_text(encoding="utf-8")
    assert wql.format(text) == (
        "CREATE STREAM traffic (seg_id STRING, speed DOUBLE, ts TIMESTAMP)\n"
        "  FROM 'data/traffic.csv'\n"
        "  FORMAT csv\n"
        "  OPTIONS (header = true);\n"
        "SELECT seg_id, COUNT(*) AS readings, ROUND(AVG(speed), 1) AS avg_speed, MIN(speed) AS min_speed,"
        " MAX(speed) AS max_speed\n"
        "FROM traffic [RANGE 10 MINUTES SLIDE 1 MINUTE WATTR ts]\n"
        "WHERE speed > 0\n"
        "GROUP BY seg_id\n"
        "HAVING COUNT(*) >= 5\n"
        "ORDER BY window_start, seg_id;\n"
    )


def test_format_statement_of_each_kind() -> None:
    create, select, explain = wql.parse(
        "create stream s (a int, `b c` decimal) row_num r;"
        "select a as `from` from s [slack 1 minute consistent align start 5 rows rattr a sattr rank(b)]"
        " order by a desc nulls first, b nulls last limit 0 emit empty;"
        "explain select a from `end` [range unbounded slide kafka wattr (x, `y`) pattr p, q]"
    ).statements
    assert format_statement(create) == "CREATE STREAM s (a INT, `b c` DECIMAL(10, 0))\n  ROW_NUM r"
    assert format_statement(select) == (
        "SELECT a AS `from`\n"
        "FROM s [SLACK 1 MINUTE CONSISTENT ALIGN START 5 ROWS RATTR a SATTR RANK(b)]\n"
        "ORDER BY a DESC NULLS FIRST, b NULLS LAST\n"
        "LIMIT 0\n"
        "EMIT EMPTY"
    )
    assert format_statement(explain) == (
        "EXPLAIN SELECT a\nFROM `end` [RANGE UNBOUNDED SLIDE KAFKA WATTR (x, y) PATTR p, q]"
    )


def test_empty_script() -> None:
    assert format_script(ast.Script(statements=())) == ""
    assert wql.format("-- nothing\n;") == ""


@pytest.mark.parametrize(
    ("name", "formatted"),
    [
        ("speed", "speed"),
        ("_x9", "_x9"),
        ("row_num", "row_num"),
        ("range", "`range`"),
        ("Select", "`Select`"),
        ("minute", "`minute`"),
        ("ROWS", "`ROWS`"),
        ("a b", "`a b`"),
        ("a`b", "`a``b`"),
        ("9lives", "`9lives`"),
        ("é", "`é`"),
        ("a.b", "`a.b`"),
    ],
)
def test_format_name(name: str, formatted: str) -> None:
    assert format_name(ast.Name(text=name)) == formatted


def test_every_keyword_is_quoted() -> None:
    for word in KEYWORDS:
        assert format_name(word) == f"`{word}`"
        assert format_name(word.lower()) == f"`{word.lower()}`"


@pytest.mark.parametrize(
    ("value", "formatted"),
    [
        ("plain", "'plain'"),
        ("it's", "'it\\'s'"),
        ("back\\slash", "'back\\\\slash'"),
        ("two\nlines\ttab\rcr", "'two\\nlines\\ttab\\rcr'"),
        ('dq"', "'dq\"'"),
        ("\x00\x1f", "'\\u0000\\u001f'"),
        ("\ud800", "'\\ud800'"),
        ("é😀", "'é😀'"),
    ],
)
def test_format_string(value: str, formatted: str) -> None:
    assert format_string(value) == formatted
    (create,) = wql.parse(f"CREATE STREAM s (a INT) FROM {formatted}").statements
    assert isinstance(create, ast.CreateStream)
    assert create.path == value


@pytest.mark.parametrize(
    ("quantity", "formatted"),
    [
        (ast.Quantity(value=Decimal(1), unit=ast.Unit.MINUTES), "1 MINUTE"),
        (ast.Quantity(value=Decimal("1.0"), unit=ast.Unit.ROWS), "1.0 ROW"),
        (ast.Quantity(value=Decimal(2), unit=ast.Unit.ROWS), "2 ROWS"),
        (ast.Quantity(value=Decimal("0.5"), unit=ast.Unit.HOURS), "0.5 HOURS"),
        (ast.Quantity(value=Decimal("-1"), unit=ast.Unit.DAYS), "-1 DAYS"),
        (ast.Quantity(value=Decimal("1E+3")), "1000"),
        (ast.Quantity(value=Decimal("1E-7"), unit=ast.Unit.SECONDS), "0.0000001 SECONDS"),
    ],
)
def test_format_quantity(quantity: ast.Quantity, formatted: str) -> None:
    assert format_quantity(quantity) == formatted


@pytest.mark.parametrize(
    "text",
    [
        "SELECT `select`, `from` + 1 AS `as` FROM `from`",
        "SELECT range, minutes, start, `end`, first, last FROM s ORDER BY first NULLS FIRST",
        "SELECT a + `emit` AS x FROM s WHERE a > `limit` ORDER BY a + `asc` DESC, `nulls`",
        "SELECT 'it''s', \"dq\", 'a\\\\b', 'multi\nline' FROM s",
        "SELECT CASE WHEN a > 1 THEN 'x' ELSE NULL END AS c FROM s",
        "SELECT a[0], m['k'], s.f, a::INT, transform(a, x -> x + 1) FROM s",
        "SELECT x FROM s WHERE (a IS DISTINCT FROM b) AND (c IS NOT DISTINCT FROM d)",
        "SELECT x FROM s [ALIGN '2024'] ",
        "SELECT x FROM s [RANGE 1.50 MINUTES SLIDE 1e2 ROWS ALIGN END -3 SLACK +4]",
        "CREATE STREAM s (a INT) OPTIONS (row_num = 1, minutes = true, 'select' = 'x', a.b.c = -1.5, 'x y' = '',"
        " \"q\" = 1e5, '' = 'x\\ty')",
        "CREATE STREAM s (row_num INT, minutes INT, `select` INT, ts TIMESTAMP) ROW_NUM row_num",
        "CREATE STREAM s (a INT) FROM 'a\\'b\\nc\\u00e9\\\\'",
        "CREATE STREAM s FROM TABLE events",
        "CREATE STREAM s (a INT, ts TIMESTAMP) FROM TABLE cat.`my db`.`from` OPTIONS (x = 1) ROW_NUM a",
        "CREATE STREAM `table` FROM TABLE `table`.`a``b`",
        "SELECT count(*) AS n FROM s [SESSION GAP 10 SECONDS WATTR ts PATTR user]",
        "SELECT count(*) AS n FROM s [SESSION GAP 5 MINUTES MAX 1.5 HOURS KAFKA WATTR ts PATTR `min`, `on`]",
        "SELECT min(speed) AS lo FROM s [FRAME THRESHOLD (speed < 40 AND `gap` IS NOT NULL) MIN 3 ROWS PATTR seg]",
        "SELECT x FROM s [FRAME THRESHOLD ((speed)) MIN 2 MINUTES]",
        "SELECT x FROM s [FRAME DELTA 0.5 ON `max`]",
        "SELECT x FROM s [FRAME DELTA 5 ON (abs(a - b) * 2) WATTR row_num]",
        "SELECT x FROM s [FRAME AGGREGATE (sum(v) > 100 OR NOT count(*) < 3) WATTR ts]",
    ],
)
def test_tricky_texts_roundtrip(text: str) -> None:
    formatted = roundtrip(wql.parse(text))
    assert wql.format(formatted) == formatted


@pytest.mark.parametrize(
    "text",
    ["SELECT x FROM s WHERE a <=> b", "SELECT a <=> b AS same FROM s", "SELECT x FROM s ORDER BY a <=> b"],
)
def test_null_safe_equality_roundtrips(text: str) -> None:
    roundtrip(wql.parse(text))


@pytest.mark.parametrize(
    "text",
    ["SELECT first(speed, true) AS f FROM s", "SELECT x FROM s HAVING last(speed, true) > 1"],
)
def test_ignore_nulls_roundtrips(text: str) -> None:
    roundtrip(wql.parse(text))


def test_at_time_zone_roundtrips() -> None:
    text = "SELECT ts AT TIME ZONE 'UTC' AS t FROM s"
    once = wql.format(text)
    assert wql.format(once) == once
    roundtrip(wql.parse(text))


# ------------------------------------------------------------------ generated trees

IDENTIFIER = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True)
# Words WQL (and units/ROW_NUM) might read as keywords; the formatter must quote what needs it.
KEYWORDISH = st.sampled_from(
    [*sorted(KEYWORDS), "range", "Minutes", "row", "ROWS", "weeks", "row_num", "ROW_NUM", "rank", "end", "select"]
)
ODD_TEXT = st.text(
    st.characters(codec="utf-8"),
    min_size=1,
    max_size=8,
)

names = st.one_of(
    IDENTIFIER, KEYWORDISH, ODD_TEXT, st.sampled_from(["a b", "a`b", "`", "é", "日本", "x\ny", "--", "/*"])
)
name_nodes = names.map(lambda text: ast.Name(text=text))

# Column references inside expressions: plain names, names WQL/sqlglot accept bare, and backquoted anything.
BARE_COLUMNS = st.sampled_from(["a", "b", "speed", "seg_id", "ts", "range", "start", "end", "first", "last", "rows"])
QUOTED_COLUMNS = names.map(lambda text: "`" + text.replace("`", "``") + "`")
STRING_LITERALS = st.text(max_size=6).map(lambda s: "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'")
NUMBERS = st.one_of(
    st.integers(min_value=0, max_value=10**12).map(str),
    st.decimals(min_value=0, max_value=10**6, places=3, allow_nan=False, allow_infinity=False).map(str),
)
FUNCTIONS = st.sampled_from(["max", "min", "sum", "avg", "abs", "round", "coalesce", "upper", "length"])


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "%"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(inner, st.sampled_from(["=", "<>", "!=", "<", "<=", ">", ">=", "=="]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda e: f"NOT ({e})"),
        inner.map(lambda e: f"-({e})"),
        st.tuples(FUNCTIONS, inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, inner).map(lambda t: f"coalesce({t[0]}, {t[1]})"),
        st.tuples(inner, inner, inner).map(lambda t: f"CASE WHEN {t[0]} THEN {t[1]} ELSE {t[2]} END"),
        st.tuples(inner, inner).map(lambda t: f"CASE WHEN {t[0]} THEN {t[1]} END"),
        inner.map(lambda e: f"({e} IS NOT NULL)"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} BETWEEN {t[1]} AND {t[2]})"),
        st.tuples(inner, st.lists(inner, min_size=1, max_size=3)).map(lambda t: f"({t[0]} IN ({', '.join(t[1])}))"),
        inner.map(lambda e: f"CAST({e} AS BIGINT)"),
    )


expression_texts = st.recursive(
    st.one_of(
        BARE_COLUMNS,
        QUOTED_COLUMNS,
        NUMBERS,
        STRING_LITERALS,
        st.just("count(*)"),
        st.just("NULL"),
        st.just("TRUE"),
        BARE_COLUMNS.map(lambda c: f"count(DISTINCT {c})"),
    ),
    _compound,
    max_leaves=6,
)


def to_expr(text: str) -> ast.Expr:
    return parse_expression(text, Span.of_text(text, 0, len(text)), text)


exprs = expression_texts.map(to_expr)

decimals = st.one_of(
    st.builds(lambda i, e: Decimal(i).scaleb(e), st.integers(-(10**6), 10**6), st.integers(-6, 6)),
    st.sampled_from([Decimal("-0"), Decimal("0.0"), Decimal("1E+3"), Decimal("1.50")]),
)
quantities = st.builds(ast.Quantity, value=decimals, unit=st.none() | st.sampled_from(list(ast.Unit)))
any_text = st.text(max_size=10) | st.sampled_from(["it's", "a\\b", "line\nbreak", "\\u0041", "''", '"', "\t\r\x00"])

window_clauses = st.one_of(
    st.builds(ast.RangeClause, quantity=st.none() | quantities),
    st.builds(ast.SlideClause, quantity=st.none() | quantities),
    st.builds(ast.WattrClause, attrs=st.lists(name_nodes, min_size=1, max_size=2).map(tuple)),
    st.builds(ast.RattrClause, attr=name_nodes),
    st.builds(ast.SattrClause, attr=name_nodes, rank=st.booleans()),
    st.builds(ast.PattrClause, attrs=st.lists(name_nodes, min_size=1, max_size=3).map(tuple)),
    st.builds(ast.AlignClause, value=quantities | any_text, anchor=st.sampled_from(["start", "end"])),
    st.builds(ast.SlackClause, quantity=quantities, mode=st.sampled_from([None, "consistent", "generous"])),
)
windows = st.builds(ast.WindowSpec, clauses=st.lists(window_clauses, min_size=1, max_size=5).map(tuple))

selects = st.builds(
    ast.Select,
    items=st.lists(st.builds(ast.SelectItem, expr=exprs, alias=st.none() | name_nodes), min_size=1, max_size=3).map(
        tuple
    ),
    stream=name_nodes,
    window=st.none() | windows,
    where=st.none() | exprs,
    group_by=st.lists(exprs, max_size=2).map(tuple),
    having=st.none() | exprs,
    order_by=st.lists(
        st.builds(ast.OrderItem, expr=exprs, descending=st.booleans(), nulls=st.sampled_from([None, "first", "last"])),
        max_size=2,
    ).map(tuple),
    limit=st.none() | st.integers(min_value=0, max_value=10**9),
    emit_empty=st.booleans(),
)

type_names = st.one_of(
    st.sampled_from(
        ["STRING", "INT", "BIGINT", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "BOOLEAN", "TIMESTAMP", "DATE"]
    ).map(lambda n: ast.TypeName(name=n)),
    st.lists(st.integers(0, 38), min_size=1, max_size=2).map(lambda p: ast.TypeName(name="DECIMAL", params=tuple(p))),
)
option_keys = st.one_of(
    IDENTIFIER,
    st.lists(IDENTIFIER | KEYWORDISH, min_size=2, max_size=3).map(".".join),
    any_text,
    KEYWORDISH,
)
options = st.builds(ast.Option, key=option_keys, value=any_text | decimals | st.booleans())
creates = st.builds(
    ast.CreateStream,
    name=name_nodes,
    columns=st.lists(st.builds(ast.ColumnDef, name=name_nodes, type=type_names), min_size=1, max_size=4).map(tuple),
    path=st.none() | any_text,
    format=st.sampled_from([None, "csv", "json", "parquet"]),
    options=st.lists(options, max_size=3).map(tuple),
    row_num=st.none() | name_nodes,
)
statements = st.one_of(creates, selects, selects.map(lambda s: ast.Explain(select=s)))
scripts = st.builds(ast.Script, statements=st.lists(statements, max_size=3).map(tuple))

# Generated programs are cheap (no Spark) but many: 300 in make test-deep, 100 in make test.
GENERATED = settings(max_examples=300 if DEEP else 100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@GENERATED
@given(expression_texts)
def test_generated_expressions_parse(text: str) -> None:
    expr = to_expr(text)
    assert to_expr(expr.sql) == expr  # sqlglot's rendering is stable


@GENERATED
@given(scripts)
@example(ast.Script(statements=()))
@example(
    ast.Script(
        statements=(
            ast.CreateStream(
                name=ast.Name(text="end"),
                columns=(ast.ColumnDef(name=ast.Name(text="a`b\nc"), type=ast.TypeName(name="DECIMAL", params=(5,))),),
                path="x\\'y\n",
                options=(ast.Option(key="", value="\\"), ast.Option(key="a.select", value=Decimal("-0.5"))),
                row_num=ast.Name(text="ROW_NUM"),
            ),
        )
    )
)
def test_generated_scripts_roundtrip(script: ast.Script) -> None:
    text = roundtrip(script)
    assert format_script(wql.parse(text)) == text


@GENERATED
@given(selects)
def test_generated_selects_roundtrip_as_statements(select: ast.Select) -> None:
    for statement in (select, ast.Explain(select=select)):
        text = format_statement(statement)
        assert wql.parse(text) == ast.Script(statements=(statement,))
        assert wql.parse(text + ";\n;") == ast.Script(statements=(statement,))


def test_roundtrip_detects_differences() -> None:
    """The round-trip check is not vacuous: a tree the formatter cannot express is caught."""
    script = wql.parse("SELECT a FROM s [RANGE 5 MINUTES]")
    (select,) = script.statements
    assert isinstance(select, ast.Select)
    empty_window = ast.Script(
        statements=(ast.Select(items=select.items, stream=select.stream, window=ast.WindowSpec(clauses=())),)
    )
    with pytest.raises(AssertionError):
        roundtrip(empty_window)
