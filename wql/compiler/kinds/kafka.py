"""Kafka sliding windows: `[RANGE r WATTR a SLIDE KAFKA]`, Kafka Streams' SlidingWindows (KIP-450, §2.9).

Windows of length r, inclusive at both ends, placed at the records: each record's left window
[t − r, t] (the combined early window [0, r] for a record before r), and each record's right window
[p + tick, p + tick + r] if some record falls in it. A window is named by its start. As in Kafka's
DSL, WHERE filters records before the windows are placed.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wql.compiler import sections
from wql.compiler.classes import Classification, WindowClass
from wql.compiler.kinds.base import Extent, Kind, Member, Sql, from_base, partitioned, partitions, same_partition
from wql.compiler.kinds.clauses import Clauses
from wql.compiler.kinds.shapes import Shape, TupleShape
from wql.compiler.schema import Domain
from wql.compiler.units import Number, short_text, to_base
from wql.compiler.windows import Attribute, Form, Window
from wql.grammar import ast
from wql.grammar.errors import WQLNotSupportedError, WQLSemanticError, WQLTypeError

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section


def tick(window: Window) -> int:
    """Kafka's time resolution in the attribute's base units: 1 ms on a timestamp, 1 on an integer."""
    return 1_000 if window.attr.domain is Domain.TIMESTAMP else 1


class Kafka(Kind):
    """Kafka Streams' sliding windows, at records and just after them."""

    name = "kafka"

    def matches(self, window: Window) -> bool:
        return window.form is Form.KAFKA

    def shape(self, window: Window) -> Shape:
        return TupleShape("kafka")  # windows at records and just after them

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
        exact = f"{{ t | x ≤ t.{window.attr.name} ≤ x + {r} }}"
        if window.kafka_rule:
            return (
                f"extent([x, x + {r}]) = the records Kafka's store holds for it after every arrival (§8.13): "
                f"{exact} while no record is later than SLACK; a later one only in windows stored and open when "
                "it arrived, or copied from one"
            )
        return f"extent([x, x + {r}]) = {exact}  (both ends inclusive)"

    def cited(self, window: Window) -> tuple[Section, ...]:
        return (sections.KAFKA,)

    def slide_text(self, window: Window) -> str:
        return "KAFKA"

    def slide_attribute(self, window: Window) -> str | None:
        return None

    def filters_first(self, window: Window) -> bool:
        return True

    def extents(self, window: Window, tuples: list[Member], sql: Sql) -> list[Extent]:
        """Kafka Streams sliding windows, as KIP-450 places them (`kafka_windows`); under Kafka's late-row
        rule (`SLACK g KAFKA`), the windows Kafka's store holds after every record, in arrival order
        (`kafka_replay`)."""
        assert window.range is not None
        if window.kafka_rule:
            return self.replayed(window, tuples)
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

    def replayed(self, window: Window, tuples: list[Member]) -> list[Extent]:
        """Kafka's late-row rule: each partition's records replayed in arrival order through Kafka's store,
        each with the close time it arrived at (stream time, across partitions, less the grace)."""
        assert window.range is not None and window.slack is not None
        domain = window.attr.domain
        closes = close_times(tuples, window.slack.amount)
        out = []
        for part in partitions(sorted(tuples, key=lambda t: t.row_num)):
            arrivals = [(t, closes[id(t)]) for t in part if t.a is not None]
            store = kafka_replay(arrivals, window.range, tick(window)).windows
            for start in sorted(store):
                members = sorted(store[start], key=lambda t: t.row_num)
                bounds = from_base(start, domain)
                out.append(
                    Extent(
                        bounds, bounds, from_base(start + window.range, domain), part[0].partition, members, (start,)
                    )
                )
        return out

    def final_text(self, window: Window) -> str:
        return "a window [x, x + RANGE] once the punctuation is past x + RANGE"

    def late_text(self, query: Query, name: str) -> str | None:
        if not query.window.kafka_rule:
            return None
        return (
            f"Kafka's rule (KAFKA): a record whose {name} is below its close time (the largest {name} arrived up "
            "to it, across keys, less SLACK) joins only the open windows stored when it arrives, and windows "
            "stored later copy windows that may not hold it; below close time − RANGE it joins none. It is "
            "counted and written to the late-rows output"
        )

    def kept_text(self, query: Query, cells: bool) -> str:
        if not query.window.kafka_rule:
            return super().kept_text(query, cells)
        return (
            "rows: the records of every window a record still to come can reach (those starting up to "
            "3·RANGE before the punctuation), with the windows each is in: Kafka's store"
        )

    def refuse_on_stream(self, query: Query) -> None:
        if query.window.kafka_rule and query.stream.punctuation:
            raise WQLNotSupportedError(
                "PUNCTUATION WHEN with SLACK … KAFKA: Kafka's close time follows the records' own timestamps",
                hint="drop PUNCTUATION WHEN, or use SLACK … CONSISTENT or GENEROUS",
            )


