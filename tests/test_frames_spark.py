"""Sessions and frames on Spark: every plan × data-driven kind × aggregate kind against the reference
evaluator, Spark's own session_window, and Kafka Streams' session rules.

Each hypothesis example is one Spark job over several random streams (tests/differential.py `runs`:
a short time axis, so ties, gaps exactly at the boundary and long runs are common, in random arrival
order, with NULLs). Every query computes distributive (count, sum, min, max), algebraic (avg,
stddev) and, where the plan takes them, holistic aggregates (median, count DISTINCT).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wql
from tests.conftest import EXAMPLES, SPARK
from tests.differential import BASE, STREAM, combined_in, compare, frame, normalized, row, runs
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.spark

DISTRIBUTIVE = "count(*) AS n, count(v) AS nv, sum(v) AS sv, min(v) AS lo, max(x) AS hi"
ALGEBRAIC = "avg(v) AS av, stddev(v) AS sd"
HOLISTIC = "median(v) AS med, count(DISTINCT k) AS dk"
SETTINGS = SPARK  # the profile's examples (tests/conftest.py), no shrinking
WHERES = st.sampled_from(["", "", "WHERE v IS NULL OR v > -1", "WHERE n <> 2"])


def aggregates(plan: str) -> str:
    return f"{DISTRIBUTIVE}, {ALGEBRAIC}" + (f", {HOLISTIC}" if not plan.startswith("fold") else "")


def compared(spark: Any, text: str, rows: list[dict[str, Any]], plan: str) -> None:
    """`compare` with `plan`; "fold" folds sessions, threshold and delta frames in the JVM kernel (the jar
    is on the test session's classpath), "fold in numpy" forces the numpy fold that runs without it."""
    with combined_in(spark, "arrow" if plan.endswith(" in numpy") else "auto"):
        compare(spark, text, rows, plan.removesuffix(" in numpy"))


def spec(draw: Any, kind: str) -> str:
    """A random window of the kind, over ts unless the kind says otherwise."""
    if kind == "session":
        return f"SESSION GAP {draw(st.integers(0, 6))} SECONDS"
    if kind == "session-max":
        return f"SESSION GAP {draw(st.integers(1, 6))} SECONDS MAX {draw(st.integers(1, 10))} SECONDS"
    if kind == "session-kafka":
        return f"SESSION GAP {draw(st.integers(0, 6))} SECONDS KAFKA"
    if kind == "threshold":
        predicate = draw(st.sampled_from(["v > 0", "v IS NULL OR v < 1", "n <> 3", "x % 2 = 0", "d >= 5"]))
        minimum = draw(st.sampled_from(["", "", "MIN 2 ROWS", "MIN 3 ROWS", "MIN 1 SECOND", "MIN 3 SECONDS"]))
        return f"FRAME THRESHOLD ({predicate}) {minimum}"
    if kind == "delta":
        on, delta = draw(
            st.sampled_from(
                [("v", "0"), ("v", "0.5"), ("v", "1.25"), ("x", "0"), ("x", "3"), ("x", "2.5"), ("(x + n)", "2")]
            )
        )
        return f"FRAME DELTA {delta} ON {on}"
    assert kind == "aggregate"
    condition = draw(
        st.sampled_from(
            [
                "sum(v) > 1",
                "count(*) >= 3",
                "max(x) > 8 OR count(v) >= 2",
                "NOT avg(v) < 0.5",
                "min(x) <= 0 AND sum(x) > 4",
                "sum(v) = 1.5 OR count(*) > 4",
            ]
        )
    )
    return f"FRAME AGGREGATE ({condition})"


KINDS_AND_PLANS = [
    ("session", "fold"),
    ("session", "fold in numpy"),
    ("session", "starts"),
    ("session", "scan"),
    ("session-max", "fold"),
    ("session-max", "fold in numpy"),
    ("session-max", "scan"),
    ("session-kafka", "fold"),
    ("session-kafka", "fold in numpy"),
    ("session-kafka", "starts"),
    ("session-kafka", "scan"),
    ("threshold", "fold"),
    ("threshold", "fold in numpy"),
    ("threshold", "starts"),
    ("threshold", "scan"),
    ("delta", "fold"),
    ("delta", "fold in numpy"),
    ("delta", "scan"),
    ("aggregate", "fold"),
    ("aggregate", "fold in numpy"),
    ("aggregate", "scan"),
]


def query(data: st.DataObject, kind: str, plan: str) -> str:
    window = spec(data.draw, kind)
    where = data.draw(WHERES)
    partitions = data.draw(st.sampled_from(["case_id", "case_id", "case_id, k"]))
    group = "" if plan.startswith("fold") or data.draw(st.booleans()) else " GROUP BY k"
    select = "k, " if group else ""
    return f"SELECT {select}{aggregates(plan)} FROM s [{window} WATTR ts PATTR {partitions}] {where}{group}"


@pytest.mark.parametrize(("kind", "plan"), KINDS_AND_PLANS)
@SETTINGS
@given(data=st.data(), rows=runs())
def test_plans_equal_the_reference(
    spark: Any, kind: str, plan: str, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    compared(spark, query(data, kind, plan), rows, plan)


@pytest.mark.parametrize(
    ("kind", "plan"),
    [
        ("threshold", "fold"),
        ("delta", "fold"),
        ("delta", "scan"),
        ("aggregate", "fold"),
        ("aggregate", "scan"),
        ("session", "starts"),
    ],
)
@SETTINGS
@given(data=st.data(), rows=runs(specials=True))
def test_nan_and_infinities(spark: Any, kind: str, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """NaN and ±∞ in v: predicates, deltas and running sums compare them as Spark orders them."""
    compared(spark, query(data, kind, plan), rows, plan)


@pytest.mark.parametrize(
    ("window", "plans"),
    [
        ("SESSION GAP 2 WATTR x", ["fold", "fold in numpy", "starts", "scan"]),
        ("SESSION GAP 0.75 MAX 3 WATTR d", ["fold", "scan"]),
        ("SESSION GAP 1.5 WATTR d", ["fold", "starts", "scan"]),
        ("SESSION GAP 2 ROWS WATTR row_num", ["fold", "fold in numpy", "starts", "scan"]),
        ("FRAME THRESHOLD (v > 0) MIN 3 WATTR x", ["fold", "fold in numpy", "starts", "scan"]),
        ("FRAME DELTA 1 ON v WATTR row_num", ["fold", "fold in numpy", "scan"]),
        ("FRAME AGGREGATE (count(*) >= 2) WATTR d", ["fold", "scan"]),
        ("FRAME AGGREGATE (sum(x) > 3 OR min(v) < -1) WATTR x", ["fold", "fold in numpy", "scan"]),
    ],
)
@SETTINGS
@given(rows=runs())
def test_other_attributes(spark: Any, window: str, plans: list[str], rows: list[dict[str, Any]]) -> None:
    """Integers, doubles and arrival order as the window attribute."""
    for plan in plans:
        compared(spark, f"SELECT {aggregates(plan)} FROM s [{window} PATTR case_id]", rows, plan)


UNNUMBERED = STREAM.replace(" ROW_NUM seq", "")  # arrival is the DataFrame's own order


@pytest.mark.parametrize("plan", ["fold", "starts", "scan"])
def test_ties_follow_arrival_without_a_row_num_column(spark: Any, plan: str) -> None:
    """A DataFrame's rows arrive in partition order: frames order equal timestamps that way."""
    rows = [
        row(0, i, "a", v, 1, 5.0 if i < 6 else float(i), i, None, None)
        for i, v in enumerate([1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0])
    ]
    text = "SELECT count(*) AS n, sum(v) AS sv FROM s [FRAME THRESHOLD (v > 0) WATTR ts PATTR case_id]"
    compiled = wql.compile(UNNUMBERED + text, plan=plan)
    data = frame(spark, rows)  # createDataFrame keeps the list order across its partitions
    got = [r.asDict() for r in compiled.run(spark, s=data).collect()]
    want = evaluate_query(compiled.query, rows)
    assert normalized(got) == normalized(want)
    assert sorted(r["n"] for r in got) == [1, 2, 3]  # ts 5: 1 | 1, 1 | 1 and then 6, 7 join the last


# ------------------------------------------------------------------ Spark's session_window


def spark_sessions(spark: Any, rows: list[dict[str, Any]], gap: int) -> list[tuple[Any, ...]]:
    from pyspark.sql import functions as F

    data = frame(spark, rows)
    grouped = data.groupBy("case_id", F.session_window("ts", f"{gap} seconds").alias("w"))
    sessions = grouped.agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("sv"))
    return sorted((r["case_id"], r["w"]["start"], r["w"]["end"], r["n"], r["sv"]) for r in sessions.collect())


def wql_sessions(
    spark: Any, rows: list[dict[str, Any]], gap: int, plan: str, kafka: bool = False
) -> list[tuple[Any, ...]]:
    variant = " KAFKA" if kafka else ""
    compiled = wql.compile(
        STREAM
        + f"SELECT count(*) AS n, sum(v) AS sv FROM s [SESSION GAP {gap} SECONDS{variant} WATTR ts PATTR case_id]",
        plan=plan,
    )
    result = compiled.run(spark, s=frame(spark, rows)).collect()
    return sorted((r["case_id"], r["window_start"], r["window_end"], r["n"], r["sv"]) for r in result)


@pytest.mark.parametrize("plan", ["fold", "starts"])
@SETTINGS
@given(gap=st.integers(1, 6), rows=runs())
def test_sessions_equal_spark_session_window(spark: Any, plan: str, gap: int, rows: list[dict[str, Any]]) -> None:
    """Spark's session_window gives each event the window [t, t + gap) and merges windows that overlap
    or touch (MergingSessionsIterator merges when the next start ≤ the current end, so events exactly
    gap apart are one session): [first, last + gap), as WQL's default session. Spark drops NULL times."""
    assert wql_sessions(spark, rows, gap, plan) == spark_sessions(spark, rows, gap)


def test_session_window_boundary_by_hand(spark: Any) -> None:
    """Exactly the gap apart: one session in both; one microsecond more: two in both."""
    rows = [
        row(0, 0, "a", 1.0, 1, 0.0, None, None, None),
        row(0, 1, "a", 1.0, 1, 10.0, None, None, None),
        row(0, 2, "a", 1.0, 1, 20.000001, None, None, None),
    ]
    ours = wql_sessions(spark, rows, 10, "fold")
    assert ours == spark_sessions(spark, rows, 10)
    assert [(start, end) for _, start, end, _, _ in ours] == [
        (BASE, BASE + timedelta(seconds=20)),
        (BASE + timedelta(seconds=20.000001), BASE + timedelta(seconds=30.000001)),
    ]


# ------------------------------------------------------------------ Kafka Streams' sessions


def kafka_sessions(records: Iterable[tuple[Any, int]], gap: int) -> list[tuple[Any, int, int, int]]:
    """(key, start, end, count) of each session Kafka Streams keeps, replaying its merge rule.

    KStreamSessionWindowAggregate.process, record by record in arrival order: the record's
    session [t, t] absorbs every stored session of its key that findSessions(key, t − gap, t + gap)
    returns (end ≥ t − gap and start ≤ t + gap, both inclusive), and replaces them. With no record
    late (a long grace period), the store at the end holds the final sessions.
    """
    store: list[tuple[Any, int, int, int]] = []
    for key, t in records:
        start, end, count = t, t, 1
        kept = []
        for session in store:
            other_key, other_start, other_end, other_count = session
            if other_key == key and other_end >= t - gap and other_start <= t + gap:
                start, end, count = min(start, other_start), max(end, other_end), count + other_count
            else:
                kept.append(session)
        store = [*kept, (key, start, end, count)]
    return sorted(store, key=lambda s: (str(s[0]), s[1]))


GAP_MS = 5 * 60 * 1000  # KStreamSessionWindowAggregateProcessorTest's gap
# Cases of KStreamSessionWindowAggregateProcessorTest (apache/kafka): records as (key, time in ms) in
# arrival order, and the final sessions as (key, start, end, count).
KAFKA_CASES = {
    "shouldCreateSingleSessionWhenWithinGap": ([("john", 0), ("john", 500)], [("john", 0, 500, 2)]),
    "shouldMergeSessions": (
        [("mel", 0), ("mel", GAP_MS + 1), ("mel", GAP_MS // 2)],
        [("mel", 0, GAP_MS + 1, 3)],
    ),
    "shouldUpdateSessionIfTheSameTime": ([("mel", 0), ("mel", 0)], [("mel", 0, 0, 2)]),
    "shouldHaveMultipleSessionsForSameIdWhenTimestampApartBySessionGap": (
        [("mel", 0), ("mel", GAP_MS + 1), ("mel", GAP_MS + 1), *[("mel", 2 * GAP_MS + 2)] * 3],
        [("mel", 0, 0, 1), ("mel", GAP_MS + 1, GAP_MS + 1, 2), ("mel", 2 * GAP_MS + 2, 2 * GAP_MS + 2, 3)],
    ),
    "shouldRemoveMergedSessionsFromStateStore": ([("a", 0), ("a", 100)], [("a", 0, 100, 2)]),
    "shouldHandleMultipleSessionsAndMerging": (
        [
            ("a", 0),
            ("b", 0),
            ("c", 0),
            ("d", 0),
            ("d", GAP_MS // 2),
            ("a", GAP_MS + 1),
            ("b", GAP_MS + 1),
            ("a", GAP_MS + 1 + GAP_MS // 2),
            ("c", GAP_MS + 1 + GAP_MS // 2),
        ],
        [
            ("a", 0, 0, 1),
            ("a", GAP_MS + 1, GAP_MS + 1 + GAP_MS // 2, 2),
            ("b", 0, 0, 1),
            ("b", GAP_MS + 1, GAP_MS + 1, 1),
            ("c", 0, 0, 1),
            ("c", GAP_MS + 1 + GAP_MS // 2, GAP_MS + 1 + GAP_MS // 2, 1),
            ("d", 0, GAP_MS // 2, 2),
        ],
    ),
}
KAFKA_STREAM = "CREATE STREAM r (k STRING, ms BIGINT);\n"


def kafka_rows(records: list[tuple[Any, int]]) -> list[dict[str, Any]]:
    return [{"k": key, "ms": t} for key, t in records]


def wql_kafka(records: list[tuple[Any, int]], gap: int) -> list[tuple[Any, int, int, int]]:
    compiled = wql.compile(KAFKA_STREAM + f"SELECT count(*) AS n FROM r [SESSION GAP {gap} KAFKA WATTR ms PATTR k]")
    result = evaluate_query(compiled.query, kafka_rows(records))
    return sorted(
        ((r["k"], r["window_start"], r["window_end"], r["n"]) for r in result), key=lambda s: (str(s[0]), s[1])
    )


@pytest.mark.parametrize("case", sorted(KAFKA_CASES))
def test_kafka_sessions_match_kafkas_own_cases(case: str) -> None:
    records, sessions = KAFKA_CASES[case]
    assert kafka_sessions(records, GAP_MS) == sorted(sessions, key=lambda s: (str(s[0]), s[1]))  # the replay
    assert wql_kafka(records, GAP_MS) == sorted(sessions, key=lambda s: (str(s[0]), s[1]))


@settings(max_examples=200, deadline=None)
@given(
    gap=st.integers(0, 5),
    records=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 30)), max_size=25),
)
def test_kafka_rules_on_random_records(gap: int, records: list[tuple[str, int]]) -> None:
    """Records within the gap join, gap + 1 apart start a new session, in any arrival order."""
    assert wql_kafka(records, gap) == kafka_sessions(records, gap)


@pytest.mark.parametrize("plan", ["fold", "starts", "scan"])
def test_kafka_cases_on_spark(spark: Any, plan: str) -> None:
    records, sessions = KAFKA_CASES["shouldHandleMultipleSessionsAndMerging"]
    compiled = wql.compile(
        KAFKA_STREAM + f"SELECT count(*) AS n FROM r [SESSION GAP {GAP_MS} KAFKA WATTR ms PATTR k]", plan=plan
    )
    data = spark.createDataFrame([(key, t) for key, t in records], "k STRING, ms BIGINT")
    got = sorted((r["k"], r["window_start"], r["window_end"], r["n"]) for r in compiled.run(spark, r=data).collect())
    assert got == sorted(sessions)


# ------------------------------------------------------------------ the examples


def typed_rows(path: Path, types: dict[str, Any]) -> list[dict[str, Any]]:
    with path.open(newline="") as handle:
        return [
            {name: (types[name](value) if value != "" else None) for name, value in line.items()}
            for line in csv.DictReader(handle)
        ]


CALLS = {
    "call_id": str,
    "region": str,
    "started": datetime.fromisoformat,
    "ended": datetime.fromisoformat,
    "cost": float,
}


@pytest.mark.parametrize(
    ("name", "types"),
    [
        ("clicks", {"user_id": str, "page": str, "ts": datetime.fromisoformat, "amount": float}),
        ("slowdowns", {"seg_id": str, "speed": float, "ts": datetime.fromisoformat}),
        ("calls", CALLS),
        ("concurrent_calls", CALLS),
    ],
)
def test_examples_equal_the_reference(spark: Any, name: str, types: dict[str, Any], tmp_path: Path) -> None:
    """The example files, read from their CSV (arrival is line order), against the reference. round() is
    taken out: at a .x5 boundary it turns the last bit of a sum's order of addition into a visible 0.1."""
    text = (EXAMPLES / f"{name}.wql").read_text(encoding="utf-8")
    text = re.sub(r"round\((.*?), \d\)", r"\1", text).replace("'data/", f"'{EXAMPLES}/data/")
    (tmp_path / f"{name}.wql").write_text(text, encoding="utf-8")
    program = wql.load(str(tmp_path / f"{name}.wql"))
    [statement] = program.queries
    compiled = wql.compile_statement(program, statement)
    got = [r.asDict() for r in compiled.run(spark).collect()]
    source = compiled.query.stream.path
    assert source is not None
    want = evaluate_query(compiled.query, typed_rows(Path(source), types))
    assert normalized(got) == normalized(want)
    assert len(got) > 20
