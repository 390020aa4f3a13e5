"""The sweep plan's JVM kernel over interval events: min and max from a heap of the events in each window.

The differential tests (tests/test_intervals.py) check the plan's semantics on small
random streams, in the JVM and in numpy; these check what they do not reach: that the
kernel, not the numpy fallback, runs where the jar is (a silent fallback would pass
them); keys whose events are spread over several partitions; events that leave after
more windows than the ring spans (spark.wql.sweep.longEvent at 0: every event's leaving
shares wait in the heap by window-id); heaps that compact (more than 64 events alive,
in values that make every one of them a possible extreme, and in random values, where
few are); NaN, infinities and NULLs among the values; ties; and a hot key whose
windows reach millions of window-ids past an open-ended event.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import wql
from tests.conftest import DEEP
from tests.differential import combined_in, in_jvm_and_numpy, normalized
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.spark

SCHEMA = "k INT, v DOUBLE, q BIGINT, s BIGINT, e BIGINT"
AGGREGATES = (
    "count(*) AS n, min(v) AS lo, max(v) AS hi, max(q) AS top, min(q) AS bottom, sum(v) AS sv, avg(v) AS av, "
    "stddev(v) AS sd, count(v) AS nv, max(v) FILTER (WHERE q > 0) AS hp, min(e) AS first_end"
)
LONGER = "spark.wql.sweep.longEvent"


def compiled(text: str) -> wql.CompiledQuery:
    query = wql.compile(f"CREATE STREAM s ({SCHEMA});\n{text}", plan="sweep")
    assert query.plan == "sweep"
    return query


def reference(query: wql.CompiledQuery, rows: list[tuple[Any, ...]]) -> list[Any]:
    return normalized(evaluate_query(query.query, [dict(zip(("k", "v", "q", "s", "e"), r, strict=True)) for r in rows]))


def random_events(seed: int, keys: list[int | None], count: int, span: int, long: int) -> list[tuple[Any, ...]]:
    """Points, short and long events, open-ended and malformed ones; NULL, NaN and ±∞ among the values."""
    chance = random.Random(seed)
    rows = []
    for key in keys:
        for _ in range(count):
            start = chance.randrange(0, span)
            end = chance.choice([start, start + chance.randrange(1, 40), start + chance.randrange(40, long), None])
            end = start - 5 if chance.random() < 0.02 else end  # malformed: in no window
            value = chance.choice([None, float("nan"), float("inf"), -float("inf"), -1.5, 2.25, 7.0, 0.5])
            value = value if chance.random() < 0.08 else chance.randrange(-40, 40) / 4
            q = None if chance.random() < 0.05 else chance.randrange(-50, 50)
            rows.append((key, value, q, start, end))
    chance.shuffle(rows)
    return rows


@pytest.mark.parametrize("longer", [None, "0"])
def test_the_kernel_runs_and_equals_numpy_and_the_reference(spark: Any, longer: str | None) -> None:
    """Four keys (one NULL) over 4 partitions: points, short, long, open-ended and malformed events, NaN and
    ±∞, WHERE and FILTER. With spark.wql.sweep.longEvent at 0, every event's leaving shares wait in the heap
    by window-id instead of the ring."""
    rows = random_events(36, [1, 2, 3, None], 300, 3_000, 400)
    frame = spark.createDataFrame(rows, SCHEMA).repartition(4)
    query = compiled(f"SELECT k, {AGGREGATES} FROM s [RANGE 50 SLIDE 10 WATTR (s, e)] WHERE q <> 7 GROUP BY k")
    if longer is not None:
        spark.conf.set(LONGER, longer)
    try:
        got, want, plan = in_jvm_and_numpy(spark, query, frame)  # numpy: MapInArrow in its plan
    finally:
        spark.conf.unset(LONGER)
    assert "EventSweep" in plan and "MapInArrow" not in plan, plan
    assert got == want and len(got) > 1_000
    assert got == reference(query, rows)


@pytest.mark.parametrize("order", ["dominating", "random"])
def test_heaps_that_compact_equal_the_reference(spark: Any, order: str) -> None:
    """One key, 3,000 events (1,200 in make test) of 0 to 400 windows, up to ~600 alive at once (~240).
    "dominating": the longer an event, the lower its value, so no event that outlasts another beats it
    and every one alive can still be the max (and, reversed, the min): the heaps hold them all,
    compacting as they double. "random": compaction keeps few. Both over 2 partitions and with windows
    of one, equal the reference."""
    chance = random.Random(7)
    rows = []
    for i in range(3_000 if DEEP else 1_200):
        length = chance.randrange(0, 400)
        value = -float(length) if order == "dominating" else float(chance.randrange(-1_000, 1_000))
        rows.append((5, value, -length if order == "dominating" else chance.randrange(-100, 100), i, i + length))
    frame = spark.createDataFrame(rows, SCHEMA).repartition(2)
    for window in ("RANGE 1 SLIDE 1", "RANGE 30 SLIDE 7"):
        # No stddev: a running M2 over thousands of events, less the ended events', rounds in the last digits.
        extremes = AGGREGATES.replace("stddev(v) AS sd, ", "")
        query = compiled(f"SELECT k, {extremes} FROM s [{window} WATTR (s, e)] GROUP BY k")
        got, want, plan = in_jvm_and_numpy(spark, query, frame)
        assert "EventSweep" in plan and got == want, window
        assert got == reference(query, rows), window


def test_ties_nan_and_infinities_order_as_spark_does(spark: Any) -> None:
    """Windows of one: NaN is above every number (max keeps it, min skips it unless it is all there is),
    -∞ and +∞ are values, NULL is none, and equal values tie."""
    nan, inf = float("nan"), float("inf")
    rows = [
        (1, 3.0, 1, 0, 10),
        (1, nan, 2, 2, 4),  # windows 2, 3: max NaN, min 3
        (1, -inf, 3, 5, 6),  # window 5: min -∞
        (1, 3.0, 3, 6, 8),  # a tie with the first: the same value
        (1, None, None, 8, 12),  # windows 8, 9: NULL adds nothing; 10, 11: no value at all
        (2, nan, 1, 0, 2),  # only NaN: min NaN
        (2, inf, 1, 3, None),  # open-ended: +∞ to the data's end
    ]
    query = compiled(
        "SELECT k, count(*) AS n, min(v) AS lo, max(v) AS hi, max(q) AS top FROM s [RANGE 1 WATTR (s, e)] GROUP BY k"
    )
    got, want, plan = in_jvm_and_numpy(spark, query, spark.createDataFrame(rows, SCHEMA))
    assert "EventSweep" in plan and got == want
    assert got == reference(query, rows)
    by = {(w["k"], w["wid"]): w for w in map(dict, got)}
    assert (by[(1, 2)]["hi"], by[(1, 2)]["lo"]) == ("NaN", 3.0)
    assert by[(1, 5)]["lo"] == -inf and by[(1, 7)]["hi"] == 3.0
    assert (by[(1, 10)]["n"], by[(1, 10)]["hi"], by[(1, 10)]["top"]) == (1, None, None)
    assert by[(2, 1)]["lo"] == "NaN" and by[(2, 11)]["hi"] == inf


@pytest.mark.parametrize("kernel", ["auto", "arrow"])
def test_a_hot_key_holds_the_windows_in_flight_not_its_events(spark: Any, kernel: str) -> None:
    """One key over 4,000,000 one-unit windows: an open-ended event at the start, one of 2,000,000 windows,
    and 100 of one window. The open-ended event is in the running state, not a heap, and the long one
    waits in the heap by window-id: every window up to the data's end comes out, with its count and
    extremes. Checked in Spark over the 4,000,000 windows."""
    from pyspark.sql import functions as F

    rows = [(7, 1.0, 1, 0, None), (7, 2.5, 2, 1_000_000, 3_000_000)]
    rows += [(7, float(i % 5), 10 + i, i * 40_000 + 17, i * 40_000 + 18) for i in range(100)]
    frame = spark.createDataFrame(rows, SCHEMA).repartition(2)
    aggregates = "count(*) AS c, min(v) AS lo, max(v) AS hi, max(q) AS top"
    query = compiled(f"SELECT k, {aggregates} FROM s [RANGE 1 SLIDE 1 WATTR (s, e)] GROUP BY k")
    with combined_in(spark, kernel):
        result = query.run(spark, s=frame)
    totals = result.agg(
        F.count("*").alias("windows"),
        F.min("wid").alias("first"),
        F.max("wid").alias("last"),
        F.sum("c").alias("events"),
        F.sum(F.when(F.col("hi") == 4.0, 1).otherwise(0)).alias("fours"),
        F.sum(F.when(F.col("hi") == 2.5, 1).otherwise(0)).alias("long"),
        F.max("top").alias("top"),
    ).first()
    plan = result._jdf.queryExecution().executedPlan().toString()
    assert ("EventSweep" if kernel == "auto" else "MapInArrow") in plan, plan
    last = 99 * 40_000 + 18  # the data's last window: the one holding the last end point
    assert totals.asDict() == {
        "windows": last + 1,
        "first": 0,
        "last": last,
        "events": (last + 1) + 2_000_000 + 100,
        "fours": 20,  # the short events of value 4, each over one window
        "long": 2_000_000 - 20,  # the long event's windows, less those where a short one beats it (3 or 4)
        "top": 109,
    }


def test_extremes_of_timestamps_dates_and_booleans(spark: Any) -> None:
    """min and max of TIMESTAMP and DATE columns (as microseconds and days), bool_and and bool_or (as the min
    and max of 0 and 1), over events on TIMESTAMP bounds, some open-ended: the JVM kernel and numpy equal the
    reference."""
    from datetime import date, datetime, timedelta

    chance = random.Random(12)
    base = datetime(2024, 1, 1)
    rows = []
    for i in range(400):
        start = base + timedelta(seconds=chance.randrange(0, 600))
        length = chance.choice([0, chance.randrange(1, 30), chance.randrange(30, 300), None])
        end = None if length is None else start + timedelta(seconds=length)
        ok = None if chance.random() < 0.1 else chance.random() < 0.8
        day = None if chance.random() < 0.1 else date(2024, 1, 1) + timedelta(days=chance.randrange(0, 30))
        rows.append((i % 3, start, end, ok, day))
    schema = "k INT, ts TIMESTAMP, te TIMESTAMP, ok BOOLEAN, d DATE"
    text = (
        f"CREATE STREAM s ({schema});\nSELECT k, count(*) AS n, min(ts) AS first_start, max(te) AS last_end, "
        "bool_and(ok) AS all_ok, bool_or(ok) AS any_ok, max(d) AS last_day, min(d) AS first_day "
        "FROM s [RANGE 30 SECONDS SLIDE 10 SECONDS WATTR (ts, te)] GROUP BY k"
    )
    query = wql.compile(text, plan="sweep")
    got, want, plan = in_jvm_and_numpy(spark, query, spark.createDataFrame(rows, schema).repartition(3))
    assert "EventSweep" in plan and got == want and len(got) > 100
    reference = [dict(zip(("k", "ts", "te", "ok", "d"), r, strict=True)) for r in rows]
    assert got == normalized(evaluate_query(query.query, reference))
