"""Tuple-based windows: `[RANGE n ROWS SLIDE m ROWS]`, grid windows on row_num (docs/semantics.md §2.4).

Window w holds the rows numbered (w+1)·m − n … (w+1)·m − 1: the grid of §2.1 with the arrival
position as the attribute. The first windows start before the first row and the last ones run past
the last row; they hold fewer than n rows and are reported like every non-empty window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wql.compiler.kinds.grid import Grid
from wql.compiler.windows import WindowKind

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section
    from wql.compiler.windows import Window


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

    def edges(self, query: Query) -> str | None:
        """The first windows start before the first row and the last run past the last row, so they hold
        fewer than RANGE rows (semantics §2.4), and are reported all the same."""
        window = query.window
        assert window.range is not None and window.slide is not None
        rows, step = int(window.range), int(window.slide)
        where, whose = (" of each partition", "the partition's") if window.partition_by else ("", "the stream's")
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
