"""What every plan's stages share: reading rows into window terms, and finishing results.

A job's query is a pipeline of stage functions (see `wql.compiler.plans.base`):
`prepare` numbers rows (before WHERE, so WHERE never renumbers them), applies
WHERE, computes key columns and the window attribute in base units, and drops
tuples whose attribute is NULL; `finish` turns window-ids into bounds, names
keys and computes select expressions, HAVING, ORDER BY and LIMIT. The family
code generators write the stages in between.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp

from wql.compiler.analysis import Query
from wql.compiler.codegen.calendar_axis import cell_of_attribute
from wql.compiler.codegen.emit import Code, col, comment, expr, number, py, spark_name
from wql.compiler.kinds import kind_of
from wql.compiler.plans import Plan
from wql.compiler.schema import ROW_NUM, Domain
from wql.compiler.units import format_date, format_timestamp, quantity_text
from wql.compiler.windows import Window
from wql.grammar.errors import WQLNotSupportedError
from wql.grammar.expressions import parse_sql_expression

ATTR = "_t"  # the window attribute in base units
END_ATTR = "_e"  # interval events: the end attribute in base units
WHERE_FLAG = "_in"  # whether WHERE holds, where a plan keeps the tuples it drops (landmarks, interval events)
IN = f"F.col({py(WHERE_FLAG)})"  # the rows WHERE keeps, where the flag stands in for it
POSITION = "_pos"  # partitioned row-based windows: the position within the partition
ANCHOR = "_anchor"  # ALIGN FIRST: the first arrival's attribute (per partition); _t and _e are measured from it
FIRST = "__wql_first"  # _anchor while the stream's own columns are still there: __wql_… never meets one

COUNT_LIKE = {"count", "count_if", "count_distinct", "approx_count_distinct"}
ARRAY_LIKE = {"collect_list", "collect_set"}


@dataclass
class Stage:
    """One stage function of the generated query: `def name(parameter, *extra) -> DataFrame`."""

    name: str
    parameter: str
    doc: str
    code: Code = field(default_factory=Code)
    extra: tuple[str, ...] = ()  # further parameters, with their defaults


@dataclass
class Context:
    query: Query
    plan: Plan
    param: str  # the stream's DataFrame, the first stage's parameter
    code: Code = field(default_factory=Code)  # the stage being written
    stages: list[Stage] = field(default_factory=list)
    rules: Code = field(default_factory=Code)  # a streaming job's window rules: is_final, retain, missed
    constants: list[tuple[str, str, str]] = field(default_factory=list)  # (name, literal, comment)
    key_columns: dict[str, str] = field(default_factory=dict)  # key name -> column holding it before the epilogue
    extra_keys: list[str] = field(default_factory=list)  # columns windows carry like keys (ALIGN FIRST: _anchor)
    streaming: bool = False  # the stages of a streaming job: a family may carry what its stream rules read

    def stage(self, name: str, parameter: str, doc: str, extra: tuple[str, ...] = ()) -> Code:
        """Start writing the next stage function; its code goes to `self.code` until the next one starts."""
        stage = Stage(name, parameter, doc, extra=extra)
        self.stages.append(stage)
        self.code = stage.code
        return stage.code

    @property
    def window(self) -> Window:
        return self.query.window

    def constant(self, name: str, value: int | float | str, note: str = "") -> str:
        if name not in {c[0] for c in self.constants}:
            self.constants.append((name, py(value) if isinstance(value, str) else number(value), note))
        return name

    def partition_columns(self) -> list[str]:
        """The PATTR key columns of the rows and windows frames, in key order."""
        return [self.key_columns[k.name] for k in self.query.keys if k.origin == "partition"]

    def keys(self) -> list[str]:
        """Key columns in the rows/windows frames, in key order (then any the plan carries with them)."""
        return [*(self.key_columns[k.name] for k in self.query.keys), *self.extra_keys]

    def key_list(self) -> str:
        return ", ".join(col(c) for c in self.keys())


def unit_note(window: Window, amount: int | float) -> str:
    domain = window.attr.domain
    if domain is Domain.TIMESTAMP:
        return quantity_text(amount, domain).lower() + " in µs"
    if domain is Domain.DATE:
        return quantity_text(amount, domain).lower()
    if domain is Domain.ROW_NUM:
        return quantity_text(amount, domain).lower()
    return ""


def origin_note(window: Window) -> str:
    if window.align_first:
        return f"ALIGN {'START ' if window.origin != 0 else ''}FIRST: from the first arrival's value, {ANCHOR}"
    if window.attr.domain is Domain.TIMESTAMP:
        return format_timestamp(int(window.origin)) + " UTC"
    if window.attr.domain is Domain.DATE:
        return format_date(int(window.origin))
    return ""


def declare_window_constants(ctx: Context) -> None:
    window = ctx.window
    if window.calendar is not None:
        declare_calendar_constants(ctx)
        return
    if window.range is not None:
        ctx.constant("RANGE", window.range, unit_note(window, window.range))
    if window.slide is not None:
        note = unit_note(window, window.slide) if window.is_grid else "rows"
        ctx.constant("SLIDE", window.slide, note)
    if window.is_grid:
        ctx.constant("ORIGIN", window.origin, origin_note(window))


def declare_calendar_constants(ctx: Context) -> None:
    """A calendar grid's numbers count cells (semantics §2.21): RANGE and ORIGIN its periods, SLIDE its cells."""
    window = ctx.window
    calendar = window.calendar
    assert calendar is not None and window.range is not None and window.slide is not None
    ctx.constant("RANGE", window.range, calendar_note(window.range, calendar.period, window.zone))
    ctx.constant("SLIDE", window.slide, calendar_note(window.slide, calendar.cell, window.zone))
    ctx.constant("ORIGIN", window.origin, f"{window.origin_text().split(chr(39))[1]}, counted in {calendar.period}s")
    if window.zone is not None:
        ctx.constant("ZONE", window.zone, "whose local days and months the cells are")


