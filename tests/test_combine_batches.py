"""The numpy combine of panes and slices, chunk by chunk (semantics.md §7.8).

Spark sorts each partition's cells by (keys, cell) and the numpy combine walks the sorted Arrow batches
a chunk at a time, carrying only the cells its later windows hold: a sliding window's last RANGE of
cells, a CUMULATE period's cells so far, a landmark key's running total as one cell; a landmark key's
windows after its last cell (its tail) come in slices. With batches of one to a few cells almost every
window straddles chunks, so a carry that loses, repeats or misreads a cell shows. These compare the
combine over such batches with a naive model of the windows (every cell of each window combined
directly), and the numpy job end to end with the reference evaluator.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pyarrow as pa
import pytest

import wql
from tests.differential import normalized
from tests.test_frame_batches import COLUMNS, STREAM, run_in_numpy, shuffled_rows
from tests.test_frame_batches import SCHEMA as ROWS
from wql.compiler.kernels.sliding_combine import sliding_combine
from wql.runtime.reference import evaluate_query

STATES = [("sum", ["n"]), ("sum", ["s"]), ("min", ["lo"]), ("max", ["hi"]), ("moments", ["mn", "mm", "m2"])]
SCHEMA = pa.schema(
    [("k", pa.int64()), ("k2", pa.string()), ("_cell", pa.int64()), ("_last", pa.int64())]
    + [(name, pa.int64() if name in ("n", "hi", "mn") else pa.float64()) for _, names in STATES for name in names]
)


def random_cells(seed: int) -> list[dict[str, Any]]:
    """Cells of keys (1, 'a'), (1, 'b'), (NULL, 'a'), (2, NULL): runs, gaps wider than a window, negative
    cells, NULL and NaN states; sorted by keys then cell, NULLs first, as Spark's sort hands them over."""
    chance = random.Random(seed)
    rows = []
    for k, k2 in [(None, "a"), (1, "a"), (1, "b"), (2, None)]:
        cell = chance.randrange(-6, 4)
        for _ in range(chance.randrange(1, 25)):
            cell += chance.choice([1, 1, 2, 3, 9, 20])
            count = chance.randrange(1, 4)
            value = chance.choice([None, math.nan, -2.5, 0.25, 3.0, 7.5])
            mean = chance.choice([-1.0, 0.5, 2.0])
            rows.append(
                {"k": k, "k2": k2, "_cell": cell, "_last": 0, "n": count, "s": value, "lo": value}
                | {"hi": chance.randrange(-9, 9), "mn": count, "mm": mean, "m2": chance.choice([0.0, 1.5])}
            )
    final = max(r["_cell"] for r in rows) + 7
    for r in rows:
        r["_last"] = final
    return sorted(rows, key=lambda r: (r["k"] is not None, r["k"] or 0, r["k2"] is not None, r["k2"] or "", r["_cell"]))


