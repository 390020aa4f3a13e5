"""The numpy fold and scan of sessions and frames, batch by batch (semantics.md §7.8).

Spark sorts each partition in window order (keys, attribute, arrival) and the numpy passes walk its
Arrow batches one at a time, carrying only what is in flight from one batch to the next: the open
window's bounds, anchor, running aggregates and folded states, and the next row's number, value and
key for the closing tuples a stream's frames need. With batches of three tuples almost every window
straddles batches, so a carry that loses or misreads anything shows: these compare every rule the
numpy passes serve with the reference evaluator on Spark, and the passes themselves, over batches of
1 to 4 rows, with one batch of the whole partition.
"""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import wql
from tests import test_streaming_frames as hand_worked
from tests.conftest import seeds
from tests.differential import combined_in, normalized, physical_plan
from wql.compiler.kernels.frame_windows import (
    frame_closings,
    frame_labels,
    frame_pending,
    frame_states,
    walk_sorted,
    window_closes,
)
from wql.runtime.reference import evaluate_query

SCHEMA = "k INT, seq BIGINT, v DOUBLE, q BIGINT, ts TIMESTAMP, d DOUBLE"
COLUMNS = [c.split()[0] for c in SCHEMA.split(", ")]
STREAM = f"CREATE STREAM s ({SCHEMA}) ROW_NUM seq;\n"
START = datetime(2024, 1, 1)
BATCH = 3  # tuples per Arrow batch: every window of 4 tuples or more straddles batches
AGGREGATES = "count(*) AS n, count(v) AS nv, sum(v) AS sv, avg(v) AS av, min(v) AS lo, max(q) AS hq, stddev(v) AS sd"


def shuffled_rows(seed: int, per_key: int) -> list[dict[str, Any]]:
    """Keys 1, 2, 3 and NULL of `per_key` tuples each on a short time axis (ties), with NULL values, times,
    predicates and x; d, a DOUBLE attribute with fractions, ties and NULLs; arrival shuffled."""
    chance = random.Random(seed)
    rows = []
    for key in [1, 2, 3, None]:
        for _ in range(per_key):
            value = None if chance.random() < 0.1 else chance.choice([-1.5, 2.25, 7.0, 0.5, -3.75, 1.0])
            second = None if chance.random() < 0.03 else chance.randrange(0, per_key // 2)
            ts = None if second is None else START + timedelta(seconds=second)
            d = None if chance.random() < 0.03 else chance.randrange(0, per_key) / 4
            q = None if chance.random() < 0.05 else chance.randrange(-50, 50)
            rows.append({"k": key, "seq": len(rows), "v": value, "q": q, "ts": ts, "d": d})
    chance.shuffle(rows)
    return rows


@contextlib.contextmanager
def arrow_batches(spark: Any, size: int) -> Iterator[None]:
    """spark.sql.execution.arrow.maxRecordsPerBatch = `size` for the block, restored after."""
    name = "spark.sql.execution.arrow.maxRecordsPerBatch"
    saved = spark.conf.get(name)
    spark.conf.set(name, str(size))
    try:
        yield
    finally:
        spark.conf.set(name, saved)


# Every rule the numpy fold and the numpy scan serve: sessions (with MAX: the scan's chain), threshold
# frames with MIN, delta frames on a DOUBLE and a BIGINT x, aggregate frames, and DOUBLE attributes.
WINDOWS = [
    "SESSION GAP 1 SECOND WATTR ts",
    "SESSION GAP 2 SECONDS MAX 9 SECONDS WATTR ts",
    "SESSION GAP 1 SECOND KAFKA WATTR ts",
    "FRAME THRESHOLD (v > 0) WATTR ts",
    "FRAME THRESHOLD (v IS NULL OR v < 1) MIN 3 ROWS WATTR ts",
    "FRAME THRESHOLD (q % 3 <> 0) MIN 2 SECONDS WATTR ts",
    "FRAME DELTA 2.5 ON v WATTR ts",
    "FRAME DELTA 7 ON q WATTR ts",
    "FRAME AGGREGATE (count(*) >= 8) WATTR ts",
    "FRAME AGGREGATE (sum(q) > 60 OR NOT avg(v) < 1.5) WATTR ts",
    "FRAME AGGREGATE (max(v) >= 7 AND min(q) < -40 OR count(v) > 6) WATTR ts",
    "SESSION GAP 0.5 WATTR d",
    "SESSION GAP 1 MAX 3 WATTR d",
    "FRAME THRESHOLD (v > 0) WATTR d",
    "FRAME DELTA 7 ON q WATTR d",
    "FRAME AGGREGATE (sum(v) >= 4) WATTR d",
]


def run_in_numpy(spark: Any, compiled: wql.CompiledQuery, frame: Any, batch: int) -> tuple[list[dict[str, Any]], str]:
    """The query's windows with every kernel in numpy over Arrow batches of `batch` rows, and its physical plan."""
    with arrow_batches(spark, batch), combined_in(spark, "arrow"):
        result = compiled.run(spark, s=frame)
        return [r.asDict() for r in result.collect()], physical_plan(result)


@pytest.mark.spark
@pytest.mark.parametrize("plan", ["fold", "scan"])
@pytest.mark.parametrize("window", WINDOWS)
def test_windows_across_batches_of_three_equal_the_reference(spark: Any, window: str, plan: str) -> None:
    """Each key's tuples arrive shuffled over 3 partitions and reach the numpy pass (the fold forced to
    numpy, or the scan) sorted by Spark, in batches of 3: most windows straddle batches, and the windows
    and their aggregates equal the reference's (ties of the attribute by row_num, NULL times, values,
    predicates and keys, WHERE)."""
    rows = shuffled_rows(11, 120)
    frame = spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows], SCHEMA).repartition(3)
    holistic = ", median(v) AS med" if plan == "scan" else ""
    text = f"SELECT {AGGREGATES}{holistic} FROM s [{window} PATTR k] WHERE q IS NULL OR q <> 7"
    compiled = wql.compile(STREAM + text, plan=plan)
    windows, executed = run_in_numpy(spark, compiled, frame, BATCH)
    assert "MapInArrow" in executed and "Sort [" in executed, executed
    assert max(w["n"] for w in windows) > BATCH  # windows straddle batches
    assert normalized(windows) == normalized(evaluate_query(compiled.query, rows)) and len(windows) > 10


