"""Query bodies for grid windows (CF and FCF): bucket, pane and slice plans (interval events: intervals.py).

Window w is [ORIGIN + (w+1)·SLIDE − RANGE, ORIGIN + (w+1)·SLIDE) on the window
attribute (docs/semantics.md §2.1). Integral attributes (timestamps in µs, dates,
integers, row numbers) use exact integer arithmetic: for |t| < 2^52, floor of a
double quotient of two integers is exact. DOUBLE attributes compare against the
same double expressions the definition uses, correcting a floor estimate by
one where rounding moved it (see first_window/last_window in the job).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from wql.compiler.algebra import OPERATIONS
from wql.compiler.codegen.common import (
    ANCHOR,
    ATTR,
    FIRST,
    IN,
    Context,
    aggregate_items,
    declare_window_constants,
    emit_empty,
    epilogue,
    flags_where,
    from_anchor,
    grid_bounds,
    prologue,
)
from wql.compiler.codegen.emit import col, expr, py
from wql.compiler.kernels.contract import CellStore
from wql.compiler.kinds import kind_of
from wql.compiler.plans import Grid as Cells
from wql.compiler.plans import PlanName
from wql.compiler.plans.grid import each_tuple_a_cell, in_state_store
from wql.compiler.schema import Domain

if TYPE_CHECKING:
    from wql.compiler.kinds.grid import Grid

T = f"F.col({py(ATTR)})"
MARK = "_mark"  # landmarks with WHERE: the cell of the stream's last value, among the cells (not a cell itself)


def generate(ctx: Context) -> None:
    """prepare, [lift,] windows, finish."""
    if ctx.window.align_first:
        ctx.extra_keys.append(ANCHOR)  # each partition's grid starts at its own first arrival
    declare_window_constants(ctx)
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


def _sql_or_column(sql: str) -> str:
    """F.col for a bare state column, F.expr for anything else."""
    return col(sql) if sql.isidentifier() else expr(sql)


def on_doubles(ctx: Context) -> bool:
    return ctx.window.attr.domain is Domain.FLOAT


def first_of(ctx: Context, value: str = T) -> str:
    if on_doubles(ctx):
        return f"first_window({value})"
    return f"F.floor(({value} - ORIGIN) / SLIDE)"


def last_of(ctx: Context, value: str = T) -> str:
    if on_doubles(ctx):
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
    kind = grid_kind(ctx)
    kind.tag(ctx)  # `tagged`: each tuple once per window it is in, with the window-id in `wid`
    group_by = _group_by(ctx, 'F.col("wid")')
    code(f"grouped = tagged.groupBy({group_by})")
    code.call("windows", "grouped.agg", aggregate_items(ctx.query))
    kind.limit_windows(ctx)


def grid_kind(ctx: Context) -> Grid:
    """The window's kind: one on a grid, whose hooks write what differs between grid kinds."""
    from wql.compiler.kinds.grid import Grid

    kind = kind_of(ctx.window)
    assert isinstance(kind, Grid)
    return kind


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


def cell_expression(ctx: Context, grid: Cells) -> str:
    """The Spark expression for a tuple's cell index."""
    code = ctx.code
    if grid.kind == "slice":
        ctx.constant("SLICE_SPLIT", grid.delta, "where in each slide the second slice starts")
        code.comment("Slices (Pairs): two per slide, cut where windows end (at each slide) and where they start")
        code.comment("(SLICE_SPLIT into each slide); window w is the slices between its start and end.")
        slide_no = f"F.floor(({T} - ORIGIN) / SLIDE)"
        if on_doubles(ctx):
            slide_no = f"cell_of({T}, SLIDE)"
        code(f"slide_no = {slide_no}")
        return f"(2 * slide_no + F.when({T} - ORIGIN - slide_no * SLIDE >= SLICE_SPLIT, 1).otherwise(0))"
    width = "SLIDE" if grid.kind in {"landmark", "cumulate"} else ctx.constant("PANE", grid.width, "gcd(RANGE, SLIDE)")
    if on_doubles(ctx):
        return f"cell_of({T}, {width})"
    return f"F.floor(({T} - ORIGIN) / {width})"


