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

from wql.compiler.kinds.base import Extent, Member
from wql.compiler.kinds.grid import Grid
from wql.compiler.units import Number
from wql.compiler.windows import WindowKind

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.codegen.common import Context
    from wql.compiler.plans.base import Candidate, Statistics
    from wql.compiler.plans.base import Grid as Cells
    from wql.compiler.plans.states import Decomposition
    from wql.compiler.sections import Section
    from wql.compiler.windows import Window


OWN_END_PANES = "OWN END: the panes' running combine runs every key to the stream's last window (not supported yet)"
OWN_LAST = "_own_last"  # OWN END: the last window of a tuple's partition


class Landmark(Grid):
    """Windows from the beginning of the stream to each point of the grid."""

    name = "landmark"

    def matches(self, window: Window) -> bool:
        return window.kind is WindowKind.LANDMARK and window.end_attr is None

    def describe_grid(self, window: Window, basis: str, partitioned: str) -> str:
        return f"{basis}{partitioned} landmark window"

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
        from wql.grammar.errors import WQLNotSupportedError

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

    # ---------------------------------------------------------------- what the grid plans need to know
    def cell_grid(self, window: Window) -> Cells:
        """Panes of one slide; window w is every pane up to w."""
        from wql.compiler.plans.base import Grid as Cells

        assert window.slide is not None
        return Cells("landmark", window.slide, 1, 1)

    def fan_out(self, window: Window, stats: Statistics) -> float:
        return max(1.0, stats.rows / stats.rows_per_slide / 2)

    def bucket_note(self, copies: float) -> str:
        return "every tuple is copied into each later window (landmark), then grouped"

    def pane_candidate(self, window: Window, grid: Cells, decomposition: Decomposition, stats: Statistics) -> Candidate:
        from wql.compiler.plans.base import Candidate, PlanName
        from wql.compiler.plans.grid import cells_candidate

        if window.own_end:
            return Candidate.refused(PlanName.PANE, OWN_END_PANES)
        note = "panes of one slide; each window is a running combine of every pane before it"
        return cells_candidate(PlanName.PANE, grid, decomposition, stats, note)

    def slice_candidate(
        self, window: Window, why_not: str | None, decomposition: Decomposition | None, stats: Statistics
    ) -> Candidate | None:
        return None  # landmark windows end on every slide: the panes are the slices

    # ---------------------------------------------------------------- code generation (the grid family)
    def flags_where(self, query: Query) -> bool:
        """Landmark windows are reported up to the window holding the stream's last value (§2.3), which WHERE
        does not move: the plans need that value from every tuple."""
        return query.where is not None

    def where_flag_comment(self, flag: str) -> tuple[str, ...]:
        return (
            "WHERE filters window contents, but landmark windows go on to the window holding the stream's",
            f"last value, WHERE or not: a tuple WHERE drops stays, flagged {flag} false, to say so.",
        )

    def start_bound(self, end: str) -> str | None:
        return None

    def tag(self, ctx: Context) -> None:
        from wql.compiler.codegen.common import ATTR, IN, flags_where
        from wql.compiler.codegen.emit import py
        from wql.compiler.codegen.grid import first_of, landmark_limit, per_partition

        code = ctx.code
        landmark_limit(ctx, f"rows.agg(({first_of(ctx, f'F.max({py(ATTR)})')})")
        if ctx.window.own_end:
            code.comment("OWN END: each partition's last window, the one holding its largest value, WHERE or not.")
            per_partition(ctx, "own_last", "_own_", f"({first_of(ctx, f'F.max({py(ATTR)})')})", OWN_LAST)
        if flags_where(ctx):
            code.comment("Only the tuples WHERE keeps count.")
            code(f"rows = rows.where({IN})")
        code.comment("Bucket (WID), landmark: a tuple belongs to its own window and every later one, up to the")
        code.comment("last window of the stream; aggregate by window-id and key.")
        code(f"first = F.greatest({first_of(ctx)}, F.lit(0))")
        code("tagged = rows.crossJoin(F.broadcast(final_window))")
        code('tagged = tagged.withColumn("wid", F.explode(F.sequence(first, F.col("_last"))))')

    def last_reached(self, ctx: Context, end: str) -> str | None:
        """Landmark windows go to the one holding the stream's largest value (over row numbers, which only grow
        and always pass the punctuation, they need no rule)."""
        from wql.compiler.codegen.grid import first_of

        return None if ctx.window.is_tuple_based else first_of(ctx, end)

    def limit_windows(self, ctx: Context) -> None:
        """OWN END: a partition's windows up to its own last window (`own_last`, from the bucket plan's tag)."""
        from wql.compiler.codegen.emit import py
        from wql.compiler.codegen.grid import limited_by_partition

        if not ctx.window.own_end:
            return
        ctx.code.comment("OWN END: each partition's windows end at the one holding its own largest value.")
        limited_by_partition(ctx, "own_last", "_own_", OWN_LAST, f'F.col("wid") <= F.col({py(OWN_LAST)})')

    def retain(self, ctx: Context, kept: str) -> None:
        from wql.compiler.codegen.common import ANCHOR, ATTR, IN, flags_where
        from wql.compiler.codegen.emit import col, py
        from wql.compiler.codegen.grid import relative_punctuation

        code = ctx.rules
        if ctx.plan.grid is not None:
            code(
                '"""Landmark panes: each key\'s panes up to the last final window fold into one (its running combine),'
            )
            code("the key's last of them, not the last final window: the panes also say where the data ends, and a")
            code("window the punctuation passed beyond the data's end comes out once the data reaches it. Later panes")
            code('stay as they are."""')
            code("if punctuation is None:")
            code("    return cells")
            relative_punctuation(ctx, ANCHOR)
            code("last_final = first_open(punctuation) - 1")
            code('folded = cells.where(F.col("_cell") <= last_final)')
            code(f'folded = folded.withColumn("_cell", F.max("_cell").over(Window.partitionBy({ctx.key_list()})))')
            code('return merge(folded.unionByName(cells.where(F.col("_cell") > last_final)))')
        elif flags_where(ctx) and ctx.window.own_end:
            code('"""A landmark window holds every tuple since the stream began: all rows WHERE keeps stay (a')
            code("holistic aggregate since the beginning needs them all); of the others, each partition's with the")
            code('largest value, which may say where its windows end (OWN END)."""')
            by = ", ".join(col(p) for p in ctx.partition_columns())
            code(f"newest = F.row_number().over(Window.partitionBy({by}).orderBy(F.col({py(ATTR)}).desc()))")
            code(f'last = rows.where(~{IN}).withColumn("_newest", newest).where(F.col("_newest") == 1)')
            code(f'return rows.where({IN}).unionByName(last.drop("_newest"))')
        elif flags_where(ctx):
            code('"""A landmark window holds every tuple since the stream began: all rows WHERE keeps stay (a')
            code("holistic aggregate since the beginning needs them all); of the others, the one with the largest")
            code('value, which may say where the data ends."""')
            code(f"last = rows.where(~{IN}).orderBy(F.col({py(ATTR)}).desc()).limit(1)")
            code(f"return rows.where({IN}).unionByName(last)")
        else:
            code('"""A landmark window holds every tuple since the stream began: all rows stay (a holistic aggregate')
            code('since the beginning needs them all)."""')
            code("return rows")

    def missed(self, ctx: Context, closed: str, generous: bool) -> str:
        from wql.compiler.codegen.emit import py
        from wql.compiler.codegen.grid import first_of, missed_none

        first = f"F.greatest({first_of(ctx, 't')}, F.lit(0))"
        if not generous:
            return f'F.format_string("windows %d and every later one", {first})'
        ctx.rules(f"first, last = {first}, {closed}")
        nothing = missed_none(generous)
        return f'F.when(first <= last, F.format_string("windows %d to %d", first, last)).otherwise({py(nothing)})'


KIND = Landmark()
