"""A window as the compiler understands it: its form, attributes, numbers and options, in base units.

`Window` is the window in the terms of docs/semantics.md: a form (sliding, landmark, a session, …), a
range attribute, r, s, the origin o, partition attributes and slack, all in the attribute's base
units. Every default filled in when it was resolved (`wql.compiler.kinds.resolve`) is recorded, so
`explain` can show the spec as the compiler understood it; `spec_text` writes it back as WQL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

from wql.compiler import calendars
from wql.compiler.schema import Domain
from wql.compiler.units import Number, calendar_text, format_date, number_text, origin_text, quantity_text
from wql.grammar import ast
from wql.grammar.formatter import format_name, format_string


class Form(Enum):
    SLIDING = "sliding"  # RANGE r SLIDE s on one attribute (time, value or row_num); tumbling when r = s
    LANDMARK = "landmark"  # RANGE UNBOUNDED SLIDE s
    SLIDE_BY_TUPLE = "slide-by-tuple"  # RANGE r RATTR a SLIDE n ROWS SATTR row_num
    SLIDE_BY_RANK = "slide-by-rank"  # RANGE r RATTR a SLIDE n ROWS SATTR rank(a)
    KAFKA = "kafka"  # RANGE r RATTR a SLIDE KAFKA (Kafka Streams SlidingWindows)
    SNAPSHOT = "snapshot"  # SNAPSHOT WATTR (start, end): between consecutive event endpoints (StreamInsight)
    CUMULATE = "cumulate"  # RANGE p SLIDE s CUMULATE: windows growing by s from each period of p (Flink CUMULATE)
    SESSION = "session"  # SESSION GAP g [MAX m] [KAFKA]: runs of tuples at most g apart
    THRESHOLD = "threshold-frame"  # FRAME THRESHOLD (p) [MIN n]: maximal runs where p holds
    DELTA = "delta-frame"  # FRAME DELTA d ON x: runs whose x stays within d of the first tuple's
    AGGREGATE = "aggregate-frame"  # FRAME AGGREGATE (c): runs that end where c(running aggregate) holds


# Windows the data cuts (semantics.md §2, "Data-driven windows"): each is a maximal run of
# consecutive tuples in (attribute, row_num) order, named by its first tuple's value.
DATA_DRIVEN = frozenset({Form.SESSION, Form.THRESHOLD, Form.DELTA, Form.AGGREGATE})


class SlideOn(Enum):
    ATTRIBUTE = "attribute"  # the range attribute itself
    ROW_NUM = "row_num"
    RANK = "rank"


@dataclass(frozen=True)
class Attribute:
    name: str  # a column name as declared, or "row_num"
    domain: Domain
    scale: int = 0  # DECIMAL: base units are 10^-scale (values compared as exact scaled integers)

    @property
    def is_row_num(self) -> bool:
        return self.domain is Domain.ROW_NUM


@dataclass(frozen=True)
class Slack:
    amount: Number
    mode: Literal["consistent", "generous", "kafka"]  # kafka: Kafka's late-row rule, SLIDE KAFKA only (§8.13)


Comparison = Literal["<", "<=", ">", ">=", "=", "<>"]


@dataclass(frozen=True)
class RunningAggregate:
    """An aggregate of a FRAME AGGREGATE condition, taken over the frame so far."""

    function: Literal["count", "sum", "avg", "min", "max"]
    arg: str | None  # resolved Spark SQL over the stream's columns; None for count(*)
    sql: str  # the call, resolved, e.g. SUM(v)
    integral: bool = False  # the argument is an integer: sum, min and max stay exact integers


# A FRAME AGGREGATE condition as a tree a kernel can evaluate without SQL:
# ("compare", op, index of a running aggregate, number) | ("and", a, b) | ("or", a, b) | ("not", a)
Test = tuple[object, ...]


@dataclass(frozen=True)
class RunRule:
    """Where a run of tuples ends: what a session or frame needs beyond its attribute and partitions (§2).

    Quantities are in the window attribute's base units. The expressions (THRESHOLD's
    predicate, DELTA's x, AGGREGATE's condition) are resolved by the analysis, which
    fills in their Spark SQL; `source` keeps them as written.
    """

    gap: Number | None = None  # SESSION: consecutive tuples more than gap apart are in different sessions
    longest: Number | None = None  # SESSION … MAX: a tuple at or past first + longest starts a new session
    kafka: bool = False  # SESSION … KAFKA: window_end is the last tuple's value (Kafka's [first, last])
    minimum: Number | None = None  # THRESHOLD … MIN: shorter runs are no frames
    minimum_rows: bool = False  # MIN counts rows (otherwise it is a span of the attribute: last − first)
    delta: Number | None = None  # DELTA d
    condition: str | None = None  # THRESHOLD's predicate or AGGREGATE's condition, resolved Spark SQL
    on: str | None = None  # DELTA's x, resolved Spark SQL
    on_integral: bool = False  # x is an integer (exact differences), else a DOUBLE
    running: tuple[RunningAggregate, ...] = ()  # AGGREGATE: the aggregates its condition reads
    test: Test = ()  # AGGREGATE: the condition over them
    source: ast.Expr | ast.Name | None = field(default=None, compare=False)  # the expression as written
    units: tuple[ast.Unit | None, ast.Unit | None] = field(default=(None, None), compare=False)  # GAP/MIN, MAX

    def expression_text(self) -> str:
        """The predicate, condition or x as Spark SQL (resolved when the analysis has run)."""
        resolved = self.condition if self.on is None else self.on
        if resolved is not None:
            return resolved
        if isinstance(self.source, ast.Name):
            return _quoted(self.source.text)
        return self.source.sql if self.source is not None else ""


CalendarUnit = Literal["day", "month"]


@dataclass(frozen=True)
class Calendar:
    """A grid counted in a calendar (docs/semantics.md §2.21): its cells are local days or months.

    On a calendar grid RANGE, SLIDE and the origin are counted in calendar units, not base units: SLIDE
    and the cells in `cell` units, RANGE and the origin in `period` units, which differ only where CUMULATE
    grows month-long periods day by day (month to date). The window's `zone` says whose days they are."""

    cell: CalendarUnit
    period: CalendarUnit

    @property
    def mixed(self) -> bool:
        """Periods of months over cells of days: windows grow by one day from each period's start."""
        return self.cell != self.period