def _in_windows(ctx: Context, cell: str) -> str:
    """The rows that fall in some window: all of them, except in the gaps between windows SLIDE > RANGE
    leaves (the first slice of each slide)."""
    window, grid = ctx.query.window, ctx.plan.grid
    assert grid is not None
    if grid.kind == "slice" and window.range is not None and window.slide is not None and window.range < window.slide:
        ctx.code.comment("SLIDE > RANGE: the first slice of each slide is a gap between windows.")
        return f"rows.where(F.pmod({cell}, F.lit(2)) == 1)"  # pmod: cells below zero are odd too
    return "rows"


def lift(ctx: Context) -> None:
    """The lift stage: rows to cells, one row of partial states per (keys, cell)."""
    plan = ctx.plan
    grid, decomposition = plan.grid, plan.decomposition
    assert grid is not None and decomposition is not None
    what = {
        "landmark": "panes of one slide",
        "cumulate": "panes of one slide",
        "pane": "panes of PANE = gcd(RANGE, SLIDE)",
        "slice": "slices",
    }
    code = ctx.stage("lift", "rows", f"Cells ({what[grid.kind]}): one row of partial states per key and cell.")
    if grid.kind == "landmark":
        code.comment("Panes of one slide: pre-aggregate each (key, pane) once; window w is every pane up to w.")
    elif grid.kind == "cumulate":
        code.comment("Panes of one slide: pre-aggregate each (key, pane) once. Window w is the panes from its")
        code.comment(f"period's first, {grid.size}·⌊w / {grid.size}⌋, up to w.")
    elif grid.kind == "pane":
        code.comment("Panes of PANE = gcd(RANGE, SLIDE): pre-aggregate each (key, pane) once. Window w is the")
        code.comment(f"{grid.size} panes ending at pane (w + 1)·{grid.step} − 1.")
    cell = cell_expression(ctx, grid)
    source = _in_windows(ctx, cell)
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
    grid, decomposition = plan.grid, plan.decomposition
    assert grid is not None and decomposition is not None
    keys = ctx.keys()
    code = ctx.stage("windows", "cells", "One row per window and key: each key's ordered cells combined into windows.")
    if grid.kind == "landmark":
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
    if grid.kind == "landmark":
        code.comment("Combine: a running combine over each key's ordered panes, one pass.")
    elif grid.kind == "cumulate":
        code.comment("Combine: a running combine over each key's ordered panes, one pass, reset where each period")
        code.comment("of PERIOD panes begins; every pane's running total is a window.")
    else:
        code.comment(f"Combine: slide over each key's ordered cells, {grid.size} to a window; each window is a suffix")
        code.comment("combine of its older cells plus a running combine of its newer ones, so the cost does not")
        code.comment("grow with RANGE / SLIDE.")
    code.comment("In the JVM where Spark has WQL's kernels (wql-kernels.jar and its extension), else numpy via Arrow.")
    keywords: dict[str, object] = {
        "keys": keys,
        "cell": "_cell",
        "states": states,
        "size": grid.size,
        "step": grid.step,
    }
    if grid.kind == "landmark":
        keywords["last"] = "_last"
    if grid.kind == "cumulate":
        keywords["cumulate"] = True
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
    items += [f"{_sql_or_column(sql)}.alias({py(name)})" for name, sql in decomposition.lowers]
    code.call("windows", "windows.select", items)
    grid_kind(ctx).limit_windows(ctx)


# ------------------------------------------------------------------ on a stream


