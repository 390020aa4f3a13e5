"""Semantic analysis: window defaults, type rules, names, aggregates, result columns, classes.

The reference is docs/language.md (§5.9 defaults, §6 aggregates, §7 result
columns) and docs/semantics.md (§2 windows, §5 classes). Bugs these tests found
are fixed; the tests stay as regressions.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

import wql
from wql import (
    WQLError,
    WQLNameError,
    WQLNotSupportedError,
    WQLSemanticError,
    WQLSyntaxError,
    WQLTypeError,
)
from wql.compiler.aggregates import Duplicates, PartialState
from wql.compiler.analysis import Query
from wql.compiler.analysis import analyze as analyze_select
from wql.compiler.classify import WindowClass
from wql.compiler.schema import Catalog, Domain, schema_from_mapping
from wql.compiler.windows import Form, SlideOn, Window
from wql.grammar import ast

SEC = 1_000_000
MIN = 60 * SEC
HOUR = 60 * MIN
DAY = 24 * HOUR

Schemas = Mapping[str, Mapping[str, str]]

# One TIMESTAMP column, so time units without WATTR resolve to ts.
TRAFFIC = {
    "seg_id": "STRING",
    "speed": "DOUBLE",
    "ts": "TIMESTAMP",
    "mile": "BIGINT",
    "lane": "INT",
    "flag": "BOOLEAN",
    "price": "DECIMAL(10,2)",
    "d": "DATE",
}
# Interval events and several attributes of each type.
CALLS = {
    "caller": "STRING",
    "started": "TIMESTAMP",
    "ended": "TIMESTAMP",
    "cost": "DOUBLE",
    "m_from": "BIGINT",
    "m_to": "BIGINT",
    "d_from": "DATE",
    "d_to": "DATE",
    "ratio": "FLOAT",
}
STREAMS: Schemas = {"traffic": TRAFFIC, "calls": CALLS}


# ------------------------------------------------------------------ helpers


def analyze_one(text: str, streams: Schemas = STREAMS) -> Query:
    """The one query of `text`, which must analyze without errors."""
    program = wql.analyze(text, streams=streams)
    assert program.errors == [], "\n".join(e.render() for e in program.errors)
    [statement] = program.queries
    assert statement.query is not None
    return statement.query


def window_of(spec: str, stream: str = "traffic") -> Window:
    return analyze_one(f"SELECT count(*) AS n FROM {stream} {spec}").window


def only_error(text: str, streams: Schemas = STREAMS) -> WQLError:
    errors = wql.check(text, streams=streams)
    assert len(errors) == 1, [str(e) for e in errors]
    return errors[0]


def at(text: str, snippet: str, occurrence: int = 1) -> tuple[int, int, int]:
    """(offset, line, column) of the n-th occurrence of snippet in text; occurrence -1 is the last."""
    if occurrence == -1:
        offset = text.rindex(snippet)
    else:
        offset = -1
        for _ in range(occurrence):
            offset = text.index(snippet, offset + 1)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return offset, line, column


def assert_points_at(error: WQLError, text: str, snippet: str, occurrence: int = 1) -> None:
    """The error's span is exactly `snippet` (its n-th occurrence), with the right line and column."""
    assert error.span is not None, f"{error} has no position"
    offset, line, column = at(text, snippet, occurrence)
    assert (error.line, error.column) == (line, column), (
        f"{error.message}: points at {text[error.span.start : error.span.end]!r}, expected {snippet!r}"
    )
    assert text[error.span.start : error.span.end] == snippet
    assert error.span.start == offset


def spec_error(spec: str, stream: str = "traffic") -> tuple[WQLError, str]:
    text = f"SELECT count(*) AS n FROM {stream} {spec}"
    return only_error(text), text


# ------------------------------------------------------------------ window defaults


@pytest.mark.parametrize(
    ("spec", "kind", "attr", "rng", "slide", "slide_on", "notes"),
    [
        # no SLIDE: tumbling, SLIDE = RANGE
        (
            "[RANGE 5 MINUTES WATTR ts]",
            Form.SLIDING,
            "ts",
            5 * MIN,
            5 * MIN,
            SlideOn.ATTRIBUTE,
            ["SLIDE = RANGE"],
        ),
        # no RANGE: RANGE = SLIDE
        (
            "[SLIDE 2 HOURS WATTR ts]",
            Form.SLIDING,
            "ts",
            2 * HOUR,
            2 * HOUR,
            SlideOn.ATTRIBUTE,
            ["RANGE = SLIDE"],
        ),
        # ROWS without an attribute: row_num
        (
            "[RANGE 10 ROWS]",
            Form.SLIDING,
            "row_num",
            10,
            10,
            SlideOn.ATTRIBUTE,
            ["WATTR row_num", "SLIDE = RANGE"],
        ),
        (
            "[RANGE 100 ROWS SLIDE 10 ROWS]",
            Form.SLIDING,
            "row_num",
            100,
            10,
            SlideOn.ATTRIBUTE,
            ["WATTR row_num"],
        ),
        ("[SLIDE 3 ROWS]", Form.SLIDING, "row_num", 3, 3, SlideOn.ATTRIBUTE, ["WATTR row_num", "RANGE = SLIDE"]),
        # time units without WATTR: the only TIMESTAMP column
        (
            "[RANGE 10 MINUTES SLIDE 1 MINUTE]",
            Form.SLIDING,
            "ts",
            10 * MIN,
            MIN,
            SlideOn.ATTRIBUTE,
            ["WATTR ts (the stream's only TIMESTAMP column)"],
        ),
        # SLIDE n ROWS over a time RATTR: SATTR row_num
        (
            "[RANGE 5 MINUTES RATTR ts SLIDE 3 ROWS]",
            Form.SLIDE_BY_TUPLE,
            "ts",
            5 * MIN,
            3,
            SlideOn.ROW_NUM,
            ["SATTR row_num"],
        ),
        # SATTR without SLIDE: SLIDE 1 ROW
        (
            "[RANGE 5 MINUTES RATTR ts SATTR row_num]",
            Form.SLIDE_BY_TUPLE,
            "ts",
            5 * MIN,
            1,
            SlideOn.ROW_NUM,
            ["SLIDE 1 ROW"],
        ),
        (
            "[RANGE 5 MINUTES SATTR rank(ts)]",
            Form.SLIDE_BY_RANK,
            "ts",
            5 * MIN,
            1,
            SlideOn.RANK,
            ["RATTR ts (from SATTR)", "SLIDE 1 ROW"],
        ),
        # explicit specs record no defaults
        ("[RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts]", Form.SLIDING, "ts", 5 * MIN, MIN, SlideOn.ATTRIBUTE, []),
        (
            "[RANGE 5 MINUTES RATTR ts SLIDE 1 ROW SATTR row_num]",
            Form.SLIDE_BY_TUPLE,
            "ts",
            5 * MIN,
            1,
            SlideOn.ROW_NUM,
            [],
        ),
        ("[RANGE UNBOUNDED SLIDE 1 HOUR WATTR ts]", Form.LANDMARK, "ts", None, HOUR, SlideOn.ATTRIBUTE, []),
        ("[RANGE 10 SECONDS WATTR ts SLIDE KAFKA]", Form.KAFKA, "ts", 10 * SEC, None, SlideOn.ATTRIBUTE, []),
        # base units: days for DATE, the value itself for numbers
        ("[RANGE 2 WEEKS SLIDE 1 DAY WATTR d]", Form.SLIDING, "d", 14, 1, SlideOn.ATTRIBUTE, []),
        ("[RANGE 10 SLIDE 2 WATTR mile]", Form.SLIDING, "mile", 10, 2, SlideOn.ATTRIBUTE, []),
        ("[RANGE 2.5 SLIDE 0.5 WATTR speed]", Form.SLIDING, "speed", 2.5, 0.5, SlideOn.ATTRIBUTE, []),
        ("[RANGE 1500 MILLISECONDS WATTR ts]", Form.SLIDING, "ts", 1_500_000, 1_500_000, SlideOn.ATTRIBUTE, None),
        ("[RANGE 3 MICROSECONDS WATTR ts]", Form.SLIDING, "ts", 3, 3, SlideOn.ATTRIBUTE, None),
        ("[RANGE 1.5 SECONDS WATTR ts]", Form.SLIDING, "ts", 1_500_000, 1_500_000, SlideOn.ATTRIBUTE, None),
        ("[RANGE 1 WEEK WATTR ts]", Form.SLIDING, "ts", 7 * DAY, 7 * DAY, SlideOn.ATTRIBUTE, None),
    ],
)
def test_window_defaults(
    *,
    spec: str,
    kind: Form,
    attr: str,
    rng: float | None,
    slide: float | None,
    slide_on: SlideOn,
    notes: list[str] | None,
) -> None:
    window = window_of(spec)
    assert window.form is kind
    assert window.attr.name == attr
    assert window.range == rng
    assert window.slide == slide
    assert window.slide_on is slide_on
    if notes is not None:
        assert len(window.defaults) == len(notes), window.defaults
        for note, expected in zip(window.defaults, notes, strict=True):
            assert expected in note


def test_base_units_are_exact_types() -> None:
    """Integral domains use ints (exact edges); DOUBLE attributes use floats."""
    assert isinstance(window_of("[RANGE 5 MINUTES WATTR ts]").range, int)
    assert isinstance(window_of("[RANGE 2 DAYS WATTR d]").range, int)
    assert isinstance(window_of("[RANGE 10 ROWS]").range, int)
    assert isinstance(window_of("[RANGE 10 WATTR mile]").range, int)
    speed = window_of("[RANGE 2 WATTR speed]")
    assert isinstance(speed.range, float)
    assert isinstance(speed.origin, float)


def test_attribute_domains() -> None:
    assert window_of("[RANGE 1 HOUR WATTR ts]").attr.domain is Domain.TIMESTAMP
    assert window_of("[RANGE 1 DAY WATTR d]").attr.domain is Domain.DATE
    assert window_of("[RANGE 10 ROWS]").attr.domain is Domain.ROW_NUM
    assert window_of("[RANGE 10 WATTR mile]").attr.domain is Domain.INTEGER
    assert window_of("[RANGE 10 WATTR speed]").attr.domain is Domain.FLOAT


def test_only_date_column_is_inferred_for_day_units() -> None:
    streams = {"s": {"n": "INT", "day_of": "DATE"}}
    window = analyze_one("SELECT count(*) AS n FROM s [RANGE 7 DAYS]", streams).window
    assert window.attr.name == "day_of"
    assert window.range == 7
    assert any("only DATE column" in note for note in window.defaults)


