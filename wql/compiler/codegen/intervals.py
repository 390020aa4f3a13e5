"""Query bodies for interval events: bucket, se-slices, difference and sweep plans (see plans/intervals.py).

An event covers [_t, _e) in base units. Grid window w is
[ORIGIN + (w+1)·SLIDE − RANGE, ORIGIN + (w+1)·SLIDE); an event overlaps it iff
_t < its end and _e > its start. A point event (_e = _t) belongs where _t does;
an open-ended one (_e NULL) lasts to the end of the data: up to the last window
that starts at or before the largest start or end of the well-formed events.
Snapshot windows lie between consecutive endpoints of a partition's events.

WHERE filters window contents and never the windows themselves, so the end of
the data and the snapshots' endpoints come from every well-formed event, and
WHERE travels as a flag (_in). DECIMAL attributes are compared as exact
integers in units of 10^-scale; DOUBLE ones against the double edges
themselves, as the reference evaluator computes them.
"""

from __future__ import annotations

from decimal import Decimal

from wql.compiler.algebra import OPERATIONS
from wql.compiler.codegen.common import (
    ANCHOR,
    ATTR,
    END_ATTR,
    FIRST,
    IN,
    WHERE_FLAG,
    Context,
    aggregate_inputs,
    aggregate_items,
    attribute_expression,
    emit_empty,
    epilogue,
    from_anchor,
    key_items,
    numbering,
    origin_note,
    select_rows,
    unit_note,
    where_flag,
)
from wql.compiler.codegen.emit import Raw, col, expr, py, spark_name
from wql.compiler.codegen.grid_stream import final_rules, missed_none, missed_rule, relative_punctuation
from wql.compiler.plans import ONE, PlanName, StateGroup, fresh_name, intervals
from wql.compiler.schema import Domain

T = f"F.col({py(ATTR)})"
E = f"F.col({py(END_ATTR)})"
WID = 'F.col("wid")'
P = 'F.col("_p")'
PNEXT = 'F.col("_pnext")'
IDX = 'F.col("_idx")'
INF = 'F.lit(float("inf"))'


def generate(ctx: Context) -> None:
    """prepare, [lift,] windows, finish."""
    window, kind = ctx.window, ctx.plan.name
    if window.align_first:
        ctx.extra_keys.append(ANCHOR)  # the grid starts at the first arrival
    _constants(ctx)
    _prepare(ctx)
    if window.is_snapshot:
        if kind is PlanName.BUCKET:
            _snapshot_bucket(ctx)
        else:
            _snapshot_difference(ctx)
        ctx.code("return windows")
        convert = _converter(ctx)
        start, following = convert(P), convert(PNEXT)
        bounds = [f'{start}.alias("window_start")', f'{following}.alias("window_end")']
        epilogue(ctx, bounds, wid=f'{start}.alias("wid")')
        return
    if kind is PlanName.BUCKET:
        _bucket(ctx)
    elif kind is PlanName.SE_SLICES:
        _se_slices(ctx)
    elif kind is PlanName.SWEEP:
        _sweep(ctx)
    elif window.range is None:  # landmark windows
        _landmark_difference(ctx)
    else:
        _difference(ctx)
    if window.snap and kind is not PlanName.DIFFERENCE:
        _snap_runs(ctx)
    if ctx.query.emit_empty:
        emit_empty(ctx)
    ctx.code("return windows")
    epilogue(ctx, _grid_bounds(ctx))


# ------------------------------------------------------------------ constants, prepare, edges


def _scale(ctx: Context) -> int:
    return ctx.window.attr.scale


def _base(ctx: Context, value: int | float | Decimal) -> int | float:
    """A spec value in the generated code's base units: DECIMAL as an integer of 10^-scale units."""
    if isinstance(value, Decimal):
        return int(value.scaleb(_scale(ctx)))
    return value


def _constants(ctx: Context) -> None:
    window = ctx.window
    decimal = window.attr.domain is Domain.DECIMAL
    unit = f" (in units of {Decimal(1).scaleb(-_scale(ctx))})" if decimal else ""

    def note(value: int | float | Decimal) -> str:
        return f"{value}{unit}" if decimal else unit_note(window, value)  # type: ignore[arg-type]

    if decimal:
        ctx.constant("SCALE", 10 ** _scale(ctx), "DECIMAL attributes compared as exact integers: value × SCALE")
    if window.range is not None:
        ctx.constant("RANGE", _base(ctx, window.range), note(window.range))
    if window.slide is not None:
        ctx.constant("SLIDE", _base(ctx, window.slide), note(window.slide))
    if not window.is_snapshot:
        ctx.constant("ORIGIN", _base(ctx, window.origin), note(window.origin) if decimal else origin_note(window))


def _prepare(ctx: Context) -> None:
    """One row per located, well-formed event: keys, aggregate inputs, _t, _e and WHERE as the flag _in."""
    query, window = ctx.query, ctx.window
    assert window.end_attr is not None
    numbering(ctx, rows=window.numbers_rows, positions=False)
    code = ctx.stage("prepare", ctx.param, f"The stream's events in window terms: keys, inputs, {ATTR}, {END_ATTR}.")
    code(f"rows = {ctx.param}")
    keys = key_items(ctx)
    kept = [c for c in query.input_columns if c in aggregate_inputs(query) or c in ctx.key_columns.values()]
    items = [*(col(c) for c in kept), *keys]
    items.append(f"{attribute_expression(ctx, window.attr.name)}.alias({py(ATTR)})")
    items.append(f"{attribute_expression(ctx, window.end_attr.name)}.alias({py(END_ATTR)})")
    if window.align_first:
        items.append(f"F.col({py(FIRST)}).alias({py(ANCHOR)})")
    if query.where is not None:
        code.comment("WHERE filters window contents, not windows: it travels as a flag.")
        items.append(where_flag(query.where))
    unit = {Domain.TIMESTAMP: " in µs", Domain.DATE: " in days", Domain.DECIMAL: " × SCALE"}.get(window.attr.domain, "")
    code.comment(f"Keys, aggregate inputs, the event's start {ATTR} and end {END_ATTR}{unit}.")
    select_rows(ctx, items)
    code.comment(f"An event with no {window.attr.name} belongs to no window; one that ends before it starts is")
    code.comment("malformed: in no window, and no part of the data's end either.")
    code(f"rows = rows.where({T}.isNotNull() & ({E}.isNull() | ({E} >= {T})))")
    if window.align_first:
        code.comment(f"ALIGN FIRST: the grid is the ordinary one over values measured from {ANCHOR}.")
        for column in (ATTR, END_ATTR):
            code(f"rows = rows.withColumn({py(column)}, F.col({py(column)}) - F.col({py(ANCHOR)}))")
    code("return rows")


def _float(ctx: Context) -> bool:
    return ctx.window.attr.domain is Domain.FLOAT


def _first(ctx: Context, value: str = T) -> str:
    """The first window holding a value: ⌊(v − ORIGIN) / SLIDE⌋."""
    if _float(ctx):
        return f"first_window({value})"
    return f"F.floor(({value} - ORIGIN) / SLIDE)"


def _last_holding(ctx: Context, value: str) -> str:
    """The last window holding a value (a point event's last): ⌊(v − ORIGIN + RANGE) / SLIDE⌋ − 1."""
    if _float(ctx):
        return f"last_window({value})"
    return f"(F.floor(({value} - ORIGIN + RANGE) / SLIDE) - 1)"


def _last_before(ctx: Context, value: str) -> str:
    """The last window starting before an end: ⌈(e − ORIGIN + RANGE) / SLIDE⌉ − 2."""
    if _float(ctx):
        return f"last_window_before({value})"
    return f"(F.ceil(({value} - ORIGIN + RANGE) / SLIDE) - 2)"


def _windows_of_event(ctx: Context) -> tuple[str, str]:
    """first and last window-id of each event; an open-ended one ends at the data's last window (_last)."""
    last = (
        f'F.when({E}.isNull(), F.col("_last"))'
        f".when({E} == {T}, {_last_holding(ctx, T)})"
        f".otherwise({_last_before(ctx, E)})"
    )
    return _first(ctx), last


def _last_closed(ctx: Context) -> str:
    """The last window holding an event that has ended (NULL for an open-ended one): a point event's where
    its start is, another's the last starting before its end."""
    return f"F.when({E} == {T}, {_last_holding(ctx, T)}).otherwise({_last_before(ctx, E)})"


