"""The plan families: one table that planning and code generation share.

A family is a planner (`wql.compiler.plans.<name>`: the candidate plans for a query, with their costs)
and a generator (`wql.compiler.codegen.<name>`: the stages those plans run, and on a stream the window
rules the driver calls). The type of a window's shape (its kind's `shape`) says which family computes
it; the optimizer asks that family's planner, and the job writer the generator of the plan it chose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from wql.compiler.codegen import grid as grid_code
from wql.compiler.codegen import intervals as intervals_code
from wql.compiler.codegen import runs as runs_code
from wql.compiler.codegen import tuples as tuples_code
from wql.compiler.kinds import kind_of
from wql.compiler.kinds.shapes import GridShape, IntervalShape, RunShape, Shape, TupleShape
from wql.compiler.plans import grid, intervals, runs, tuples
from wql.compiler.plans.base import Family

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.codegen.common import Context
    from wql.compiler.kernels.contract import StoreRequest
    from wql.compiler.plans.base import Candidate, Statistics
    from wql.compiler.windows import Window


class Planner(Protocol):
    """The plans a family offers for a query: each with its estimated cost, or why it cannot run."""

    def candidates(self, query: Query, stats: Statistics) -> list[Candidate]: ...


class Generator(Protocol):
    """The stages of a family's plans (prepare, [lift,] windows, finish) and, for a streaming job, the
    window rules the driver calls (is_final, retain, missed; merge and shares for cell plans), what Spark's
    state store keeps of it, if anything, and for windows that go only as far as the data (§8.10) the last
    window the data reaches when it ends at `end`."""

    def generate(self, ctx: Context) -> None: ...

    def stream_rules(self, ctx: Context) -> None: ...

    def store_request(self, ctx: Context) -> StoreRequest | None: ...

    def last_reached(self, ctx: Context, end: str) -> str | None: ...


@dataclass(frozen=True)
class PlanFamily:
    name: Family
    planner: Planner
    generator: Generator


FAMILIES: dict[Family, PlanFamily] = {
    "grid": PlanFamily("grid", grid, grid_code),
    "tuples": PlanFamily("tuples", tuples, tuples_code),
    "runs": PlanFamily("runs", runs, runs_code),
    "intervals": PlanFamily("intervals", intervals, intervals_code),
}


# The family each shape's windows belong to.
SHAPES: dict[type[Shape], Family] = {
    GridShape: "grid",
    TupleShape: "tuples",
    RunShape: "runs",
    IntervalShape: "intervals",
}


def family_of(window: Window) -> PlanFamily:
    """The family whose plans compute this window: the one its kind's shape belongs to."""
    return FAMILIES[SHAPES[type(kind_of(window).shape(window))]]


__all__ = ["FAMILIES", "Generator", "PlanFamily", "Planner", "family_of"]
