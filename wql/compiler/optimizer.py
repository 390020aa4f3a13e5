"""Choosing a physical plan by estimated cost.

Costs are in tuple-operations for a stream of N tuples, from the window spec,
the aggregates and a density assumption (tuples per slide). They are static:
the same query always gets the same plan, so what `wql run` executes is exactly
what `wql compile` prints. Every candidate is listed in `explain`, with the
reason when it cannot run.

Model (README, "Plans"):
- bucket: N·(1 + f), f = the fan-out (windows per tuple: r/s for sliding windows).
- pane:   1.2·N + 4·cells, cells ≈ min(N, N·step/ρ) — a shuffle and a cell-level
          group-by, then a constant-cost combine per cell.
- slice:  the same with two cells per slide.
ρ = tuples per slide (default 10).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from wql.compiler.analysis import Query
from wql.compiler.explain import PlanChoice
from wql.compiler.plans import Plan, PlanKind, decompose, grid_exact, pane_grid, slice_grid
from wql.compiler.windows import WindowKind
from wql.grammar.errors import WQLNotSupportedError


@dataclass(frozen=True)
class Statistics:
    rows: int = 1_000_000
    rows_per_slide: float = 10.0
    rows_per_window: float = 100.0  # windows named by tuples

    def describe(self) -> str:
        return f"N = {self.rows:,} tuples, ρ = {self.rows_per_slide:g} tuples per slide (assumed)"


@dataclass(frozen=True)
class Candidate:
    kind: PlanKind
    plan: Plan | None  # None when the plan cannot run this query
    cost: float | None
    note: str


PLAN_NAMES = tuple(kind.value for kind in PlanKind)
PLAN_CHOICES = ("auto", *PLAN_NAMES)  # what --plan accepts


SLACK_NOTE = "not supported yet: SLACK needs arrival-time punctuations, which the streaming backend will bring"


def candidates(query: Query, stats: Statistics | None = None) -> list[Candidate]:
    stats = stats or Statistics()
    window = query.window
    if window.slack is not None:
        kinds = (
            (PlanKind.BUCKET, PlanKind.PANE)
            if window.kind in {WindowKind.SLIDING, WindowKind.LANDMARK}
            else (PlanKind.BINS, PlanKind.OVER)
        )
        return [Candidate(kind, None, None, SLACK_NOTE) for kind in kinds]
    if window.kind in {WindowKind.SLIDING, WindowKind.LANDMARK}:
        return _grid_candidates(query, stats)
    from wql.compiler.tuple_plans import tuple_candidates

    return tuple_candidates(query, stats)


def _fan_out(query: Query, stats: Statistics) -> float:
    window = query.window
    assert window.slide is not None
    if window.kind is WindowKind.LANDMARK:
        return max(1.0, stats.rows / stats.rows_per_slide / 2)
    assert window.range is not None
    fan_out = window.range / window.slide
    if window.is_interval:
        fan_out += 1
    return max(1.0, fan_out)


def why_not_shared(query: Query) -> str:
    """Why cells cannot share partial states for this query's aggregates."""
    sketches = [a.sql for a in query.aggregates if a.info.kind.value == "holistic" and a.info.approximate]
    holistic = [a.sql for a in query.aggregates if a.info.kind.value == "holistic" and not a.info.approximate]
    by = [a.sql for a in query.aggregates if a.function in {"min_by", "max_by"}]
    if holistic:
        return (
            f"{', '.join(holistic)} need{'s' if len(holistic) == 1 else ''} whole multisets, which cells cannot share"
        )
    if sketches:
        return f"not supported yet: merging the sketches of {', '.join(sketches)} across cells"
    if by:
        return f"not supported yet: partial states for {', '.join(by)}"
    return "an aggregate's argument type (e.g. STRING or DECIMAL) has no partial state WQL can combine yet"


