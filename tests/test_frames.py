"""Sessions and frames (data-driven windows): the reference evaluator on hand-worked edges, the errors
a spec can meet, the defaults it records, and how explain classes it.

Every expected result was worked out on paper from semantics.md §2, "Data-driven windows" (each
window a maximal run of consecutive tuples in (attribute, row_num) order, named by its first tuple's
value); the comments show the working. Spark plans are checked against the same reference in
tests/test_frames_spark.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

import wql
from wql import WQLError, WQLNameError, WQLNotSupportedError, WQLSemanticError, WQLTypeError
from wql.compiler.windows import Form
from wql.runtime.reference import evaluate_query

STREAM = "CREATE STREAM s (k STRING, v DOUBLE, x BIGINT, n INT, ts TIMESTAMP, d DOUBLE, name STRING, day DATE);\n"
T0 = datetime(2024, 1, 1)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def r(
    ts: float | None = 0,
    v: float | None = 1.0,
    k: str | None = "a",
    x: int | None = None,
    n: int | None = None,
) -> dict[str, Any]:
    return {"k": k, "v": v, "x": x, "n": n, "ts": None if ts is None else at(ts), "d": None, "name": None, "day": None}


def run(query: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    program = wql.analyze(STREAM + query)
    assert not program.errors, program.errors
    [statement] = program.queries
    assert statement.query is not None
    return evaluate_query(statement.query, rows)


def spans(result: list[dict[str, Any]], *columns: str) -> list[tuple[Any, ...]]:
    """(window_start, window_end, …) in seconds after T0, in result order."""

    def seconds(value: Any) -> Any:
        return round((value - T0).total_seconds(), 6) if isinstance(value, datetime) else value

    return [
        (seconds(row["window_start"]), seconds(row["window_end"]), *(seconds(row[c]) for c in columns))
        for row in result
    ]


# ------------------------------------------------------------------ sessions


def test_a_gap_exactly_g_joins_and_one_microsecond_more_splits() -> None:
    # GAP 10 s: 0 and 10 are 10 s apart (≤ g): one session [0, 10 + 10). 10 and 20.000001 are more
    # than 10 s apart: a new session [20.000001, 30.000001).
    rows = [r(0), r(10), r(20.000001)]
    result = run("SELECT count(*) AS n FROM s [SESSION GAP 10 SECONDS WATTR ts]", rows)
    assert spans(result, "n") == [(0, 20, 2), (20.000001, 30.000001, 1)]
    assert [row["wid"] for row in result] == [at(0), at(20.000001)]


def test_one_tuple_sessions_end_a_gap_after_it_and_at_it_for_kafka() -> None:
    rows = [r(0), r(100)]
    plain = run("SELECT count(*) AS n FROM s [SESSION GAP 10 SECONDS WATTR ts]", rows)
    assert spans(plain, "n") == [(0, 10, 1), (100, 110, 1)]
    kafka = run("SELECT count(*) AS n FROM s [SESSION GAP 10 SECONDS KAFKA WATTR ts]", rows)
    assert spans(kafka, "n") == [(0, 0, 1), (100, 100, 1)]  # Kafka's [first, last]


def test_sessions_are_per_partition() -> None:
    # a: 0, 5 (one session); b: 3, 30 (two sessions); the tuples of a do not join b's.
    rows = [r(0, k="a"), r(3, k="b"), r(5, k="a"), r(30, k="b")]
    result = run("SELECT k, count(*) AS n FROM s [SESSION GAP 10 SECONDS WATTR ts PATTR k]", rows)
    assert [(row["k"], *span) for row, span in zip(result, spans(result, "n"), strict=True)] == [
        ("a", 0, 15, 2),
        ("b", 3, 13, 1),
        ("b", 30, 40, 1),
    ]


def test_a_null_attribute_is_in_no_window_and_breaks_nothing() -> None:
    # 0 and 8 are 8 s apart: one session; the NULL between them (in arrival order) is in none.
    rows = [r(0, v=1), r(None, v=100), r(8, v=2)]
    result = run("SELECT count(*) AS n, sum(v) AS total FROM s [SESSION GAP 10 SECONDS WATTR ts]", rows)
    assert spans(result, "n", "total") == [(0, 18, 2, 3.0)]


def test_equal_timestamps_are_one_session_however_they_arrive() -> None:
    rows = [r(5, v=1), r(5, v=2), r(0, v=4), r(5, v=8)]
    result = run("SELECT count(*) AS n, sum(v) AS total FROM s [SESSION GAP 0 SECONDS WATTR ts]", rows)
    # GAP 0: only equal timestamps join: {0}, {5, 5, 5}.
    assert spans(result, "n", "total") == [(0, 0, 1, 4.0), (5, 5, 3, 11.0)]


def test_max_cuts_a_session_at_its_first_value_plus_max() -> None:
    # GAP 10 s MAX 20 s: 0, 9, 18 are within the gap, but 20 ≥ 0 + 20 starts a new session (a tuple at
    # exactly first + MAX is cut off), and 25 < 20 + 20 joins it. Ends: min(last + g, first + MAX):
    # min(18 + 10, 0 + 20) = 20 for the first, min(25 + 10, 20 + 20) = 35 for the second.
    rows = [r(t) for t in (0, 9, 18, 20, 25)]
    result = run("SELECT count(*) AS n FROM s [SESSION GAP 10 SECONDS MAX 20 SECONDS WATTR ts]", rows)
    assert spans(result, "n") == [(0, 20, 3), (20, 35, 2)]
    kafka = run("SELECT count(*) AS n FROM s [SESSION GAP 10 SECONDS MAX 20 SECONDS KAFKA WATTR ts]", rows)
    assert spans(kafka, "n") == [(0, 18, 3), (20, 25, 2)]


def test_where_filters_contents_but_every_tuple_keeps_the_session_going() -> None:
    # 0, 8, 16: one session by the gap rule, whatever WHERE says; WHERE keeps only v > 1 in it.
    # A session whose tuples all fail WHERE is not reported (windows are reported when non-empty).
    rows = [r(0, v=1), r(8, v=5), r(16, v=1), r(100, v=1)]
    result = run("SELECT count(*) AS n FROM s [SESSION GAP 10 SECONDS WATTR ts] WHERE v > 1", rows)
    assert spans(result, "n") == [(0, 26, 1)]


def test_kafka_sessions_filter_records_first() -> None:
    # As Kafka's DSL does (filter, then windowedBy): without the v = 1 records, 8 is alone.
    rows = [r(0, v=1), r(8, v=5), r(16, v=1)]
    result = run("SELECT count(*) AS n FROM s [SESSION GAP 10 SECONDS KAFKA WATTR ts] WHERE v > 1", rows)
    assert spans(result, "n") == [(8, 8, 1)]


def test_group_by_splits_a_session_but_not_its_bounds() -> None:
    rows = [r(0, v=1, x=1), r(5, v=2, x=2), r(9, v=4, x=1)]
    result = run("SELECT x, sum(v) AS total FROM s [SESSION GAP 10 SECONDS WATTR ts] GROUP BY x", rows)
    assert sorted(spans(result, "x", "total")) == [(0, 19, 1, 5.0), (0, 19, 2, 2.0)]


def test_sessions_over_numbers_dates_and_arrivals() -> None:
    rows = [r(0, x=3), r(1, x=5), r(2, x=9), r(3, x=None)]
    numbers = run("SELECT count(*) AS n FROM s [SESSION GAP 2 WATTR x]", rows)
    assert [(row["window_start"], row["window_end"], row["n"]) for row in numbers] == [(3, 7, 2), (9, 11, 1)]
    # row_num: the global arrival position, not a position within the partition.
    rows = [r(0, k="a"), r(1, k="b"), r(2, k="b"), r(3, k="a")]
    arrivals = run("SELECT k, count(*) AS n FROM s [SESSION GAP 1 ROW WATTR row_num PATTR k]", rows)
    assert [(row["k"], row["wid"], row["window_end"], row["n"]) for row in arrivals] == [
        ("a", 0, 1, 1),
        ("b", 1, 3, 2),
        ("a", 3, 4, 1),
    ]


# ------------------------------------------------------------------ threshold frames


def test_threshold_frames_are_maximal_runs_where_the_predicate_holds() -> None:
    # v: 50 30 20 45 10 10 → runs of v < 40: {30, 20} from 1 to 2, {10, 10} from 4 to 5.
    rows = [r(t, v=v) for t, v in enumerate([50, 30, 20, 45, 10, 10])]
    result = run("SELECT count(*) AS n, min(v) AS lo FROM s [FRAME THRESHOLD (v < 40) WATTR ts]", rows)
    assert spans(result, "n", "lo") == [(1, 2, 2, 20.0), (4, 5, 2, 10.0)]


def test_a_null_predicate_ends_a_frame_and_is_in_none() -> None:
    # v: 30, NULL, 20: the NULL makes v < 40 NULL, which ends the first run; it is in no frame.
    rows = [r(0, v=30), r(1, v=None), r(2, v=20)]
    result = run("SELECT count(*) AS n, count(v) AS nv FROM s [FRAME THRESHOLD (v < 40) WATTR ts]", rows)
    assert spans(result, "n", "nv") == [(0, 0, 1, 1), (2, 2, 1, 1)]


def test_a_run_below_the_minimum_is_no_frame() -> None:
    # runs of v < 40: {0, 1} (2 rows, 1 s), {3, 4, 5} (3 rows, 2 s), {7} (1 row).
    rows = [r(t, v=v) for t, v in enumerate([30, 30, 50, 30, 30, 30, 50, 30])]
    in_rows = run("SELECT count(*) AS n FROM s [FRAME THRESHOLD (v < 40) MIN 3 ROWS WATTR ts]", rows)
    assert spans(in_rows, "n") == [(3, 5, 3)]
    in_time = run("SELECT count(*) AS n FROM s [FRAME THRESHOLD (v < 40) MIN 1 SECOND WATTR ts]", rows)
    assert spans(in_time, "n") == [(0, 1, 2), (3, 5, 3)]  # last − first ≥ 1 s; {7} spans 0 s


def test_equal_timestamps_are_taken_in_arrival_order() -> None:
    # All at ts = 5, in arrival order v = 30, 50, 30: the 50 splits them into two frames that both
    # start at 5 (two windows with one window-id: arrival tells them apart).
    rows = [r(5, v=30), r(5, v=50), r(5, v=30)]
    result = run("SELECT count(*) AS n FROM s [FRAME THRESHOLD (v < 40) WATTR ts]", rows)
    assert spans(result, "n") == [(5, 5, 1), (5, 5, 1)]
    # Arrival order, not the order of values: v = 30 arriving last at ts = 4 comes first by ts.
    rows = [r(5, v=30), r(4, v=30), r(6, v=50)]
    assert spans(run("SELECT count(*) AS n FROM s [FRAME THRESHOLD (v < 40) WATTR ts]", rows), "n") == [(4, 5, 2)]


def test_threshold_where_filters_contents_only() -> None:
    # The run 0..2 (v < 40) holds; WHERE x = 1 keeps two of its tuples in it.
    rows = [r(0, v=30, x=1), r(1, v=30, x=2), r(2, v=30, x=1)]
    result = run("SELECT count(*) AS n FROM s [FRAME THRESHOLD (v < 40) MIN 3 ROWS WATTR ts] WHERE x = 1", rows)
    assert spans(result, "n") == [(0, 2, 2)]


# ------------------------------------------------------------------ delta frames


def test_delta_frames_stay_within_delta_of_their_first_tuple() -> None:
    # DELTA 5: first frame anchored at 10 takes 12, 15 (|15 − 10| = 5 ≤ 5), not 16; the next is
    # anchored at 16 and takes 12 (|12 − 16| = 4) and 20 (4), not 9.
    rows = [r(t, x=x) for t, x in enumerate([10, 12, 15, 16, 12, 20, 9])]
    result = run("SELECT count(*) AS n, max(x) AS top FROM s [FRAME DELTA 5 ON x WATTR ts]", rows)
    assert spans(result, "n", "top") == [(0, 2, 3, 15), (3, 5, 3, 20), (6, 6, 1, 9)]


def test_a_null_x_closes_the_delta_frame_and_is_in_none() -> None:
    rows = [r(0, x=1), r(1, x=None), r(2, x=1), r(3, x=1)]
    result = run("SELECT count(*) AS n FROM s [FRAME DELTA 5 ON x WATTR ts]", rows)
    assert spans(result, "n") == [(0, 0, 1), (2, 3, 2)]


def test_delta_over_a_double_expression_and_a_fractional_delta() -> None:
    # x = v * 2: 1, 3, 4.5, 4: anchored at 1, 3 is 2 ≤ 2.5 away, 4.5 is 3.5: new frame at 4.5 takes 4.
    rows = [r(t, v=v) for t, v in enumerate([0.5, 1.5, 2.25, 2.0])]
    result = run("SELECT count(*) AS n FROM s [FRAME DELTA 2.5 ON (v * 2) WATTR ts]", rows)
    assert spans(result, "n") == [(0, 1, 2), (2, 3, 2)]


# ------------------------------------------------------------------ aggregate frames


def test_the_tuple_where_the_condition_first_holds_is_the_frames_last() -> None:
    # sum(v) > 10: 4, 4 (8), 4 (12 > 10: the frame ends here) | 6, 6 (12: ends) | 1 (the stream ends).
    rows = [r(t, v=v) for t, v in enumerate([4, 4, 4, 6, 6, 1])]
    result = run("SELECT count(*) AS n, sum(v) AS total FROM s [FRAME AGGREGATE (sum(v) > 10) WATTR ts]", rows)
    assert spans(result, "n", "total") == [(0, 2, 3, 12.0), (3, 4, 2, 12.0), (5, 5, 1, 1.0)]


def test_an_aggregate_of_nulls_is_null_and_never_meets_the_condition() -> None:
    # sum(v) of NULLs is NULL, and NULL >= 0 is not true: the frame runs on until v = 0 arrives.
    rows = [r(0, v=None), r(1, v=None), r(2, v=0), r(3, v=None)]
    result = run("SELECT count(*) AS n FROM s [FRAME AGGREGATE (sum(v) >= 0) WATTR ts]", rows)
    assert spans(result, "n") == [(0, 2, 3), (3, 3, 1)]


def test_aggregate_conditions_combine_with_and_or_not() -> None:
    # count(*) >= 3 OR max(v) > 8: 1, 9 (max 9 > 8: ends) | 1, 1, 1 (three: ends) | 2 (stream ends).
    rows = [r(t, v=v) for t, v in enumerate([1, 9, 1, 1, 1, 2])]
    result = run("SELECT count(*) AS n FROM s [FRAME AGGREGATE (count(*) >= 3 OR max(v) > 8) WATTR ts]", rows)
    assert spans(result, "n") == [(0, 1, 2), (2, 4, 3), (5, 5, 1)]
    # NOT (avg(v) < 2): the running average first reaches 2 at 1, 3 (avg 2); then 5 alone.
    rows = [r(t, v=v) for t, v in enumerate([1, 3, 5])]
    result = run("SELECT count(*) AS n FROM s [FRAME AGGREGATE (NOT avg(v) < 2) WATTR ts]", rows)
    assert spans(result, "n") == [(0, 1, 2), (2, 2, 1)]


def test_nan_meets_a_greater_than_condition_as_spark_orders_it() -> None:
    # Spark orders NaN above every number: sum(v) is NaN after the NaN, and NaN > 100 holds.
    rows = [r(0, v=1), r(1, v=float("nan")), r(2, v=1)]
    result = run("SELECT count(*) AS n FROM s [FRAME AGGREGATE (sum(v) > 100) WATTR ts]", rows)
    assert spans(result, "n") == [(0, 1, 2), (2, 2, 1)]


# ------------------------------------------------------------------ resolution, defaults, errors


def window(spec: str, select: str = "count(*) AS c") -> Any:
    compiled = wql.compile(STREAM + f"SELECT {select} FROM s {spec}")
    return compiled


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("[SESSION GAP 10 SECONDS WATTR ts PATTR k]", Form.SESSION),
        ("[SESSION GAP 5 MINUTES KAFKA WATTR ts PATTR k]", Form.SESSION),
        ("[SESSION GAP 5 MINUTES MAX 1 HOUR WATTR ts]", Form.SESSION),
        ("[FRAME THRESHOLD (v < 40) MIN 3 ROWS WATTR ts PATTR k]", Form.THRESHOLD),
        ("[FRAME DELTA 5 ON v WATTR ts]", Form.DELTA),
        ("[FRAME AGGREGATE (sum(v) > 100) WATTR ts]", Form.AGGREGATE),
    ],
)
def test_every_data_driven_window_is_fcu_with_its_extent(spec: str, kind: Form) -> None:
    compiled = window(spec)
    assert compiled.query.window.form is kind
    explanation = compiled.explain().to_dict()
    assert explanation["class"] == "FCU"
    assert explanation["context"] == "forward, unbounded"
    assert "later" in explanation["class_reason"]
    assert explanation["extent"].startswith("extent(w) = u₁ … uₙ consecutive")
    assert explanation["plan"] in {"fold", "starts", "scan"}
    assert all(p["cost"] is not None or p["note"] for p in explanation["plans"])
    assert wql.compile(STREAM + f"SELECT count(*) AS c FROM s {compiled.query.window.spec_text()}").query.window == (
        compiled.query.window
    )


def test_defaults_are_recorded() -> None:
    session = window("[SESSION GAP 10 SECONDS]").query.window
    assert session.attr.name == "ts" and session.defaults == ("WATTR ts (the stream's only TIMESTAMP column)",)
    frame = window("[FRAME DELTA 1 ON x]").query.window
    assert frame.attr.name == "ts"
    assert frame.defaults == ("WATTR ts (the stream's only TIMESTAMP column orders the frames)",)
    assert window("[SESSION GAP 3 ROWS]").query.window.attr.name == "row_num"


def test_the_plans_offered_for_each_kind() -> None:
    chosen = {spec: window(spec).plan for spec in ("[SESSION GAP 1 SECOND]", "[FRAME AGGREGATE (count(*) > 2)]")}
    assert chosen == {"[SESSION GAP 1 SECOND]": "fold", "[FRAME AGGREGATE (count(*) > 2)]": "fold"}
    jvm = {p.name: p.note for p in window("[FRAME THRESHOLD (v > 0)]").explain().plans}
    assert "in the JVM" in jvm["fold"]  # sessions, threshold and delta frames on an integral attribute
    assert "spilling sorter" in jvm["fold"]  # bounded memory: a hot key streams
    numpy = {p.name: p.note for p in window("[FRAME AGGREGATE (count(*) > 2) WATTR v]").explain().plans}
    assert "numpy" in numpy["fold"]  # a DOUBLE attribute
    for plan in ("fold", "scan"):  # and what numpy's pass holds, said: bounded too
        assert "batch by batch" in numpy[plan] and "frames in flight, never a key's tuples" in numpy[plan]
    holistic = window("[SESSION GAP 1 SECOND PATTR k]", "median(v) AS m")
    assert holistic.plan == "starts"  # fold needs fixed-size states; starts is cheaper than scan
    chain = window("[FRAME DELTA 1 ON v]", "median(v) AS m")
    assert chain.plan == "scan"
    notes = {p.name: p.note for p in chain.explain().plans}
    assert "anchored at its first tuple" in notes["starts"]


class Bad:
    def __init__(self, spec: str, kind: type[WQLError], message: str, marked: str, select: str = "count(*) AS c"):
        self.spec, self.kind, self.message, self.marked, self.select = spec, kind, message, marked, select


BAD = [
    Bad("[SESSION GAP 10 SECONDS WATTR name]", WQLTypeError, "'name' is STRING, which cannot order windows", "name"),
    Bad("[SESSION GAP 10 ROWS WATTR ts]", WQLTypeError, "ROWS count arrivals, but 'ts' is a TIMESTAMP", "10 ROWS"),
    Bad("[SESSION GAP -1 SECONDS WATTR ts]", WQLTypeError, "GAP must not be negative", "-1 SECONDS"),
    Bad("[SESSION GAP 1 SECOND MAX 0 SECONDS]", WQLTypeError, "must be positive", "0 SECONDS"),
    Bad("[SESSION GAP 1 WATTR nope]", WQLNameError, "unknown column 'nope'", "nope"),
    Bad("[SESSION GAP 1.5 WATTR x]", WQLTypeError, "not a whole number", "1.5"),
    Bad("[SESSION GAP 12 HOURS WATTR day]", WQLTypeError, "DATE 'day' counts whole days", "12 HOURS"),
    Bad(
        "[SESSION GAP 10 SECONDS RANGE 5 MINUTES]",
        WQLSemanticError,
        "RANGE does not apply to a session",
        "RANGE 5 MINUTES",
    ),
    Bad(
        "[FRAME DELTA 1 ON v SLIDE 5 MINUTES]",
        WQLSemanticError,
        "SLIDE does not apply to a delta frame",
        "SLIDE 5 MINUTES",
    ),
    Bad(
        "[SESSION GAP 1 SECOND FRAME DELTA 1 ON v]",
        WQLSemanticError,
        "a SESSION or a FRAME, not both",
        "FRAME DELTA 1 ON v",
    ),
    Bad("[FRAME DELTA 1 ON v KAFKA]", WQLSemanticError, "KAFKA applies to sessions", "KAFKA"),
    Bad("[SESSION GAP 1 SECOND CUMULATE]", WQLSemanticError, "CUMULATE does not apply to a session", "CUMULATE"),
    Bad("[FRAME DELTA 1 ON v ALIGN FIRST]", WQLSemanticError, "ALIGN does not apply to a delta frame", "ALIGN FIRST"),
    Bad("[SESSION GAP 1 SECOND WATTR (ts, ts)]", WQLNotSupportedError, "interval events", "WATTR (ts, ts)"),
    Bad("[FRAME THRESHOLD (speed < 40) WATTR ts]", WQLNameError, "unknown column 'speed'", "speed"),
    Bad("[FRAME THRESHOLD (v) WATTR ts]", WQLTypeError, "is true or false, and 'v' is DOUBLE", "v"),
    Bad("[FRAME THRESHOLD (max(v) > 1) WATTR ts]", WQLSemanticError, "aggregates are not allowed", "max(v)"),
    Bad("[FRAME THRESHOLD (v < 40) MIN 2 WATTR ts]", WQLTypeError, "needs a time unit", "2"),
    Bad("[FRAME THRESHOLD (v < 40) MIN 0 ROWS WATTR ts]", WQLTypeError, "must be positive", "0 ROWS"),
    Bad("[FRAME DELTA 5 SECONDS ON v WATTR ts]", WQLTypeError, "DELTA is in the units of the attribute", "5 SECONDS"),
    Bad("[FRAME DELTA 5 ON name WATTR ts]", WQLTypeError, "follows a number, and 'name' is STRING", "name"),
    Bad("[FRAME DELTA 5 ON nope WATTR ts]", WQLNameError, "unknown column 'nope'", "nope"),
    Bad(
        "[FRAME AGGREGATE (median(v) > 1) WATTR ts]",
        WQLNotSupportedError,
        "as a FRAME AGGREGATE condition",
        "median(v) > 1",
    ),
    Bad(
        "[FRAME AGGREGATE (sum(v) > count(*)) WATTR ts]",
        WQLNotSupportedError,
        "as a FRAME AGGREGATE condition",
        "sum(v) > count(*)",
    ),
    Bad("[FRAME AGGREGATE (sum(v)) WATTR ts]", WQLNotSupportedError, "as a FRAME AGGREGATE condition", "sum(v)"),
    Bad("[FRAME AGGREGATE (v > 1) WATTR ts]", WQLNotSupportedError, "'v > 1' as a FRAME AGGREGATE condition", "v > 1"),
    Bad(
        "[FRAME AGGREGATE (count(DISTINCT k) > 1) WATTR ts]",
        WQLNotSupportedError,
        "a distinct count",
        "count(DISTINCT k)",
    ),
    Bad(
        "[FRAME AGGREGATE (sum(name) > 1) WATTR ts]", WQLTypeError, "needs a number, and 'name' is STRING", "sum(name)"
    ),
    Bad("[FRAME AGGREGATE (sum(nope) > 1) WATTR ts]", WQLNameError, "unknown column 'nope'", "nope"),
    Bad("[SESSION GAP 1 SECOND] EMIT EMPTY", WQLSemanticError, "EMIT EMPTY applies to grid windows", "SELECT"),
]


@pytest.mark.parametrize("bad", BAD, ids=lambda b: b.spec)
def test_positioned_errors(bad: Bad) -> None:
    text = STREAM + f"SELECT {bad.select} FROM s {bad.spec}"
    with pytest.raises(WQLError) as caught:
        wql.compile(text)
    error = caught.value
    assert isinstance(error, bad.kind), (type(error), error.message)
    assert bad.message in error.message, error.message
    assert error.span is not None
    assert text[error.span.start : error.span.end].startswith(bad.marked), text[error.span.start : error.span.end]


def test_a_condition_error_says_what_is_supported() -> None:
    with pytest.raises(WQLNotSupportedError) as caught:
        wql.compile(STREAM + "SELECT count(*) AS c FROM s [FRAME AGGREGATE (sum(v) > count(*)) WATTR ts]")
    assert caught.value.hint is not None and "count, sum, avg, min or max" in caught.value.hint


def test_frames_need_an_attribute_to_order_them() -> None:
    text = "CREATE STREAM s (v DOUBLE, a TIMESTAMP, b TIMESTAMP);\nSELECT count(*) AS c FROM s [FRAME DELTA 1 ON v]"
    with pytest.raises(WQLSemanticError, match="which attribute orders the tuples"):
        wql.compile(text)