def _horizon(ctx: Context, source: str = "rows") -> None:
    """horizon: one row, _last, the data's last window (where open-ended events end)."""
    code = ctx.code
    code.comment("The end of the data: the last window starting at or before the largest start or end of any")
    code.comment("well-formed event (WHERE or not); open-ended events last to it.")
    code(f'horizon = {source}.agg(F.greatest(F.max({py(ATTR)}), F.max({py(END_ATTR)})).alias("_h"))')
    last = last_of_data(ctx, 'F.col("_h")')
    code(f'horizon = horizon.select({last}.alias("_last"))')


def last_of_data(ctx: Context, end: str) -> str:
    """The data's last window when the data ends at `end`: the last starting at or before it (a landmark
    window's start is its end less SLIDE)."""
    return _first(ctx, end) if ctx.window.range is None else _last_holding(ctx, end)


def _events(ctx: Context, source: str = "rows") -> str:
    """The rows that count (WHERE holds)."""
    return f"{source}.where({IN})" if ctx.query.where is not None else source


def _group_by(ctx: Context, lead: str) -> str:
    keys = ctx.key_list()
    return f"{lead}, {keys}" if keys else lead


# ------------------------------------------------------------------ bucket


def _bucket(ctx: Context) -> None:
    window = ctx.window
    code = ctx.stage("windows", "rows", "One row per window and key: each event copied into every window it overlaps.")
    _horizon(ctx)
    first, last = _windows_of_event(ctx)
    if window.range is None:
        code.comment("Landmark windows hold every event that starts before their end: from its first window (or 0)")
        code.comment("to the data's last.")
        first, last = f"F.greatest({first}, F.lit(0))", 'F.col("_last")'
    else:
        code.comment("Bucket: an event overlaps windows ⌊(start − o)/s⌋ … ⌈(end − o + r)/s⌉ − 2; a point event is")
        code.comment("where its start is; an open-ended one lasts to the data's last window.")
    code(f"first = {first}")
    code(f"last = {last}")
    code.comment("An event inside a gap between windows (SLIDE > RANGE) has first > last: it is in none.")
    code(f"tagged = {_events(ctx)}.crossJoin(F.broadcast(horizon)).where(first <= last)")
    code('tagged = tagged.withColumn("wid", F.explode(F.sequence(first, last)))')
    if intervals.clipped_reads(ctx.query):
        _clip(ctx, "tagged", _grid_edges(ctx, WID))
    code(f"grouped = tagged.groupBy({_group_by(ctx, WID)})")
    counts = []
    if window.snap:
        held, opened, _ = _snap_names(ctx)
        code.comment("SNAP: how many events each window holds, and how many of them are open-ended (on a stream, a")
        code.comment("run of only open-ended events can grow when the data's end moves).")
        counts = [f"F.count(F.lit(1)).alias({py(held)})", f"F.count(F.when({E}.isNull(), 1)).alias({py(opened)})"]
    code.call("windows", "grouped.agg", [*aggregate_items(ctx.query), *counts])


def _snap_names(ctx: Context) -> tuple[str, str, str]:
    """SNAP's run facts: the events a window holds, the open-ended ones among them, the key's open-ended ones."""
    taken = {c.name.lower() for c in ctx.query.stream.columns} | {a.name.lower() for a in ctx.query.aggregates}
    keys = ctx.keys()
    taken |= {k.lower() for k in keys}
    held = fresh_name("_held", taken)
    opened = fresh_name("_open", taken | {held})
    return held, opened, fresh_name("_keyopen", taken | {held, opened})


def _grid_edges(ctx: Context, wid: str) -> tuple[str | None, str]:
    """A grid window's start (None for landmarks) and end, in base units."""
    end = f"(ORIGIN + ({wid} + 1) * SLIDE)"
    start = None if ctx.window.range is None else f"({end} - RANGE)"  # landmark windows: unbounded
    return start, end


def _clip(ctx: Context, frame: str, edges: tuple[str | None, str | None]) -> None:
    """CLIP: the interval columns the aggregates read, clipped to each row's window [start, end)."""
    window, code = ctx.window, ctx.code
    assert window.end_attr is not None
    start, end = edges
    code.comment("CLIP (StreamInsight): aggregates see each event's lifetime clipped to the window.")
    for name, edge, pick in ((window.attr.name, start, "greatest"), (window.end_attr.name, end, "least")):
        if edge is None or name not in intervals.clipped_reads(ctx.query):
            continue
        value = col(name)
        if _float(ctx):
            value = f"F.nanvl({value}, F.lit(None))"
        edge_value = _converter(ctx)(edge)
        if pick == "least":
            value = f"F.coalesce({value}, {edge_value})"  # an open-ended event ends with the window
        clipped = f"F.{pick}({value}, {edge_value})"
        code(f"{frame} = {frame}.withColumn({py(name)}, {_typed(ctx, name, clipped)})")


def _typed(ctx: Context, name: str, value: str) -> str:
    """A clipped value in its column's type (DECIMAL widened to the window edges' scale)."""
    column = ctx.query.stream.require(name, None)
    if column.domain is Domain.DECIMAL:
        return value  # the edges' scale may be finer than the column's: keep the exact edge
    if column.domain in {Domain.TIMESTAMP, Domain.DATE}:
        return value
    return f"{value}.cast({py(column.type.lower())})"


# ------------------------------------------------------------------ se-slices


def _cells_of_event(ctx: Context) -> tuple[str, str]:
    """The first and last slice each event overlaps (an open-ended one: the last slice of the data)."""
    grid = ctx.plan.cells
    assert grid is not None
    if grid.split is not None:
        ctx.constant("SPLIT", _base(ctx, grid.split), "where in each slide the second slice starts")
        slide_of, before = _cell_of(ctx, T, "SLIDE"), _cell_before(ctx, E, "SLIDE")
        first = f"(2 * {slide_of} + F.when({T} - ORIGIN - {slide_of} * SLIDE >= SPLIT, 1).otherwise(0))"
        ended = f"(2 * {before} + F.when(ORIGIN + {before} * SLIDE + SPLIT < {E}, 1).otherwise(0))"
    else:
        first, ended = _cell_of(ctx, T, "SLIDE"), _cell_before(ctx, E, "SLIDE")
    open_last = f'((F.col("_last") + 1) * {grid.step} - 1)'
    last = f"F.when({E}.isNull(), {open_last}).when({E} == {T}, {first}).otherwise({ended})"
    return first, last


def _cell_of(ctx: Context, value: str, width: str) -> str:
    if _float(ctx):
        return f"cell_of({value}, {width})"
    return f"F.floor(({value} - ORIGIN) / {width})"


def _cell_before(ctx: Context, value: str, width: str) -> str:
    """The cell holding the last instant before an end (the cell of e − ε)."""
    if _float(ctx):
        return f"cell_before({value}, {width})"
    return f"(F.ceil(({value} - ORIGIN) / {width}) - 1)"


def _shares(ctx: Context, mask: str | None = None) -> list[tuple[StateGroup, list[str]]]:
    """Each state's share of an event (NULL: none), WHERE folded in."""
    decomposition = ctx.plan.decomposition
    assert decomposition is not None
    conditions = [c for c in (IN if ctx.query.where is not None else None, mask) if c]
    out = []
    for group in decomposition.groups:
        shares = []
        for share in group.contributions:
            value = expr(share)
            if conditions:
                value = f"F.when({' & '.join(conditions)}, {value})"
            shares.append(value)
        out.append((group, shares))
    return out