def test_several_timestamps_is_an_error_naming_them() -> None:
    error, text = spec_error("[RANGE 10 MINUTES]", "calls")
    assert isinstance(error, WQLTypeError)
    assert "several TIMESTAMP columns (started, ended)" in error.message
    assert error.hint is not None and "WATTR started" in error.hint
    assert_points_at(error, text, "10 MINUTES")


def test_no_timestamp_is_an_error() -> None:
    text = "SELECT count(*) AS n FROM s [RANGE 10 MINUTES]"
    error = only_error(text, {"s": {"n": "INT", "v": "DOUBLE"}})
    assert isinstance(error, WQLTypeError)
    assert "stream 's' has none" in error.message
    assert error.hint is not None and "ROWS" in error.hint
    assert_points_at(error, text, "10 MINUTES")


def test_unitless_range_without_attribute_asks_which_attribute() -> None:
    error, text = spec_error("[RANGE 5]")
    assert isinstance(error, WQLTypeError)
    assert "which attribute" in error.message
    assert error.hint is not None and "WATTR" in error.hint
    assert_points_at(error, text, "5")


def test_align_defaults_to_the_epoch() -> None:
    assert window_of("[RANGE 5 MINUTES WATTR ts]").origin == 0
    assert window_of("[RANGE 10 WATTR mile]").origin == 0


def test_align_end_is_the_origin_of_window_ends() -> None:
    window = window_of("[RANGE 1 HOUR SLIDE 15 MINUTES WATTR ts ALIGN TIMESTAMP '2024-01-01 00:07:00']")
    assert window.origin == 1_704_067_620 * SEC
    assert window_of("[RANGE 10 SLIDE 2 WATTR mile ALIGN END 3]").origin == 3
    assert window_of("[RANGE 10 SLIDE 2 WATTR mile ALIGN -3]").origin == -3


def test_align_start_shifts_the_origin_by_range() -> None:
    """docs/semantics.md §2.1: start-aligned grid o' equals the end grid o when o = o' + r (mod s)."""
    assert window_of("[RANGE 10 SLIDE 4 WATTR mile ALIGN START 3]").origin == 13
    timed = window_of("[RANGE 1 HOUR WATTR ts ALIGN START TIMESTAMP '2024-01-01 00:07:00']")
    assert timed.origin == 1_704_067_620 * SEC + HOUR
    assert window_of("[RANGE 5 MINUTES WATTR ts ALIGN START 30 SECONDS]").origin == 30 * SEC + 5 * MIN
    assert window_of("[RANGE 3 DAYS WATTR d ALIGN START TIMESTAMP '1970-01-02']").origin == 1 + 3


def test_align_timestamp_zone_is_honoured_and_naive_is_utc() -> None:
    utc = window_of("[RANGE 1 HOUR WATTR ts ALIGN TIMESTAMP '2024-01-01 00:00:00']").origin
    plus_two = window_of("[RANGE 1 HOUR WATTR ts ALIGN TIMESTAMP '2024-01-01T00:00:00+02:00']").origin
    assert utc - plus_two == 2 * HOUR


def test_slack_defaults_to_consistent() -> None:
    window = window_of("[RANGE 5 MINUTES WATTR ts SLACK 30 SECONDS]")
    assert window.slack is not None
    assert window.slack.amount == 30 * SEC
    assert window.slack.mode == "consistent"
    assert any("CONSISTENT" in note for note in window.defaults)
    generous = window_of("[RANGE 5 MINUTES WATTR ts SLACK 30 SECONDS GENEROUS]")
    assert generous.slack is not None and generous.slack.mode == "generous"
    assert not any("SLACK" in note for note in generous.defaults)
    assert window_of("[RANGE 5 MINUTES WATTR ts]").slack is None


def test_partition_attributes_use_declared_spelling() -> None:
    window = window_of("[RANGE 5 MINUTES WATTR ts PATTR SEG_ID, Lane]")
    assert window.partition_by == ("seg_id", "lane")


def test_case_insensitive_window_attributes() -> None:
    window = window_of("[RANGE 10 SLIDE 2 WATTR MILE]")
    assert window.attr.name == "mile"
    assert window_of("[RANGE 10 ROWS WATTR ROW_NUM]").attr.name == "row_num"
    assert window_of("[RANGE 5 MINUTES RATTR TS SATTR RANK(Ts)]").form is Form.SLIDE_BY_RANK


def test_row_num_column_declared_with_row_num_is_the_arrival_position() -> None:
    text = (
        "CREATE STREAM s (seq BIGINT, v DOUBLE) FROM 's.csv' ROW_NUM seq;\n"
        "SELECT count(*) AS n FROM s [RANGE 10 SLIDE 5 WATTR seq];"
    )
    program = wql.analyze(text)
    assert program.errors == []
    [statement] = program.queries
    assert statement.query is not None
    window = statement.query.window
    assert window.attr.is_row_num
    assert window.range == 10 and window.slide == 5
    assert "seq" in statement.query.input_columns


def test_sattr_row_num_over_row_num_defaults_to_slide_one_row() -> None:
    window = window_of("[RANGE 10 ROWS SATTR row_num]")
    assert window.slide == 1


# ------------------------------------------------------------------ spec_text round trip

ROUND_TRIP = [
    ("traffic", "[RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts]"),
    ("traffic", "[RANGE 90 SECONDS SLIDE 1 MINUTE WATTR ts]"),
    ("traffic", "[RANGE 61 MINUTES SLIDE 1 MINUTE WATTR ts]"),
    ("traffic", "[RANGE 1 HOUR SLIDE 15 MINUTES WATTR ts ALIGN TIMESTAMP '2024-01-01 00:07:00']"),
    ("traffic", "[RANGE 1 HOUR WATTR ts ALIGN START TIMESTAMP '2024-01-01 00:07:00']"),
    ("traffic", "[RANGE 1 HOUR WATTR ts ALIGN TIMESTAMP '2024-01-01 00:00:00.123456']"),
    ("traffic", "[RANGE 1 HOUR WATTR ts ALIGN TIMESTAMP '2024-01-01T00:00:00+02:00']"),
    ("traffic", "[RANGE 1 HOUR WATTR ts ALIGN TIMESTAMP '1960-06-01 12:00:00']"),
    ("traffic", "[RANGE 1 HOUR WATTR ts ALIGN -30 SECONDS]"),
    ("traffic", "[RANGE 1500 MILLISECONDS SLIDE 500 MILLISECONDS WATTR ts]"),
    ("traffic", "[RANGE 1.5 SECONDS WATTR ts]"),
    ("traffic", "[RANGE 3 MICROSECONDS WATTR ts]"),
    ("traffic", "[RANGE 2 WEEKS SLIDE 1 DAY WATTR ts]"),
    ("traffic", "[RANGE 10 MINUTES]"),
    ("traffic", "[RANGE 7 DAYS WATTR d]"),
    ("traffic", "[RANGE 2 WEEKS SLIDE 1 WEEK WATTR d]"),
    ("traffic", "[RANGE 3 DAYS WATTR d ALIGN TIMESTAMP '2024-03-01']"),
    ("traffic", "[RANGE 1 DAY WATTR d SLACK 2 DAYS]"),
    ("traffic", "[RANGE 100 ROWS SLIDE 10 ROWS]"),
    ("traffic", "[RANGE 100 ROWS SLIDE 10 ROWS WATTR row_num PATTR seg_id]"),
    ("traffic", "[SLIDE 3 ROWS]"),
    ("traffic", "[RANGE 10 SLIDE 2 WATTR mile]"),
    ("traffic", "[RANGE 10 SLIDE 2 WATTR mile ALIGN -3]"),
    ("traffic", "[RANGE 10 SLIDE 20 WATTR mile]"),
    ("traffic", "[RANGE 2.5 SLIDE 0.5 WATTR speed ALIGN 0.25]"),
    ("traffic", "[RANGE 0.0000001 SLIDE 0.0000001 WATTR speed]"),
    ("traffic", "[RANGE 1e3 SLIDE 1e2 WATTR speed]"),
    ("calls", "[RANGE 2.5 WATTR ratio]"),
    ("traffic", "[RANGE UNBOUNDED SLIDE 1 HOUR WATTR ts]"),
    ("traffic", "[RANGE UNBOUNDED SLIDE 10 ROWS]"),
    ("traffic", "[RANGE UNBOUNDED SLIDE 10 ROWS PATTR seg_id]"),
    ("traffic", "[RANGE UNBOUNDED SLIDE 5 WATTR mile ALIGN 2]"),
    ("traffic", "[RANGE 5 MINUTES RATTR ts SLIDE 1 ROW SATTR row_num]"),
    ("traffic", "[RANGE 5 MINUTES RATTR ts SLIDE 3 ROWS]"),
    ("traffic", "[RANGE 5 MINUTES SATTR rank(ts)]"),
    ("traffic", "[RANGE 5 MINUTES RATTR ts SLIDE 10 ROWS SATTR rank(ts)]"),
    ("traffic", "[RANGE 20 RATTR mile SLIDE 2 ROWS SATTR row_num PATTR seg_id]"),
    ("traffic", "[RANGE 5 MINUTES RATTR ts SLIDE 1 ROW SLACK 1 MINUTE]"),
    ("traffic", "[RANGE 10 SECONDS WATTR ts SLIDE KAFKA]"),
    ("traffic", "[RANGE 10 WATTR mile SLIDE KAFKA PATTR seg_id]"),
    ("calls", "[RANGE 10 MINUTES SLIDE 5 MINUTES WATTR (started, ended)]"),
    ("calls", "[RANGE 2 DAYS WATTR (d_from, d_to)]"),
    ("calls", "[RANGE 10 SLIDE 5 WATTR (m_from, m_to) ALIGN START 1]"),
    ("traffic", "[RANGE 5 MINUTES WATTR ts SLACK 30 SECONDS]"),
    ("traffic", "[RANGE 5 MINUTES WATTR ts SLACK 30 SECONDS GENEROUS]"),
    ("traffic", "[RANGE 5 MINUTES WATTR ts SLACK 0 SECONDS]"),
    ("traffic", "[RANGE 5 MINUTES WATTR ts SLACK 1 DAY]"),
    ("traffic", "[RANGE 5 MINUTES WATTR ts PATTR seg_id, lane]"),
]


