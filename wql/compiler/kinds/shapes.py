"""What a window kind tells the planner and the code generators about itself: its shape.

A kind holds a window's semantics; the plan families (`wql.compiler.plans.<family>`) and their code
generators (`wql.compiler.codegen.<family>`) never ask which kind a window is. They read the kind's
shape instead: a small typed description of what the family's plans need to know. The type of the
shape says which family computes the window (`wql.compiler.families`), and its fields say how, so a
new kind that has an existing family's shape needs no change to that family, and a family that needs
to know something new adds a field here rather than a branch on a kind's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from wql.compiler.windows import Calendar

# Where window w of a grid starts, given that it ends on the grid point o + (w+1)·s:
# "range"     RANGE before its end (sliding, tumbling, SLIDE > RANGE);
# "period"    at the start of its period of RANGE, the grid o + j·r (CUMULATE);
# "unbounded" nowhere: it holds every value before its end, and the windows go on to the one holding
#             the data's last value (landmark).
Reach = Literal["range", "period", "unbounded"]


@dataclass(frozen=True)
class GridShape:
    """A window on a grid of its attribute (or of arrival positions): the grid plans compute it. `calendar`:
    its cells are months or local days, numbered from the epoch, rather than fixed lengths of the attribute
    (then RANGE, SLIDE and the origin count cells, and a cell's start is a calendar point)."""

    reach: Reach
    calendar: Calendar | None = None


@dataclass(frozen=True)
class TupleShape:
    """A window named by tuples: which tuples name windows, as the kernels call it.

    "every": every tuple's value; "row_num": every n-th arrival's; "rank": every n-th tuple's in value
    order; "kafka": Kafka's windows at records and just after them."""

    naming: Literal["every", "row_num", "rank", "kafka"]


RuleName = Literal["session", "threshold", "delta", "aggregate"]


@dataclass(frozen=True)
class RunShape:
    """A window the data cuts: a maximal run of consecutive tuples (sessions and frames)."""

    rule: RuleName  # where a run ends (the window's RunRule has its numbers and expressions)
    noun: str  # what one window is called: session, frame
    ties: bool  # whether the order of tuples with equal values matters (frames), so arrival breaks ties
    closed_by_tuple: bool  # whether a run is final only once the tuple after it is known (frames)
    start_mark: str  # what marks a run's first tuple, in words (the starts plan's note)
    chained: str | None  # why a run's start depends on earlier starts, or None: neighbours mark starts
    merges_by_state: bool  # whether first value, last value and partial states are all a tuple to come needs


@dataclass(frozen=True)
class IntervalShape:
    """A window over interval events: `grid` for grid and landmark windows, None for snapshot windows."""

    grid: GridShape | None


Shape = GridShape | TupleShape | RunShape | IntervalShape
