"""Plans for interval events (WATTR (start, end)): grid windows over them, and snapshot windows.

An event covers [start, end) and belongs to every window it overlaps; a point
event (start = end) belongs where its start does; an open-ended one (end NULL)
lasts to the end of the data; end < start is malformed and in no window.

- bucket: copy each event into every window it overlaps (snapshots: every
  snapshot it is alive in), then group by (keys, window). Any aggregate; the
  copies grow with the event's length: λ + r/s per event.
- se-slices (seed 001, Suzanne et al., TIME 2020): the axis cut into slices
  (Pairs: two per slide, one where SLIDE divides RANGE); a kernel inserts each
  event into every slice it overlaps. min and max keep plain slices; cumulative
  states keep the (ϕ, φ) pair, ϕ for events that end in the slice and φ for
  those that go on past it, so that a window, the ϕ of its slices combined with
  the φ of its last slice (combine*, lower*), counts an event once however many
  of its slices the event spans. Insertion costs λ slice updates per event, in
  the kernel's arrays rather than as Spark rows.
- difference: for cumulative aggregates (count, sum, avg, stddev, variance) an
  event overlaps window w = [a, b) iff start < b and end > a, and an event that
  ends at or before a started before b; so a window's states are (states of
  the events starting before b) − (states of the events ending at or before a).
  Each event becomes two signed deltas, at its first window and one past its
  last; a running combine over each key's cells gives every window. Two deltas
  per event whatever its length, and on a grid they are never Spark rows: a
  JVM kernel adds each partition's deltas into per-key arrays over the
  window-ids and ships the arrays (SNAP still groups delta rows in Spark). Moments keep the starting and ending events
  apart (two Chan-combined states, subtracted at the end) and NaN and
  infinities are counted apart, so a running total never carries them past the
  windows that hold them. Landmark windows only add. Snapshot windows run the
  same deltas over the partition's endpoints instead of window-ids.
- sweep: for grid windows with min and max too. A window's extreme is the
  extreme of the events active in it, those that start before it ends and end
  after it starts. A kernel sweeps each key's windows in order, events (sorted
  by first window) entering at their first window and leaving after their last:
  cumulative states as the difference plan places them, in a running state;
  min and max from a heap per extreme of the events alive, the ended ones
  dropped from the top and the dominated ones (a better event outlasts them)
  left out. O((events + windows)·log) per key, no term in the events' length;
  an open-ended event never leaves, so it is part of the running state.

Costs are static, so the plan never depends on the data: they assume N events,
ρ per slide, and events λ slides long on average (`Statistics.event_slides`,
10 by default: between the point events and the long outages the plans must
all survive). In tuple-operations, f = r/s:

- bucket:    N·(1 + λ + f)   rows through Spark's exchange;
- se-slices: 2.2·N + 0.1·N·(k·λ + 1) + 4·k·N/ρ, k slices per slide: one
             exchange of the events and their pass into the kernel and back
             (N), slice updates at a tenth of a row each, a constant-cost
             combine per slice;
- difference: 1.4·N + 4·N/ρ: the events' pass into the kernel and the scan
             for the data's end (1.2·N), two array updates per event at a
             tenth of a row each, no exchange of events or deltas, a combine
             per window-id. With SNAP, 2.4·N + 4·N/ρ: two delta rows per event
             through Spark's group-by.
- sweep:     2.3·N + 0.02·N·log2(1 + ρ·(λ + f)) + 4·N/ρ: SE-slices' exchange
             and pass (2.2·N), a ring update per event, and for min and max a
             heap step over the ρ·(λ + f) events alive at once, a fiftieth of a
             row per level; a combine per window.

Measured (benchmarks/intervals.py, 2,000,000 events, r/s = 10, count/sum/avg):
with delta rows grouped by Spark the difference plan took 18.8, 17.7 and 21.5 s
for events of 1, 10 and 100 slides under load, SE-slices 16.1, 28.1 and 44.4 s;
SE-slices then won only for the shortest events, where the estimates met (2.8·N
each). The kernel cut the difference plan's time by 2.6-4x (README), below
SE-slices' at every length: its estimate is now below SE-slices' everywhere.
The sweep, measured against SE-slices in one process (min and max, load ~10):
3.5 and 3.4 s at 1 slide, 3.1 and 3.5 s at 10, 3.7 and 12.0 s at 100; with SNAP
and count/sum/avg it beat the difference plan's grouped deltas (6.8 s against
10.3 s at 10 slides), which its estimate, which leaves out SNAP's runs as
SE-slices' does, reflects.
"""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal

