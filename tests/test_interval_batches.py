"""The numpy kernels of the SE-slices, difference and sweep plans, batch by batch (semantics.md §7.8).

Without the JVM kernels, Spark sorts each partition by the keys and each event's first slice or
window, and the numpy passes walk its Arrow batches a chunk at a time: once an event starts at f, no
later event reaches a window ending before f, so those go out, and the last key's slices (SE-slices)
or running states and later deltas (difference; the sweep also the events that can still be a window's
min or max) still in flight go on into the next chunk. With
batches of 1 to 4 events almost every window straddles batches, so a carry that loses or misreads
anything shows: these compare the plans, over sliding, tumbling and sampling windows (and SE-slices'
Pairs and SNAP), keys with NULL and none, with the reference evaluator on Spark, and the passes
themselves over batches of 1 to 4 rows with one batch of the whole partition. An open-ended event
lasts to the data's end; the carry holds the windows in flight, not the events seen, which the last
tests check on a hot key.
"""

from __future__ import annotations

import math
import random
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import wql
from tests.conftest import DEEP, seeds
from tests.differential import combined_in, physical_plan
from tests.intervals import STREAM, frame, row
from tests.test_frame_batches import arrow_batches
from wql.compiler.kernels import interval_windows
from wql.compiler.kernels.interval_windows import event_differences, event_slices
from wql.runtime.reference import evaluate_query

WHOLE = 100_000  # one batch holds a whole partition
CUMULATIVE = (
    "count(*) AS c, count(v) AS nv, sum(v) AS sv, avg(v) AS av, stddev(v) AS sd, var_pop(v) AS vp, sum(n) AS sn"
)
SELECTIVE = "min(v) AS lo, max(v) AS hi, max(n) AS top"


