"""Which plans keep a stream's state in Spark's state store (docs/semantics.md §8.12).

One predicate that explain's state line and the streaming job's STREAMING["store"] both ask, so the two
never disagree; each family that has a state-store engine says when its plans fit it.
"""

from __future__ import annotations

from wql.compiler.analysis import Query
from wql.compiler.plans import grid, runs
from wql.compiler.plans.base import Plan


def in_state_store(query: Query, plan: Plan) -> bool:
    """Whether a stream of this plan keeps its state in Spark's state store where the job has WQL's JVM
    kernels: grid cells (StreamCells) or sessions (StreamSessions); every other plan keeps it in files."""
    if plan.family == "grid":
        return grid.in_state_store(query, plan)
    if plan.family == "runs":
        return runs.in_state_store(query, plan)
    return False