def calendar_note(amount: int | float, unit: str, zone: str | None) -> str:
    count = int(amount)
    local = "local " if unit == "day" and zone else ""
    return f"{count} {local}{unit}{'s' if count != 1 else ''}"


def attribute_expression(ctx: Context, name: str) -> str:
    """Spark expression for an attribute in base units, over the stream's own columns."""
    window = ctx.window
    stream = ctx.query.stream
    if name == ROW_NUM:
        if window.per_partition_rows:
            return col(POSITION)
        return col(stream.row_num) if stream.row_num else col(ROW_NUM)
    domain = stream.require(name, None).domain
    if domain is Domain.TIMESTAMP:
        return f"F.unix_micros({col(name)})"
    if domain is Domain.DATE:
        return f"F.unix_date({col(name)})"
    if domain is Domain.FLOAT:
        return f"F.nanvl({col(name)}, F.lit(None))"  # NaN has no place on the axis: like NULL
    if domain is Domain.DECIMAL:  # interval events: exact integers in units of 10^-scale
        return f'({col(name)} * F.lit(SCALE)).cast("bigint")'
    return col(name)


def recorded_attribute(ctx: Context) -> str:
    """The window attribute of the stream's rows, in base units; under Kafka's late-record rule NULL for a
    record WHERE filters out, which Kafka's aggregation never sees (it moves no stream time)."""
    value = attribute_expression(ctx, ctx.window.attr.name)
    where = ctx.query.where
    if ctx.window.kafka_rule and where is not None:
        return f"F.when(F.coalesce({expr(where)}, F.lit(False)), {value})"
    return value


def window_attribute_rule(ctx: Context) -> None:
    """window_attribute: what a streaming job's punctuations and lateness compare, on the stream's rows."""
    code = ctx.rules
    code("def window_attribute(rows):")
    code.indent()
    code(f'"""{attribute_note(ctx, raw=True)}: what punctuations and lateness compare."""')
    code(f"return {recorded_attribute(ctx)}")
    code.dedent()
    code.blank(2)