def _grid_candidates(query: Query, stats: Statistics) -> list[Candidate]:
    window = query.window
    n = stats.rows
    fan_out = _fan_out(query, stats)
    out = [
        Candidate(
            PlanKind.BUCKET,
            Plan(PlanKind.BUCKET),
            n * (1 + fan_out),
            f"every tuple is copied into its {fan_out:g} window{'s' if fan_out != 1 else ''}, then grouped"
            if window.kind is not WindowKind.LANDMARK
            else "every tuple is copied into each later window (landmark), then grouped",
        )
    ]
    taken = {c.name.lower() for c in query.stream.columns} | {a.name.lower() for a in query.aggregates}
    taken |= {k.name.lower() for k in query.keys}
    decomposition = decompose(query, taken)
    why_not = None
    if window.is_interval:
        why_not = "not supported yet for interval events (they span several cells)"
    elif decomposition is None:
        why_not = why_not_shared(query)
    elif not grid_exact(window):
        why_not = "RANGE, SLIDE and ALIGN must be whole numbers for exact cell edges on a DOUBLE attribute"
    grid = pane_grid(window) if why_not is None else None
    if why_not is not None or grid is None:
        out.append(Candidate(PlanKind.PANE, None, None, why_not or ""))
    elif window.kind is WindowKind.LANDMARK:
        cells = min(n, n / stats.rows_per_slide)
        note = "panes of one slide; each window is a running combine of every pane before it"
        out.append(Candidate(PlanKind.PANE, Plan(PlanKind.PANE, grid, decomposition), 1.2 * n + 4 * cells, note))
    elif grid.size == 1 and grid.step == 1:
        out.append(
            Candidate(PlanKind.PANE, None, None, "tumbling: each window is one pane, so bucket is a plain group-by")
        )
    else:
        cells = min(n, n * grid.step / stats.rows_per_slide)
        note = f"panes of gcd(RANGE, SLIDE), {grid.size} per window, combined in blocks: cost flat in RANGE/SLIDE"
        out.append(Candidate(PlanKind.PANE, Plan(PlanKind.PANE, grid, decomposition), 1.2 * n + 4 * cells, note))

    if window.kind is WindowKind.SLIDING and why_not is None:
        sliced = slice_grid(window)
        if sliced is None:
            out.append(Candidate(PlanKind.SLICE, None, None, "SLIDE divides RANGE, so slices are the panes"))
        else:
            cells = min(n, n * sliced.step / stats.rows_per_slide)
            note = f"two slices per slide (Pairs), {sliced.size} per window"
            out.append(
                Candidate(PlanKind.SLICE, Plan(PlanKind.SLICE, sliced, decomposition), 1.2 * n + 4 * cells, note)
            )
    elif window.kind is WindowKind.SLIDING:
        out.append(Candidate(PlanKind.SLICE, None, None, why_not or ""))
    return out


def choose(
    query: Query, forced: str | None = None, stats: Statistics | None = None
) -> tuple[Plan, tuple[PlanChoice, ...]]:
    """The plan to run (the cheapest, or the forced one) and every candidate for explain."""
    options = candidates(query, stats)
    runnable = [c for c in options if c.plan is not None and c.cost is not None]
    if not runnable:
        raise WQLNotSupportedError(options[0].note.removeprefix("not supported yet: "))
    if forced not in (None, "auto"):
        picked = next((c for c in options if c.kind.value == forced), None)
        if picked is None:
            known = ", ".join(c.kind.value for c in options)
            raise WQLNotSupportedError(f"plan '{forced}' does not apply to this window", hint=f"plans for it: {known}")
        if picked.plan is None:
            raise WQLNotSupportedError(f"plan '{forced}' for this query: {picked.note}")
        best = picked
    else:
        best = min(runnable, key=lambda c: (c.cost, [k.value for k in PlanKind].index(c.kind.value)))
    choices = tuple(
        PlanChoice(
            c.kind.value,
            None if c.cost is None or math.isnan(c.cost) else c.cost,
            c.note,
            chosen=c is best,
        )
        for c in options
    )
    assert best.plan is not None
    return best.plan, choices