def resolve_kafka(
    clauses: Clauses,
    rng: ast.RangeClause | None,
    attr: Attribute,
    end_attr: Attribute | None,
    sattr: ast.SattrClause | None,
) -> Window:
    """Kafka Streams' sliding windows: a TIMESTAMP or integer attribute and RANGE, placed at the records."""
    if end_attr is not None or attr.is_row_num or attr.domain not in {Domain.TIMESTAMP, Domain.INTEGER}:
        raise WQLTypeError(
            "SLIDE KAFKA windows need a TIMESTAMP or integer attribute, as Kafka's record timestamps are",
            span=clauses.spec.span,
        )
    if sattr is not None:
        raise WQLSemanticError("SLIDE KAFKA places its own windows; drop SATTR", span=sattr.span)
    if rng is None or rng.quantity is None:
        raise WQLSemanticError(
            "SLIDE KAFKA needs RANGE: the windows' time difference",
            span=(rng or clauses.spec).span,
            hint="e.g. [RANGE 10 SECONDS WATTR ts SLIDE KAFKA]",
        )
    clauses.reject_align("Kafka sliding windows are placed at the records, so they have no grid")
    clauses.variants(Form.KAFKA, None)
    return Window(
        form=Form.KAFKA,
        attr=attr,
        range=to_base(rng.quantity, attr.domain, attr.name, "RANGE"),
        slide=None,
        partition_by=clauses.partition(),
        slack=clauses.slack(attr, kafka=True),
        defaults=tuple(clauses.notes),
        units=(rng.quantity.unit, None),
        slack_unit=clauses.slack_unit(),
    )


# data-driven windows: sessions and frames -------------------------------------------


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


def close_times(tuples: Sequence[Member], grace: Number) -> dict[int, Number]:
    """Each record's close time as it arrives (by id): Kafka's observed stream time, the largest timestamp of
    the records up to it in arrival order across every key, less the grace. A record with no timestamp is
    skipped, as Kafka skips a record with no key or value, and moves nothing."""
    out: dict[int, Number] = {}
    seen: Number | None = None
    for t in sorted(tuples, key=lambda t: t.row_num):
        if t.a is not None:
            seen = t.a if seen is None else max(seen, t.a)
            out[id(t)] = seen - grace
    return out


@dataclass
class Replay:
    """Kafka's store for one key after a replay: each window's records by start (both ends inclusive, the end
    start + size), and the records that arrived late (below their close time), which joined only what the
    rule let them."""

    windows: dict[Number, list[Member]] = field(default_factory=dict)
    late: list[Member] = field(default_factory=list)


def kafka_replay(arrivals: Sequence[tuple[Member, Number]], size: Number, tick: int) -> Replay:
    """One key's records, as (record, close time) in arrival order, through Kafka Streams' sliding-window store
    (KStreamSlidingWindowAggregate's process, processReverse, processEarly and createWindows).

    Each stored window keeps its records (their largest timestamp is Kafka's window timestamp). A record:
    - whose last possible window [t, t + size] ends before its close time is dropped;
    - joins every stored window that holds it and is still open (end ≥ close time);
    - creates, where missing: the previous record's right window (holding only itself), its own left window
      [t − size, t] (a copy of the window found just before it, plus itself), and its own right window
      (a copy of the first window holding it, without itself), the first two only while open.
    A record below its close time (lateness past the grace) is accepted but skips its own left window, and
    windows created later copy windows that may or may not hold it: Kafka's rule has no closed form, so
    this is its algorithm, record by record (docs/semantics.md §8.13).
    """
    replay = Replay()
    store = replay.windows

    def newest(start: Number) -> Number:
        return max(t.a for t in store[start])  # type: ignore[type-var, return-value]

    def put(start: Number, base: list[Member], record: Member, close: Number) -> None:
        if start + size >= close:  # a closed window is neither created nor changed
            store[start] = [*base, record]

    for record, close in arrivals:
        t = record.a
        assert t is not None
        if t < close:
            replay.late.append(record)
        if t + size < close:
            continue
        seen: set[Number] = set()
        right: list[Member] | None = None
        right_made = False
        previous: Number | None = None
        if 0 <= t < size:  # Kafka's early records: one combined window [0, size] instead of left windows
            combined = False
            for start in sorted(s for s in store if 0 <= s <= t + tick):
                seen.add(start)
                if start == 0:
                    combined = True
                    if newest(0) < t:
                        previous = newest(0)
                elif start <= t:
                    right = list(store[start])
                    put(start, store[start], record, close)
                elif start == t + tick:
                    right_made = True
            if right is None and combined and newest(0) > t:
                right = list(store[0])
            if not right_made and right is not None and max(u.a for u in right) > t:  # type: ignore[type-var]
                store[t + tick] = right
            if previous is not None and previous + tick not in seen:
                put(previous + tick, [], record, close)
            put(0, store.get(0, []), record, close)
            continue
        left: list[Member] | None = None
        left_made = False
        duplicate = False
        for start in sorted((s for s in store if t - 2 * size <= s <= t + tick), reverse=True):
            seen.add(start)
            end = start + size
            if start == t + tick:
                right_made = True
            elif end > t:
                if right is None:
                    right = list(store[start])
                put(start, store[start], record, close)
            elif end == t:  # its own left window exists
                left_made = True
                highest = newest(start)
                put(start, store[start], record, close)
                if highest >= t:  # a record at t came before it: every window it needs exists
                    duplicate = True
                    break
                previous = highest
            else:
                left, previous = list(store[start]), newest(start)
                break
        if duplicate:
            continue
        if previous is not None and previous + tick not in seen and previous + tick + size >= t:
            put(previous + tick, [], record, close)
        if not left_made:
            base = left if left is not None and previous is not None and t - size <= previous else []
            put(t - size, base, record, close)
        if not right_made and right is not None and max(u.a for u in right) > t:  # type: ignore[type-var]
            store[t + tick] = right
    return replay


KIND = Kafka()
