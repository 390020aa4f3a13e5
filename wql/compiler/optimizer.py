"""Choosing a physical plan: rank the candidates the window's plan family offers.

Costs are in tuple-operations for a stream of N tuples (see `Statistics`), from
the window spec, the aggregates and a density assumption; each family module
documents its cost model. They are static: the same query always gets the same
plan, so what `wql run` executes is exactly what `wql compile` prints. Every
candidate is listed in `explain`, with the reason when it cannot run.
"""

from __future__ import annotations

import math

from wql.compiler.analysis import Query
from wql.compiler.explain import PlanChoice
from wql.compiler.families import family_of
from wql.compiler.plans import Candidate, Plan, PlanName, Statistics
from wql.grammar.errors import WQLNotSupportedError

PLAN_NAMES = tuple(kind.value for kind in PlanName)
PLAN_CHOICES = ("auto", *PLAN_NAMES)  # what --plan accepts


def candidates(query: Query, stats: Statistics | None = None) -> list[Candidate]:
    """Every plan the window's family offers, with costs (or why it cannot run): the family its kind names."""
    stats = stats or Statistics()
    return family_of(query.window).planner.candidates(query, stats)


def choose(
    query: Query, forced: str | None = None, stats: Statistics | None = None
) -> tuple[Plan, tuple[PlanChoice, ...]]:
    """The plan to run (the cheapest, or the forced one) and every candidate for explain."""
    options = candidates(query, stats)
    runnable = [c for c in options if c.plan is not None and c.cost is not None]
    if not runnable and forced in (None, "auto"):
        raise WQLNotSupportedError(_no_plan(options))
    if forced not in (None, "auto"):
        picked = next((c for c in options if c.name.value == forced), None)
        if picked is None:
            known = ", ".join(c.name.value for c in options)
            raise WQLNotSupportedError(f"plan '{forced}' does not apply to this window", hint=f"plans for it: {known}")
        if picked.plan is None:
            raise WQLNotSupportedError(f"plan '{forced}' for this query: {picked.note}")
        best = picked
    else:
        order = [k.value for k in PlanName]
        best = min(runnable, key=lambda c: (c.cost, order.index(c.name.value)))
    choices = tuple(
        PlanChoice(
            c.name.value,
            None if c.cost is None or math.isnan(c.cost) else c.cost,
            c.note,
            chosen=c is best,
        )
        for c in options
    )
    assert best.plan is not None
    return best.plan, choices


def _no_plan(options: list[Candidate]) -> str:
    """Why no plan runs the query: each refusal once, naming the plans it stops, so that a user
    sees the reason of the plan they would have wanted and not only the first plan's."""
    notes: dict[str, list[str]] = {}
    for c in options:
        notes.setdefault(c.note.removeprefix("not supported yet: "), []).append(c.name.value)
    if len(notes) == 1:
        return next(iter(notes))
    return "; ".join(f"{', '.join(plans)}: {note}" for note, plans in notes.items())