def store_request(ctx: Context) -> CellStore | None:
    """What Spark's state store keeps of this query when the job runs with WQL's JVM kernels (the
    StreamCells function of flatMapGroupsWithState): each key's open cells, for grid windows whose cells
    are panes or slices of partial states a tuple's share of which it can merge (docs/semantics.md §8.12).
    None where the job keeps its state in its own files: other windows and plans, row numbers, first
    arrivals, DOUBLE attributes (Spark's watermark carries the punctuation in whole milliseconds)."""
    plan, window = ctx.plan, ctx.window
    grid, decomposition = plan.grid, plan.decomposition
    if not in_state_store(ctx.query, plan):
        return None
    assert window.slide is not None and grid is not None and decomposition is not None
    assert any(s.name == "shares" for s in ctx.stages), "each tuple a cell: the job has the shares stage"
    return {
        "kind": "cells",
        "keys": ctx.keys(),
        "cell": "_cell",
        "operations": decomposition.operations,
        "columns": decomposition.columns,
        "size": grid.size,
        "step": grid.step,
        "origin": window.origin,
        "slide": window.slide,
        "emit": ctx.query.emit,
        "generous": window.slack is not None and window.slack.mode == "generous",
    }


def final_rules(ctx: Context, final: Callable[[Context], None] | None = None) -> None:
    """is_final and first_open: when a window of the grid is final, and the first one that is not. `final`
    (another family's: SNAP's runs of windows) writes is_final instead."""
    code = ctx.rules
    if final is not None:
        final(ctx)
    else:
        code("def is_final(punctuation):")
        code.indent()
        code('"""A window is final once the punctuation reaches its end: no tuple still to come can fall in it."""')
        end = from_anchor(ctx.window, 'ORIGIN + (F.col("wid") + 1) * SLIDE')
        code(f"return {end} <= punctuation")
        code.dedent()
        code.blank(2)
    code("def first_open(punctuation):")
    code.indent()
    code('"""The first window the punctuation has not closed."""')
    first = "F.floor((F.lit(punctuation) - ORIGIN) / SLIDE)"
    if on_doubles(ctx):
        code("# DOUBLE edges: one window earlier than the floor, so that rounding never drops a needed tuple.")
        first += " - 1"
    code(f"return {first}")
    code.dedent()
    code.blank(2)


def stream_rules(ctx: Context) -> None:
    """merge (cell plans), is_final, retain and missed: what a streaming job needs beyond the batch stages."""
    grid = ctx.plan.grid
    if grid is not None:
        _merge_stage(ctx)
        if _shares_each(ctx):
            _shares_stage(ctx)
    final_rules(ctx)
    code = ctx.rules
    kept = "cells" if grid is not None else "rows"
    code(f"def retain({kept}, punctuation):")
    code.indent()
    grid_kind(ctx).retain(ctx, kept)
    code.dedent()
    code.blank(2)
    missed_rule(ctx)


def relative_punctuation(ctx: Context, anchor: str) -> None:
    """ALIGN FIRST: each partition's grid starts at its own first arrival, so the punctuation is measured
    from that partition's anchor (a column), as the cells' and rows' _t are."""
    if ctx.window.align_first:
        ctx.rules.comment("ALIGN FIRST: the punctuation measured from each partition's first arrival.")
        ctx.rules(f"punctuation = F.lit(punctuation) - F.col({py(anchor)})")


def _shares_each(ctx: Context) -> bool:
    """Whether each tuple can be a cell of its own (plans.grid.each_tuple_a_cell), for merge to add, and no
    WHERE adds its end-of-data row."""
    return not flags_where(ctx) and each_tuple_a_cell(ctx.plan)


def _shares_stage(ctx: Context) -> None:
    """shares: a stream's tuples as cells of one tuple each, so that one aggregation (merge) builds a trigger's
    cells and merges them with the open cells the state holds; lift then merge would aggregate twice, with a
    shuffle each."""
    grid, decomposition = ctx.plan.grid, ctx.plan.decomposition
    assert grid is not None and decomposition is not None
    code = ctx.stage(
        "shares",
        "rows",
        "Each tuple as a cell of its own: its cell index and its share of each partial state, for merge.",
    )
    cell = cell_expression(ctx, grid)
    source = _in_windows(ctx, cell)
    keys = ctx.keys()
    items = [*(col(k) for k in keys), f'{cell}.alias("_cell")']
    items += [
        f"{_sql_or_column(share)}.alias({py(column)})"
        for g in decomposition.groups
        for column, share in zip(g.columns, g.contributions, strict=True)
    ]
    items.append(col(ATTR))  # merge leaves it behind; Spark's state store says by it which tuples are late
    code.call("cells", f"{source}.select", items)
    code("return cells")


