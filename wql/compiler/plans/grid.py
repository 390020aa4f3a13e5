"""Plans for grid windows (CF and FCF): sliding, tumbling, SLIDE > RANGE, landmark, CUMULATE (interval events:
intervals.py).

The plans read the window's grid shape (`kinds.shapes.GridShape`), never its kind: where each window
starts relative to its end on the grid (`reach`), and the window's own flags (FULL END, OWN END).

- bucket: tag each tuple with its window-ids and group by (window, keys).
- pane: cells of gcd(r, s); size = r/g cells per window, step = s/g.
- slice: two cells per slide (the Pairs cut at window ends and starts); size = 2⌈r/s⌉ − 1, step = 2.
- windows that start at their period's start (CUMULATE) run on cells of one slide too: window w is a
  running combine of its period's cells up to w, reset at each period (m = r/s windows a period);
  bucket copies a tuple into the (m + 1)/2 windows it is in, on average. Landmark windows are a
  running combine that never resets.

Pane and slice plans pre-aggregate each (keys, cell) into partial states (lift)
and combine each key's ordered cells into windows with a constant number of
combines per cell, however large r/s is. Costs, in tuple-operations:

- bucket: N·(1 + f), f = the fan-out (windows per tuple: r/s for sliding windows);
- pane:   1.2·N + 4·cells, cells ≈ min(N, N·step/ρ): a shuffle and a cell-level
          group-by, then a constant-cost combine per cell;
- slice:  the same with two cells per slide.
"""

from __future__ import annotations

import math

from wql.compiler.analysis import Query
from wql.compiler.kinds import kind_of
from wql.compiler.kinds.shapes import GridShape, IntervalShape
from wql.compiler.plans.base import Candidate, Cells, Plan, PlanName, Statistics
from wql.compiler.plans.states import Decomposition, decompose, state_names, why_not_shared
from wql.compiler.schema import Domain
from wql.compiler.windows import Window

DAYS_A_MONTH = 30.44  # a month's days, on average: month-to-date windows a tuple is in
OWN_END_PANES = "OWN END: the panes' running combine runs every key to the stream's last window (not supported yet)"
FULL_END_CELLS = "FULL END needs each partition's last position, which the cells do not keep (not supported yet)"


def grid_shape(window: Window) -> GridShape:
    """The window's grid: its kind's shape (for interval events, the grid their windows lie on)."""
    shape = kind_of(window).shape(window)
    if isinstance(shape, IntervalShape) and shape.grid is not None:
        shape = shape.grid
    assert isinstance(shape, GridShape), "the grid plans compute windows on a grid"
    return shape


def pane_cells(window: Window) -> Cells | None:
    """The cells pane plans cut the axis into, or None when the edges are not whole numbers (see grid_exact):
    panes of gcd(RANGE, SLIDE), RANGE/g to a window; for windows that run from their period's start or
    from the beginning, panes of one slide, which a running combine takes."""
    assert window.slide is not None
    if not grid_exact(window):
        return None
    reach, calendar = grid_shape(window).reach, grid_shape(window).calendar
    if reach == "period" and calendar is not None and calendar.mixed:
        assert window.range is not None  # periods of months over day cells: up to 31 days a month
        return Cells(1, 31 * int(window.range), 1, combine="period")
    if reach == "period":
        assert window.range is not None
        return Cells(window.slide, round(window.range / window.slide), 1, combine="period")
    if reach == "unbounded":
        return Cells(window.slide, 1, 1, combine="running")
    assert window.range is not None
    width = gcd(window.range, window.slide)
    return Cells(width, round(window.range / width), round(window.slide / width))


def slice_cells(window: Window) -> Cells | None:
    """Two cells per slide, or None when SLIDE divides RANGE (then slices are panes)."""
    assert window.range is not None and window.slide is not None
    q = math.ceil(window.range / window.slide)
    split = q * window.slide - window.range
    if split == 0:
        return None
    return Cells(window.slide, 2 * q - 1, 2, split=split)


def gcd(a: int | float, b: int | float) -> int | float:
    if isinstance(a, int) and isinstance(b, int):
        return math.gcd(a, b)
    return float(math.gcd(int(a), int(b)))


def cells_candidate(
    name: PlanName, cells: Cells, decomposition: Decomposition | None, stats: Statistics, note: str
) -> Candidate:
    """A plan over `cells` and its cost: each row read once into its cell, then the cells (`cells.step` of them
    a slide) combined into windows. Every grid window's pane and slice plans cost this."""
    n = stats.rows
    count = min(n, n * cells.step / stats.rows_per_slide)
    return Candidate(name, Plan("grid", name, cells, decomposition), 1.2 * n + 4 * count, note)


def grid_exact(window: Window) -> bool:
    """Cells can only replace the extent test when every edge is a whole number of units."""
    if window.attr.domain is not Domain.FLOAT:
        return True
    values = [window.range or 0, window.slide or 0, window.origin]
    return all(float(v).is_integer() for v in values)


def fan_out(window: Window, stats: Statistics) -> float:
    """Windows per tuple: the bucket plan's copies of each row (to its period's end with CUMULATE, to the
    data's end for landmark windows)."""
    reach = grid_shape(window).reach
    if reach == "unbounded":
        return max(1.0, stats.rows / stats.rows_per_slide / 2)
    assert window.range is not None and window.slide is not None
    calendar = grid_shape(window).calendar
    if reach == "period" and calendar is not None and calendar.mixed:
        return (DAYS_A_MONTH * float(window.range) + 1) / 2  # days of a period of months, on average
    if reach == "period":
        return (round(window.range / window.slide) + 1) / 2  # from a tuple's own window to the end of its period
    return max(1.0, window.range / window.slide)


