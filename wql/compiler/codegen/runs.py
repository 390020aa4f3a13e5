"""Query bodies for sessions and frames (data-driven windows): the fold, starts and scan plans.

A session or frame is a maximal run of consecutive tuples of a partition in
(attribute, row_num) order, named by its first tuple's value (semantics.md §2).
`prepare` gives each tuple its keys, `_t`, `_pos` (arrival, where ties matter),
`_in` (WHERE) and what the window's rule reads (`_p`, `_x`, `_c0`, …); `windows`
numbers each key's runs and aggregates them into one row per window with `wid`
(the first `_t`) and `_last` (the last `_t`); `finish` turns them into
window_start and window_end.

The numpy passes (the fold without the JVM kernel or for what it leaves, the
scan) take each partition sorted by Spark in window order (`in_window_order`:
keys, `_t`, `_pos`; Spark's sort spills) and walk its Arrow batches one at a
time, carrying the window in flight, so they hold a batch or two and the
windows in flight, not a key's tuples.

`windows` is exact on any subset of a key's rows that begins where one of the
key's windows begins: it never looks before a key's first row, so a streaming
job keeps the rows from each key's first window not yet final on and runs it
on them again with the next trigger's rows (`stream_rules`). On a stream, row_num
comes from the number stage, which continues the count of earlier triggers, and
each frame also carries `_close`, the value of the tuple that closed it, which
says when it is final.
"""

from __future__ import annotations

from sqlglot import exp

from wql.compiler.aggregates import unwrap
from wql.compiler.codegen.common import (
    ATTR,
    Context,
    aggregate_inputs,
    attribute_items,
    attribute_note,
    epilogue,
    key_items,
    numbering,
    select_rows,
    unit_note,
)
from wql.compiler.codegen.emit import Code, Raw, col, expr, py, spark_name
from wql.compiler.codegen.run_rules import (
    at_or_before,
    closing_point,
    closing_text,
    end_bound,
    is_final_rule,
    keep_labelled,
    kernel_rule,
    mark_starts,
    missed_text,
    rule_columns,
    run_rule,
    run_shape,
)
from wql.compiler.kernels.contract import SessionStore
from wql.compiler.plans import ONE, PlanName
from wql.compiler.plans.runs import in_jvm, in_state_store
from wql.compiler.schema import ROW_NUM, Domain
from wql.grammar.expressions import parse_sql_expression, render_sql

LABEL = "_w"  # the number of a tuple's window within its key (starts and scan plans)
WID = 'F.col("wid")'


def generate(ctx: Context) -> None:
    """prepare, windows, finish."""
    constants(ctx)
    prepare(ctx)
    what = run_shape(ctx).noun
    doc = {
        PlanName.FOLD: f"each key's {what}s found and their states folded in one pass",
        PlanName.STARTS: f"{what} starts marked from predecessors, numbered, grouped",
        PlanName.SCAN: f"each key's {what}s numbered in one numpy pass, grouped",
    }[ctx.plan.name]
    code = ctx.stage("windows", "rows", f"One row per {what} and key: {doc}.")
    code.comment(f"wid is each {what}'s first {ATTR}, _last its last.")
    if ctx.plan.name is PlanName.FOLD:
        fold(ctx)
    else:
        if ctx.plan.name is PlanName.STARTS:
            starts(ctx)
        else:
            scan(ctx)
        group(ctx)
    ctx.code("return windows")
    epilogue(ctx, bounds(ctx), wid=f'{_converter(ctx).format(WID)}.alias("wid")')


