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
from wql.compiler.kinds import kind_of
from wql.compiler.kinds.grid import Grid as GridKind
from wql.compiler.plans.base import Candidate, Grid, Plan, PlanName, Statistics
from wql.compiler.plans.states import Decomposition, decompose, state_names, why_not_shared
from wql.compiler.schema import Domain
from wql.compiler.windows import Window


def pane_grid(window: Window) -> Grid | None:
    """Panes of gcd(RANGE, SLIDE) (the window's kind may cut its own), or None when the edges are not whole
    numbers (see grid_exact)."""
    assert window.slide is not None
    if not grid_exact(window):
        return None
    return grid_kind(window).cell_grid(window)


def grid_kind(window: Window) -> GridKind:
    """The window's kind, one on a grid: it says what a grid plan needs to know of it (its cells, fan-out)."""
    kind = kind_of(window)
    assert isinstance(kind, GridKind)
    return kind


def slice_grid(window: Window) -> Grid | None:
    """Two cells per slide, or None when SLIDE divides RANGE (then slices are panes)."""
    assert window.range is not None and window.slide is not None
    q = math.ceil(window.range / window.slide)
    delta = q * window.slide - window.range
    if delta == 0:
        return None
    return Grid("slice", window.slide, 2 * q - 1, 2, delta)


def gcd(a: int | float, b: int | float) -> int | float:
    if isinstance(a, int) and isinstance(b, int):
        return math.gcd(a, b)
    return float(math.gcd(int(a), int(b)))


def cells_candidate(
    name: PlanName, grid: Grid, decomposition: Decomposition | None, stats: Statistics, note: str
) -> Candidate:
    """A plan over the cells of `grid` and its cost: each row read once into its cell, then the cells
    (`grid.step` of them a slide) combined into windows. Every grid kind's pane and slice plans cost this."""
    n = stats.rows
    cells = min(n, n * grid.step / stats.rows_per_slide)
    return Candidate(name, Plan("grid", name, grid, decomposition), 1.2 * n + 4 * cells, note)


def grid_exact(window: Window) -> bool:
    """Cells can only replace the extent test when every edge is a whole number of units."""
    if window.attr.domain is not Domain.FLOAT:
        return True
    values = [window.range or 0, window.slide or 0, window.origin]
    return all(float(v).is_integer() for v in values)


def candidates(query: Query, stats: Statistics) -> list[Candidate]:
    window = query.window
    kind = grid_kind(window)
    n = stats.rows
    copies = kind.fan_out(window, stats)
    out = [Candidate(PlanName.BUCKET, Plan("grid", PlanName.BUCKET), n * (1 + copies), kind.bucket_note(copies))]
    decomposition = decompose(query, state_names(query))
    why_not = None
    if decomposition is None:
        why_not = why_not_shared(query)
    elif not grid_exact(window):
        why_not = "RANGE, SLIDE and ALIGN must be whole numbers for exact cell edges on a DOUBLE attribute"
    grid = pane_grid(window) if why_not is None else None
    if why_not is not None or grid is None:
        out.append(Candidate.refused(PlanName.PANE, why_not or ""))
    else:
        assert decomposition is not None
        out.append(kind.pane_candidate(window, grid, decomposition, stats))
    sliced = kind.slice_candidate(window, why_not, decomposition, stats)
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
    window, grid = query.window, plan.grid
    if plan.family != "grid" or grid is None or grid.kind not in ("pane", "slice") or not each_tuple_a_cell(plan):
        return False
    return not (window.align_first or window.attr.domain is Domain.FLOAT or window.numbers_rows)
