"""The numpy bins kernel, chunk by chunk (semantics.md §7.8).

Spark sorts each PATTR partition's tuples by value (NULLs last) and the numpy kernel walks the sorted
Arrow batches a chunk at a time: the partition that goes on into the next chunk emits only the windows
no later tuple can reach, and carries the tuples the others can, which of them name a window, its count
of present tuples (SLIDE n ROWS over rank) and the window-id it is done below. With batches of one to
four tuples almost every window and every run of ties straddles chunks, so a carry that loses or repeats
anything shows. Two levels: queries on Spark against the reference evaluator (every mode: a window at
every tuple, every n-th arrival, every n-th in value order, KIP-450's windows; on TIMESTAMP, DOUBLE and
BIGINT attributes; with and without GROUP BY inside the partitions and WHERE; NULL values, times and
keys), and the kernel function itself against a brute-force count of each window's tuples, for every
kind of state, which also shows that a hot key is walked as it arrives rather than held.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import wql
from tests.conftest import seeds
from tests.differential import normalized
from tests.test_frame_batches import COLUMNS, SCHEMA, run_in_numpy, shuffled_rows
from wql.compiler.kernels.tuple_windows import tuple_windows
from wql.runtime.reference import evaluate_query

GROUPED = f"{SCHEMA}, g STRING"
STREAM = f"CREATE STREAM s ({GROUPED}) ROW_NUM seq;\n"
AGGREGATES = (
    "count(*) AS n, count(v) AS nv, sum(v) AS sv, avg(v) AS av, min(v) AS lo, max(v) AS hi, "
    "sum(q) AS sq, min(q) AS lq, max(q) AS hq, stddev(v) AS sd, var_pop(q) AS vq"
)
WHERE = "WHERE q IS NULL OR q % 5 <> 2"

# (window, GROUP BY column or "", WHERE): every mode on a TIMESTAMP, a DOUBLE (quarters, ties) and a
# BIGINT attribute (Kafka takes no DOUBLE), grouped inside PATTR k, by k without PATTR, or neither.
WINDOWS = [
    ("RANGE 3 SECONDS RATTR ts SLIDE 1 ROW PATTR k", "g", True),
    ("RANGE 2.5 RATTR d SLIDE 1 ROW PATTR k", "", False),
    ("RANGE 6 RATTR q SLIDE 1 ROW", "k", True),
    ("RANGE 4 SECONDS RATTR ts SLIDE 3 ROWS SATTR row_num PATTR k", "g", False),
    ("RANGE 1.5 RATTR d SLIDE 2 ROWS SATTR row_num PATTR k", "", True),
    ("RANGE 5 SECONDS RATTR ts SLIDE 2 ROWS SATTR rank(ts) PATTR k", "", True),
    ("RANGE 2.75 RATTR d SLIDE 3 ROWS SATTR rank(d) PATTR k", "g", False),
    ("RANGE 3 SECONDS WATTR ts SLIDE KAFKA PATTR k", "", True),
    ("RANGE 4 WATTR q SLIDE KAFKA PATTR k", "g", False),
]


def grouped_rows(seed: int, per_key: int) -> list[dict[str, Any]]:
    """shuffled_rows with g, a group inside the partitions: "a", "b" or NULL."""
    chance = random.Random(seed)
    return [{**row, "g": chance.choice(["a", "b", None])} for row in shuffled_rows(seed, per_key)]


@pytest.mark.spark
@pytest.mark.parametrize("batch", [1, 2, 4, 100_000])
@pytest.mark.parametrize("window", WINDOWS, ids=lambda w: f"{w[0]}{' GROUP BY ' + w[1] if w[1] else ''}")
def test_bins_in_numpy_over_small_batches_equals_the_reference(
    spark: Any, window: tuple[str, str, bool], batch: int
) -> None:
    """Each partition's tuples arrive shuffled over 3 Spark partitions and reach the numpy kernel sorted by
    Spark in batches of `batch` tuples (or all in one): the windows and every aggregate equal the
    reference's, however the batches cut the windows and the runs of equal values."""
    spec, group, where = window
    rows = grouped_rows(7, 60)
    frame = spark.createDataFrame([tuple(r[c] for c in [*COLUMNS, "g"]) for r in rows], GROUPED).repartition(3)
    select = f"SELECT {group + ', ' if group else ''}{AGGREGATES} FROM s [{spec}]"
    text = f"{select} {WHERE if where else ''} {'GROUP BY ' + group if group else ''}"
    compiled = wql.compile(STREAM + text, plan="bins")
    windows, executed = run_in_numpy(spark, compiled, frame, batch)
    assert "MapInArrow" in executed and "Sort [" in executed, executed
    assert ("Window [" in executed) == ("row_num" in spec), executed  # arrival ranked by Spark, before the sort
    if batch < 100_000:
        assert max(w["n"] for w in windows) > batch  # windows straddle batches
    assert normalized(windows) == normalized(evaluate_query(compiled.query, rows)) and len(windows) > 10


# ------------------------------------------------------------------ the kernel itself, without Spark