def _se_slices(ctx: Context) -> None:
    code = ctx.stage("windows", "rows", "One row per window and key: SE-slices, each event inserted into its slices.")
    plan, keys = ctx.plan, ctx.keys()
    grid = plan.cells
    assert grid is not None
    _horizon(ctx)
    first, last = _cells_of_event(ctx)
    shape = "two per slide (Pairs), cut where windows start and end" if grid.sliced else "one per slide"
    code.comment(f"SE-slices (Suzanne et al., TIME 2020): slices of the axis, {shape}; window w is the")
    code.comment(
        f"{grid.size} slices ending at slice (w + 1)·{grid.step} − 1. Each event is inserted into every slice it"
    )
    code.comment("overlaps: min and max into plain slices; cumulative states into the φ part of the slices it goes")
    code.comment("on past and the ϕ part of the one it ends in, so a window (ϕ of its slices, φ of its last) counts")
    code.comment("it once.")
    items = [
        *(col(k) for k in keys),
        f'{first}.alias("_first")',
        f'{last}.alias("_last")',
        'F.col("_last").alias("_h")',
    ]
    states = []
    for group, shares in _shares(ctx):
        for column, share in zip(group.columns, shares, strict=True):
            items.append(f"{share}.alias({py(column)})")
        states.append((group.operation, list(group.columns)))
    if ctx.window.snap:
        held, opened, _ = _snap_names(ctx)
        where = f"{IN} & " if ctx.query.where is not None else ""
        code.comment("SNAP: each window's count of events and of open-ended ones, as two more cumulative states.")
        items.append(f'F.when({where}F.lit(True), F.lit(1)).cast("bigint").alias({py(held)})')
        items.append(f'F.when({where}{E}.isNull(), F.lit(1)).cast("bigint").alias({py(opened)})')
        states += [("sum", [held]), ("sum", [opened])]
    code.call("events", "rows.crossJoin(F.broadcast(horizon)).select", items)
    code.comment("In the JVM when wql-kernels.jar is on the classpath (spark-submit --jars), else numpy via Arrow")
    code.comment("over Spark's sort of each partition, batch by batch, carrying the slices still in flight.")
    keywords: dict[str, object] = {
        "keys": keys,
        "first": "_first",
        "last": "_last",
        "horizon": "_h",
        "states": states,
        "size": grid.size,
        "step": grid.step,
    }
    code.call("windows", "slice_events", ["events"], keywords=keywords)
    code.comment("No window after the data's last (_h) holds an event: an open-ended one's slices reach into them.")
    code('windows = windows.withColumnRenamed("_first", "wid").where(F.col("wid") <= F.col("_h"))')
    _lower(ctx, keys, tuple(col(c) for c in _snap_names(ctx)[:2]) if ctx.window.snap else ())


def _lower(ctx: Context, keys: list[str], extra: tuple[str, ...] = ()) -> None:
    """Each aggregate from its partial states."""
    decomposition = ctx.plan.decomposition
    assert decomposition is not None
    ctx.code.comment("Each aggregate from its partial states.")
    items = ['F.col("wid")', *(col(c) for c in keys), *extra]
    items += [
        f"{col(sql) if sql.isidentifier() else expr(sql)}.alias({py(name)})" for name, sql in decomposition.lowers
    ]
    ctx.code.call("windows", "windows.select", items)


# ------------------------------------------------------------------ difference


class _Signed:
    """The difference plans' cell states: what the running combine carries for each decomposition state.

    A count or an integral sum is one signed sum (deltas +share, −share). A DOUBLE sum keeps its finite part
    signed and counts its NaN, +∞ and −∞ apart, so that a running total never carries them past the windows
    that hold them. Moments (count, mean, M2) keep the starting and the ending events' finite values as two
    states that only grow (Chan's combine), subtracted once per window, and count non-finite values apart.
    The sweep plan's min and max ("extreme") pass through as they are: its kernel keeps them apart from the deltas.
    """

    def __init__(self, ctx: Context) -> None:
        decomposition = ctx.plan.decomposition
        assert decomposition is not None
        self.ctx = ctx
        taken = {c.name.lower() for c in ctx.query.stream.columns}
        taken |= {c.lower() for g in decomposition.groups for c in g.columns}
        keys = ctx.keys()
        taken |= {k.lower() for k in keys} | {"_cell", "_sign", "_h", WHERE_FLAG, "_t", "_e", "_last", "_lo"}
        self.taken = taken
        self.apart: dict[str, tuple[str, str, str]] = {}  # state column -> its NaN, +∞, −∞ counts
        self.halves: dict[tuple[str, ...], tuple[tuple[str, str, str], tuple[str, str, str]]] = {}

    def name(self, wanted: str) -> str:
        return fresh_name(wanted, self.taken)

    def counts_apart(self, column: str) -> tuple[str, str, str]:
        if column not in self.apart:
            self.apart[column] = (self.name(f"{column}_nan"), self.name(f"{column}_pinf"), self.name(f"{column}_ninf"))
        return self.apart[column]

    def moment_halves(self, columns: tuple[str, ...]) -> tuple[tuple[str, str, str], tuple[str, str, str]]:
        if columns not in self.halves:
            n, mean, m2 = columns
            starts = (self.name(f"{n}_s"), self.name(f"{mean}_s"), self.name(f"{m2}_s"))
            ends = (self.name(f"{n}_e"), self.name(f"{mean}_e"), self.name(f"{m2}_e"))
            self.halves[columns] = (starts, ends)
        return self.halves[columns]

    def aggregations(
        self, shares: list[tuple[StateGroup, list[str]]], sign: str, starting: str, ending: str
    ) -> list[str]:
        """Cell-level aggregates over signed delta rows: `sign` is ±1 (NULL: not this delta), `starting` and
        `ending` mark the deltas that add an event and those that remove one."""
        items = []
        for group, values in shares:
            if group.operation == "moments":
                n, _, _ = group.columns
                present, value, _ = values
                items.append(f"F.sum({sign} * {present}).alias({py(n)})")
                starts, ends = self.moment_halves(group.columns)
                for half, condition in ((starts, starting), (ends, ending)):
                    kept = f"F.when(({condition}) & finite({value}), {value})"
                    items += [
                        f"F.count({kept}).alias({py(half[0])})",
                        f"F.avg({kept}).alias({py(half[1])})",
                        f"(F.var_pop({kept}) * F.count({kept})).alias({py(half[2])})",
                    ]
                items += self._apart(group.columns[1], value, sign)
                continue
            assert group.operation == "sum", group.operation
            for column, value, floating in zip(group.columns, values, group.floating, strict=True):
                if floating:
                    items.append(f"F.sum({sign} * F.when(finite({value}), {value})).alias({py(column)})")
                    items += self._apart(column, value, sign)
                else:
                    items.append(f"F.sum({sign} * {value}).alias({py(column)})")
        return items

    def _apart(self, column: str, value: str, sign: str) -> list[str]:
        nan, pinf, ninf = self.counts_apart(column)
        return [
            f"F.sum(F.when(F.isnan({value}), {sign})).alias({py(nan)})",
            f"F.sum(F.when({value} == {INF}, {sign})).alias({py(pinf)})",
            f"F.sum(F.when({value} == -{INF}, {sign})).alias({py(ninf)})",
        ]

    def event_states(
        self, shares: list[tuple[StateGroup, list[str]]]
    ) -> tuple[list[str], list[tuple[str, list[str]]], list[str]]:
        """Each event's share of the running combine's states (select items), the states and their placements:
        "signed" (+ at the first window, − one past the last), or a moments half only at the first window
        ("start") or only one past the last ("end"). In the order of kernel_states."""
        items: list[str] = []
        states: list[tuple[str, list[str]]] = []
        placements: list[str] = []

        def signed(column: str, value: str) -> None:
            items.append(f"{value}.alias({py(column)})")
            states.append(("sum", [column]))
            placements.append("signed")

        def apart(column: str, value: str) -> None:
            nan, pinf, ninf = self.counts_apart(column)
            signed(nan, f'F.when(F.isnan({value}), F.lit(1)).cast("bigint")')
            signed(pinf, f'F.when({value} == {INF}, F.lit(1)).cast("bigint")')
            signed(ninf, f'F.when({value} == -{INF}, F.lit(1)).cast("bigint")')

        for group, values in shares:
            if group.operation in ("min", "max"):  # the sweep's extremes: over the events in each window
                for column, value in zip(group.columns, values, strict=True):
                    items.append(f"{value}.alias({py(column)})")
                    states.append((group.operation, [column]))
                    placements.append("extreme")
                continue
            if group.operation == "moments":
                n, mean, _ = group.columns
                present, value, _ = values
                signed(n, f'{present}.cast("bigint")')
                kept = f"finite({value})"
                for half, place in zip(self.moment_halves(group.columns), ("start", "end"), strict=True):
                    items += [
                        f'F.when({kept}, F.lit(1)).cast("bigint").alias({py(half[0])})',
                        f'F.when({kept}, {value}).cast("double").alias({py(half[1])})',
                        f"F.when({kept}, F.lit(0.0)).alias({py(half[2])})",
                    ]
                    states.append(("moments", list(half)))
                    placements.append(place)
                apart(mean, value)
                continue
            assert group.operation == "sum", group.operation
            for column, value, floating in zip(group.columns, values, group.floating, strict=True):
                if floating:
                    signed(column, f'F.when(finite({value}), {value}).cast("double")')
                    apart(column, value)
                else:
                    signed(column, f'{value}.cast("bigint")')
        return items, states, placements

    def kernel_states(self) -> list[tuple[str, list[str]]]:
        """(operation, columns) for the running combine: sums, and each half of the moments."""
        decomposition = self.ctx.plan.decomposition
        assert decomposition is not None
        states: list[tuple[str, list[str]]] = []
        for group in decomposition.groups:
            if group.operation in ("min", "max"):
                states += [(group.operation, [c]) for c in group.columns]
                continue
            if group.operation == "moments":
                states.append(("sum", [group.columns[0]]))
                starts, ends = self.moment_halves(group.columns)
                states += [("moments", list(starts)), ("moments", list(ends))]
                states += [("sum", [c]) for c in self.counts_apart(group.columns[1])]
                continue
            for column, floating in zip(group.columns, group.floating, strict=True):
                states.append(("sum", [column]))
                if floating:
                    states += [("sum", [c]) for c in self.counts_apart(column)]
        return states

    def windows_states(self) -> list[str]:
        """The decomposition's states of each window, from the running combine's (select items)."""
        decomposition = self.ctx.plan.decomposition
        assert decomposition is not None
        items = []
        for group in decomposition.groups:
            if group.operation in ("min", "max"):
                items += [col(c) for c in group.columns]
                continue
            if group.operation == "moments":
                n, mean, m2 = group.columns
                (ns, ms, qs), (ne, me, qe) = self.moment_halves(group.columns)
                nan, pinf, ninf = (col(c) for c in self.counts_apart(mean))
                kept = f"({col(ns)} - {col(ne)})"
                shift = f"({col(ms)} - {col(me)})"
                finite_mean = f"F.when({kept} > 0, {col(ms)} + {shift} * {col(ne)} / {kept})"
                correction = f"{col(ns)} * {col(ne)} * {shift} ** 2 / {kept}"
                difference = f"({col(qs)} - {col(qe)} - {correction})"
                # One value has no spread, and M2 is never negative. The subtraction's rounding error is at most
                # about n·ε times its operands (n merges of Chan's formula): an M2 within that of zero is zero.
                rounding = f"{col(ns)} * F.lit(2.0**-52) * ({col(qs)} + {col(qe)} + {correction})"
                finite_m2 = (
                    f"F.when({kept} == 1, F.lit(0.0)).when({kept} > 1, "
                    f"F.when({difference} <= {rounding}, F.lit(0.0)).otherwise({difference}))"
                )
                undefined = f"({nan} > 0) | (({pinf} > 0) & ({ninf} > 0))"
                nonfinite = f"({nan} > 0) | ({pinf} > 0) | ({ninf} > 0)"
                items += [
                    col(n),
                    f'F.when({undefined}, F.lit(float("nan"))).when({pinf} > 0, {INF}).when({ninf} > 0, -{INF})'
                    f".otherwise({finite_mean}).alias({py(mean)})",
                    f'F.when({nonfinite}, F.lit(float("nan"))).otherwise({finite_m2}).alias({py(m2)})',
                ]
                continue
            for column, floating in zip(group.columns, group.floating, strict=True):
                if not floating:
                    items.append(col(column))
                    continue
                nan, pinf, ninf = (col(c) for c in self.counts_apart(column))
                items.append(
                    f'F.when(({nan} > 0) | (({pinf} > 0) & ({ninf} > 0)), F.lit(float("nan")))'
                    f".when({pinf} > 0, {INF}).when({ninf} > 0, -{INF}).otherwise({col(column)}).alias({py(column)})"
                )
        return items


