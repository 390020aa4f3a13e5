"""Query bodies for grid windows (CF and FCF): bucket, pane and slice plans (interval events: intervals.py).

Window w ends on ORIGIN + (w+1)·SLIDE and starts where its grid shape says (`codegen.grid_axis`):
[end − RANGE, end) for sliding and tumbling windows, from its period's start with CUMULATE, from the
beginning for landmark windows (docs/semantics.md §2.1, §2.3, §2.13). What differs between them is
read off the window's grid shape and its flags (KAFKA, FULL START/END, OWN END), never its kind.
A streaming job's window rules are in `codegen.grid_stream`.
"""

from __future__ import annotations

from wql.compiler.codegen.calendar_axis import month_first_day, month_of_day
from wql.compiler.codegen.common import (
    ANCHOR,
    ATTR,
    IN,
    Context,
    aggregate_items,
    declare_window_constants,
    emit_empty,
    epilogue,
    flags_where,
    prologue,
)
from wql.compiler.codegen.emit import Raw, col, expr, py
from wql.compiler.codegen.grid_axis import (
    T,
    cell_expression,
    first_of,
    grid_bounds,
    grid_shape,
    in_windows,
    last_of,
    on_doubles,
    sql_or_column,
)
from wql.compiler.codegen.grid_stream import MARK, last_reached, store_request, stream_rules
from wql.compiler.plans import PlanName

OWN_LAST = "_own_last"  # OWN END: the last window of a tuple's partition
LAST_ROW = "_last_row"  # FULL END: the partition's last position, which its windows must end by


def generate(ctx: Context) -> None:
    """prepare, [lift,] windows, finish."""
    if ctx.window.align_first:
        ctx.extra_keys.append(ANCHOR)  # each partition's grid starts at its own first arrival
    declare_window_constants(ctx)
    declare(ctx)
    prologue(ctx)
    if ctx.plan.name is PlanName.BUCKET:
        bucket(ctx)
    else:
        lift(ctx)
        combine(ctx)
    if ctx.query.emit_empty:
        emit_empty(ctx)
    ctx.code("return windows")
    epilogue(ctx, grid_bounds(ctx))


def declare(ctx: Context) -> None:
    """The constants a grid reads beyond RANGE, SLIDE and ORIGIN."""
    window = ctx.window
    if grid_shape(ctx).reach == "period" and not month_to_date(ctx):
        assert window.range is not None and window.slide is not None
        ctx.constant("PERIOD", round(window.range / window.slide), "CUMULATE: windows per period of RANGE")
    if window.first_wid is not None:
        ctx.constant("FIRST_WID", window.first_wid, "KAFKA: the window [0, RANGE); none starts before 0")
    if window.full_start:
        ctx.constant("FIRST_FULL", window.first_full, "FULL START: the first window to start at row 0 or after")


def _group_by(ctx: Context, lead: str) -> str:
    keys = ctx.key_list()
    return f"{lead}, {keys}" if keys else lead


# ------------------------------------------------------------------ bucket


def bucket(ctx: Context) -> None:
    code = ctx.stage(
        "windows", "rows", "One row per window and key: each tuple tagged with its window-ids, then grouped."
    )
    assert ctx.window.slide is not None
    tag(ctx)  # `tagged`: each tuple once per window it is in, with the window-id in `wid`
    group_by = _group_by(ctx, 'F.col("wid")')
    code(f"grouped = tagged.groupBy({group_by})")
    code.call("windows", "grouped.agg", aggregate_items(ctx.query))
    limit_windows(ctx)


def tag(ctx: Context) -> None:
    """The bucket plan's tagging: `tagged`, each of `rows` once per window it is in, its id in `wid`."""
    if ctx.window.full_end:
        _last_positions(ctx)
    reach = grid_shape(ctx).reach
    if reach == "unbounded":
        _tag_to_data_end(ctx)
    elif reach == "period" and month_to_date(ctx):
        _tag_month_to_date(ctx)
    elif reach == "period":
        _tag_to_period_end(ctx)
    else:
        _tag_range(ctx)


