"""CUMULATE windows: `[RANGE r SLIDE s CUMULATE WATTR a]`, Flink's CUMULATE (docs/semantics.md §2.13).

The axis is cut into periods of length r on the grid o + j·r; inside each, the windows grow by s
from the period's start, m = r/s of them, the last one the whole period. Window w ends at
o + (w+1)·s, like a sliding window, and starts at its period's start, o + ⌊w/m⌋·r.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wql.compiler.kinds.grid import Grid
from wql.compiler.units import Number, short_text
from wql.compiler.windows import WindowKind

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.codegen.common import Context
    from wql.compiler.plans.base import Candidate, Statistics
    from wql.compiler.plans.base import Grid as Cells
    from wql.compiler.plans.states import Decomposition
    from wql.compiler.sections import Section
    from wql.compiler.windows import Window


class Cumulate(Grid):
    """Windows growing by SLIDE from the start of each period of RANGE."""

    name = "cumulate"

    def matches(self, window: Window) -> bool:
        return window.kind is WindowKind.CUMULATE

    def grid_what(self, window: Window) -> str:
        return f"cumulating {super().grid_what(window)}"

    def describe_grid(self, window: Window, basis: str, partitioned: str) -> str:
        assert window.slide is not None
        return (
            f"{basis}{partitioned} cumulating window (CUMULATE): {window.windows_per_period} windows per period, "
            f"growing by {short_text(window.slide, window.attr.domain)} from the period's start"
        )

    def wids_range(self, window: Window, a: str, o: str, first: str) -> str:
        assert window.range is not None
        r = short_text(window.range, window.attr.domain)
        period = f"⌊({a}{o}) / {r}⌋" if o else f"⌊{a} / {r}⌋"
        m = window.windows_per_period
        return f"wids(t) = {first} … {m}·({period} + 1) − 1  ({m} windows per period)"

    def extent_of(self, window: Window, a: str, end: str, o: str, where: str) -> str:
        assert window.range is not None
        start = f"{o}⌊w / {window.windows_per_period}⌋·{short_text(window.range, window.attr.domain)}"
        return f"extent(w) = {{ t | {start} ≤ {a} < {end} }}{where}"

    def cited(self, window: Window) -> tuple[Section, ...]:
        from wql.compiler import sections

        if not window.is_tuple_based:
            return (sections.CUMULATE,)
        return (sections.CUMULATE, sections.PARTITIONED if window.partition_by else sections.TUPLE_BASED)

    def bounds(self, window: Window, w: int) -> tuple[Number, Number]:
        """From the start of w's period."""
        assert window.range is not None and window.slide is not None
        return window.origin + (w // window.windows_per_period) * window.range, window.origin + (w + 1) * window.slide

    def kept_cells(self, query: Query, per: str, reach: str) -> str:
        return f"cells of one SLIDE: {per}, those of the periods that still have an open window"

    # ---------------------------------------------------------------- what the grid plans need to know
    def cell_grid(self, window: Window) -> Cells:
        """Panes of one slide; window w is the panes from its period's first up to w."""
        from wql.compiler.plans.base import Grid as Cells

        assert window.slide is not None
        return Cells("cumulate", window.slide, window.windows_per_period, 1)

    def fan_out(self, window: Window, stats: Statistics) -> float:
        return (window.windows_per_period + 1) / 2  # from a tuple's own window to the end of its period

    def bucket_note(self, copies: float) -> str:
        return f"every tuple is copied into its windows up to its period's end ({copies:g} on average), then grouped"

    def pane_candidate(self, window: Window, grid: Cells, decomposition: Decomposition, stats: Statistics) -> Candidate:
        from wql.compiler.plans.base import PlanName
        from wql.compiler.plans.grid import cells_candidate

        if grid.size == 1:
            return super().pane_candidate(window, grid, decomposition, stats)
        note = (
            f"panes of one slide; each window is a running combine of its period's panes, reset every "
            f"{grid.size} panes: cost flat in RANGE/SLIDE"
        )
        return cells_candidate(PlanName.PANE, grid, decomposition, stats, note)

    def slice_candidate(
        self, window: Window, why_not: str | None, decomposition: Decomposition | None, stats: Statistics
    ) -> Candidate | None:
        from wql.compiler.plans.base import Candidate, PlanName

        return Candidate.refused(PlanName.SLICE, "CUMULATE windows end on every slide: the panes are the slices")

    # ---------------------------------------------------------------- code generation (the grid family)
    def declare(self, ctx: Context) -> None:
        ctx.constant("PERIOD", ctx.window.windows_per_period, "CUMULATE: windows per period of RANGE")
        super().declare(ctx)

    def start_bound(self, end: str) -> str | None:
        return 'ORIGIN + F.floor(F.col("wid") / PERIOD) * RANGE'  # every window of a period starts where it does

    def tag(self, ctx: Context) -> None:
        from wql.compiler.codegen.grid import T, first_of, on_doubles

        code = ctx.code
        code.comment("Bucket (WID), CUMULATE: tag each tuple with its window-ids, from its own window ⌊(t − o)/s⌋ to")
        code.comment("the last window of its period, PERIOD·(⌊(t − o)/r⌋ + 1) − 1, and aggregate by window-id and key.")
        period = f"cell_of({T}, RANGE)" if on_doubles(ctx) else f"F.floor(({T} - ORIGIN) / RANGE)"
        code(f"first = {first_of(ctx)}")
        code(f"last = ({period} + 1) * PERIOD - 1")
        code('tagged = rows.withColumn("wid", F.explode(F.sequence(first, last)))')

    def retain_start(self, ctx: Context) -> None:
        ctx.rules("# CUMULATE: the first open window starts where its period does.")
        ctx.rules("start = ORIGIN + F.floor(first_open(punctuation) / PERIOD) * RANGE")

    def missed_last(self, ctx: Context) -> str:
        return "F.floor((t - ORIGIN) / RANGE) * PERIOD + PERIOD - 1"  # up to the last window of t's period


KIND = Cumulate()
