"""The grid's axis in generated code: which window or cell a value falls in, and where a window starts.

Window w ends on the grid point ORIGIN + (w+1)·SLIDE (docs/semantics.md §2.1) and starts where the
window's grid shape says (`GridShape.reach`): RANGE before its end, at its period's start (CUMULATE),
or nowhere (landmark). Integral attributes (timestamps in µs, dates, integers, row numbers) use exact
integer arithmetic: for |t| < 2^52, floor of a double quotient of two integers is exact. DOUBLE
attributes compare against the same double expressions the definition uses, correcting a floor
estimate by one where rounding moved it (see first_window/last_window in the job).

The batch stages (`codegen.grid`), the stream rules (`codegen.grid_stream`) and interval events
(`codegen.intervals`) all place values on the grid through these expressions.
"""

from __future__ import annotations

from wql.compiler.codegen.calendar_axis import month_first_day, month_of_day, point
from wql.compiler.codegen.common import ATTR, Context, from_anchor
from wql.compiler.codegen.emit import col, expr, py
from wql.compiler.kinds import kind_of
from wql.compiler.kinds.shapes import GridShape, IntervalShape
from wql.compiler.plans import Cells
from wql.compiler.schema import Domain

T = f"F.col({py(ATTR)})"


def grid_shape(ctx: Context) -> GridShape:
    """The window's grid: its kind's shape (for interval events, the grid their windows lie on)."""
    shape = kind_of(ctx.window).shape(ctx.window)
    if isinstance(shape, IntervalShape) and shape.grid is not None:
        shape = shape.grid
    assert isinstance(shape, GridShape), "the grid family computes windows on a grid"
    return shape


def on_doubles(ctx: Context) -> bool:
    return ctx.window.attr.domain is Domain.FLOAT


def first_of(ctx: Context, value: str = T) -> str:
    """The first window whose end is past `value` (its own window)."""
    if on_doubles(ctx):
        return f"first_window({value})"
    return f"F.floor(({value} - ORIGIN) / SLIDE)"


def last_of(ctx: Context, value: str = T) -> str:
    """The last window that starts at or before `value`, RANGE before its end."""
    if on_doubles(ctx):
        return f"last_window({value})"
    return f"F.floor(({value} - ORIGIN + RANGE) / SLIDE) - 1"


def start_bound(ctx: Context, end: str) -> str | None:
    """window_start in base units from window_end's expression `end`; None where windows are unbounded below."""
    reach = grid_shape(ctx).reach
    if reach == "unbounded":
        return None
    if reach == "period":
        return 'ORIGIN + F.floor(F.col("wid") / PERIOD) * RANGE'  # every window of a period starts where it does
    return f"{end} - RANGE"


def calendar_bounds(ctx: Context) -> tuple[str, str]:
    """window_start and window_end of a calendar grid's window `wid`: where its first cell and the cell after
    its last begin. Month to date (days of month periods): from its period's first day to the day after w."""
    window = ctx.window
    calendar = window.calendar
    assert calendar is not None
    if calendar.mixed:
        month = month_of_day('F.col("wid")')
        first = month_first_day(f"(ORIGIN + F.floor(({month} - ORIGIN) / RANGE) * RANGE)")
        return point(window, first, "day"), point(window, 'F.col("wid") + 1', "day")
    end = 'ORIGIN + (F.col("wid") + 1) * SLIDE'
    start = start_bound(ctx, end)
    assert start is not None, "calendar windows have a start"
    return point(window, f"({start})"), point(window, f"({end})")


def grid_bounds(ctx: Context) -> list[str]:
    """window_start and window_end expressions for grid windows (window w = [end − RANGE, end))."""
    window = ctx.window
    if window.calendar is not None:
        start, end = calendar_bounds(ctx)
        return [f'{start}.alias("window_start")', f'{end}.alias("window_end")']
    domain = window.attr.domain
    convert = {
        Domain.TIMESTAMP: "F.timestamp_micros({})",
        Domain.DATE: "F.date_from_unix_date({})",
    }.get(domain, "({})")
    end = 'ORIGIN + (F.col("wid") + 1) * SLIDE'
    bound = start_bound(ctx, end)
    if bound is None:  # unbounded: landmark windows
        kind = {Domain.TIMESTAMP: "timestamp", Domain.DATE: "date", Domain.FLOAT: "double"}.get(domain, "bigint")
        start = f'F.lit(None).cast("{kind}")'
    else:
        start = convert.format(from_anchor(window, bound))
    end = convert.format(from_anchor(window, end))
    return [f'{start}.alias("window_start")', f'{end}.alias("window_end")']


def sql_or_column(sql: str) -> str:
    """F.col for a bare state column, F.expr for anything else."""
    return col(sql) if sql.isidentifier() else expr(sql)


def cell_expression(ctx: Context, cells: Cells) -> str:
    """The Spark expression for a tuple's cell index."""
    code = ctx.code
    if cells.split is not None:
        ctx.constant("SLICE_SPLIT", cells.split, "where in each slide the second slice starts")
        code.comment("Slices (Pairs): two per slide, cut where windows end (at each slide) and where they start")
        code.comment("(SLICE_SPLIT into each slide); window w is the slices between its start and end.")
        slide_no = f"F.floor(({T} - ORIGIN) / SLIDE)"
        if on_doubles(ctx):
            slide_no = f"cell_of({T}, SLIDE)"
        code(f"slide_no = {slide_no}")
        return f"(2 * slide_no + F.when({T} - ORIGIN - slide_no * SLIDE >= SLICE_SPLIT, 1).otherwise(0))"
    if ctx.window.calendar is not None and ctx.window.calendar.mixed:
        return T  # month to date: a tuple's cell is its day
    running = cells.combine != "sliding"  # panes of one slide
    width = "SLIDE" if running else ctx.constant("PANE", cells.width, "gcd(RANGE, SLIDE)")
    if on_doubles(ctx):
        return f"cell_of({T}, {width})"
    return f"F.floor(({T} - ORIGIN) / {width})"


def in_windows(ctx: Context, cell: str) -> str:
    """The rows that fall in some window: all of them, except in the gaps between windows SLIDE > RANGE
    leaves (the first slice of each slide)."""
    window, cells = ctx.query.window, ctx.plan.cells
    assert cells is not None
    gapped = window.range is not None and window.slide is not None and window.range < window.slide
    if cells.sliced and gapped:
        ctx.code.comment("SLIDE > RANGE: the first slice of each slide is a gap between windows.")
        return f"rows.where(F.pmod({cell}, F.lit(2)) == 1)"  # pmod: cells below zero are odd too
    return "rows"
