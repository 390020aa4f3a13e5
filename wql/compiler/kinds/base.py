"""What every window kind answers, and the terms the reference evaluator's extents are written in.

A kind (one module of this package each) is what makes a window what it is: how its spec resolves,
its window-ids, extent and wids (the formulas `explain` prints and the extents the reference
evaluator computes), its class, and its rules on a stream (when a window is final, what a trigger
keeps, what a late tuple missed). It describes itself to the planner through its shape
(`wql.compiler.kinds.shapes`), whose type names the plan family that computes it. A kind imports
nothing from the plans or the code generators. Code outside the kinds asks the kind of a window
(`wql.compiler.kinds.kind_of`) instead of matching on the window's shape.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from sqlglot import exp

from wql.compiler.classes import Classification
from wql.compiler.kinds.shapes import Shape
from wql.compiler.schema import Domain
from wql.compiler.sections import Section
from wql.compiler.units import (
    EPOCH_DATE,
    Number,
    format_date,
    format_timestamp,
    number_text,
    quantity_text,
    short_text,
)
from wql.compiler.windows import Window

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.grammar import ast
    from wql.grammar.errors import Span

_EPOCH = datetime(1970, 1, 1)


# ------------------------------------------------------------------ the reference evaluator's terms


@dataclass
class Member:
    """A tuple as the reference evaluator sees it: its row and the values the window spec reads."""

    row: Mapping[str, Any]
    row_num: int  # arrival position (or the stream's ROW_NUM column)
    a: Number | None  # window attribute value, base units (per-partition rank for FCF windows)
    end: Number | None = None  # interval end; None also for open-ended
    open_ended: bool = False
    partition: tuple[Any, ...] = ()
    passes: bool = True  # WHERE holds
    # A stream's late tuple, given only to place ALIGN FIRST's grid (the first arrival, late or not): in no
    # window, and not part of the data admitted, so it does not move the data's end either.
    shaping_only: bool = False
    slide_pos: int = 0  # position that decides slide-by-n membership (row_num or rank)
    group: tuple[Any, ...] = field(default=())


@dataclass
class Extent:
    """One window: its id, bounds (in the attribute's type), partition and members (WHERE not applied)."""

    wid: Any
    start: Any  # window_start, in the attribute's type (None: unbounded)
    end: Any  # window_end
    partition: tuple[Any, ...]
    members: list[Member]
    order: tuple[Any, ...] = ()
    closer: Member | None = None  # a frame's closing tuple, once there is one (see the frames kind's `final`)


class Expressions(Protocol):
    """What the analysis lends a kind to resolve the expressions inside its window spec (a frame's predicate,
    x or condition) against the stream, with the same names, functions and errors as the rest of a query."""

    def resolve(self, expr: ast.Expr, context: str, *, allow_aggregates: bool) -> exp.Expression:
        """The expression checked and its columns in canonical case; `context` names it in errors."""
        ...

    def column(self, name: ast.Name) -> str:
        """A bare column of the stream, as Spark SQL (an unknown one: a positioned error)."""
        ...

    def type_of(self, sql: str) -> str | None:
        """The Spark type of resolved SQL over the stream (None: WQL cannot tell)."""
        ...

    def span_of(self, node: exp.Expression, source: ast.Expr) -> Span:
        """Where a node of a resolved expression is in the source."""
        ...


class Sql(Protocol):
    """Spark SQL over plain Python rows, as the reference evaluator has it (wql.runtime.sqleval)."""

    def evaluate(self, sql: str, row: Mapping[str, Any]) -> Any: ...

    def aggregate(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> Any: ...


def from_base(value: Number | None, domain: Domain) -> Any:
    """Base units back to the attribute's Python type (naive UTC datetimes for timestamps)."""
    if value is None:
        return None
    if domain is Domain.TIMESTAMP:
        return _EPOCH + timedelta(microseconds=int(value))
    if domain is Domain.DATE:
        return EPOCH_DATE + timedelta(days=int(value))
    if domain is Domain.ROW_NUM:
        return int(value)
    return value


def partitions(tuples: Iterable[Member]) -> list[list[Member]]:
    """The tuples by PATTR partition, each in the order given."""
    groups: dict[tuple[Any, ...], list[Member]] = {}
    for item in tuples:
        groups.setdefault(item.partition, []).append(item)
    return list(groups.values())


# ------------------------------------------------------------------ words shared by the formulas


def amount(value: Number, domain: Domain) -> str:
    """A quantity for formulas; zero is just 0, in any unit."""
    return short_text(value, domain) if value else "0"


def scope(window: Window) -> str:
    """`, per p, q` with PATTR, else nothing."""
    return f", per {', '.join(window.partition_by)}" if window.partition_by else ""


def same_partition(window: Window) -> str:
    """` ∧ u.p = t.p` for each PATTR attribute: u ranges over t's partition."""
    return "".join(f" ∧ u.{p} = t.{p}" for p in window.partition_by)


def origin_text(window: Window) -> str:
    """The grid's origin o as a formula shows it."""
    domain = window.attr.domain
    if window.align_first:
        offset = "" if window.origin == 0 else f" + {short_text(window.origin, domain)}"
        return f"f{offset}, f = the first arrival's {window.attr.name}{scope(window)}"
    if domain is Domain.TIMESTAMP:
        return format_timestamp(int(window.origin))
    if domain is Domain.DATE:
        return format_date(int(window.origin))
    return number_text(window.origin)


def has_origin(window: Window) -> bool:
    return window.origin != 0 or window.align_first


def basis(window: Window) -> str:
    """tuple-based, time-based or value-based, by the window attribute."""
    attr = window.attr
    if attr.is_row_num:
        return "tuple-based"
    return "time-based" if attr.domain in {Domain.TIMESTAMP, Domain.DATE} else "value-based"


def partitioned(window: Window) -> str:
    return " partitioned" if window.partition_by else ""


# ------------------------------------------------------------------ a kind


class Kind:
    """One kind of window. Subclasses say what differs; the defaults are those of most kinds."""

    name: ClassVar[str]
    noun: ClassVar[str] = "window"  # what a window of this kind is called in words: session, frame, …
    data_driven: ClassVar[bool] = False  # the tuples themselves decide where a window ends (§2.16, §2.17)
    retracts: ClassVar[bool] = False  # EMIT CHANGES takes back a version whose window stops existing (§8.7)
    edged: ClassVar[bool] = False  # windows can start before the data or end after it (drawn dashed)

    def matches(self, window: Window) -> bool:
        raise NotImplementedError

    def shape(self, window: Window) -> Shape:
        """What the plans need to know of its windows; the shape's type names the family that computes them."""
        raise NotImplementedError

    # ---------------------------------------------------------------- explain
    def classify(self, window: Window) -> Classification:
        raise NotImplementedError

    def describe(self, window: Window) -> str:
        """A one-line name for the window, as a user would say it."""
        raise NotImplementedError

    def wids(self, window: Window) -> str:
        raise NotImplementedError

    def extent(self, window: Window) -> str:
        raise NotImplementedError

    def cited(self, window: Window) -> tuple[Section, ...]:
        """The docs sections that define this kind of window (explain cites them)."""
        return ()

    def edges(self, query: Query) -> str | None:
        """Which windows are partial at the data's edges, in words (None: nothing to say)."""
        return None

    def facts(self, window: Window) -> dict[str, Any]:
        """The window as explain's `window` object shows it."""
        domain = window.attr.domain
        range_unit, _ = window.units
        return {
            "spec": window.spec_text(),
            "kind": window.form.value,
            "range": self.range_text(window),
            "slide": self.slide_text(window),
            "range_attribute": window.attr.name
            if window.end_attr is None
            else f"({window.attr.name}, {window.end_attr.name})",
            "slide_attribute": self.slide_attribute(window),
            "partition_by": list(window.partition_by),
            "slack": None
            if window.slack is None
            else {"amount": quantity_text(window.slack.amount, domain, range_unit), "mode": window.slack.mode},
            "defaults": list(window.defaults),
            **({"variant": "clip" if window.clip else "snap"} if window.clip or window.snap else {}),
        }

    def range_text(self, window: Window) -> str:
        if window.range is None:
            return "UNBOUNDED"
        return quantity_text(window.range, window.attr.domain, window.units[0])

    def slide_text(self, window: Window) -> str:
        assert window.slide is not None
        return quantity_text(window.slide, window.attr.domain, window.units[1])

    def slide_attribute(self, window: Window) -> str | None:
        return window.attr.name

    # ---------------------------------------------------------------- the reference evaluator
    def extents(self, window: Window, tuples: list[Member], sql: Sql) -> list[Extent]:
        """Every window over the tuples, with its members (WHERE not applied): straight from `extent`."""
        raise NotImplementedError

    def filters_first(self, window: Window) -> bool:
        """Whether WHERE filters records before windows are placed (Kafka's DSL), not window contents."""
        return False

    def resolve_expressions(self, window: Window, expressions: Expressions) -> Window:
        """The window with the expressions inside its spec resolved against the stream (frames have them)."""
        return window

    def bounds(self, window: Window, w: int) -> tuple[Number, Number]:
        """[lo, hi) of window w, for kinds on a grid, whose windows are named by their place on it."""
        raise TypeError(f"{self.name} windows are not named by their place on a grid")

    def candidates(self, window: Window, values: list[Number]) -> range:
        """For kinds on a grid: the window-ids tuples at these values can be in, and some on either side."""
        raise TypeError(f"{self.name} windows are not named by their place on a grid")

    def final(self, window: Window, extent: Extent, point: Number) -> bool:
        """Whether the punctuation at `point` makes a session or frame final (§8.4): the reference's rule for
        windows whose end the data decides; the others' ends are known up front (final_text)."""
        raise TypeError(f"{self.name} windows end where their spec says; final_text says when")

    # ---------------------------------------------------------------- on a stream
    def final_text(self, window: Window) -> str:
        """When one of its windows is final (§8.4), in words."""
        return "a window [start, end) once the punctuation reaches end"

    def kept_text(self, query: Query, cells: bool) -> str:
        """What a stream keeps between triggers, its open windows' cells (`cells`) or its rows, and what
        bounds it (§8.9)."""
        reach = "(RANGE + SLACK)" if query.window.slack is not None else "RANGE"
        return f"rows: the tuples the open windows can still hold, within {reach} of the newest"

    def late_text(self, query: Query, name: str) -> str | None:
        """What a late tuple does, where this kind differs from a grid window (None: it does not)."""
        return None

    def changes_text(self, query: Query) -> str | None:
        """What EMIT CHANGES emits each trigger, where this kind differs from a grid window (None: it does not)."""
        return None

    def refuse_on_stream(self, query: Query) -> None:
        """Raise WQLNotSupportedError, with the reason, for what a stream cannot run exactly yet."""

    # ---------------------------------------------------------------- what WHERE leaves
    def needs_every_tuple(self, query: Query) -> bool:
        """Whether the windows need the tuples WHERE drops: WHERE filters window contents, but a window that
        ends where the data does (a landmark window) takes that end from every tuple, WHERE or not."""
        return False

    def every_tuple_reason(self, flag: str) -> tuple[str, ...]:
        """Why the tuples WHERE drops stay (where needs_every_tuple holds), for the prepare stage, which keeps
        them flagged `flag` false."""
        return (f"WHERE filters window contents, but the windows need every tuple: one WHERE drops has {flag} false.",)

    def cuts_from_windows(self, query: Query) -> bool:
        """Whether a stream's kept tuples follow from the windows a trigger computes (see the sessions kind)."""
        return False


def nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