def _finite_helper(ctx: Context) -> None:
    code = ctx.code
    code.blank()
    code("def finite(value):")
    code.indent()
    code('"""Whether a share is a number that running totals may carry: not NULL, NaN or infinite."""')
    code(f"return value.isNotNull() & ~F.isnan(value) & (F.abs(value) != {INF})")
    code.dedent()
    code.blank()


def _event_windows(ctx: Context) -> None:
    """first and last: each event's first window and its last (NULL for an open-ended one), and why."""
    code = ctx.code
    first, _ = _windows_of_event(ctx)
    code.comment("An event overlaps window [a, b) iff start < b and end > a; and one that ends at or before a")
    code.comment("started before b. So a window's states are those of the events starting before its end, less")
    code.comment("those of the events ending at or before its start: +share at the event's first window, −share")
    code.comment("one past its last (none for an open-ended event), and a running total over the window-ids.")
    code(f"first = {first}")
    code(f"last = {_last_closed(ctx)}  # NULL for an open-ended event")


def _difference(ctx: Context) -> None:
    """The difference plan's windows: each event's shares at its first window and one past its last, added up
    per key and window-id and combined along the ids in WQL's kernel (SNAP: in Spark, _difference_grouped)."""
    if ctx.window.snap:
        _difference_grouped(ctx)
        return
    keys = ctx.keys()
    signed = _Signed(ctx)
    code = ctx.stage(
        "windows", "rows", "One row per window and key: each event's signed deltas, combined per key in a kernel."
    )
    _finite_helper(ctx)
    _horizon(ctx)
    _event_windows(ctx)
    code.comment("An event inside a gap between windows (SLIDE > RANGE) has first > last: the kernel leaves it out.")
    if ctx.query.where is not None:
        code.comment("WHERE keeps an event out of every window, but not out of the data's end (horizon).")
    items, states, placements = signed.event_states(_shares(ctx))
    shifted = [
        *(col(k) for k in keys),
        'first.cast("bigint").alias("_first")',
        'last.cast("bigint").alias("_lastw")',
        'F.col("_last").alias("_h")',
        *items,
    ]
    code.call("events", f"{_events(ctx)}.crossJoin(F.broadcast(horizon)).select", shifted)
    code.comment("In the JVM when wql-kernels.jar is on the classpath (spark-submit --jars): each partition's deltas")
    code.comment("added into per-key arrays over the window-ids before the shuffle, merged and combined after it;")
    code.comment("else numpy via Arrow over Spark's sort of each partition, batch by batch, carrying the window-ids")
    code.comment("still in flight.")
    keywords: dict[str, object] = {
        "keys": keys,
        "first": "_first",
        "last": "_lastw",
        "horizon": "_h",
        "states": states,
        "placements": placements,
    }
    code.call("windows", "difference_windows", ["events"], keywords=keywords)
    code('windows = windows.withColumnRenamed("_first", "wid")')
    code.comment("Each window's states from the running totals: finite parts, NaN and infinities counted apart.")
    code.call("windows", "windows.select", ['F.col("wid")', *(col(k) for k in keys), *signed.windows_states()])
    _lower(ctx, keys)


def _sweep(ctx: Context) -> None:
    """The sweep plan's windows: each key's windows in order, events entering the running states at their first
    window and leaving after their last; min and max from a heap of the events in the window, in WQL's kernel."""
    keys = ctx.keys()
    signed = _Signed(ctx)
    code = ctx.stage("windows", "rows", "One row per window and key: each key's windows swept in order, in a kernel.")
    _finite_helper(ctx)
    _horizon(ctx)
    first, _ = _windows_of_event(ctx)
    code.comment("A sweep along each key's windows: an event enters at its first window and leaves after its last")
    code.comment("(an open-ended one never leaves). Sums and counts go into running totals, +share as an event")
    code.comment("enters and -share as it leaves; min and max come from a heap of the events in the window, which")
    code.comment("drops those that have left and those a better, longer event beats. Each event costs a few steps,")
    code.comment("whatever its length.")
    code(f"first = {first}")
    code(f"last = {_last_closed(ctx)}  # NULL for an open-ended event")
    code.comment("An event inside a gap between windows (SLIDE > RANGE) has first > last: the kernel leaves it out.")
    if ctx.query.where is not None:
        code.comment("WHERE keeps an event out of every window, but not out of the data's end (horizon).")
    items, states, placements = signed.event_states(_shares(ctx))
    extra: tuple[str, ...] = ()
    if ctx.window.snap:
        held, opened, _ = _snap_names(ctx)
        code.comment("SNAP: each window's count of events and of open-ended ones, as two more running counts.")
        items.append(f'F.lit(1).cast("bigint").alias({py(held)})')
        items.append(f'F.when({E}.isNull(), F.lit(1)).cast("bigint").alias({py(opened)})')
        states += [("sum", [held]), ("sum", [opened])]
        placements += ["signed", "signed"]
        extra = (col(held), col(opened))
    located = [
        *(col(k) for k in keys),
        'first.cast("bigint").alias("_first")',
        'last.cast("bigint").alias("_lastw")',
        'F.col("_last").alias("_h")',
        *items,
    ]
    code.call("events", f"{_events(ctx)}.crossJoin(F.broadcast(horizon)).select", located)
    code.comment("In the JVM when wql-kernels.jar is on the classpath (spark-submit --jars), after Spark's sort of")
    code.comment("each key's events by first window; else numpy via Arrow over the same sort, batch by batch, carrying")
    code.comment("the window-ids and the events still in flight.")
    keywords: dict[str, object] = {
        "keys": keys,
        "first": "_first",
        "last": "_lastw",
        "horizon": "_h",
        "states": states,
        "placements": placements,
    }
    code.call("windows", "sweep_windows", ["events"], keywords=keywords)
    code('windows = windows.withColumnRenamed("_first", "wid")')
    code.comment("Each window's states from the running ones: finite parts, NaN and infinities counted apart.")
    code.call("windows", "windows.select", ['F.col("wid")', *(col(k) for k in keys), *extra, *signed.windows_states()])
    _lower(ctx, keys, extra)


