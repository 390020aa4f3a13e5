"""A streaming job's window rules for grid windows: when a window is final, what a trigger keeps, what a late
tuple missed, how cells of several triggers merge, and what Spark's state store keeps (docs/semantics.md §8).

The rules read the window's grid shape (`GridShape.reach`) and the plan's cells, as the batch stages do
(`codegen.grid`); interval events reuse the finality and late-rows rules with their own words
(`codegen.intervals`).
"""

from __future__ import annotations

from collections.abc import Callable

from wql.compiler.algebra import OPERATIONS
from wql.compiler.codegen.calendar_axis import cell_of_base, month_first_day, month_of_day
from wql.compiler.codegen.common import ANCHOR, ATTR, FIRST, IN, INSTANT, Context, flags_where, from_anchor
from wql.compiler.codegen.emit import col, py
from wql.compiler.codegen.grid_axis import (
    T,
    cell_expression,
    first_of,
    grid_shape,
    in_windows,
    last_of,
    on_doubles,
    sql_or_column,
)
from wql.compiler.kernels.contract import CellStore
from wql.compiler.plans.grid import each_tuple_a_cell, in_state_store

MARK = "_mark"  # landmarks with WHERE: the cell of the stream's last value, among the cells (not a cell itself)


def last_reached(ctx: Context, end: str) -> str | None:
    """For windows that go only as far as the data (§8.10): the last window the data reaches when it ends at
    `end` (a column of the grid's axis). Landmark windows go to the one holding the stream's largest value;
    over row numbers, which only grow and always pass the punctuation, they need no rule."""
    if grid_shape(ctx).reach != "unbounded" or ctx.window.is_tuple_based:
        return None
    return first_of(ctx, end)


