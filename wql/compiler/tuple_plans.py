"""Plans for windows named by tuples (FCB/FCU): slide-by-tuple, slide by n rows, rank, Kafka."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wql.compiler.analysis import Query
from wql.compiler.plans import PlanKind

if TYPE_CHECKING:
    from wql.compiler.optimizer import Candidate, Statistics


def tuple_candidates(query: Query, stats: Statistics) -> list[Candidate]:
    from wql.compiler.optimizer import Candidate

    note = f"not supported yet: Spark plans for {query.window.kind.value} windows"
    return [Candidate(PlanKind.BINS, None, None, note), Candidate(PlanKind.OVER, None, None, note)]