STATES = [
    ("sum", ["_c"]),  # absent from the input: a row count
    ("sum", ["_sv"]),
    ("sum", ["_sq"]),
    ("sum", ["_sx"]),  # NaN and infinities, which reach only the windows holding them
    ("min", ["_lo"]),
    ("max", ["_hi"]),
    ("min", ["_lq"]),
    ("max", ["_hq"]),
    ("moments", ["_n", "_mean", "_m2"]),
]
LONG_MIN, LONG_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


def tuples(seed: int, floating: bool) -> list[dict[str, Any]]:
    """Keys NULL, 0 (half of its tuples carrying −0.0, which Spark sorts and groups as 0.0), 1.5 and 2
    of 0 to 60 tuples, in arrival order: values on a short axis (ties), NULL values and times, groups
    "a", "b" and NULL, WHERE's flag (NULL: false)."""
    chance = random.Random(seed)
    rows = []
    for key in [None, 0.0, 1.5, 2.0]:
        for arrival in range(chance.randrange(0, 61)):
            t = None if chance.random() < 0.08 else chance.randrange(0, 30)
            v = None if chance.random() < 0.1 else chance.choice([-1.5, 2.25, 0.5, 1.0, -3.0, 7.0])
            x = chance.choice([1.0, -2.5, 0.25, math.nan, math.inf, -math.inf] if chance.random() < 0.1 else [1.0, 3.5])
            rows.append(
                {
                    "k": -0.0 if key == 0.0 and arrival % 2 else key,
                    "g": chance.choice(["a", "b", None]),
                    "t": None if t is None else t / 4 if floating else t,
                    "arrival": arrival,
                    "in": chance.choice([True, True, True, False, None]),
                    "v": v,
                    "q": None if chance.random() < 0.1 else chance.randrange(-5, 6),
                    "x": None if chance.random() < 0.05 else x,
                }
            )
    return rows


def sorted_input(rows: list[dict[str, Any]], mode: str, step: int, floating: bool) -> pa.Table:
    """The kernel's input as windows_by_tuple hands it over: sorted by key (NULL first, −0.0 as 0.0),
    then value (NULL last), ties in no particular order; `_names` marks every `step`-th arrival."""
    chance = random.Random(len(rows))
    ordered = list(rows)
    chance.shuffle(ordered)
    ordered.sort(key=lambda r: (r["k"] is not None, r["k"] or 0.0, r["t"] is None, r["t"] or 0))
    columns = {
        "k": pa.array([r["k"] for r in ordered], pa.float64()),
        "g": pa.array([r["g"] for r in ordered], pa.string()),
        "_t": pa.array([r["t"] for r in ordered], pa.float64() if floating else pa.int64()),
        "_in": pa.array([r["in"] for r in ordered], pa.bool_()),
    }
    if mode == "row_num":
        columns["_names"] = pa.array([r["arrival"] % step == 0 for r in ordered])
    doubles = {"_sv": "v", "_sx": "x", "_lo": "v", "_hi": "v", "_mean": "v"}
    columns.update({name: pa.array([r[c] for r in ordered], pa.float64()) for name, c in doubles.items()})
    columns.update({name: pa.array([r["q"] for r in ordered], pa.int64()) for name in ("_sq", "_lq", "_hq")})
    columns["_n"] = pa.array([int(r["v"] is not None) for r in ordered], pa.int64())
    columns["_m2"] = pa.array([None if r["v"] is None else 0.0 for r in ordered], pa.float64())
    return pa.table(columns)


def window_ids(part: list[dict[str, Any]], mode: str, size: float, step: int) -> list[float]:
    """Which values name a window of one partition, straight from the definitions (tuples_windows')."""
    present = [r for r in part if r["t"] is not None]
    if mode == "every":
        return sorted({r["t"] for r in present})
    if mode == "row_num":
        return sorted({r["t"] for r in present if r["arrival"] % step == 0})
    if mode == "rank":
        return sorted(set(sorted(r["t"] for r in present)[::step]))
    times = sorted({r["t"] for r in present})  # kafka, tick 1
    starts = {0 if 0 <= t < size else t - size for t in times}
    return sorted(starts | {t + 1 for t, after in itertools.pairwise(times) if after <= t + 1 + size})