def _difference_grouped(ctx: Context) -> None:
    """SNAP on the difference plan: the deltas grouped by key and window-id in Spark, for the cells' change
    counts (_moves) that SNAP's runs need, then the cell kernel's running combine."""
    window, keys = ctx.window, ctx.keys()
    signed = _Signed(ctx)
    code = ctx.stage(
        "windows", "rows", "One row per window and key: each event's signed deltas, then a running combine per key."
    )
    _finite_helper(ctx)
    _event_windows(ctx)
    code.comment("_h: the last window of the data each event reaches (open-ended events last to the largest).")
    code(f"reach = {_last_holding(ctx, f'F.greatest({T}, F.coalesce({E}, {T}))')}")
    code.comment("An event inside a gap between windows (SLIDE > RANGE) has first > last and is in none.")
    live = "(last.isNull() | (first <= last))"
    shares = _shares(ctx, mask="live")
    code(f"live = {live}")
    deltas = (
        'F.explode(F.array(F.struct(first.alias("_cell"), F.lit(1).alias("_sign")), '
        'F.struct((last + 1).alias("_cell"), F.lit(-1).alias("_sign")))).alias("_d")'
    )
    share_items = [
        f"{share}.alias({py(f'_share{i}_{j}')})" for i, (_, s) in enumerate(shares) for j, share in enumerate(s)
    ]
    counted: list[str] = []
    if window.snap:
        held, opened, _ = _snap_names(ctx)
        held_share, open_share = signed.name(f"{held}_share"), signed.name(f"{opened}_share")
        alive = f"{IN} & live" if ctx.query.where is not None else "live"
        share_items += [
            f"F.when({alive}, F.lit(1)).alias({py(held_share)})",
            f"F.when({alive} & {E}.isNull(), F.lit(1)).alias({py(open_share)})",
        ]
        counted = [
            f'F.sum(F.col("_d._sign") * F.col({py(share)})).alias({py(name)})'
            for share, name in ((held_share, held), (open_share, opened))
        ]
    code.call("deltas", "rows.select", [*(col(k) for k in keys), 'reach.alias("_h")', deltas, *share_items])
    named = [(g, [f"F.col({py(f'_share{i}_{j}')})" for j in range(len(s))]) for i, (g, s) in enumerate(shares)]
    code('deltas = deltas.where(F.col("_d._cell").isNotNull())')
    grouped = ", ".join([*(col(k) for k in keys), 'F.col("_d._cell").alias("_cell")'])
    sign = 'F.col("_d._sign")'
    items = ['F.max("_h").alias("_h")', *signed.aggregations(named, sign, f"{sign} > 0", f"{sign} < 0")]
    if window.snap:
        code.comment("SNAP: _moves, the deltas that count (the first state is the row count); each window's count")
        code.comment("of events and of open-ended ones, as two more signed states.")
        items += ['F.count("_share0_0").alias("_moves")', *counted]
    code.call("cells", f"deltas.groupBy({grouped}).agg", items)
    code.comment("The combine runs from each key's first cell to the data's last window; cells are shifted so")
    code.comment("that the first is 0.")
    code('bounds = cells.agg(F.min("_cell").alias("_lo"), F.max("_h").alias("_hi"))')
    columns = [c for _, names in signed.kernel_states() for c in names]
    shifted = [
        *(col(k) for k in keys),
        '(F.col("_cell") - F.col("_lo")).alias("_cell")',
        '(F.col("_hi") - F.col("_lo")).alias("_last")',
        'F.col("_lo")',
        *(col(c) for c in columns),
    ]
    states = signed.kernel_states()
    if window.snap:
        shifted += ['F.col("_moves")', col(held), col(opened)]
        states += [("sum", [held]), ("sum", [opened])]
    code.call("cells", "cells.crossJoin(F.broadcast(bounds)).select", shifted)
    if window.snap:
        order = f"Window.partitionBy({ctx.key_list()})" if keys else "Window"
        code.comment("SNAP: only the cells where the key's events change matter (the others add nothing); each")
        code.comment("carries itself (_moved) and the next change (_until), which a running max hands to the windows.")
        code('cells = cells.where(F.col("_moves") > 0).withColumn("_moved", F.col("_cell"))')
        code(f'cells = cells.withColumn("_until", F.lead("_cell").over({order}.orderBy("_cell")))')
        states += [("max", ["_moved"]), ("max", ["_until"])]
    _combine(ctx, states)
    code('windows = windows.withColumn("wid", F.col("_cell") + F.col("_lo"))')
    extra: tuple[str, ...] = ()
    if window.snap:
        _snap_from_moves(ctx)
        code('windows = windows.withColumn("_last", F.col("_last") + F.col("_lo"))')
        extra = ('F.col("_wend")', col(held), col(opened), 'F.col("_last")')
    code.comment("Each window's states from the running totals: finite parts, NaN and infinities counted apart.")
    code.call("windows", "windows.select", ['F.col("wid")', *(col(k) for k in keys), *extra, *signed.windows_states()])
    _lower(ctx, keys, extra)
    if window.snap:
        _key_open(ctx)


def _combine(ctx: Context, states: list[tuple[str, list[str]]], last: str = "_last") -> None:
    """A running combine of each key's ordered cells (the landmark mode of WQL's cell kernel)."""
    code, keys = ctx.code, ctx.keys()
    if keys:
        code(f"cells = cells.repartition({ctx.key_list()})")
    else:
        code("cells = cells.coalesce(1)  # no keys: all cells combine in one task")
    code.comment("In the JVM when wql-kernels.jar is on the classpath (spark-submit --jars), else numpy via Arrow.")
    keywords: dict[str, object] = {"keys": keys, "cell": "_cell", "states": states, "size": 1, "step": 1, "last": last}
    code.call("windows", "combine_cells", ["cells"], keywords=keywords)


def _snap_from_moves(ctx: Context) -> None:
    """SNAP on the difference plan: the windows where the key's events changed, each to the next change."""
    code = ctx.code
    code.comment("SNAP: a window whose events are those of the window before it is not reported again; each")
    code.comment("window where the events changed stands for the run up to the next change (or the data's end).")
    code('windows = windows.where(F.col("_moved") == F.col("_cell"))')
    code.comment("A run ends before the next change (_until > _cell), or with the data when there is none.")
    until = 'F.when(F.col("_until") > F.col("_cell"), F.col("_until") - 1).otherwise(F.col("_last"))'
    code(f'windows = windows.withColumn("_wend", {until} + F.col("_lo"))')


