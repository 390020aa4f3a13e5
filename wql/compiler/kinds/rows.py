"""Tuple-based windows: `[RANGE n ROWS SLIDE m ROWS]`, grid windows on row_num (docs/semantics.md §2.4).

Window w holds the rows numbered (w+1)·m − n … (w+1)·m − 1: the grid of §2.1 with the arrival
position as the attribute. The first windows start before the first row and the last ones run past
the last row; they hold fewer than n rows and are reported like every non-empty window. FULL START
leaves out the first ones, as TDengine's count_window does: no window starts before position 0;
FULL END the last ones, as Flink's countWindow never fires them: no window ends after the
partition's last position (before WHERE, which never renumbers rows); FULL, both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wql.compiler import sections
from wql.compiler.kinds.base import Extent, Member
from wql.compiler.kinds.clauses import Clauses
from wql.compiler.kinds.grid import Grid
from wql.compiler.units import Number
from wql.compiler.windows import Attribute, Form, Window
from wql.grammar import ast
from wql.grammar.errors import WQLSemanticError

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section


class Rows(Grid):
    """Sliding and tumbling windows over the arrival position of the whole stream."""

    name = "rows"

    def matches(self, window: Window) -> bool:
        return window.form is Form.SLIDING and window.attr.is_row_num and not window.per_partition_rows

    def cited(self, window: Window) -> tuple[Section, ...]:
        return (*self.axis(window), *self.gaps(window))

    def axis(self, window: Window) -> tuple[Section, ...]:
        return (sections.PARTITIONED if window.partition_by else sections.TUPLE_BASED,)

    def variant_note(self, window: Window) -> str:
        if window.full_start and window.full_end:
            return ", FULL: no window starts before the first row or ends after the last one"
        if window.full_start:
            return ", FULL START: no window starts before the first row (TDengine's count_window)"
        if window.full_end:
            return ", FULL END: no window ends after the last row (Flink's countWindow)"
        return ""

    def wids_range(self, window: Window, a: str, o: str, first: str) -> str:
        formula = super().wids_range(window, a, o, first)
        if window.full_start:
            formula = formula.replace(f"wids(t) = {first}", f"wids(t) = max({first}, {window.first_full})", 1)
            formula += f"  (window {window.first_full} is the first to start at or after row 0)"
        return formula

    def extent_of(self, window: Window, a: str, end: str, o: str, where: str) -> str:
        formula = super().extent_of(window, a, end, o, where)
        if window.full_start:
            formula = formula.replace(" }", f" }},  w ≥ {window.first_full}", 1)
        if window.full_end:
            last = "the partition's last position" if window.partition_by else "the last row_num"
            formula = formula.replace(" }", f" }},  {end} − 1 ≤ {last}", 1)
        return formula

    def grid_extents(self, window: Window, tuples: list[Member], anchor: Number | None = None) -> list[Extent]:
        """FULL END: only the windows whose last position the partition reaches (every tuple counts, WHERE or
        not: its position is its own either way)."""
        extents = super().grid_extents(window, tuples, anchor)
        if not window.full_end:
            return extents
        last: dict[tuple[object, ...], Number] = {}
        for item in tuples:
            if item.a is not None:
                last[item.partition] = max(last.get(item.partition, item.a), item.a)
        shift = anchor or 0
        return [e for e in extents if e.partition in last and e.end - shift - 1 <= last[e.partition]]

    def reported(self, window: Window, w: int, lo: Number, tuples: list[Member], horizon: Number | None) -> bool:
        return super().reported(window, w, lo, tuples, horizon) and not (window.full_start and lo < 0)

    def needs_every_tuple(self, query: Query) -> bool:
        """FULL END: a window ends by the partition's last position, which WHERE does not move (it never
        renumbers rows): the bucket plan needs the positions of the tuples WHERE drops too."""
        return query.window.full_end and query.where is not None

    def every_tuple_reason(self, flag: str) -> tuple[str, ...]:
        return (
            "WHERE filters window contents, but with FULL END windows end by the partition's last position,",
            f"WHERE or not: a tuple WHERE drops stays, flagged {flag} false, to say so.",
        )

    def edges(self, query: Query) -> str | None:
        """The first windows start before the first row and the last run past the last row, so they hold
        fewer than RANGE rows (semantics §2.4), and are reported all the same (FULL START: not the first)."""
        window = query.window
        assert window.range is not None and window.slide is not None
        rows, step = int(window.range), int(window.slide)
        where, whose = (" of each partition", "the partition's") if window.partition_by else ("", "the stream's")
        if window.full_start and window.full_end:
            return (
                f"FULL: every window{where} holds {rows:,} rows: none starts before {whose} first row or ends "
                "after its last"
            )
        if window.full_end:
            return (
                f"FULL END: no window{where} ends after {whose} last row (on a stream a window closes once its last "
                f"row has arrived, and a drain leaves out those the data ends inside); the first ones start before "
                f"its first row and hold fewer than {rows:,} rows"
            )
        if window.full_start:
            return (
                f"FULL START: no window{where} starts before {whose} first row; the last ones run past its last "
                f"row, hold fewer than {rows:,} rows and are reported like every non-empty window (on a stream "
                "without a drain they never close)"
            )
        if rows <= step and window.origin == 0:
            return f"the last window{where} may hold fewer than {rows:,} rows: {whose} data ends inside it"
        first = -(-rows // step) - 1  # ⌈n/m⌉ − 1 windows start before row 0, with the grid at 0
        counted = (
            f"the first {first:,} window{'s' if first != 1 else ''}" if window.origin == 0 else "the first windows"
        )
        return (
            f"{counted}{where} start before {whose} first row and the last ones run past its last row: they "
            f"hold fewer than {rows:,} rows, and are reported like every non-empty window"
        )


def check_full(clauses: Clauses, clause: ast.FullClause, attr: Attribute, form: Form, kafka: bool) -> None:
    """FULL [START | END]: count windows without the partial ones at a partition's start (TDengine's
    count_window), at its end (Flink's countWindow), or at either."""
    if not attr.is_row_num or form is not Form.SLIDING or kafka:
        what = {Form.LANDMARK: "landmark", Form.CUMULATE: "CUMULATE"}.get(form, "time or value")
        raise WQLSemanticError(
            f"FULL applies to count windows ([RANGE n ROWS SLIDE m ROWS]), not {'KAFKA' if kafka else what} ones",
            span=clause.span,
        )


KIND = Rows()