@pytest.mark.parametrize(("stream", "spec"), ROUND_TRIP)
def test_spec_text_round_trips(stream: str, spec: str) -> None:
    window = window_of(spec, stream)
    text = window.spec_text()
    assert text.startswith("[RANGE ") and text.endswith("]")
    again = window_of(text, stream)
    assert again == window
    assert again.spec_text() == text
    # The filled-in spec needs no defaults, except the SLACK mode, which spec_text always spells out.
    assert again.defaults == ()


def test_spec_text_spells_every_default() -> None:
    assert window_of("[RANGE 10 MINUTES]").spec_text() == (
        "[RANGE 10 MINUTES SLIDE 10 MINUTES WATTR ts ALIGN TIMESTAMP '1970-01-01 00:00:00']"
    )
    assert window_of("[RANGE 5 MINUTES RATTR ts SLIDE 3 ROWS]").spec_text() == (
        "[RANGE 5 MINUTES SLIDE 3 ROWS RATTR ts SATTR row_num]"
    )
    assert window_of("[RANGE 100 ROWS]").spec_text() == "[RANGE 100 ROWS SLIDE 100 ROWS WATTR row_num ALIGN 0]"
    assert window_of("[RANGE 3 DAYS WATTR d]").spec_text() == (
        "[RANGE 3 DAYS SLIDE 3 DAYS WATTR d ALIGN TIMESTAMP '1970-01-01']"
    )


def test_spec_text_round_trips_early_years() -> None:
    spec = "[RANGE 1 HOUR WATTR ts ALIGN TIMESTAMP '0999-06-01 00:00:00']"
    window = window_of(spec)
    assert window_of(window.spec_text()) == window


def test_align_outside_the_timestamp_range_is_a_wql_error() -> None:
    text = "SELECT count(*) AS n FROM traffic [RANGE 5 MINUTES WATTR ts ALIGN 100000000000000000000 WEEKS]"
    errors = wql.check(text, streams=STREAMS)
    if not errors:  # accepted: then explaining it must not crash either
        [explanation] = wql.explain(text, streams=STREAMS)
        assert explanation.window["spec"].startswith("[RANGE 5 MINUTES")
    else:
        assert isinstance(errors[0], WQLTypeError)


# ------------------------------------------------------------------ window type rules


@pytest.mark.parametrize(
    ("spec", "error_type", "snippet", "message", "hint"),
    [
        # time units need a TIMESTAMP
        ("[RANGE 5 MINUTES WATTR mile]", WQLTypeError, "5 MINUTES", "time units need a TIMESTAMP", "drop the unit"),
        ("[RANGE 5 MINUTES WATTR row_num]", WQLTypeError, "5 MINUTES", "time units need a TIMESTAMP", "5 ROWS"),
        ("[RANGE 1 DAY WATTR speed]", WQLTypeError, "1 DAY", "time units need a TIMESTAMP", "drop the unit"),
        # ROWS need row_num
        ("[RANGE 5 ROWS WATTR ts]", WQLTypeError, "5 ROWS", "ROWS count arrivals", "WATTR row_num"),
        ("[RANGE 5 ROWS WATTR mile]", WQLTypeError, "5 ROWS", "ROWS count arrivals", "WATTR row_num"),
        ("[RANGE 5 MINUTES WATTR ts SLACK 1 ROW]", WQLTypeError, "1 ROW", "ROWS count arrivals", None),
        # unit-less values need a numeric attribute (or row_num)
        ("[RANGE 5 WATTR ts]", WQLTypeError, "5", "needs a time unit", "RANGE 5 SECONDS"),
        ("[RANGE 5 WATTR d]", WQLTypeError, "5", "counts whole days", "DAYS"),
        # RANGE/SLIDE positive
        ("[RANGE 0 MINUTES WATTR ts]", WQLTypeError, "0 MINUTES", "must be positive", None),
        ("[RANGE -5 MINUTES WATTR ts]", WQLTypeError, "-5 MINUTES", "must be positive", None),
        ("[RANGE 5 MINUTES SLIDE 0 MINUTES WATTR ts]", WQLTypeError, "0 MINUTES", "must be positive", None),
        ("[RANGE 10 SLIDE -1 WATTR mile]", WQLTypeError, "-1", "must be positive", None),
        ("[RANGE 5 MINUTES RATTR ts SLIDE 0 ROWS]", WQLTypeError, "0 ROWS", "must be positive", None),
        ("[RANGE 5 MINUTES WATTR ts SLACK -1 SECONDS]", WQLTypeError, "-1 SECONDS", "must not be negative", None),
        # sub-microsecond durations
        ("[RANGE 0.5 MICROSECONDS WATTR ts]", WQLTypeError, "0.5 MICROSECONDS", "finer than a microsecond", None),
        ("[RANGE 1.0000001 SECONDS WATTR ts]", WQLTypeError, "1.0000001 SECONDS", "finer than a microsecond", None),
        ("[RANGE 5 MINUTES WATTR ts ALIGN 0.5 MICROSECONDS]", WQLTypeError, "0.5 MICROSECONDS", "finer", None),
        # DATE needs whole days
        ("[RANGE 36 HOURS WATTR d]", WQLTypeError, "36 HOURS", "counts whole days", "DAYS"),
        ("[RANGE 1.5 DAYS WATTR d]", WQLTypeError, "1.5 DAYS", "not a whole number of days", None),
        ("[RANGE 2 DAYS SLIDE 12 HOURS WATTR d]", WQLTypeError, "12 HOURS", "counts whole days", None),
        # non-integral values on integer attributes (and rows)
        ("[RANGE 2.5 WATTR mile]", WQLTypeError, "2.5", "not a whole number, and 'mile' is an integer", None),
        ("[RANGE 10 SLIDE 2.5 WATTR lane]", WQLTypeError, "2.5", "'lane' is an integer", None),
        ("[RANGE 10 WATTR mile ALIGN 0.5]", WQLTypeError, "0.5", "'mile' is an integer", None),
        ("[RANGE 2.5 ROWS]", WQLTypeError, "2.5 ROWS", "not a whole number of rows", None),
        ("[RANGE 5 MINUTES RATTR ts SLIDE 1.5 ROWS]", WQLTypeError, "1.5 ROWS", "whole number of rows", None),
        # slide by rows counts rows
        ("[RANGE 5 MINUTES RATTR ts SLIDE 1 MINUTE SATTR row_num]", WQLTypeError, "1 MINUTE", "counts rows", "ROWS"),
        # ALIGN of the wrong kind
        (
            "[RANGE 5 WATTR mile ALIGN TIMESTAMP '2024-01-01']",
            WQLTypeError,
            "ALIGN TIMESTAMP '2024-01-01'",
            "number",
            None,
        ),
        ("[RANGE 5 MINUTES WATTR ts ALIGN 'yesterday']", WQLTypeError, "ALIGN 'yesterday'", "not a timestamp", "YYYY"),
    ],
)
def test_window_type_rules(spec: str, error_type: type[WQLError], snippet: str, message: str, hint: str | None) -> None:
    error, text = spec_error(spec)
    assert type(error) is error_type
    assert message in error.message
    window_at = text.index("[")
    offset = text.index(snippet, window_at + 1)
    assert error.span is not None
    assert text[error.span.start : error.span.end] == snippet
    assert error.span.start == offset
    assert (error.line, error.column) == (1, offset + 1)
    if hint is not None:
        assert error.hint is not None and hint in error.hint


