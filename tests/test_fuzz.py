"""Fuzzing the front end: whatever the text, parse/check/explain fail only with a positioned WQLError.

Inputs are random text (over WQL's own alphabet, over WQL tokens, and over all of
Unicode) and mutations of the example queries. Set WQL_FUZZ_EXAMPLES to run more
examples per property (the default keeps the file well under a minute).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, find, given, settings
from hypothesis import strategies as st

import wql
from tests.conftest import DEEP, EXAMPLES
from wql.grammar.ast import Script
from wql.grammar.errors import Span, WQLError

EXAMPLE_TEXTS: list[str] = [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.rglob("*.wql"))]

RICH_QUERIES: list[str] = [
    "CREATE STREAM s (a INT, b DOUBLE, c STRING, ts TIMESTAMP, te TIMESTAMP, d DATE, m DECIMAL(10, 2), rn BIGINT)\n"
    "  FROM 'data/x.csv' FORMAT csv OPTIONS (header = true, sep = ';', 'k.x' = -1.5) ROW_NUM rn;\n"
    "SELECT a, max(b) AS mx, count(*) AS n, sum(m) / 2 AS half\n"
    "FROM s [RANGE 10 MINUTES SLIDE 1 MINUTE WATTR ts PATTR a ALIGN START TIMESTAMP '2024-01-01 00:00:00'"
    " SLACK 5 SECONDS CONSISTENT]\n"
    "WHERE b > 0 AND c <> 'x''y' -- comment\n"
    "GROUP BY a HAVING count(*) >= 2 ORDER BY a DESC NULLS FIRST, n LIMIT 10 EMIT EMPTY;\n",
    "CREATE STREAM `my s` (`range` INT, ts TIMESTAMP, te TIMESTAMP);\n"
    "EXPLAIN SELECT count(*) AS n, min(`range`) AS lo FROM `my s` [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR (ts, te)];\n"
    "SELECT count(*) AS n FROM `my s` [RANGE 10 MINUTES SLIDE KAFKA WATTR ts];\n"
    "SELECT max(CASE WHEN `range` > 1 THEN 'big' ELSE \"small\" END) AS size\n"
    "FROM `my s` [RANGE 5 MINUTES RATTR ts SLIDE 10 ROWS SATTR rank(ts)] /* block */;\n",
    "CREATE STREAM t (p DOUBLE, q BIGINT) ROW_NUM q;\n"
    "SELECT avg(p) AS ap FROM t [RANGE 100 SLIDE 10 WATTR p];\n"
    "SELECT count(DISTINCT q) AS dq FROM t [RANGE 1000 ROWS SLIDE 1 ROW SATTR row_num RATTR row_num ALIGN END 3];\n"
    "SELECT sum(p) AS total FROM t [RANGE UNBOUNDED SLIDE 5 ROWS WATTR row_num];\n",
    "CREATE STREAM c (u STRING, v DOUBLE, ts TIMESTAMP);\n"
    "SELECT u, count(*) AS n FROM c [SESSION GAP 30 MINUTES MAX 2 HOURS KAFKA WATTR ts PATTR u] WHERE v > 0;\n"
    "SELECT min(v) AS lo FROM c [FRAME THRESHOLD (v < 40 AND u <> 'x') MIN 3 ROWS WATTR ts PATTR u];\n"
    "SELECT avg(v) AS a FROM c [FRAME DELTA 2.5 ON (v * 2) WATTR ts];\n"
    "SELECT max(v) AS hi FROM c [FRAME AGGREGATE (sum(v) > 100 OR NOT count(*) < 5) WATTR ts];\n",
    "CREATE STREAM u (k STRING, ts TIMESTAMP, x BIGINT);\n"
    "SELECT k, count(*) AS n FROM u [RANGE 1 DAY SLIDE 1 HOUR CUMULATE WATTR ts ALIGN START FIRST PATTR k];\n"
    "SELECT count(*) AS n FROM u [RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts KAFKA];\n"
    "SELECT count(*) AS n FROM u [RANGE 10 WATTR x ALIGN FIRST];\n",
]
SEEDS: list[str] = EXAMPLE_TEXTS + RICH_QUERIES

# Characters and words WQL is made of.
RELEVANT_ALPHABET = (
    "abcdeimnorstxyzAEFLMORSTW_0123456789 \n\t()[],;.*'\"`-/+<>=!|:%#" + "éß😀"  # some non-ASCII
)
WORDS = [
    "CREATE", "STREAM", "FORMAT", "OPTIONS", "ROW_NUM", "EXPLAIN", "SELECT", "FROM", "AS", "WHERE", "GROUP", "BY",
    "HAVING", "ORDER", "LIMIT", "EMIT", "EMPTY", "NULLS", "ASC", "DESC", "FIRST", "LAST", "RANGE", "SLIDE", "WATTR",
    "RATTR", "SATTR", "PATTR", "ALIGN", "SLACK", "UNBOUNDED", "KAFKA", "CUMULATE", "RANK", "START", "END", "TIMESTAMP",
    "CONSISTENT", "GENEROUS", "TRUE", "FALSE", "ROWS", "ROW", "MINUTES", "SECOND", "HOURS", "DAYS", "WEEKS",
    "SESSION", "GAP", "MAX", "FRAME", "THRESHOLD", "DELTA", "AGGREGATE", "MIN", "ON",
    "INT", "STRING", "DOUBLE", "DECIMAL", "csv", "json", "s", "t", "a", "b", "ts", "row_num", "max(a)", "count(*)",
    "CASE", "WHEN", "THEN", "ELSE", "NOT", "AND", "OR", "IN", "IS", "NULL", "0", "1", "5", "-1", "2.5", "1e3",
    "'x'", '"y"', "`q`", "(", ")", "[", "]", ",", ";", ".", "*", "=", "<", ">", "+", "-", "/", "--", "/*", "*/",
    "\n", "'", '"', "`", "::", "->", "<=>", "||",
]  # fmt: skip

N = int(os.environ.get("WQL_FUZZ_EXAMPLES", "1200" if DEEP else "80"))
FUZZ = settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ the properties


def check_error(error: BaseException, text: str) -> None:
    """A WQLError that renders, whose position (if any) lies inside the text."""
    assert isinstance(error, WQLError), f"{type(error).__name__}: {error}\ninput: {text!r}"
    rendered = error.render()
    assert isinstance(rendered, str)
    assert error.message in rendered
    assert str(error).startswith(error.message)
    if error.span is None:
        return
    span = error.span
    lines = text.split("\n")
    assert 0 <= span.start <= span.end <= len(text), f"span {span} outside the text\ninput: {text!r}"
    assert 1 <= span.line <= len(lines), f"line {span.line} outside the text\ninput: {text!r}"
    assert 1 <= span.column <= len(lines[span.line - 1]) + 1, f"column {span.column} outside its line\ninput: {text!r}"
    assert (span.line, span.column) <= (span.end_line, span.end_column)
    assert error.source == text
    assert f":{span.line}:{span.column}" in rendered
    excerpt = f"\n{span.line} | {lines[span.line - 1].expandtabs(1)}\n"
    assert excerpt in rendered, f"render() quotes the wrong line:\n{rendered}\ninput: {text!r}"
    caret = "\n" + " " * len(str(span.line)) + " | " + " " * (span.column - 1) + "^"
    assert caret in rendered, f"caret not under column {span.column}:\n{rendered}\ninput: {text!r}"


def call(fn: Callable[[str], Any], text: str) -> Any:
    """fn(text), or the WQLError it raised; any other exception fails the test with the input."""
    try:
        return fn(text)
    except WQLError as error:
        check_error(error, text)
        return error
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # anything but a WQLError is a bug
        pytest.fail(f"{fn.__name__} raised {type(error).__name__}: {error}\ninput: {text!r}")


def parse_property(text: str) -> None:
    result = call(wql.parse, text)
    assert isinstance(result, Script | wql.WQLSyntaxError | wql.WQLTypeError), repr(result)


def check_property(text: str) -> None:
    result = call(wql.check, text)
    assert isinstance(result, list), f"check raised {result!r}\ninput: {text!r}"
    for error in result:
        check_error(error, text)
    parsed = call(wql.parse, text)
    if isinstance(parsed, WQLError):
        # check reports the syntax error itself, at the same place
        assert len(result) == 1
        assert (result[0].message, result[0].span) == (parsed.message, parsed.span)


def explain_property(text: str) -> None:
    result = call(wql.explain, text)
    errors = call(wql.check, text)
    assert isinstance(errors, list)
    if errors:
        assert isinstance(result, WQLError), f"explain ignored {errors[0]}\ninput: {text!r}"
        assert result.message == errors[0].message
    else:
        assert isinstance(result, list), f"explain raised {result!r} where check found nothing\ninput: {text!r}"
        for explanation in result:
            assert isinstance(explanation, wql.Explanation)
            str(explanation)


# ------------------------------------------------------------------ inputs

relevant_text = st.text(alphabet=RELEVANT_ALPHABET, max_size=80)
token_soup = st.lists(st.sampled_from(WORDS), max_size=30).flatmap(
    lambda words: st.sampled_from([" ", "", "\n"]).map(lambda sep: sep.join(words))
)
any_text = st.text(max_size=60)

_TOKEN = re.compile(r"\s+|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|'[^'\n]*'|\S")


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str] = SEEDS) -> str:
    """An example query with 1-4 edits: characters or tokens deleted, inserted, duplicated, swapped; truncation."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(
            st.sampled_from(
                ["delete", "insert", "duplicate", "swap", "truncate", "drop-token", "add-token", "swap-tokens"]
            )
        )
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 12)))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(WORDS) | st.characters()) + text[i:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif op == "swap":
            k = draw(st.integers(0, len(text)))
            text = text[:i] + text[k : k + (j - i)] + text[j:]
        elif op == "truncate":
            text = text[:i]
        else:
            tokens = _TOKEN.findall(text)
            if not tokens:
                continue
            a = draw(st.integers(0, len(tokens) - 1))
            b = draw(st.integers(0, len(tokens) - 1))
            if op == "drop-token":
                del tokens[a]
            elif op == "add-token":
                tokens.insert(a, draw(st.sampled_from(WORDS)) + " ")
            else:
                tokens[a], tokens[b] = tokens[b], tokens[a]
            text = "".join(tokens)
    return text


def test_seeds_are_valid() -> None:
    """The mutations start from good queries, so the fuzzers reach deep into the analysis."""
    assert len(EXAMPLE_TEXTS) >= 6
    for text in SEEDS:
        assert wql.parse(text).statements
        assert wql.check(text) == [], wql.check(text)[0].render()
        assert wql.explain(text)


def test_mutations_change_the_text() -> None:
    changed = find(mutated(), lambda text: text not in SEEDS and not wql.check(text), settings=FUZZ)
    assert changed not in SEEDS


# ------------------------------------------------------------------ parse


@FUZZ
@given(relevant_text)
@example("SELECT 'abc")
@example("SELECT `x")
@example("SELECT x FROM s [")
@example("((((((((((((((((((((((((((((((")
@example("SELECT " + "(" * 500 + "x" + ")" * 500 + " FROM s")
def test_parse_relevant_text(text: str) -> None:
    parse_property(text)


@FUZZ
@given(token_soup)
def test_parse_token_soup(text: str) -> None:
    parse_property(text)


@FUZZ
@given(any_text)
@example("\x00")
@example("SELECT \ud800 FROM s")
@example("SELECT '\ud800' FROM s")
@example("\ufeffSELECT x FROM s")
def test_parse_any_text(text: str) -> None:
    parse_property(text)


@FUZZ
@given(mutated())
def test_parse_mutations(text: str) -> None:
    parse_property(text)


# ------------------------------------------------------------------ check and explain


@FUZZ
@given(mutated())
def test_check_mutations(text: str) -> None:
    check_property(text)


@FUZZ
@given(token_soup | relevant_text)
def test_check_random_text(text: str) -> None:
    check_property(text)


@FUZZ
@given(mutated())
def test_explain_mutations(text: str) -> None:
    explain_property(text)


@FUZZ
@given(st.sampled_from(RICH_QUERIES[:1]), st.sampled_from(WORDS), st.sampled_from(WORDS))
def test_explain_with_clauses_replaced(text: str, old: str, new: str) -> None:
    """Swap every occurrence of one word for another: structured damage that often still parses."""
    changed = text.replace(f" {old} ", f" {new} ")
    explain_property(changed)


# ------------------------------------------------------------------ the property helpers can fail


def test_check_error_rejects_a_position_outside_the_text() -> None:
    error = wql.WQLSyntaxError("boom", span=Span(0, 1, 3, 1, 3, 2), source="x")
    with pytest.raises(AssertionError):
        check_error(error, "x")


def test_call_fails_on_other_exceptions() -> None:
    def broken(text: str) -> None:
        raise KeyError(text)

    with pytest.raises(pytest.fail.Exception, match="KeyError"):
        call(broken, "SELECT")


# ------------------------------------------------------------------ regressions (bugs found by these tests, now fixed)

SCHEMA = "CREATE STREAM s (x INT, ts TIMESTAMP);\n"


@pytest.mark.parametrize(
    "query",
    [
        "SELECT max(x) AS m FROM s [RANGE 1e1000000 MINUTES WATTR ts]",
        "SELECT max(x) AS m FROM s [RANGE 5 MINUTES WATTR ts ALIGN 1e1000000 MINUTES]",
        "SELECT max(x) AS m FROM s [RANGE 5 MINUTES WATTR ts SLACK 1e1000000 SECONDS]",
    ],
)
@pytest.mark.parametrize("fn", [wql.check, wql.explain], ids=["check", "explain"])
def test_huge_time_quantity_is_a_wql_error(query: str, fn: Callable[[str], Any]) -> None:
    result = call(fn, SCHEMA + query)
    errors = result if isinstance(result, list) else [result]
    assert errors and all(isinstance(e, WQLError) for e in errors)


def test_huge_row_count_is_checked_quickly() -> None:
    code = (
        "import wql\n"
        f"errors = wql.check({SCHEMA + 'SELECT count(*) AS n FROM s [RANGE 1e3000000 ROWS]'!r})\n"
        "assert all(isinstance(e, wql.WQLError) for e in errors)\n"
    )
    try:
        subprocess.run([sys.executable, "-c", code], timeout=10, check=True, capture_output=True)
    except subprocess.TimeoutExpired:
        pytest.fail("checking 'RANGE 1e3000000 ROWS' did not finish in 10 s")