def _merge_stage(ctx: Context) -> None:
    """merge: a stream's cells of one key and index, from several triggers, combined into one."""
    decomposition = ctx.plan.decomposition
    assert decomposition is not None
    code = ctx.stage(
        "merge", "cells", "Cells of one key and index from several triggers, combined: sums add, extremes compare."
    )
    items = []
    moments = []
    for group in decomposition.groups:
        if group.operation == "moments":
            moments.append(group.columns)
            n, mean, m2 = group.columns
            items.append(f"merged_moments({py(n)}, {py(mean)}, {py(m2)}).alias({py('_m' + n)})")
            continue
        fold = OPERATIONS[group.operation].spark_fold  # the Spark aggregate the state algebra names
        items += [f"F.{fold}({py(c)}).alias({py(c)})" for c in group.columns]
    keys = ctx.keys()
    mark = [col(MARK)] if flags_where(ctx) else []  # the end of the data's row merges with its own kind only
    grouped = ", ".join([*(col(k) for k in keys), 'F.col("_cell")', *mark])
    code.call("merged", f"cells.groupBy({grouped}).agg", items)
    if moments:
        code.comment("Moments merged pairwise with Chan's formula (merged_moments), then unpacked.")
        for n, mean, m2 in moments:
            packed = py("_m" + n)
            code("merged = merged.withColumns(")
            code.indent()
            code("{")
            code.indent()
            for name, field in ((n, "n"), (mean, "mean"), (m2, "m2")):
                code(f"{py(name)}: F.col({packed})[{py(field)}],")
            code.dedent()
            code("}")
            code.dedent()
            code(f").drop({packed})")
    code("return merged")


def missed_none(generous: bool) -> str:
    """The missed text of a late tuple that missed no window: GENEROUS placed it in the open windows it
    belongs to; under CONSISTENT it belongs to none (a gap between windows)."""
    return "none: it joined the open windows it belongs to" if generous else "none: it belongs to no window"


def missed_rule(ctx: Context, windows: Callable[[Context, str, bool], str] | None = None) -> None:
    """missed: for the late-rows output, which windows a late tuple belongs to and did not reach. `windows`
    (another family's: interval events) writes that text for grid windows from t, the closed windows and
    whether the slack is GENEROUS."""
    code, window = ctx.rules, ctx.window
    generous = window.slack is not None and window.slack.mode == "generous"
    code("def missed(late, punctuation):")
    code.indent()
    if generous:
        code('"""GENEROUS: a late tuple still joins open windows; it misses those the punctuation had closed."""')
    else:
        code('"""CONSISTENT: a late tuple is in no window; it misses every window it belongs to."""')
    code("t = window_attribute(late)")
    if window.align_first:
        code(f"t = t - F.col({py(FIRST)})")
    if generous:
        relative_punctuation(ctx, FIRST)
    closed = "first_open(punctuation) - 1"
    if on_doubles(ctx):
        # first_open is one window early on DOUBLE edges (what to keep must never round away a window); the
        # windows a late tuple missed are those is_final closed, so count the ones first_open left open.
        code("opened = first_open(punctuation)")
        code("closed = (")
        code("    F.when(ORIGIN + (opened + 2) * SLIDE <= F.lit(punctuation), opened + 1)")
        code("    .when(ORIGIN + (opened + 1) * SLIDE <= F.lit(punctuation), opened)")
        code("    .otherwise(opened - 1)")
        code(")")
        closed = "closed"
    if windows is not None:
        text = windows(ctx, closed, generous)
    else:
        text = grid_kind(ctx).missed(ctx, closed, generous)
    code(f'return late.withColumn("_missed", {text})')
    code.dedent()
    code.blank(2)
