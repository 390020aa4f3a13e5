"""Every plan × grid window kind × aggregate equals the reference evaluator (issue 3).

Each hypothesis example is one Spark job over several random streams (see
tests/differential.py). Window parameters, ALIGN, WHERE and the streams are
drawn; edges, SLIDE > RANGE, values before the origin, NULLs and PATTR come up
by construction.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import SPARK
from tests.differential import cases, combined_in, compare

pytestmark = pytest.mark.spark

SHARED = "count(*) AS n, count(v) AS nv, sum(v) AS sv, avg(v) AS av, min(v) AS lo, max(v) AS hi, stddev(v) AS sd"
HOLISTIC = "median(v) AS med, count(DISTINCT k) AS dk"
SETTINGS = SPARK  # the profile's examples (tests/conftest.py), no shrinking
WHERES = st.sampled_from(["", "WHERE v IS NULL OR v > -2", "WHERE n <> 3"])


def aggregates(plan: str) -> str:
    return SHARED if plan != "bucket" else f"{SHARED}, {HOLISTIC}"


def spans(draw: Any, plan: str, low: int = 1, high: int = 12) -> tuple[int, int]:
    """RANGE and SLIDE suited to the plan: slices need SLIDE not to divide RANGE."""
    r = draw(st.integers(low, high))
    s = draw(st.integers(low, high))
    if plan == "slice":
        while r % s == 0:
            s = draw(st.integers(2, high))
            r = draw(st.integers(low, high))
    if plan == "pane" and r == s:
        r += s  # tumbling has no pane plan: panes are the windows
    return r, s


def time_sliding(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    r, s = spans(data.draw, plan)
    origin = data.draw(st.integers(-5, 5))
    where = data.draw(WHERES)
    text = (
        f"SELECT k, {aggregates(plan)}, min(ts) AS first_ts, max(n) AS top FROM s "
        f"[RANGE {r} SECONDS SLIDE {s} SECONDS WATTR ts ALIGN TIMESTAMP '2024-01-01 00:00:00' ] {where} "
        f"GROUP BY case_id, k"
    ).replace("ALIGN TIMESTAMP '2024-01-01 00:00:00' ]", f"ALIGN {origin} SECONDS]" if origin else "]")
    compare(spark, text, rows, plan)


@pytest.mark.parametrize("plan", ["bucket", "pane", "slice"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_time_sliding(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    time_sliding(spark, plan, data, rows)


@pytest.mark.parametrize("plan", ["pane", "slice"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_time_sliding_combined_in_numpy(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """The numpy combine, which a job uses when WQL's JVM kernel is not on the classpath."""
    with combined_in(spark, "arrow"):
        time_sliding(spark, plan, data, rows)