def numbering(ctx: Context, *, rows: bool, positions: bool, seen: str | None = None) -> None:
    """The number stage, when the plan needs arrival positions: with `rows`, row_num over the whole stream
    (unless a ROW_NUM column gives it); with `positions`, _pos, the position within the PATTR partition;
    with `seen`, the attribute Kafka's stream time runs over, _seen, its value as each row arrives."""
    window, stream = ctx.window, ctx.query.stream
    numbered = rows and not stream.row_num
    if not numbered and not positions and not window.align_first and seen is None:
        return
    doc = (
        "row_num: the arrival position, numbered before WHERE so that WHERE never renumbers rows"
        if numbered
        else "_pos: the position within the partition, in arrival order"
        if positions
        else "the first arrival's value, where the grid starts"
        if window.align_first
        else "_seen: Kafka's stream time as each row arrives"
    )
    if seen is not None and numbered:
        doc = "row_num, the arrival position (before WHERE), and _seen, Kafka's stream time as each row arrives"
    extra = (
        "first_row: int = 0",
        "offsets=None",
        *(("anchors=None",) if window.align_first else ()),
        *(("seen=None",) if seen is not None else ()),
    )
    code = ctx.stage("number", ctx.param, doc + ".", extra=extra)
    code(f"rows = {ctx.param}")
    if numbered:
        code.comment("Arrival position first_row, first_row + 1, …: on a stream, triggers continue each other's count.")
        code("rows = number_rows(rows, first_row)")
    if seen is not None:
        code.comment("Kafka's stream time as each record arrives (_seen), across keys, from what earlier triggers saw:")
        code.comment("a record below _seen − GRACE is late, and one below _seen − GRACE − RANGE is dropped.")
        order = f", order={py(stream.row_num)}" if stream.row_num else ""
        code(f"rows = stream_time(rows, {seen}, seen{order})")
    if positions:
        parts = ", ".join(col(p) for p in window.partition_by)
        order = col(stream.row_num) if stream.row_num else col(ROW_NUM)
        code.comment(
            f"PATTR {', '.join(window.partition_by)}: count rows within each partition (backward context, FCF)."
        )
        code(f"by_partition = Window.partitionBy({parts}).orderBy({order})")
        code(f"rows = rows.withColumn({py(POSITION)}, F.row_number().over(by_partition) - 1)")
        code("if offsets is not None:  # a stream: earlier triggers' rows come first")
        code(f"    rows = continue_positions(rows, offsets, {py(list(window.partition_by))})")
    if window.align_first:
        first_arrival(ctx)
    code("return rows")


def key_items(ctx: Context) -> list[str]:
    """Select items for the keys; expression keys, names Spark would mangle, and names that could
    meet the plans' own underscored columns (_t, _next, …) travel as _keyN."""
    items = []
    for index, key in enumerate(ctx.query.keys):
        if key.column is not None and spark_name(key.column) == key.column and not key.column.startswith("_"):
            ctx.key_columns[key.name] = key.column
        else:
            internal = f"_key{index}"
            ctx.key_columns[key.name] = internal
            items.append(f"{expr(key.sql)}.alias({py(internal)})")
    return items


def attribute_items(ctx: Context) -> list[str]:
    window = ctx.window
    value = cell_of_attribute(window) if window.calendar is not None else attribute_expression(ctx, window.attr.name)
    items = [f"{value}.alias({py(ATTR)})"]
    if window.end_attr is not None:
        items.append(f"{attribute_expression(ctx, window.end_attr.name)}.alias({py(END_ATTR)})")
    return items


def attribute_note(ctx: Context, raw: bool = False) -> str:
    """What `_t` holds (or with `raw` the attribute itself, in base units): on a calendar grid, a cell."""
    window = ctx.window
    if window.calendar is not None and not raw:
        unit = window.calendar.cell
        what = "local day" if unit == "day" and window.zone else unit
        return f"the {what} of {window.attr.name}, counted from 1970"
    return {
        Domain.TIMESTAMP: f"{window.attr.name} in microseconds since the epoch",
        Domain.DATE: f"{window.attr.name} in days since the epoch",
        Domain.ROW_NUM: "the row number",
    }.get(window.attr.domain, window.attr.name)


def select_rows(ctx: Context, columns: list[str]) -> None:
    ctx.code.call("rows", "rows.select", columns)