def _landmark_difference(ctx: Context) -> None:
    keys = ctx.keys()
    code = ctx.stage(
        "windows", "rows", "One row per window and key: each event's states at its first window, combined."
    )
    code.comment("A landmark window holds every event that starts before its end: each event's states go to its")
    code.comment("first window, and window w is the running combine of every cell up to w.")
    items = [f'F.max({_first(ctx, f"F.greatest({T}, F.coalesce({E}, {T}))")}).alias("_h")']
    for group, shares in _shares(ctx):
        if group.operation == "moments":
            n, mean, m2 = group.columns
            present, value, _ = shares
            items += [
                f"F.sum({present}).alias({py(n)})",
                f"F.avg({value}).alias({py(mean)})",
                f"(F.var_pop({value}) * F.count({value})).alias({py(m2)})",
            ]
            continue
        fold = OPERATIONS[group.operation].spark_fold  # the Spark aggregate the state algebra names
        for column, share in zip(group.columns, shares, strict=True):
            items.append(f"F.{fold}({share}).alias({py(column)})")
    grouped = ", ".join([*(col(k) for k in keys), f'{_first(ctx)}.alias("_cell")'])
    code.call("cells", f"rows.groupBy({grouped}).agg", items)
    code.comment("Landmark windows are reported up to the window holding the data's largest start or end.")
    code('cells = cells.crossJoin(F.broadcast(cells.agg(F.max("_h").cast("bigint").alias("_last"))))')
    decomposition = ctx.plan.decomposition
    assert decomposition is not None
    _combine(ctx, [(g.operation, list(g.columns)) for g in decomposition.groups])
    code('windows = windows.withColumnRenamed("_cell", "wid")')
    _lower(ctx, keys)


# ------------------------------------------------------------------ on a stream


def last_reached(ctx: Context, end: str) -> str | None:
    """Open-ended events last to the data's end, and their windows go no further (§8.10): the data's last
    window when it ends at `end`. SNAP's runs have a rule of their own, in is_final; snapshot windows end
    at endpoints."""
    if ctx.window.is_snapshot or ctx.window.snap:
        return None
    return last_of_data(ctx, end)


def store_request(ctx: Context) -> None:
    """None: interval events and snapshot windows keep their events in the checkpoint's files, not in Spark's state
    store (docs/semantics.md §8.12)."""
    return None


def stream_rules(ctx: Context) -> None:
    """is_final, first_open, retain and missed. Every intervals plan keeps events (rows) between triggers and
    recomputes the open windows from them, so the batch stages serve the stream unchanged; an open window
    is exact because every event that overlaps it is kept. SNAP's runs have rules of their own (_snap_final,
    _snap_retain)."""
    window = ctx.window
    if window.is_snapshot:
        _snapshot_rules(ctx)
        return
    final_rules(ctx, _snap_final if window.snap else None)
    code = ctx.rules
    code("def retain(rows, punctuation):")
    code.indent()
    if window.snap:
        _snap_retain(ctx)
    elif window.range is None:  # landmark windows
        code('"""A landmark window holds every event since the stream began: all rows stay."""')
        code("return rows")
    else:
        code('"""What windows not yet final can still need: the events that end at or after the first open')
        code("window's start (one that ends there keeps the data's end where the whole stream has it), and")
        code('every open-ended event."""')
        code("if punctuation is None:")
        code("    return rows")
        relative_punctuation(ctx, ANCHOR)
        code("start = ORIGIN + (first_open(punctuation) + 1) * SLIDE - RANGE")
        code(f"return rows.where({E}.isNull() | ({E} >= start))")
    code.dedent()
    code.blank(2)
    missed_rule(ctx, None if window.range is None else _missed_windows)  # landmark windows: the grid's words


def _snap_final(ctx: Context) -> None:
    """is_final for SNAP's rows (docs/semantics.md §8.10): a run w … w+k is final once window w+k+1 is,
    unless that window lies past the data's last and the run holds exactly the key's open-ended events,
    which a later event that moves the data's end would give window w+k+1 too."""
    code = ctx.rules
    held, opened, keyed = (f"F.col({py(c)})" for c in _snap_names(ctx))
    code("def is_final(punctuation):")
    code.indent()
    code('"""A run of windows w … _wend is final once the window after it is (the punctuation reaches its end):')
    code("its events are known then and differ from the run's, so the run cannot grow. Except at the data's")
    code("end: past the data's last window (_last), a run that holds exactly its key's open-ended events grows")
    code('when a later event moves the data\'s end, so it waits for that, or the drain."""')
    after = from_anchor(ctx.window, 'ORIGIN + (F.col("_wend") + 2) * SLIDE')
    code(f'grows = (F.col("_wend") >= F.col("_last")) & ({held} == {opened}) & ({opened} == {keyed})')
    code(f"return ({after} <= punctuation) & ~grows")
    code.dedent()
    code.blank(2)


def _snap_retain(ctx: Context) -> None:
    """retain's body for SNAP: each key's events back to the last window of its last final run."""
    code, keys = ctx.rules, ctx.keys()
    code('"""What runs not yet final can still need: per key, the events in or after the last window of its')
    code("last final run (so that the window is computed exactly and an open run starts where it does, not")
    code("merged with it), all of a key with no final run, every open-ended event, and the events with the")
    code("data's largest start or end (where the data ends). Runs rebuilt before that window end in final")
    code('runs\' windows, are final themselves and are not emitted again."""')
    code("if punctuation is None:")
    code("    return rows")
    taken = {c.name.lower() for c in ctx.query.stream.columns} | {k.lower() for k in keys} | set(_snap_names(ctx))
    reached, top = fresh_name("_reached", taken), fresh_name("_top", taken)
    ending = f'F.max("_wend").alias({py(reached)})'
    code.comment("The last window of each key's last final run.")
    final = "windows(rows).where(is_final(punctuation))"
    code(f"ends = {final}.groupBy({ctx.key_list()}).agg({ending})" if keys else f"ends = {final}.agg({ending})")
    reach = f"F.greatest({T}, F.coalesce({E}, {T}))"
    code(f"rows = rows.crossJoin(F.broadcast(rows.agg(F.max({reach}).alias({py(top)}))))")
    if keys:
        on = " & ".join(_matches("r", "x", keys))
        code(f'rows = rows.alias("r").join(ends.alias("x"), {on}, "left")')
        code(f'rows = rows.select(F.col("r.*"), F.col({py("x." + spark_name(reached))}))')
    else:
        code("rows = rows.crossJoin(F.broadcast(ends))")
    code(f"last = {_last_closed(ctx)}  # NULL for an open-ended event")
    needed = f"F.col({py(reached)}).isNull() | {E}.isNull() | (last >= F.col({py(reached)}))"
    if ctx.query.where is not None:
        needed = f"{IN} & ({needed})"  # an event outside WHERE is in no window: only the data's end needs it
    code(f"kept = ({needed}) | ({reach} == F.col({py(top)}))")
    code(f"return rows.where(kept).drop({py(reached)}, {py(top)})")


def _snapshot_rules(ctx: Context) -> None:
    """is_final, retain and missed for snapshot windows (docs/semantics.md §8.10). An event still to come
    starts at or after the punctuation p and ends at or after its start, so it adds endpoints only at ≥ p
    and is alive only from p on: a snapshot [eᵢ, eᵢ₊₁) is final once p ≥ eᵢ₊₁. SLACK … GENEROUS and EMIT
    CHANGES are refused (disorder.py), so a late event is in no snapshot."""
    window, code = ctx.window, ctx.rules
    assert window.end_attr is not None
    code("def is_final(punctuation):")
    code.indent()
    code('"""A snapshot [p, next) is final once the punctuation reaches next: an event still to come starts at or')
    code("after the punctuation, so it can neither add an endpoint before next nor be alive in the snapshot. A")
    code('partition\'s last snapshot (no next) is final only when the stream is drained."""')
    code(f"return {PNEXT}.isNotNull() & ({PNEXT} <= punctuation)")
    code.dedent()
    code.blank(2)
    parts = [col(p) for p in _partition_keys(ctx)]
    keys = ctx.keys()
    taken = {c.name.lower() for c in ctx.query.stream.columns} | {k.lower() for k in keys}
    reached = fresh_name("_reached", taken)
    code("def retain(rows, punctuation):")
    code.indent()
    code('"""What snapshots not yet final can still need. Per partition, x0 is the largest endpoint (start or')
    code("end) at or before the punctuation; the events that end at or after x0, and the open-ended ones, stay.")
    code("Every endpoint at or after x0 is one of theirs (an event starting there ends there or later), so the")
    code("snapshots from x0 on, the only ones not final, are rebuilt with their exact bounds, and every event")
    code("alive in one of them ends after its start, so it stays too. The snapshots rebuilt before x0 end at or")
    code("before the punctuation: emitted already, and left out by is_final. The event with the largest")
    code("endpoint always stays, so the last snapshot, and where open-ended events last to, are kept too. A")
    code('partition with no endpoint at or before the punctuation keeps all its events."""')
    code("if punctuation is None:")
    code("    return rows")
    code(f"partition = Window.partitionBy({', '.join(parts)})")
    code.comment("A partition's largest start or end at or before the punctuation (F.greatest skips NULLs).")
    code(
        f"x0 = F.greatest(F.max(F.when({T} <= punctuation, {T})).over(partition), "
        f"F.max(F.when({E} <= punctuation, {E})).over(partition))"
    )
    code(f"rows = rows.withColumn({py(reached)}, x0)")
    kept = f"F.col({py(reached)}).isNull() | {E}.isNull() | ({E} >= F.col({py(reached)}))"
    code(f"return rows.where({kept}).drop({py(reached)})")
    code.dedent()
    code.blank(2)
    code("def missed(late, punctuation):")
    code.indent()
    code('"""CONSISTENT: a late event is in no snapshot; it misses those of its partition it is alive in."""')
    whose = "its partition's " if parts else ""
    start, end = f'{col(window.attr.name)}.cast("string")', f'{col(window.end_attr.name)}.cast("string")'
    code(f"t, e = {attribute_expression(ctx, window.attr.name)}, {attribute_expression(ctx, window.end_attr.name)}")
    text = (
        f'F.when(e.isNull(), F.format_string("{whose}snapshots from %s on", {start}))'
        '.when(e < t, F.lit("none: it ends before it starts"))'
        f'.when(e == t, F.format_string("{whose}snapshot at %s", {start}))'
        f'.otherwise(F.format_string("{whose}snapshots from %s until %s", {start}, {end}))'
    )
    code(f'return late.withColumn("_missed", {text})')
    code.dedent()
    code.blank(2)