@pytest.mark.parametrize(
    ("stream", "spec", "error_type", "snippet", "message"),
    [
        # interval events need two attributes of one type
        ("calls", "[RANGE 10 MINUTES WATTR (started, m_to)]", WQLTypeError, "WATTR (started, m_to)", "of one type"),
        ("calls", "[RANGE 10 MINUTES WATTR (started, d_to)]", WQLTypeError, "WATTR (started, d_to)", "DATE"),
        ("calls", "[RANGE 10 MINUTES WATTR (started, started)]", WQLTypeError, "WATTR (started, started)", "different"),
        ("calls", "[RANGE 10 MINUTES WATTR (started, row_num)]", WQLTypeError, "WATTR (started, row_num)", "row_num"),
        (
            "calls",
            "[RANGE 5 MINUTES WATTR (started, ended) SLIDE 1 ROW]",
            WQLSemanticError,
            "[RANGE 5 MINUTES WATTR (started, ended) SLIDE 1 ROW]",
            "interval events slide on their own attribute",
        ),
        # SATTR rank(x) must rank the range attribute; SATTR must not name another attribute
        ("calls", "[RANGE 5 MINUTES RATTR started SATTR rank(ended)]", WQLSemanticError, "SATTR rank(ended)", "rank"),
        ("calls", "[RANGE 5 MINUTES RATTR started SATTR ended]", WQLSemanticError, "SATTR ended", "differs"),
        ("traffic", "[RANGE 5 MINUTES RATTR ts SATTR mile]", WQLSemanticError, "SATTR mile", "differs"),
        # WATTR together with RATTR or SATTR
        ("traffic", "[RANGE 5 MINUTES WATTR ts RATTR ts]", WQLSemanticError, "RATTR ts", "WATTR already names"),
        ("traffic", "[RANGE 5 MINUTES WATTR ts SATTR row_num]", WQLSemanticError, "SATTR row_num", "WATTR already"),
        # duplicate clauses: the second one is the error
        ("traffic", "[RANGE 5 MINUTES RANGE 10 MINUTES WATTR ts]", WQLSemanticError, "RANGE 10 MINUTES", "twice"),
        (
            "traffic",
            "[RANGE 5 MINUTES SLIDE 1 MINUTE SLIDE 2 MINUTES WATTR ts]",
            WQLSemanticError,
            "SLIDE 2 MINUTES",
            "SLIDE is given twice",
        ),
        ("traffic", "[RANGE 5 MINUTES WATTR ts WATTR ts]", WQLSemanticError, "WATTR ts", "WATTR is given twice"),
        ("traffic", "[RANGE 5 MINUTES WATTR ts PATTR seg_id PATTR lane]", WQLSemanticError, "PATTR lane", "twice"),
        (
            "traffic",
            "[RANGE 1 HOUR WATTR ts ALIGN 0 SECONDS ALIGN 1 SECONDS]",
            WQLSemanticError,
            "ALIGN 1 SECONDS",
            "ALIGN is given twice",
        ),
        (
            "traffic",
            "[RANGE 1 HOUR WATTR ts SLACK 1 SECOND SLACK 2 SECONDS]",
            WQLSemanticError,
            "SLACK 2 SECONDS",
            "SLACK is given twice",
        ),
        ("traffic", "[RANGE 5 MINUTES WATTR ts PATTR seg_id, SEG_ID]", WQLSemanticError, "SEG_ID", "twice"),
        # landmark without SLIDE
        ("traffic", "[RANGE UNBOUNDED WATTR ts]", WQLSemanticError, "RANGE UNBOUNDED", "needs SLIDE"),
        ("traffic", "[RANGE UNBOUNDED]", WQLSemanticError, "RANGE UNBOUNDED", "landmark"),
        (
            "traffic",
            "[RANGE UNBOUNDED SLIDE 1 HOUR WATTR ts ALIGN START 0 SECONDS]",
            WQLSemanticError,
            "ALIGN START 0 SECONDS",
            "landmark windows have no start",
        ),
        # ALIGN on slide-by-tuple and KAFKA
        (
            "traffic",
            "[RANGE 5 MINUTES RATTR ts SLIDE 1 ROW ALIGN 10 SECONDS]",
            WQLSemanticError,
            "ALIGN 10 SECONDS",
            "no grid",
        ),
        ("traffic", "[RANGE 5 MINUTES SATTR rank(ts) ALIGN 10 SECONDS]", WQLSemanticError, "ALIGN 10 SECONDS", "grid"),
        (
            "traffic",
            "[RANGE 5 MINUTES WATTR ts SLIDE KAFKA ALIGN 10 SECONDS]",
            WQLSemanticError,
            "ALIGN 10 SECONDS",
            "Kafka",
        ),
        # SLACK on row_num
        ("traffic", "[RANGE 10 ROWS SLACK 2 ROWS]", WQLSemanticError, "SLACK 2 ROWS", "row_num arrives in order"),
        ("traffic", "[RANGE 10 ROWS SLACK 2]", WQLSemanticError, "SLACK 2", "SLACK has nothing to bound"),
        # PATTR row_num
        ("traffic", "[RANGE 5 MINUTES WATTR ts PATTR row_num]", WQLSemanticError, "row_num", "cannot partition"),
        # string / boolean / decimal window attributes
        ("traffic", "[RANGE 5 WATTR seg_id]", WQLTypeError, "seg_id", "STRING, which cannot order windows"),
        ("traffic", "[RANGE 5 WATTR flag]", WQLTypeError, "flag", "BOOLEAN, which cannot order windows"),
        ("calls", "[RANGE 5 MINUTES RATTR caller SLIDE 1 ROW]", WQLTypeError, "caller", "cannot order windows"),
        ("traffic", "[RANGE 5 WATTR price]", WQLNotSupportedError, "price", "DECIMAL"),
        ("traffic", "[RANGE 5 RATTR price SLIDE 1 ROW]", WQLNotSupportedError, "price", "DECIMAL"),
        # no RANGE or SLIDE; rows-sliding windows need a bounded RANGE
        ("traffic", "[PATTR seg_id]", WQLSemanticError, "[PATTR seg_id]", "no RANGE or SLIDE"),
        ("traffic", "[WATTR ts]", WQLSemanticError, "[WATTR ts]", "no RANGE or SLIDE"),
        ("traffic", "[RANGE UNBOUNDED RATTR ts SLIDE 1 ROW]", WQLSemanticError, "RANGE UNBOUNDED", "bounded RANGE"),
        # Kafka windows
        ("traffic", "[SLIDE KAFKA WATTR ts]", WQLSemanticError, "[SLIDE KAFKA WATTR ts]", "needs RANGE"),
        ("traffic", "[RANGE 5 WATTR speed SLIDE KAFKA]", WQLTypeError, "[RANGE 5 WATTR speed SLIDE KAFKA]", "integer"),
        ("traffic", "[RANGE 5 ROWS SLIDE KAFKA]", WQLTypeError, "[RANGE 5 ROWS SLIDE KAFKA]", "TIMESTAMP or integer"),
        ("traffic", "[RANGE 5 MINUTES RATTR ts SATTR row_num SLIDE KAFKA]", WQLSemanticError, "SATTR row_num", "SATTR"),
    ],
)
def test_window_structure_rules(stream: str, spec: str, error_type: type[WQLError], snippet: str, message: str) -> None:
    error, text = spec_error(spec, stream)
    assert type(error) is error_type
    assert message in error.message
    window_at = text.index("[")
    offset = text.index(snippet, window_at + (0 if snippet.startswith("[") else 1))
    if spec.count(snippet) > 1:  # duplicates: the second occurrence is the one to blame
        offset = text.index(snippet, offset + 1)
    assert error.span is not None
    assert text[error.span.start : error.span.end] == snippet, error.message
    assert error.span.start == offset
    assert (error.line, error.column) == (1, offset + 1)


def test_hints_for_interval_and_rank_errors() -> None:
    error, _ = spec_error("[RANGE 5 MINUTES RATTR started SATTR rank(ended)]", "calls")
    assert error.hint == "write SATTR rank(started)"
    error, _ = spec_error("[RANGE 5 WATTR price]")
    assert error.hint is not None and "DOUBLE or BIGINT" in error.hint
    error, _ = spec_error("[RANGE 5 WATTR seg_id]")
    assert error.hint is not None and "TIMESTAMP, DATE, number or row_num" in error.hint
    error, _ = spec_error("[RANGE 10 MINUTES WATTR (started, m_to)]", "calls")
    assert "'started' is TIMESTAMP, 'm_to' is BIGINT" in error.message


@pytest.mark.parametrize(
    ("spec", "hint"),
    [
        ("[RANGE 5 MINUTES WATTR ts RATTR ts]", "use WATTR a for both range and slide, or RATTR a with SATTR b"),
        ("[RANGE 5 MINUTES WATTR ts SATTR row_num]", "use RATTR a with SATTR b"),
        (
            "[RANGE 5 MINUTES RATTR ts SATTR mile]",
            "a window can slide on its own attribute, on row_num or on rank(attr)",
        ),
        ("[RANGE UNBOUNDED WATTR ts]", "e.g. [RANGE UNBOUNDED SLIDE 1 HOUR]"),
        ("[PATTR seg_id]", "e.g. [RANGE 5 MINUTES SLIDE 1 MINUTE], or [RANGE 100 ROWS]"),
        ("[SLIDE KAFKA WATTR ts]", "e.g. [RANGE 10 SECONDS WATTR ts SLIDE KAFKA]"),
        ("[RANGE UNBOUNDED RATTR ts SLIDE 1 ROW]", "e.g. [RANGE 5 MINUTES RATTR ts SLIDE 1 ROW]"),
        ("[RANGE 5 MINUTES WATTR ts ALIGN 'yesterday']", "write ALIGN TIMESTAMP 'YYYY-MM-DD HH:MM:SS'"),
        ("[RANGE 5 MINUTES RATTR ts SLIDE 1 MINUTE SATTR row_num]", "write SLIDE n ROWS"),
    ],
)
def test_window_structure_hints(spec: str, hint: str) -> None:
    error, _ = spec_error(spec)
    assert error.hint is not None
    assert hint in error.hint


def test_window_error_positions_on_later_lines() -> None:
    text = "SELECT count(*) AS n\nFROM traffic\n  [RANGE 5 MINUTES\n   SLIDE 0 MINUTES WATTR ts]"
    error = only_error(text)
    assert (error.line, error.column) == (4, 10)
    assert error.span is not None and text[error.span.start : error.span.end] == "0 MINUTES"


def test_no_window_at_all() -> None:
    text = "SELECT count(*) AS n FROM traffic"
    error = only_error(text)
    assert isinstance(error, WQLSemanticError)
    assert "no window on stream 'traffic'" in error.message
    assert error.hint is not None and "FROM traffic [RANGE" in error.hint
    assert_points_at(error, text, "traffic")


# ------------------------------------------------------------------ names


def test_unknown_stream_suggests_a_close_name() -> None:
    text = "SELECT count(*) AS n FROM trafic [RANGE 10 ROWS]"
    error = only_error(text)
    assert isinstance(error, WQLNameError)
    assert error.message == "unknown stream 'trafic'"
    assert error.hint == "did you mean 'traffic'?"
    assert_points_at(error, text, "trafic")


def test_unknown_stream_lists_known_streams_or_says_how_to_declare() -> None:
    error = only_error("SELECT count(*) AS n FROM zzz [RANGE 10 ROWS]")
    assert error.hint == "known streams: traffic, calls"
    error = only_error("SELECT count(*) AS n FROM zzz [RANGE 10 ROWS]", {})
    assert error.hint is not None and error.hint.startswith("declare it first: CREATE STREAM zzz")


def test_stream_names_are_case_insensitive() -> None:
    query = analyze_one("SELECT count(*) AS n FROM TRAFFIC [RANGE 10 ROWS]")
    assert query.stream.name == "traffic"


@pytest.mark.parametrize(
    ("text", "snippet", "hint"),
    [
        ("SELECT max(sped) AS m FROM traffic [RANGE 10 ROWS]", "sped", "did you mean 'speed'?"),
        ("SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] WHERE sped > 0", "sped", "did you mean 'speed'?"),
        ("SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] GROUP BY seg", "seg", "did you mean 'seg_id'?"),
        ("SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] HAVING max(sped) > 1", "sped", "did you mean 'speed'?"),
        ("SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] ORDER BY nn", "nn", "did you mean 'n'?"),
        ("SELECT count(*) AS n FROM traffic [RANGE 5 MINUTES WATTR ts PATTR seg]", "seg", "did you mean 'seg_id'?"),
        (
            "SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] WHERE zzzz > 0",
            "zzzz",
            "columns are: seg_id, speed, ts, mile, lane, flag, price, d",
        ),
    ],
)
def test_unknown_columns(text: str, snippet: str, hint: str) -> None:
    error = only_error(text)
    assert isinstance(error, WQLNameError)
    assert error.message == f"unknown column '{snippet}' in stream 'traffic'"
    assert error.hint == hint
    assert_points_at(error, text, snippet)


def test_unknown_window_attribute_is_a_name_error() -> None:
    error, text = spec_error("[RANGE 5 MINUTES WATTR sped]")
    assert error.hint == "did you mean 'speed'?"
    assert_points_at(error, text, "sped")
    assert isinstance(error, WQLNameError)


