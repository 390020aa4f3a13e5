"""The JVM kernel of the difference plan over interval events: per-key delta arrays shipped, then combined.

The differential tests (tests/test_intervals.py) check its semantics on small
random streams; these check what they do not reach: that the kernel, not the
numpy fallback, runs where the jar is (a silent fallback would pass them), keys
whose events are spread over several input partitions (arrays merged after the
shuffle), window-ids too far apart for a dense array (sorted runs), and events
longer than a shipped chunk of window-ids, and the arrays shipped early when
memory runs short (spark.wql.difference.memoryLimit), which the sorted merge after
the shuffle must combine as if they had been one.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import wql
from tests.differential import in_jvm_and_numpy, kernel_metrics, normalized
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.spark

SCHEMA = "k INT, v DOUBLE, q BIGINT, s BIGINT, e BIGINT"
AGGREGATES = (
    "count(*) AS n, count(v) AS nv, sum(v) AS sv, avg(v) AS av, stddev(v) AS sd, var_pop(v) AS vp, sum(q) AS sq"
)


def compiled(text: str) -> wql.CompiledQuery:
    query = wql.compile(f"CREATE STREAM s ({SCHEMA});\n{text}", plan="difference")
    assert query.plan == "difference"
    return query


def test_the_kernel_runs_and_equals_numpy_and_the_reference(spark: Any) -> None:
    """Four keys (one NULL) over 4 partitions: points, long, open-ended and malformed events, NaN and ±∞."""
    chance = random.Random(14)
    rows = []
    for key in [1, 2, 3, None]:
        for _ in range(300):
            start = chance.randrange(0, 3_000)
            end = chance.choice([start, start + chance.randrange(1, 40), start + chance.randrange(40, 400), None])
            end = start - 5 if chance.random() < 0.02 else end  # malformed: in no window
            end = None if end is None or chance.random() < 0.01 else end
            value = chance.choice([None, float("nan"), float("inf"), -float("inf"), -1.5, 2.25, 7.0, 0.5])
            value = value if chance.random() < 0.05 else chance.uniform(-10, 10)
            rows.append((key, value, chance.randrange(-50, 50), start, end))
    chance.shuffle(rows)
    frame = spark.createDataFrame(rows, SCHEMA).repartition(4)
    query = compiled(f"SELECT k, {AGGREGATES} FROM s [RANGE 50 SLIDE 10 WATTR (s, e)] WHERE q <> 7 GROUP BY k")
    got, want, plan = in_jvm_and_numpy(spark, query, frame)  # numpy: MapInArrow in its plan
    assert "EventDeltas" in plan and "DifferenceWindows" in plan and "MapInArrow" not in plan, plan
    assert got == want and len(got) > 1_000
    reference = [dict(zip(("k", "v", "q", "s", "e"), r, strict=True)) for r in rows]
    assert got == normalized(evaluate_query(query.query, reference))


def test_window_ids_far_apart_and_long_events_equal_numpy(spark: Any) -> None:
    """A key whose events lie millions of windows apart (sorted runs, not a dense array), and events longer
    than a shipped chunk of window-ids (2^15), each key's events split over 3 partitions."""
    rows = []
    for i in range(60):
        rows.append((1, float(i), i, i * 1_000_003, i * 1_000_003 + 25))  # far apart: runs
        rows.append((2, 1.0, 1, i * 7, i * 7 + 40_000))  # ~40,000 windows each: several chunks
    frame = spark.createDataFrame(rows, SCHEMA).repartition(3)
    query = compiled(f"SELECT k, {AGGREGATES} FROM s [RANGE 10 SLIDE 1 WATTR (s, e)] GROUP BY k")
    got, want, plan = in_jvm_and_numpy(spark, query, frame)
    assert "EventDeltas" in plan and "DifferenceWindows" in plan, plan
    assert got == want
    windows = [dict(r) for r in got]
    first_key = [r for r in windows if r["k"] == 1]
    assert len(first_key) == 60 * 34  # 25 + 10 − 1 windows overlap each event, none between them
    assert max(r["n"] for r in windows if r["k"] == 2) == 60


@pytest.mark.parametrize("limit", ["0", "200000"])
def test_arrays_past_the_memory_limit_are_shipped_early_and_merged_in_order(spark: Any, limit: str) -> None:
    """Past spark.wql.difference.memoryLimit the arrays held so far are shipped and the pass starts
    afresh: after almost every event (0), or every few thousand window-ids (200,000 bytes). A hot key's events,
    long and short, over 3 partitions then reach DifferenceWindows as many overlapping rows per
    partition, which it merges by window-id after Spark's sort; the operator counts the early shipments,
    none without the limit. Values are quarters, so every sum is exact whatever the merge order."""
    chance = random.Random(5)
    rows = []
    for i in range(2_000):
        key = 1 if i % 10 else chance.choice([2, None])
        start = chance.randrange(0, 20_000)
        end = chance.choice([start, start + chance.randrange(1, 30), start + chance.randrange(30, 3_000), None])
        rows.append((key, chance.randrange(-40, 40) / 4, chance.randrange(-50, 50), start, end))
    frame = spark.createDataFrame(rows, SCHEMA).repartition(3)
    query = compiled(
        "SELECT k, count(*) AS n, sum(v) AS sv, sum(q) AS sq FROM s [RANGE 20 SLIDE 5 WATTR (s, e)] GROUP BY k"
    )
    free = query.run(spark, s=frame)
    assert len(free.collect()) > 1_000 and kernel_metrics(free, "EventDeltas", ("earlyShipments",)) == {
        "earlyShipments": 0
    }
    spark.conf.set("spark.wql.difference.memoryLimit", limit)
    try:
        got, want, plan = in_jvm_and_numpy(spark, query, frame)
        capped = query.run(spark, s=frame)
        capped.collect()
        early = kernel_metrics(capped, "EventDeltas", ("earlyShipments",))["earlyShipments"]
    finally:
        spark.conf.unset("spark.wql.difference.memoryLimit")
    assert "DifferenceWindows" in plan and got == want
    assert early >= (1_000 if limit == "0" else 10), early
    reference = [dict(zip(("k", "v", "q", "s", "e"), r, strict=True)) for r in rows]
    assert got == normalized(evaluate_query(query.query, reference))
