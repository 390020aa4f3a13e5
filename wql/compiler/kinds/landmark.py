"""Landmark windows: `[RANGE UNBOUNDED SLIDE s WATTR a]` (docs/semantics.md §2.3).

Every window starts at the beginning of the stream and ends on the grid o + (w+1)·s. A tuple is in
its own window and every later one, so there are infinitely many non-empty windows: they are
reported from the first non-empty window to the one holding the largest attribute value of the
stream, taken before WHERE and across partitions and keys.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from wql.compiler.kinds.base import Member
from wql.compiler.kinds.grid import Grid
from wql.compiler.units import Number
from wql.compiler.windows import WindowKind

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section
    from wql.compiler.windows import Window


class Landmark(Grid):
    """Windows from the beginning of the stream to each point of the grid."""

    name = "landmark"

    def matches(self, window: Window) -> bool:
        return window.kind is WindowKind.LANDMARK and window.end_attr is None

    def describe_grid(self, window: Window, basis: str, partitioned: str) -> str:
        return f"{basis}{partitioned} landmark window"

    def wids_range(self, window: Window, a: str, o: str, first: str) -> str:
        return f"wids(t) = {{ w ≥ 0 | w ≥ {first} }}  (reported up to the last window of the data)"

    def extent_of(self, window: Window, a: str, end: str, o: str, where: str) -> str:
        return f"extent(w) = {{ t | {a} < {end} }},  w ≥ 0{where}"

    def cited(self, window: Window) -> tuple[Section, ...]:
        from wql.compiler import sections

        if not window.is_tuple_based:
            return (sections.LANDMARK,)
        return (sections.LANDMARK, sections.PARTITIONED if window.partition_by else sections.TUPLE_BASED)

    def bounds(self, window: Window, w: int) -> tuple[Number, Number]:
        assert window.slide is not None
        return -math.inf, window.origin + (w + 1) * window.slide

    def reported(self, window: Window, w: int, lo: Number, tuples: list[Member], horizon: Number | None) -> bool:
        """From window 0 to the window holding the stream's largest value (before WHERE, every partition)."""
        assert window.slide is not None
        return not (w < 0 or horizon is None or w > math.floor((horizon - window.origin) / window.slide))

    def start_of(self, window: Window, lo: Number) -> Number | None:
        return None

    def kept_cells(self, query: Query, per: str, reach: str) -> str:
        return f"cells: {per}, one running state for the final windows and the cells after them"

    def kept_rows(self, query: Query, per: str, reach: str) -> str:
        return "rows: every tuple (a landmark window's aggregate without partial states needs them all)"


KIND = Landmark()
