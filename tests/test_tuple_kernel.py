"""The JVM bins kernel for a window at every tuple: batches, sorting, memory, constants.

Its semantics are checked against the reference evaluator by the differential
tests; these check what small random streams do not reach: keys whose tuples
arrive out of order over several input partitions and span several batches,
more keys than the map side stages at once, and counts that Spark proves to be
1, which stay out of the shuffle.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pytest

import wql
from tests.differential import in_jvm_and_numpy, kernel_metrics, normalized, physical_plan
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.spark

AGGREGATES = (
    "count(*) AS n, count(v) AS nv, sum(v) AS sv, avg(v) AS av, min(v) AS lo, max(v) AS hi, "
    "stddev(v) AS sd, sum(q) AS sq, max(q) AS hq"
)
SCHEMA = "k INT, v DOUBLE, q BIGINT, ts TIMESTAMP"
START = datetime(2024, 1, 1)


def test_out_of_order_keys_over_several_batches_equal_numpy(spark: Any) -> None:
    """Keys of ~2,500 tuples (several batches each) arrive shuffled over 4 partitions, with ties and NULLs."""
    chance = random.Random(7)
    rows = []
    for key in [1, 2, 3, None]:
        for _ in range(2_500):
            value = None if chance.random() < 0.1 else chance.choice([float("nan"), -1.5, 2.25, 7.0, 0.5, -3.75])
            rows.append((key, value, chance.randrange(-50, 50), START + timedelta(seconds=chance.randrange(0, 5_000))))
    chance.shuffle(rows)
    frame = spark.createDataFrame(rows, SCHEMA).repartition(4)
    compiled = wql.compile(
        f"CREATE STREAM s ({SCHEMA});\n"
        f"SELECT {AGGREGATES} FROM s [RANGE 200 SECONDS RATTR ts SLIDE 1 ROW PATTR k] WHERE q <> 7",
        plan="bins",
    )
    got, want, plan = in_jvm_and_numpy(spark, compiled, frame)
    assert "TupleBatches" in plan and "TupleWindows" in plan and "Sort" not in plan, plan
    distinct = len({(key, ts) for key, _, _, ts in rows})  # a window per distinct value of each key,
    assert got == want and 0.95 * distinct < len(got) <= distinct  # less those that WHERE empties


def test_more_keys_than_the_map_side_stages_equal_numpy(spark: Any) -> None:
    """20,000 keys of 2 tuples: the map side sends every key's batch early, more than once per key."""
    rows = [
        (key, float(key % 7), key % 5, START + timedelta(seconds=key % 3 + step))
        for key in range(20_000)
        for step in (0, 4)
    ]
    # One input partition: 20,000 keys' first stages (16 tuples each) pass the 262,144 tuples staged at once.
    frame = spark.createDataFrame(rows, SCHEMA).repartition(1)
    compiled = wql.compile(
        f"CREATE STREAM s ({SCHEMA});\nSELECT {AGGREGATES} FROM s [RANGE 5 SECONDS RATTR ts SLIDE 1 ROW PATTR k]",
        plan="bins",
    )
    got, want, _ = in_jvm_and_numpy(spark, compiled, frame)
    assert got == want and len(got) == 40_000


def test_counts_spark_proves_constant_stay_out_of_the_shuffle(spark: Any) -> None:
    """A count of a column Spark knows is never NULL is a row count: the kernel does not shuffle it."""
    from pyspark.sql import functions as F

    frame = spark.range(300).select(
        (F.col("id") % 3).cast("int").alias("k"),
        (F.col("id").cast("double") * 0.25).alias("v"),  # never NULL, as Spark knows from the expression
        (F.col("id") % 5).alias("q"),
        F.timestamp_seconds(F.col("id") * 7 % 500).alias("ts"),
    )
    compiled = wql.compile(
        f"CREATE STREAM s ({SCHEMA});\n"
        f"SELECT count(v) AS nv, sum(v) AS sv, avg(v) AS av FROM s [RANGE 30 SECONDS RATTR ts SLIDE 1 ROW PATTR k] "
        f"WHERE q <> 2",
        plan="bins",
    )
    result = compiled.run(spark, s=frame)
    lines = physical_plan(result).splitlines()
    batched = lines[next(i for i, line in enumerate(lines) if "TupleBatches" in line) + 1]  # what is shuffled
    assert "_sum_v" in batched and "_n_v" not in batched, physical_plan(result)
    rows = [r.asDict() for r in frame.collect()]
    assert normalized([r.asDict() for r in result.collect()]) == normalized(evaluate_query(compiled.query, rows))


def ran_metrics(result: Any) -> dict[str, int]:
    """TupleWindows' sorter metrics once `result` has run."""
    assert result.collect()
    return kernel_metrics(result, "TupleWindows")


