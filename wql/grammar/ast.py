"""The syntax tree of WQL scripts.

Nodes are frozen dataclasses. Each carries the span it was parsed from, and the
span is excluded from equality, so `parse(format(tree)) == tree` holds even though
the formatted text puts things at other offsets. Expressions keep sqlglot's tree
for analysis, but compare by their canonical Spark SQL text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum
from typing import Literal

from sqlglot import exp

from wql.grammar.errors import Span

NO_SPAN = Span(0, 0, 1, 1, 1, 1)


@dataclass(frozen=True, kw_only=True)
class Node:
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class Name(Node):
    """An identifier as written (without backticks). Resolution is case-insensitive, as in Spark."""

    text: str

    @property
    def key(self) -> str:
        return self.text.lower()


class Unit(Enum):
    """Units of RANGE/SLIDE/SLACK/ALIGN quantities; the value is the length in microseconds."""

    ROWS = 0
    MICROSECONDS = 1
    MILLISECONDS = 1_000
    SECONDS = 1_000_000
    MINUTES = 60_000_000
    HOURS = 3_600_000_000
    DAYS = 86_400_000_000
    WEEKS = 604_800_000_000
    # Calendar units: a number of months (28 to 31 days each), so no fixed length; negative to tell them apart.
    MONTHS = -1
    QUARTERS = -3
    YEARS = -12

    @property
    def is_time(self) -> bool:
        return self is not Unit.ROWS

    @property
    def is_calendar(self) -> bool:
        """A month, quarter or year: as long as the calendar says, not a fixed number of microseconds."""
        return self.value < 0

    @property
    def months(self) -> int:
        assert self.is_calendar, self
        return -self.value

    @property
    def micros(self) -> int:
        assert not self.is_calendar, f"{self.name} has no fixed length"
        return self.value

    @staticmethod
    def parse(word: str) -> Unit:
        upper = word.upper()
        return Unit[upper if upper.endswith("S") else upper + "S"]

    def spelled(self, amount: Decimal) -> str:
        """The unit word for an amount, singular for exactly one ('1 MINUTE', '5 MINUTES')."""
        word = self.name
        return word[:-1] if amount == 1 else word


@dataclass(frozen=True, kw_only=True)
class Quantity(Node):
    value: Decimal
    unit: Unit | None = None


@dataclass(frozen=True, kw_only=True)
class Expr(Node):
    """A Spark SQL expression; `sql` is sqlglot's canonical rendering, `tree` its parse."""

    sql: str
    tree: exp.Expression = field(compare=False, repr=False, hash=False)
    text: str = field(default="", compare=False, repr=False)  # as written, for positions inside it


# ------------------------------------------------------------------ CREATE STREAM


@dataclass(frozen=True, kw_only=True)
class TypeName(Node):
    name: str  # upper-case canonical spelling, e.g. BIGINT
    params: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ColumnDef(Node):
    name: Name
    type: TypeName


OptionValue = str | Decimal | bool


@dataclass(frozen=True, kw_only=True)
class Option(Node):
    key: str
    value: OptionValue


@dataclass(frozen=True, kw_only=True)
class CreateStream(Node):
    name: Name
    columns: tuple[ColumnDef, ...]  # empty for FROM TABLE without a column list: the table's columns
    path: str | None = None
    table: tuple[Name, ...] = ()  # FROM TABLE: the table's name, its parts (catalog, database, table)
    format: str | None = None
    options: tuple[Option, ...] = ()
    row_num: Name | None = None
    punctuation: Expr | None = None  # PUNCTUATION WHEN (…): rows that are punctuations, not data
    path_span: Span | None = field(default=None, compare=False, repr=False)  # the FROM clause


# ------------------------------------------------------------------ window spec


@dataclass(frozen=True, kw_only=True)
class RangeClause(Node):
    quantity: Quantity | None  # None: RANGE UNBOUNDED (landmark)


@dataclass(frozen=True, kw_only=True)
class SlideClause(Node):
    quantity: Quantity | None  # None: SLIDE KAFKA (Kafka Streams sliding windows)


@dataclass(frozen=True, kw_only=True)
class WattrClause(Node):
    attrs: tuple[Name, ...]  # one attribute, or (start, end) for interval events


@dataclass(frozen=True, kw_only=True)
class RattrClause(Node):
    attr: Name


@dataclass(frozen=True, kw_only=True)
class SattrClause(Node):
    attr: Name
    rank: bool = False  # SATTR rank(attr)


@dataclass(frozen=True, kw_only=True)
class PattrClause(Node):
    attrs: tuple[Name, ...]