@pytest.mark.parametrize("plan", ["bucket", "pane", "slice"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_integer_value_windows(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    r, s = spans(data.draw, plan)
    origin = data.draw(st.integers(-7, 7))
    text = f"SELECT {aggregates(plan)} FROM s [RANGE {r} SLIDE {s} WATTR x ALIGN {origin}] GROUP BY case_id"
    compare(spark, text, rows, plan)


@pytest.mark.parametrize("plan", ["bucket", "pane"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_double_value_windows(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    if plan == "bucket":  # fractional edges, compared in double arithmetic
        r = data.draw(st.sampled_from(["2.5", "0.75", "3", "1.25"]))
        s = data.draw(st.sampled_from(["0.5", "1.25", "2", "0.1"]))
        origin = data.draw(st.sampled_from(["0", "0.3", "-1.5"]))
    else:
        r, s = (str(v) for v in spans(data.draw, plan))
        origin = str(data.draw(st.integers(-3, 3)))
    text = f"SELECT k, {aggregates(plan)} FROM s [RANGE {r} SLIDE {s} WATTR d ALIGN {origin}] GROUP BY case_id, k"
    compare(spark, text, rows, plan)


@pytest.mark.parametrize("plan", ["bucket", "pane"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_landmark(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    landmark(spark, plan, data, rows)


@SETTINGS
@given(data=st.data(), rows=cases())
def test_landmark_combined_in_numpy(spark: Any, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    with combined_in(spark, "arrow"):
        landmark(spark, "pane", data, rows)


def landmark(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    s = data.draw(st.integers(3, 20))
    where = data.draw(st.sampled_from(["", "WHERE v > 0", "WHERE n <> 3"]))  # WHERE does not move the end
    text = (
        f"SELECT k, {aggregates(plan)} FROM s [RANGE UNBOUNDED SLIDE {s} SECONDS WATTR ts] {where} GROUP BY case_id, k"
    )
    compare(spark, text, rows, plan)


@pytest.mark.parametrize("plan", ["bucket", "pane", "slice"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_tuple_based(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    r, s = spans(data.draw, plan, high=6)
    where = data.draw(WHERES)
    text = f"SELECT k, {aggregates(plan)} FROM s [RANGE {r} ROWS SLIDE {s} ROWS] {where} GROUP BY case_id, k"
    compare(spark, text, rows, plan)


@pytest.mark.parametrize("plan", ["bucket", "pane", "slice"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_partitioned_tuple_based(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    r, s = spans(data.draw, plan, high=5)
    where = data.draw(WHERES)
    text = f"SELECT {aggregates(plan)} FROM s [RANGE {r} ROWS SLIDE {s} ROWS PATTR case_id, k] {where}"
    compare(spark, text, rows, plan)


@SETTINGS
@given(data=st.data(), rows=cases())
def test_interval_events(spark: Any, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    r, s = spans(data.draw, "bucket")
    text = f"SELECT {aggregates('bucket')} FROM s [RANGE {r} SLIDE {s} WATTR (x, y)] GROUP BY case_id"
    compare(spark, text, rows, "bucket")


@pytest.mark.parametrize("plan", ["bucket", "pane"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_having_order_limit_and_expressions(
    spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    r, s = spans(data.draw, plan)
    text = (
        f"SELECT k, max(v) - min(v) AS spread, count(*) AS n, sum(v) FILTER (WHERE n > 0) AS pos "
        f"FROM s [RANGE {r} SECONDS SLIDE {s} SECONDS WATTR ts] GROUP BY case_id, k "
        f"HAVING count(*) > 1 ORDER BY case_id, window_start, k NULLS FIRST LIMIT 500"
    )
    compare(spark, text, rows, plan)


@pytest.mark.parametrize("plan", ["bucket", "pane"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_emit_empty(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    r, s = spans(data.draw, plan, high=6)
    text = f"SELECT count(*) AS n, sum(v) AS sv FROM s [RANGE {r} SLIDE {s} WATTR x] GROUP BY case_id EMIT EMPTY"
    compare(spark, text, rows, plan)


# ------------------------------------------------------------------ windows named by tuples (issue 4)

SLIDES = {
    "every": "SLIDE 1 ROW",
    "row_num": "SLIDE 3 ROWS SATTR row_num",
    "rank": "SLIDE 2 ROWS SATTR rank({attr})",
}


def tuple_aggregates(plan: str) -> str:
    return SHARED if plan == "bins" else f"{SHARED}, {HOLISTIC}"


@pytest.mark.parametrize("plan", ["bins", "over"])
@pytest.mark.parametrize("slide", sorted(SLIDES))
@SETTINGS
@given(data=st.data(), rows=cases())
def test_tuple_named_windows_on_time(
    spark: Any, plan: str, slide: str, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    tuple_named_windows_on_time(spark, plan, slide, data, rows)


@SETTINGS
@given(data=st.data(), rows=cases())
def test_tuple_named_windows_in_numpy(spark: Any, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """A window at every tuple goes by the JVM kernel where it can; this is the numpy kernel's turn."""
    with combined_in(spark, "arrow"):
        tuple_named_windows_on_time(spark, "bins", "every", data, rows)


def tuple_named_windows_on_time(
    spark: Any, plan: str, slide: str, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    r = data.draw(st.integers(1, 15))
    where = data.draw(WHERES)
    group = data.draw(st.sampled_from(["", "GROUP BY k"]))
    text = (
        f"SELECT {'k, ' if group else ''}{tuple_aggregates(plan)} FROM s "
        f"[RANGE {r} SECONDS RATTR ts {SLIDES[slide].format(attr='ts')} PATTR case_id] {where} {group}"
    )
    compare(spark, text, rows, plan)


@pytest.mark.parametrize("plan", ["bins", "over"])
@pytest.mark.parametrize("slide", sorted(SLIDES))
@SETTINGS
@given(data=st.data(), rows=cases())
def test_tuple_named_windows_on_values(
    spark: Any, plan: str, slide: str, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    r = data.draw(st.integers(1, 12))
    text = (
        f"SELECT {tuple_aggregates(plan)} FROM s [RANGE {r} RATTR x {SLIDES[slide].format(attr='x')} PATTR case_id, k]"
    )
    compare(spark, text, rows, plan)


@SETTINGS
@given(data=st.data(), rows=cases())
def test_tuple_named_windows_on_doubles(spark: Any, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    r = data.draw(st.sampled_from(["2.5", "0.75", "10"]))
    text = f"SELECT {SHARED} FROM s [RANGE {r} RATTR d SLIDE 1 ROW PATTR case_id] GROUP BY k"
    compare(spark, text, rows, "bins")


INVERTIBLE = "count(*) AS n, count(v) AS nv, sum(v) AS sv, avg(v) AS av, stddev(v) AS sd, var_pop(x) AS vx"


@pytest.mark.parametrize("slide", ["every", "rank"])
@pytest.mark.parametrize("attr", ["ts", "x", "d"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_tuple_named_windows_by_prefix_sums(
    spark: Any, slide: str, attr: str, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    r = data.draw(st.integers(1, 15))
    unit = " SECONDS" if attr == "ts" else ""
    where = data.draw(WHERES)
    filtered = data.draw(st.sampled_from(["", ", sum(n) FILTER (WHERE v > 0) AS pos, count_if(n > 2) AS big"]))
    text = (
        f"SELECT {INVERTIBLE}{filtered} FROM s "
        f"[RANGE {r}{unit} RATTR {attr} {SLIDES[slide].format(attr=attr)} PATTR case_id, k] {where}"
    )
    compare(spark, text, rows, "prefix")


NON_FINITE = "count(v) AS nv, sum(v) AS sv, avg(v) AS av, stddev(v) AS sd, var_pop(v) AS vp"


@pytest.mark.parametrize("plan", ["bins", "bins in numpy", "prefix", "over"])
@SETTINGS
@given(data=st.data(), rows=cases(specials=True))
def test_tuple_named_windows_with_nan_and_infinities(
    spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    """A NaN or an infinity reaches the windows that hold it and no later ones (running totals must not carry it)."""
    r = data.draw(st.integers(1, 15))
    extremes = ", min(v) AS lo, max(v) AS hi" if plan != "prefix" else ""
    text = f"SELECT {NON_FINITE}{extremes} FROM s [RANGE {r} SECONDS RATTR ts SLIDE 1 ROW PATTR case_id]"
    with combined_in(spark, "arrow" if plan == "bins in numpy" else "auto"):
        compare(spark, text, rows, plan.removesuffix(" in numpy"))


@pytest.mark.parametrize("plan", ["bucket", "pane", "slice"])
@SETTINGS
@given(data=st.data(), rows=cases(specials=True))
def test_time_sliding_with_nan_and_infinities(
    spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    r, s = spans(data.draw, plan)
    window = f"[RANGE {r} SECONDS SLIDE {s} SECONDS WATTR ts]"
    text = f"SELECT {NON_FINITE}, min(v) AS lo, max(v) AS hi FROM s {window} GROUP BY case_id"
    compare(spark, text, rows, plan)


@pytest.mark.parametrize("plan", ["bins", "over"])
@pytest.mark.parametrize("attr", ["ts", "x"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_kafka_windows(spark: Any, plan: str, attr: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    r = data.draw(st.integers(1, 12))
    unit = " SECONDS" if attr == "ts" else ""
    where = data.draw(WHERES)
    text = f"SELECT {tuple_aggregates(plan)} FROM s [RANGE {r}{unit} WATTR {attr} SLIDE KAFKA PATTR case_id] {where}"
    compare(spark, text, rows, plan)


@pytest.mark.parametrize("attr", ["ts", "x"])
@SETTINGS
@given(data=st.data(), rows=cases())
def test_kafka_late_record_rule(spark: Any, attr: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """SLACK g KAFKA (the replay plan): the streams interleaved in one random arrival order, so that stream
    time, shared by every key as in Kafka, makes records of one key late for another's."""
    r = data.draw(st.integers(1, 12))
    grace = data.draw(st.integers(0, 15))
    unit = " SECONDS" if attr == "ts" else ""
    order = data.draw(st.permutations(range(len(rows))))
    rows = [{**rows[i], "seq": position} for position, i in enumerate(order)]
    where = data.draw(WHERES)
    group = data.draw(st.sampled_from(["", " GROUP BY k"]))
    keys = "k, " if group else ""
    window = f"[RANGE {r}{unit} WATTR {attr} SLIDE KAFKA PATTR case_id SLACK {grace}{unit} KAFKA]"
    compare(spark, f"SELECT {keys}{SHARED}, {HOLISTIC} FROM s {window} {where}{group}", rows, "replay")
