"""The window kinds, one module each, and the registry that finds a window's kind.

Each module holds what makes its kind (see `base.Kind`): its windows' extent and wids, its class and
description, the plan family that computes it, and its rules on a stream. Code outside this package
asks `kind_of(window)` instead of matching on `Form`.

| module | windows | semantics |
|---|---|---|
| `grid` | sliding, tumbling, gaps on a time or value attribute (KAFKA, ALIGN FIRST) | §2.1, §2.2, §2.14, §2.15 |
| `rows` | the same on row_num | §2.4 |
| `partitioned_rows` | on each PATTR partition's arrival positions | §2.5 |
| `landmark` | RANGE UNBOUNDED | §2.3 |
| `cumulate` | CUMULATE | §2.13 |
| `calendar` | grids of months or of a zone's local days (TIME ZONE), CUMULATE month to date | §2.21 |
| `slide_by_tuple` | windows named by every (n-th) arrival | §2.6, §2.7 |
| `rank` | windows named by every n-th tuple in value order | §2.8 |
| `kafka` | Kafka Streams' sliding windows | §2.9 |
| `intervals` | grid and landmark windows over interval events (CLIP, SNAP) | §2.10, §2.19, §2.20 |
| `snapshot` | snapshot windows | §2.18 |
| `sessions` | sessions | §2.16 |
| `frames` | threshold, delta and aggregate frames | §2.17 |
"""

from __future__ import annotations

from wql.compiler.kinds import (
    calendar,
    cumulate,
    frames,
    grid,
    intervals,
    kafka,
    landmark,
    partitioned_rows,
    rank,
    rows,
    sessions,
    slide_by_tuple,
    snapshot,
)
from wql.compiler.kinds.base import Extent, Kind, Member, Sql
from wql.compiler.kinds.resolve import resolve_window
from wql.compiler.windows import Window

# Every kind; a window is of the one kind whose `matches` holds (they exclude each other).
KINDS: tuple[Kind, ...] = (
    grid.KIND,
    rows.KIND,
    partitioned_rows.KIND,
    landmark.KIND,
    cumulate.KIND,
    calendar.KIND,
    slide_by_tuple.KIND,
    rank.KIND,
    kafka.KIND,
    intervals.KIND,
    snapshot.KIND,
    sessions.KIND,
    frames.THRESHOLD,
    frames.DELTA,
    frames.AGGREGATE,
)


def kind_of(window: Window) -> Kind:
    """The kind of a window: what its windows are, which plans compute them, how they behave on a stream."""
    found = [kind for kind in KINDS if kind.matches(window)]
    assert len(found) == 1, f"a window of {len(found)} kinds: {[k.name for k in found]}"
    return found[0]


__all__ = ["KINDS", "Extent", "Kind", "Member", "Sql", "kind_of", "resolve_window"]
