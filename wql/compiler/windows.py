"""Resolving a window spec: names, units, and documented defaults for missing clauses.

The result, `Window`, is the window in the terms of docs/semantics.md: a kind, a
range attribute, r, s, the origin o, partition attributes and slack, all in the
attribute's base units. Every default that was filled in is recorded, so
`explain` can show the spec as the compiler understood it.

Defaults (docs/language.md §5.9):
- no SLIDE: tumbling, SLIDE = RANGE; no RANGE: RANGE = SLIDE.
- SLIDE in ROWS with a non-row attribute and no SATTR: SATTR row_num.
- SATTR row_num or rank(a) without SLIDE: SLIDE 1 ROW.
- no WATTR/RATTR: ROWS mean row_num; time units mean the stream's only TIMESTAMP
  column; SATTR rank(a) or SATTR a names a.
- no ALIGN: origin 0 (the epoch for timestamps).
- SLACK without a mode: CONSISTENT.
- SNAPSHOT: no RANGE, SLIDE or ALIGN; the events' endpoints cut the windows.
- SESSION/FRAME without WATTR: a GAP (or MIN) in time units means the stream's only
  TIMESTAMP column, in ROWS row_num; a FRAME with neither, the only TIMESTAMP column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from enum import Enum
from typing import Literal

from sqlglot import exp

from wql.compiler.schema import ROW_NUM, Domain, Stream
from wql.compiler.units import Number, number_text, origin_text, parse_date, parse_timestamp, quantity_text, to_base
from wql.grammar import ast
from wql.grammar.errors import (
    Span,
    WQLNameError,
    WQLNotSupportedError,
    WQLSemanticError,
    WQLTypeError,
    did_you_mean,
)


class WindowKind(Enum):
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
DATA_DRIVEN = frozenset({WindowKind.SESSION, WindowKind.THRESHOLD, WindowKind.DELTA, WindowKind.AGGREGATE})


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
class Frame:
    """What a session or frame needs beyond its attribute and partitions (semantics.md §2).

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


@dataclass(frozen=True)
class Window:
    kind: WindowKind
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
    frame: Frame | None = None  # sessions and frames (DATA_DRIVEN kinds)

    @property
    def is_data_driven(self) -> bool:
        return self.kind in DATA_DRIVEN

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
        return self.kind in {WindowKind.SLIDING, WindowKind.LANDMARK, WindowKind.CUMULATE}

    @property
    def windows_per_period(self) -> int:
        """CUMULATE: RANGE / SLIDE, the windows of each period (the last one is the whole period)."""
        assert self.kind is WindowKind.CUMULATE and self.range is not None and self.slide is not None
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
        return self.kind is WindowKind.SNAPSHOT

    @property
    def is_tuple_based(self) -> bool:
        return self.attr.is_row_num

    @property
    def is_tumbling(self) -> bool:
        return self.kind is WindowKind.SLIDING and self.range == self.slide

    @property
    def uses_row_num(self) -> bool:
        """Whether evaluating the window needs arrival positions (frames: to order tuples of equal value)."""
        ties = self.kind in DATA_DRIVEN and self.kind is not WindowKind.SESSION
        return self.attr.is_row_num or self.slide_on is SlideOn.ROW_NUM or ties

    @property
    def per_partition_rows(self) -> bool:
        """Row positions are counted within each PATTR partition (docs/semantics.md §2.5); data-driven windows
        order a partition's tuples by their global arrival position instead."""
        return bool(self.partition_by) and self.uses_row_num and self.kind not in DATA_DRIVEN

    def spec_text(self) -> str:
        """The spec with every default filled in, as WQL that resolves back to this window."""
        if self.frame is not None:
            return self._data_driven_spec_text(self.frame)
        domain = self.attr.domain
        range_unit, slide_unit = self.units
        parts = []
        if self.kind is WindowKind.SNAPSHOT:
            parts.append("SNAPSHOT")
        elif self.range is None:
            parts.append("RANGE UNBOUNDED")
        else:
            parts.append(f"RANGE {quantity_text(self.range, domain, range_unit)}")
        if self.kind is WindowKind.KAFKA:
            parts.append("SLIDE KAFKA")
        elif self.kind is WindowKind.SNAPSHOT:
            pass
        elif self.slide_on is SlideOn.ATTRIBUTE:
            assert self.slide is not None
            parts.append(f"SLIDE {quantity_text(self.slide, domain, slide_unit)}")
            if self.kind is WindowKind.CUMULATE:
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
            parts.append(f"ALIGN {origin_text(self.origin, domain)}")
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
        return "[" + " ".join(parts) + "]"

    def _data_driven_spec_text(self, frame: Frame) -> str:
        domain = self.attr.domain
        first_unit, max_unit = frame.units
        if self.kind is WindowKind.SESSION:
            assert frame.gap is not None
            parts = [f"SESSION GAP {quantity_text(frame.gap, domain, first_unit)}"]
            if frame.longest is not None:
                parts[0] += f" MAX {quantity_text(frame.longest, domain, max_unit)}"
            if frame.kafka:
                parts.append("KAFKA")
        elif self.kind is WindowKind.THRESHOLD:
            parts = [f"FRAME THRESHOLD ({frame.expression_text()})"]
            if frame.minimum is not None:
                minimum = quantity_text(frame.minimum, Domain.ROW_NUM if frame.minimum_rows else domain, first_unit)
                parts[0] += f" MIN {minimum}"
        elif self.kind is WindowKind.DELTA:
            assert frame.delta is not None
            on = _quoted(frame.source.text) if isinstance(frame.source, ast.Name) else f"({frame.expression_text()})"
            parts = [f"FRAME DELTA {number_text(frame.delta)} ON {on}"]
        else:
            parts = [f"FRAME AGGREGATE ({frame.expression_text()})"]
        parts.append(f"WATTR {_quoted(self.attr.name)}")
        if self.partition_by:
            parts.append("PATTR " + ", ".join(_quoted(p) for p in self.partition_by))
        if self.slack is not None:
            parts.append(f"SLACK {quantity_text(self.slack.amount, domain, self.slack_unit)} {self.slack.mode.upper()}")
        return "[" + " ".join(parts) + "]"


