"""The numpy bins kernel, chunk by chunk (semantics.md §7.8).

Spark sorts each PATTR partition's tuples by value (NULLs last) and the numpy kernel walks the sorted
Arrow batches a chunk at a time: the partition that goes on into the next chunk emits only the windows
no later tuple can reach, and carries the tuples the others can, which of them name a window, its count
of present tuples (SLIDE n ROWS over rank) and the window-id it is done below. With batches of one to
four tuples almost every window and every run of ties straddles chunks, so a carry that loses or repeats
anything shows: every mode (a window at every tuple, every n-th arrival, every n-th in value order,
KIP-450's windows) with GROUP BY, WHERE, NULL values and keys, against the reference evaluator.
"""

from __future__ import annotations

from typing import Any

import pytest

import wql
from tests.differential import normalized
from tests.test_frame_batches import COLUMNS, SCHEMA, STREAM, run_in_numpy, shuffled_rows
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.spark

AGGREGATES = "count(*) AS n, count(v) AS nv, sum(v) AS sv, min(v) AS lo, max(q) AS hq, stddev(v) AS sd"

WINDOWS = [
    "RANGE 3 SECONDS RATTR ts SLIDE 1 ROW PATTR k",
    "RANGE 2.5 RATTR d SLIDE 1 ROW PATTR k",
    "RANGE 4 SECONDS RATTR ts SLIDE 3 ROWS SATTR row_num PATTR k",
    "RANGE 5 SECONDS RATTR ts SLIDE 2 ROWS SATTR rank(ts) PATTR k",
    "RANGE 3 SECONDS RATTR ts SLIDE KAFKA PATTR k",
    "RANGE 6 RATTR q SLIDE 1 ROW",
]


@pytest.mark.parametrize("batch", [1, 3, 4])
@pytest.mark.parametrize("window", WINDOWS)
def test_bins_in_numpy_over_small_batches_equals_the_reference(spark: Any, window: str, batch: int) -> None:
    rows = shuffled_rows(7, 60)
    frame = spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows], SCHEMA).repartition(3)
    where = "" if "KAFKA" in window else " WHERE q IS NULL OR q <> 7"
    grouped = "GROUP BY k" if "PATTR" not in window else ""
    keys = "k, " if grouped else ""
    compiled = wql.compile(STREAM + f"SELECT {keys}{AGGREGATES} FROM s [{window}]{where} {grouped}", plan="bins")
    windows, executed = run_in_numpy(spark, compiled, frame, batch)
    assert "MapInArrow" in executed and "Sort [" in executed, executed
    assert max(w["n"] for w in windows) > batch  # windows straddle batches
    assert normalized(windows) == normalized(evaluate_query(compiled.query, rows)) and len(windows) > 10
