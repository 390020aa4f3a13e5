"""Landmark windows: `[RANGE UNBOUNDED SLIDE s WATTR a]` (docs/semantics.md §2.3).

Every window starts at the beginning of the stream and ends on the grid o + (w+1)·s. A tuple is in
its own window and every later one, so there are infinitely many non-empty windows: they are
reported from the first non-empty window to the one holding the largest attribute value of the
stream, taken before WHERE and across partitions and keys. With OWN END each PATTR partition's
windows run instead to the one holding the partition's own largest value.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from wql.compiler import sections
from wql.compiler.kinds.base import Extent, Member
from wql.compiler.kinds.clauses import Clauses
from wql.compiler.kinds.grid import Grid
from wql.compiler.units import Number
from wql.compiler.windows import Attribute, Form, Window
from wql.grammar import ast
from wql.grammar.errors import WQLNotSupportedError, WQLSemanticError

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section


class Landmark(Grid):
    """Windows from the beginning of the stream to each point of the grid."""

    name = "landmark"
    reach = "unbounded"  # a window holds every value before its end, up to the window holding the data's last

    def matches(self, window: Window) -> bool:
        return window.form is Form.LANDMARK and window.end_attr is None

    def describe_grid(self, window: Window, basis: str, partitioned: str) -> str:
        return f"{basis}{partitioned} landmark window"

    def extent_of(self, window: Window, a: str, end: str, o: str, where: str) -> str:
        return f"extent(w) = {{ t | {a} < {end} }},  w ≥ 0{where}"

    def cited(self, window: Window) -> tuple[Section, ...]:
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

    def grid_extents(self, window: Window, tuples: list[Member], anchor: Number | None = None) -> list[Extent]:
        """OWN END: each partition's windows up to the one holding its own largest value (before WHERE)."""
        extents = super().grid_extents(window, tuples, anchor)
        if not window.own_end:
            return extents
        assert window.slide is not None
        last: dict[tuple[object, ...], int] = {}
        for item in tuples:
            if item.a is not None:
                w = math.floor((item.a - window.origin) / window.slide)
                last[item.partition] = max(last.get(item.partition, w), w)
        return [e for e in extents if e.partition in last and e.wid <= last[e.partition]]

    def variant_note(self, window: Window) -> str:
        return ", OWN END: each partition's windows end at its own last tuple" if window.own_end else ""

    def wids_range(self, window: Window, a: str, o: str, first: str) -> str:
        if window.own_end:
            return f"wids(t) = {{ w ≥ 0 | w ≥ {first} }}  (reported up to the last window of t's partition)"
        return f"wids(t) = {{ w ≥ 0 | w ≥ {first} }}  (reported up to the last window of the data)"

    def refuse_on_stream(self, query: Query) -> None:
        """OWN END over an attribute: a partition's window exists only once that partition's data reaches it,
        which on a stream is known only from the partition's next tuple, however late it comes."""
        window = query.window
        if window.own_end and not window.attr.is_row_num:
            raise WQLNotSupportedError(
                "OWN END on a stream over an attribute: a partition's landmark window would wait for that "
                "partition's next tuple (over ROWS, each partition's count is its own punctuation, so it runs)"
            )

    def start_of(self, window: Window, lo: Number) -> Number | None:
        return None

    def kept_cells(self, query: Query, per: str, reach: str) -> str:
        return f"cells: {per}, one running state for the final windows and the cells after them"

    def kept_rows(self, query: Query, per: str, reach: str) -> str:
        return "rows: every tuple (a landmark window's aggregate without partial states needs them all)"

    def needs_every_tuple(self, query: Query) -> bool:
        """Landmark windows are reported up to the window holding the stream's last value (§2.3), which WHERE
        does not move: the plans need that value from every tuple."""
        return query.where is not None

    def every_tuple_reason(self, flag: str) -> tuple[str, ...]:
        return (
            "WHERE filters window contents, but landmark windows go on to the window holding the stream's",
            f"last value, WHERE or not: a tuple WHERE drops stays, flagged {flag} false, to say so.",
        )


def check_own_end(clauses: Clauses, clause: ast.WindowClause, form: Form, end_attr: Attribute | None) -> None:
    """OWN END: landmark windows whose partitions each end at their own last tuple; PATTR says which."""
    if form is not Form.LANDMARK:
        raise WQLSemanticError("OWN END applies to landmark windows (RANGE UNBOUNDED)", span=clause.span)
    if not clauses.partition():
        raise WQLSemanticError(
            "OWN END needs PATTR: it ends each partition's landmark windows at that partition's last tuple",
            span=clause.span,
            hint="e.g. [RANGE UNBOUNDED SLIDE 2 ROWS PATTR user_id OWN END]",
        )
    if end_attr is not None:
        raise WQLNotSupportedError("OWN END over interval events", span=clause.span)


KIND = Landmark()
