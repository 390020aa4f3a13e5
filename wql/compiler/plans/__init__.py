"""Physical plans (docs/semantics.md §7), one module per family, and the IR they share.

- `base`: the Plan IR (stages, what a stream keeps), Candidate and Statistics;
- `states`: how aggregates decompose into partial states;
- `grid`: bucket, pane and slice plans for grid windows;
- `tuples`: bins, prefix and over plans for windows named by tuples;
- `intervals`: bucket, se-slices and difference plans for interval events and snapshot windows.
- `runs`: fold, starts and scan plans for sessions and frames (windows the data cuts: runs of tuples).

Every family offers `candidates(query, stats)` (the `Planner` protocol of
`wql.compiler.families`, the table planning and code generation share); the
optimizer asks the family of the window's shape (its kind's) and ranks what it offers.
"""

from __future__ import annotations

from wql.compiler.plans.base import Candidate, Cells, Family, Plan, PlanName, Statistics
from wql.compiler.plans.states import ONE, Decomposition, StateGroup, decompose, fresh_name

__all__ = [
    "ONE",
    "Candidate",
    "Cells",
    "Decomposition",
    "Family",
    "Plan",
    "PlanName",
    "StateGroup",
    "Statistics",
    "decompose",
    "fresh_name",
]