def store_request(ctx: Context) -> CellStore | None:
    """What Spark's state store keeps of this query when the job runs with WQL's JVM kernels (the
    StreamCells function of flatMapGroupsWithState): each key's open cells, for grid windows whose cells
    are panes or slices of partial states a tuple's share of which it can merge (docs/semantics.md §8.12).
    None where the job keeps its state in its own files: other windows and plans, row numbers, first
    arrivals, DOUBLE attributes (Spark's watermark carries the punctuation in whole milliseconds)."""
    plan, window = ctx.plan, ctx.window
    cells, decomposition = plan.cells, plan.decomposition
    if not in_state_store(ctx.query, plan):
        return None
    assert window.slide is not None and cells is not None and decomposition is not None
    assert any(s.name == "shares" for s in ctx.stages), "each tuple a cell: the job has the shares stage"
    return {
        "state": "cells",
        "keys": ctx.keys(),
        "cell": "_cell",
        "operations": decomposition.operations,
        "columns": decomposition.columns,
        "size": cells.size,
        "step": cells.step,
        "origin": window.origin,
        "slide": window.slide,
        "emit": ctx.query.emit,
        "generous": window.slack is not None and window.slack.mode == "generous",
        "calendar": None if window.calendar is None else {"cell": window.calendar.cell, "zone": window.zone},
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
        if ctx.window.calendar is not None:
            end = calendar_punctuation(ctx)
        code(f"return {end} <= punctuation")
        code.dedent()
        code.blank(2)
    code("def first_open(punctuation):")
    code.indent()
    code('"""The first window the punctuation has not closed."""')
    first = "F.floor((F.lit(punctuation) - ORIGIN) / SLIDE)"
    if ctx.window.calendar is not None:
        first = "punctuation" if ctx.window.calendar.mixed else "F.floor((punctuation - ORIGIN) / SLIDE)"
        calendar_punctuation(ctx)
    if on_doubles(ctx):
        code("# DOUBLE edges: one window earlier than the floor, so that rounding never drops a needed tuple.")
        first += " - 1"
    code(f"return {first}")
    code.dedent()
    code.blank(2)


def stream_rules(ctx: Context) -> None:
    """merge (cell plans), is_final, retain and missed: what a streaming job needs beyond the batch stages."""
    cells = ctx.plan.cells
    if cells is not None:
        _merge_stage(ctx)
        if _shares_each(ctx):
            _shares_stage(ctx)
    final_rules(ctx)
    code = ctx.rules
    kept = "cells" if cells is not None else "rows"
    code(f"def retain({kept}, punctuation):")
    code.indent()
    if grid_shape(ctx).reach == "unbounded":
        _retain_from_beginning(ctx)
    else:
        _retain_open(ctx, kept)
    code.dedent()
    code.blank(2)
    missed_rule(ctx)


def calendar_punctuation(ctx: Context) -> str:
    """On a calendar grid, the punctuation as the cell it falls in: a window ends where a cell begins, so it is
    final exactly once the punctuation's cell is past its own (semantics §2.21). Returns the window's end cell."""
    ctx.rules.comment("A calendar grid counts cells: the punctuation's cell, which a window's end cell is final at.")
    ctx.rules(f"punctuation = {cell_of_base(ctx.window, 'F.lit(punctuation)')}")
    mixed = ctx.window.calendar is not None and ctx.window.calendar.mixed
    return 'F.col("wid") + 1' if mixed else 'ORIGIN + (F.col("wid") + 1) * SLIDE'


def relative_punctuation(ctx: Context, anchor: str) -> None:
    """ALIGN FIRST: each partition's grid starts at its own first arrival, so the punctuation is measured
    from that partition's anchor (a column), as the cells' and rows' _t are."""
    if ctx.window.align_first:
        ctx.rules.comment("ALIGN FIRST: the punctuation measured from each partition's first arrival.")
        ctx.rules(f"punctuation = F.lit(punctuation) - F.col({py(anchor)})")


def _retain_open(ctx: Context, kept: str) -> None:
    """The body of `retain(cells | rows, punctuation)`: the cells (rows) from the first open window's start on,
    which starts RANGE before its end, or at its period's start (CUMULATE)."""
    code, cells = ctx.rules, ctx.plan.cells
    code('"""What windows not yet final can still need: the cells (rows) from the first open window\'s start on."""')
    code("if punctuation is None:")
    code(f"    return {kept}")
    relative_punctuation(ctx, ANCHOR)
    calendar = ctx.window.calendar
    if calendar is not None and calendar.mixed:
        code("# Month to date: the first open window starts on its period's first day.")
        month = month_of_day("first_open(punctuation)")
        code(f"start = {month_first_day(f'(ORIGIN + F.floor(({month} - ORIGIN) / RANGE) * RANGE)')}")
        code('return cells.where(F.col("_cell") >= start)' if cells is not None else f"return rows.where({T} >= start)")
        return
    if grid_shape(ctx).reach == "period":
        code("# CUMULATE: the first open window starts where its period does.")
        code("start = ORIGIN + F.floor(first_open(punctuation) / PERIOD) * RANGE")
    else:
        code("start = ORIGIN + (first_open(punctuation) + 1) * SLIDE - RANGE")
    if cells is not None and cells.combine == "period":
        code('return cells.where(F.col("_cell") >= F.floor((start - ORIGIN) / SLIDE))')
    elif cells is not None and cells.sliced:
        code('return cells.where(F.col("_cell") >= 2 * F.floor((start - ORIGIN) / SLIDE))')
    elif cells is not None:
        code('return cells.where(F.col("_cell") >= F.floor((start - ORIGIN) / PANE))')
    else:
        code(f"return rows.where({T} >= start)")


def _retain_from_beginning(ctx: Context) -> None:
    """The body of `retain(cells | rows, punctuation)` for landmark windows, which hold every tuple since the
    stream began: the panes folded into one up to the last final window, or every row."""
    code = ctx.rules
    if ctx.plan.cells is not None:
        code('"""Landmark panes: each key\'s panes up to the last final window fold into one (its running combine),')
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


def _shares_each(ctx: Context) -> bool:
    """Whether each tuple can be a cell of its own (plans.grid.each_tuple_a_cell), for merge to add, and no
    WHERE adds its end-of-data row."""
    return not flags_where(ctx) and each_tuple_a_cell(ctx.plan)


def _shares_stage(ctx: Context) -> None:
    """shares: a stream's tuples as cells of one tuple each, so that one aggregation (merge) builds a trigger's
    cells and merges them with the open cells the state holds; lift then merge would aggregate twice, with a
    shuffle each."""
    cells, decomposition = ctx.plan.cells, ctx.plan.decomposition
    assert cells is not None and decomposition is not None
    code = ctx.stage(
        "shares",
        "rows",
        "Each tuple as a cell of its own: its cell index and its share of each partial state, for merge.",
    )
    cell = cell_expression(ctx, cells)
    source = in_windows(ctx, cell)
    keys = ctx.keys()
    items = [*(col(k) for k in keys), f'{cell}.alias("_cell")']
    items += [
        f"{sql_or_column(share)}.alias({py(column)})"
        for g in decomposition.groups
        for column, share in zip(g.columns, g.contributions, strict=True)
    ]
    # merge leaves it behind; Spark's state store says by it which tuples are late (a calendar grid's _t is the
    # tuple's cell, so its instant comes from prepare)
    items.append(f"{col(INSTANT)}.alias({py(ATTR)})" if ctx.window.calendar is not None else col(ATTR))
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
    if window.calendar is not None:
        code(f"t = {cell_of_base(window, 't')}  # the cell it falls in")
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
    text = (windows or _missed_windows)(ctx, closed, generous)
    code(f'return late.withColumn("_missed", {text})')
    code.dedent()
    code.blank(2)


def _missed_windows(ctx: Context, closed: str, generous: bool) -> str:
    """The late-rows output's text for a late tuple at `t`: the windows it belongs to and missed (all of them,
    or with GENEROUS those up to `closed`, the last window the punctuation closed)."""
    reach = grid_shape(ctx).reach
    if reach == "unbounded":  # its own window and every later one
        first = f"F.greatest({first_of(ctx, 't')}, F.lit(0))"
        if not generous:
            return f'F.format_string("windows %d and every later one", {first})'
        ctx.rules(f"first, last = {first}, {closed}")
    else:
        calendar = ctx.window.calendar
        if calendar is not None and calendar.mixed:  # from its own day to its period's last
            period = f"F.floor(({month_of_day('t')} - ORIGIN) / RANGE)"
            last = f"{month_first_day(f'(ORIGIN + ({period} + 1) * RANGE)')} - 1"
            ctx.rules(f"first, last = t, {f'F.least({last}, {closed})' if generous else last}")
            nothing = missed_none(generous)
            return f'F.when(first <= last, F.format_string("windows %d to %d", first, last)).otherwise({py(nothing)})'
        if reach == "period":  # up to the last window of t's period
            last = "F.floor((t - ORIGIN) / RANGE) * PERIOD + PERIOD - 1"
        else:
            last = last_of(ctx, "t")
        ctx.rules(f"first, last = {first_of(ctx, 't')}, {f'F.least({last}, {closed})' if generous else last}")
    # A tuple in a gap between windows (SLIDE > RANGE) belongs to none; GENEROUS placed one whose windows
    # are all open in them, and it missed none.
    nothing = missed_none(generous)
    return f'F.when(first <= last, F.format_string("windows %d to %d", first, last)).otherwise({py(nothing)})'
