"""Where Kafka Streams' sliding windows fall (KIP-450, seed 003), as a pure function.

Kafka builds these windows incrementally and in any arrival order; once all
records are in (and none was dropped as late), the windows that exist are:
- for each record time t ≥ d, its left window [t − d, t];
- for each record time t with 0 ≤ t < d, the combined window [0, d], which
  Kafka uses instead of a left window that would start before 0
  (KStreamSlidingWindowAggregate.processEarly);
- for each record time p, its right window [p + tick, p + tick + d], but only if
  some record falls in it.
Windows are identified by their start, so a right window that coincides with a
left window is one window. Both ends are inclusive. `tick` is Kafka's time
resolution: 1 ms for timestamps, 1 for integers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence


def kafka_windows(times: Sequence[int], d: int, tick: int) -> list[tuple[int, int]]:
    """The [start, end] windows, sorted by start, for record times `times` (any order)."""
    distinct = sorted(set(times))
    starts: set[int] = set()
    for t in distinct:
        starts.add(0 if 0 <= t < d else t - d)
    for p, following in itertools.pairwise(distinct):
        if following <= p + tick + d:
            starts.add(p + tick)
    return [(s, s + d) for s in sorted(starts)]