@pytest.mark.parametrize(
    ("text", "snippet", "hint"),
    [
        ("SELECT mx(speed) AS m FROM traffic [RANGE 10 ROWS]", "mx(speed)", "did you mean 'max'?"),
        ("SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] WHERE uper(seg_id) = 'A'", "uper(seg_id)", "upper"),
        ("SELECT nosuchfn(speed) AS m FROM traffic [RANGE 10 ROWS]", "nosuchfn(speed)", None),
    ],
)
def test_unknown_functions(text: str, snippet: str, hint: str | None) -> None:
    error = only_error(text)
    assert isinstance(error, WQLNameError)
    assert error.message.startswith("unknown function '")
    if hint is None:
        assert error.hint is None
    else:
        assert error.hint is not None and hint in error.hint
    assert_points_at(error, text, snippet)


def test_columns_resolve_case_insensitively_to_the_declared_spelling() -> None:
    query = analyze_one(
        "SELECT SEG_ID, max(SPEED) AS Top FROM traffic [RANGE 5 MINUTES WATTR TS] "
        "WHERE Speed > 0 AND traffic.LANE = 2 GROUP BY Seg_Id"
    )
    assert query.columns == ("wid", "window_start", "window_end", "seg_id", "Top")
    assert [k.sql for k in query.keys] == ["seg_id"]
    assert [a.sql for a in query.aggregates] == ["MAX(speed)"]
    assert query.where == "speed > 0 AND lane = 2"
    assert query.input_columns == ("seg_id", "speed", "ts", "lane")


def test_auto_names_use_the_declared_spelling() -> None:
    query = analyze_one("SELECT max(Speed), Seg_Id FROM traffic [RANGE 10 ROWS] GROUP BY SEG_ID")
    assert query.columns == ("wid", "window_start", "window_end", "seg_id", "max_speed")


def test_stream_qualified_columns() -> None:
    query = analyze_one(
        "SELECT traffic.seg_id, max(TRAFFIC.speed) AS m FROM traffic [RANGE 10 ROWS] GROUP BY traffic.seg_id"
    )
    assert query.columns == ("wid", "window_start", "window_end", "seg_id", "m")
    assert query.aggregates[0].sql == "MAX(speed)"
    text = "SELECT max(other.speed) AS m FROM traffic [RANGE 10 ROWS]"
    error = only_error(text)
    assert isinstance(error, WQLNameError)
    assert error.message == "unknown stream 'other' in 'other.speed'"
    assert error.hint == "the query reads stream 'traffic'"
    assert_points_at(error, text, "other.speed")


def test_window_columns_only_after_windowing() -> None:
    for clause, snippet in (("WHERE wid > 3", "wid"), ("GROUP BY window_start", "window_start")):
        text = f"SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] {clause}"
        error = only_error(text)
        assert isinstance(error, WQLSemanticError)
        assert f"'{snippet}' is known only after windowing" in error.message
        assert_points_at(error, text, snippet)


def test_row_num_in_expressions_is_not_supported() -> None:
    text = "SELECT max(row_num) AS m FROM traffic [RANGE 10 ROWS]"
    error = only_error(text)
    assert isinstance(error, WQLNotSupportedError)
    assert error.hint is not None and "WATTR row_num" in error.hint
    assert_points_at(error, text, "row_num")


def test_analyze_with_a_catalog_directly() -> None:
    catalog = Catalog([schema_from_mapping("Traffic", TRAFFIC)])
    [select] = wql.parse("SELECT seg_id, avg(speed) AS a FROM traffic [RANGE 1 HOUR] GROUP BY seg_id").statements
    assert isinstance(select, ast.Select)
    query = analyze_select(select, catalog)
    assert query.stream.name == "Traffic"
    assert query.window.attr.name == "ts"
    assert query.columns == ("wid", "window_start", "window_end", "seg_id", "a")
    [bad] = wql.parse("SELECT avg(sped) AS a FROM traffic [RANGE 1 HOUR]").statements
    assert isinstance(bad, ast.Select)
    with pytest.raises(WQLNameError, match="unknown column 'sped'"):
        analyze_select(bad, catalog)
    with pytest.raises(WQLNameError, match="unknown stream 'traffic'"):
        analyze_select(select, Catalog())


def test_streams_mapping_with_an_unknown_type_is_rejected() -> None:
    with pytest.raises(WQLTypeError, match="unknown type 'FOO'"):
        wql.analyze("SELECT count(*) AS n FROM s [RANGE 1 ROWS]", streams={"s": {"a": "FOO"}})


def test_create_stream_replaces_an_earlier_definition() -> None:
    text = (
        "CREATE STREAM traffic (seg_id STRING, at_ts TIMESTAMP);\n"
        "SELECT count(*) AS n FROM traffic [RANGE 1 HOUR];\n"
        "SELECT max(speed) AS m FROM traffic [RANGE 1 HOUR];"
    )
    program = wql.analyze(text, streams=STREAMS)
    [error] = program.errors
    assert isinstance(error, WQLNameError)
    assert error.line == 3
    [statement] = program.queries
    assert statement.query is not None and statement.query.window.attr.name == "at_ts"


# ------------------------------------------------------------------ aggregates


@pytest.mark.parametrize(
    ("text", "error_type", "snippet", "message", "hint"),
    [
        ("SELECT max(min(speed)) AS m FROM traffic [RANGE 10 ROWS]", WQLSemanticError, "min(speed)", "nested", None),
        (
            "SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] HAVING max(min(speed)) > 3",
            WQLSemanticError,
            "min(speed)",
            "aggregates cannot be nested",
            None,
        ),
        (
            "SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] WHERE max(speed) > 3",
            WQLSemanticError,
            "max(speed)",
            "aggregates are not allowed in WHERE",
            "HAVING",
        ),
        (
            "SELECT max(speed) AS m FROM traffic [RANGE 10 ROWS] WHERE count(*) > 1",
            WQLSemanticError,
            "count(*)",
            "aggregates are not allowed in WHERE",
            "HAVING",
        ),
        (
            "SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] GROUP BY max(speed)",
            WQLSemanticError,
            "max(speed)",
            "aggregates are not allowed in GROUP BY",
            None,
        ),
        (
            "SELECT first(speed) AS f FROM traffic [RANGE 10 ROWS]",
            WQLSemanticError,
            "first(speed)",
            "first() has no meaning over a window",
            "min_by(value, ts)",
        ),
        (
            "SELECT last(speed) AS f FROM traffic [RANGE 10 ROWS]",
            WQLSemanticError,
            "last(speed)",
            "last() has no meaning over a window",
            "max_by(value, ts)",
        ),
        (
            "SELECT any_value(speed) AS f FROM traffic [RANGE 10 ROWS]",
            WQLSemanticError,
            "any_value(speed)",
            "any_value() has no meaning",
            "use min or max",
        ),
        (
            "SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] HAVING first(speed) > 3",
            WQLSemanticError,
            "first(speed)",
            "first() has no meaning",
            "min_by",
        ),
        ("SELECT * FROM traffic [RANGE 10 ROWS]", WQLSemanticError, "*", "'*' is not allowed", "name the columns"),
        ("SELECT sum(*) AS s FROM traffic [RANGE 10 ROWS]", WQLSemanticError, "*", "'*' is not allowed", None),
        ("SELECT count(DISTINCT *) AS s FROM traffic [RANGE 10 ROWS]", WQLSemanticError, "*", "not allowed", None),
        ("SELECT traffic.* FROM traffic [RANGE 10 ROWS]", WQLSemanticError, "*", "'*' is not allowed", None),
    ],
)
def test_aggregate_rules(text: str, error_type: type[WQLError], snippet: str, message: str, hint: str | None) -> None:
    error = only_error(text)
    assert type(error) is error_type
    assert message in error.message
    if hint is not None:
        assert error.hint is not None and hint in error.hint
    assert_points_at(error, text, snippet)


def test_count_star_is_allowed() -> None:
    query = analyze_one("SELECT count(*) AS n, count(speed) AS c FROM traffic [RANGE 10 ROWS]")
    assert [(a.function, a.star, a.args) for a in query.aggregates] == [
        ("count", True, ()),
        ("count", False, ("speed",)),
    ]


@pytest.mark.parametrize("function", ["first_value", "last_value"])
def test_first_value_and_last_value_are_rejected(function: str) -> None:
    error = only_error(f"SELECT {function}(speed) AS f FROM traffic [RANGE 10 ROWS]")
    assert isinstance(error, WQLSemanticError)
    assert "has no meaning over a window" in error.message


def test_over_windows_are_rejected() -> None:
    text = "SELECT sum(speed) OVER (PARTITION BY seg_id) AS s FROM traffic [RANGE 10 ROWS]"
    error = only_error(text)
    assert isinstance(error, WQLSemanticError)
    assert "OVER windows are not allowed in the select list" in error.message
    assert error.hint is not None and "brackets after the stream name" in error.hint
    assert (error.line, error.column) == at(text, "sum(speed) OVER")[1:]
    error = only_error("SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] ORDER BY sum(speed) OVER ()")
    assert "OVER windows are not allowed in ORDER BY" in error.message


def test_over_error_covers_the_whole_window_call() -> None:
    text = "SELECT sum(speed) OVER (PARTITION BY seg_id) AS s FROM traffic [RANGE 10 ROWS]"
    assert_points_at(only_error(text), text, "sum(speed) OVER (PARTITION BY seg_id)")


@pytest.mark.parametrize(
    ("clause", "context"),
    [
        ("WHERE speed > (SELECT 1)", "WHERE"),
        ("WHERE seg_id IN (SELECT seg_id FROM traffic)", "WHERE"),
        ("WHERE EXISTS (SELECT 1)", "WHERE"),
        ("GROUP BY seg_id HAVING seg_id IN (SELECT 1)", "HAVING"),
    ],
)
def test_subqueries_are_not_supported(clause: str, context: str) -> None:
    text = f"SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] {clause}"
    error = only_error(text)
    assert isinstance(error, WQLNotSupportedError)
    assert error.message == f"subqueries in {context}"
    assert error.line == 1


def test_subquery_error_points_at_the_subquery() -> None:
    text = "SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] WHERE speed > (SELECT max(speed) FROM traffic)"
    error = only_error(text)
    assert error.span is not None
    assert error.span.start in {text.index("(SELECT"), text.index("SELECT max")}


def test_higher_order_exists_is_not_a_subquery() -> None:
    errors = wql.check(
        "SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] WHERE exists(array(1, 2), x -> x > lane)",
        streams=STREAMS,
    )
    assert errors == []


def test_aggregate_filter_clause_is_supported_or_clearly_rejected() -> None:
    errors = wql.check("SELECT max(speed) FILTER (WHERE lane > 1) AS m FROM traffic [RANGE 10 ROWS]", streams=STREAMS)
    assert errors == [] or isinstance(errors[0], WQLNotSupportedError)