def _missed_windows(ctx: Context, closed: str, generous: bool) -> str:
    """The windows a late event belongs to (missed writes the text): from its first to its last, or with the
    data for an open-ended one; with GENEROUS only those already closed."""
    window, code = ctx.window, ctx.rules
    assert window.end_attr is not None
    code(f"e = {attribute_expression(ctx, window.end_attr.name)}")
    if window.align_first:
        code(f"e = e - F.col({py(FIRST)})")
    code.comment("An open-ended event belongs to every window from its first on.")
    first = _first(ctx, "t")
    last = f"F.when(e == t, {_last_holding(ctx, 't')}).otherwise({_last_before(ctx, 'e')})"
    # An event between windows (SLIDE > RANGE) belongs to none; GENEROUS placed one whose windows are all
    # open in them, and it missed none: no empty range ("windows 5 to 4") is written.
    nothing = missed_none(generous)
    if generous:
        last = f"F.least({last}, {closed})"
        ended = (
            f'F.when({first} <= {closed}, F.format_string("windows %d to %d", {first}, {closed}))'
            f".otherwise(F.lit({py(nothing)}))"
        )
    else:
        ended = f'F.format_string("windows %d and every later one", {first})'
    bounded = (
        f'F.when({first} <= {last}, F.format_string("windows %d to %d", {first}, {last}))'
        f".otherwise(F.lit({py(nothing)}))"
    )
    return f"F.when(e.isNull(), {ended}).otherwise({bounded})"


# ------------------------------------------------------------------ SNAP on bucket and se-slices


def _snap_runs(ctx: Context) -> None:
    """SNAP: keep the windows where the key's events changed, each standing for the run to the next change."""
    code, keys = ctx.code, ctx.keys()
    first, last = _windows_of_event(ctx)
    code.comment("SNAP: a window whose events are those of the window before it is not reported again. A key's")
    code.comment("events change only at an event's first window and one past its last; each window at such a")
    code.comment("change stands for the run up to the next one (or the data's last window).")
    code(f"first, last = {first}, {last}")
    located = f"{_events(ctx)}.crossJoin(F.broadcast(horizon)).where(first <= last)"
    moved = f'F.explode(F.array(first, F.when({E}.isNotNull(), last + 1))).alias("_moved")'
    code(f"moves = {located}.select({', '.join([*(col(k) for k in keys), moved])})")
    code('moves = moves.where(F.col("_moved").isNotNull()).distinct()')
    order = f"Window.partitionBy({ctx.key_list()})" if keys else "Window"
    code(f'moves = moves.withColumn("_next", F.lead("_moved").over({order}.orderBy("_moved")))')
    matches = [f"F.col({py('w.' + spark_name(k))}).eqNullSafe(F.col({py('m.' + spark_name(k))}))" for k in keys]
    matches.append('(F.col("w.wid") == F.col("m._moved"))')
    code(f'runs = windows.alias("w").join(moves.alias("m"), {" & ".join(matches)}).crossJoin(F.broadcast(horizon))')
    names = ["wid", *keys, *(a.name for a in ctx.query.aggregates), *_snap_names(ctx)[:2]]
    kept = [f"F.col({py('w.' + spark_name(n))}).alias({py(n)})" for n in names]
    kept.append('F.coalesce(F.col("m._next") - 1, F.col("_last")).alias("_wend")')
    kept.append('F.col("_last")')
    code.call("windows", "runs.select", kept)
    _key_open(ctx)


def _key_open(ctx: Context) -> None:
    """SNAP: each run with its key's count of open-ended events (after WHERE). A run past the data's last
    window can grow on a stream only if it holds exactly those (docs/semantics.md §8.10)."""
    code, keys = ctx.code, ctx.keys()
    keyed = _snap_names(ctx)[2]
    count = f"F.count(F.lit(1)).alias({py(keyed)})"
    opened = f"{_events(ctx)}.where({E}.isNull())"
    code.comment("SNAP: each key's open-ended events, which a run must hold all of to grow with the data's end.")
    if not keys:
        code(f"windows = windows.crossJoin(F.broadcast({opened}.agg({count})))")
        return
    code(f'opened = {opened}.groupBy({ctx.key_list()}).agg({count}).alias("o")')
    on = " & ".join(_matches("w", "o", keys))
    code(f'windows = windows.alias("w").join(opened, {on}, "left")')
    found = f"F.coalesce(F.col({py('o.' + spark_name(keyed))}), F.lit(0)).alias({py(keyed)})"
    code(f'windows = windows.select(F.col("w.*"), {found})')


# ------------------------------------------------------------------ snapshots


def _partition_keys(ctx: Context) -> list[str]:
    return ctx.partition_columns()


def _endpoints(ctx: Context) -> None:
    """points: each partition's distinct endpoints, numbered (_idx), with the next one (_pnext) and the count."""
    code = ctx.code
    parts = _partition_keys(ctx)
    lead = [col(p) for p in parts]
    code.comment("Snapshot windows: each partition's distinct endpoints (starts and ends of well-formed events,")
    code.comment("WHERE or not), numbered; snapshot i is [p_i, p_i+1), and the last has no end.")
    starts = ", ".join([*lead, T + '.alias("_v")'])
    ends = ", ".join([*lead, E + '.alias("_v")'])
    code(f"points = rows.select({starts})")
    code(f"points = points.union(rows.where({E}.isNotNull()).select({ends}))")
    code("points = points.distinct()")
    part = f"Window.partitionBy({', '.join(lead)})"
    code(f'ordered = {part}.orderBy("_v")')
    code("points = points.select(")
    code.indent()
    for item in [
        *lead,
        'F.col("_v")',
        '(F.row_number().over(ordered) - 1).alias("_idx")',
        'F.lead("_v").over(ordered).alias("_pnext")',
        f'(F.count(F.lit(1)).over({part}) - 1).alias("_lastidx")',
    ]:
        code(item + ",")
    code.dedent()
    code(")")


def _matches(left: str, right: str, columns: list[str]) -> list[str]:
    return [
        f"F.col({py(left + '.' + spark_name(c))}).eqNullSafe(F.col({py(right + '.' + spark_name(c))}))" for c in columns
    ]