@pytest.mark.parametrize("limit", ["0", "40000"])
def test_partitions_past_the_memory_limit_stream_through_the_sorter(spark: Any, limit: str) -> None:
    """Past spark.wql.bins.memoryLimit (as past Spark's execution memory) the tuples stream through Spark's
    spilling sorter: from the start (0), or after some keys' columns were filled (40,000 bytes). The
    operator's metrics say so: every tuple through the sorter, which spilled sorted runs (here every
    500 tuples, spark.wql.bins.spillThreshold); in memory, none."""
    chance = random.Random(11)
    rows = []
    for key in [1, 2, 3, None]:
        for _ in range(1_500):
            value = None if chance.random() < 0.1 else chance.choice([float("nan"), -1.5, 2.25, 7.0, 0.5])
            rows.append((key, value, chance.randrange(-50, 50), START + timedelta(seconds=chance.randrange(0, 3_000))))
    chance.shuffle(rows)
    frame = spark.createDataFrame(rows, SCHEMA).repartition(3)
    compiled = wql.compile(
        f"CREATE STREAM s ({SCHEMA});\n"
        f"SELECT {AGGREGATES} FROM s [RANGE 100 SECONDS RATTR ts SLIDE 1 ROW PATTR k] WHERE q <> 7",
        plan="bins",
    )
    assert ran_metrics(compiled.run(spark, s=frame)) == {"sortedTuples": 0, "spillSize": 0}
    spark.conf.set("spark.wql.bins.memoryLimit", limit)
    spark.conf.set("spark.wql.bins.spillThreshold", "500")
    try:
        got, want, plan = in_jvm_and_numpy(spark, compiled, frame)
        metrics = ran_metrics(compiled.run(spark, s=frame))
    finally:
        spark.conf.unset("spark.wql.bins.memoryLimit")
        spark.conf.unset("spark.wql.bins.spillThreshold")
    assert "TupleWindows" in plan and got == want and len(got) > 1_000
    assert metrics["sortedTuples"] == len(rows)  # every tuple (none has a NULL ts) went through the sorter
    assert metrics["spillSize"] > 0
    reference = evaluate_query(compiled.query, [dict(zip(("k", "v", "q", "ts"), r, strict=True)) for r in rows])
    assert got == normalized(reference)


def _limited(spark: Any) -> Any:
    """A slide-by-tuple query of 20,000 windows on the bins kernel, which shuffles far fewer tuple batches."""
    from pyspark.sql import functions as F

    frame = spark.range(20_000).select(
        (F.col("id") % 10).cast("int").alias("k"),
        (F.col("id") % 7).cast("double").alias("v"),
        F.col("id").alias("q"),
        F.timestamp_seconds(F.col("id")).alias("ts"),
    )
    compiled = wql.compile(
        f"CREATE STREAM s ({SCHEMA});\n"
        "SELECT sum(v) AS sv, count(*) AS n FROM s [RANGE 100 SECONDS RATTR ts SLIDE 1 ROW PATTR k]",
        plan="bins",
    )
    result = compiled.run(spark, s=frame)
    assert "TupleWindows" in physical_plan(result)
    return result


EXCLUDED_RULES = "spark.sql.adaptive.optimizer.excludedRules"
ELIMINATE_LIMITS = "org.apache.spark.sql.catalyst.optimizer.EliminateLimits"


def _excluded(spark: Any) -> str:
    return spark.conf.get(EXCLUDED_RULES, "") or ""


@pytest.mark.parametrize("path", ["extension", "py4j"])
def test_a_limit_above_the_kernel_keeps_its_rows(spark: Any, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A LIMIT larger than the number of tuple batches the kernel shuffles still limits, with adaptive
    execution's EliminateLimits on: the batches have a logical node of their own, so adaptive execution
    takes their shuffle stage's row count for theirs, not for the windows' maximum row count. Through
    the hint that WQL's extension resolves, and through py4j (a session with WQL's jar alone)."""
    if path == "py4j":
        from wql.compiler.kernels import job_support

        monkeypatch.setitem(job_support._kernel_servers, id(spark), (spark, False))  # as if without the extension
    assert ELIMINATE_LIMITS not in _excluded(spark)
    result = _limited(spark)
    assert result.count() == 20_000
    assert len(result.limit(1000).collect()) == 1000
    assert result.limit(1000).count() == 1000
    assert ELIMINATE_LIMITS not in _excluded(spark)


def test_a_job_leaves_a_sessions_excluded_rules_alone(spark: Any) -> None:
    """A generated job under spark-submit or in a user's own session, which excludes rules of its own: the
    job changes none of them, and a LIMIT above the kernel still limits."""
    saved = _excluded(spark)
    own = "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation"
    spark.conf.set(EXCLUDED_RULES, own)
    try:
        result = _limited(spark)
        assert result.limit(1000).count() == 1000
        assert len(result.limit(1000).collect()) == 1000
        assert spark.conf.get(EXCLUDED_RULES) == own
    finally:
        spark.conf.set(EXCLUDED_RULES, saved) if saved else spark.conf.unset(EXCLUDED_RULES)


@pytest.mark.timeout(120)
def test_a_cached_input_runs_once_under_adaptive_execution(spark: Any) -> None:
    """A cached input (a table cache query stage below the kernel) with a count Spark proves to be 1: the
    kernel once planned its input from a logical projection of its own, which adaptive execution could not
    find in the query's plan, so it planned the cache's stage afresh on every round and never finished."""
    from pyspark.sql import functions as F

    data = spark.range(2_000).select(
        (F.col("id") % 10).cast("int").alias("k"),
        (F.rand(11) * 100).alias("v"),  # random, as the benchmarks' data: with a fixed v it never hung
        F.timestamp_seconds(F.col("id") / 10).alias("ts"),
    )
    data = data.cache()  # the reference reads the cached rows, so it sees the same v
    try:
        data.count()
        compiled = wql.compile(
            "SELECT sum(v) AS total, count(*) AS n FROM s [RANGE 60 SECONDS RATTR ts SLIDE 1 ROW PATTR k]",
            streams={"s": data},
            plan="bins",
        )
        result = compiled.run(spark, s=data)
        assert "TupleWindows" in physical_plan(result)
        rows = [r.asDict() for r in result.collect()]
        assert len(rows) == 2_000
        reference = evaluate_query(compiled.query, [r.asDict() for r in data.collect()])
        assert normalized(rows) == normalized(reference)
    finally:
        data.unpersist()