@pytest.mark.parametrize(
    ("call", "function"),
    [
        ("sum(seg_id)", "sum"),
        ("avg(seg_id)", "avg"),
        ("avg(DISTINCT seg_id)", "avg"),
        ("stddev(flag)", "stddev"),
        ("median(ts)", "median"),
    ],
)
def test_numeric_aggregates_of_non_numbers_are_type_errors(call: str, function: str) -> None:
    text = f"SELECT {call} AS x FROM traffic [RANGE 10 ROWS]"
    error = only_error(text)
    assert isinstance(error, WQLTypeError)
    assert error.message.startswith(f"{function}() needs a number")
    assert error.hint == "count, min and max work on any type"
    assert (error.line, error.column) == (1, 8)


def test_min_max_count_of_strings_are_fine() -> None:
    query = analyze_one(
        "SELECT min(seg_id), max(seg_id), count(seg_id), count(DISTINCT seg_id) FROM traffic [RANGE 10 ROWS]"
    )
    assert len(query.aggregates) == 4


def test_numeric_aggregate_error_covers_the_call() -> None:
    text = "SELECT sum(seg_id) AS x FROM traffic [RANGE 10 ROWS]"
    assert_points_at(only_error(text), text, "sum(seg_id)")


@pytest.mark.parametrize(
    ("text", "column", "snippet", "occurrence"),
    [
        ("SELECT seg_id, max(speed) AS m FROM traffic [RANGE 10 ROWS]", "seg_id", "seg_id", 1),
        ("SELECT speed + 1 AS s, max(speed) AS m FROM traffic [RANGE 10 ROWS] GROUP BY seg_id", "speed", "speed", 1),
        ("SELECT max(speed) + speed AS x FROM traffic [RANGE 10 ROWS]", "speed", "speed", 2),
        ("SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] HAVING speed > 3", "speed", "speed", 1),
        ("SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] HAVING max(speed) > 1 AND speed > 2", "speed", "speed", 2),
        ("SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] ORDER BY upper(seg_id)", "seg_id", "seg_id", 1),
    ],
)
def test_non_aggregated_columns_must_be_keys(text: str, column: str, snippet: str, occurrence: int) -> None:
    error = only_error(text)
    assert isinstance(error, WQLSemanticError)
    assert f"column '{column}' in " in error.message
    assert "is neither aggregated nor a group key" in error.message
    assert error.hint == (f"aggregate it (e.g. max({column})), add GROUP BY {column}, or partition with PATTR {column}")
    assert_points_at(error, text, snippet, occurrence)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT max(speed) + abs(speed - 1) AS x FROM traffic [RANGE 10 ROWS]",
        "SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] HAVING max(speed) > 1 AND (speed + 1) * 2 > 3",
    ],
)
def test_bare_column_caret_skips_aggregated_uses(text: str) -> None:
    assert_points_at(only_error(text), text, "speed", occurrence=2)


def test_partition_attributes_and_group_keys_may_be_selected() -> None:
    query = analyze_one(
        "SELECT lane, seg_id, count(*) AS n FROM traffic [RANGE 5 MINUTES WATTR ts PATTR lane] GROUP BY seg_id"
    )
    assert [(k.name, k.origin) for k in query.keys] == [("lane", "partition"), ("seg_id", "group")]


def test_group_by_alias_and_ordinal() -> None:
    by_alias = analyze_one("SELECT seg_id AS seg, max(speed) AS top FROM traffic [RANGE 10 ROWS] GROUP BY seg")
    by_ordinal = analyze_one("SELECT seg_id AS seg, max(speed) AS top FROM traffic [RANGE 10 ROWS] GROUP BY 1")
    for query in (by_alias, by_ordinal):
        assert query.columns == ("wid", "window_start", "window_end", "seg", "top")
        [key] = query.keys
        assert (key.name, key.sql, key.origin, key.column) == ("seg", "seg_id", "group", "seg_id")
    expr = analyze_one("SELECT lane + 1 AS l1, count(*) AS n FROM traffic [RANGE 10 ROWS] GROUP BY l1")
    assert [(k.name, k.sql, k.column) for k in expr.keys] == [("l1", "lane + 1", None)]
    ordinal_expr = analyze_one("SELECT upper(seg_id), count(*) AS n FROM traffic [RANGE 10 ROWS] GROUP BY 1")
    assert [(k.name, k.sql) for k in ordinal_expr.keys] == [("upper_seg_id", "UPPER(seg_id)")]


def test_group_by_prefers_a_stream_column_over_an_alias() -> None:
    """As in Spark: GROUP BY speed means the input column, even if an item is aliased speed."""
    error = only_error("SELECT seg_id AS speed, count(*) AS n FROM traffic [RANGE 10 ROWS] GROUP BY speed")
    assert "column 'seg_id' in the select list is neither aggregated nor a group key" in error.message


@pytest.mark.parametrize(
    ("clause", "message"),
    [
        ("GROUP BY 3", "GROUP BY 3: the select list has 1 item"),
        ("GROUP BY 0", "GROUP BY 0: the select list has 1 item"),
        ("GROUP BY 1", "GROUP BY cannot use an aggregate"),
        ("GROUP BY n", "GROUP BY cannot use an aggregate"),
        ("ORDER BY 5", "ORDER BY 5: the result has 4 columns"),
        ("ORDER BY 0", "ORDER BY 0: the result has 4 columns"),
    ],
)
def test_bad_ordinals_and_aggregate_keys(clause: str, message: str) -> None:
    text = f"SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] {clause}"
    error = only_error(text)
    assert isinstance(error, WQLSemanticError)
    assert error.message.startswith(message)
    assert_points_at(error, text, clause.rsplit(maxsplit=1)[-1], occurrence=-1)


def test_having_by_alias_aggregate_key_and_window_columns() -> None:
    query = analyze_one(
        "SELECT seg_id, max(speed) AS top FROM traffic [RANGE 10 MINUTES] GROUP BY seg_id "
        "HAVING top > 50 AND min(speed) > 1 AND seg_id <> 'x' AND window_start > TIMESTAMP '2024-01-01 00:00:00'"
    )
    assert query.having == (
        "top > 50 AND min_speed > 1 AND seg_id <> 'x' AND window_start > CAST('2024-01-01 00:00:00' AS TIMESTAMP)"
    )
    # min(speed) is computed for HAVING but is not a result column
    assert [a.name for a in query.aggregates] == ["top", "min_speed"]
    assert query.columns == ("wid", "window_start", "window_end", "seg_id", "top")
    same = analyze_one("SELECT max(speed) AS top FROM traffic [RANGE 10 ROWS] HAVING max(speed) > 1 AND wid > 2")
    assert same.having == "top > 1 AND wid > 2"
    assert len(same.aggregates) == 1


def test_order_by_alias_ordinal_key_aggregate_and_window_columns() -> None:
    query = analyze_one(
        "SELECT seg_id, max(speed) AS top FROM traffic [RANGE 10 ROWS] GROUP BY seg_id "
        "ORDER BY top DESC, 4, wid, window_start DESC, window_end NULLS LAST, avg(speed), max(speed) NULLS FIRST"
    )
    assert [(o.sql, o.descending, o.nulls) for o in query.order_by] == [
        ("top", True, None),
        ("seg_id", False, None),
        ("wid", False, None),
        ("window_start", True, None),
        ("window_end", False, "last"),
        ("avg_speed", False, None),
        ("top", False, "first"),
    ]
    ordinal = analyze_one("SELECT count(*) AS n FROM traffic [RANGE 10 ROWS PATTR lane] ORDER BY 5 DESC, 1, 2, 3, 4")
    assert [o.sql for o in ordinal.order_by] == ["n", "wid", "window_start", "window_end", "lane"]


def test_limit_and_emit_empty_are_recorded() -> None:
    query = analyze_one("SELECT count(*) AS n FROM traffic [RANGE 10 MINUTES] LIMIT 7 EMIT EMPTY")
    assert query.limit == 7
    assert query.emit_empty is True
    assert analyze_one("SELECT count(*) AS n FROM traffic [RANGE 10 MINUTES]").emit_empty is False


@pytest.mark.parametrize(
    "text",
    [
        "SELECT seg_id AS seg, count(*) AS n FROM traffic [RANGE 10 ROWS] GROUP BY seg_id ORDER BY seg",
        "SELECT seg_id AS seg, count(*) AS n FROM traffic [RANGE 10 ROWS] GROUP BY seg HAVING seg <> 'a'",
        "SELECT lane AS l, count(*) AS n FROM traffic [RANGE 10 ROWS PATTR lane] ORDER BY l",
        "SELECT lane + 1 AS l1, count(*) AS n FROM traffic [RANGE 10 ROWS] GROUP BY lane + 1 ORDER BY l1",
    ],
)
def test_having_and_order_by_key_aliases(text: str) -> None:
    assert wql.check(text, streams=STREAMS) == []


def test_order_by_alias_is_resolved_to_its_spelling() -> None:
    query = analyze_one("SELECT count(*) AS n FROM traffic [RANGE 10 ROWS] HAVING N > 1 ORDER BY N")
    assert query.having == "n > 1"
    assert [o.sql for o in query.order_by] == ["n"]


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        ("[RANGE 10 MINUTES]", True),
        ("[RANGE 10 ROWS SLIDE 2 ROWS]", True),
        ("[RANGE UNBOUNDED SLIDE 5 MINUTES WATTR ts]", True),
        ("[RANGE 5 MINUTES RATTR ts SLIDE 1 ROW]", False),
        ("[RANGE 5 MINUTES SATTR rank(ts)]", False),
        ("[RANGE 5 MINUTES WATTR ts SLIDE KAFKA]", False),
    ],
)
def test_emit_empty_only_for_grid_windows(spec: str, allowed: bool) -> None:
    errors = wql.check(f"SELECT count(*) AS n FROM traffic {spec} EMIT EMPTY", streams=STREAMS)
    if allowed:
        assert errors == []
    else:
        [error] = errors
        assert isinstance(error, WQLSemanticError)
        assert "EMIT EMPTY applies to grid windows" in error.message


# ------------------------------------------------------------------ result columns