def _snapshot_bucket(ctx: Context) -> None:
    code, keys = (
        ctx.stage("windows", "rows", "One row per snapshot and key: each event copied into its snapshots."),
        ctx.keys(),
    )
    parts = _partition_keys(ctx)
    _endpoints(ctx)
    code.comment("Each event's snapshots: from the one at its start to the one before its end (a point event:")
    code.comment("the one at its start; an open-ended event: to the partition's last).")
    code(f'events = {_events(ctx)}.alias("e")')
    at_start = " & ".join([*_matches("e", "s", parts), '(F.col("e._t") == F.col("s._v"))'])
    code(f'events = events.join(points.alias("s"), {at_start})')
    start_items = ['F.col("e.*")', 'F.col("s._idx").alias("_i0")', 'F.col("s._lastidx").alias("_lastidx")']
    code(f'events = events.select({", ".join(start_items)}).alias("e")')
    at_end = " & ".join([*_matches("e", "s", parts), '(F.col("e._e") == F.col("s._v"))'])
    code(f'events = events.join(points.alias("s"), {at_end}, "left")')
    code('events = events.select(F.col("e.*"), F.col("s._idx").alias("_i1"))')
    last = f'F.when({E}.isNull(), F.col("_lastidx")).when({E} == {T}, F.col("_i0")).otherwise(F.col("_i1") - 1)'
    code(f'tagged = events.withColumn("_idx", F.explode(F.sequence(F.col("_i0"), {last})))')
    if intervals.clipped_reads(ctx.query):
        code(
            'tagged = tagged.alias("t").join(points.alias("s"), '
            + " & ".join([*_matches("t", "s", parts), '(F.col("t._idx") == F.col("s._idx"))'])
            + ")"
        )
        code('tagged = tagged.select(F.col("t.*"), F.col("s._v").alias("_p"), F.col("s._pnext").alias("_pnext"))')
        _clip(ctx, "tagged", (P, PNEXT))
    code(f"grouped = tagged.groupBy({_group_by(ctx, IDX)})")
    code.call("windows", "grouped.agg", aggregate_items(ctx.query))
    code.comment("Each snapshot's bounds from its number.")
    on = " & ".join([*_matches("w", "s", parts), '(F.col("w._idx") == F.col("s._idx"))'])
    code(f'windows = windows.alias("w").join(points.alias("s"), {on})')
    names = [*keys, *(a.name for a in ctx.query.aggregates)]
    kept = [f"F.col({py('w.' + spark_name(n))}).alias({py(n)})" for n in names]
    kept += ['F.col("s._v").alias("_p")', 'F.col("s._pnext").alias("_pnext")', 'F.col("s._v").alias("wid")']
    code.call("windows", "windows.select", kept)


def _snapshot_difference(ctx: Context) -> None:
    keys = ctx.keys()
    signed = _Signed(ctx)
    code = ctx.stage(
        "windows",
        "rows",
        "One row per snapshot and key: each event's signed deltas at its endpoints, a running combine per partition.",
    )
    _finite_helper(ctx)
    code.comment("One stage from the events, as the grid's difference plan: a stream keeps events between triggers")
    code.comment("and computes the open snapshots from them.")
    code.comment("Snapshot [p, next) holds the events with start ≤ p < end, and the point events at p: +share at")
    code.comment("the start, −share at the end, and for a point event −share just after its start (_after), so")
    code.comment("that a running total over the partition's endpoints gives every snapshot.")
    deltas = (
        f'F.explode(F.array(F.struct({T}.alias("_v"), F.lit(1).alias("_sign"), F.lit(False).alias("_after")), '
        f'F.struct({E}.alias("_v"), F.lit(-1).alias("_sign"), ({E} == {T}).alias("_after")))).alias("_d")'
    )
    shares = _shares(ctx)
    share_items = [
        f"{share}.alias({py(f'_share{i}_{j}')})" for i, (_, s) in enumerate(shares) for j, share in enumerate(s)
    ]
    code.call("deltas", "rows.select", [*(col(k) for k in keys), deltas, *share_items])
    code('deltas = deltas.where(F.col("_d._v").isNotNull())')
    named = [(g, [f"F.col({py(f'_share{i}_{j}')})" for j in range(len(s))]) for i, (g, s) in enumerate(shares)]
    columns_now = [c for _, names in signed.kernel_states() for c in names]
    sign, after = 'F.col("_d._sign")', 'F.col("_d._after")'
    now_items = signed.aggregations(named, f"F.when(~{after}, {sign})", f"{sign} > 0", f"({sign} < 0) & ~{after}")
    renamed = {c: signed.name(f"{c}_after") for c in columns_now}
    after_items = signed.aggregations(named, f"F.when({after}, {sign})", "F.lit(False)", f"({sign} < 0) & {after}")
    after_items = [_renamed(item, renamed) for item in after_items]
    grouped = ", ".join([*(col(k) for k in keys), 'F.col("_d._v").alias("_v")'])
    code.call("cells", f"deltas.groupBy({grouped}).agg", [*now_items, *after_items])
    part = f"Window.partitionBy({ctx.key_list()})"
    code.comment("Endpoints numbered per partition: cell 2i holds endpoint i's deltas, cell 2i + 1 the point events'")
    code.comment("removals, which take effect from the next snapshot on.")
    code(f'ordered = {part}.orderBy("_v")')
    code("cells = cells.select(")
    code.indent()
    for item in [
        'F.col("*")',
        '(F.row_number().over(ordered) - 1).alias("_idx")',
        'F.lead("_v").over(ordered).alias("_pnext")',
        f'(F.count(F.lit(1)).over({part}) - 1).alias("_lastidx")',
    ]:
        code(item + ",")
    code.dedent()
    code(")")
    code('cells = cells.withColumn("_phase", F.explode(F.array(F.lit(0), F.lit(1))))')
    phase0 = 'F.col("_phase") == 0'
    items = [*(col(k) for k in keys), '(2 * F.col("_idx") + F.col("_phase")).alias("_cell")', 'F.col("_lastidx")']
    for column in columns_now:
        items.append(f"F.when({phase0}, {col(column)}).otherwise({col(renamed[column])}).alias({py(column)})")
    items += [f'F.when({phase0}, F.col("_v")).alias("_p")', f'F.when({phase0}, F.col("_pnext")).alias("_pnext")']
    code.call("cells", "cells.select", items)
    code('cells = cells.crossJoin(F.broadcast(cells.agg((2 * F.max("_lastidx") + 1).alias("_last"))))')
    states = [*signed.kernel_states(), ("max", ["_p"]), ("max", ["_pnext"])]
    _combine(ctx, states)
    code.comment("Snapshots are the even cells of each partition; _p and _pnext, carried by a running max, are")
    code.comment("the snapshot's endpoint and the next (the same after the last endpoint: no end).")
    code('windows = windows.where((F.col("_cell") % 2 == 0) & (F.col("_cell") <= 2 * F.col("_lastidx")))')
    code('windows = windows.withColumn("_pnext", F.when(F.col("_pnext") > F.col("_p"), F.col("_pnext")))')
    code('windows = windows.withColumn("wid", F.col("_p"))')
    code.call(
        "windows",
        "windows.select",
        ['F.col("wid")', *(col(k) for k in keys), P, PNEXT, *signed.windows_states()],
    )
    _lower(ctx, keys, (P, PNEXT))


def _renamed(item: str, renamed: dict[str, str]) -> str:
    """An aggregation item with its alias renamed (the after-phase copy of a state)."""
    for old, new in renamed.items():
        suffix = f".alias({py(old)})"
        if item.endswith(suffix):
            return item[: -len(suffix)] + f".alias({py(new)})"
    return item


# ------------------------------------------------------------------ bounds


def _converter(ctx: Context):
    """Base units back to the attribute's type."""
    domain = ctx.window.attr.domain
    scale = _scale(ctx)

    def convert(value: str) -> str:
        if domain is Domain.TIMESTAMP:
            return f"F.timestamp_micros({value})"
        if domain is Domain.DATE:
            return f"F.date_from_unix_date({value})"
        if domain is Domain.DECIMAL:
            return f'({value}.cast("decimal(19,0)") / F.lit(SCALE)).cast("decimal(38,{scale})")'
        return f"({value})"

    return convert


def _grid_bounds(ctx: Context) -> list[str]:
    window = ctx.window
    convert = _converter(ctx)
    wid = 'F.col("wid")'
    end_wid = 'F.col("_wend")' if window.snap else wid
    start, _ = _grid_edges(ctx, wid)
    _, end = _grid_edges(ctx, end_wid)
    start = None if start is None else from_anchor(window, start)
    end = from_anchor(window, end)
    if start is None:
        kind = {
            Domain.TIMESTAMP: "timestamp",
            Domain.DATE: "date",
            Domain.FLOAT: "double",
            Domain.DECIMAL: f"decimal(38,{_scale(ctx)})",
        }.get(window.attr.domain, "bigint")
        start_value = f'F.lit(None).cast("{kind}")'
    else:
        start_value = convert(start)
    return [f'{start_value}.alias("window_start")', f'{convert(end)}.alias("window_end")']


__all__ = ["ONE", "Raw", "generate"]