def prologue(ctx: Context) -> None:
    """The prepare stage: one row per tuple that can belong to a window, with keys, aggregate inputs and _t."""
    query, window = ctx.query, ctx.window
    numbering(ctx, rows=window.numbers_rows, positions=window.per_partition_rows)
    code = ctx.stage("prepare", ctx.param, f"The stream's tuples in window terms: keys, aggregate inputs, {ATTR}.")
    code(f"rows = {ctx.param}")
    flag: list[str] = []
    if flags_where(ctx):
        for line in kind_of(window).every_tuple_reason(WHERE_FLAG):
            code.comment(line)
        flag = [where_flag(query.where)]
    elif query.where is not None:
        code.comment("WHERE filters window contents.")
        code(f"rows = rows.where({expr(query.where)})")
    keys = key_items(ctx)
    kept = [c for c in query.input_columns if c in aggregate_inputs(query) or c in ctx.key_columns.values()]
    code.comment(f"Keys, aggregate inputs and the window attribute ({ATTR}: {attribute_note(ctx)}).")
    anchor = [f"F.col({py(FIRST)}).alias({py(ANCHOR)})"] if window.align_first else []
    select_rows(ctx, [*(col(c) for c in kept), *keys, *attribute_items(ctx), *anchor, *flag])
    if not window.attr.is_row_num:
        code.comment(f"A tuple whose {window.attr.name} is NULL belongs to no window.")
        code(f"rows = rows.where({col(ATTR)}.isNotNull())")
    if window.align_first:
        code.comment(f"ALIGN FIRST: the grid is the ordinary one over values measured from {ANCHOR}.")
        for column in (ATTR, END_ATTR) if window.end_attr is not None else (ATTR,):
            code(f"rows = rows.withColumn({py(column)}, F.col({py(column)}) - F.col({py(ANCHOR)}))")
    code("return rows")


def where_flag(where: str) -> str:
    """The select item of the flag: WHERE holds (NULL counts as false, as WHERE has it)."""
    return f"F.coalesce({expr(where)}, F.lit(False)).alias({py(WHERE_FLAG)})"


def flags_where(ctx: Context) -> bool:
    """Whether the prepared rows keep the tuples WHERE drops, flagged `_in` false: landmark grid windows are
    reported up to the window holding the stream's last value (docs/semantics.md §2.3), which WHERE does not
    move, so the plans need that value from every tuple."""
    return kind_of(ctx.window).needs_every_tuple(ctx.query)


def first_arrival(ctx: Context) -> None:
    """ALIGN FIRST: __wql_first, the window attribute of the first arrival (least row_num; ties, only possible
    with a declared ROW_NUM column, by least value) per PATTR partition, among tuples that have one. It is
    found in the number stage, before WHERE and before late tuples are set apart: the window spec applies
    to the stream as it arrives, WHERE to window contents. On a stream, `anchors` holds the first arrivals
    of partitions that earlier triggers saw; only a partition new to this trigger takes one from its rows."""
    window, code = ctx.window, ctx.code
    stream = ctx.query.stream
    order = col(stream.row_num) if stream.row_num else col(ROW_NUM)
    value = attribute_expression(ctx, window.attr.name)
    parts = list(window.partition_by)
    scope = f"each partition's ({', '.join(parts)}) grid starts" if parts else "the grid starts"
    code.comment(f"ALIGN FIRST: {scope} at its first arrival (backward context, FCF).")
    code(f'arrival = F.struct({order}.alias("r"), {value}.alias("a"))')
    code(f"present = rows.where({value}.isNotNull())")
    renamed = anchor_columns(window)
    first = f'F.min(arrival)["a"].alias({py(FIRST)})'
    if parts:
        grouped = ", ".join(f"{col(p)}.alias({py(r)})" for p, r in zip(parts, renamed, strict=True))
        code(f"firsts = present.groupBy({grouped}).agg({first})")
    else:
        code(f"firsts = present.agg({first})")
    code("if anchors is not None:  # a stream: partitions an earlier trigger saw keep the first arrival it saw")
    earlier = " & ".join(f"F.col({py('f.' + r)}).eqNullSafe(F.col({py('a.' + r)}))" for r in renamed)
    condition = f", {earlier}" if parts else ""
    code(f'    fresh = firsts.alias("f").join(anchors.alias("a"){condition}, how="left_anti")')
    code(f"    firsts = anchors.unionByName(fresh.where(F.col({py(FIRST)}).isNotNull()))")
    if not parts:
        code(f"    firsts = firsts.agg(F.first({py(FIRST)}, ignorenulls=True).alias({py(FIRST)}))")
        code("rows = rows.crossJoin(F.broadcast(firsts))")
        return
    matches = " & ".join(f"{col(p)}.eqNullSafe(F.col({py(r)}))" for p, r in zip(parts, renamed, strict=True))
    dropped = ", ".join(py(r) for r in renamed)
    code(f"rows = rows.join(firsts, {matches}).drop({dropped})")