def _last_positions(ctx: Context) -> None:
    """FULL END: each partition's last position, from every tuple, before the tuples WHERE drops go."""
    code = ctx.code
    code.comment("FULL END: the last position of each partition (of the stream without PATTR).")
    per_partition(ctx, "last_rows", "_last_", f"F.max({T})", LAST_ROW)
    if flags_where(ctx):
        code.comment("Only the tuples WHERE keeps count.")
        code(f"rows = rows.where({IN})")


def _tag_range(ctx: Context) -> None:
    """Windows RANGE long: from a tuple's own window to the last one that starts at or before it."""
    window, code = ctx.window, ctx.code
    assert window.range is not None and window.slide is not None
    code.comment("Bucket (WID): tag each tuple with its window-ids wids(t) = ⌊(t − o)/s⌋ … ⌊(t − o + r)/s⌋ − 1")
    code.comment("and aggregate by window-id and key: an ordinary group-by.")
    code(f"first = {first_of(ctx)}")
    if window.kafka_grid:
        code(f"last = {last_of(ctx)}")
        code.comment("KAFKA: windows that would start before 0 do not exist (FIRST_WID is [0, RANGE)), so a")
        code("# tuple before 0 is in none.")
        code("first = F.greatest(first, F.lit(FIRST_WID))")
        wid = "first" if window.range == window.slide else "F.explode(F.sequence(first, last))"
        code(f'tagged = rows.where(first <= last).withColumn("wid", {wid})')
    elif window.range == window.slide:
        code.comment("Tumbling: each tuple is in exactly one window.")
        code('tagged = rows.withColumn("wid", first)')
    elif window.range < window.slide:
        code(f"last = {last_of(ctx)}")
        code.comment("SLIDE > RANGE: a tuple is in one window, or in a gap between windows and in none.")
        code('tagged = rows.where(first <= last).withColumn("wid", first)')
    else:
        code(f"last = {last_of(ctx)}")
        code('tagged = rows.withColumn("wid", F.explode(F.sequence(first, last)))')


def _tag_to_period_end(ctx: Context) -> None:
    """Windows from their period's start (CUMULATE): from a tuple's own window to its period's last."""
    code = ctx.code
    code.comment("Bucket (WID), CUMULATE: tag each tuple with its window-ids, from its own window ⌊(t − o)/s⌋ to")
    code.comment("the last window of its period, PERIOD·(⌊(t − o)/r⌋ + 1) − 1, and aggregate by window-id and key.")
    period = f"cell_of({T}, RANGE)" if on_doubles(ctx) else f"F.floor(({T} - ORIGIN) / RANGE)"
    code(f"first = {first_of(ctx)}")
    code(f"last = ({period} + 1) * PERIOD - 1")
    code('tagged = rows.withColumn("wid", F.explode(F.sequence(first, last)))')


def month_to_date(ctx: Context) -> bool:
    """CUMULATE over periods of months that grow day by day (a calendar grid of day cells, month periods)."""
    calendar = ctx.window.calendar
    return calendar is not None and calendar.mixed


def _tag_month_to_date(ctx: Context) -> None:
    """Month to date: a tuple is in the windows of its own day and every later day of its period of months."""
    code = ctx.code
    code.comment("Bucket (WID), month to date: window w is its period's days up to day w, so a tuple is in the")
    code.comment("windows from its own day to the last day of its period (RANGE months from ORIGIN); aggregate by")
    code.comment("window-id and key.")
    period = f"F.floor(({month_of_day(T)} - ORIGIN) / RANGE)"
    code(f"last = {month_first_day(f'(ORIGIN + ({period} + 1) * RANGE)')} - 1")
    code(f'tagged = rows.withColumn("wid", F.explode(F.sequence({T}, last)))')


def _tag_to_data_end(ctx: Context) -> None:
    """Windows from the beginning (landmark): from a tuple's own window to the one holding the data's last value
    (with OWN END, its partition's)."""
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


