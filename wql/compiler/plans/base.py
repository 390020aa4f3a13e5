"""The physical-plan IR that every plan family shares, and what a family offers the optimizer.

A plan is a pipeline of named stages, the same in a batch job and a streaming one:

    prepare  the stream's rows in window terms (keys, aggregate inputs, `_t`)
    lift     rows to cells of partial states (pane and slice plans only)
    windows  rows or cells to one row per window and key, with its aggregates
    finish   window bounds, select expressions, HAVING, ORDER BY, LIMIT

A batch job runs them once over the whole input. A streaming job keeps what
`windows` reads (rows, or cells) between triggers and runs `windows` over it
each trigger; `Plan.keeps` says which. Both jobs are generated from the same
`Plan`, so they cannot compute different windows.

Each family module (`grid`, `tuples`, …) turns a query into `Candidate`s with
costs; the optimizer only ranks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

from wql.compiler.plans.states import Decomposition


class PlanName(Enum):
    BUCKET = "bucket"
    PANE = "pane"
    SLICE = "slice"
    BINS = "bins"
    PREFIX = "prefix"
    OVER = "over"
    FOLD = "fold"
    STARTS = "starts"
    SCAN = "scan"
    SE_SLICES = "se-slices"
    DIFFERENCE = "difference"
    SWEEP = "sweep"
    REPLAY = "replay"


Family = Literal["grid", "tuples", "runs", "intervals"]


@dataclass(frozen=True)
class Cells:
    """How pane and slice plans cut the attribute axis into cells, and which cells make window w.

    Panes: a value a lies in cell ⌊(a − o)/width⌋. Slices (`split` set, `width` the slide s): two cells
    per slide, cell 2j or 2j + 1 of slide j = ⌊(a − o)/s⌋ by whether a lies before or after `split` into
    it. `combine` says which cells make window w:

    - "sliding": the `size` cells ending at cell (w + 1)·step − 1;
    - "running": every cell up to w (landmark windows, on cells of one slide);
    - "period": the cells from the start of w's period, cell size·⌊w/size⌋, up to w (CUMULATE, on cells
      of one slide, `size` of them a period).
    """

    width: int | float
    size: int
    step: int
    combine: Literal["sliding", "running", "period"] = "sliding"
    split: int | float | None = None

    @property
    def sliced(self) -> bool:
        """Two cells per slide (Pairs), rather than panes."""
        return self.split is not None


@dataclass(frozen=True)
class Plan:
    """One physical plan: its family (which code generator writes it), its name, and its parameters."""

    family: Family
    name: PlanName
    cells: Cells | None = None
    decomposition: Decomposition | None = None

    @property
    def keeps(self) -> Literal["cells", "rows"]:
        """What a streaming job keeps between triggers: the cells the plan lifts rows into, or rows."""
        if self.family == "intervals":
            return "rows"  # each trigger recomputes the open windows from the events that reach them
        return "cells" if self.cells is not None else "rows"


@dataclass(frozen=True)
class Statistics:
    """What costs are estimated for: the same assumptions for every query, so plans never depend on data."""

    rows: int = 1_000_000
    rows_per_slide: float = 10.0
    rows_per_window: float = 100.0  # windows named by tuples
    event_slides: float = 10.0  # interval events: mean length in slides (plans/intervals.py)

    def describe(self) -> str:
        return f"N = {self.rows:,} tuples, ρ = {self.rows_per_slide:g} tuples per slide (assumed)"


@dataclass(frozen=True)
class Candidate:
    """A plan a family offers for a query, with its estimated cost, or why it cannot run (plan None)."""

    name: PlanName
    plan: Plan | None
    cost: float | None
    note: str

    @staticmethod
    def refused(name: PlanName, note: str) -> Candidate:
        return Candidate(name, None, None, note)