def anchor_columns(window: Window) -> list[str]:
    """ALIGN FIRST: the PATTR columns under the names the first arrivals table gives them (kept on a stream)."""
    return [f"__wql_p{i}" for i in range(len(window.partition_by))]


def anchors_rule(ctx: Context) -> None:
    """anchors_seen: on a stream with ALIGN FIRST, the first arrivals to keep for the next trigger."""
    window, code = ctx.window, ctx.rules
    parts = list(window.partition_by)
    renamed = anchor_columns(window)
    items = ", ".join([*(f"{col(p)}.alias({py(r)})" for p, r in zip(parts, renamed, strict=True)), py(FIRST)])
    code("def anchors_seen(rows, anchors):")
    code.indent()
    code('"""The first arrival of every partition seen so far (ALIGN FIRST), for the triggers to come."""')
    code(f"seen = rows.select({items}).where(F.col({py(FIRST)}).isNotNull())")
    code("if anchors is not None:")
    code("    seen = anchors.unionByName(seen)")
    code("return seen.dropDuplicates()")
    code.dedent()
    code.blank(2)


# Columns the plans add to rows next to the stream's own; a stream column the query carries by name
# (an aggregate input, a WHERE column) must not share one of these names.
INTERNAL_COLUMNS = (
    frozenset(
        (
            ATTR,
            END_ATTR,
            POSITION,
            ANCHOR,
            *"_in _d _w _rows _next _position _through _first _arrival _rank _cell _center".split(),
        )
    )
    | {"_last", "_lo", "_hi", "_gone", "_leaving", "_before", "_after", "_missed"}
    | {"_h", "_p", "_pnext", "_idx", "_lastidx", "_phase", "_moves", "_moved", "_wend", "_v"}
)


def check_internal_names(query: Query) -> None:
    """Refuse, rather than mix up, a stream column named like a column the plans add."""
    read = set(aggregate_inputs(query))
    if query.where is not None:
        read |= {str(c.name) for c in parse_sql_expression(query.where).find_all(exp.Column)}
    clashes = sorted(c for c in read if c.lower() in INTERNAL_COLUMNS or re.fullmatch(r"_key\d+", c.lower()))
    if clashes:
        raise WQLNotSupportedError(
            f"column {clashes[0]!r} has the name of a column WQL's generated code adds for its own use",
            hint="rename it in the source (WQL's own columns are " + ", ".join(sorted(INTERNAL_COLUMNS)) + ")",
        )


def aggregate_inputs(query: Query) -> set[str]:
    """Input columns the aggregates read."""
    names = {c.name.lower(): c.name for c in query.stream.columns}
    used = set()
    for call in query.aggregates:
        for sql in [*call.args, *([call.filter] if call.filter else [])]:
            for column in parse_sql_expression(sql).find_all(exp.Column):
                used.add(names.get(str(column.name).lower(), str(column.name)))
    return used