@dataclass(frozen=True, kw_only=True)
class AlignClause(Node):
    value: Quantity | str | None  # a number/duration, or a timestamp literal's text; None: ALIGN FIRST
    anchor: Literal["end", "start"] = "end"

    @property
    def first(self) -> bool:
        """ALIGN [START] FIRST: the grid's origin is the first arriving tuple's value (per PATTR partition)."""
        return self.value is None


@dataclass(frozen=True, kw_only=True)
class SlackClause(Node):
    quantity: Quantity
    mode: Literal["consistent", "generous", "kafka"] | None = None


@dataclass(frozen=True, kw_only=True)
class SnapshotClause(Node):
    """SNAPSHOT: interval events' snapshot windows, one between each pair of consecutive endpoints."""


@dataclass(frozen=True, kw_only=True)
class ClipClause(Node):
    """CLIP: aggregates see each interval event's lifetime clipped to the window (StreamInsight)."""


@dataclass(frozen=True, kw_only=True)
class SnapClause(Node):
    """SNAP: one row per run of consecutive windows holding the same events (StreamInsight's snap to boundaries)."""


@dataclass(frozen=True, kw_only=True)
class SessionClause(Node):
    """SESSION GAP g [MAX m]: sessions of tuples at most g apart, optionally at most m long."""

    gap: Quantity
    max: Quantity | None = None


@dataclass(frozen=True, kw_only=True)
class FrameClause(Node):
    """FRAME THRESHOLD (p) [MIN n], FRAME DELTA d ON x, FRAME AGGREGATE (c): data-driven frames."""

    rule: Literal["threshold", "delta", "aggregate"]
    condition: Expr | None = None  # THRESHOLD's predicate, AGGREGATE's condition
    minimum: Quantity | None = None  # THRESHOLD … MIN n [ROWS | unit]
    delta: Quantity | None = None  # DELTA d
    on: Name | Expr | None = None  # DELTA … ON x (a column, or an expression in parentheses)


@dataclass(frozen=True, kw_only=True)
class CumulateClause(Node):
    """CUMULATE: windows grow by SLIDE from the start of each period of RANGE, then start again (Flink's CUMULATE)."""


@dataclass(frozen=True, kw_only=True)
class KafkaClause(Node):
    """KAFKA after a window: Kafka Streams' variant of it (after a grid window: TimeWindows, epoch-aligned,
    no window starting before 0; after SESSION: Kafka's [first, last] sessions)."""


@dataclass(frozen=True, kw_only=True)
class FullClause(Node):
    """FULL [START | END] after count windows: only windows that start at or after a partition's first row
    (START), or end at or before its last row (END); FULL alone, both."""

    end: Literal["start", "end"] | None = None


@dataclass(frozen=True, kw_only=True)
class TimeZoneClause(Node):
    """TIME ZONE 'Area/City': the calendar days, weeks, months, quarters and years are counted in."""

    zone: str


@dataclass(frozen=True, kw_only=True)
class OwnEndClause(Node):
    """OWN END after landmark windows with PATTR: each partition's windows run to its own last tuple."""


WindowClause = (
    RangeClause
    | SlideClause
    | WattrClause
    | RattrClause
    | SattrClause
    | PattrClause
    | AlignClause
    | SlackClause
    | SnapshotClause
    | ClipClause
    | SnapClause
    | SessionClause
    | FrameClause
    | CumulateClause
    | KafkaClause
    | FullClause
    | OwnEndClause
    | TimeZoneClause
)


@dataclass(frozen=True, kw_only=True)
class WindowSpec(Node):
    clauses: tuple[WindowClause, ...]


# ------------------------------------------------------------------ SELECT


@dataclass(frozen=True, kw_only=True)
class SelectItem(Node):
    expr: Expr
    alias: Name | None = None


@dataclass(frozen=True, kw_only=True)
class OrderItem(Node):
    expr: Expr
    descending: bool = False
    nulls: Literal["first", "last"] | None = None


@dataclass(frozen=True, kw_only=True)
class Select(Node):
    items: tuple[SelectItem, ...]
    stream: Name
    window: WindowSpec | None = None
    where: Expr | None = None
    group_by: tuple[Expr, ...] = ()
    having: Expr | None = None
    order_by: tuple[OrderItem, ...] = ()
    limit: int | None = None
    emit_empty: bool = False
    emit: Literal["final", "changes"] | None = None  # None: not given (FINAL on a stream)


@dataclass(frozen=True, kw_only=True)
class Explain(Node):
    select: Select


Statement = CreateStream | Select | Explain


@dataclass(frozen=True, kw_only=True)
class Script(Node):
    statements: tuple[Statement, ...]