def limit_windows(ctx: Context) -> None:
    """After the windows stage has computed `windows` (one row per window and key, `wid` and the keys): drop
    the windows that do not exist though tuples fall in them. FULL START: those before FIRST_FULL start before
    row 0. FULL END: those that end after the partition's last position (`last_rows`, the bucket's tag).
    OWN END: a partition's windows after its own last window (`own_last`, the bucket's tag)."""
    code, window = ctx.code, ctx.window
    if window.full_start:
        code.comment("FULL START: windows that start before the first row (those before FIRST_FULL) do not exist.")
        code('windows = windows.where(F.col("wid") >= FIRST_FULL)')
    if window.full_end:
        code.comment("FULL END: windows that end after the partition's last row do not exist.")
        keep = f'ORIGIN + (F.col("wid") + 1) * SLIDE - 1 <= F.col({py(LAST_ROW)})'
        limited_by_partition(ctx, "last_rows", "_last_", LAST_ROW, keep)
    if window.own_end:
        code.comment("OWN END: each partition's windows end at the one holding its own largest value.")
        limited_by_partition(ctx, "own_last", "_own_", OWN_LAST, f'F.col("wid") <= F.col({py(OWN_LAST)})')


def landmark_limit(ctx: Context, last: str) -> None:
    """final_window: one row, `_last`, the window holding the stream's largest value (`last` aggregates it)."""
    ctx.code.comment("Landmark windows are reported up to the window holding the stream's last value.")
    ctx.code(f'final_window = {last}.alias("_last"))')


def per_partition(ctx: Context, name: str, prefix: str, value: str, alias: str) -> None:
    """`name`: one row per PATTR partition (or one row without PATTR), its key columns renamed prefix + column
    and `alias` the aggregate `value` over `rows` (WHERE or not, where the rows are flagged)."""
    parts = ctx.partition_columns()
    grouped = "rows.groupBy(" + ", ".join(f"F.col({py(c)}).alias({py(prefix + c)})" for c in parts) + ")"
    ctx.code(f"{name} = {grouped if parts else 'rows'}.agg({value}.alias({py(alias)}))")


def limited_by_partition(ctx: Context, name: str, prefix: str, alias: str, keep: str) -> None:
    """`windows` joined with `name` (from per_partition) on the PATTR keys, NULL keys alike, kept where `keep`
    holds; the joined columns are dropped again."""
    code, parts = ctx.code, ctx.partition_columns()
    if parts:
        same = " & ".join(f"F.col({py(c)}).eqNullSafe(F.col({py(prefix + c)}))" for c in parts)
        code(f"windows = windows.join({name}, {same})")
    else:
        code(f"windows = windows.crossJoin({name})")
    code(f"windows = windows.where({keep})")
    code(f"windows = windows.drop({', '.join(py(c) for c in [alias, *(prefix + c for c in parts)])})")


# ------------------------------------------------------------------ pane and slice plans


def lift(ctx: Context) -> None:
    """The lift stage: rows to cells, one row of partial states per (keys, cell)."""
    plan = ctx.plan
    cells, decomposition = plan.cells, plan.decomposition
    assert cells is not None and decomposition is not None
    if cells.sliced:
        what = "slices"
    elif cells.combine == "sliding":
        what = "panes of PANE = gcd(RANGE, SLIDE)"
    else:
        what = "panes of one slide"
    code = ctx.stage("lift", "rows", f"Cells ({what}): one row of partial states per key and cell.")
    if cells.combine == "running":
        code.comment("Panes of one slide: pre-aggregate each (key, pane) once; window w is every pane up to w.")
    elif month_to_date(ctx):
        code.comment("Cells of one day: pre-aggregate each (key, day) once. Window w is the days of its period of")
        code.comment("months up to day w.")
    elif cells.combine == "period":
        code.comment("Panes of one slide: pre-aggregate each (key, pane) once. Window w is the panes from its")
        code.comment(f"period's first, {cells.size}·⌊w / {cells.size}⌋, up to w.")
    elif not cells.sliced:
        code.comment("Panes of PANE = gcd(RANGE, SLIDE): pre-aggregate each (key, pane) once. Window w is the")
        code.comment(f"{cells.size} panes ending at pane (w + 1)·{cells.step} − 1.")
    cell = cell_expression(ctx, cells)
    source = in_windows(ctx, cell)
    keys = ctx.keys()
    grouped = ", ".join([*(col(k) for k in keys), f'{cell}.alias("_cell")'])
    lifts = [
        f"{expr(lift)}.alias({py(column)})"
        for g in decomposition.groups
        for column, lift in zip(g.columns, g.lifts, strict=True)
    ]
    if flags_where(ctx):
        source = f"rows.where({IN})"
    code.call("cells", f"{source}.groupBy({grouped}).agg", lifts)
    if flags_where(ctx):
        code.comment("Only the tuples WHERE keeps count, but the windows go on to the cell of the stream's last")
        code.comment(f"value, WHERE or not: one more row, {MARK} true, says which (NULL states: it is no cell).")
        code(f'mark = rows.agg(F.max({cell}).alias("_cell")).where(F.col("_cell").isNotNull())')
        code(f"cells = cells.unionByName(mark.withColumn({py(MARK)}, F.lit(True)), allowMissingColumns=True)")
    code("return cells")