def emit_empty(ctx: Context) -> None:
    """EMIT EMPTY: every window between each key's first and last, empty ones with zero/NULL aggregates."""
    code, query = ctx.code, ctx.query
    keys = ctx.keys()
    code.comment("EMIT EMPTY: add the empty windows between each key's first and last window.")
    group = ", ".join(col(k) for k in keys)
    span = f"windows.groupBy({group})" if keys else "windows"
    code(f'span = {span}.agg(F.min("wid").alias("_lo"), F.max("wid").alias("_hi"))')
    selected = ", ".join([*(col(k) for k in keys), 'F.explode(F.sequence("_lo", "_hi")).alias("wid")'])
    code(f"every = span.select({selected})")
    matches = " & ".join(
        [
            *(f"F.col({py('e.' + spark_name(k))}).eqNullSafe(F.col({py('w.' + spark_name(k))}))" for k in keys),
            '(F.col("e.wid") == F.col("w.wid"))',
        ]
    )
    code(f'joined = every.alias("e").join(windows.alias("w"), {matches}, "left")')
    filled = []
    for call in query.aggregates:
        column = f"F.col({py('w.' + spark_name(call.name))})"
        if call.function in COUNT_LIKE:
            filled.append(f"F.coalesce({column}, F.lit(0)).alias({py(call.name)})")
        elif call.function in ARRAY_LIKE:
            filled.append(f"F.coalesce({column}, F.array()).alias({py(call.name)})")
        else:
            filled.append(f"{column}.alias({py(call.name)})")
    keep = [
        *(f"F.col({py('e.' + spark_name(k))}).alias({py(k)})" for k in keys),
        'F.col("e.wid").alias("wid")',
        *filled,
    ]
    code.call("windows", "joined.select", keep)


def from_anchor(window: Window, bound: str) -> str:
    """A bound measured from the first arrival (ALIGN FIRST) back on the attribute's own axis."""
    return f"F.col({py(ANCHOR)}) + ({bound})" if window.align_first else bound


def from_anchor_back(window: Window, value: str) -> str:
    """A value of the attribute's own axis measured from the first arrival (ALIGN FIRST), as the grid is."""
    return f"({value} - F.col({py(ANCHOR)}))" if window.align_first else value


def epilogue(ctx: Context, bounds: list[str], wid: str = 'F.col("wid")') -> None:
    """The finish stage: wid, bounds, keys, then select expressions; HAVING, ORDER BY, LIMIT."""
    query = ctx.query
    code = ctx.stage("finish", "windows", "Window bounds, keys and select expressions; HAVING, ORDER BY, LIMIT.")
    items = [wid, *bounds]
    for key in query.keys:
        column = ctx.key_columns[key.name]
        items.append(col(column) if column == key.name else f"{col(column)}.alias({py(key.name)})")
    names = {k.name for k in query.keys}
    for call in query.aggregates:
        if call.name not in names:
            items.append(col(call.name))
    code.comment("Window bounds from the window-id; keys and aggregates under their result names.")
    code.call("result", "windows.select", items)
    aggregate_names = {a.name for a in query.aggregates}
    computed = [o for o in query.outputs if not (o.name in aggregate_names and o.sql.strip("`") == o.name)]
    if computed:
        code.comment("Select expressions over the aggregates.")
        for output in computed:
            code(f"result = result.withColumn({py(output.name)}, {expr(output.sql)})")
    if query.having is not None:
        code.comment("HAVING filters windows.")
        code(f"result = result.where({expr(query.having)})")
    if query.order_by:
        orders = []
        for key in query.order_by:
            direction = "desc" if key.descending else "asc"
            nulls = key.nulls or ("last" if key.descending else "first")
            orders.append(f"{expr(key.sql)}.{direction}_nulls_{nulls}()")
        code(f"result = result.orderBy({', '.join(orders)})")
    if query.limit is not None:
        code(f"result = result.limit({query.limit})")
    columns = ", ".join(py(c) for c in query.columns)
    code(
        f"return result.select({', '.join(col(c) for c in query.columns)})"
        if _needs_quoting(query)
        else f"return result.select({columns})"
    )


def _needs_quoting(query: Query) -> bool:
    return any(spark_name(c) != c for c in query.columns)


def aggregate_items(query: Query) -> list[str]:
    return [f"{expr(call.sql)}.alias({py(call.name)})" for call in query.aggregates]


__all__ = ["ATTR", "END_ATTR", "Context", "comment", "epilogue", "prologue"]