def brute_force(rows: list[dict[str, Any]], mode: str, size: float, step: int, grouped: bool) -> list[dict[str, Any]]:
    """Every window and group with a tuple inside WHERE, its states summed tuple by tuple."""
    out = []
    keys = {None if r["k"] is None else r["k"] + 0.0 for r in rows}
    for key in keys:
        part = [r for r in rows if (r["k"] is None and key is None) or (r["k"] is not None and r["k"] == key)]
        members = sorted((r for r in part if r["t"] is not None and r["in"]), key=lambda r: r["t"])
        for group in {r["g"] for r in members} if grouped else {None}:
            mine = [r for r in members if not grouped or r["g"] == group]
            times = [r["t"] for r in mine]
            for w in window_ids(part, mode, size, step):
                if mode == "kafka":  # [w, w + size]
                    inside = mine[bisect.bisect_left(times, w) : bisect.bisect_right(times, w + size)]
                else:  # (w - size, w]
                    inside = mine[bisect.bisect_right(times, w - size) : bisect.bisect_right(times, w)]
                if not inside:
                    continue
                vs = [r["v"] for r in inside if r["v"] is not None]
                qs = [r["q"] for r in inside if r["q"] is not None]
                mean = sum(vs) / len(vs) if vs else None
                row = {"k": key, "wid": w, "_c": len(inside), "_sv": sum(vs, 0.0), "_sq": sum(qs, 0)}
                row["_sx"] = sum((r["x"] for r in inside if r["x"] is not None), 0.0)
                row.update(_lo=min(vs) if vs else math.nan, _hi=max(vs) if vs else -math.inf)
                row.update(_lq=min(qs) if qs else LONG_MAX, _hq=max(qs) if qs else LONG_MIN)
                row.update(_n=len(vs), _mean=mean, _m2=sum((v - mean) ** 2 for v in vs) if vs else None)
                if grouped:
                    row["g"] = group
                out.append(row)
    return out


def in_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["k"] is not None, (r["k"] or 0.0) + 0.0, str(r.get("g")), r["wid"]))


def agrees(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Equal states: integers exactly, doubles up to rounding (NaN equals NaN); an empty moment's mean and
    M2 are anything (the aggregates read NULL there)."""
    if got.keys() != want.keys():
        return False
    for name, expected in want.items():
        value = got[name]
        if name in ("_mean", "_m2") and want["_n"] == 0:
            continue
        if name == "k":
            if (value is None) != (expected is None) or (value is not None and value != expected):
                return False
        elif isinstance(expected, float):
            if not (math.isnan(expected) and math.isnan(value)) and not math.isclose(value, expected, abs_tol=1e-9):
                return False
        elif value != expected:
            return False
    return True


MODES = [("every", 1), ("row_num", 3), ("rank", 2), ("kafka", 1)]
# Kafka's windows take a TIMESTAMP or integer attribute, never a DOUBLE.
ATTRIBUTES = [
    (mode, step, floating) for mode, step in MODES for floating in (False, True) if mode != "kafka" or not floating
]


@pytest.mark.parametrize("grouped", [False, True], ids=["", "groups"])
@pytest.mark.parametrize(
    ("mode", "step", "floating"),
    ATTRIBUTES,
    ids=[f"{mode}-{'double' if floating else 'bigint'}" for mode, _, floating in ATTRIBUTES],
)
def test_windows_by_chunks_equal_each_windows_tuples(mode: str, step: int, floating: bool, grouped: bool) -> None:
    """tuple_windows over a sorted partition in batches of 1 to 4 tuples, and in one batch, gives every
    window and group with a tuple inside WHERE exactly once, with the states of the tuples in its extent:
    counts, sums (of DOUBLE with NaN and infinities, and of BIGINT), extremes of both, and moments."""
    size = 2.5 if floating else 4
    kernel = tuple_windows(["k"], ["g"] if grouped else [], STATES, size, step, mode, 1)
    for seed in seeds(10, 3):
        rows = tuples(seed, floating)
        table = sorted_input(rows, mode, step, floating)
        want = in_order(brute_force(rows, mode, size, step, grouped))
        assert want or table.num_rows < 20
        for batch in (1, 2, 3, 4, max(table.num_rows, 1)):
            got = in_order([r for out in kernel(iter(table.to_batches(max_chunksize=batch))) for r in out.to_pylist()])
            assert len(got) == len(want), (seed, batch)
            for mine, theirs in zip(got, want, strict=True):
                assert agrees(mine, theirs), (seed, batch, mine, theirs)


@pytest.mark.parametrize(("mode", "step"), MODES, ids=[m for m, _ in MODES])
def test_a_hot_key_is_walked_as_it_arrives(mode: str, step: int) -> None:
    """One key of 40,000 tuples in 400 batches, each window a few values wide: the kernel answers each batch
    before it is far into the next, which it could not if it held the key's tuples (they would all
    come first) or a carry that grew with them (its chunks, at least as long as the carry, would grow
    too), and its windows are the brute force's."""
    chance = random.Random(5)
    rows = [
        {"k": 1.0, "g": None, "t": i // 3, "arrival": i, "in": chance.random() < 0.9, "v": 0.5, "q": 1, "x": 1.0}
        for i in range(40_000)
    ]
    chance.shuffle(rows)
    table = sorted_input(rows, mode, step, False)
    pulled = 0

    def batches() -> Iterator[pa.RecordBatch]:
        nonlocal pulled
        for batch in table.to_batches(max_chunksize=100):
            pulled += 1
            yield batch

    got, arrivals = [], []
    for out in tuple_windows(["k"], [], STATES, 5, step, mode, 1)(batches()):
        arrivals.append(pulled)
        got.extend(out.to_pylist())
    assert len(arrivals) >= 390 and all(seen <= index + 2 for index, seen in enumerate(arrivals)), arrivals[:20]
    want = in_order(brute_force(rows, mode, 5, step, False))
    assert len(got) == len(want) and all(agrees(a, b) for a, b in zip(in_order(got), want, strict=True))