def _quoted(name: str) -> str:
    from wql.grammar.formatter import format_name

    return format_name(name)


# ------------------------------------------------------------------ FRAME AGGREGATE conditions

_COMPARISONS: dict[type, Comparison] = {
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.EQ: "=",
    exp.NEQ: "<>",
}
_MIRRORED: dict[Comparison, Comparison] = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<>": "<>"}
_RUNNING = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
_CONDITION_HINT = (
    "a FRAME AGGREGATE condition compares count, sum, avg, min or max of the frame with a number, "
    "e.g. (sum(v) > 100); AND, OR and NOT combine such comparisons"
)


def aggregate_test(
    tree: exp.Expression,
    source: ast.Expr,
    span_of: Callable[[exp.Expression], Span],
    type_of: Callable[[str], str | None],
) -> tuple[tuple[RunningAggregate, ...], Test]:
    """A FRAME AGGREGATE condition (resolved) as running aggregates and a test over them.

    Only aggregates whose running value over a growing frame is a fixed-size state
    are allowed (count, sum, avg, min, max: distributive or algebraic), each compared
    with a number; AND, OR, NOT and parentheses combine comparisons. Anything else is
    refused with the position of the offending part.
    """
    from wql.grammar.expressions import render_sql

    running: list[RunningAggregate] = []

    def aggregate(node: exp.Expression) -> int | None:
        function = _RUNNING.get(type(node))
        if function is None:
            return None
        argument = node.this
        if isinstance(argument, exp.Distinct):
            raise WQLNotSupportedError(
                f"{render_sql(node)} in a FRAME AGGREGATE condition: a distinct count has no running state",
                span=span_of(node),
                hint=_CONDITION_HINT,
            )
        arg = None if isinstance(argument, exp.Star) else render_sql(argument)
        if function == "count" and arg is not None:
            arg_type = type_of(arg)
            integral = True
        elif arg is not None:
            arg_type = type_of(arg)
            if arg_type not in {"TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE"}:
                raise WQLTypeError(
                    f"{render_sql(node)} in a FRAME AGGREGATE condition needs a number, "
                    f"and '{arg}' is {arg_type or 'of a type WQL cannot tell'}",
                    span=span_of(node),
                    hint="aggregate an INT, BIGINT or DOUBLE column",
                )
            integral = arg_type in {"TINYINT", "SMALLINT", "INT", "BIGINT"} and function != "avg"
        else:
            integral = True
        item = RunningAggregate(function, arg, render_sql(node), integral)  # type: ignore[arg-type]
        if item not in running:
            running.append(item)
        return running.index(item)

    def number(node: exp.Expression) -> int | float | None:
        negative = False
        while isinstance(node, exp.Paren | exp.Neg):
            negative ^= isinstance(node, exp.Neg)
            node = node.this
        if not isinstance(node, exp.Literal) or node.is_string:
            return None
        from decimal import Decimal, InvalidOperation

        try:
            value = Decimal(node.this)
        except InvalidOperation:
            return None
        if not value.is_finite():
            return None
        value = -value if negative else value
        return int(value) if value == value.to_integral_value() and abs(value) < 2**63 else float(value)

    def walk(node: exp.Expression) -> Test:
        if isinstance(node, exp.Paren):
            return walk(node.this)
        if isinstance(node, exp.And | exp.Or):
            return ("and" if isinstance(node, exp.And) else "or", walk(node.left), walk(node.right))
        if isinstance(node, exp.Not):
            return ("not", walk(node.this))
        op = _COMPARISONS.get(type(node))
        if op is not None:
            left, right = node.left, node.right
            index, value = aggregate(_unparen(left)), number(right)
            if index is None:
                index, value, op = aggregate(_unparen(right)), number(left), _MIRRORED[op]
            if index is not None and value is not None:
                return ("compare", op, index, value)
        raise WQLNotSupportedError(
            f"'{render_sql(node)}' as a FRAME AGGREGATE condition",
            span=span_of(node),
            hint=_CONDITION_HINT,
        )

    test = walk(tree)
    if not running:
        raise WQLSemanticError("a FRAME AGGREGATE condition needs an aggregate", span=source.span, hint=_CONDITION_HINT)
    return tuple(running), test


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


# ------------------------------------------------------------------ resolution


# Clauses that shape grid and tuple windows and have no meaning for sessions and frames.
_NOT_DATA_DRIVEN: dict[type, str] = {
    ast.RangeClause: "RANGE",
    ast.SlideClause: "SLIDE",
    ast.RattrClause: "RATTR",
    ast.SattrClause: "SATTR",
    ast.AlignClause: "ALIGN",
    ast.CumulateClause: "CUMULATE",
    ast.FullClause: "FULL",
    ast.OwnEndClause: "OWN END",
    ast.SnapshotClause: "SNAPSHOT",
    ast.ClipClause: "CLIP",
    ast.SnapClause: "SNAP",
}


def resolve_window(spec: ast.WindowSpec | None, stream: Stream, at: Span | None = None) -> Window:
    """Check a window spec against a stream and fill in the defaults."""
    if spec is None:
        raise WQLSemanticError(
            f"no window on stream '{stream.name}'",
            span=at,
            hint=f"name one in brackets after the stream: FROM {stream.name} [RANGE 5 MINUTES SLIDE 1 MINUTE]",
        )
    return _Resolver(spec, stream).resolve()


