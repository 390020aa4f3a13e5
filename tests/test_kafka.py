"""SLIDE KAFKA reproduces Kafka Streams' sliding windows (KIP-450), checked against Kafka's own tests.

The cases and their final windows are those of KStreamSlidingWindowAggregateTest
in apache/kafka (testAggregateSmallInput, testReduceSmallInput,
testAggregateLargeInput, testEarlyRecordsSmallInput, testEarlyRecordsRepeatedInput,
testEarlyRecordsLargeInput), with a grace period long enough that no record is late:
each window's final content is the last value Kafka emits for it. Records are
given in Kafka's (partly out-of-order) arrival order; the result must not depend
on it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

import wql
from wql.compiler.kinds.kafka import kafka_windows
from wql.runtime.reference import evaluate_query

# key -> (time difference, records as (record name, time) in arrival order, {window start: record names})
CASES: dict[str, tuple[int, list[tuple[str, int]], dict[int, str]]] = {
    "aggregate-small": (
        10,
        [("1", 10), ("2", 10), ("3", 14), ("4", 15), ("5", 20), ("6", 22), ("7", 30)],
        {
            0: "12",
            4: "123",
            5: "1234",
            10: "12345",
            11: "345",
            12: "3456",
            15: "456",
            16: "56",
            20: "567",
            21: "67",
            23: "7",
        },
    ),
    "reduce-small": (
        10,
        [("1", 10), ("2", 14), ("3", 15), ("4", 22), ("5", 26), ("6", 30)],
        {0: "1", 4: "12", 5: "123", 11: "23", 12: "234", 15: "34", 16: "45", 20: "456", 23: "56", 27: "6"},
    ),
    "large-A": (
        10,
        [("1", 10), ("2", 20), ("3", 22), ("4", 15)],
        {0: "1", 5: "14", 10: "124", 11: "24", 12: "234", 16: "23", 21: "3"},
    ),
    "large-B": (
        10,
        [("1", 12), ("2", 13), ("3", 18), ("4", 19), ("5", 25), ("6", 14)],
        {2: "1", 3: "12", 4: "126", 8: "1236", 9: "12346", 13: "2346", 14: "346", 15: "345", 19: "45", 20: "5"},
    ),
    "large-C": (
        10,
        [("1", 11), ("2", 15), ("3", 16), ("4", 21), ("5", 23)],
        {1: "1", 5: "12", 6: "123", 11: "1234", 12: "234", 13: "2345", 16: "345", 17: "45", 22: "5"},
    ),
    "large-D": (
        10,
        [("4", 11), ("2", 12), ("3", 29), ("5", 16)],
        {1: "4", 2: "24", 6: "245", 12: "25", 13: "5", 19: "3"},
    ),
    "early-small": (
        50,
        [("1", 0), ("2", 5), ("3", 6), ("4", 3), ("5", 13), ("6", 10), ("7", 70)],
        {0: "123456", 1: "23456", 4: "2356", 6: "356", 7: "56", 11: "5", 20: "7"},
    ),
    "early-repeated": (
        5,
        [("1", 0), ("2", 2), ("3", 4), ("4", 0), ("5", 2), ("6", 2), ("7", 0), ("8", 7)],
        {0: "1234567", 1: "2356", 2: "23568", 3: "38", 5: "8"},
    ),
    "early-large": (
        10,
        [("1", 0), ("3", 5), ("4", 6), ("2", 3), ("6", 13), ("5", 10), ("7", 4), ("8", 2), ("9", 15)],
        {0: "1234578", 1: "234578", 3: "234567", 4: "34567", 5: "34569", 6: "4569", 7: "569", 11: "69", 14: "9"},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_window_placement_matches_kafka(case: str) -> None:
    difference, records, expected = CASES[case]
    windows = kafka_windows([t for _, t in records], difference, 1)
    assert [start for start, _ in windows] == sorted(expected)
    for start, end in windows:
        assert end == start + difference
        inside = "".join(sorted(name for name, t in records if start <= t <= end))
        assert inside == "".join(sorted(expected[start])), f"window [{start}, {end}]"


def _rows(timestamps: bool, reverse: bool) -> list[dict[str, Any]]:
    rows = []
    for key, (_, records, _) in CASES.items():
        for name, t in records:
            time = datetime(1970, 1, 1) + timedelta(milliseconds=t) if timestamps else t
            rows.append({"key": key, "name": name, "t": time})
    return rows[::-1] if reverse else rows


def _query(timestamps: bool, key: str) -> str:
    difference = CASES[key][0]
    unit = " MILLISECONDS" if timestamps else ""
    kind = "TIMESTAMP" if timestamps else "BIGINT"
    return (
        f"CREATE STREAM s (key STRING, name STRING, t {kind});\n"
        f"SELECT key, count(*) AS n, collect_list(name) AS names FROM s "
        f"[RANGE {difference}{unit} WATTR t SLIDE KAFKA PATTR key] WHERE key = '{key}'"
    )


def _windows(rows: list[dict[str, Any]], timestamps: bool) -> dict[int, str]:
    out = {}
    for row in rows:
        start = row["window_start"]
        start = (start - datetime(1970, 1, 1)) // timedelta(milliseconds=1) if timestamps else start
        out[int(start)] = "".join(sorted(row["names"]))
    return out


@pytest.mark.parametrize("timestamps", [False, True], ids=["integers", "timestamps"])
@pytest.mark.parametrize("reverse", [False, True], ids=["kafka-order", "reversed"])
def test_reference_evaluator_matches_kafka(timestamps: bool, reverse: bool) -> None:
    rows = _rows(timestamps, reverse)
    for key, (difference, _, expected) in CASES.items():
        compiled = wql.compile(_query(timestamps, key), plan="over")
        result = evaluate_query(compiled.query, rows)
        assert _windows(result, timestamps) == {k: "".join(sorted(v)) for k, v in expected.items()}, key
        assert all(
            r["window_end"] - r["window_start"] == (timedelta(milliseconds=difference) if timestamps else difference)
            for r in result
        )


@pytest.mark.spark
@pytest.mark.parametrize("timestamps", [False, True], ids=["integers", "timestamps"])
@pytest.mark.parametrize("plan", ["bins", "over"])
def test_spark_plans_match_kafka(spark: Any, timestamps: bool, plan: str) -> None:
    rows = _rows(timestamps, reverse=True)
    kind = "TIMESTAMP" if timestamps else "BIGINT"
    frame = spark.createDataFrame([(r["key"], r["name"], r["t"]) for r in rows], f"key STRING, name STRING, t {kind}")
    for key, (_, _, expected) in CASES.items():
        text = _query(timestamps, key)
        if plan == "bins":  # no holistic aggregates in bins: check the counts
            text = text.replace(", collect_list(name) AS names", "")
        compiled = wql.compile(text, plan=plan)
        result = [r.asDict() for r in compiled.run(spark, s=frame).collect()]
        if plan == "bins":
            got = {int(_windows([{**r, "names": []}], timestamps).popitem()[0]): r["n"] for r in result}
            assert got == {k: len(v) for k, v in expected.items()}, key
        else:
            assert _windows(result, timestamps) == {k: "".join(sorted(v)) for k, v in expected.items()}, key
