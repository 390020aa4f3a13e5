"""Grid windows on a time or value attribute: sliding, tumbling, SLIDE > RANGE (gaps), KAFKA, ALIGN FIRST.

`[RANGE r SLIDE s WATTR a]`: window w is the half-open interval that ends on the w-th point of the
grid o + k·s (docs/semantics.md §2.1, §2.2, §2.14, §2.15). `Grid` is also the base of the other
kinds on a grid (rows, partitioned rows, landmark, CUMULATE, interval events): they share its
window-ids and differ in a window's start, which windows are reported, and the tuples' axis.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from wql.compiler import sections
from wql.compiler.classes import Classification, WindowClass
from wql.compiler.kinds.base import (
    Extent,
    Kind,
    Member,
    Sql,
    basis,
    from_base,
    has_origin,
    origin_text,
    partitioned,
    partitions,
)
from wql.compiler.kinds.clauses import Clauses
from wql.compiler.kinds.shapes import GridShape, Reach, Shape
from wql.compiler.schema import Domain
from wql.compiler.units import Number, number_text, short_text
from wql.compiler.windows import Attribute, Form, Window
from wql.grammar import ast
from wql.grammar.errors import WQLNotSupportedError, WQLSemanticError, WQLTypeError

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section


class Grid(Kind):
    """Sliding and tumbling windows on a time or value attribute (and the base of every grid kind)."""

    name = "grid"
    edged = True
    reach: ClassVar[Reach] = "range"  # where a window starts (kinds.shapes): RANGE before its end

    def matches(self, window: Window) -> bool:
        return (
            window.form is Form.SLIDING
            and window.end_attr is None
            and not window.attr.is_row_num
            and window.calendar is None
        )

    def shape(self, window: Window) -> Shape:
        return GridShape(self.reach)

    # ---------------------------------------------------------------- explain
    def classify(self, window: Window) -> Classification:
        if window.per_partition_rows:
            return Classification(
                WindowClass.FCF,
                "backward",
                "partitioned tuple-based: a tuple's row number within its partition "
                f"({', '.join(window.partition_by)}) counts the partition's earlier arrivals"
                + ("; the grid starts at the partition's first arrival (ALIGN FIRST)" if window.align_first else ""),
            )
        if window.align_first:
            where = f"t's partition ({', '.join(window.partition_by)})" if window.partition_by else "the stream"
            return Classification(
                WindowClass.FCF,
                "backward",
                f"ALIGN FIRST: the grid's origin is the {window.attr.name} of the first tuple to arrive in {where}, "
                "so wids(t) needs that earlier tuple",
            )
        return Classification(
            WindowClass.CF, "none", f"{self.grid_what(window)} grid window: wids(t) follows from t and the spec alone"
        )

    def grid_what(self, window: Window) -> str:
        """What the grid is laid over, in the class's reason."""
        return "tuple-based" if window.is_tuple_based else "interval-event" if window.is_interval else "attribute-based"

    def describe(self, window: Window) -> str:
        text = self.describe_grid(window, self.basis(window), partitioned(window))
        if window.align_first:
            first = "each partition's first tuple" if window.partition_by else "the first tuple"
            text = f"{text}, aligned to {first}"
        return text + self.variant_note(window)

    def basis(self, window: Window) -> str:
        return basis(window)

    def variant_note(self, window: Window) -> str:
        return ""

    def describe_grid(self, window: Window, basis: str, partitioned: str) -> str:
        assert window.range is not None and window.slide is not None
        if window.kafka_grid:
            shape = "tumbling" if window.range == window.slide else "hopping"
            return (
                f"{basis}{partitioned} {shape} window, Kafka Streams TimeWindows: starts on the epoch-aligned grid, "
                "none before 0"
            )
        if window.range == window.slide:
            return f"{basis}{partitioned} tumbling window"
        ratio = window.range / window.slide
        shape = "sliding window" if window.range > window.slide else "sampling window (SLIDE > RANGE leaves gaps)"
        return (
            f"{basis}{partitioned} {shape}, range/slide = {number_text(round(ratio, 4) if ratio % 1 else int(ratio))}"
        )

    def value(self, window: Window) -> str:
        """How a tuple's attribute is written in formulas."""
        if window.per_partition_rows:
            return "rank(t, row_num, " + ", ".join(window.partition_by) + ")"
        return f"t.{window.attr.name}"

    def wids(self, window: Window) -> str:
        assert window.slide is not None
        a = self.value(window)
        o = " − o" if has_origin(window) else ""
        s = short_text(window.slide, window.attr.domain)
        first = f"⌊({a}{o}) / {s}⌋" if o else f"⌊{a} / {s}⌋"
        formula = self.wids_range(window, a, o, first)
        if window.per_partition_rows:
            formula = formula.replace(
                "wids(t) = ", f"wids(t) = ({', '.join('t.' + p for p in window.partition_by)}) × "
            )
        if has_origin(window):
            formula += f",  o = {origin_text(window)}"
        return formula

    def wids_range(self, window: Window, a: str, o: str, first: str) -> str:
        """wids(t) from the tuple's first window, `first`; `a` the tuple's value, `o` " − o" or nothing."""
        assert window.range is not None and window.slide is not None
        d = window.attr.domain
        r, s = short_text(window.range, d), short_text(window.slide, d)
        formula = f"wids(t) = {first} … ⌊({a}{o} + {r}) / {s}⌋ − 1"
        if window.kafka_grid:
            formula = f"wids(t) = max({first}, {window.first_wid}) … ⌊({a}{o} + {r}) / {s}⌋ − 1"
            formula += f"  (window {window.first_wid} is [0, {r}): none starts before 0)"
        return formula

    def extent(self, window: Window) -> str:
        assert window.slide is not None
        s = short_text(window.slide, window.attr.domain)
        o = "o + " if has_origin(window) else ""
        where = f",  o = {origin_text(window)}" if window.align_first else ""
        return self.extent_of(window, self.value(window), f"{o}(w+1)·{s}", o, where)

    def extent_of(self, window: Window, a: str, end: str, o: str, where: str) -> str:
        """extent(w) from the window's end `end`; `o` "o + " or nothing, `where` the origin's definition."""
        assert window.range is not None
        r = short_text(window.range, window.attr.domain)
        if window.kafka_grid:
            return f"extent(w) = {{ t | {end} − {r} ≤ {a} < {end} }},  w ≥ {window.first_wid}{where}"
        return f"extent(w) = {{ t | {end} − {r} ≤ {a} < {end} }}{where}"

    def cited(self, window: Window) -> tuple[Section, ...]:
        return (sections.GRID, *self.gaps(window))

    def gaps(self, window: Window) -> tuple[Section, ...]:
        gapped = window.range is not None and window.slide is not None and window.range < window.slide
        return (sections.GAPS,) if gapped else ()

    # ---------------------------------------------------------------- the reference evaluator
    def bounds(self, window: Window, w: int) -> tuple[Number, Number]:
        """[lo, hi) of grid window w, computed exactly as the extent formula reads."""
        assert window.slide is not None and window.range is not None
        hi = window.origin + (w + 1) * window.slide
        return hi - window.range, hi

    def holds(self, window: Window, item: Member, lo: Number, hi: Number) -> bool:
        """Whether window [lo, hi) holds the tuple."""
        return item.a is not None and lo <= item.a < hi

    def reported(self, window: Window, w: int, lo: Number, tuples: list[Member], horizon: Number | None) -> bool:
        """Whether window w (which starts at lo) is among the windows (reported when non-empty)."""
        return not (window.kafka_grid and lo < 0)  # Kafka: no window starts before 0

    def candidates(self, window: Window, values: list[Number]) -> range:
        """Window-ids worth trying for tuples at these values."""
        return candidates(window, values)

    def start_of(self, window: Window, lo: Number) -> Number | None:
        return lo

    def extents(self, window: Window, tuples: list[Member], sql: Sql) -> list[Extent]:
        """Grid windows; with ALIGN FIRST, each partition's on its own grid.

        ALIGN FIRST measures every value from f, the window attribute of the partition's first
        arrival (least row_num; ties, possible only with a declared ROW_NUM column, by least value;
        before WHERE, among tuples with a value): the grid is the ordinary one over t.a − f, and
        the bounds reported are f + lo and f + hi.
        """
        if not window.align_first:
            return self.grid_extents(window, tuples)
        out = []
        for part in partitions(tuples):
            present = [t for t in part if t.a is not None]
            if not present:
                continue
            f = min(present, key=lambda t: (t.row_num, t.a)).a
            assert f is not None
            shifted = [
                replace(t, a=None if t.a is None else t.a - f, end=None if t.end is None else t.end - f) for t in part
            ]
            out.extend(self.grid_extents(window, shifted, f))
        return out

    def grid_extents(self, window: Window, tuples: list[Member], anchor: Number | None = None) -> list[Extent]:
        domain = window.attr.domain

        def shown(value: Number | None) -> Any:
            return None if value is None else from_base(value if anchor is None else anchor + value, domain)

        # The data's end (the horizon) is the admitted data's: a late tuple that only placed the grid is not in
        # it, and a malformed event (end < start) does not move it either.
        well_formed = [t for t in tuples if t.a is not None and not t.shaping_only and (t.end is None or t.end >= t.a)]
        values = [t.a for t in well_formed]
        ends = [t.end for t in well_formed if t.end is not None]
        found = self.candidates(window, values + ends)  # type: ignore[arg-type]
        horizon = max(values + ends) if values else None  # type: ignore[type-var]
        extents = []
        for part in partitions(tuples):
            for w in found:
                lo, hi = self.bounds(window, w)
                if not self.reported(window, w, lo, tuples, horizon):
                    continue
                members = [t for t in part if self.holds(window, t, lo, hi)]
                extents.append(Extent(w, shown(self.start_of(window, lo)), shown(hi), part[0].partition, members, (w,)))
        return extents

    # ---------------------------------------------------------------- on a stream
    def kept_text(self, query: Query, cells: bool) -> str:
        window = query.window
        per = "per key" if query.keys or window.partition_by else "in all"
        reach = "(RANGE + SLACK)" if window.slack is not None else "RANGE"
        if cells:
            return self.kept_cells(query, per, reach)
        return self.kept_rows(query, per, reach)

    def kept_cells(self, query: Query, per: str, reach: str) -> str:
        return f"cells of the open windows: {per}, at most about {reach} / cell width + 1, however many rows"

    def kept_rows(self, query: Query, per: str, reach: str) -> str:
        if query.window.attr.is_row_num:
            return f"rows: {per}, the last RANGE rows (and the positions that keep SLIDE's multiples)"
        return f"rows: the tuples the open windows can still hold, within {reach} of the newest"