@pytest.mark.parametrize(
    ("items", "columns"),
    [
        ("max(speed)", ["max_speed"]),
        ("count(*)", ["count"]),
        ("count(DISTINCT seg_id)", ["count_distinct_seg_id"]),
        ("count(speed)", ["count_speed"]),
        ("min_by(seg_id, speed)", ["min_by_seg_id_speed"]),
        ("percentile(speed, 0.9)", ["percentile_speed"]),
        ("regr_slope(speed, mile)", ["regr_slope_speed_mile"]),  # Spark's spelling, not sqlglot's class name
        ("mean(speed), std(speed)", ["avg_speed", "stddev_speed"]),
        ("max(speed) AS top", ["top"]),
        ("max(speed) - min(speed) AS spread", ["spread"]),
        ("sum(speed) / count(*)", ["expr"]),
        ("count(*), count(*)", ["count", "count_2"]),
        ("count(*), count(*), count(*)", ["count", "count_2", "count_3"]),
        ("max(speed) AS max_speed, max(speed)", ["max_speed", "max_speed_2"]),
        # user aliases are reserved first, so a generated name steps around them
        ("max(speed), max(mile) AS max_speed", ["max_speed_2", "max_speed"]),
        ("count(*), count(*) AS count", ["count_2", "count"]),
        ("window_start AS ws, count(*)", ["ws", "count"]),
        ("max(speed) AS `weird name`", ["weird name"]),
    ],
)
def test_result_column_names(items: str, columns: list[str]) -> None:
    query = analyze_one(f"SELECT {items} FROM traffic [RANGE 10 ROWS]")
    assert query.columns == ("wid", "window_start", "window_end", *columns)


def test_window_columns_in_the_select_list_are_not_repeated() -> None:
    query = analyze_one("SELECT wid, window_start, window_end, count(*) AS n FROM traffic [RANGE 10 ROWS]")
    assert query.columns == ("wid", "window_start", "window_end", "n")


def test_columns_order_is_window_partition_group_outputs() -> None:
    query = analyze_one(
        "SELECT count(*) AS n, seg_id, max(speed), lane FROM traffic "
        "[RANGE 5 MINUTES WATTR ts PATTR lane] GROUP BY seg_id"
    )
    assert query.columns == ("wid", "window_start", "window_end", "lane", "seg_id", "n", "max_speed")
    assert query.key_names == ("lane", "seg_id")
    assert [o.name for o in query.outputs] == ["n", "max_speed"]


def test_aliased_partition_key() -> None:
    query = analyze_one("SELECT lane AS l, count(*) AS n FROM traffic [RANGE 5 MINUTES WATTR ts PATTR lane]")
    assert query.columns == ("wid", "window_start", "window_end", "l", "n")
    assert [(k.name, k.sql, k.origin) for k in query.keys] == [("l", "lane", "partition")]


def test_expression_outputs_read_aggregate_columns() -> None:
    query = analyze_one(
        "SELECT round(avg(speed), 1) AS avg_speed, max(speed) - min(speed) AS spread FROM traffic [RANGE 10 ROWS]"
    )
    assert [(o.name, o.sql) for o in query.outputs] == [
        ("avg_speed", "ROUND(avg_speed_2, 1)"),
        ("spread", "max_speed - min_speed"),
    ]
    assert [a.sql for a in query.aggregates] == ["AVG(speed)", "MAX(speed)", "MIN(speed)"]


@pytest.mark.parametrize(
    ("items", "alias", "message"),
    [
        ("count(*) AS n, max(speed) AS n", "n", "two result columns are named 'n'"),
        ("count(*) AS n, max(speed) AS N", "N", "two result columns are named 'N'"),
        ("count(*) AS wid", "wid", "'wid' is a WQL result column"),
        ("count(*) AS Window_Start", "Window_Start", "is a WQL result column"),
        ("count(*) AS window_end", "window_end", "is a WQL result column"),
    ],
)
def test_bad_aliases(items: str, alias: str, message: str) -> None:
    text = f"SELECT {items} FROM traffic [RANGE 10 ROWS]"
    error = only_error(text)
    assert isinstance(error, WQLSemanticError)
    assert message in error.message
    offset = text.rindex(f"AS {alias}") + 3
    assert error.span is not None and error.span.start == offset
    assert error.column == offset + 1


# ------------------------------------------------------------------ aggregate kinds (docs/language.md §6)

CUMULATIVE, SELECTIVE = Duplicates.CUMULATIVE, Duplicates.SELECTIVE
DISTRIBUTIVE, ALGEBRAIC, HOLISTIC = PartialState.DISTRIBUTIVE, PartialState.ALGEBRAIC, PartialState.HOLISTIC


@pytest.mark.parametrize(
    ("call", "function", "kind", "family"),
    [
        ("count(*)", "count", DISTRIBUTIVE, CUMULATIVE),
        ("count(speed)", "count", DISTRIBUTIVE, CUMULATIVE),
        ("sum(speed)", "sum", DISTRIBUTIVE, CUMULATIVE),
        ("min(speed)", "min", DISTRIBUTIVE, SELECTIVE),
        ("max(speed)", "max", DISTRIBUTIVE, SELECTIVE),
        ("avg(speed)", "avg", ALGEBRAIC, CUMULATIVE),
        ("mean(speed)", "avg", ALGEBRAIC, CUMULATIVE),
        ("stddev(speed)", "stddev", ALGEBRAIC, CUMULATIVE),
        ("variance(speed)", "variance", ALGEBRAIC, CUMULATIVE),
        ("min_by(seg_id, speed)", "min_by", ALGEBRAIC, SELECTIVE),
        ("max_by(seg_id, ts)", "max_by", ALGEBRAIC, SELECTIVE),
        ("count(DISTINCT seg_id)", "count_distinct", HOLISTIC, CUMULATIVE),
        ("collect_list(seg_id)", "collect_list", HOLISTIC, CUMULATIVE),
        ("array_agg(seg_id)", "collect_list", HOLISTIC, CUMULATIVE),
        pytest.param("median(speed)", "median", HOLISTIC, CUMULATIVE),
        pytest.param("percentile(speed, 0.9)", "percentile", HOLISTIC, CUMULATIVE),
    ],
)
def test_aggregate_kinds(call: str, function: str, kind: PartialState, family: Duplicates) -> None:
    query = analyze_one(f"SELECT {call} AS x FROM traffic [RANGE 10 ROWS]")
    [aggregate] = query.aggregates
    assert aggregate.function == function
    assert aggregate.info.partial_state is kind
    assert aggregate.info.duplicates is family


def test_median_and_percentile_are_holistic() -> None:
    query = analyze_one("SELECT median(speed), percentile(speed, 0.5) FROM traffic [RANGE 10 ROWS]")
    assert [a.info.partial_state for a in query.aggregates] == [HOLISTIC, HOLISTIC]


def test_approximate_aggregates_are_flagged() -> None:
    query = analyze_one(
        "SELECT approx_count_distinct(seg_id), percentile_approx(speed, 0.5), count(DISTINCT seg_id) "
        "FROM traffic [RANGE 10 ROWS]"
    )
    assert [(a.function, a.info.approximate) for a in query.aggregates] == [
        ("approx_count_distinct", True),
        ("percentile_approx", True),
        ("count_distinct", False),
    ]


def test_aggregate_arguments_are_resolved() -> None:
    query = analyze_one("SELECT min_by(Seg_Id, SPEED) AS m, count(DISTINCT SEG_ID) AS c FROM traffic [RANGE 10 ROWS]")
    assert [(a.sql, a.args) for a in query.aggregates] == [
        ("MIN_BY(seg_id, speed)", ("seg_id", "speed")),
        ("COUNT(DISTINCT seg_id)", ("seg_id",)),
    ]


# ------------------------------------------------------------------ classes (docs/semantics.md §5)


@pytest.mark.parametrize(
    ("stream", "spec", "window_class", "context", "reason"),
    [
        # time/value sliding, tumbling, landmark, non-partitioned tuple-based: CF
        ("traffic", "[RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts]", "CF", "none", "follows from t and the spec alone"),
        ("traffic", "[RANGE 5 MINUTES WATTR ts]", "CF", "none", "attribute-based grid window"),
        ("traffic", "[RANGE 10 SLIDE 2 WATTR mile]", "CF", "none", "attribute-based grid window"),
        ("traffic", "[RANGE 2 SLIDE 5 WATTR speed]", "CF", "none", "follows from t and the spec alone"),
        ("traffic", "[RANGE 7 DAYS SLIDE 1 DAY WATTR d]", "CF", "none", "attribute-based"),
        ("traffic", "[RANGE UNBOUNDED SLIDE 1 HOUR WATTR ts]", "CF", "none", "follows from t and the spec alone"),
        ("traffic", "[RANGE 1000 ROWS SLIDE 100 ROWS]", "CF", "none", "tuple-based grid window"),
        ("traffic", "[RANGE UNBOUNDED SLIDE 10 ROWS]", "CF", "none", "tuple-based grid window"),
        # time-based with PATTR: still CF (PATTR adds nothing over GROUP BY)
        ("traffic", "[RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts PATTR seg_id]", "CF", "none", "the spec alone"),
        ("traffic", "[RANGE 10 WATTR mile PATTR seg_id]", "CF", "none", "the spec alone"),
        # interval events: CF
        ("calls", "[RANGE 10 MINUTES SLIDE 5 MINUTES WATTR (started, ended)]", "CF", "none", "interval-event"),
        # partitioned tuple-based: FCF
        ("traffic", "[RANGE 1000 ROWS SLIDE 100 ROWS PATTR seg_id]", "FCF", "backward", "earlier arrivals"),
        ("traffic", "[RANGE UNBOUNDED SLIDE 10 ROWS PATTR seg_id, lane]", "FCF", "backward", "(seg_id, lane)"),
        # slide-by-tuple, slide n rows over row_num: FCB
        ("traffic", "[RANGE 5 MINUTES RATTR ts SLIDE 1 ROW SATTR row_num]", "FCB", "forward, bounded", "on arrival"),
        ("traffic", "[RANGE 5 MINUTES RATTR ts SLIDE 10 ROWS]", "FCB", "forward, bounded", "known on arrival"),
        ("traffic", "[RANGE 20 RATTR mile SLIDE 2 ROWS PATTR seg_id]", "FCB", "forward, bounded", "on arrival"),
        # slide n rows over rank(a): FCU, except n = 1, which names every tuple (FCB)
        ("traffic", "[RANGE 5 MINUTES RATTR ts SLIDE 10 ROWS SATTR rank(ts)]", "FCU", "forward, unbounded", "no bound"),
        ("traffic", "[RANGE 20 RATTR mile SLIDE 2 ROWS SATTR rank(mile)]", "FCU", "forward, unbounded", "later"),
        ("traffic", "[RANGE 5 MINUTES SATTR rank(ts)]", "FCB", "forward, bounded", "same windows as slide-by-tuple"),
        ("traffic", "[RANGE 5 MINUTES RATTR ts SLIDE 1 ROW SATTR rank(ts)]", "FCB", "forward, bounded", "on arrival"),
        # Kafka sliding windows: FCB
        ("traffic", "[RANGE 10 SECONDS WATTR ts SLIDE KAFKA]", "FCB", "forward, bounded", "later records"),
        ("traffic", "[RANGE 10 WATTR mile SLIDE KAFKA PATTR seg_id]", "FCB", "forward, bounded", "Kafka"),
    ],
)
def test_window_classes(stream: str, spec: str, window_class: str, context: str, reason: str) -> None:
    query = analyze_one(f"SELECT count(*) AS n FROM {stream} {spec}")
    classification = query.classification
    assert classification.window_class is WindowClass(window_class)
    assert classification.context == context
    assert reason in classification.reason


