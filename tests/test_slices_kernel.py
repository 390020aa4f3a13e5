"""The SE-slices plan's long events: kept apart by the JVM kernel, cut into pieces for numpy.

The differential tests (tests/test_intervals.py) check the plan's semantics on
small random streams, where few events are longer than spark.wql.slices.longEvent
(1,024 slices). These run the same random streams with it at 0, so that every
event longer than a window is long: the JVM kernel keeps it apart and counts it
whole in each window it overlaps, numpy's pass takes it as pieces of a window's
slices (cut_events), each mixed with short events written into slices. And they
check what a key holds: an open-ended event at the start of a long timeline used to
make the JVM kernel's ring of slices reach the data's end.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import wql
from tests.conftest import PACKED, SPARK
from tests.differential import combined_in, in_jvm_and_numpy, normalized
from tests.intervals import compare, events
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.spark

LONGER = "spark.wql.slices.longEvent"
AGGREGATES = (
    "count(*) AS c, count(v) AS nv, sum(v) AS sv, avg(v) AS av, stddev(v) AS sd, sum(n) AS sn, "
    "min(v) AS lo, max(v) AS hi, max(n) AS top"
)
SCHEMA = "k INT, v DOUBLE, n BIGINT, s BIGINT, e BIGINT"


@pytest.fixture
def long_events_apart(spark: Any) -> Any:
    """Every event longer than a window kept apart from the slices."""
    spark.conf.set(LONGER, "0")
    try:
        yield spark
    finally:
        spark.conf.unset(LONGER)


@SPARK
@given(data=st.data(), rows=events(max_rows=16 * PACKED))
@pytest.mark.parametrize("kernel", ["auto", "arrow"])
def test_long_events_equal_the_reference(
    long_events_apart: Any, kernel: str, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    """Random windows (SLIDE below, at and above RANGE, ALIGN) over points, short, long, open-ended and
    malformed events, NaN and ±∞, GROUP BY or PATTR: the JVM kernel with long events apart, and numpy over
    them cut into pieces, equal the reference."""
    r, s = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 7))
    align = data.draw(st.sampled_from(["", " ALIGN 3", " ALIGN -2"]))
    partition, group = data.draw(st.sampled_from([("", "GROUP BY case_id, k"), (" PATTR case_id", "GROUP BY k")]))
    window = f"RANGE {r} SLIDE {s}{partition} WATTR (s, e){align}"
    with combined_in(long_events_apart, kernel):
        compare(long_events_apart, f"SELECT k, {AGGREGATES} FROM s [{window}] {group}", rows, "se-slices")


def test_long_events_apart_equal_numpy_over_partitions(long_events_apart: Any) -> None:
    """Four keys (one NULL) over 4 partitions, each with hundreds of events: points, short ones, ones over
    many windows, open-ended ones; values in quarters, so sums are exact in any order. The JVM kernel keeps
    the long ones apart, numpy takes them in pieces."""
    chance = random.Random(15)
    rows = []
    for key in [1, 2, 3, None]:
        for _ in range(400):
            start = chance.randrange(0, 4_000)
            end = chance.choice([start, start + chance.randrange(1, 12), start + chance.randrange(12, 900), None])
            rows.append((key, chance.randrange(-40, 40) / 4, chance.randrange(-50, 50), start, end))
    chance.shuffle(rows)
    frame = long_events_apart.createDataFrame(rows, SCHEMA).repartition(4)
    query = wql.compile(
        f"CREATE STREAM s ({SCHEMA});\nSELECT k, {AGGREGATES} FROM s [RANGE 20 SLIDE 4 WATTR (s, e)] GROUP BY k",
        plan="se-slices",
    )
    got, want, plan = in_jvm_and_numpy(long_events_apart, query, frame)
    assert "EventSlices" in plan and "MapInArrow" not in plan, plan
    assert got == want and len(got) > 3_000
    reference = [dict(zip(("k", "v", "n", "s", "e"), r, strict=True)) for r in rows]
    assert got == normalized(evaluate_query(query.query, reference))


@pytest.mark.parametrize("kernel", ["auto", "arrow"])
def test_a_key_holds_no_slice_for_each_slice_its_long_events_span(spark: Any, kernel: str) -> None:
    """One key over 4,000,000 one-unit windows: an open-ended event at the start, one of 2,000,000 slices,
    and 100 of one slice. Written into slices, the open-ended event alone made the key's ring reach the
    data's end: 4,194,304 slices of ten states, ~680 MB, which the test session's execution memory refuses.
    Kept apart, each long event is one state; every window up to the data's end holds the open-ended
    one. Checked in Spark over the 4,000,000 windows: their number, event counts and extremes."""
    from pyspark.sql import functions as F

    rows = [(7, 1.0, 1, 0, None), (7, 2.5, 2, 1_000_000, 3_000_000)]
    rows += [(7, float(i % 5), 10 + i, i * 40_000 + 17, i * 40_000 + 18) for i in range(100)]
    frame = spark.createDataFrame(rows, SCHEMA).repartition(2)
    query = wql.compile(
        f"CREATE STREAM s ({SCHEMA});\nSELECT k, {AGGREGATES} FROM s [RANGE 1 SLIDE 1 WATTR (s, e)] GROUP BY k",
        plan="se-slices",
    )
    with combined_in(spark, kernel):
        result = query.run(spark, s=frame)
    totals = result.agg(
        F.count("*").alias("windows"),
        F.min("wid").alias("first"),
        F.max("wid").alias("last"),
        F.sum("c").alias("events"),
        F.sum(F.when(F.col("hi") == 4.0, 1).otherwise(0)).alias("fours"),
        F.max("top").alias("top"),
    ).first()
    plan = result._jdf.queryExecution().executedPlan().toString()
    assert ("EventSlices" if kernel == "auto" else "MapInArrow") in plan, plan
    last = 99 * 40_000 + 18  # the data's last window: the one holding the last end point
    assert totals.asDict() == {
        "windows": last + 1,
        "first": 0,
        "last": last,
        "events": (last + 1) + 2_000_000 + 100,
        "fours": 20,  # the short events of value 4, each over one window
        "top": 109,
    }