from sqlglot import exp

from wql.compiler.analysis import Query
from wql.compiler.plans.base import Candidate, Cells, Plan, PlanName, Statistics
from wql.compiler.plans.grid import grid_exact, pane_cells, slice_cells
from wql.compiler.plans.states import Decomposition, decompose, state_names, why_not_shared
from wql.compiler.schema import Domain
from wql.compiler.windows import Window
from wql.grammar.expressions import parse_sql_expression


def slices(window: Window) -> Cells:
    """The SE-slices grid: Pairs (two slices per slide) unless SLIDE divides RANGE, then one per slide.

    DECIMAL attributes are cut in their base units (exact integers of 10^-scale), as the job compares them.
    """
    if window.attr.domain is Domain.DECIMAL:
        scaled = {
            name: int(value.scaleb(window.attr.scale))
            for name in ("range", "slide", "origin")
            if isinstance(value := getattr(window, name), Decimal)
        }
        window = replace(window, **scaled)
    cells = slice_cells(window) or pane_cells(window)
    assert cells is not None
    return cells


def clipped_reads(query: Query) -> list[str]:
    """CLIP: the interval attributes the aggregates read (each window sees its own clipped values)."""
    window = query.window
    if not window.clip or window.end_attr is None:
        return []
    names = {window.attr.name.lower(): window.attr.name, window.end_attr.name.lower(): window.end_attr.name}
    read: list[str] = []
    for call in query.aggregates:
        for sql in [*call.args, *([call.filter] if call.filter else [])]:
            for column in parse_sql_expression(sql).find_all(exp.Column):
                name = names.get(str(column.name).lower())
                if name is not None and name not in read:
                    read.append(name)
    return read


def _cumulative_only(decomposition: Decomposition) -> str | None:
    extremes = sorted({g.operation for g in decomposition.groups if g.operation in ("min", "max")})
    if not extremes:
        return None
    verb, them = ("have", "them") if len(extremes) > 1 else ("has", "it")
    return f"{' and '.join(extremes)} {verb} no inverse, so differences of running totals cannot give {them}"


def candidates(query: Query, stats: Statistics) -> list[Candidate]:
    window = query.window
    if window.is_snapshot:
        return _snapshot_candidates(query, stats)
    n, rho, length = stats.rows, stats.rows_per_slide, stats.event_slides
    decomposition = decompose(query, state_names(query))
    clipped = clipped_reads(query)
    shared_blocker = None
    if clipped:
        shared_blocker = f"CLIP: the aggregates read {', '.join(clipped)} clipped to each window: no cell can share"
    elif decomposition is None:
        shared_blocker = why_not_shared(query)
    out = []
    if window.range is None:  # landmark windows
        note = "every event is copied into each later window (landmark), then grouped"
        out.append(Candidate(PlanName.BUCKET, Plan("intervals", PlanName.BUCKET), n * (1 + n / rho / 2), note))
        out.append(Candidate.refused(PlanName.SE_SLICES, "landmark windows keep growing: a running combine adds up"))
        if shared_blocker is not None:
            out.append(Candidate.refused(PlanName.DIFFERENCE, shared_blocker))
        else:
            note = "a running combine of each key's events by their first window: landmark windows only add"
            plan = Plan("intervals", PlanName.DIFFERENCE, decomposition=decomposition)
            out.append(Candidate(PlanName.DIFFERENCE, plan, 1.2 * n + 4 * n / rho, note))
        out.append(
            Candidate.refused(
                PlanName.SWEEP, "landmark windows only add: the difference plan's running combine keeps min and max"
            )
        )
        return out

    assert window.range is not None and window.slide is not None
    fan = float(window.range / window.slide)
    copies = 1 + length + fan
    note = f"every event is copied into the ~{copies:g} windows it overlaps (λ = {length:g} slides assumed), grouped"
    out.append(Candidate(PlanName.BUCKET, Plan("intervals", PlanName.BUCKET), n * copies, note))

    if shared_blocker is not None:
        out.append(Candidate.refused(PlanName.SE_SLICES, shared_blocker))
    elif not grid_exact(window):
        out.append(
            Candidate.refused(
                PlanName.SE_SLICES,
                "RANGE, SLIDE and ALIGN must be whole numbers for exact slice edges on a DOUBLE attribute",
            )
        )
    else:
        assert decomposition is not None
        grid = slices(window)
        per_slide = grid.step
        cost = 2.2 * n + 0.1 * n * (per_slide * length + 1) + 4 * per_slide * n / rho
        kinds = {g.operation for g in decomposition.groups}
        how = "plain slices for min/max, (ϕ, φ) slices for cumulative states" if kinds & {"min", "max"} else None
        how = how or "(ϕ, φ) slices: an event counts once in the slice it ends in, then in the last slice of a window"
        shape = "Pairs, two per slide" if grid.sliced else "one per slide"
        note = f"each event inserted into every slice it overlaps ({shape}, {grid.size} per window) in a kernel; {how}"
        plan = Plan("intervals", PlanName.SE_SLICES, grid, decomposition)
        out.append(Candidate(PlanName.SE_SLICES, plan, cost, note))

    blocker = shared_blocker
    if blocker is None:
        assert decomposition is not None
        blocker = _cumulative_only(decomposition)
    if blocker is not None:
        out.append(Candidate.refused(PlanName.DIFFERENCE, blocker))
    else:
        how = "delta rows grouped by Spark (SNAP)" if window.snap else "added into per-key arrays in a kernel"
        note = (
            f"two signed deltas per event (its first window, one past its last), {how}, a running combine per "
            "key: cost flat in event length"
        )
        plan = Plan("intervals", PlanName.DIFFERENCE, decomposition=decomposition)
        out.append(Candidate(PlanName.DIFFERENCE, plan, (2.4 if window.snap else 1.4) * n + 4 * n / rho, note))

    if shared_blocker is not None:
        out.append(Candidate.refused(PlanName.SWEEP, shared_blocker))
    else:
        assert decomposition is not None
        out.append(_sweep_candidate(decomposition, stats, fan))
    return out


