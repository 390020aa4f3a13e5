"""Query bodies for grid windows (CF and FCF): bucket, pane and slice plans (interval events: intervals.py).

Window w is [ORIGIN + (w+1)·SLIDE − RANGE, ORIGIN + (w+1)·SLIDE) on the window
attribute (semantics.md §2). Integral attributes (timestamps in µs, dates,
integers, row numbers) use exact integer arithmetic: for |t| < 2^52, floor of a
double quotient of two integers is exact. DOUBLE attributes compare against the
same double expressions the definition uses, correcting a floor estimate by
one where rounding moved it (see first_window/last_window in the job).
"""

from __future__ import annotations

from wql.compiler.codegen.common import (
    ATTR,
    END_ATTR,
    Context,
    aggregate_items,
    declare_window_constants,
    emit_empty,
    epilogue,
    grid_bounds,
    prologue,
)
from wql.compiler.codegen.emit import col, expr, py
from wql.compiler.plans import Grid, PlanKind
from wql.compiler.schema import Domain
from wql.compiler.windows import WindowKind

T = f"F.col({py(ATTR)})"
E = f"F.col({py(END_ATTR)})"


def generate(ctx: Context) -> None:
    """prepare, [lift,] windows, finish."""
    declare_window_constants(ctx)
    prologue(ctx)
    if ctx.plan.kind is PlanKind.BUCKET:
        bucket(ctx)
    else:
        lift(ctx)
        combine(ctx)
    if ctx.query.emit_empty:
        emit_empty(ctx)
    ctx.code("return windows")
    epilogue(ctx, grid_bounds(ctx))


def _sql_or_column(sql: str) -> str:
    """F.col for a bare state column, F.expr for anything else."""
    return col(sql) if sql.isidentifier() else expr(sql)


def _float(ctx: Context) -> bool:
    return ctx.window.attr.domain is Domain.FLOAT


def _first(ctx: Context, value: str = T) -> str:
    if _float(ctx):
        ctx.helpers.add("float_edges")
        return f"first_window({value})"
    return f"F.floor(({value} - ORIGIN) / SLIDE)"


def _last(ctx: Context, value: str = T) -> str:
    if _float(ctx):
        ctx.helpers.add("float_edges")
        return f"last_window({value})"
    return f"F.floor(({value} - ORIGIN + RANGE) / SLIDE) - 1"


def _group_by(ctx: Context, lead: str) -> str:
    keys = ctx.key_list()
    return f"{lead}, {keys}" if keys else lead


def bucket(ctx: Context) -> None:
    window = ctx.window
    code = ctx.stage(
        "windows", "rows", "One row per window and key: each tuple tagged with its window-ids, then grouped."
    )
    assert window.slide is not None
    if window.kind is WindowKind.LANDMARK:
        _landmark_limit(ctx, f"rows.agg(({_first(ctx, f'F.max({py(ATTR)})')})")
        code.comment("Bucket (WID), landmark: a tuple belongs to its own window and every later one, up to the")
        code.comment("last window of the stream; aggregate by window-id and key.")
        code(f"first = F.greatest({_first(ctx)}, F.lit(0))")
        code("tagged = rows.crossJoin(F.broadcast(final_window))")
        code('tagged = tagged.withColumn("wid", F.explode(F.sequence(first, F.col("_last"))))')
    else:
        assert window.range is not None
        code.comment("Bucket (WID): tag each tuple with its window-ids wids(t) = ⌊(t − o)/s⌋ … ⌊(t − o + r)/s⌋ − 1")
        code.comment("and aggregate by window-id and key: an ordinary group-by.")
        code(f"first = {_first(ctx)}")
        if window.range == window.slide:
            code.comment("Tumbling: each tuple is in exactly one window.")
            code('tagged = rows.withColumn("wid", first)')
        elif window.range < window.slide:
            code(f"last = {_last(ctx)}")
            code.comment("SLIDE > RANGE: a tuple is in one window, or in a gap between windows and in none.")
            code('tagged = rows.where(first <= last).withColumn("wid", first)')
        else:
            code(f"last = {_last(ctx)}")
            code('tagged = rows.withColumn("wid", F.explode(F.sequence(first, last)))')
    group_by = _group_by(ctx, 'F.col("wid")')
    code(f"grouped = tagged.groupBy({group_by})")
    code.call("windows", "grouped.agg", aggregate_items(ctx.query))


def _landmark_limit(ctx: Context, last: str) -> None:
    """final_window: one row, `_last`, the window holding the stream's largest value (`last` aggregates it)."""
    ctx.code.comment("Landmark windows are reported up to the window holding the stream's last value.")
    ctx.code(f'final_window = {last}.alias("_last"))')


