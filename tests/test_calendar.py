"""Calendar windows (docs/semantics.md §2.21): months and a zone's local days as grid cells.

The reference evaluator places calendar windows with Python's zoneinfo; the jobs with Spark's own
time-zone functions. The differential tests draw specs in months and in local days, zones with and
without daylight saving time (one with a half-hour offset, one whose DST moves by half an hour, one
that skips midnight), and timestamps near DST changes, month ends, leap days and year ends, and hold
every plan (bucket, pane, slice; the combine in the JVM and in numpy) to the reference.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import wql
from tests.conftest import PACKED, SPARK
from tests.differential import combined_in, compare
from tests.streaming import check
from wql.compiler import calendars
from wql.compiler.kinds import kind_of
from wql.runtime.reference import from_base

STREAM = "CREATE STREAM s (case_id INT, seq BIGINT, k STRING, v DOUBLE, ts TIMESTAMP, dt DATE) ROW_NUM seq;\n"
SCHEMA = "case_id INT, seq BIGINT, k STRING, v DOUBLE, ts TIMESTAMP, dt DATE"
AGGREGATES = "count(*) AS n, count(v) AS nv, sum(v) AS sv, min(v) AS lo, max(v) AS hi"
ZONES = ["UTC", "America/New_York", "Australia/Sydney", "Asia/Kolkata", "Australia/Lord_Howe", "America/Santiago"]
# Instants (UTC) near what a calendar makes hard: DST changes (New York, Sydney, Lord Howe's half hour, Santiago's
# skipped midnight), month ends, a leap day, year ends.
ANCHORS = [
    datetime(2024, 3, 10, 7, 0),
    datetime(2024, 11, 3, 5, 30),
    datetime(2024, 4, 6, 15, 0),
    datetime(2024, 10, 5, 16, 0),
    datetime(2024, 9, 8, 4, 0),
    datetime(2024, 4, 7, 3, 0),
    datetime(2024, 2, 29, 12, 0),
    datetime(2024, 1, 31, 23, 59),
    datetime(2023, 2, 28, 23, 30),
    datetime(2023, 12, 31, 23, 0),
    datetime(2024, 6, 30, 18, 30),
]


def spark_rows(spark: Any, rows: list[dict[str, Any]]) -> Any:
    columns = [c.split()[0] for c in SCHEMA.split(", ")]
    return spark.createDataFrame([tuple(r[c] for c in columns) for r in rows], SCHEMA)


@st.composite
def calendar_rows(draw: st.DrawFn, count: int = 4, max_rows: int = 16) -> list[dict[str, Any]]:
    """Rows of `count` random streams, each tuple minutes to days from one of the ANCHORS, some NULL."""
    rows = []
    for case_id in range(count * PACKED):
        for seq in range(draw(st.integers(0, max_rows))):
            anchor = draw(st.sampled_from(ANCHORS))
            moment = anchor + timedelta(minutes=draw(st.integers(-3 * 24 * 60, 3 * 24 * 60)))
            moment = draw(st.one_of(st.just(moment), st.none())) if seq % 7 == 6 else moment
            rows.append(
                {
                    "case_id": case_id,
                    "seq": seq,
                    "k": draw(st.sampled_from(["a", "b"])),
                    "v": draw(st.one_of(st.none(), st.integers(-8, 8).map(lambda q: q / 4))),
                    "ts": moment,
                    "dt": None if moment is None else moment.date(),
                }
            )
    return rows


# Specs as (template, the plans that take it): {zone} a TIME ZONE clause, {attr} the attribute.
SPECS = [
    ("RANGE 3 MONTHS SLIDE 1 MONTH WATTR {attr}{zone}", ("bucket", "pane")),
    ("RANGE 1 MONTH WATTR {attr}{zone}", ("bucket",)),
    ("RANGE 1 YEAR SLIDE 1 QUARTER WATTR {attr}{zone}", ("bucket", "pane")),
    ("RANGE 3 MONTHS SLIDE 2 MONTHS WATTR {attr}{zone}", ("bucket", "pane", "slice")),
    ("RANGE 1 MONTH SLIDE 2 MONTHS WATTR {attr}{zone}", ("bucket", "pane", "slice")),
    ("RANGE 1 YEAR SLIDE 1 MONTH WATTR {attr} CUMULATE{zone}", ("bucket", "pane")),
    ("RANGE 1 MONTH SLIDE 1 DAY WATTR {attr} CUMULATE{zone}", ("bucket", "pane")),
    ("RANGE 1 QUARTER SLIDE 1 DAY WATTR {attr} CUMULATE ALIGN TIMESTAMP '2023-02-01'{zone}", ("bucket", "pane")),
    ("RANGE 1 YEAR SLIDE 1 QUARTER WATTR {attr} ALIGN START TIMESTAMP '2023-04-01'{zone}", ("bucket", "pane")),
]
DAY_SPECS = [  # local days: a zone over a TIMESTAMP
    ("RANGE 2 DAYS SLIDE 1 DAY WATTR ts{zone}", ("bucket", "pane")),
    ("RANGE 1 WEEK WATTR ts{zone}", ("bucket",)),
    ("RANGE 5 DAYS SLIDE 3 DAYS WATTR ts{zone}", ("bucket", "pane", "slice")),
    ("RANGE 1 WEEK SLIDE 1 DAY WATTR ts CUMULATE{zone}", ("bucket", "pane")),
]


@st.composite
def calendar_specs(draw: st.DrawFn) -> tuple[str, str]:
    """A calendar spec and a plan that takes it."""
    if draw(st.booleans()):
        template, plans = draw(st.sampled_from(DAY_SPECS))
        spec = template.format(zone=f" TIME ZONE '{draw(st.sampled_from(ZONES))}'")
    else:
        template, plans = draw(st.sampled_from(SPECS))
        attr = draw(st.sampled_from(["ts", "dt"]))
        zone = "" if attr == "dt" else draw(st.sampled_from(["", *(f" TIME ZONE '{z}'" for z in ZONES)]))
        spec = template.format(attr=attr, zone=zone)
    return spec, draw(st.sampled_from(plans))


@pytest.mark.spark
@SPARK
@given(data=st.data(), rows=calendar_rows())
def test_every_plan_equals_the_reference_on_calendar_windows(
    spark: Any, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    spec, plan = data.draw(calendar_specs())
    text = f"SELECT case_id, k, {AGGREGATES} FROM s [{spec}] GROUP BY case_id, k"
    compare(spark, text, rows, plan, stream=STREAM, schema=SCHEMA)


@pytest.mark.spark
@SPARK
@given(data=st.data(), rows=calendar_rows())
def test_the_numpy_combine_equals_the_reference_on_calendar_cells(
    spark: Any, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    """The pane plan's combine without WQL's JVM kernel: month periods of days (month to date) and
    sliding months."""
    spec = data.draw(
        st.sampled_from(
            [
                "RANGE 1 MONTH SLIDE 1 DAY WATTR ts CUMULATE TIME ZONE 'America/New_York'",
                "RANGE 1 QUARTER SLIDE 1 DAY WATTR dt CUMULATE",
                "RANGE 3 MONTHS SLIDE 1 MONTH WATTR ts TIME ZONE 'Asia/Kolkata'",
            ]
        )
    )
    with combined_in(spark, "arrow"):
        compare(spark, f"SELECT case_id, {AGGREGATES} FROM s [{spec}] GROUP BY case_id", rows, "pane", STREAM, SCHEMA)


# ------------------------------------------------------------------ the reference's calendar, checked by hand


def window_of(spec: str) -> Any:
    program = wql.analyze(STREAM + f"SELECT count(*) AS n FROM s [{spec}]", spark=False)
    statement = program.statements[-1]
    assert statement.error is None, statement.error
    assert statement.query is not None
    return statement.query.window


def bounds(spec: str, moment: datetime) -> tuple[datetime, datetime]:
    """The first window holding `moment` (UTC): its [start, end) as naive UTC datetimes."""
    window = window_of(spec)
    kind = kind_of(window)
    micros = int((moment - datetime(1970, 1, 1)).total_seconds() * 1_000_000)
    found = [w for w in kind.candidates(window, [micros]) if kind.bounds(window, w)[0] <= micros]
    holding = [w for w in found if micros < kind.bounds(window, w)[1]]
    lo, hi = kind.bounds(window, holding[0])
    return from_base(lo, window.attr.domain), from_base(hi, window.attr.domain)


def test_a_new_york_day_lasts_23_hours_in_march_and_25_in_november() -> None:
    spec = "RANGE 1 DAY WATTR ts TIME ZONE 'America/New_York'"
    assert bounds(spec, datetime(2024, 3, 10, 12)) == (datetime(2024, 3, 10, 5), datetime(2024, 3, 11, 4))
    assert bounds(spec, datetime(2024, 11, 3, 12)) == (datetime(2024, 11, 3, 4), datetime(2024, 11, 4, 5))
    assert bounds(spec, datetime(2024, 7, 1, 3, 59)) == (datetime(2024, 6, 30, 4), datetime(2024, 7, 1, 4))


def test_months_start_on_the_first_in_the_zone_and_in_utc_without_one() -> None:
    assert bounds("RANGE 1 MONTH WATTR ts", datetime(2024, 2, 29, 23, 59)) == (
        datetime(2024, 2, 1),
        datetime(2024, 3, 1),
    )
    assert bounds("RANGE 1 MONTH WATTR ts TIME ZONE 'Asia/Kolkata'", datetime(2024, 2, 29, 19)) == (
        datetime(2024, 2, 29, 18, 30),
        datetime(2024, 3, 31, 18, 30),
    )
    assert bounds("RANGE 1 YEAR SLIDE 1 QUARTER WATTR ts", datetime(2024, 5, 1)) == (
        datetime(2023, 7, 1),
        datetime(2024, 7, 1),
    )


def test_calendar_weeks_in_a_zone_start_on_monday() -> None:
    start, end = bounds("RANGE 1 WEEK WATTR ts TIME ZONE 'Europe/Berlin'", datetime(2024, 3, 14, 12))
    assert (start, end) == (datetime(2024, 3, 10, 23), datetime(2024, 3, 17, 23))  # Monday 00:00 in Berlin (CET)
    assert date(2024, 3, 11).isoweekday() == 1


def test_a_day_that_skips_midnight_starts_when_the_clocks_jump() -> None:
    """Santiago moved its clocks from 00:00 to 01:00 on 2024-09-08: that day starts at 01:00 local, 04:00 UTC."""
    spec = "RANGE 1 DAY WATTR ts TIME ZONE 'America/Santiago'"
    assert bounds(spec, datetime(2024, 9, 8, 12)) == (datetime(2024, 9, 8, 4), datetime(2024, 9, 9, 3))


def test_month_to_date_has_a_window_for_every_day_of_the_month() -> None:
    window = window_of("RANGE 1 MONTH SLIDE 1 DAY WATTR dt CUMULATE")
    kind = kind_of(window)
    february = range(calendars.month_first_day(649), calendars.month_first_day(650))  # 2024-02: a leap month
    assert len(february) == 29
    firsts = {kind.bounds(window, w)[0] for w in february}
    assert firsts == {calendars.month_first_day(649)}
    assert [kind.bounds(window, w)[1] for w in february] == [w + 1 for w in february]


def test_the_spec_resolves_back_to_itself() -> None:
    for spec in (
        "RANGE 1 YEAR SLIDE 1 QUARTER WATTR ts ALIGN TIMESTAMP '2023-04-01' TIME ZONE 'Australia/Sydney'",
        "RANGE 1 MONTH SLIDE 1 DAY WATTR dt CUMULATE",
        "RANGE 2 WEEKS SLIDE 1 WEEK WATTR ts TIME ZONE 'Europe/Berlin'",
        "RANGE 90 MINUTES WATTR ts TIME ZONE 'Asia/Kolkata'",
    ):
        window = window_of(spec)
        assert window_of(window.spec_text().strip("[]")) == window, window.spec_text()


# ------------------------------------------------------------------ what a spec cannot be, with a caret

ERRORS = [
    ("RANGE 1 MONTH WATTR v", wql.WQLTypeError, "is not a TIMESTAMP or DATE", "1 MONTH"),
    ("RANGE 1 MONTH WATTR ts TIME ZONE 'America/NewYork'", wql.WQLNameError, "America/New_York", "TIME ZONE"),
    ("RANGE 1 MONTH WATTR dt TIME ZONE 'UTC'", wql.WQLSemanticError, "a DATE has no time of day", "TIME ZONE"),
    ("RANGE 3 MONTHS SLIDE 1 DAY WATTR ts", wql.WQLSemanticError, "cannot slide by days", "1 DAY"),
    ("RANGE 1 DAY SLIDE 1 HOUR WATTR ts TIME ZONE 'Europe/Paris'", wql.WQLSemanticError, "24 HOURS", "1 HOUR"),
    ("RANGE 1 MONTH SLIDE 7 DAYS WATTR ts CUMULATE", wql.WQLSemanticError, "grows by 1 DAY", "7 DAYS"),
    ("RANGE 1 YEAR WATTR ts ALIGN TIMESTAMP '2024-04-15'", wql.WQLSemanticError, "2024-04-01", "ALIGN"),
    ("RANGE 1 HOUR WATTR ts SLACK 1 MONTH", wql.WQLTypeError, "no fixed length", "1 MONTH"),
    ("SESSION GAP 1 HOUR WATTR ts TIME ZONE 'UTC'", wql.WQLSemanticError, "TIME ZONE does not apply", "TIME ZONE"),
]


@pytest.mark.parametrize(("spec", "kind", "said", "at"), ERRORS, ids=[e[0] for e in ERRORS])
def test_a_spec_no_calendar_can_hold_is_refused_in_one_line_at_its_clause(
    spec: str, kind: type[wql.WQLError], said: str, at: str
) -> None:
    text = STREAM + f"SELECT count(*) AS n FROM s [{spec}]"
    with pytest.raises(kind) as raised:
        wql.compile(text, spark=False)
    error = raised.value
    assert said in error.message + (error.hint or ""), error.render()
    assert error.span is not None
    line = text.splitlines()[error.span.line - 1]
    assert line[error.span.column - 1 :].startswith(at), (line, error.span)


# ------------------------------------------------------------------ on a stream


@st.composite
def stream_rows(draw: st.DrawFn, count: int = 3, max_rows: int = 10) -> list[dict[str, Any]]:
    """Rows for the streaming harness (tests/streaming.py's stream), their timestamps near the ANCHORS."""
    rows = []
    for case_id in range(count):
        for _ in range(draw(st.integers(0, max_rows))):
            moment = draw(st.sampled_from(ANCHORS)) + timedelta(minutes=draw(st.integers(-2 * 24 * 60, 2 * 24 * 60)))
            rows.append(
                {
                    "case_id": case_id,
                    "k": draw(st.sampled_from(["a", "b"])),
                    "v": draw(st.one_of(st.none(), st.integers(-8, 8).map(lambda q: q / 4))),
                    "n": draw(st.integers(0, 4)),
                    "ts": moment,
                    "x": None,
                    "y": None,
                    "d": None,
                }
            )
    return rows


@pytest.mark.spark
@pytest.mark.parametrize("plan", ["bucket", "pane"])
@SPARK
@given(data=st.data(), rows=stream_rows())
def test_a_stream_of_calendar_windows_equals_the_model_and_drained_the_batch(
    spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    """Random triggers and disorder, late and malformed rows, SLACK in hours: the windows each trigger emits,
    the late rows with the windows they missed, and (nothing late) the drained stream equal to the batch."""
    spec = data.draw(
        st.sampled_from(
            [
                "RANGE 3 MONTHS SLIDE 1 MONTH WATTR ts",
                "RANGE 2 DAYS SLIDE 1 DAY WATTR ts TIME ZONE 'America/New_York'",
                "RANGE 1 MONTH SLIDE 1 DAY WATTR ts CUMULATE TIME ZONE 'Australia/Sydney'",
                "RANGE 1 WEEK SLIDE 1 DAY WATTR ts CUMULATE TIME ZONE 'America/Santiago'",
            ]
        )
    )
    slack = data.draw(st.sampled_from(["", " SLACK 12 HOURS", " SLACK 1 DAY GENEROUS"]))
    text = f"SELECT k, {AGGREGATES} FROM s [{spec}{slack}] GROUP BY case_id, k"
    check(spark, data, text, rows, "ts", plan=plan)