def check_kafka_grid(
    clauses: Clauses,
    clause: ast.WindowClause,
    attr: Attribute,
    end_attr: Attribute | None,
    range_value: Number | None,
    slide_value: Number,
    form: Form,
) -> None:
    """Kafka's TimeWindows: a size and an advance in (0, size], whole milliseconds, on the epoch grid."""
    if form is not Form.SLIDING or range_value is None:
        what = "landmark" if form is Form.LANDMARK else "CUMULATE"
        raise WQLSemanticError(f"KAFKA applies to hopping and tumbling windows, not {what} ones", span=clause.span)
    if end_attr is not None or attr.is_row_num or attr.domain not in {Domain.TIMESTAMP, Domain.INTEGER}:
        raise WQLTypeError(
            "KAFKA windows need a TIMESTAMP or integer attribute, as Kafka's record timestamps are",
            span=clause.span,
        )
    if slide_value > range_value:
        raise WQLSemanticError(
            "KAFKA windows advance by at most their size (Kafka's advance lies within (0, size])",
            span=clause.span,
        )
    if attr.domain is Domain.TIMESTAMP and (range_value % 1000 or slide_value % 1000):
        raise WQLSemanticError("KAFKA windows are whole milliseconds, as Kafka's are", span=clause.span)
    clauses.reject_align("Kafka's windows start on the epoch-aligned grid k·SLIDE")


def check_align_first(clauses: Clauses, clause: ast.AlignClause, end_attr: Attribute | None, form: Form) -> None:
    """ALIGN FIRST with PATTR gives each partition its own grid; landmark windows and interval events report
    up to the stream's last value, which the plans place on one grid only."""
    if not clauses.partition():
        return
    if form is Form.LANDMARK or end_attr is not None:
        what = "landmark windows" if form is Form.LANDMARK else "interval events"
        raise WQLNotSupportedError(
            f"ALIGN FIRST with PATTR for {what} (each partition's grid would end at the stream's last window)",
            span=clause.span,
            hint="drop PATTR (GROUP BY keeps one grid for the whole stream), or ALIGN to a value",
        )


def candidates(window: Window, values: list[Number]) -> range:
    """Window-ids worth trying for tuples at these values: every window any of them can be in, and some."""
    assert window.slide is not None
    if not values:
        return range(0)
    reach = (window.range or 0) / window.slide
    low = math.floor((min(values) - window.origin) / window.slide) - 2
    high = math.floor((max(values) - window.origin) / window.slide + reach) + 2
    return range(low, high + 1)


KIND = Grid()