def test_class_reasons_explain_the_context() -> None:
    fcf = analyze_one("SELECT count(*) AS n FROM traffic [RANGE 100 ROWS PATTR seg_id]").classification
    assert "partitioned tuple-based" in fcf.reason and "within its partition" in fcf.reason
    fcu = analyze_one("SELECT count(*) AS n FROM traffic [RANGE 5 MINUTES SLIDE 3 ROWS SATTR rank(ts)]").classification
    assert "every 3" in fcu.reason and "rank can change with any later arrival" in fcu.reason


# ------------------------------------------------------------------ CREATE STREAM


@pytest.mark.parametrize(
    ("ddl", "error_type", "snippet", "message"),
    [
        ("CREATE STREAM s (a INT, A BIGINT) FROM 'x.csv'", WQLSemanticError, "A", "column 'A' is declared twice"),
        ("CREATE STREAM s (a INT, wid INT) FROM 'x.csv'", WQLSemanticError, "wid", "name of a WQL output column"),
        ("CREATE STREAM s (a INT, Window_End INT)", WQLSemanticError, "Window_End", "name of a WQL output column"),
        ("CREATE STREAM s (window_start INT)", WQLSemanticError, "window_start", "name of a WQL output column"),
        ("CREATE STREAM s (a INT, row_num INT) FROM 'x.csv'", WQLSemanticError, "row_num", "hide the arrival position"),
        ("CREATE STREAM s (a INT, seq DOUBLE) ROW_NUM seq", WQLTypeError, "seq", "ROW_NUM needs an integer column"),
        ("CREATE STREAM s (a INT, seq STRING) ROW_NUM seq", WQLTypeError, "seq", "'seq' is STRING"),
        ("CREATE STREAM s (a INT, seq INT) ROW_NUM sq", WQLNameError, "sq", "unknown column 'sq'"),
        ("CREATE STREAM s (a INT) FROM 'x.txt'", WQLSemanticError, "FROM 'x.txt'", "format"),
        ("CREATE STREAM s (a INT) FROM 'x.txt' FORMAT xml", WQLSyntaxError, "xml", "unknown format 'xml'"),
        ("CREATE STREAM s (a INTEGR)", WQLTypeError, "INTEGR", "unknown type 'INTEGR'"),
    ],
)
def test_create_stream_checks(ddl: str, error_type: type[WQLError], snippet: str, message: str) -> None:
    errors = wql.check(ddl)
    assert len(errors) == 1
    [error] = errors
    assert type(error) is error_type
    assert message in error.message
    assert_points_at(error, ddl, snippet, occurrence=-1)


def test_create_stream_hints() -> None:
    [row_num] = wql.check("CREATE STREAM s (a INT, row_num INT)")
    assert row_num.hint is not None and "ROW_NUM row_num" in row_num.hint
    [fmt] = wql.check("CREATE STREAM s (a INT) FROM 'x.txt'")
    assert fmt.hint == "add FORMAT csv | json | parquet | rate | kafka"
    [typo] = wql.check("CREATE STREAM s (a INT) FROM 'x.txt' FORMAT jsn")
    assert typo.hint == "did you mean 'json'?"
    [wid] = wql.check("CREATE STREAM s (wid INT)")
    assert wid.hint is not None and "rename the column" in wid.hint


def test_duplicate_option_points_at_the_repeat() -> None:
    ddl = "CREATE STREAM s (a INT) FROM 'x.csv' OPTIONS (header = true, Header = false)"
    [error] = wql.check(ddl)
    assert isinstance(error, WQLSemanticError)
    assert "given twice" in error.message
    assert_points_at(error, ddl, "Header = false")


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        ("x.csv", "csv"),
        ("x.CSV", "csv"),
        ("x.json", "json"),
        ("data/x.JSONL", "json"),
        ("x.ndjson", "json"),
        ("x.parquet", "parquet"),
        ("x.pq", "parquet"),
        ("dir/x.parquet/", "parquet"),
        ("s3://bucket/x.csv", "csv"),
    ],
)
def test_format_is_inferred_from_the_path(path: str, fmt: str) -> None:
    program = wql.analyze(f"CREATE STREAM s (a INT) FROM '{path}'")
    assert program.errors == []
    [statement] = program.statements
    assert statement.stream is not None
    assert statement.stream.format == fmt


def test_explicit_format_and_options() -> None:
    program = wql.analyze(
        "CREATE STREAM s (a INT, b DECIMAL(10,2), c VARCHAR, d LONG) FROM 'x.txt' FORMAT CSV "
        "OPTIONS (header = true, sep = ';', n = 3, f = 1.5)"
    )
    assert program.errors == []
    stream = program.statements[0].stream
    assert stream is not None
    assert stream.format == "csv"
    assert stream.options == (("header", True), ("sep", ";"), ("n", 3), ("f", 1.5))
    assert [(c.name, c.type) for c in stream.columns] == [
        ("a", "INT"),
        ("b", "DECIMAL(10,2)"),
        ("c", "STRING"),
        ("d", "BIGINT"),
    ]


def test_stream_without_a_path() -> None:
    program = wql.analyze("CREATE STREAM s (a INT)")
    assert program.errors == []
    stream = program.statements[0].stream
    assert stream is not None and stream.path is None and stream.format is None


def test_relative_paths_resolve_against_the_query_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "queries"
    folder.mkdir()
    query_file = folder / "q.wql"
    query_file.write_text(
        "CREATE STREAM rel (a INT) FROM 'data/x.csv';\n"
        "CREATE STREAM up (a INT) FROM '../common/y.json';\n"
        "CREATE STREAM abs (a INT) FROM '/srv/z.parquet';\n"
        "CREATE STREAM url (a INT) FROM 's3://bucket/w.csv';\n",
        encoding="utf-8",
    )
    expected = {
        "rel": str(folder / "data" / "x.csv"),
        "up": str(tmp_path / "common" / "y.json"),
        "abs": "/srv/z.parquet",
        "url": "s3://bucket/w.csv",
    }
    program = wql.load(str(query_file))
    assert program.errors == []
    assert {s.name: s.path for s in program.catalog} == expected
    # a relative query path, from another working directory
    monkeypatch.chdir(tmp_path)
    again = wql.load("queries/q.wql")
    assert {s.name: s.path for s in again.catalog} == expected
    # text without a file keeps the path as written
    loose = wql.analyze(query_file.read_text(encoding="utf-8"))
    assert {s.name: s.path for s in loose.catalog}["rel"] == "data/x.csv"


def test_errors_in_a_loaded_file_carry_path_and_source(tmp_path: Path) -> None:
    query_file = tmp_path / "bad.wql"
    text = "CREATE STREAM s (a INT, ts TIMESTAMP);\n\nSELECT max(b) AS m FROM s [RANGE 1 HOUR];\n"
    query_file.write_text(text, encoding="utf-8")
    [error] = wql.load(str(query_file)).errors
    assert error.path == str(query_file)
    assert error.source == text
    assert error.location() == f"{query_file}:3:12"
    assert error.excerpt() == [(3, "SELECT max(b) AS m FROM s [RANGE 1 HOUR];", 12, 1)]


def test_check_collects_one_error_per_broken_statement() -> None:
    text = (
        "SELECT max(sped) AS m FROM traffic [RANGE 10 ROWS];\n"
        "SELECT count(*) AS n FROM traffic [RANGE 10 ROWS];\n"
        "SELECT count(*) AS n FROM traffic [RANGE 5 ROWS WATTR ts];\n"
        "SELECT seg_id, count(*) AS n FROM traffic [RANGE 10 ROWS];\n"
    )
    program = wql.analyze(text, streams=STREAMS)
    assert [(type(e), e.line) for e in program.errors] == [
        (WQLNameError, 1),
        (WQLTypeError, 3),
        (WQLSemanticError, 4),
    ]
    assert [s.number for s in program.queries] == [2]
    assert [s.error is None for s in program.statements] == [False, True, False, False]


def test_a_fault_inside_type_inference_is_raised_not_taken_for_an_unknown_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """sqlglot not knowing a type is an unknown type (None); anything else failing there is WQL's fault and must
    surface, not silently refuse the plans that needed the type."""
    import sqlglot.optimizer.annotate_types

    from wql.compiler.analysis import expression_type
    from wql.compiler.schema import Column, Stream

    stream = Stream("s", (Column("k", "INT"), Column("v", "DOUBLE")))
    assert expression_type(stream, "v + 1") == "DOUBLE"
    assert expression_type(stream, "pmod(k, 3)") is None  # a function whose type sqlglot does not infer

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a fault in type inference")

    monkeypatch.setattr(sqlglot.optimizer.annotate_types, "annotate_types", broken)
    with pytest.raises(RuntimeError, match="a fault in type inference"):
        expression_type(stream, "v + 1")


def test_a_plan_refused_for_an_untyped_argument_says_so_and_how_to_cast() -> None:
    compiled = wql.compile(
        "CREATE STREAM s (k INT, v DOUBLE, ts TIMESTAMP) FROM '/tmp/s' FORMAT parquet;\n"
        "SELECT k, sum(pmod(k, 3)) AS total FROM s [RANGE 10 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY k"
    )
    notes = {choice.name: choice.note for choice in compiled.explain().plans}
    assert compiled.plan == "bucket"
    assert "cannot infer the type of SUM(PMOD(k, 3))'s argument" in notes["pane"]
    assert "CAST(x AS DOUBLE)" in notes["pane"]
