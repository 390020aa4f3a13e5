"""Kafka sliding windows: `[RANGE r WATTR a SLIDE KAFKA]`, Kafka Streams' SlidingWindows (KIP-450, §2.9).

Windows of length r, inclusive at both ends, placed at the records: each record's left window
[t − r, t] (the combined early window [0, r] for a record before r), and each record's right window
[p + tick, p + tick + r] if some record falls in it. A window is named by its start. As in Kafka's
DSL, WHERE filters records before the windows are placed.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from wql.compiler.classes import Classification, WindowClass
from wql.compiler.kinds.base import Extent, Kind, Member, Sql, from_base, partitioned, partitions, same_partition
from wql.compiler.schema import Domain
from wql.compiler.units import short_text
from wql.compiler.windows import WindowKind

if TYPE_CHECKING:
    from wql.compiler.sections import Section
    from wql.compiler.windows import Window


def tick(window: Window) -> int:
    """Kafka's time resolution in the attribute's base units: 1 ms on a timestamp, 1 on an integer."""
    return 1_000 if window.attr.domain is Domain.TIMESTAMP else 1


class Kafka(Kind):
    """Kafka Streams' sliding windows, at records and just after them."""

    name = "kafka"
    family = "tuples"

    def matches(self, window: Window) -> bool:
        return window.kind is WindowKind.KAFKA

    def classify(self, window: Window) -> Classification:
        a = window.attr.name
        return Classification(
            WindowClass.FCB,
            "forward, bounded",
            f"Kafka sliding windows open at records' timestamps; t's windows lie within [t.{a} − r − 1 tick, "
            f"t.{a} + r], but which exist depends on later records",
        )

    def describe(self, window: Window) -> str:
        return f"Kafka sliding window{partitioned(window)} (windows at records and just after them)"

    def wids(self, window: Window) -> str:
        assert window.range is not None
        d = window.attr.domain
        r = short_text(window.range, d)
        name = window.attr.name
        step = "1 ms" if d is Domain.TIMESTAMP else "1"
        return (
            f"wids(t) = {{ [u.{name} − {r}, u.{name}] | u.{name} − {r} ≤ t.{name} ≤ u.{name} }} ∪ "
            f"{{ [u.{name} + {step}, u.{name} + {step} + {r}] | u.{name} < t.{name} ≤ u.{name} + {step} + {r} }}"
            f"  (u ranges over records{same_partition(window)})"
        )

    def extent(self, window: Window) -> str:
        assert window.range is not None
        r = short_text(window.range, window.attr.domain)
        return f"extent([x, x + {r}]) = {{ t | x ≤ t.{window.attr.name} ≤ x + {r} }}  (both ends inclusive)"

    def cited(self, window: Window) -> tuple[Section, ...]:
        from wql.compiler import sections

        return (sections.KAFKA,)

    def slide_text(self, window: Window) -> str:
        return "KAFKA"

    def slide_attribute(self, window: Window) -> str | None:
        return None

    def naming_mode(self, window: Window) -> str:
        """Which tuples name windows, as the kernels call it: windows at records and just after them."""
        return "kafka"

    def filters_first(self, window: Window) -> bool:
        return True

    def extents(self, window: Window, tuples: list[Member], sql: Sql) -> list[Extent]:
        """Kafka Streams sliding windows, as KIP-450 places them (`kafka_windows`)."""
        assert window.range is not None
        domain = window.attr.domain
        out = []
        for part in partitions(tuples):
            present = [t for t in part if t.a is not None]
            for lo, hi in kafka_windows(sorted(t.a for t in present), window.range, tick(window)):  # type: ignore[misc]
                members = [t for t in present if lo <= t.a <= hi]  # type: ignore[operator]
                out.append(
                    Extent(
                        from_base(lo, domain),
                        from_base(lo, domain),
                        from_base(hi, domain),
                        part[0].partition,
                        members,
                        (lo,),
                    )
                )
        return out

    def final_text(self, window: Window) -> str:
        return "a window [x, x + RANGE] once the punctuation is past x + RANGE"


def kafka_windows(times: Sequence[int], d: int, tick: int) -> list[tuple[int, int]]:
    """The [start, end] windows, sorted by start, for record times `times` (any order).

    Kafka builds these windows incrementally and in any arrival order; once all records are in (and
    none was dropped as late), the windows that exist are:
    - for each record time t ≥ d, its left window [t − d, t];
    - for each record time t with 0 ≤ t < d, the combined window [0, d], which Kafka uses instead of a
      left window that would start before 0 (KStreamSlidingWindowAggregate.processEarly);
    - for each record time p, its right window [p + tick, p + tick + d], but only if some record falls
      in it.
    Windows are identified by their start, so a right window that coincides with a left window is one
    window. Both ends are inclusive. `tick` is Kafka's time resolution: 1 ms for timestamps, 1 for
    integers.
    """
    distinct = sorted(set(times))
    starts: set[int] = set()
    for t in distinct:
        starts.add(0 if 0 <= t < d else t - d)
    for p, following in itertools.pairwise(distinct):
        if following <= p + tick + d:
            starts.add(p + tick)
    return [(s, s + d) for s in sorted(starts)]


KIND = Kafka()
