"""Plans for grid windows (CF and FCF): sliding, tumbling, SLIDE > RANGE, landmark, CUMULATE (interval events:
intervals.py).

- bucket: tag each tuple with its window-ids and group by (window, keys).
- pane: cells of gcd(r, s); size = r/g cells per window, step = s/g.
- slice: two cells per slide (the Pairs cut at window ends and starts); size = 2⌈r/s⌉ − 1, step = 2.
- CUMULATE runs on cells of one slide too: window w is a running combine of its period's cells up
  to w, reset at each period (m = r/s windows a period); bucket copies a tuple into the
  (m + 1)/2 windows it is in, on average.

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
from wql.compiler.plans.base import Candidate, Grid, Plan, PlanKind, Statistics
from wql.compiler.plans.states import decompose, state_names, why_not_shared
from wql.compiler.schema import Domain
from wql.compiler.windows import Window, WindowKind


def applies(window: Window) -> bool:
    return window.is_grid and not window.is_interval


def pane_grid(window: Window) -> Grid | None:
    """Panes of gcd(RANGE, SLIDE), or None when the edges are not whole numbers (see grid_exact)."""
    assert window.slide is not None
    if not grid_exact(window):
        return None
    if window.kind is WindowKind.LANDMARK:
        return Grid("landmark", window.slide, 1, 1)
    if window.kind is WindowKind.CUMULATE:
        return Grid("cumulate", window.slide, window.windows_per_period, 1)
    assert window.range is not None
    width = _gcd(window.range, window.slide)
    return Grid("pane", width, round(window.range / width), round(window.slide / width))


def slice_grid(window: Window) -> Grid | None:
    """Two cells per slide, or None when SLIDE divides RANGE (then slices are panes)."""
    assert window.range is not None and window.slide is not None
    q = math.ceil(window.range / window.slide)
    delta = q * window.slide - window.range
    if delta == 0:
        return None
    return Grid("slice", window.slide, 2 * q - 1, 2, delta)


def _gcd(a: int | float, b: int | float) -> int | float:
    if isinstance(a, int) and isinstance(b, int):
        return math.gcd(a, b)
    return float(math.gcd(int(a), int(b)))


def grid_exact(window: Window) -> bool:
    """Cells can only replace the extent test when every edge is a whole number of units."""
    if window.attr.domain is not Domain.FLOAT:
        return True
    values = [window.range or 0, window.slide or 0, window.origin]
    return all(float(v).is_integer() for v in values)


def fan_out(window: Window, stats: Statistics) -> float:
    """Windows per tuple, the bucket plan's copies of each row."""
    assert window.slide is not None
    if window.kind is WindowKind.LANDMARK:
        return max(1.0, stats.rows / stats.rows_per_slide / 2)
    assert window.range is not None
    if window.kind is WindowKind.CUMULATE:
        return (window.windows_per_period + 1) / 2  # from a tuple's own window to the end of its period
    return max(1.0, window.range / window.slide)


def candidates(query: Query, stats: Statistics) -> list[Candidate]:
    window = query.window
    n = stats.rows
    copies = fan_out(window, stats)
    bucket_note = (
        f"every tuple is copied into its {copies:g} window{'s' if copies != 1 else ''}, then grouped"
        if window.kind is not WindowKind.LANDMARK
        else "every tuple is copied into each later window (landmark), then grouped"
    )
    if window.kind is WindowKind.CUMULATE:
        bucket_note = (
            f"every tuple is copied into its windows up to its period's end ({copies:g} on average), then grouped"
        )
    out = [Candidate(PlanKind.BUCKET, Plan("grid", PlanKind.BUCKET), n * (1 + copies), bucket_note)]
    decomposition = decompose(query, state_names(query))
    why_not = None
    if decomposition is None:
        why_not = why_not_shared(query)
    elif not grid_exact(window):
        why_not = "RANGE, SLIDE and ALIGN must be whole numbers for exact cell edges on a DOUBLE attribute"
    grid = pane_grid(window) if why_not is None else None
    if why_not is not None or grid is None:
        out.append(Candidate.refused(PlanKind.PANE, why_not or ""))
    elif window.kind is WindowKind.LANDMARK:
        cells = min(n, n / stats.rows_per_slide)
        note = "panes of one slide; each window is a running combine of every pane before it"
        plan = Plan("grid", PlanKind.PANE, grid, decomposition)
        out.append(Candidate(PlanKind.PANE, plan, 1.2 * n + 4 * cells, note))
    elif window.kind is WindowKind.CUMULATE and grid.size > 1:
        cells = min(n, n / stats.rows_per_slide)
        note = (
            f"panes of one slide; each window is a running combine of its period's panes, reset every "
            f"{grid.size} panes: cost flat in RANGE/SLIDE"
        )
        plan = Plan("grid", PlanKind.PANE, grid, decomposition)
        out.append(Candidate(PlanKind.PANE, plan, 1.2 * n + 4 * cells, note))
    elif grid.size == 1 and grid.step == 1:
        out.append(Candidate.refused(PlanKind.PANE, "tumbling: each window is one pane, so bucket is a plain group-by"))
    else:
        cells = min(n, n * grid.step / stats.rows_per_slide)
        note = f"panes of gcd(RANGE, SLIDE), {grid.size} per window, combined in blocks: cost flat in RANGE/SLIDE"
        plan = Plan("grid", PlanKind.PANE, grid, decomposition)
        out.append(Candidate(PlanKind.PANE, plan, 1.2 * n + 4 * cells, note))

    if window.kind is WindowKind.SLIDING and why_not is None:
        sliced = slice_grid(window)
        if sliced is None:
            out.append(Candidate.refused(PlanKind.SLICE, "SLIDE divides RANGE, so slices are the panes"))
        else:
            cells = min(n, n * sliced.step / stats.rows_per_slide)
            note = f"two slices per slide (Pairs), {sliced.size} per window"
            plan = Plan("grid", PlanKind.SLICE, sliced, decomposition)
            out.append(Candidate(PlanKind.SLICE, plan, 1.2 * n + 4 * cells, note))
    elif window.kind is WindowKind.SLIDING:
        out.append(Candidate.refused(PlanKind.SLICE, why_not or ""))
    elif window.kind is WindowKind.CUMULATE:
        out.append(Candidate.refused(PlanKind.SLICE, "CUMULATE windows end on every slide: the panes are the slices"))
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
    window, grid = query.window, plan.grid
    if plan.family != "grid" or grid is None or grid.kind not in ("pane", "slice") or not each_tuple_a_cell(plan):
        return False
    return not (window.align_first or window.attr.domain is Domain.FLOAT or window.numbers_rows)
