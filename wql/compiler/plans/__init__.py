"""Physical plans (docs/semantics.md §7), one module per family, and the IR they share.

- `base`: the Plan IR (stages, what a stream keeps), Candidate and Statistics;
- `states`: how aggregates decompose into partial states;
- `grid`: bucket, pane and slice plans for grid windows;
- `tuples`: bins, prefix and over plans for windows named by tuples;
- `intervals`: bucket, se-slices and difference plans for interval events and snapshot windows.
- `frames`: fold, starts and scan plans for sessions and frames (data-driven windows).

Every family offers `candidates(query, stats)` (the `Planner` protocol of
`wql.compiler.families`, the table planning and code generation share); the
optimizer asks the family the window's kind names and ranks what it offers.
"""

from __future__ import annotations

from wql.compiler.plans.base import Candidate, Family, Grid, Plan, PlanName, Statistics
from wql.compiler.plans.states import ONE, Decomposition, StateGroup, decompose, fresh_name

__all__ = [
    "ONE",
    "Candidate",
    "Decomposition",
    "Family",
    "Grid",
    "Plan",
    "PlanName",
    "StateGroup",
    "Statistics",
    "decompose",
    "fresh_name",
]
