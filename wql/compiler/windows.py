"""Resolving a window spec: names, units, and documented defaults for missing clauses.

The result, `Window`, is the window in the terms of semantics.md: a kind, a
range attribute, r, s, the origin o, partition attributes and slack, all in the
attribute's base units. Every default that was filled in is recorded, so
`explain` can show the spec as the compiler understood it.

Defaults (README, "Window specs"):
- no SLIDE: tumbling, SLIDE = RANGE; no RANGE: RANGE = SLIDE.
- SLIDE in ROWS with a non-row attribute and no SATTR: SATTR row_num.
- SATTR row_num or rank(a) without SLIDE: SLIDE 1 ROW.
- no WATTR/RATTR: ROWS mean row_num; time units mean the stream's only TIMESTAMP
  column; SATTR rank(a) or SATTR a names a.
- no ALIGN: origin 0 (the epoch for timestamps).
- SLACK without a mode: CONSISTENT.
- SNAPSHOT: no RANGE, SLIDE or ALIGN; the events' endpoints cut the windows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal
from enum import Enum
from typing import Literal

from wql.compiler.schema import ROW_NUM, Domain, Stream
from wql.compiler.units import Number, origin_text, parse_date, parse_timestamp, quantity_text, to_base
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
    mode: Literal["consistent", "generous"]


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
        """Whether evaluating the window needs arrival positions."""
        return self.attr.is_row_num or self.slide_on is SlideOn.ROW_NUM

    @property
    def per_partition_rows(self) -> bool:
        """Row positions are counted within each PATTR partition (semantics.md §2)."""
        return bool(self.partition_by) and self.uses_row_num

    def spec_text(self) -> str:
        """The spec with every default filled in, as WQL that resolves back to this window."""
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
        if self.kind in {WindowKind.SLIDING, WindowKind.LANDMARK}:
            parts.append(f"ALIGN {origin_text(self.origin, domain)}")
        if self.slack is not None:
            parts.append(f"SLACK {quantity_text(self.slack.amount, domain, self.slack_unit)} {self.slack.mode.upper()}")
        parts += [word for word, on in (("CLIP", self.clip), ("SNAP", self.snap)) if on]
        return "[" + " ".join(parts) + "]"


def _quoted(name: str) -> str:
    from wql.grammar.formatter import format_name

    return format_name(name)


# ------------------------------------------------------------------ resolution


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
            return self.kafka(rng, attr, end_attr, sattr)
        if slide_on is not SlideOn.ATTRIBUTE:
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
        origin = self.origin(attr, range_value, kind)
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
        )

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
            slack=self.slack(attr),
            defaults=tuple(self.notes),
            units=(rng.quantity.unit, None),
            slack_unit=self.slack_unit(),
        )

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
        if isinstance(clause.value, str):
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
        if clause.anchor == "start":
            if range_value is None or kind is WindowKind.LANDMARK:
                raise WQLSemanticError("landmark windows have no start to align", span=clause.span)
            value = value + range_value
        if domain in {Domain.TIMESTAMP, Domain.DATE}:
            try:
                origin_text(value, domain)
            except (OverflowError, ValueError):
                raise WQLTypeError("ALIGN is outside the years 1 to 9999", span=clause.span) from None
        return value

    def slack(self, attr: Attribute) -> Slack | None:
        clause = self.get(ast.SlackClause)
        if clause is None:
            return None
        assert isinstance(clause, ast.SlackClause)
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