@dataclass(frozen=True)
class Window:
    form: Form
    attr: Attribute  # range attribute; the start attribute of interval events
    range: Number | None  # None: unbounded (landmark)
    slide: Number | None  # attribute units; rows for SLIDE_BY_*; None for KAFKA
    slide_on: SlideOn = SlideOn.ATTRIBUTE
    end_attr: Attribute | None = None  # interval events [attr, end_attr)
    partition_by: tuple[str, ...] = ()
    origin: Number = 0  # windows end on the grid origin + k * slide
    slack: Slack | None = None
    defaults: tuple[str, ...] = field(default=(), compare=False)
    units: tuple[ast.Unit | None, ast.Unit | None] = field(default=(None, None), compare=False)
    slack_unit: ast.Unit | None = field(default=None, compare=False)
    clip: bool = False  # CLIP: aggregates see interval lifetimes clipped to the window (StreamInsight)
    snap: bool = False  # SNAP: one row per run of consecutive windows with the same events (StreamInsight)
    rule: RunRule | None = None  # sessions and frames: where a run ends (DATA_DRIVEN forms)
    zone: str | None = None  # TIME ZONE: whose calendar days and months are (UTC for a calendar with none)
    calendar: Calendar | None = None  # a grid counted in local days or months (numbers in calendar units)

    @property
    def is_data_driven(self) -> bool:
        return self.form in DATA_DRIVEN

    # KAFKA: Kafka Streams' TimeWindows: window starts on the epoch-aligned grid k·SLIDE, none before 0.
    kafka_grid: bool = False
    # ALIGN [START] FIRST: `origin` is measured from the first arriving tuple's value (per PATTR partition).
    align_first: bool = False
    # FULL START / FULL END: count windows that start before the (partition's) first row, or end after its last
    # row, do not exist (FULL: neither).
    full_start: bool = False
    full_end: bool = False
    # OWN END: landmark windows with PATTR run to each partition's own last tuple, not the stream's.
    own_end: bool = False

    @property
    def is_grid(self) -> bool:
        """Windows on a grid of the attribute (CF, or FCF with PATTR rows or ALIGN FIRST): the grid plans apply."""
        return self.form in {Form.SLIDING, Form.LANDMARK, Form.CUMULATE}

    @property
    def windows_per_period(self) -> int:
        """CUMULATE: RANGE / SLIDE, the windows of each period (the last one is the whole period)."""
        assert self.form is Form.CUMULATE and self.range is not None and self.slide is not None
        return round(self.range / self.slide)

    @property
    def first_wid(self) -> int | None:
        """KAFKA: the first window-id, the window [0, RANGE); None when windows are not bounded below."""
        if not self.kafka_grid:
            return None
        assert self.range is not None and self.slide is not None
        return int(self.range // self.slide) - 1

    @property
    def kafka_rule(self) -> bool:
        """Whether a late record follows Kafka's rule (`SLACK g KAFKA`): it joins only the windows stored when it
        arrives that are still open (docs/semantics.md §8.13)."""
        return self.slack is not None and self.slack.mode == "kafka"

    @property
    def first_full(self) -> int:
        """FULL START: the first window that starts at or after position 0, the least w with o + (w+1)·m − n ≥ 0."""
        assert self.range is not None and self.slide is not None
        return -(-(int(self.range) - int(self.origin)) // int(self.slide)) - 1

    @property
    def numbers_rows(self) -> bool:
        """Whether the job needs arrival positions: for the window itself, to find the first arrival, or for
        Kafka's late-record rule, which follows arrival order."""
        return self.uses_row_num or self.align_first or (self.slack is not None and self.slack.mode == "kafka")

    @property
    def is_interval(self) -> bool:
        return self.end_attr is not None

    @property
    def is_snapshot(self) -> bool:
        return self.form is Form.SNAPSHOT

    @property
    def is_tuple_based(self) -> bool:
        return self.attr.is_row_num

    @property
    def is_tumbling(self) -> bool:
        return self.form is Form.SLIDING and self.range == self.slide

    @property
    def uses_row_num(self) -> bool:
        """Whether evaluating the window needs arrival positions (frames: to order tuples of equal value)."""
        ties = self.form in DATA_DRIVEN and self.form is not Form.SESSION
        return self.attr.is_row_num or self.slide_on is SlideOn.ROW_NUM or ties

    @property
    def per_partition_rows(self) -> bool:
        """Row positions are counted within each PATTR partition (docs/semantics.md §2.5); data-driven windows
        order a partition's tuples by their global arrival position instead."""
        return bool(self.partition_by) and self.uses_row_num and self.form not in DATA_DRIVEN

    def spec_text(self) -> str:
        """The spec with every default filled in, as WQL that resolves back to this window."""
        if self.rule is not None:
            return self._data_driven_spec_text(self.rule)
        domain = self.attr.domain
        range_unit, slide_unit = self.units
        parts = []
        if self.form is Form.SNAPSHOT:
            parts.append("SNAPSHOT")
        elif self.range is None:
            parts.append("RANGE UNBOUNDED")
        else:
            parts.append(f"RANGE {self.amount_text(self.range, range_unit, period=True)}")
        if self.form is Form.KAFKA:
            parts.append("SLIDE KAFKA")
        elif self.form is Form.SNAPSHOT:
            pass
        elif self.slide_on is SlideOn.ATTRIBUTE:
            assert self.slide is not None
            parts.append(f"SLIDE {self.amount_text(self.slide, slide_unit)}")
            if self.form is Form.CUMULATE:
                parts.append("CUMULATE")
            if self.kafka_grid:
                parts.append("KAFKA")
        else:
            assert self.slide is not None
            parts.append(f"SLIDE {quantity_text(self.slide, Domain.ROW_NUM)}")
        name = _quoted(self.attr.name)
        if self.end_attr is not None:
            parts.append(f"WATTR ({name}, {_quoted(self.end_attr.name)})")
        elif self.slide_on is SlideOn.ATTRIBUTE:
            parts.append(f"WATTR {name}")
        else:
            parts.append(f"RATTR {name}")
            parts.append("SATTR row_num" if self.slide_on is SlideOn.ROW_NUM else f"SATTR RANK({name})")
        if self.partition_by:
            parts.append("PATTR " + ", ".join(_quoted(p) for p in self.partition_by))
        if self.align_first:
            parts.append("ALIGN FIRST" if self.origin == 0 else "ALIGN START FIRST")
        elif self.is_grid and not self.kafka_grid:
            parts.append(f"ALIGN {self.origin_text()}")
        if self.slack is not None:
            parts.append(f"SLACK {quantity_text(self.slack.amount, domain, self.slack_unit)} {self.slack.mode.upper()}")
        full = {(True, True): "FULL", (True, False): "FULL START", (False, True): "FULL END"}
        variants = (
            ("CLIP", self.clip),
            ("SNAP", self.snap),
            (full.get((self.full_start, self.full_end)), True),
            ("OWN END", self.own_end),
        )
        parts += [word for word, on in variants if on and word]
        if self.zone is not None:
            parts.append(f"TIME ZONE {format_string(self.zone)}")
        return "[" + " ".join(parts) + "]"

    def amount_text(self, amount: Number, unit: ast.Unit | None, period: bool = False) -> str:
        """RANGE (`period`) or SLIDE as WQL: in calendar units on a calendar grid, else in base units."""
        if self.calendar is not None:
            return calendar_text(int(amount), self.calendar.period if period else self.calendar.cell, unit)
        return quantity_text(amount, self.attr.domain, unit)

    def origin_text(self) -> str:
        """The grid's origin as ALIGN writes it: a local date on a calendar grid, a local time with a zone."""
        if self.calendar is not None:
            assert self.calendar.period is not None
            day = calendars.month_first_day(int(self.origin)) if self.calendar.period == "month" else int(self.origin)
            return f"TIMESTAMP '{format_date(day)}'"
        if self.zone is not None and self.attr.domain is Domain.TIMESTAMP:
            return f"TIMESTAMP '{calendars.local_text(int(self.origin), self.zone)}'"
        return origin_text(self.origin, self.attr.domain)

    def _data_driven_spec_text(self, rule: RunRule) -> str:
        domain = self.attr.domain
        first_unit, max_unit = rule.units
        if self.form is Form.SESSION:
            assert rule.gap is not None
            parts = [f"SESSION GAP {quantity_text(rule.gap, domain, first_unit)}"]
            if rule.longest is not None:
                parts[0] += f" MAX {quantity_text(rule.longest, domain, max_unit)}"
            if rule.kafka:
                parts.append("KAFKA")
        elif self.form is Form.THRESHOLD:
            parts = [f"FRAME THRESHOLD ({rule.expression_text()})"]
            if rule.minimum is not None:
                minimum = quantity_text(rule.minimum, Domain.ROW_NUM if rule.minimum_rows else domain, first_unit)
                parts[0] += f" MIN {minimum}"
        elif self.form is Form.DELTA:
            assert rule.delta is not None
            on = _quoted(rule.source.text) if isinstance(rule.source, ast.Name) else f"({rule.expression_text()})"
            parts = [f"FRAME DELTA {number_text(rule.delta)} ON {on}"]
        else:
            parts = [f"FRAME AGGREGATE ({rule.expression_text()})"]
        parts.append(f"WATTR {_quoted(self.attr.name)}")
        if self.partition_by:
            parts.append("PATTR " + ", ".join(_quoted(p) for p in self.partition_by))
        if self.slack is not None:
            parts.append(f"SLACK {quantity_text(self.slack.amount, domain, self.slack_unit)} {self.slack.mode.upper()}")
        return "[" + " ".join(parts) + "]"


def _quoted(name: str) -> str:
    return format_name(name)