def _cell(ctx: Context, grid: Grid) -> str:
    """The Spark expression for a tuple's cell index."""
    code = ctx.code
    if grid.kind == "slice":
        ctx.constant("SLICE_SPLIT", grid.delta, "where in each slide the second slice starts")
        code.comment("Slices (Pairs): two per slide, cut where windows end (at each slide) and where they start")
        code.comment("(SLICE_SPLIT into each slide); window w is the slices between its start and end.")
        slide_no = f"F.floor(({T} - ORIGIN) / SLIDE)"
        if _float(ctx):
            ctx.helpers.add("float_edges")
            slide_no = f"cell_of({T}, SLIDE)"
        code(f"slide_no = {slide_no}")
        return f"(2 * slide_no + F.when({T} - ORIGIN - slide_no * SLIDE >= SLICE_SPLIT, 1).otherwise(0))"
    width = "SLIDE" if grid.kind == "landmark" else ctx.constant("PANE", grid.width, "gcd(RANGE, SLIDE)")
    if _float(ctx):
        ctx.helpers.add("float_edges")
        return f"cell_of({T}, {width})"
    return f"F.floor(({T} - ORIGIN) / {width})"


def lift(ctx: Context) -> None:
    """The lift stage: rows to cells, one row of partial states per (keys, cell)."""
    query, plan = ctx.query, ctx.plan
    grid, decomposition = plan.grid, plan.decomposition
    assert grid is not None and decomposition is not None
    what = {"landmark": "panes of one slide", "pane": "panes of PANE = gcd(RANGE, SLIDE)", "slice": "slices"}
    code = ctx.stage("lift", "rows", f"Cells ({what[grid.kind]}): one row of partial states per key and cell.")
    if grid.kind == "landmark":
        code.comment("Panes of one slide: pre-aggregate each (key, pane) once; window w is every pane up to w.")
    elif grid.kind == "pane":
        code.comment("Panes of PANE = gcd(RANGE, SLIDE): pre-aggregate each (key, pane) once. Window w is the")
        code.comment(f"{grid.size} panes ending at pane (w + 1)·{grid.step} − 1.")
    cell = _cell(ctx, grid)
    source = "rows"
    if (
        grid.kind == "slice"
        and query.window.range is not None
        and query.window.slide is not None
        and (query.window.range < query.window.slide)
    ):
        code.comment("SLIDE > RANGE: the first slice of each slide is a gap between windows.")
        source = f"rows.where(F.pmod({cell}, F.lit(2)) == 1)"  # pmod: cells below zero are odd too
    keys = ctx.keys()
    grouped = ", ".join([*(col(k) for k in keys), f'{cell}.alias("_cell")'])
    lifts = [
        f"{expr(lift)}.alias({py(column)})"
        for g in decomposition.groups
        for column, lift in zip(g.columns, g.lifts, strict=True)
    ]
    code.call("cells", f"{source}.groupBy({grouped}).agg", lifts)
    code("return cells")


def combine(ctx: Context) -> None:
    """The windows stage of pane and slice plans: each key's ordered cells combined into windows."""
    plan = ctx.plan
    grid, decomposition = plan.grid, plan.decomposition
    assert grid is not None and decomposition is not None
    ctx.helpers.update({"combine_cells", "sliding_combine", "jvm_kernel", "jvm_states"})
    keys = ctx.keys()
    code = ctx.stage("windows", "cells", "One row per window and key: each key's ordered cells combined into windows.")
    if grid.kind == "landmark":
        _landmark_limit(ctx, 'cells.agg(F.max("_cell")')
        code('cells = cells.crossJoin(F.broadcast(final_window.select(F.col("_last").cast("bigint"))))')
    if keys:
        code.comment("Every key's cells to one partition (a shuffle of cells, not rows) for the combine. With")
        code.comment("WQL's JVM kernel, Spark does this in the aggregation's own shuffle: one shuffle in all.")
        code(f"cells = cells.repartition({ctx.key_list()})")
    else:
        code("cells = cells.coalesce(1)  # no keys: all cells combine in one task")
    states = [(g.operation, list(g.columns)) for g in decomposition.groups]
    if grid.kind == "landmark":
        code.comment("Combine: a running combine over each key's ordered panes, one pass.")
    else:
        code.comment(f"Combine: slide over each key's ordered cells, {grid.size} to a window; each window is a suffix")
        code.comment("combine of its older cells plus a running combine of its newer ones, so the cost does not")
        code.comment("grow with RANGE / SLIDE.")
    code.comment("In the JVM when wql-kernels.jar is on the classpath (spark-submit --jars), else numpy via Arrow.")
    keywords: dict[str, object] = {
        "keys": keys,
        "cell": "_cell",
        "states": states,
        "size": grid.size,
        "step": grid.step,
    }
    if grid.kind == "landmark":
        keywords["last"] = "_last"
    code.call("windows", "combine_cells", ["cells"], keywords=keywords)
    code('windows = windows.withColumnRenamed("_cell", "wid")')
    code.comment("Each aggregate from its partial states.")
    items = ['F.col("wid")', *(col(k) for k in keys)]
    items += [f"{_sql_or_column(sql)}.alias({py(name)})" for name, sql in decomposition.lowers]
    code.call("windows", "windows.select", items)
