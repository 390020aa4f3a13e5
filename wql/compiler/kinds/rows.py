"""Tuple-based windows: `[RANGE n ROWS SLIDE m ROWS]`, grid windows on row_num (docs/semantics.md §2.4).

Window w holds the rows numbered (w+1)·m − n … (w+1)·m − 1: the grid of §2.1 with the arrival
position as the attribute. The first windows start before the first row and the last ones run past
the last row; they hold fewer than n rows and are reported like every non-empty window. FULL START
leaves out the first ones, as TDengine's count_window does: no window starts before position 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wql.compiler.kinds.base import Member
from wql.compiler.kinds.grid import Grid
from wql.compiler.units import Number
from wql.compiler.windows import WindowKind

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.codegen.common import Context
    from wql.compiler.sections import Section
    from wql.compiler.windows import Window


def first_full(window: Window) -> int:
    """FULL START: the first window that starts at or after position 0, the least w with o + (w+1)·m − n ≥ 0."""
    assert window.range is not None and window.slide is not None
    return -(-(int(window.range) - int(window.origin)) // int(window.slide)) - 1


class Rows(Grid):
    """Sliding and tumbling windows over the arrival position of the whole stream."""

    name = "rows"

    def matches(self, window: Window) -> bool:
        return window.kind is WindowKind.SLIDING and window.attr.is_row_num and not window.per_partition_rows

    def cited(self, window: Window) -> tuple[Section, ...]:
        return (*self.axis(window), *self.gaps(window))

    def axis(self, window: Window) -> tuple[Section, ...]:
        from wql.compiler import sections

        return (sections.PARTITIONED if window.partition_by else sections.TUPLE_BASED,)

    def variant_note(self, window: Window) -> str:
        if window.full_start:
            return ", FULL START: no window starts before the first row (TDengine's count_window)"
        return ""

    def wids_range(self, window: Window, a: str, o: str, first: str) -> str:
        formula = super().wids_range(window, a, o, first)
        if window.full_start:
            formula = formula.replace(f"wids(t) = {first}", f"wids(t) = max({first}, {first_full(window)})", 1)
            formula += f"  (window {first_full(window)} is the first to start at or after row 0)"
        return formula

    def extent_of(self, window: Window, a: str, end: str, o: str, where: str) -> str:
        formula = super().extent_of(window, a, end, o, where)
        if window.full_start:
            formula = formula.replace(" }", f" }},  w ≥ {first_full(window)}", 1)
        return formula

    def reported(self, window: Window, w: int, lo: Number, tuples: list[Member], horizon: Number | None) -> bool:
        return super().reported(window, w, lo, tuples, horizon) and not (window.full_start and lo < 0)

    def declare(self, ctx: Context) -> None:
        super().declare(ctx)
        if ctx.window.full_start:
            ctx.constant(
                "FIRST_FULL", first_full(ctx.window), "FULL START: the first window to start at row 0 or after"
            )

    def limit_windows(self, ctx: Context) -> None:
        """FULL START: the windows before FIRST_FULL start before row 0, so they do not exist."""
        if ctx.window.full_start:
            ctx.code.comment(
                "FULL START: windows that start before the first row (those before FIRST_FULL) do not exist."
            )
            ctx.code('windows = windows.where(F.col("wid") >= FIRST_FULL)')

    def edges(self, query: Query) -> str | None:
        """The first windows start before the first row and the last run past the last row, so they hold
        fewer than RANGE rows (semantics §2.4), and are reported all the same (FULL START: not the first)."""
        window = query.window
        assert window.range is not None and window.slide is not None
        rows, step = int(window.range), int(window.slide)
        where, whose = (" of each partition", "the partition's") if window.partition_by else ("", "the stream's")
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


KIND = Rows()