def combined(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The cells' states combined one after another, NULLs ignored, NaN above every number (as Spark)."""
    out: dict[str, Any] = {"n": 0, "s": 0.0, "lo": math.nan, "hi": -(2**63), "mn": 0, "mm": 0.0, "m2": 0.0}
    for c in cells:
        out["n"] += c["n"]
        if c["s"] is not None:
            out["s"] += c["s"]
        if c["lo"] is not None and not math.isnan(c["lo"]):
            out["lo"] = c["lo"] if math.isnan(out["lo"]) else min(out["lo"], c["lo"])
        out["hi"] = max(out["hi"], c["hi"])
        n = out["mn"] + c["mn"]
        delta = c["mm"] - out["mm"]
        out["m2"] += c["m2"] + delta * delta * out["mn"] * c["mn"] / n
        out["mm"] += delta * c["mn"] / n
        out["mn"] = n
    if all(c["lo"] is not None and math.isnan(c["lo"]) for c in cells if c["lo"] is not None) and any(
        c["lo"] is not None for c in cells
    ):
        out["lo"] = math.nan
    return out


def model(rows: list[dict[str, Any]], size: int, step: int, kind: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Every window of every key with its cells combined directly: sliding (window w: the `size` cells
    ending at (w + 1) * step - 1), landmark (every cell up to w, from the key's first cell or window 0 to
    the stream's last window) or cumulate (the cells of w's period of `size` up to w)."""
    keys: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for r in rows:
        keys.setdefault((r["k"], r["k2"]), []).append(r)
    out = {}
    for key, cells in keys.items():
        lo, hi = cells[0]["_cell"], cells[-1]["_cell"]
        if kind == "landmark":
            wids = range(max(lo, 0), cells[0]["_last"] + 1)
            held = {w: [c for c in cells if c["_cell"] <= w] for w in wids}
        elif kind == "cumulate":
            wids = range(lo, size * (hi // size + 1))
            held = {w: [c for c in cells if c["_cell"] // size == w // size and c["_cell"] <= w] for w in wids}
        else:
            wids = range(math.ceil((lo + 1) / step) - 1, (hi + size) // step)
            held = {w: [c for c in cells if (w + 1) * step - size <= c["_cell"] <= (w + 1) * step - 1] for w in wids}
        for w, inside in held.items():
            if inside:
                out[(*key, w)] = combined(inside)
    return out


def walked(
    rows: list[dict[str, Any]], batch: int | None, size: int, step: int, kind: str
) -> dict[tuple[Any, ...], Any]:
    """sliding_combine's windows over the rows cut into Arrow batches of `batch` (None: one batch)."""
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    batches = table.to_batches(max_chunksize=batch or len(rows))
    run = sliding_combine(
        ["k", "k2"],
        "_cell",
        STATES,
        size,
        step,
        last="_last" if kind == "landmark" else None,
        cumulate=kind == "cumulate",
    )
    out: dict[tuple[Any, ...], Any] = {}
    for result in run(iter(batches)):
        for r in result.to_pylist():
            key = (r["k"], r["k2"], r["_cell"])
            assert key not in out, f"window {key} emitted twice"
            out[key] = r
    return out


def same(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    for name, value in expected.items():
        got = actual[name]
        if isinstance(value, float) and math.isnan(value):
            if not (isinstance(got, float) and math.isnan(got)):
                return False
        elif not math.isclose(value, got, rel_tol=1e-9, abs_tol=1e-9):
            return False
    return True


SHAPES = [
    (4, 1, "sliding"),
    (6, 2, "sliding"),
    (1, 1, "sliding"),
    (3, 3, "sliding"),
    (1, 1, "landmark"),
    (5, 1, "cumulate"),
]


@pytest.mark.parametrize("size, step, kind", SHAPES)
@pytest.mark.parametrize("batch", [1, 2, 3, 5, None])
@pytest.mark.parametrize("seed", range(6))
def test_combine_over_batches_equals_the_model(size: int, step: int, kind: str, batch: int | None, seed: int) -> None:
    rows = random_cells(seed)
    expected = model(rows, size, step, kind)
    actual = walked(rows, batch, size, step, kind)
    assert set(actual) == set(expected)
    wrong = [w for w, states in expected.items() if not same(states, actual[w])]
    assert not wrong, f"{len(wrong)} windows differ, first {wrong[0]}: {expected[wrong[0]]} != {actual[wrong[0]]}"


def test_a_landmark_tail_comes_in_slices() -> None:
    """A key whose last cell is far before the stream's last window: its tail is every window up to it,
    in record batches of at most 65,536 windows."""
    rows = [r | {"_last": 200_000} for r in random_cells(3)]
    run = sliding_combine(["k", "k2"], "_cell", STATES, 1, 1, last="_last")
    sizes = [b.num_rows for b in run(iter(pa.Table.from_pylist(rows, schema=SCHEMA).to_batches(max_chunksize=2)))]
    assert sum(sizes) == sum(
        200_001 - max(min(r["_cell"] for r in rows if (r["k"], r["k2"]) == key), 0)
        for key in {(r["k"], r["k2"]) for r in rows}
    )
    assert max(sizes) <= 65_536


QUERIES = [
    "SELECT k, count(*) AS n, sum(v) AS sv, min(v) AS lo, max(q) AS hq, stddev(v) AS sd FROM s "
    "[RANGE 6 SECONDS SLIDE 2 SECONDS WATTR ts] GROUP BY k",
    "SELECT k, count(*) AS n, sum(v) AS sv, max(q) AS hq FROM s [RANGE UNBOUNDED SLIDE 2 SECONDS WATTR ts] GROUP BY k",
    "SELECT k, count(*) AS n, sum(v) AS sv, min(q) AS lq FROM s "
    "[RANGE 6 SECONDS SLIDE 1 SECOND CUMULATE WATTR ts] GROUP BY k",
]


@pytest.mark.spark
@pytest.mark.parametrize("query", QUERIES, ids=["sliding", "landmark", "cumulate"])
def test_numpy_jobs_over_batches_of_three_equal_the_reference(spark: Any, query: str) -> None:
    """The pane plan's cells reach the numpy combine sorted by Spark in batches of 3 cells."""
    rows = shuffled_rows(11, 120)
    frame = spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows], ROWS).repartition(3)
    compiled = wql.compile(STREAM + query, plan="pane")
    windows, executed = run_in_numpy(spark, compiled, frame, 3)
    assert "MapInArrow" in executed and "Sort [" in executed, executed
    assert normalized(windows) == normalized(evaluate_query(compiled.query, rows)) and len(windows) > 10