def bucket_note(window: Window, copies: float) -> str:
    reach = grid_shape(window).reach
    if reach == "unbounded":
        return "every tuple is copied into each later window (landmark), then grouped"
    if reach == "period":
        return f"every tuple is copied into its windows up to its period's end ({copies:g} on average), then grouped"
    return f"every tuple is copied into its {copies:g} window{'s' if copies != 1 else ''}, then grouped"


def pane_candidate(window: Window, cells: Cells, decomposition: Decomposition, stats: Statistics) -> Candidate:
    """The pane plan over `cells`, with its cost, or why it does not run."""
    if window.full_end:
        return Candidate.refused(PlanName.PANE, FULL_END_CELLS)
    if cells.combine == "running":
        if window.own_end:
            return Candidate.refused(PlanName.PANE, OWN_END_PANES)
        note = "panes of one slide; each window is a running combine of every pane before it"
        return cells_candidate(PlanName.PANE, cells, decomposition, stats, note)
    if cells.size == 1 and cells.step == 1:
        return Candidate.refused(PlanName.PANE, "tumbling: each window is one pane, so bucket is a plain group-by")
    calendar = grid_shape(window).calendar
    if cells.combine == "period" and calendar is not None and calendar.mixed:
        note = (
            "cells of one day; each window is a running combine of its period's days, reset where a period of "
            "months begins: cost flat in the days a period has"
        )
    elif cells.combine == "period":
        note = (
            f"panes of one slide; each window is a running combine of its period's panes, reset every "
            f"{cells.size} panes: cost flat in RANGE/SLIDE"
        )
    else:
        note = f"panes of gcd(RANGE, SLIDE), {cells.size} per window, combined in blocks: cost flat in RANGE/SLIDE"
    return cells_candidate(PlanName.PANE, cells, decomposition, stats, note)


def slice_candidate(
    window: Window, why_not: str | None, decomposition: Decomposition | None, stats: Statistics
) -> Candidate | None:
    """The slice plan (Pairs: two cells per slide), or why it does not run; None where it is no option
    (landmark windows end on every slide: the panes are the slices)."""
    reach = grid_shape(window).reach
    if reach == "unbounded":
        return None
    if window.full_end:
        return Candidate.refused(PlanName.SLICE, FULL_END_CELLS)
    if reach == "period":
        return Candidate.refused(PlanName.SLICE, "CUMULATE windows end on every slide: the panes are the slices")
    if why_not is not None:
        return Candidate.refused(PlanName.SLICE, why_not)
    sliced = slice_cells(window)
    if sliced is None:
        return Candidate.refused(PlanName.SLICE, "SLIDE divides RANGE, so slices are the panes")
    note = f"two slices per slide (Pairs), {sliced.size} per window"
    return cells_candidate(PlanName.SLICE, sliced, decomposition, stats, note)


def candidates(query: Query, stats: Statistics) -> list[Candidate]:
    window = query.window
    n = stats.rows
    copies = fan_out(window, stats)
    out = [Candidate(PlanName.BUCKET, Plan("grid", PlanName.BUCKET), n * (1 + copies), bucket_note(window, copies))]
    decomposition = decompose(query, state_names(query))
    why_not = None
    if decomposition is None:
        why_not = why_not_shared(query)
    elif not grid_exact(window):
        why_not = "RANGE, SLIDE and ALIGN must be whole numbers for exact cell edges on a DOUBLE attribute"
    cells = pane_cells(window) if why_not is None else None
    if why_not is not None or cells is None:
        out.append(Candidate.refused(PlanName.PANE, why_not or ""))
    else:
        assert decomposition is not None
        out.append(pane_candidate(window, cells, decomposition, stats))
    sliced = slice_candidate(window, why_not, decomposition, stats)
    if sliced is not None:
        out.append(sliced)
    return out


def each_tuple_a_cell(plan: Plan) -> bool:
    """Whether a stream can take each tuple as a cell of its own (its share of every partial state) and merge
    cells by adding: every state has a row-level share and merges by sum, min or max (moments merge through
    a list, too slow for every tuple)."""
    decomposition = plan.decomposition
    return decomposition is not None and all(
        g.operation != "moments" and len(g.contributions) == len(g.columns) for g in decomposition.groups
    )


def in_state_store(query: Query, plan: Plan) -> bool:
    """Whether a stream of this plan keeps its cells in Spark's state store when the job has WQL's JVM kernels
    (docs/semantics.md §8.12): panes or slices whose tuples are cells of their own, on a TIMESTAMP or integral
    attribute (Spark's watermark holds whole milliseconds), without ALIGN FIRST or row numbers."""
    window, cells = query.window, plan.cells
    if plan.family != "grid" or cells is None or cells.combine != "sliding" or not each_tuple_a_cell(plan):
        return False
    if grid_shape(window).calendar is not None:
        return False  # the JVM function places cells on a uniform grid; a calendar grid keeps its cells in files
    return not (window.align_first or window.attr.domain is Domain.FLOAT or window.numbers_rows)