def same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    """The same rows, floating values up to rounding: a sum or moment carried from one chunk to the next is
    merged from its parts, which may round differently in the last bits (semantics.md §7.8)."""

    def exact(r: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(
            (c, repr(float(v) if isinstance(v, Decimal) else v))
            for c, v in sorted(r.items())
            if not isinstance(v, float)
        )

    if len(got) != len(want):
        return False
    for g, w in zip(sorted(got, key=exact), sorted(want, key=exact), strict=True):
        if exact(g) != exact(w) or not all(same_values(g[c], w[c]) for c in w):
            return False
    return True


def hot_rows(seed: int, specials: bool) -> list[dict[str, Any]]:
    """One hot key ("a", 150 events), two cooler ones and NULL, on every attribute type: points, short
    events, events longer than many windows, open-ended, malformed and NULL-start ones; NULL values, and
    with `specials` NaN and infinities among them."""
    chance = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for key, count in (("a", 150), ("b", 40), (None, 40), ("c", 12)):
        for _ in range(count):
            start = None if chance.random() < 0.03 else chance.randrange(-10, 60)
            length = chance.choice([0, 0, 1, 2, 3, 5, 8, chance.randrange(9, 70), None, -2])
            end = None if start is None or length is None else start + length
            value = None if chance.random() < 0.1 else chance.randrange(-20, 20) / 4
            if specials and chance.random() < 0.03:
                value = chance.choice([math.nan, math.inf, -math.inf])
            n = None if chance.random() < 0.1 else chance.randrange(-3, 9)
            rows.append(row(0, len(rows), key, value, n, start, end, chance.choice([0, 0.25])))
    chance.shuffle(rows)
    return rows


# (plan, window spec, aggregates): every window shape each numpy kernel serves. SE-slices: one slice per
# slide, Pairs (SLIDE does not divide RANGE), tumbling, SLIDE > RANGE, SNAP; difference: the same grids on
# each attribute type (landmark, snapshot and SNAP windows run the cell kernel's combine instead).
CASES = [
    ("se-slices", "RANGE 10 SLIDE 2 WATTR (s, e)", f"{CUMULATIVE}, {SELECTIVE}"),
    ("se-slices", "RANGE 10 SLIDE 3 WATTR (s, e) ALIGN 1", f"{CUMULATIVE}, {SELECTIVE}"),
    ("se-slices", "RANGE 5 WATTR (s, e)", f"{CUMULATIVE}, {SELECTIVE}"),
    ("se-slices", "RANGE 3 SLIDE 7 WATTR (s, e)", f"{CUMULATIVE}, {SELECTIVE}"),
    ("se-slices", "RANGE 4 SECONDS SLIDE 1 SECOND WATTR (ts, te)", SELECTIVE),
    ("se-slices", "RANGE 10 SLIDE 5 WATTR (s, e) SNAP", f"{CUMULATIVE}, {SELECTIVE}"),
    ("difference", "RANGE 10 SLIDE 2 WATTR (s, e)", CUMULATIVE),
    ("difference", "RANGE 5 WATTR (s, e)", CUMULATIVE),
    ("difference", "RANGE 3 SLIDE 7 WATTR (s, e) ALIGN -2", CUMULATIVE),
    ("difference", "RANGE 2.5 SLIDE 0.75 WATTR (ds, de)", CUMULATIVE),
    ("difference", "RANGE 6.25 SLIDE 1.25 WATTR (ms, me)", CUMULATIVE),
    ("difference", "RANGE 12 SECONDS SLIDE 4 SECONDS WATTR (ts, te)", CUMULATIVE),
    ("sweep", "RANGE 10 SLIDE 2 WATTR (s, e)", f"{CUMULATIVE}, {SELECTIVE}"),
    ("sweep", "RANGE 3 SLIDE 7 WATTR (s, e) ALIGN -2", SELECTIVE),
    ("sweep", "RANGE 2.5 SLIDE 0.75 WATTR (ds, de)", f"{CUMULATIVE}, {SELECTIVE}"),
    ("sweep", "RANGE 4 SECONDS SLIDE 1 SECOND WATTR (ts, te)", SELECTIVE),
    ("sweep", "RANGE 10 SLIDE 5 WATTR (s, e) SNAP", f"{CUMULATIVE}, {SELECTIVE}"),
]
# Keys: a partition of its own per key (NULL one of them), GROUP BY, two key columns, and none (one task).
KEYS = [("PATTR k", ""), ("", "GROUP BY k"), ("PATTR case_id", "GROUP BY k"), ("", "")]


@pytest.mark.spark
@pytest.mark.parametrize(
    ("case", "keys"),
    [(case, KEYS[i % len(KEYS)]) for i, case in enumerate(CASES)]
    + [(CASES[0], KEYS[3]), (CASES[6], KEYS[0]), (CASES[7], KEYS[2])],
    ids=lambda value: " ".join(value[:2]) if len(value) == 3 else ",".join(v for v in value if v) or "no keys",
)
def test_windows_across_small_batches_equal_the_reference(spark: Any, case: tuple[str, str, str], keys: Any) -> None:
    """Numpy forced, events shuffled over 3 partitions, reach the kernel sorted by Spark in batches of 1 to 4
    and in one batch: the windows equal the reference's every time, and some hold more events than a batch."""
    plan, window, aggregates = case
    partition, group = keys
    rows = hot_rows(15, specials=True)
    events = frame(spark, rows).repartition(3)
    window = window.replace(" WATTR", f" {partition} WATTR") if partition else window
    selected = "k, " if group else ""
    where = "WHERE n IS NULL OR n <> 3"
    compiled = wql.compile(f"{STREAM}SELECT {selected}{aggregates} FROM s [{window}] {where} {group}", plan=plan)
    want = evaluate_query(compiled.query, rows)
    assert len(want) > 10
    for size in (1, 2, 3, 4, WHOLE) if DEEP else (1, 3, WHOLE):
        with arrow_batches(spark, size), combined_in(spark, "arrow"):
            result = compiled.run(spark, s=events)
            got = [r.asDict() for r in result.collect()]
            executed = physical_plan(result)
        assert "MapInArrow" in executed and "Sort [" in executed, executed
        assert same_rows(got, want), (size, len(got), len(want))
        if "c" in got[0] and size < WHOLE:
            assert max(r["c"] for r in got) > size  # windows straddle batches


@pytest.mark.spark
def test_an_open_ended_event_on_a_hot_key_across_batches_of_one(spark: Any) -> None:
    """One key: an event open from 0 and a long stream of short events after it, in batches of one. Every
    window up to the data's end holds the open event, including those past the last short event (after
    its key's last run), and the windows equal the reference's on both plans."""
    rows = [row(0, 0, "a", 1.0, 1, 0, None, 0)]
    rows += [row(0, i, "a", float(i % 5), i % 3, 2 * i, 2 * i + i % 4, 0) for i in range(1, 60)]
    rows.append(row(0, 60, "a", 2.0, 1, 300, 300, 0))  # the data's end, far past the short events
    text = "SELECT count(*) AS c, sum(v) AS sv, stddev(v) AS sd, {} FROM s [RANGE 6 SLIDE 2 WATTR (s, e) PATTR k]"
    plans = [("se-slices", "min(v) AS lo, max(n) AS top"), ("difference", "avg(v) AS av")]
    for plan, extra in [*plans, ("sweep", "avg(v) AS av, min(v) AS lo, max(n) AS top")]:
        compiled = wql.compile(STREAM + text.format(extra), plan=plan)
        with arrow_batches(spark, 1), combined_in(spark, "arrow"):
            got = [r.asDict() for r in compiled.run(spark, s=frame(spark, rows)).collect()]
        assert same_rows(got, evaluate_query(compiled.query, rows)), plan
        assert sorted(r["wid"] for r in got) == list(range(153)), plan  # no gap: the open event is in every window


# ------------------------------------------------------------------ the passes themselves, without Spark

SLICE_STATES = [
    ("sum", ["_rows"]),
    ("sum", ["_sv"]),
    ("min", ["_lo"]),
    ("max", ["_hq"]),
    ("moments", ["_n", "_mean", "_m2"]),
]
DIFFERENCE_STATES = [
    ("sum", ["_rows"]),
    ("sum", ["_sv"]),
    ("moments", ["_ns", "_ms", "_qs"]),
    ("moments", ["_ne", "_me", "_qe"]),
    ("sum", ["_hq"]),
]
PLACEMENTS = ["signed", "signed", "start", "end", "signed"]
SWEEP_STATES = [*DIFFERENCE_STATES, ("min", ["_lo"]), ("max", ["_top"])]
SWEEP_PLACEMENTS = [*PLACEMENTS, "extreme", "extreme"]
SHAPES = [(4, 1), (6, 2), (3, 3), (2, 5), (1, 1), (7, 3)]  # (size, step): slices per window and per slide


def sorted_events(seed: int, step: int, keys: tuple[int | None, ...] = (None, 0, 1, 2)) -> pa.Table:
    """A partition as events_in_order hands it over: each key's events together, by first slice (SE-slices)
    or window (difference; a slice per window there). Open-ended events last to the data's last slice; for
    the difference plan their last window is NULL, and some events lie in a gap (last < first)."""
    chance = random.Random(seed)
    span = chance.choice([30, 200])
    drawn = []
    for key in keys:
        for _ in range(chance.randrange(0, 40)):
            first = chance.randrange(-10, span)
            kind = chance.random()
            length = chance.randrange(0, 6)
            if kind < 0.35:
                length = None if kind < 0.1 else -1 if kind < 0.15 else chance.randrange(40, 160)
            value = None if chance.random() < 0.1 else chance.choice([-1.5, 2.25, 0.5, 1.0, -3.0, 0.1])
            counted = chance.random() < 0.85  # else outside WHERE: a row without shares
            end = None if length is None else first + length
            drawn.append((key, first, end, value, chance.randrange(-3, 4), counted))
    ends = [e[2] for e in drawn if e[2] is not None]
    horizon = (max([e[1] for e in drawn] + ends) + chance.randrange(0, 3) + 1) // step
    drawn.sort(key=lambda e: (e[0] is not None, e[0] or 0, e[1]))
    top = (horizon + 1) * step - 1  # the data's last slice
    columns: dict[str, list[Any]] = {name: [] for name in ("k", "_first", "_last", "_lastw", "_h")}
    for name in ("_rows", "_sv", "_lo", "_hq", "_top", "_n", "_mean", "_m2", "_ns", "_ms", "_qs", "_ne", "_me", "_qe"):
        columns[name] = []
    for key, first, end, value, q, counted in drawn:
        present = counted and value is not None
        columns["k"].append(key)
        columns["_first"].append(first)
        columns["_last"].append(top if end is None else min(max(end, first), top))
        columns["_lastw"].append(end)
        columns["_h"].append(horizon)
        columns["_rows"].append(1 if counted else None)
        for name in ("_sv", "_lo", "_mean", "_ms", "_me"):
            columns[name].append(value if counted else None)
        columns["_hq"].append(q if counted else None)
        columns["_top"].append(q if counted else None)
        for name in ("_n", "_ns", "_ne"):
            columns[name].append(1 if present else 0 if counted else None)
        for name in ("_m2", "_qs", "_qe"):
            columns[name].append(0.0 if present else None)
    types = {"k": pa.int32(), "_sv": pa.float64(), "_lo": pa.float64(), "_mean": pa.float64(), "_m2": pa.float64()}
    types.update({name: pa.float64() for name in ("_ms", "_qs", "_me", "_qe")})
    return pa.table({name: pa.array(values, types.get(name, pa.int64())) for name, values in columns.items()})


def windows_of(function: Any, batches: list[pa.RecordBatch], states: list[Any], keyed: bool = True) -> list[Any]:
    """The pass's rows by key and window: key (None without keys), window-id and states (the other columns
    are any event's of the window), past the data's last window left out (the job filters them)."""
    kept = ["_first", *(name for _, names in states for name in names)]
    rows = []
    for batch in function(iter(batches)):
        for r in batch.to_pylist():
            if r["_first"] <= r["_h"]:
                rows.append({"k": r["k"] if keyed else None, **{c: r[c] for c in kept}})
    return sorted(rows, key=lambda r: (r["k"] is not None, r["k"] or 0, r["_first"]))


def same_values(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def assert_same_windows(got: list[dict[str, Any]], want: list[dict[str, Any]], where: Any) -> None:
    assert [(r["k"], r["_first"]) for r in got] == [(r["k"], r["_first"]) for r in want], where
    for g, w in zip(got, want, strict=True):
        assert all(same_values(g[c], w[c]) for c in w), (where, g, w)


def slices_pass(keys: list[str], size: int, step: int) -> Any:
    return event_slices(keys, "_first", "_last", "_h", SLICE_STATES, size, step)


def differences_pass(keys: list[str]) -> Any:
    return event_differences(keys, "_first", "_lastw", "_h", DIFFERENCE_STATES, PLACEMENTS)


@pytest.mark.parametrize(("size", "step"), SHAPES)
def test_slices_by_batches_equal_one_batch(size: int, step: int) -> None:
    """event_slices over batches of 1 to 4 events gives, window for window, what it gives over the partition
    as one batch (sums and moments merged across chunks up to rounding); and with no keys too."""
    for seed in seeds(25, 6):
        table = sorted_events(seed, step)
        for keys, events in ((["k"], table), ([], table.sort_by("_first"))):
            want = windows_of(
                slices_pass(keys, size, step), events.to_batches(max_chunksize=WHOLE), SLICE_STATES, bool(keys)
            )
            assert want or events.num_rows == 0
            for batch in (1, 2, 3, 4):
                got = windows_of(
                    slices_pass(keys, size, step), events.to_batches(max_chunksize=batch), SLICE_STATES, bool(keys)
                )
                assert_same_windows(got, want, (seed, keys, batch))


def test_differences_by_batches_equal_one_batch() -> None:
    """event_differences over batches of 1 to 4 events gives what it gives over the partition as one batch:
    the same windows, integer states exactly, sums and moments up to rounding; and with no keys too."""
    for seed in seeds(60, 12):
        table = sorted_events(seed, 1)
        for keys, events in ((["k"], table), ([], table.sort_by("_first"))):
            want = windows_of(
                differences_pass(keys), events.to_batches(max_chunksize=WHOLE), DIFFERENCE_STATES, bool(keys)
            )
            for batch in (1, 2, 3, 4):
                got = windows_of(
                    differences_pass(keys), events.to_batches(max_chunksize=batch), DIFFERENCE_STATES, bool(keys)
                )
                assert_same_windows(got, want, (seed, keys, batch))


def sweeps_pass(keys: list[str]) -> Any:
    return event_differences(keys, "_first", "_lastw", "_h", SWEEP_STATES, SWEEP_PLACEMENTS)


def brute_extremes(table: pa.Table, key: Any, window: int) -> tuple[float, int]:
    """min(_lo) and max(_top) over the events of `key` that overlap `window` (NULL shares none): the
    identities NaN and the least BIGINT where none has a value."""
    lows, tops = [], []
    for r in table.to_pylist():
        end = r["_h"] if r["_lastw"] is None else r["_lastw"]
        if r["k"] == key and r["_first"] <= window <= end and r["_rows"] is not None:
            lows += [] if r["_lo"] is None else [r["_lo"]]
            tops += [] if r["_top"] is None else [r["_top"]]
    return (min(lows) if lows else math.nan), (max(tops) if tops else np.iinfo(np.int64).min)


def test_sweeps_by_batches_equal_one_batch() -> None:
    """event_differences with extremes (the sweep plan's numpy pass) over batches of 1 to 4 events gives what
    it gives over the partition as one batch, whose min and max are those of the events overlapping each
    window, found by brute force; and with no keys too. A chunk hands the next the events overlapping its
    last event's first window that can still be a window's extreme."""
    for seed in seeds(60, dev=8):
        table = sorted_events(seed, 1)
        for keys, events in ((["k"], table), ([], table.sort_by("_first"))):
            want = windows_of(sweeps_pass(keys), events.to_batches(max_chunksize=WHOLE), SWEEP_STATES, bool(keys))
            for w in want:
                key = w["k"] if keys else None
                lows = [brute_extremes(table, k, w["_first"]) for k in ((key,) if keys else (None, 0, 1, 2))]
                low = min((x for x, _ in lows if not math.isnan(x)), default=math.nan)
                assert same_values(w["_lo"], low) and w["_top"] == max(t for _, t in lows), (seed, keys, w)
            for batch in (1, 2, 3, 4):
                got = windows_of(sweeps_pass(keys), events.to_batches(max_chunksize=batch), SWEEP_STATES, bool(keys))
                assert_same_windows(got, want, (seed, keys, batch))


def test_a_double_key_of_zero_and_minus_zero_is_one_key() -> None:
    """Spark sorts 0.0 and −0.0 as one key, so they arrive interleaved: both passes take them as one key
    (else each would cut the other's windows), as one batch and one event at a time."""
    table = pa.table(
        {
            "k": pa.array([-0.0 if i % 2 else 0.0 for i in range(12)]),
            "_first": pa.array(range(12), pa.int64()),
            "_last": pa.array([i + 3 for i in range(12)], pa.int64()),
            "_lastw": pa.array([i + 3 for i in range(12)], pa.int64()),
            "_h": pa.array([20] * 12, pa.int64()),
            "_rows": pa.array([1] * 12, pa.int64()),
        }
    )
    slices = event_slices(["k"], "_first", "_last", "_h", [("sum", ["_rows"])], 4, 1)
    differences = event_differences(["k"], "_first", "_lastw", "_h", [("sum", ["_rows"])], ["signed"])
    # Windows of 4 slices: up to 7 events of 4 slices overlap one; windows-ids: an event is in 4 of them.
    for function, windows, most in ((slices, 18, 7), (differences, 15, 4)):
        for batch in (1, WHOLE):
            got = windows_of(function, table.to_batches(max_chunksize=batch), [("sum", ["_rows"])])
            assert [r["_first"] for r in got] == list(range(windows)), (function, batch)
            assert max(r["_rows"] for r in got) == most


def carried_sizes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(events in the chunk, what the pass carried into it) for each chunk the passes walk."""
    seen: list[tuple[int, int]] = []
    walk = interval_windows.batch_chunks

    def recording(batches: Any, held: Any) -> Any:
        for table, last in walk(batches, held):
            seen.append((0 if table is None else table.num_rows, held()))
            yield table, last

    monkeypatch.setattr(interval_windows, "batch_chunks", recording)
    return seen


def test_the_carry_holds_the_windows_in_flight_not_the_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hot key of 20,000 events, each up to 50 slices long, one in 50 open-ended, in batches of 100: what
    goes from chunk to chunk never exceeds the slices (window-ids) a short event still reaches, however many
    events are alive, and open-ended events stay out of it; every chunk holds at least as many events as
    the carry (the walk stays linear); and the windows equal those of one batch."""
    seen = carried_sizes(monkeypatch)
    count, longest = 20_000, 50
    rng = np.random.default_rng(3)
    first = np.sort(rng.integers(0, count // 4, count))
    end = first + rng.integers(0, longest, count)
    lasting = rng.random(count) < 0.02
    horizon = int(end.max()) + 20  # its window holds the open-ended events alone
    values = rng.normal(size=count)
    table = pa.table(
        {
            "k": pa.array(np.zeros(count, dtype=np.int32)),
            "_first": first,
            "_last": np.where(lasting, horizon, end),
            "_lastw": pa.array(end, mask=lasting),
            "_h": np.full(count, horizon),
            "_rows": np.ones(count, dtype=np.int64),
            "_sv": values,
            "_n": np.ones(count, dtype=np.int64),
            "_mean": values,
            "_m2": np.zeros(count),
        }
    )
    states = [("sum", ["_rows"]), ("sum", ["_sv"]), ("moments", ["_n", "_mean", "_m2"])]
    slices = event_slices(["k"], "_first", "_last", "_h", states, 10, 1)
    differences = event_differences(["k"], "_first", "_lastw", "_h", states, ["signed", "signed", "start"])
    for function in (slices, differences):
        seen.clear()
        got = windows_of(function, table.to_batches(max_chunksize=100), states)
        carried = [held for _, held in seen]
        assert len(seen) > count // 200 and max(carried) <= longest + 10, max(carried)
        assert all(events >= held for events, held in seen[:-1])
        want = windows_of(function, table.to_batches(max_chunksize=count), states)
        assert_same_windows(got, want, function)
        assert got[-1]["_first"] == horizon and got[-1]["_rows"] == int(lasting.sum())


@pytest.mark.parametrize("values", ["random", "dominating"])
def test_the_sweeps_carry_holds_the_possible_extremes_not_the_events(
    monkeypatch: pytest.MonkeyPatch, values: str
) -> None:
    """The sweep's pass over a hot key of 20,000 events, each up to 50 windows long, one in 50 open-ended, in
    batches of 100, with min and max: what goes from chunk to chunk is the window-ids in flight and, per
    extreme, the events overlapping the frontier that no better one outlasts. With random values that is a
    few; when an event that ends later is always a worse one ("dominating"), every event alive is a possible
    min and max, and the carry holds them, no more. The windows equal those of one batch."""
    seen = carried_sizes(monkeypatch)
    count, longest = 20_000, 50
    rng = np.random.default_rng(5)
    first = np.sort(rng.integers(0, count // 4, count))
    length = rng.integers(0, longest, count)
    end = first + length
    lasting = rng.random(count) < 0.02
    horizon = int(end.max()) + 20
    # Dominating: the later an event ends, the worse its min and its max, so none outlasts a better one (an
    # open-ended one ends last: it is the worst).
    reach = np.where(lasting, 10**9, end)
    shares = rng.normal(size=count) if values == "random" else reach.astype(float)
    table = pa.table(
        {
            "k": pa.array(np.zeros(count, dtype=np.int32)),
            "_first": first,
            "_lastw": pa.array(end, mask=lasting),
            "_h": np.full(count, horizon),
            "_rows": np.ones(count, dtype=np.int64),
            "_lo": shares,
            "_top": rng.integers(-99, 99, count) if values == "random" else -reach,
        }
    )
    states = [("sum", ["_rows"]), ("min", ["_lo"]), ("max", ["_top"])]
    sweep = event_differences(["k"], "_first", "_lastw", "_h", states, ["signed", "extreme", "extreme"])
    got = windows_of(sweep, table.to_batches(max_chunksize=100), states)
    carried = [held for _, held in seen]
    alive = 4 * longest + 1  # events start ~4 a window: at most this many overlap a window (and few open ones)
    most = 2 * (longest + 10) if values == "random" else longest + 2 * alive
    assert len(seen) > count // 200 and max(carried) <= most, max(carried)
    if values == "dominating":
        assert max(carried) > 2 * longest  # every event alive (one per last window) is a possible min and max
    assert all(events >= held for events, held in seen[:-1])
    assert_same_windows(got, windows_of(sweep, table.to_batches(max_chunksize=count), states), values)


def test_a_long_carry_gathers_batches_into_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Events 1,000 slices long, one a slice, in batches of 10: the carry holds a thousand slices in flight,
    so the walk gathers batches until a chunk holds as many events as the carry, rather than re-reading it
    after every batch, and the windows are those of one batch."""
    seen = carried_sizes(monkeypatch)
    count = 12_000
    first = np.arange(count, dtype=np.int64)
    table = pa.table(
        {
            "k": pa.array(np.zeros(count, dtype=np.int32)),
            "_first": first,
            "_last": first + 1_000,
            "_lastw": first + 1_000,
            "_h": np.full(count, count + 1_500),
            "_rows": np.ones(count, dtype=np.int64),
        }
    )
    states = [("sum", ["_rows"])]
    slices = event_slices(["k"], "_first", "_last", "_h", states, 3, 1)
    differences = event_differences(["k"], "_first", "_lastw", "_h", states, ["signed"])
    for function in (slices, differences):
        seen.clear()
        got = windows_of(function, table.to_batches(max_chunksize=10), states)
        assert len(seen) < 30, len(seen)  # not one chunk per batch of 10: 1,200 of them
        assert all(events >= held for events, held in seen[:-1])
        assert_same_windows(got, windows_of(function, table.to_batches(max_chunksize=count), states), function)


def test_an_open_ended_event_reaches_the_data_end_in_pieces() -> None:
    """An event open from slice 0 and a point at 150,000, the data's end: every window but those holding
    the point holds the open event alone (SE-slices: between two runs; difference: between two deltas), and
    they come out in batches of at most 65,536 windows, with no window missing or repeated."""
    horizon = 150_000
    table = pa.table(
        {
            "k": pa.array([7, 7], pa.int32()),
            "_first": pa.array([0, horizon], pa.int64()),
            "_last": pa.array([horizon, horizon], pa.int64()),
            "_lastw": pa.array([None, horizon], pa.int64()),
            "_h": pa.array([horizon, horizon], pa.int64()),
            "_rows": pa.array([1, 1], pa.int64()),
        }
    )
    states = [("sum", ["_rows"])]
    slices = event_slices(["k"], "_first", "_last", "_h", states, 2, 1)
    differences = event_differences(["k"], "_first", "_lastw", "_h", states, ["signed"])
    for function in (slices, differences):
        for batch in (1, 2):
            out = list(function(iter(table.to_batches(max_chunksize=batch))))
            assert max(b.num_rows for b in out) <= 1 << 16 and len(out) > 2
            got = windows_of(function, table.to_batches(max_chunksize=batch), states)
            assert [r["_first"] for r in got] == list(range(horizon + 1)), (function, batch)
            assert [r["_rows"] for r in got if r["_rows"] != 1] == [2]  # the window holding the point


def pieces_of(table: pa.Table, longest: int, top: int) -> pa.Table:
    """The events as cut_events gives them to numpy (one key, step 1): each finite one over `longest` slices
    in pieces of `longest` slices, all but the last marked `_on` (goes on past its last slice), by first."""
    first = table.column("_first").to_numpy()
    last = table.column("_last").to_numpy()
    long = (last - first >= longest) & (last < top)
    count = np.where(long, (last - first) // longest + 1, 1)
    rows = np.repeat(np.arange(table.num_rows), count)
    start = first[rows] + (np.arange(len(rows)) - np.repeat(np.cumsum(count) - count, count)) * longest
    end = np.where(long[rows], np.minimum(start + longest - 1, last[rows]), last[rows])
    out = table.take(pa.array(rows))
    out = out.set_column(out.schema.get_field_index("_first"), "_first", pa.array(start))
    out = out.set_column(out.schema.get_field_index("_last"), "_last", pa.array(end))
    out = out.append_column("_on", pa.array(long[rows] & (end < last[rows])))
    return out.take(pa.array(np.argsort(start, kind="stable")))


def test_long_events_in_pieces_keep_the_carry_to_a_piece_and_a_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hot key of 1,000 events, 1 in 100 of 10,000 to 40,000 slices, in batches of 50. Whole, a long event
    makes the carry hold the slices up to its end; cut into pieces of 64 slices (cut_events, which the job
    runs before the numpy pass), the carry never holds more than a piece and a window, and the windows
    equal those of the whole events as one batch: min, sums and moments alike."""
    seen = carried_sizes(monkeypatch)
    rng = np.random.default_rng(11)
    count, size = 1_000, 10
    first = np.sort(rng.integers(0, 100_000, count))
    long = rng.random(count) < 0.01
    last = first + np.where(long, rng.integers(10_000, 40_000, count), rng.integers(0, 30, count))
    horizon = int(last.max()) + 5
    values = rng.normal(size=count)
    table = pa.table(
        {
            "k": pa.array(np.zeros(count, dtype=np.int32)),
            "_first": first,
            "_last": last,
            "_h": np.full(count, horizon),
            "_rows": np.ones(count, dtype=np.int64),
            "_sv": values,
            "_lo": values,
            "_n": np.ones(count, dtype=np.int64),
            "_mean": values,
            "_m2": np.zeros(count),
        }
    )
    states = [("sum", ["_rows"]), ("sum", ["_sv"]), ("min", ["_lo"]), ("moments", ["_n", "_mean", "_m2"])]
    whole = event_slices(["k"], "_first", "_last", "_h", states, size, 1)
    want = windows_of(whole, table.to_batches(max_chunksize=count), states)
    seen.clear()
    windows_of(whole, table.to_batches(max_chunksize=50), states)
    assert max(held for _, held in seen) > 5_000  # whole: up to a long event's end
    pieces = pieces_of(table, 64, horizon)
    assert pieces.num_rows > count + 100 and pieces.column("_on").to_numpy(zero_copy_only=False).any()
    seen.clear()
    in_pieces = event_slices(["k"], "_first", "_last", "_h", states, size, 1, "_on")
    got = windows_of(in_pieces, pieces.to_batches(max_chunksize=50), states)
    assert max(held for _, held in seen) <= 64 + size
    assert_same_windows(got, want, "pieces")
