"""The JVM fold kernel for sessions and frames (FrameWindows): the path taken, batches, order, ties.

Its semantics are checked against the reference evaluator by the differential tests
(tests/test_frames_spark.py, "fold" with the jar and "fold in numpy" without it); these check what
small random streams do not reach: keys whose tuples arrive out of order over several input
partitions and span several batches, ties of the window attribute spread over partitions (broken
by row_num, not by arrival in the shuffle), x values at the ends of BIGINT, and the cases the
kernel leaves to numpy.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any

import pytest

import wql
from tests.conftest import DEEP
from tests.differential import in_jvm_and_numpy, kernel_metrics, normalized, physical_plan
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.spark

AGGREGATES = "count(*) AS n, count(v) AS nv, sum(v) AS sv, avg(v) AS av, min(v) AS lo, max(q) AS hq, stddev(v) AS sd"
SCHEMA = "k INT, seq BIGINT, v DOUBLE, q BIGINT, ts TIMESTAMP"
STREAM = f"CREATE STREAM s ({SCHEMA}) ROW_NUM seq;\n"
START = datetime(2024, 1, 1)


def shuffled_rows(seed: int, per_key: int) -> list[dict[str, Any]]:
    """Keys of `per_key` tuples on a short time axis (many ties), with NULL values, times and predicates."""
    chance = random.Random(seed)
    rows = []
    seq = 0
    for key in [1, 2, 3, None]:
        for _ in range(per_key):
            value = None if chance.random() < 0.1 else chance.choice([-1.5, 2.25, 7.0, 0.5, -3.75, 1.0])
            second = None if chance.random() < 0.02 else chance.randrange(0, per_key // 2)
            ts = None if second is None else START + timedelta(seconds=second)
            rows.append({"k": key, "seq": seq, "v": value, "q": chance.randrange(-50, 50), "ts": ts})
            seq += 1
    chance.shuffle(rows)  # arrival (seq) is not the order the rows reach Spark's partitions in
    return rows


# Tuples per key: the reference's aggregate frames are quadratic in a frame's length; the deep profile takes
# keys five times as long.
PER_KEY = 3_000 if DEEP else 600
WINDOWS = [
    "SESSION GAP 1 SECOND",
    "SESSION GAP 2 SECONDS MAX 9 SECONDS",
    "SESSION GAP 1 SECOND KAFKA",
    "FRAME THRESHOLD (v > 0)",
    "FRAME THRESHOLD (v IS NULL OR v < 1) MIN 3 ROWS",
    "FRAME THRESHOLD (q % 3 <> 0) MIN 2 SECONDS",
    "FRAME DELTA 2.5 ON v",
    "FRAME DELTA 7 ON q",
    "FRAME AGGREGATE (count(*) >= 40)",
    "FRAME AGGREGATE (sum(q) > 60 OR NOT avg(v) < 1.5)",
    "FRAME AGGREGATE (max(v) >= 7 AND min(q) < -40 OR count(v) > 30)",
]


@pytest.mark.parametrize("window", WINDOWS)
def test_out_of_order_keys_over_several_batches_equal_numpy_and_the_reference(spark: Any, window: str) -> None:
    """Keys of PER_KEY tuples (in batches on each of 4 partitions) arrive shuffled, ties of ts everywhere: the
    kernel takes the query (no Spark sort of the tuples), and equals numpy and the reference."""
    rows = shuffled_rows(11, PER_KEY)
    frame = spark.createDataFrame([tuple(r[c] for c in ("k", "seq", "v", "q", "ts")) for r in rows], SCHEMA)
    frame = frame.repartition(4)
    compiled = wql.compile(STREAM + f"SELECT {AGGREGATES} FROM s [{window} WATTR ts PATTR k] WHERE q <> 7")
    assert compiled.plan == "fold"
    got, want, plan = in_jvm_and_numpy(spark, compiled, frame)
    assert "TupleBatches" in plan and "FrameWindows" in plan and "Sort" not in plan, plan
    assert got == want and len(got) > 20
    assert got == normalized(evaluate_query(compiled.query, rows))


def test_delta_on_bigint_x_at_its_ends(spark: Any) -> None:
    """x near ±2⁶³: a difference that overflows a long is beyond any δ, never within it."""
    big = 2**63 - 1
    xs = [big, big - 3, -big - 1, -big + 2, 0, big, -big - 1, 5, 1]  # frames: 2, 2, 1, 1, 1, 2
    rows = [{"k": 1, "seq": i, "v": 1.0, "q": x, "ts": START + timedelta(seconds=i)} for i, x in enumerate(xs)]
    frame = spark.createDataFrame([tuple(r[c] for c in ("k", "seq", "v", "q", "ts")) for r in rows], SCHEMA)
    compiled = wql.compile(STREAM + "SELECT count(*) AS n FROM s [FRAME DELTA 4 ON q WATTR ts PATTR k]")
    got, want, plan = in_jvm_and_numpy(spark, compiled, frame)
    assert "FrameWindows" in plan
    assert got == want == normalized(evaluate_query(compiled.query, rows))
    assert sorted(dict(t)["n"] for t in got) == [1, 1, 1, 2, 2, 2]  # big | -big-1 pairs; 5, 1 within 4


@pytest.mark.parametrize(
    ("window", "why"),
    [
        ("FRAME AGGREGATE (count(*) >= 3) WATTR v", "a DOUBLE attribute"),
        ("SESSION GAP 2 MAX 5 WATTR v", "a DOUBLE attribute"),
    ],
)
def test_what_the_kernel_leaves_to_numpy(spark: Any, window: str, why: str) -> None:
    """DOUBLE attributes fold in numpy, also with the jar, and the plan says so."""
    rows = shuffled_rows(3, 40)
    frame = spark.createDataFrame([tuple(r[c] for c in ("k", "seq", "v", "q", "ts")) for r in rows], SCHEMA)
    compiled = wql.compile(STREAM + f"SELECT count(*) AS n, sum(v) AS sv FROM s [{window} PATTR k]", plan="fold")
    result = compiled.run(spark, s=frame)
    assert "MapInArrow" in physical_plan(result) and "FrameWindows" not in physical_plan(result), why
    assert normalized([r.asDict() for r in result.collect()]) == normalized(evaluate_query(compiled.query, rows))
    notes = {p.name: p.note for p in compiled.explain().plans}
    assert "numpy" in notes["fold"]


@pytest.mark.parametrize(
    "window",
    [
        "SESSION GAP 2 DAYS MAX 10 DAYS",
        "FRAME THRESHOLD (v > 0) MIN 2 DAYS",
        "FRAME DELTA 2 ON v",
        "FRAME AGGREGATE (sum(v) >= 3)",
    ],
)
def test_dates_and_string_keys_with_a_null_key(spark: Any, window: str) -> None:
    """A DATE attribute (an int of days in the kernel's columns) and STRING keys, NULL among them."""
    chance = random.Random(5)
    rows = [
        {
            "k": chance.choice(["a", "b", None]),
            "seq": i,
            "v": chance.choice([None, 1.0, -2.0, 3.5]),
            "day": None if chance.random() < 0.05 else date(2024, 1, 1) + timedelta(days=chance.randrange(0, 300)),
        }
        for i in range(2_000)
    ]
    chance.shuffle(rows)
    schema = "k STRING, seq BIGINT, v DOUBLE, day DATE"
    frame = spark.createDataFrame([(r["k"], r["seq"], r["v"], r["day"]) for r in rows], schema).repartition(3)
    text = f"SELECT count(*) AS n, sum(v) AS sv, stddev(v) AS sd FROM s [{window} WATTR day PATTR k]"
    compiled = wql.compile(f"CREATE STREAM s ({schema}) ROW_NUM seq;\n{text}")
    got, want, plan = in_jvm_and_numpy(spark, compiled, frame)
    assert "FrameWindows" in plan
    assert got == want == normalized(evaluate_query(compiled.query, rows)) and len(got) > 20


# ------------------------------------------------------------------ past memory: the sorter and chunks

CHUNK = 3  # tuples per chunk past memory: every window of 4 tuples or more spans chunks


@contextlib.contextmanager
def frames_settings(spark: Any, **settings: str) -> Iterator[None]:
    """The kernel's spark.wql.frames.* settings for the block (memoryLimit, chunkTuples, spillThreshold)."""
    for name, value in settings.items():
        spark.conf.set(f"spark.wql.frames.{name}", value)
    try:
        yield
    finally:
        for name in settings:
            spark.conf.unset(f"spark.wql.frames.{name}")


def exactly(result: Any) -> list[str]:
    """The rows as repr strings, sorted: floats to the last bit (a NaN equals a NaN)."""
    return sorted(repr(tuple(sorted(r.asDict().items()))) for r in result.collect())


@pytest.mark.parametrize("window", WINDOWS)
def test_partitions_past_the_memory_limit_fold_in_chunks_through_the_sorter(spark: Any, window: str) -> None:
    """Past spark.wql.frames.memoryLimit (as past Spark's execution memory) every tuple goes through Spark's
    sorter, which spills sorted runs (here every 500 tuples), and each key's tuples come back in chunks of
    3, so most windows span chunks and go on in the next: the same windows and states, to the bit, as in
    memory (ties, NULL times, values and predicates, WHERE), and the reference's."""
    rows = shuffled_rows(11, PER_KEY)
    frame = spark.createDataFrame([tuple(r[c] for c in ("k", "seq", "v", "q", "ts")) for r in rows], SCHEMA)
    frame = frame.repartition(4)
    compiled = wql.compile(STREAM + f"SELECT {AGGREGATES} FROM s [{window} WATTR ts PATTR k] WHERE q <> 7")
    in_memory = compiled.run(spark, s=frame)
    want = exactly(in_memory)
    assert kernel_metrics(in_memory, "FrameWindows")["sortedTuples"] == 0
    with frames_settings(spark, memoryLimit="0", chunkTuples=str(CHUNK), spillThreshold="500"):
        capped = compiled.run(spark, s=frame)
        got = exactly(capped)
        metrics = kernel_metrics(capped, "FrameWindows")
        windows = [r.asDict() for r in capped.collect()]
    kept = [r for r in rows if r["ts"] is not None and ("KAFKA" not in window or r["q"] != 7)]  # KAFKA filters first
    assert metrics["sortedTuples"] == len(kept)  # every tuple that reaches the kernel
    assert metrics["spillSize"] > 0
    assert max(w["n"] for w in windows) > CHUNK  # windows span chunks
    assert got == want and len(got) > 20
    assert normalized(windows) == normalized(evaluate_query(compiled.query, rows))


def test_some_keys_in_memory_and_the_rest_through_the_sorter(spark: Any) -> None:
    """Four small keys, then one of 9,000 tuples, in one Spark partition (the input's slices hold the small
    keys first, so the kernel meets them first). Under a limit of a few batches the sorter takes over while
    batches are read (the columns filled so far go in first); under 1.3 MB every batch fits, the small keys'
    windows are computed in memory and the large key's sort does not fit, so it alone goes through the
    sorter; under 2.5 MB all fit. Each gives the in-memory windows, to the bit."""
    chance = random.Random(17)
    rows = []
    for key, size in enumerate([150, 300, 450, 600, 9_000]):
        for _ in range(size):
            value = None if chance.random() < 0.1 else chance.choice([-1.5, 2.25, 7.0, 0.5])
            ts = START + timedelta(seconds=chance.randrange(0, size // 2))  # out of order within the key
            rows.append({"k": key, "seq": len(rows), "v": value, "q": chance.randrange(-50, 50), "ts": ts})
    data = [tuple(r[c] for c in ("k", "seq", "v", "q", "ts")) for r in rows]
    frame = spark.createDataFrame(spark.sparkContext.parallelize(data, 12), SCHEMA)
    text = f"SELECT {AGGREGATES} FROM s [SESSION GAP 2 SECONDS MAX 9 SECONDS WATTR ts PATTR k] WHERE q <> 7"
    compiled = wql.compile(STREAM + text)
    saved = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    try:
        want = exactly(compiled.run(spark, s=frame))
        sorted_tuples = []
        for limit in ("100000", "1300000", "2500000"):
            with frames_settings(spark, memoryLimit=limit, chunkTuples="64", spillThreshold="1000"):
                capped = compiled.run(spark, s=frame)
                assert exactly(capped) == want, limit
                sorted_tuples.append(kernel_metrics(capped, "FrameWindows")["sortedTuples"])
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", saved)
    assert sorted_tuples == [len(rows), 9_000, 0]


def test_a_cached_result_over_the_kernel_is_read_from_the_cache(spark: Any) -> None:
    """Spark clones a query's plan before it looks for cached data in it and matches plans by equality:
    a kernel's node equals its clones, so a cached DataFrame over the kernel serves the next queries
    (a stream's trigger reads its windows three times) instead of running the kernel again."""
    rows = shuffled_rows(5, 40)
    frame = spark.createDataFrame([tuple(r[c.split()[0]] for c in SCHEMA.split(", ")) for r in rows], SCHEMA)
    result = wql.compile(STREAM + f"SELECT {AGGREGATES} FROM s [SESSION GAP 1 SECOND WATTR ts PATTR k]").run(
        spark, s=frame
    )
    assert "FrameWindows" in physical_plan(result)
    cached = result.persist()
    try:
        cached.count()
        executed = physical_plan(cached.where("n > 0"))
        above_the_cache = executed.split("InMemoryRelation")[0]  # the relation prints the plan it cached
        assert "InMemoryTableScan" in above_the_cache and "FrameWindows" not in above_the_cache, executed
    finally:
        cached.unpersist()