def combine(ctx: Context) -> None:
    """The windows stage of pane and slice plans: each key's ordered cells combined into windows."""
    plan = ctx.plan
    cells, decomposition = plan.cells, plan.decomposition
    assert cells is not None and decomposition is not None
    keys = ctx.keys()
    code = ctx.stage("windows", "cells", "One row per window and key: each key's ordered cells combined into windows.")
    if cells.combine == "running":
        landmark_limit(ctx, 'cells.agg(F.max("_cell")')
        if flags_where(ctx):
            code(f"cells = cells.where(F.col({py(MARK)}).isNull()).drop({py(MARK)})")
        code('cells = cells.crossJoin(F.broadcast(final_window.select(F.col("_last").cast("bigint"))))')
    if keys:
        code.comment("Every key's cells to one partition (a shuffle of cells, not rows) for the combine. With")
        code.comment("WQL's JVM kernel, Spark does this in the aggregation's own shuffle: one shuffle in all.")
        code(f"cells = cells.repartition({ctx.key_list()})")
    else:
        code("cells = cells.coalesce(1)  # no keys: all cells combine in one task")
    states = [(g.operation, list(g.columns)) for g in decomposition.groups]
    if cells.combine == "running":
        code.comment("Combine: a running combine over each key's ordered panes, one pass.")
    elif cells.combine == "period" and month_to_date(ctx):
        code.comment("Combine: a running combine over each key's days, one pass, reset where each period of RANGE")
        code.comment("months (from ORIGIN) begins; every day's running total is a window.")
    elif cells.combine == "period":
        code.comment("Combine: a running combine over each key's ordered panes, one pass, reset where each period")
        code.comment("of PERIOD panes begins; every pane's running total is a window.")
    else:
        code.comment(f"Combine: slide over each key's ordered cells, {cells.size} to a window; each window is a suffix")
        code.comment("combine of its older cells plus a running combine of its newer ones, so the cost does not")
        code.comment("grow with RANGE / SLIDE.")
    code.comment("In the JVM where Spark has WQL's kernels (wql-kernels.jar and its extension), else numpy via Arrow.")
    keywords: dict[str, object] = {"keys": keys, "cell": "_cell", "states": states, "size": cells.size}
    keywords["step"] = cells.step
    if cells.combine == "running":
        keywords["last"] = "_last"
    if cells.combine == "period":
        keywords["cumulate"] = True
    if month_to_date(ctx):
        keywords["months"] = Raw("RANGE")
        keywords["month_origin"] = Raw("ORIGIN")
    code.call("windows", "combine_cells", ["cells"], keywords=keywords)
    code("return windows")
    lower_stage(ctx)


def lower_stage(ctx: Context) -> None:
    """lower: each window's aggregates from its combined partial states. A stage of its own, so that a
    stream whose cells Spark's state store keeps lowers the windows it combined there the same way."""
    decomposition = ctx.plan.decomposition
    assert decomposition is not None
    code = ctx.stage("lower", "windows", "Each aggregate from its window's combined partial states.")
    code('windows = windows.withColumnRenamed("_cell", "wid")')
    if ctx.window.kafka_grid:
        code.comment("KAFKA: windows that would start before 0 do not exist.")
        code('windows = windows.where(F.col("wid") >= FIRST_WID)')
    keys = ctx.keys()
    items = ['F.col("wid")', *(col(k) for k in keys)]
    items += [f"{sql_or_column(sql)}.alias({py(name)})" for name, sql in decomposition.lowers]
    code.call("windows", "windows.select", items)
    limit_windows(ctx)


__all__ = ["generate", "last_reached", "store_request", "stream_rules"]