class _Resolver:
    def __init__(self, spec: ast.WindowSpec, stream: Stream) -> None:
        self.spec = spec
        self.stream = stream
        self.notes: list[str] = []
        self.clauses: dict[type, ast.WindowClause] = {}
        for clause in spec.clauses:
            kind = type(clause)
            if kind in self.clauses:
                word = kind.__name__.removesuffix("Clause").upper()
                raise WQLSemanticError(f"{word} is given twice", span=clause.span)
            self.clauses[kind] = clause

    def get(self, kind: type) -> ast.WindowClause | None:
        return self.clauses.get(kind)

    # attributes ------------------------------------------------------------
    def attribute(self, name: ast.Name, *, interval: bool = False) -> Attribute:
        if name.key == ROW_NUM:
            return Attribute(ROW_NUM, Domain.ROW_NUM)
        column = self.stream.column(name.text)
        if column is None:
            candidates = [*self.stream.column_names, ROW_NUM]
            raise WQLNameError(
                f"unknown column '{name.text}' in stream '{self.stream.name}'",
                span=name.span,
                hint=did_you_mean(name.text, candidates) or f"columns are: {', '.join(candidates)}",
            )
        if self.stream.row_num is not None and column.name == self.stream.row_num:
            return Attribute(ROW_NUM, Domain.ROW_NUM)
        if column.domain is Domain.OTHER:
            raise WQLTypeError(
                f"'{column.name}' is {column.type}, which cannot order windows",
                span=name.span,
                hint="a window attribute is a TIMESTAMP, DATE, number or row_num",
            )
        if column.domain is Domain.DECIMAL:
            if not interval:
                raise WQLNotSupportedError(
                    f"windows over DECIMAL attributes ('{column.name}') other than interval events",
                    span=name.span,
                    hint="declare the column as DOUBLE or BIGINT, or give events an end: WATTR (start, end)",
                )
            return Attribute(column.name, column.domain, _decimal_scale(column.type))
        return Attribute(column.name, column.domain)

    def infer_attribute(self, quantity: ast.Quantity | None) -> Attribute:
        unit = quantity.unit if quantity else None
        where = quantity.span if quantity else self.spec.span
        if unit is ast.Unit.ROWS:
            self.notes.append("WATTR row_num (ROWS without an attribute count arrivals)")
            return Attribute(ROW_NUM, Domain.ROW_NUM)
        if unit is None:
            raise WQLTypeError(
                "which attribute does the window range over?",
                span=where,
                hint="name it with WATTR (e.g. WATTR milepost), or give a unit (ROWS, SECONDS, …)",
            )
        stamps = [c for c in self.stream.columns if c.domain is Domain.TIMESTAMP]
        if not stamps and unit.micros % 86_400_000_000 == 0:
            stamps = [c for c in self.stream.columns if c.domain is Domain.DATE]
        if len(stamps) == 1:
            self.notes.append(f"WATTR {stamps[0].name} (the stream's only {stamps[0].type} column)")
            return Attribute(stamps[0].name, stamps[0].domain)
        if not stamps:
            raise WQLTypeError(
                f"time units need a TIMESTAMP attribute, and stream '{self.stream.name}' has none",
                span=where,
                hint="count rows instead (RANGE n ROWS), or declare a TIMESTAMP column",
            )
        raise WQLTypeError(
            f"stream '{self.stream.name}' has several TIMESTAMP columns ({', '.join(c.name for c in stamps)})",
            span=where,
            hint=f"say which one with WATTR, e.g. WATTR {stamps[0].name}",
        )

    # the whole spec ------------------------------------------------------------
    def resolve(self) -> Window:
        if self.get(ast.SessionClause) is not None or self.get(ast.FrameClause) is not None:
            return self.data_driven()
        rng = self.get(ast.RangeClause)
        slide = self.get(ast.SlideClause)
        wattr = self.get(ast.WattrClause)
        rattr = self.get(ast.RattrClause)
        sattr = self.get(ast.SattrClause)
        assert rng is None or isinstance(rng, ast.RangeClause)
        assert slide is None or isinstance(slide, ast.SlideClause)
        assert wattr is None or isinstance(wattr, ast.WattrClause)
        assert rattr is None or isinstance(rattr, ast.RattrClause)
        assert sattr is None or isinstance(sattr, ast.SattrClause)

        if wattr is not None and rattr is not None:
            raise WQLSemanticError(
                "WATTR already names the range attribute",
                span=rattr.span,
                hint="use WATTR a for both range and slide, or RATTR a with SATTR b",
            )
        if wattr is not None and sattr is not None:
            raise WQLSemanticError(
                "WATTR already names the slide attribute",
                span=sattr.span,
                hint="use RATTR a with SATTR b to range and slide on different attributes",
            )
        snapshot = self.get(ast.SnapshotClause)
        if snapshot is not None:
            return self.snapshot(snapshot, wattr)
        if rng is None and slide is None:
            raise WQLSemanticError(
                "the window has no RANGE or SLIDE",
                span=self.spec.span,
                hint="e.g. [RANGE 5 MINUTES SLIDE 1 MINUTE], or [RANGE 100 ROWS]",
            )
        kafka = slide is not None and slide.quantity is None
        unbounded = rng is not None and rng.quantity is None
        if unbounded and slide is None:
            assert rng is not None
            raise WQLSemanticError(
                "a landmark window (RANGE UNBOUNDED) needs SLIDE: how often to report",
                span=rng.span,
                hint="e.g. [RANGE UNBOUNDED SLIDE 1 HOUR]",
            )

        # range attribute (and interval end) ------------------------------------
        end_attr = None
        if wattr is not None:
            attr = self.attribute(wattr.attrs[0], interval=len(wattr.attrs) == 2)
            if len(wattr.attrs) == 2:
                end_attr = self.interval_end(wattr, attr)
        elif rattr is not None:
            attr = self.attribute(rattr.attr)
        elif sattr is not None and sattr.attr.key != ROW_NUM:
            attr = self.attribute(sattr.attr)
            self.notes.append(f"RATTR {attr.name} (from SATTR)")
        else:
            first = rng.quantity if rng is not None and rng.quantity is not None else None
            if first is None and slide is not None and slide.quantity is not None:
                first = slide.quantity
            attr = self.infer_attribute(first)

        # slide attribute -------------------------------------------------------------
        slide_on = SlideOn.ATTRIBUTE
        if sattr is not None:
            if sattr.rank:
                if sattr.attr.key != attr.name.lower():
                    raise WQLSemanticError(
                        f"SATTR rank({sattr.attr.text}) must rank the range attribute '{attr.name}'",
                        span=sattr.span,
                        hint=f"write SATTR rank({attr.name})",
                    )
                slide_on = SlideOn.ATTRIBUTE if attr.is_row_num else SlideOn.RANK
            elif sattr.attr.key == ROW_NUM:
                slide_on = SlideOn.ATTRIBUTE if attr.is_row_num else SlideOn.ROW_NUM
            elif sattr.attr.key != attr.name.lower():
                raise WQLSemanticError(
                    f"SATTR {sattr.attr.text} differs from the range attribute '{attr.name}'",
                    span=sattr.span,
                    hint="a window can slide on its own attribute, on row_num or on rank(attr)",
                )
        elif (
            slide is not None
            and slide.quantity is not None
            and slide.quantity.unit is ast.Unit.ROWS
            and not attr.is_row_num
        ):
            slide_on = SlideOn.ROW_NUM
            self.notes.append("SATTR row_num (SLIDE in ROWS over a non-row attribute)")

        if kafka:
            self.reject_variants("SLIDE KAFKA windows are placed at the records")
            return self.kafka(rng, attr, end_attr, sattr)
        if slide_on is not SlideOn.ATTRIBUTE:
            self.reject_variants("windows that slide by rows are named by their last tuple, so they have no grid")
            return self.by_tuple(rng, slide, attr, slide_on, end_attr)
        one_row = sattr is not None and slide is None and attr.is_row_num and (sattr.rank or sattr.attr.key == ROW_NUM)
        return self.grid(rng, slide, attr, end_attr, unbounded, one_row)

    def interval_end(self, wattr: ast.WattrClause, start: Attribute) -> Attribute:
        end = self.attribute(wattr.attrs[1], interval=True)
        if start.is_row_num or end.is_row_num:
            raise WQLTypeError("interval events need two columns, not row_num", span=wattr.span)
        if start.domain is not end.domain or start.name == end.name:
            start_type = self.stream.require(start.name, None).type
            end_type = self.stream.require(end.name, None).type
            message = (
                f"an interval needs two attributes of one type: "
                f"'{start.name}' is {start_type}, '{end.name}' is {end_type}"
                if start.name != end.name
                else "an interval needs two different attributes"
            )
            raise WQLTypeError(message, span=wattr.span)
        return end

    def snapshot(self, clause: ast.SnapshotClause, wattr: ast.WattrClause | None) -> Window:
        """SNAPSHOT WATTR (start, end): windows between consecutive endpoints of the partition's events."""
        if wattr is None or len(wattr.attrs) != 2:
            raise WQLSemanticError(
                "snapshot windows need interval events: name their start and end",
                span=(wattr or clause).span,
                hint="e.g. [SNAPSHOT WATTR (started, ended) PATTR caller]",
            )
        for kind, why in (
            (ast.RangeClause, "RANGE"),
            (ast.SlideClause, "SLIDE"),
            (ast.AlignClause, "ALIGN"),
            (ast.CumulateClause, "CUMULATE"),
            (ast.KafkaClause, "KAFKA"),
            (ast.FullClause, "FULL"),
            (ast.OwnEndClause, "OWN END"),
        ):
            found = self.get(kind)
            if found is not None:
                raise WQLSemanticError(
                    f"{why} does not apply to SNAPSHOT: the events' starts and ends cut the windows",
                    span=found.span,
                )
        self.reject_variant(ast.SnapClause, "snapshot windows already change only where their events do")
        attr = self.attribute(wattr.attrs[0], interval=True)
        end_attr = self.interval_end(wattr, attr)
        attr, end_attr = _scaled(attr, end_attr, ())
        return Window(
            kind=WindowKind.SNAPSHOT,
            attr=attr,
            end_attr=end_attr,
            range=None,
            slide=None,
            partition_by=self.partition(),
            origin=Decimal(0) if attr.domain is Domain.DECIMAL else 0,
            slack=self.slack(attr),
            defaults=tuple(self.notes),
            slack_unit=self.slack_unit(),
            clip=self.get(ast.ClipClause) is not None,
        )

    def variants(self, kind: WindowKind, end_attr: Attribute | None) -> dict[str, bool]:
        """CLIP and SNAP, StreamInsight's variants of windows over interval events (sliding or tumbling)."""
        found: dict[str, bool] = {}
        for clause_type, name in ((ast.ClipClause, "clip"), (ast.SnapClause, "snap")):
            clause = self.get(clause_type)
            found[name] = clause is not None
            if clause is None:
                continue
            word = name.upper()
            if end_attr is None:
                raise WQLSemanticError(
                    f"{word} applies to interval events: name their start and end with WATTR (start, end)",
                    span=clause.span,
                )
            if kind is WindowKind.LANDMARK and name == "snap":
                raise WQLNotSupportedError("SNAP on landmark windows", span=clause.span)
        if found["clip"] and found["snap"]:
            clause = self.get(ast.SnapClause)
            assert clause is not None
            raise WQLSemanticError(
                "SNAP merges windows that hold the same events, but CLIP gives each window its own clipped events",
                span=clause.span,
                hint="drop one of them",
            )
        return found

    def reject_variant(self, kind: type, why: str) -> None:
        clause = self.get(kind)
        if clause is not None:
            word = kind.__name__.removesuffix("Clause").upper()
            raise WQLSemanticError(f"{word} does not apply: {why}", span=clause.span)

    # kinds -----------------------------------------------------------------------------
    def grid(
        self,
        rng: ast.RangeClause | None,
        slide: ast.SlideClause | None,
        attr: Attribute,
        end_attr: Attribute | None,
        unbounded: bool,
        one_row: bool = False,
    ) -> Window:
        domain = attr.domain
        range_value: Number | None = None
        range_unit = slide_unit = None
        if rng is not None and rng.quantity is not None:
            range_value = to_base(rng.quantity, domain, attr.name, "RANGE")
            range_unit = rng.quantity.unit
        if slide is not None and slide.quantity is not None:
            slide_value = to_base(slide.quantity, domain, attr.name, "SLIDE")
            slide_unit = slide.quantity.unit
        elif one_row:
            slide_value, slide_unit = 1, ast.Unit.ROWS
            self.notes.append("SLIDE 1 ROW (SATTR without SLIDE)")
        else:
            assert range_value is not None
            slide_value = range_value
            slide_unit = range_unit
            self.notes.append("SLIDE = RANGE (tumbling: no SLIDE given)")
        if range_value is None and not unbounded:
            range_value = slide_value
            range_unit = slide_unit
            self.notes.append("RANGE = SLIDE (tumbling: no RANGE given)")
        kind = WindowKind.LANDMARK if unbounded else WindowKind.SLIDING
        cumulate = self.get(ast.CumulateClause)
        if cumulate is not None:
            kind = WindowKind.CUMULATE
            self.check_cumulate(cumulate, slide, attr, end_attr, range_value, slide_value, unbounded)
        kafka = self.get(ast.KafkaClause)
        if kafka is not None:
            self.check_kafka_grid(kafka, attr, end_attr, range_value, slide_value, kind)
            origin = range_value % slide_value  # window starts on k·SLIDE: ends on the grid RANGE mod SLIDE
        else:
            origin = self.origin(attr, range_value, kind)
        if kind is WindowKind.CUMULATE and attr.domain is Domain.FLOAT and not float(origin).is_integer():
            raise WQLNotSupportedError(
                "CUMULATE over a DOUBLE attribute with a fractional ALIGN (edges are exact for whole numbers)",
                span=self.spec.span,
            )
        align = self.get(ast.AlignClause)
        align_first = isinstance(align, ast.AlignClause) and align.first
        if align_first:
            self.check_align_first(align, end_attr, kind)  # type: ignore[arg-type]
        full = self.get(ast.FullClause)
        if isinstance(full, ast.FullClause):
            self.check_full(full, attr, kind, kafka is not None)
        own_end = self.get(ast.OwnEndClause)
        if own_end is not None:
            self.check_own_end(own_end, kind, end_attr)
        if end_attr is not None and attr.domain is Domain.DECIMAL:
            attr, end_attr = _scaled(attr, end_attr, (range_value, slide_value, origin))
        return Window(
            kind=kind,
            attr=attr,
            end_attr=end_attr,
            range=range_value,
            slide=slide_value,
            partition_by=self.partition(),
            origin=origin,
            slack=self.slack(attr),
            defaults=tuple(self.notes),
            units=(range_unit, slide_unit),
            slack_unit=self.slack_unit(),
            **self.variants(kind, end_attr),
            kafka_grid=kafka is not None,
            align_first=align_first,
            full_start=isinstance(full, ast.FullClause) and full.end != "end",
            full_end=isinstance(full, ast.FullClause) and full.end != "start",
            own_end=own_end is not None,
        )

    # variants of grid windows -------------------------------------------------------------
    def check_cumulate(
        self,
        clause: ast.WindowClause,
        slide: ast.SlideClause | None,
        attr: Attribute,
        end_attr: Attribute | None,
        range_value: Number | None,
        slide_value: Number,
        unbounded: bool,
    ) -> None:
        """CUMULATE needs a period (RANGE) that is a whole number of steps (SLIDE), as Flink's does."""
        if unbounded or range_value is None:
            raise WQLSemanticError(
                "CUMULATE needs a bounded RANGE, the period its windows grow over",
                span=clause.span,
                hint="RANGE UNBOUNDED is already a landmark window that cumulates forever",
            )
        if slide is None or slide.quantity is None:
            raise WQLSemanticError(
                "CUMULATE needs SLIDE: the step its windows grow by",
                span=clause.span,
                hint="e.g. [RANGE 1 DAY SLIDE 1 HOUR CUMULATE]",
            )
        if slide_value > range_value or range_value % slide_value != 0:
            raise WQLSemanticError(
                "CUMULATE needs a RANGE that is a whole number of SLIDEs: each period ends with its last window",
                span=slide.quantity.span,
            )
        if end_attr is not None:
            raise WQLNotSupportedError("CUMULATE windows over interval events", span=clause.span)
        if attr.domain is Domain.FLOAT and not all(float(v).is_integer() for v in (range_value, slide_value)):
            raise WQLNotSupportedError(
                "CUMULATE over a DOUBLE attribute with fractional RANGE or SLIDE (edges are exact for whole numbers)",
                span=clause.span,
            )

    def check_kafka_grid(
        self,
        clause: ast.WindowClause,
        attr: Attribute,
        end_attr: Attribute | None,
        range_value: Number | None,
        slide_value: Number,
        kind: WindowKind,
    ) -> None:
        """Kafka's TimeWindows: a size and an advance in (0, size], whole milliseconds, on the epoch grid."""
        if kind is not WindowKind.SLIDING or range_value is None:
            what = "landmark" if kind is WindowKind.LANDMARK else "CUMULATE"
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
        self.reject_align("Kafka's windows start on the epoch-aligned grid k·SLIDE")

    def check_align_first(self, clause: ast.AlignClause, end_attr: Attribute | None, kind: WindowKind) -> None:
        """ALIGN FIRST with PATTR gives each partition its own grid; landmark windows and interval events report
        up to the stream's last value, which the plans place on one grid only."""
        if not self.partition():
            return
        if kind is WindowKind.LANDMARK or end_attr is not None:
            what = "landmark windows" if kind is WindowKind.LANDMARK else "interval events"
            raise WQLNotSupportedError(
                f"ALIGN FIRST with PATTR for {what} (each partition's grid would end at the stream's last window)",
                span=clause.span,
                hint="drop PATTR (GROUP BY keeps one grid for the whole stream), or ALIGN to a value",
            )

    def check_full(self, clause: ast.FullClause, attr: Attribute, kind: WindowKind, kafka: bool) -> None:
        """FULL [START | END]: count windows without the partial ones at a partition's start (TDengine's
        count_window), at its end (Flink's countWindow), or at either."""
        if not attr.is_row_num or kind is not WindowKind.SLIDING or kafka:
            what = {WindowKind.LANDMARK: "landmark", WindowKind.CUMULATE: "CUMULATE"}.get(kind, "time or value")
            raise WQLSemanticError(
                f"FULL applies to count windows ([RANGE n ROWS SLIDE m ROWS]), not {'KAFKA' if kafka else what} ones",
                span=clause.span,
            )

    def check_own_end(self, clause: ast.WindowClause, kind: WindowKind, end_attr: Attribute | None) -> None:
        """OWN END: landmark windows whose partitions each end at their own last tuple; PATTR says which."""
        if kind is not WindowKind.LANDMARK:
            raise WQLSemanticError("OWN END applies to landmark windows (RANGE UNBOUNDED)", span=clause.span)
        if not self.partition():
            raise WQLSemanticError(
                "OWN END needs PATTR: it ends each partition's landmark windows at that partition's last tuple",
                span=clause.span,
                hint="e.g. [RANGE UNBOUNDED SLIDE 2 ROWS PATTR user_id OWN END]",
            )
        if end_attr is not None:
            raise WQLNotSupportedError("OWN END over interval events", span=clause.span)

    def reject_variants(self, why: str) -> None:
        full = self.get(ast.FullClause)
        if full is not None:
            raise WQLSemanticError(f"FULL applies to count windows with SLIDE in ROWS: {why}", span=full.span)
        for kind, word in ((ast.CumulateClause, "CUMULATE"), (ast.KafkaClause, "KAFKA")):
            clause = self.get(kind)
            if clause is not None:
                raise WQLSemanticError(f"{word} applies to grid windows: {why}", span=clause.span)
        align = self.get(ast.AlignClause)
        if isinstance(align, ast.AlignClause) and align.first:
            raise WQLSemanticError(f"ALIGN FIRST applies to grid windows: {why}", span=align.span)

    def by_tuple(
        self,
        rng: ast.RangeClause | None,
        slide: ast.SlideClause | None,
        attr: Attribute,
        slide_on: SlideOn,
        end_attr: Attribute | None,
    ) -> Window:
        if end_attr is not None:
            raise WQLSemanticError("interval events slide on their own attribute, not on rows", span=self.spec.span)
        if rng is None or rng.quantity is None:
            raise WQLSemanticError(
                "a window that slides by rows needs a bounded RANGE",
                span=(rng or self.spec).span,
                hint=f"e.g. [RANGE 5 MINUTES RATTR {attr.name} SLIDE 1 ROW]",
            )
        range_value = to_base(rng.quantity, attr.domain, attr.name, "RANGE")
        if slide is None:
            rows = 1
            self.notes.append("SLIDE 1 ROW (SATTR without SLIDE)")
        else:
            assert slide.quantity is not None
            if slide.quantity.unit not in (None, ast.Unit.ROWS):
                raise WQLTypeError(
                    f"SLIDE over {slide_on.value} counts rows, not time",
                    span=slide.quantity.span,
                    hint="write SLIDE n ROWS",
                )
            rows = int(to_base(slide.quantity, Domain.ROW_NUM, ROW_NUM, "SLIDE"))
        self.reject_align("windows that slide by rows are named by their last tuple, so they have no grid")
        self.variants(WindowKind.SLIDE_BY_TUPLE, None)
        kind = WindowKind.SLIDE_BY_TUPLE if slide_on is SlideOn.ROW_NUM else WindowKind.SLIDE_BY_RANK
        return Window(
            kind=kind,
            attr=attr,
            range=range_value,
            slide=rows,
            slide_on=slide_on,
            partition_by=self.partition(),
            slack=self.slack(attr),
            defaults=tuple(self.notes),
            units=(rng.quantity.unit, ast.Unit.ROWS),
            slack_unit=self.slack_unit(),
        )

    def kafka(
        self,
        rng: ast.RangeClause | None,
        attr: Attribute,
        end_attr: Attribute | None,
        sattr: ast.SattrClause | None,
    ) -> Window:
        if end_attr is not None or attr.is_row_num or attr.domain not in {Domain.TIMESTAMP, Domain.INTEGER}:
            raise WQLTypeError(
                "SLIDE KAFKA windows need a TIMESTAMP or integer attribute, as Kafka's record timestamps are",
                span=self.spec.span,
            )
        if sattr is not None:
            raise WQLSemanticError("SLIDE KAFKA places its own windows; drop SATTR", span=sattr.span)
        if rng is None or rng.quantity is None:
            raise WQLSemanticError(
                "SLIDE KAFKA needs RANGE: the windows' time difference",
                span=(rng or self.spec).span,
                hint="e.g. [RANGE 10 SECONDS WATTR ts SLIDE KAFKA]",
            )
        self.reject_align("Kafka sliding windows are placed at the records, so they have no grid")
        self.variants(WindowKind.KAFKA, None)
        return Window(
            kind=WindowKind.KAFKA,
            attr=attr,
            range=to_base(rng.quantity, attr.domain, attr.name, "RANGE"),
            slide=None,
            partition_by=self.partition(),
            slack=self.slack(attr, kafka=True),
            defaults=tuple(self.notes),
            units=(rng.quantity.unit, None),
            slack_unit=self.slack_unit(),
        )

    # data-driven windows: sessions and frames -------------------------------------------
    def data_driven(self) -> Window:
        session = self.get(ast.SessionClause)
        frame = self.get(ast.FrameClause)
        assert session is None or isinstance(session, ast.SessionClause)
        assert frame is None or isinstance(frame, ast.FrameClause)
        what = "a session" if session is not None else f"a {frame.kind} frame" if frame is not None else ""
        if session is not None and frame is not None:
            raise WQLSemanticError(
                "a window is a SESSION or a FRAME, not both", span=frame.span, hint="query each in its own SELECT"
            )
        for kind, word in _NOT_DATA_DRIVEN.items():
            clause = self.get(kind)
            if clause is not None:
                raise WQLSemanticError(
                    f"{word} does not apply to {what}: the data decides where its windows start and end",
                    span=clause.span,
                    hint=f"drop {word}",
                )
        kafka = self.get(ast.KafkaClause)
        if kafka is not None and session is None:
            raise WQLSemanticError("KAFKA applies to sessions (Kafka's [first, last] sessions)", span=kafka.span)
        attr = self.order_attribute(session, frame)
        domain = attr.domain
        clause = session or frame
        assert clause is not None
        if session is not None:
            gap = to_base(session.gap, domain, attr.name, "GAP", allow_negative=True)
            if gap < 0:
                raise WQLTypeError("GAP must not be negative", span=session.gap.span)
            longest = None
            if session.max is not None:
                longest = to_base(session.max, domain, attr.name, "MAX")
            details = Frame(
                gap=gap,
                longest=longest,
                kafka=kafka is not None,
                units=(session.gap.unit, session.max.unit if session.max else None),
            )
            kind = WindowKind.SESSION
        else:
            assert frame is not None
            details, kind = self.frame_details(frame, attr)
        return Window(
            kind=kind,
            attr=attr,
            range=None,
            slide=None,
            partition_by=self.partition(),
            slack=self.slack(attr),
            defaults=tuple(self.notes),
            slack_unit=self.slack_unit(),
            frame=details,
        )

    def order_attribute(self, session: ast.SessionClause | None, frame: ast.FrameClause | None) -> Attribute:
        """The attribute that orders the tuples: WATTR, or the default the GAP/MIN unit implies."""
        wattr = self.get(ast.WattrClause)
        if wattr is not None:
            assert isinstance(wattr, ast.WattrClause)
            if len(wattr.attrs) == 2:
                raise WQLNotSupportedError(
                    "sessions and frames over interval events (WATTR (start, end))",
                    span=wattr.span,
                    hint="order the tuples by one attribute, e.g. WATTR start",
                )
            return self.attribute(wattr.attrs[0])
        if session is not None:
            return self.infer_attribute(session.gap)
        assert frame is not None
        minimum = frame.minimum
        if minimum is not None and minimum.unit is not None and minimum.unit is not ast.Unit.ROWS:
            return self.infer_attribute(minimum)
        stamps = [c for c in self.stream.columns if c.domain is Domain.TIMESTAMP]
        if len(stamps) == 1:
            self.notes.append(f"WATTR {stamps[0].name} (the stream's only TIMESTAMP column orders the frames)")
            return Attribute(stamps[0].name, stamps[0].domain)
        raise WQLSemanticError(
            "which attribute orders the tuples of these frames?",
            span=frame.span,
            hint="name it with WATTR: a TIMESTAMP, a number, or row_num for arrival order",
        )

    def frame_details(self, frame: ast.FrameClause, attr: Attribute) -> tuple[Frame, WindowKind]:
        if frame.kind == "threshold":
            minimum, rows = None, False
            if frame.minimum is not None:
                if frame.minimum.unit is ast.Unit.ROWS:
                    minimum = to_base(frame.minimum, Domain.ROW_NUM, ROW_NUM, "MIN")
                    rows = True
                else:
                    minimum = to_base(frame.minimum, attr.domain, attr.name, "MIN")
            unit = frame.minimum.unit if frame.minimum is not None else None
            return (
                Frame(minimum=minimum, minimum_rows=rows, source=frame.condition, units=(unit, None)),
                WindowKind.THRESHOLD,
            )
        if frame.kind == "delta":
            assert frame.delta is not None
            delta = frame.delta
            if delta.unit is not None:
                raise WQLTypeError(
                    "DELTA is in the units of the attribute after ON: drop the unit",
                    span=delta.span,
                    hint=f"e.g. FRAME DELTA {format(delta.value, 'f')} ON speed",
                )
            if not delta.value.is_finite() or delta.value < 0 or delta.value.adjusted() > 18:
                raise WQLTypeError("DELTA must be a number ≥ 0", span=delta.span)
            value: Number = int(delta.value) if delta.value == delta.value.to_integral_value() else float(delta.value)
            return Frame(delta=value, source=frame.on), WindowKind.DELTA
        return Frame(source=frame.condition), WindowKind.AGGREGATE

    # shared clauses ---------------------------------------------------------------------
    def partition(self) -> tuple[str, ...]:
        clause = self.get(ast.PattrClause)
        if clause is None:
            return ()
        assert isinstance(clause, ast.PattrClause)
        names: list[str] = []
        for name in clause.attrs:
            if name.key == ROW_NUM:
                raise WQLSemanticError("row_num cannot partition a stream: every row has its own", span=name.span)
            column = self.stream.require(name.text, name.span)
            if column.name in names:
                raise WQLSemanticError(f"PATTR names '{column.name}' twice", span=name.span)
            names.append(column.name)
        return tuple(names)

    def origin(self, attr: Attribute, range_value: Number | None, kind: WindowKind) -> Number:
        clause = self.get(ast.AlignClause)
        if clause is None:
            return 0.0 if attr.domain is Domain.FLOAT else Decimal(0) if attr.domain is Domain.DECIMAL else 0
        assert isinstance(clause, ast.AlignClause)
        domain = attr.domain
        value: Number
        if clause.value is None:  # ALIGN [START] FIRST: an offset from the first tuple's value
            value = 0.0 if domain is Domain.FLOAT else 0
        elif isinstance(clause.value, str):
            if domain not in {Domain.TIMESTAMP, Domain.DATE}:
                raise WQLTypeError(
                    f"ALIGN takes a number here: '{attr.name}' is not a timestamp",
                    span=clause.span,
                )
            try:
                if domain is Domain.TIMESTAMP:
                    value = parse_timestamp(clause.value)
                else:
                    value = parse_date(clause.value.split(" ")[0].split("T")[0])
            except ValueError:
                raise WQLTypeError(
                    f"ALIGN '{clause.value}' is not a timestamp",
                    span=clause.span,
                    hint="write ALIGN TIMESTAMP 'YYYY-MM-DD HH:MM:SS' (UTC unless it names a zone)",
                ) from None
        else:
            value = to_base(clause.value, domain, attr.name, "ALIGN", allow_negative=True)
        if clause.anchor == "start" and kind is WindowKind.CUMULATE:
            pass  # a CUMULATE period starts where the previous one ends: START and END name one grid
        elif clause.anchor == "start":
            if range_value is None or kind is WindowKind.LANDMARK:
                raise WQLSemanticError("landmark windows have no start to align", span=clause.span)
            value = value + range_value
        if domain in {Domain.TIMESTAMP, Domain.DATE}:
            try:
                origin_text(value, domain)
            except (OverflowError, ValueError):
                raise WQLTypeError("ALIGN is outside the years 1 to 9999", span=clause.span) from None
        return value

    def slack(self, attr: Attribute, kafka: bool = False) -> Slack | None:
        """SLACK and its mode; `kafka`: the window is Kafka's sliding window, the only one whose late records
        Kafka's rule places."""
        clause = self.get(ast.SlackClause)
        if clause is None:
            return None
        assert isinstance(clause, ast.SlackClause)
        if clause.mode == "kafka" and not kafka:
            raise WQLSemanticError(
                "SLACK … KAFKA is Kafka's late-record rule for its sliding windows: it needs SLIDE KAFKA",
                span=clause.span,
                hint="use CONSISTENT or GENEROUS here",
            )
        if attr.is_row_num:
            raise WQLSemanticError(
                "row_num arrives in order by definition: SLACK has nothing to bound", span=clause.span
            )
        amount = to_base(clause.quantity, attr.domain, attr.name, "SLACK", allow_negative=True)
        if amount < 0:
            raise WQLTypeError("SLACK must not be negative", span=clause.quantity.span)
        if clause.mode is None:
            self.notes.append("SLACK … CONSISTENT (no mode given)")
        return Slack(amount, clause.mode or "consistent")

    def slack_unit(self) -> ast.Unit | None:
        clause = self.get(ast.SlackClause)
        return clause.quantity.unit if isinstance(clause, ast.SlackClause) else None

    def reject_align(self, why: str) -> None:
        clause = self.get(ast.AlignClause)
        if clause is not None:
            raise WQLSemanticError(f"ALIGN does not apply: {why}", span=clause.span)


def _decimal_scale(type_name: str) -> int:
    """The scale of DECIMAL(p, s); Spark's bare DECIMAL is DECIMAL(10, 0)."""
    inside = type_name.partition("(")[2].rstrip(")")
    parts = [p.strip() for p in inside.split(",")] if inside else []
    return int(parts[1]) if len(parts) == 2 else 0


def _scaled(attr: Attribute, end: Attribute, values: tuple[Number | None, ...]) -> tuple[Attribute, Attribute]:
    """DECIMAL interval attributes share one scale: the finest of their columns and of the spec's numbers.

    Generated code then compares scaled integers (value · 10^scale), exactly, as for BIGINT attributes.
    """
    if attr.domain is not Domain.DECIMAL:
        return attr, end
    scale = max(attr.scale, end.scale)
    for value in values:
        if isinstance(value, Decimal):
            exponent = value.normalize().as_tuple().exponent
            if isinstance(exponent, int):
                scale = max(scale, -exponent)
    return replace(attr, scale=scale), replace(end, scale=scale)