@pytest.mark.spark
def test_delta_on_bigint_x_at_its_ends_across_batches(spark: Any) -> None:
    """x near ±2⁶³ in batches of 2: a batch whose own x are small but whose open frame began at an end of
    BIGINT still compares in Python integers (a difference that overflows a long is beyond any δ)."""
    big = 2**63 - 1
    xs = [big, big - 3, -big - 1, -big + 2, 0, big, -big - 1, 5, 1, -big - 1, -big, 2]
    rows = [
        {"k": 1, "seq": i, "v": 1.0, "q": x, "ts": START + timedelta(seconds=i), "d": 0.0} for i, x in enumerate(xs)
    ]
    frame = spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows], SCHEMA)
    for plan in ("fold", "scan"):
        compiled = wql.compile(STREAM + "SELECT count(*) AS n FROM s [FRAME DELTA 4 ON q WATTR ts PATTR k]", plan=plan)
        with arrow_batches(spark, 2), combined_in(spark, "arrow"):
            got = normalized([r.asDict() for r in compiled.run(spark, s=frame).collect()])
        assert got == normalized(evaluate_query(compiled.query, rows)), plan


@pytest.mark.spark
@pytest.mark.parametrize(
    "window, plan", [("SESSION GAP 10", "fold"), ("SESSION GAP 10", "scan"), ("RANGE 3 SLIDE 1 ROW", "bins")]
)
@pytest.mark.parametrize("kernel", ["arrow", "auto"])
def test_a_double_key_of_zero_and_minus_zero_is_one_key(spark: Any, window: str, plan: str, kernel: str) -> None:
    """Spark hashes, sorts and groups 0.0 and −0.0 as one value, so they arrive interleaved in one key's
    run: the numpy walk and the JVM kernels ("auto") compare them as one key too (else every tuple would
    end a session), as the reference."""
    rows = [{"k": -0.0 if i % 2 else 0.0, "seq": i, "t": i // 2} for i in range(12)]
    schema = "k DOUBLE, seq BIGINT, t BIGINT"
    frame = spark.createDataFrame([(r["k"], r["seq"], r["t"]) for r in rows], schema)
    attribute = "RATTR" if "ROW" in window else "WATTR"
    text = f"CREATE STREAM s ({schema}) ROW_NUM seq;\nSELECT count(*) AS n FROM s [{window} {attribute} t PATTR k]"
    compiled = wql.compile(text, plan=plan)
    with arrow_batches(spark, BATCH), combined_in(spark, kernel):
        got = normalized([r.asDict() for r in compiled.run(spark, s=frame).collect()])
    assert got == normalized(evaluate_query(compiled.query, rows))
    if plan != "bins":
        assert [dict(w)["n"] for w in got] == [12]


@pytest.mark.spark
@pytest.mark.parametrize(
    "case",
    [
        hand_worked.test_a_tuple_out_of_order_splits_a_threshold_frame,
        hand_worked.test_a_frame_is_final_once_the_punctuation_is_past_its_closing_tuple,
        hand_worked.test_an_aggregate_frame_is_closed_by_its_own_last_tuple,
        hand_worked.test_generous_a_late_tuple_moves_the_end_of_an_open_aggregate_frame,
    ],
    ids=lambda case: case.__name__.removeprefix("test_"),
)
def test_a_streams_frames_close_across_batches_of_one(spark: Any, case: Any) -> None:
    """A stream's frames fold in numpy with the tuple that closed each (`_close`): with batches of one
    tuple, a frame's closing tuple is always in the batch after its last, and the hand-worked streams of
    tests/test_streaming_frames.py emit the same windows at the same triggers."""
    with arrow_batches(spark, 1):
        case(spark)


@pytest.mark.spark
@pytest.mark.parametrize("plan", ["fold", "scan"])
def test_a_delta_frame_closed_by_a_null_across_batches_of_one(spark: Any, plan: str) -> None:
    with arrow_batches(spark, 1):
        hand_worked.test_a_delta_frame_closed_by_a_null_is_emitted_beside_other_keys(spark, plan)


# ------------------------------------------------------------------ the passes themselves, without Spark

RULES = [
    {"cut": "session", "gap": 2, "longest": None},
    {"cut": "session", "gap": 3, "longest": 7},
    {"cut": "threshold"},
    {"cut": "delta", "delta": 3},
    {"cut": "delta", "delta": 1.5},
    {
        "cut": "aggregate",
        "running": [("sum", "_c0", True), ("count", None, True)],
        "test": ("or", ("compare", ">=", 0, 5), ("compare", ">", 1, 6)),
    },
    {
        "cut": "aggregate",
        "running": [("avg", "_c1", False), ("max", "_c0", True)],
        "test": ("and", ("compare", ">", 0, 0.5), ("not", ("compare", "<", 1, 2))),
    },
    {
        "cut": "aggregate",
        "running": [("min", "_c1", False), ("count", "_c1", False), ("sum", "_c1", False)],
        "test": ("or", ("compare", "<", 0, -1), ("compare", ">=", 2, 3.5)),
    },
]
STATES = [("sum", ["_sv"]), ("min", ["_lo"]), ("max", ["_hq"]), ("moments", ["_n", "_mean", "_m2"])]


def sorted_partition(seed: int, rule: dict[str, Any]) -> pa.Table:
    """A partition as in_window_order hands it over: keys 0, 1, 2 and NULL together, each by `_t` then
    `_pos`; NULL `_t` last in its key; with what each rule reads and the states' contributions."""
    chance = random.Random(seed)
    rows = []
    for key in [None, 0, 1, 2]:
        stamps = sorted(chance.randrange(0, 60) for _ in range(chance.randrange(1, 40)))
        for t in [*stamps, *([None] if chance.random() < 0.5 else [])]:
            value = None if chance.random() < 0.1 else chance.choice([-1.5, 2.25, 0.5, 1.0, -3.0])
            q = None if chance.random() < 0.1 else chance.randrange(-3, 4)
            rows.append((key, t, len(rows), chance.random() < 0.7, q, value, chance.random() < 0.9))
    k, t, pos, p, q, v, inside = (list(c) for c in zip(*rows, strict=True))
    x = q if rule.get("delta") == 3 else v
    present = [1 if value is not None else 0 for value in v]
    columns = {
        "k": pa.array(k, pa.int32()),
        "_t": pa.array(t, pa.float64() if rule.get("delta") == 1.5 else pa.int64()),
        "_pos": pa.array(pos, pa.int64()),
        "_in": pa.array(inside),
        "_p": pa.array([None if c is None else b for b, c in zip(p, q, strict=True)]),
        "_x": pa.array(x, pa.int64() if rule.get("delta") == 3 else pa.float64()),
        "_c0": pa.array(q, pa.int64()),
        "_c1": pa.array(v, pa.float64()),
        "_sv": pa.array(v, pa.float64()),
        "_lo": pa.array(v, pa.float64()),
        "_hq": pa.array(q, pa.int64()),
        "_n": pa.array(present, pa.int64()),
        "_mean": pa.array(v, pa.float64()),
        "_m2": pa.array([None if value is None else 0.0 for value in v], pa.float64()),
    }
    return pa.table(columns)


def in_batches(table: pa.Table, size: int) -> list[pa.RecordBatch]:
    return table.to_batches(max_chunksize=size)


def output(function: Any, batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    return [row for batch in function(iter(batches)) for row in batch.to_pylist()]


def same_values(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return a == b


@pytest.mark.sampled
@pytest.mark.parametrize("closes", [False, True])
@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r['cut']}-{r.get('longest') or r.get('delta') or ''}")
def test_states_and_labels_by_batches_equal_one_batch(rule: dict[str, Any], closes: bool) -> None:
    """frame_states and frame_labels over batches of 1 to 4 rows give, window for window, what they give
    over the partition as one batch: the same numbers, bounds, lengths, closing tuples and states (sums
    and moments merged across batches up to rounding)."""
    for seed in seeds(8, 3):
        table = sorted_partition(seed, rule)
        fold = frame_states(["k"], STATES, rule, minimum=2, minimum_rows=True, closes=closes)
        scan = frame_labels(["k"], rule, closes=closes)
        want_windows, want_labels = (
            output(fold, in_batches(table, table.num_rows)),
            output(scan, [table.to_batches()[0]]),
        )
        assert want_windows and want_labels
        for size in (1, 2, 3, 4):
            windows, labels = output(fold, in_batches(table, size)), output(scan, in_batches(table, size))
            assert len(windows) == len(want_windows), (seed, size)
            for got, want in zip(windows, want_windows, strict=True):
                assert got.keys() == want.keys()
                assert all(same_values(got[c], want[c]) for c in got), (seed, size, got, want)
            assert [r["_w"] for r in labels] == [r["_w"] for r in want_labels], (seed, size)
            if closes:  # on the frame's last row, the frame's maximum over its rows
                closing = {}
                for r in labels:
                    if r["_close"] is not None:
                        closing[r["_w"]] = max(closing.get(r["_w"], r["_close"]), r["_close"])
                wanted = {}
                for r in want_labels:
                    if r["_close"] is not None:
                        wanted[r["_w"]] = max(wanted.get(r["_w"], r["_close"]), r["_close"])
                assert closing == wanted, (seed, size)


def test_a_batch_without_a_valued_attribute_carries_the_window_on() -> None:
    """Rows with a NULL `_t` are in no window and end none: a batch of only such rows (as the last of a key
    in Spark's order) leaves the open session as it was."""
    table = pa.table(
        {
            "k": pa.array([1, 1, 1, 1, 1], pa.int32()),
            "_t": pa.array([0, 1, None, None, 2], pa.int64()),
        }
    )
    rule = {"cut": "session", "gap": 1, "longest": None}
    fold = frame_states(["k"], [("sum", ["_n"])], rule)
    got = output(
        fold, [table.slice(0, 2).to_batches()[0], table.slice(2, 2).to_batches()[0], table.slice(4).to_batches()[0]]
    )
    assert got == [{"k": 1, "wid": 0, "_last": 2, "_n": 3}]
    assert np.array_equal([r["_w"] for r in output(frame_labels(["k"], rule), in_batches(table, 2))], [0, 0, 0])


def state_model(table: pa.Table, rule: dict[str, Any], point: Any, generous: bool) -> tuple[list[int], dict]:
    """What a stream's state keeps and each key's closing point, computed key by key over the whole
    partition (one batch): the `_pos` of the rows frame_pending keeps, and per key frame_closings' row.
    Each window is final or not from its own rows (semantics.md §8.4); CONSISTENT keeps a key's rows from
    its first unsettled one (a row of a window not final, or in none and at or past the point), GENEROUS
    the rows after its last row in a final window."""
    [(walked, t, labels, after, ended)] = list(
        walk_sorted(iter(table.to_batches(max_chunksize=table.num_rows)), ["k"], rule)
    )
    keys, pos = walked.column("k").to_pylist(), walked.column("_pos").to_pylist()
    final = {}
    for label in set(labels.tolist()) - {-1}:
        rows = [i for i in range(len(t)) if labels[i] == label]
        head, end = rows[0], rows[-1]
        if rule["cut"] == "session":
            final[label] = point > t[end] + rule["gap"] or (
                rule["longest"] is not None and point >= t[head] + rule["longest"]
            )
        else:
            closed, close = window_closes(rule, t, after, ended, np.array([end]))
            final[label] = bool(closed[0] and close[0] < point)
    kept, closings = [], {}
    for key in dict.fromkeys(keys):
        rows = [i for i in range(len(t)) if keys[i] == key]
        done = [labels[i] >= 0 and final[labels[i]] for i in rows]
        if generous:
            last = max((j for j, d in enumerate(done) if d), default=-1)
            kept += [pos[i] for i in rows[last + 1 :]]
        else:
            settled = [d if labels[i] >= 0 else t[i] < point for i, d in zip(rows, done, strict=True)]
            first = next((j for j, s in enumerate(settled) if not s), len(rows))
            kept += [pos[i] for i in rows[first:]]
        ends = [i for i, d in zip(rows, done, strict=True) if d]
        if ends:
            end = ends[-1]
            head = min(i for i in rows if labels[i] == labels[end])
            if rule["cut"] == "session":
                closings[key] = (t[end] + rule["gap"], None if rule["longest"] is None else t[head] + rule["longest"])
            elif rule["cut"] == "aggregate":
                closings[key] = (t[end], pos[end])
            else:
                closings[key] = (t[end + 1], pos[end + 1])
    return sorted(kept), closings


@pytest.mark.sampled
@pytest.mark.parametrize("generous", [False, True])
@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r['cut']}-{r.get('longest') or r.get('delta') or ''}")
def test_a_streams_state_cut_by_batches_equals_a_model(rule: dict[str, Any], generous: bool) -> None:
    """frame_pending (the rows a stream's state keeps) and frame_closings (each key's closing point, for
    GENEROUS) over batches of 1 to 3 rows and as one batch: what state_model computes key by key over the
    whole partition, at punctuations before, inside and past the data. Small batches cut windows and keys
    anywhere, so the window in flight, a key's cut found in an earlier batch, rows in no frame waiting for
    a later final window, and a key's closing point carried to its last batch are all crossed."""
    checked = 0
    chosen = seeds(6, 2)
    for seed in chosen:
        table = sorted_partition(seed, rule)
        for point in (-5, 12, 25, 40, 75):
            want_kept, want_closings = state_model(table, rule, point, generous)
            pending = frame_pending(["k"], rule, point, generous=generous)
            closings = frame_closings(["k"], rule, point)
            for size in (1, 2, 3, table.num_rows):
                got = sorted(r["_pos"] for r in output(pending, in_batches(table, size)))
                assert got == want_kept, (seed, point, size)
                found = {}
                for r in output(closings, in_batches(table, size)):
                    assert r["k"] not in found, (seed, point, size, r)  # one row per key
                    if rule["cut"] == "session":
                        found[r["k"]] = (r["_closed_t"], r.get("_closed_from"))
                    else:
                        found[r["k"]] = (r["_closed_t"], r["_closed_pos"])
                assert found == want_closings, (seed, point, size)
            checked += bool(want_kept) + bool(want_closings) + (0 < len(want_kept) < table.num_rows)
    assert checked > 6 * len(chosen)  # the cases come up: non-empty states, closings, partial cuts