def _sweep_candidate(decomposition: Decomposition, stats: Statistics, fan: float) -> Candidate:
    """The sweep: each event enters a key's running states at its first window and leaves after its last.

    Cost: the events' exchange and their pass into the kernel and back, as SE-slices' (2.2·N), a ring update
    per event (0.1·N) and, for min and max, a heap step over the events alive at once, ρ·(λ + r/s), at a
    fiftieth of a row per level; a combine per window (4·N/ρ). Flat in λ but for the logarithm.
    """
    n, rho, length = stats.rows, stats.rows_per_slide, stats.event_slides
    extremes = sorted({g.operation for g in decomposition.groups if g.operation in ("min", "max")})
    levels = math.log2(1 + rho * (length + fan)) if extremes else 0.0
    cost = 2.3 * n + 0.02 * n * levels + 4 * n / rho
    if extremes:
        how = f"{' and '.join(extremes)} from a heap of the events alive (dominated ones dropped)"
    else:
        how = "no extremes"
    note = (
        f"each key's windows swept in order in a kernel, events entering at their first window and leaving after "
        f"their last: running states, {how}; cost flat in event length"
    )
    plan = Plan("intervals", PlanName.SWEEP, decomposition=decomposition)
    return Candidate(PlanName.SWEEP, plan, cost, note)


def _snapshot_candidates(query: Query, stats: Statistics) -> list[Candidate]:
    n, rho, length = stats.rows, stats.rows_per_slide, stats.event_slides
    spanned = 2 * rho * length  # endpoints inside an event: the snapshots it is alive in
    note = (
        f"every event is copied into the ~{spanned + 1:g} snapshots it is alive in (endpoints numbered per "
        "partition, then joined), then grouped"
    )
    out = [Candidate(PlanName.BUCKET, Plan("intervals", PlanName.BUCKET), n * (6 + spanned), note)]
    out.append(Candidate.refused(PlanName.SE_SLICES, "snapshot windows have no grid to slice"))
    decomposition = decompose(query, state_names(query))
    clipped = clipped_reads(query)
    if clipped:
        blocker: str | None = f"CLIP: the aggregates read {', '.join(clipped)} clipped to each snapshot"
    elif decomposition is None:
        blocker = why_not_shared(query)
    else:
        blocker = _cumulative_only(decomposition)
    if blocker is None and any(k.origin == "group" for k in query.keys):
        blocker = "GROUP BY inside a partition: other groups' endpoints cut this group's snapshots too"
    if blocker is not None:
        out.append(Candidate.refused(PlanName.DIFFERENCE, blocker))
    else:
        note = (
            "signed deltas at each event's start and end, a running combine over each partition's endpoints: "
            "cost flat in event length"
        )
        plan = Plan("intervals", PlanName.DIFFERENCE, decomposition=decomposition)
        out.append(Candidate(PlanName.DIFFERENCE, plan, 6.0 * n, note))
    out.append(Candidate.refused(PlanName.SWEEP, "not supported yet: the sweep walks grid windows, not snapshots"))
    return out