def constants(ctx: Context) -> None:
    window, rule = ctx.window, run_rule(ctx)
    if rule.gap is not None:
        ctx.constant("GAP", rule.gap, unit_note(window, rule.gap))
    if rule.longest is not None:
        ctx.constant("LONGEST", rule.longest, "MAX: " + unit_note(window, rule.longest))
    if rule.minimum is not None:
        note = f"{int(rule.minimum)} rows" if rule.minimum_rows else unit_note(window, rule.minimum)
        ctx.constant("MINIMUM", rule.minimum, note)
    if rule.delta is not None:
        delta = int(rule.delta // 1) if rule.on_integral else rule.delta  # integers: within ⌊δ⌋, exactly
        ctx.constant("DELTA", delta, f"in the units of {rule.expression_text()}")


def _partitions(ctx: Context) -> list[str]:
    return ctx.partition_columns()


def _groups(ctx: Context) -> list[str]:
    return [ctx.key_columns[k.name] for k in ctx.query.keys if k.origin == "group"]


def _ties(ctx: Context) -> bool:
    """Whether the order of tuples with equal values matters: for frames, not for sessions."""
    return run_shape(ctx).ties and not ctx.window.attr.is_row_num


def _closes(ctx: Context) -> bool:
    """Whether windows carry `_close`: a stream's frames, whose finality depends on the tuple after them."""
    return ctx.streaming and run_shape(ctx).closed_by_tuple


def prepare(ctx: Context) -> None:
    query, window, rule = ctx.query, ctx.window, run_rule(ctx)
    # A stream numbers rows across triggers, so equal values keep their arrival order in the state too.
    arrivals = ctx.streaming and _ties(ctx) and not query.stream.row_num
    numbering(ctx, rows=window.attr.is_row_num or arrivals, positions=False)
    code = ctx.stage(
        "prepare",
        ctx.param,
        f"The stream's tuples in window terms: keys, {ATTR}, arrival, WHERE as a flag (_in), what the rule reads.",
    )
    code(f"rows = {ctx.param}")
    if _ties(ctx) and not query.stream.row_num and not ctx.streaming:
        code.comment(f"row_num orders tuples of equal {window.attr.name}: frames take them in arrival order.")
        code("rows = arrival_order(rows)")
    if rule.kafka and query.where is not None:
        code.comment("Kafka filters records before it forms sessions, so WHERE comes first here.")
        code(f"rows = rows.where({expr(query.where)})")
    keys = key_items(ctx)
    columns = [*(col(ctx.key_columns[k.name]) for k in query.keys if ctx.key_columns[k.name] == k.column), *keys]
    columns += attribute_items(ctx)
    if _ties(ctx):
        columns.append(f'{col(query.stream.row_num or ROW_NUM)}.alias("_pos")')
    if query.where is not None and not rule.kafka:
        columns.append(f'F.coalesce({expr(query.where)}, F.lit(False)).alias("_in")')
    columns += rule_columns(ctx)  # what its rule reads (a predicate, x, running aggregates)
    if ctx.plan.name is PlanName.FOLD:
        assert ctx.plan.decomposition is not None
        for state in ctx.plan.decomposition.groups:
            for column, contribution in zip(state.columns, state.contributions, strict=True):
                if contribution != ONE:  # the kernels count tuples themselves
                    columns.append(f"{expr(contribution)}.alias({py(column)})")
    else:
        keys_in = set(ctx.key_columns.values())
        columns += [col(c) for c in query.input_columns if c in aggregate_inputs(query) and c not in keys_in]
    code.comment(f"Keys, the window attribute ({ATTR}: {attribute_note(ctx)}) and what the windows read.")
    select_rows(ctx, columns)
    code.comment(f"A tuple whose {window.attr.name} is NULL is in no window and does not end one.")
    code(f"rows = rows.where({col(ATTR)}.isNotNull())")
    code("return rows")


def starts(ctx: Context) -> None:
    """Window numbers from neighbouring tuples: lag marks starts, a running count numbers them."""
    code = ctx.code
    partitions = _partitions(ctx)
    by = f"Window.partitionBy({', '.join(col(p) for p in partitions)})" if partitions else "Window"
    order = py(ATTR) if not _ties(ctx) else f'{py(ATTR)}, "_pos"'
    code(f"ordered = {by}.orderBy({order})")
    code("running = ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)")
    mark_starts(ctx, _closes(ctx))  # `_start`: 1 where a window begins
    code.comment("The number of starts so far numbers each tuple's window within its key.")
    code(f'rows = rows.withColumn({py(LABEL)}, F.sum("_start").over(running))')
    keep_labelled(ctx)


def scan(ctx: Context) -> None:
    """Window numbers from one numpy pass per key (the chain rules: delta, aggregate, MAX)."""
    code = ctx.code
    partitions = _partitions(ctx)
    code.comment("Each key's tuples in one Spark partition, sorted by Spark (its sort spills) in window order and")
    code.comment("numbered by a numpy pass over the batches, the window in flight carried from batch to batch.")
    code(f"rows = in_window_order(rows, {py(partitions)})")
    added = f"StructField({py(LABEL)}, LongType())"
    if _closes(ctx):
        added += f', StructField("_close", rows.schema[{py(ATTR)}].dataType)'
        code.comment("_close: the value of the tuple that closed each frame (NULL while none has), for the stream.")
    code(f"schema = StructType(rows.schema.fields + [{added}])")
    closes = ", closes=True" if _closes(ctx) else ""
    code(f"rows = rows.mapInArrow(frame_labels({py(partitions)}, {kernel_rule(ctx)}{closes}), schema)")


def _filtered(sql: str, flag: str) -> str:
    """An aggregate call restricted to the rows where `flag` holds, on top of its own FILTER."""
    node, condition = unwrap(parse_sql_expression(sql))
    where = exp.column(flag) if condition is None else exp.and_(exp.column(flag), exp.paren(condition.copy()))
    return render_sql(exp.Filter(this=node.copy(), expression=exp.Where(this=where)))


def group(ctx: Context) -> None:
    """One row per window: its bounds from every tuple in it, its aggregates from those inside WHERE."""
    code, query, rule = ctx.code, ctx.query, run_rule(ctx)
    partitions, groups = _partitions(ctx), _groups(ctx)
    where = query.where is not None and not rule.kafka
    bounds = ['F.min("_t").alias("wid")', 'F.max("_t").alias("_last")']
    if _closes(ctx):
        bounds.append(
            'F.max("_close").alias("_close")'
            if ctx.plan.name is PlanName.SCAN
            else 'F.when(F.count(F.lit(1)) == F.count("_next"), F.max("_next")).alias("_close")'  # last has one
        )
    if rule.minimum is not None and rule.minimum_rows:
        bounds.append('F.count(F.lit(1)).alias("_size")')
    keep = []
    if rule.minimum is not None:
        keep.append('F.col("_size") >= MINIMUM' if rule.minimum_rows else '(F.col("_last") - F.col("wid")) >= MINIMUM')
    lead = ", ".join(col(c) for c in [*partitions, LABEL])
    if not groups:
        items = list(bounds)
        if where:
            items.append('F.count_if("_in").alias("_held")')
            keep.append('F.col("_held") > 0')
        items += [
            f"{expr(_filtered(call.sql, '_in') if where else call.sql)}.alias({py(call.name)})"
            for call in query.aggregates
        ]
        code.comment(
            "One group per window: bounds from all its tuples"
            + (", aggregates from those inside WHERE." if where else ", and its aggregates.")
        )
        code.call("windows", f"rows.groupBy({lead}).agg", items)
        if keep:
            code(f"windows = windows.where({' & '.join(f'({k})' if ' ' in k else k for k in keep)})")
        return
    code.comment("The windows' bounds from all their tuples, whatever their group.")
    code.call("extents", f"rows.groupBy({lead}).agg", bounds)
    if keep:
        code(f"extents = extents.where({' & '.join(keep)})")
    code.comment("GROUP BY splits each window's contents" + (" (inside WHERE)." if where else "."))
    held = 'rows.where(F.col("_in"))' if where else "rows"
    grouped = ", ".join(col(c) for c in [*partitions, *groups, LABEL])
    code.call(
        "contents", f"{held}.groupBy({grouped}).agg", [f"{expr(c.sql)}.alias({py(c.name)})" for c in query.aggregates]
    )
    matches = " & ".join(
        f"F.col({py('c.' + name)}).eqNullSafe(F.col({py('e.' + name)}))"
        for name in (spark_name(p) for p in [*partitions, LABEL])
    )
    code(f'joined = contents.alias("c").join(extents.alias("e"), {matches})')
    picked = [*(f"F.col({py('c.' + spark_name(c))}).alias({py(c)})" for c in [*partitions, *groups])]
    picked += ['F.col("e.wid").alias("wid")', 'F.col("e._last").alias("_last")']
    if _closes(ctx):
        picked.append('F.col("e._close").alias("_close")')
    picked += [f"F.col({py('c.' + spark_name(a.name))}).alias({py(a.name)})" for a in query.aggregates]
    code.call("windows", "joined.select", picked)


def fold(ctx: Context) -> None:
    """Each window's partial states folded in one pass per key: the JVM kernel, or numpy over Spark's sort
    of the partition, batch by batch."""
    code, rule = ctx.code, run_rule(ctx)
    decomposition = ctx.plan.decomposition
    assert decomposition is not None
    partitions = _partitions(ctx)
    states = [(g.operation, list(g.columns)) for g in decomposition.groups]
    counted = decomposition.counted
    fields = [f'StructField("{name}", {STAMP})' for name in ("wid", "_last", *(["_close"] if _closes(ctx) else []))]
    for name in (name for _, names in states for name in names):
        fields.append(f"StructField({py(name)}, LongType())" if name in counted else f"rows.schema[{py(name)}]")
    _schema(ctx, fields)
    if in_jvm(ctx.query) and not _closes(ctx):
        code.comment("Each key's tuples in one partition, walked once by WQL's JVM kernel (by numpy without its jar):")
        code.comment("windows found, states folded.")
    else:
        code.comment("Each key's tuples in one partition, sorted by Spark and walked once by numpy, batch by batch:")
        code.comment("windows found, states folded.")
    keywords: dict[str, object] = {"partitions": partitions, "states": states, "rule": Raw(kernel_rule(ctx))}
    if rule.minimum is not None:
        keywords.update(minimum=Raw("MINIMUM"), minimum_rows=rule.minimum_rows)
    if _closes(ctx):
        keywords["closes"] = True
    code.call("windows", "frame_windows", ["rows", "schema"], keywords=keywords)
    code("return windows")
    # A stage of its own, so that a stream whose sessions Spark's state store keeps lowers them the same way.
    code = ctx.stage("lower", "windows", f"Each aggregate from its {run_shape(ctx).noun}'s folded partial states.")
    items = ['F.col("wid")', 'F.col("_last")', *(['F.col("_close")'] if _closes(ctx) else [])]
    items += [col(c) for c in partitions]
    items += [
        f"{col(sql) if sql.isidentifier() else expr(sql)}.alias({py(name)})" for name, sql in decomposition.lowers
    ]
    code.call("windows", "windows.select", items)


STAMP = f"rows.schema[{py(ATTR)}].dataType"  # the type of the window attribute in base units


def _schema(ctx: Context, fields: list[str], code: Code | None = None) -> None:
    """`schema = StructType([...])` for a kernel's output over `rows`: the partition keys, then `fields`."""
    code = code or ctx.code
    code("schema = StructType(")
    code.indent()
    code("[")
    code.indent()
    for item in [*(f"rows.schema[{py(name)}]" for name in _partitions(ctx)), *fields]:
        code(f"{item},")
    code.dedent()
    code("]")
    code.dedent()
    code(")")


def _converter(ctx: Context) -> str:
    """From base units back to the attribute's type, as a format string."""
    domain = ctx.window.attr.domain
    return {Domain.TIMESTAMP: "F.timestamp_micros({})", Domain.DATE: "F.date_from_unix_date({})"}.get(domain, "({})")


def bounds(ctx: Context) -> list[str]:
    """window_start: the first tuple's value; window_end: the last's, plus GAP for sessions (but at most MAX)."""
    convert = _converter(ctx)
    start = WID
    end = end_bound(ctx)
    return [f'{convert.format(start)}.alias("window_start")', f'{convert.format(end)}.alias("window_end")']


def _generous(ctx: Context) -> bool:
    slack = ctx.window.slack
    return slack is not None and slack.mode == "generous"


def last_reached(ctx: Context, end: str) -> str | None:
    """Windows named by tuples, and runs, go as far as their tuples: none waits for the data to reach it."""
    return None


def store_request(ctx: Context) -> SessionStore | None:
    """What Spark's state store keeps of this query when the job runs with WQL's JVM kernels (the
    StreamSessions function of flatMapGroupsWithState): each key's open sessions, each its first and last
    value and the fold's partial states (docs/semantics.md §8.12). None where the job keeps its tuples in
    its own files (plans.runs.in_state_store says which)."""
    decomposition = ctx.plan.decomposition
    if not in_state_store(ctx.query, ctx.plan):
        return None
    assert decomposition is not None and run_rule(ctx).gap is not None
    return {
        "state": "session",
        "keys": _partitions(ctx),
        "gap": int(run_rule(ctx).gap),
        "operations": decomposition.operations,
        "columns": decomposition.columns,
        "counted": [c for c in decomposition.columns if c in decomposition.counted],
        "emit": ctx.query.emit,
        "generous": _generous(ctx),
    }


def stream_rules(ctx: Context) -> None:
    """is_final, retain and missed for sessions and frames (semantics.md §8.4); with SLACK … GENEROUS
    also closing and closed, each key's closing point and the late tuples at or before it (§8.5)."""
    code = ctx.rules
    convert = _converter(ctx)
    partitions = _partitions(ctx)
    generous = _generous(ctx)
    code("def is_final(punctuation):")
    code.indent()
    is_final_rule(ctx)
    code.dedent()
    code.blank(2)
    what = run_shape(ctx).noun
    code("def retain(rows, punctuation):")
    code.indent()
    if generous:
        code(f'"""GENEROUS: each key\'s rows after its last final {what}: a late tuple admitted there is placed')
        code('among them exactly, and `windows` finds the open windows again over them (frame_pending)."""')
    else:
        code(f'"""Each key\'s rows from its first {what} not final yet on: its windows begin there, so `windows`')
        code('finds them again over these rows and the next trigger\'s (frame_pending)."""')
    code("if punctuation is None:")
    code("    return rows")
    keep = ", generous=True" if generous else ""
    code(f"pending = frame_pending({py(partitions)}, {kernel_rule(ctx)}, punctuation{keep})")
    code(f"return in_window_order(rows, {py(partitions)}).mapInArrow(pending, rows.schema)")
    code.dedent()
    code.blank(2)
    if generous:
        _closing_rules(ctx, what)
    code("def missed(late, punctuation):")
    code.indent()
    if generous:
        code(f'"""GENEROUS: a late tuple after its key\'s closing point joined the open {what}s as if on time and')
        code('missed none; one at or before it (_closed) is in no window, as with CONSISTENT."""')
    else:
        code('"""CONSISTENT: a late tuple is in no window; it may have joined, merged or split the windows near it."""')
    code("t = window_attribute(late)")
    text = missed_text(ctx, convert)
    if generous:
        placed = f"none: placed in its key's open {what}s (GENEROUS)"
        text = f'F.when(F.col("_closed"), {text}).otherwise(F.lit({py(placed)}))'
    code(f"named = {text}")
    code('return late.withColumn("_missed", named)')
    code.dedent()
    code.blank(2)


def _closing_rules(ctx: Context, what: str) -> None:
    """closing: each key's closing point after a trigger (frame_closings); closed: whether a tuple of the
    stream is at or before its key's, where a late one is in no window (semantics.md §8.5)."""
    code = ctx.rules
    partitions = _partitions(ctx)
    points = closing_point(ctx)  # what each key's closing point holds beyond its value, _closed_t
    extra = [f'StructField("{name}", {STAMP if kind_ == "stamp" else "LongType()"})' for name, kind_ in points]
    code("def closing(rows, punctuation):")
    code.indent()
    code(f'"""GENEROUS: per key with a {what} final at the punctuation among its rows, the point the last one')
    code('closes the key\'s history up to: a late tuple after it is placed as if on time (frame_closings)."""')
    _schema(ctx, [f'StructField("_closed_t", {STAMP})', *extra], ctx.rules)
    code(f"found = frame_closings({py(partitions)}, {kernel_rule(ctx)}, punctuation)")
    code(f"return in_window_order(rows, {py(partitions)}).mapInArrow(found, schema)")
    code.dedent()
    code.blank(2)
    keys = [k for k in ctx.query.keys if k.origin == "partition"]
    code("def closed(rows, closings):")
    code.indent()
    joins = closing_text(ctx)
    code('"""GENEROUS: _closed, whether a tuple is at or before its key\'s closing point, that of its last final')
    code(f'{what} (a tuple {joins} cannot change it); a key with none yet: false."""')
    code("if closings is None:")
    code('    return rows.withColumn("_closed", F.lit(False))')
    names = [f"_closing{index}" for index in range(len(keys))]
    picked = [*(f"F.col({py(p)}).alias({py(n)})" for p, n in zip(partitions, names, strict=True)), '"_closed_t"']
    picked += [f'"{name}"' for name, _ in points]
    code.call("points", "closings.select", picked)
    match = " & ".join(f"{expr(k.sql)}.eqNullSafe(F.col({py(n)}))" for k, n in zip(keys, names, strict=True))
    code(f'joined = rows.join(F.broadcast(points), {match or "F.lit(True)"}, "left")')
    code("t = window_attribute(rows)")
    code(f"at_or_before = {at_or_before(ctx)}")
    dropped = ", ".join(py(n) for n in [*names, *(p.strip('"') for p in picked[len(names) :])])
    code('marked = joined.withColumn("_closed", F.coalesce(at_or_before, F.lit(False)))')
    code(f"return marked.drop({dropped})")
    code.dedent()
    code.blank(2)
