"""Query bodies for windows named by tuples (FCB/FCU): the bins, prefix and over plans.

Window-ids are values of the range attribute, taken from every tuple of a
partition (WHERE only filters contents; Kafka filters records first, as Kafka's
DSL does); window w holds (w − RANGE, w], a Kafka window [x, x + RANGE].
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
    declare_window_constants,
    epilogue,
    key_items,
    numbering,
    recorded_attribute,
    select_rows,
)
from wql.compiler.codegen.emit import Raw, col, expr, py
from wql.compiler.plans import ONE, PlanName, fresh_name
from wql.compiler.plans.tuples import tuple_mode
from wql.compiler.schema import ROW_NUM, Domain
from wql.grammar.expressions import parse_sql_expression, render_sql


def generate(ctx: Context) -> None:
    """prepare, windows, finish."""
    window, query = ctx.window, ctx.query
    declare_window_constants(ctx)
    mode = tuple_mode(ctx.window)
    replay = ctx.plan.name is PlanName.REPLAY
    if mode == "kafka":
        ctx.constant("TICK", 1_000 if window.attr.domain is Domain.TIMESTAMP else 1, "Kafka's time resolution")
    if replay:
        assert window.slack is not None
        ctx.constant("GRACE", window.slack.amount, "Kafka's grace: a record past it joins only open stored windows")
    numbering(ctx, rows=mode == "row_num" or replay, positions=False, seen=recorded_attribute(ctx) if replay else None)
    code = ctx.stage(
        "prepare", ctx.param, f"The stream's tuples in window terms: keys, {ATTR}, WHERE as a flag (_in), inputs."
    )
    code(f"rows = {ctx.param}")
    if mode == "kafka" and query.where is not None:
        code.comment("Kafka filters records before it places windows, so WHERE comes first here.")
        code(f"rows = rows.where({expr(query.where)})")
    keys = key_items(ctx)
    columns = [*(col(ctx.key_columns[k.name]) for k in query.keys if ctx.key_columns[k.name] == k.column), *keys]
    columns += attribute_items(ctx)
    if mode == "row_num":
        position = query.stream.row_num or ROW_NUM
        columns.append(f'{col(position)}.alias("_pos")')
    if replay:
        code.comment("Kafka's rule: each record's arrival position (_row) and stream time (_seen), and the windows")
        code.comment("it is in (_wins), which the replay stage sets (NULL: not replayed yet).")
        columns += [
            f'{col(query.stream.row_num or ROW_NUM)}.alias("_row")',
            'F.col("_seen")',
            'F.lit(None).cast("array<bigint>").alias("_wins")',
        ]
    if query.where is not None and mode != "kafka":
        columns.append(f'F.coalesce({expr(query.where)}, F.lit(False)).alias("_in")')
    elif ctx.plan.name is PlanName.OVER:
        columns.append('F.lit(True).alias("_in")')
    if ctx.plan.name in (PlanName.BINS, PlanName.PREFIX):
        assert ctx.plan.decomposition is not None
        for group in ctx.plan.decomposition.groups:
            for column, contribution in zip(group.columns, group.contributions, strict=True):
                if group.operation == "moments" and ctx.plan.name is PlanName.PREFIX and column == group.columns[2]:
                    continue  # a single value's spread: the running sums of squared deviations give M2
                if contribution != ONE or ctx.plan.name is PlanName.PREFIX:  # the bins kernel counts tuples itself
                    columns.append(f"{expr(contribution)}.alias({py(column)})")
    else:
        keys_in = set(ctx.key_columns.values())
        columns += [col(c) for c in query.input_columns if c in aggregate_inputs(query) and c not in keys_in]
    code.comment(f"Keys, the window attribute ({ATTR}: {attribute_note(ctx)}), WHERE as a flag (_in), and inputs.")
    select_rows(ctx, columns)
    code("return rows")
    if replay:
        replay_stage(ctx)
    doc = {
        PlanName.BINS: "each window's tuples found by binary search, aggregated from prefix sums",
        PlanName.PREFIX: "running totals up to w less those up to w − RANGE",
        PlanName.OVER: "a window frame at each window",
        PlanName.REPLAY: "each window's records, as the replay placed them, aggregated",
    }[ctx.plan.name]
    ctx.stage("windows", "rows", f"One row per window and key: {doc}.")
    if replay:
        replayed_windows(ctx)
    elif ctx.plan.name is PlanName.BINS:
        bins(ctx, mode)
    elif ctx.plan.name is PlanName.PREFIX:
        prefix(ctx, mode)
    else:
        over(ctx, mode)
    ctx.code("return windows")
    wid = _converter(ctx).format('F.col("wid")')
    epilogue(ctx, bounds(ctx), wid=f'{wid}.alias("wid")')


def _partitions(ctx: Context) -> list[str]:
    return ctx.partition_columns()


def _groups(ctx: Context) -> list[str]:
    return [ctx.key_columns[k.name] for k in ctx.query.keys if k.origin == "group"]


def bins(ctx: Context, mode: str) -> None:
    code = ctx.code
    decomposition = ctx.plan.decomposition
    assert decomposition is not None
    partitions, groups = _partitions(ctx), _groups(ctx)
    states = [(g.operation, list(g.columns)) for g in decomposition.groups]
    state_names = [name for _, names in states for name in names]
    code("schema = StructType(")
    code.indent()
    code("[")
    code.indent()
    for name in [*partitions, *groups]:
        code(f"rows.schema[{py(name)}],")
    code(f'StructField("wid", rows.schema[{py(ATTR)}].dataType),')
    counted = decomposition.counted
    for name in state_names:
        code(f"StructField({py(name)}, LongType())," if name in counted else f"rows.schema[{py(name)}],")
    code.dedent()
    code("]")
    code.dedent()
    code(")")
    what = {
        "every": "every tuple names a window",
        "row_num": "every SLIDE-th arrival names a window",
        "rank": "every SLIDE-th tuple in value order names a window",
        "kafka": "windows at records and just after them, as Kafka places them",
    }[mode]
    code.comment(f"Bins: {what}; each window's tuples are found by binary search and aggregated from")
    code.comment("prefix sums and sparse tables, so the cost does not grow with the tuples per window.")
    if mode == "every" and not groups:
        code.comment("In the JVM where Spark has WQL's kernels (wql-kernels.jar and its extension): tuples shuffled as")
        code.comment("columnar batches per key, each key's tuples sorted only where they arrived out of order, and")
        code.comment("two stacks over the arrays, a constant number of combines per tuple.")
    keywords: dict[str, object] = {
        "partitions": partitions,
        "groups": groups,
        "states": states,
        "size": Raw("RANGE"),
        "step": ctx.window.slide or 1,
        "mode": mode,
    }
    if mode == "kafka":
        keywords["tick"] = Raw("TICK")
    code.call("windows", "windows_by_tuple", ["rows", "schema"], keywords=keywords)
    _lower(ctx, [*partitions, *groups])


def _lower(ctx: Context, keys: list[str]) -> None:
    """Each aggregate from its partial states."""
    decomposition = ctx.plan.decomposition
    assert decomposition is not None
    ctx.code.comment("Each aggregate from its partial states.")
    items = ['F.col("wid")', *(col(c) for c in keys)]
    items += [
        f"{col(sql) if sql.isidentifier() else expr(sql)}.alias({py(name)})" for name, sql in decomposition.lowers
    ]
    ctx.code.call("windows", "windows.select", items)


def prefix(ctx: Context, mode: str) -> None:
    code, query = ctx.code, ctx.query
    decomposition = ctx.plan.decomposition
    assert decomposition is not None and mode in ("every", "rank")
    partitions = _partitions(ctx)
    by = f"Window.partitionBy({', '.join(col(p) for p in partitions)})" if partitions else "Window"
    code.comment(f"A tuple whose {ctx.window.attr.name} is NULL names no window and belongs to none.")
    code(f"rows = rows.where({col(ATTR)}.isNotNull())")
    code.comment("Prefix sums, inside Spark: each partition sorted by value once. A window's state is the running")
    code.comment("total up to w less the running total up to w − RANGE: two growing frames, one pass each.")
    code(f"ordered = {by}.orderBy({py(ATTR)})")
    code("upto = ordered.rangeBetween(Window.unboundedPreceding, Window.currentRow)")
    offset = "-int(RANGE)" if ctx.window.attr.domain is Domain.FLOAT else "-RANGE"  # frame offsets are whole numbers
    code(f"before = ordered.rangeBetween(Window.unboundedPreceding, {offset})")
    code.blank()
    code("def between(share):")
    code.indent()
    code('"""The sum of the shares in (w − RANGE, w]; a NULL share is none."""')
    code("return F.coalesce(F.sum(share).over(upto), F.lit(0)) - F.coalesce(F.sum(share).over(before), F.lit(0))")
    code.dedent()
    code.blank()
    if any(any(group.floating) for group in decomposition.groups):
        _between_floats(ctx)

    def share(column: str) -> str:
        return f'F.when(F.col("_in"), {col(column)})' if query.where is not None else col(column)

    taken = {c.lower() for c in [*partitions, ATTR, "_in", *(c for g in decomposition.groups for c in g.columns)]}
    centers = {}
    for group in decomposition.groups:
        if group.operation == "moments":
            centers[group.columns] = fresh_name("_center", taken)
    if centers:
        code.comment("Moments are summed about each partition's mean, rounded to a power of two near the spread:")
        code("# differences of running sums then stay accurate, and exact for integers and other dyadic values.")
        code("whole = ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)")
        code.blank()
        code("def center(value):")
        code.indent()
        code("mean, spread = F.avg(finite(value)).over(whole), F.stddev_pop(finite(value)).over(whole)")
        code("step = F.pow(F.lit(2.0), F.floor(F.log2(spread)))")
        code("return F.coalesce(F.when(spread > 0, F.round(mean / step) * step).otherwise(mean), F.lit(0.0))")
        code.dedent()
        code.blank()
        for (_, mean, _), name in centers.items():
            code(f"rows = rows.withColumn({py(name)}, center({share(mean)}))")
    items = [*(col(p) for p in partitions), f'{col(ATTR)}.alias("wid")']
    if mode == "every":
        items.append(f'F.lead({py(ATTR)}).over(ordered).alias("_next")')
    else:
        items += ['F.row_number().over(ordered).alias("_position")', 'F.count(F.lit(1)).over(upto).alias("_through")']
        items.append('F.rank().over(ordered).alias("_first")')
    for group in decomposition.groups:
        if group.operation == "moments":
            n, mean, m2 = group.columns
            center = centers[group.columns]
            deviation = f"({share(mean)} - {col(center)})"
            items += [f"between({share(n)}).alias({py(n)})", col(center)]
            items += [f"between_floats({deviation}).alias({py(mean)})"]
            items += [f"between_floats({deviation} ** 2).alias({py(m2)})"]
        else:
            assert group.operation == "sum"
            for column, floating in zip(group.columns, group.floating, strict=True):
                items.append(f"{'between_floats' if floating else 'between'}({share(column)}).alias({py(column)})")
    code.call("windows", "rows.select", items)
    for (n, mean, m2), center in centers.items():
        code.comment(f"From sums about the center c: {mean} = c + s1 / n, {m2} = s2 − s1² / n.")
        counted = f"F.col({py(n)}) > 0"
        updates = {
            mean: f"F.when({counted}, {col(center)} + {col(mean)} / {col(n)})",
            m2: f"F.when({counted}, {col(m2)} - {col(mean)} ** 2 / {col(n)})",
        }
        code("windows = windows.withColumns(")
        code.indent()
        code("{")
        code.indent()
        for name, value in updates.items():
            code(f"{py(name)}: {value},")
        code.dedent()
        code("}")
        code.dedent()
        code(")")
    rows_column = decomposition.groups[0].columns[0]
    code.comment("One window per distinct value, on the last tuple that holds it; empty ones go.")
    if mode == "every":
        code(f'keep = (F.col("_next").isNull() | (F.col("_next") != F.col("wid"))) & ({col(rows_column)} > 0)')
    else:
        code(f'keep = (F.col("_position") == F.col("_through")) & ({col(rows_column)} > 0)')
        code.comment("A value names a window when one of its positions in value order (_first − 1 … _through − 1)")
        code.comment("is a multiple of SLIDE.")
        code('last = F.col("_through") - 1')
        code('keep &= last - last % SLIDE >= F.col("_first") - 1')
    code("windows = windows.where(keep)")
    _lower(ctx, partitions)


def _between_floats(ctx: Context) -> None:
    """Running totals of DOUBLE shares that a NaN or an infinity does not poison for later windows."""
    code = ctx.code
    code("def finite(value):")
    code.indent()
    code('"""The value where it is a number; NULL where it is NaN or infinite."""')
    code('return F.when(~F.isnan(value) & (F.abs(value) != F.lit(float("inf"))), value)')
    code.dedent()
    code.blank()
    code("def between_floats(share):")
    code.indent()
    code('"""between() for DOUBLE shares: a NaN or an infinity is counted apart, not summed into the running')
    code('totals, so that it reaches the windows that hold it and no later one, as Spark\'s own sum does."""')
    code('up = between(F.when(share == F.lit(float("inf")), 1)) > 0')
    code('down = between(F.when(share == F.lit(float("-inf")), 1)) > 0')
    code("undefined = (between(F.when(F.isnan(share), 1)) > 0) | (up & down)")
    code("return (")
    code.indent()
    code('F.when(undefined, F.lit(float("nan")))')
    code('.when(up, F.lit(float("inf")))')
    code('.when(down, F.lit(float("-inf")))')
    code(".otherwise(between(finite(share)))")
    code.dedent()
    code(")")
    code.dedent()
    code.blank()


def frame_column(call_sql: str) -> str:
    """Python for an aggregate over the window frame: FILTER folded in, DISTINCT counted by set size."""
    node, condition = unwrap(parse_sql_expression(call_sql))
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
        inner = "_d" if condition is None else f"CASE WHEN {render_sql(condition)} THEN _d END"
        return f"{expr(f'COUNT({inner})')}.over(frame)"
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Distinct):
        [arg] = node.this.expressions
        value = (
            render_sql(arg) if condition is None else f"CASE WHEN {render_sql(condition)} THEN {render_sql(arg)} END"
        )
        return f"F.size({expr(f'COLLECT_SET({value})')}.over(frame))"
    if isinstance(node, exp.Median | exp.Quantile):
        args = list(node.iter_expressions())
        p = "0.5" if isinstance(node, exp.Median) else render_sql(args[1])
        value = render_sql(args[0])
        if condition is not None:
            value = f"CASE WHEN {render_sql(condition)} THEN {value} END"
        values = f"F.array_sort({expr(f'COLLECT_LIST(CAST({value} AS DOUBLE))')}.over(frame))"
        return f"array_percentile({values}, {p})"
    if condition is not None:
        node = node.copy()
        first = next(iter(node.iter_expressions()))
        first.replace(exp.Case(ifs=[exp.If(this=condition.copy(), true=first.copy())]))
    return f"{expr(render_sql(node))}.over(frame)"


def over(ctx: Context, mode: str) -> None:
    code, query = ctx.code, ctx.query
    partitions, groups = _partitions(ctx), _groups(ctx)
    parts = ", ".join(col(p) for p in partitions)
    by = f"Window.partitionBy({parts})" if partitions else "Window"
    code.comment("Windows: the values of the tuples that name them, from every tuple of the partition.")
    code(f"present = rows.where({col(ATTR)}.isNotNull())")
    lead = f"{parts}, " if partitions else ""
    if mode == "every":
        code(f'windows = present.select({lead}F.col("_t").alias("_w")).distinct()')
    elif mode == "row_num":
        code(f'arrival = F.row_number().over({by}.orderBy("_pos")) - 1')
        code('ranked = rows.withColumn("_arrival", arrival)')
        code('named = ranked.where(F.col("_t").isNotNull() & (F.col("_arrival") % SLIDE == 0))')
        code(f'windows = named.select({lead}F.col("_t").alias("_w")).distinct()')
    elif mode == "rank":
        code(f'rank = F.row_number().over({by}.orderBy("_t")) - 1')
        code('named = present.withColumn("_rank", rank).where(F.col("_rank") % SLIDE == 0)')
        code(f'windows = named.select({lead}F.col("_t").alias("_w")).distinct()')
    else:
        code(f'times = present.select({lead}F.col("_t")).distinct()')
        code.comment("Left windows end at each record ([0, RANGE] for records before RANGE); right windows start")
        code.comment("just after a record, when a later record falls in them.")
        code('early = (F.col("_t") >= 0) & (F.col("_t") < RANGE)')
        code(f'left = times.select({lead}F.when(early, F.lit(0)).otherwise(F.col("_t") - RANGE).alias("_w"))')
        code(f'following = F.lead("_t").over({by}.orderBy("_t"))')
        code('right = times.withColumn("_next", following).where(F.col("_next") <= F.col("_t") + TICK + RANGE)')
        code(f'right = right.select({lead}(F.col("_t") + TICK).alias("_w"))')
        code("windows = left.union(right).distinct()")
    if groups:
        code.comment("GROUP BY splits each window's contents: one marker per window and group.")
        distinct = ", ".join(col(c) for c in [*partitions, *groups])
        join = (
            f".join(rows.select({distinct}).distinct(), [{', '.join(py(p) for p in partitions)}])"
            if partitions
            else f".crossJoin(rows.select({distinct}).distinct())"
        )
        code(f"windows = windows{join}")
    code.comment("Tuples and window markers in one ordered stream; the frame of a marker is its window.")
    code('data = rows.where(F.col("_in") & F.col("_t").isNotNull()).withColumn("_d", F.lit(1))')
    code('markers = windows.withColumn("_t", F.col("_w"))')
    code("stream = data.unionByName(markers, allowMissingColumns=True)")
    keyed = ", ".join(col(c) for c in [*partitions, *groups])
    frame_by = f"Window.partitionBy({keyed})" if keyed else "Window"
    edges = "0, RANGE" if mode == "kafka" else "-(RANGE - 1), 0"
    code(f'frame = {frame_by}.orderBy("_t").rangeBetween({edges})')
    items = [
        *(col(c) for c in [*partitions, *groups]),
        'F.col("_w").alias("wid")',
        'F.count("_d").over(frame).alias("_rows")',
    ]
    items += [f"{frame_column(call.sql)}.alias({py(call.name)})" for call in query.aggregates]
    code("windows = stream.select(")
    code.indent()
    for item in items:
        code(item + ",")
    code.dedent()
    code(")")
    code('windows = windows.where(F.col("wid").isNotNull() & (F.col("_rows") > 0))')


def replay_stage(ctx: Context) -> None:
    """replay: Kafka's late-record rule, each key's records through Kafka's window store in arrival order."""
    code = ctx.stage(
        "replay",
        "rows",
        "Each key's records through Kafka's window store in arrival order: _wins, the windows each is in.",
    )
    code.comment("Kafka's rule (SLACK … KAFKA): a record later than GRACE behind stream time joins only the open")
    code.comment("windows stored when it arrives; windows made later copy windows that may or may not hold it.")
    code.comment("So each key's records are replayed, in arrival order (_row), through the store Kafka keeps.")
    code(f"return kafka_store(rows, partitions={py(_partitions(ctx))}, size=RANGE, tick=TICK, grace=GRACE)")


def replay_missed(ctx: Context) -> None:
    """missed under Kafka's rule: a late record is late against its own close time, not the trigger's."""
    code, convert = ctx.rules, _converter(ctx)
    code('"""Kafka\'s rule: a record below its close time (stream time as it arrived, less GRACE) joins only the')
    code("open windows stored then: it misses its own left window and those that had closed, and windows stored")
    code('later that copy one without it. Below close time − RANGE it is in no window (Kafka drops it)."""')
    code("t = window_attribute(late)")
    code('close = F.col("_seen") - GRACE')

    def shown(value: str) -> str:
        return f"({convert.format(value)}).cast('string')"

    dropped = "every window: each that could hold it had closed (close time %s)"
    partly = "windows [x, x + RANGE] with x in [%s, %s], closed at close time %s, and windows stored later without it"
    code(f"text = F.when(t + RANGE < close, F.format_string({py(dropped)}, {shown('close')}))")
    code(f"bounds = [{shown('t - RANGE')}, {shown('close - RANGE - TICK')}, {shown('close')}]")
    code(f"text = text.otherwise(F.format_string({py(partly)}, *bounds))")
    code('return late.withColumn("_missed", text)')
    code.dedent()
    code.blank(2)


def replayed_windows(ctx: Context) -> None:
    """A window's records are those whose _wins name it: one row per record and window, grouped."""
    code, query = ctx.code, ctx.query
    keys = [*_partitions(ctx), *_groups(ctx)]
    inputs = [c for c in query.input_columns if c in aggregate_inputs(query) and c not in set(ctx.key_columns.values())]
    code.comment("One row per record and window it is in; then each window's aggregates over its records.")
    code.call("members", "rows.select", [*(col(c) for c in [*keys, *inputs]), 'F.explode("_wins").alias("wid")'])
    aggregates = [f"{expr(call.sql)}.alias({py(call.name)})" for call in query.aggregates]
    code.call(
        "windows",
        f'members.groupBy("wid", {", ".join(py(k) for k in keys)}).agg' if keys else 'members.groupBy("wid").agg',
        aggregates,
    )


def _converter(ctx: Context) -> str:
    """From base units back to the attribute's type, as a format string."""
    domain = ctx.window.attr.domain
    return {Domain.TIMESTAMP: "F.timestamp_micros({})", Domain.DATE: "F.date_from_unix_date({})"}.get(domain, "{}")


def bounds(ctx: Context) -> list[str]:
    """window_start and window_end: (wid − RANGE, wid], or [wid, wid + RANGE] for Kafka windows."""
    convert = _converter(ctx).replace("{}", "({})") if _converter(ctx) == "{}" else _converter(ctx)
    wid = 'F.col("wid")'
    if tuple_mode(ctx.window) == "kafka":
        start, end = wid, f"{wid} + RANGE"
    else:
        start, end = f"{wid} - RANGE", wid
    return [f'{convert.format(start)}.alias("window_start")', f'{convert.format(end)}.alias("window_end")']


# ------------------------------------------------------------------ on a stream


def last_reached(ctx: Context, end: str) -> str | None:
    """Windows named by tuples, and runs, go as far as their tuples: none waits for the data to reach it."""
    return None


def store_request(ctx: Context) -> None:
    """None: windows named by tuples keep their rows (or Kafka's records) in the checkpoint's files, not in
    Spark's state store (docs/semantics.md §8.12)."""
    return None


def stream_rules(ctx: Context) -> None:
    """is_final, retain and missed for windows named by tuples."""
    code, window = ctx.rules, ctx.window
    mode = tuple_mode(window)
    t = col(ATTR)
    code("def is_final(punctuation):")
    code.indent()
    if mode == "kafka":
        code('"""A Kafka window [x, x + RANGE] is final once the punctuation is past its end."""')
        code('return F.col("wid") + RANGE < punctuation')
    else:
        code('"""The window named by w, (w − RANGE, w], is final once the punctuation is past w."""')
        code('return F.col("wid") < punctuation')
    code.dedent()
    code.blank(2)
    code("def retain(rows, punctuation):")
    code.indent()
    partitions = _partitions(ctx)
    by = f"Window.partitionBy({', '.join(col(p) for p in partitions)})" if partitions else "Window"
    if ctx.plan.name is PlanName.REPLAY:
        code('"""Kafka\'s rule: the records of every window a record still to come can reach, which is the store the')
        code("next trigger replays after. A record that is not dropped lies at or above the punctuation − RANGE (its")
        code('close time is at least the punctuation), and reaches windows starting up to 2·RANGE before it."""')
        code("if punctuation is None:")
        code("    return rows")
        code('return rows.where(F.exists("_wins", lambda start: start >= F.lit(punctuation) - 3 * RANGE - TICK))')
    elif mode == "kafka":
        code('"""The records windows not yet final can still need, or place: from punctuation − RANGE − TICK on."""')
        code("if punctuation is None:")
        code("    return rows")
        code(f"return rows.where({t} >= F.lit(punctuation) - RANGE - TICK)")
    elif mode == "every":
        code('"""The tuples windows not yet final can still hold: those above punctuation − RANGE."""')
        code("if punctuation is None:")
        code("    return rows")
        code(f"return rows.where({t} > F.lit(punctuation) - RANGE)")
    else:
        order = "_t" if mode == "rank" else "_pos"
        what = "value order" if mode == "rank" else "arrival order"
        code('"""The tuples windows not yet final can still hold (above punctuation − RANGE), and as many of the')
        code(f"others as keep every tuple's position in {what} the same modulo SLIDE, which decides which")
        code('tuples name windows."""')
        code("if punctuation is None:")
        code("    return rows")
        code(f"gone = {t}.isNull() | ({t} <= F.lit(punctuation) - RANGE)")
        code(f'ordered = {by}.orderBy(F.col("{order}"))')
        code(f"whole = {by}.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)")
        if mode == "rank":
            code.comment("Tuples with no value have no rank; those that may go are the lowest in value order.")
            code(f"rows = rows.where({t}.isNotNull())")
        code('rows = rows.withColumn("_position", F.row_number().over(ordered) - 1).withColumn("_gone", gone)')
        if mode == "rank":
            code('leaving = F.count_if(F.col("_gone")).over(whole)')
        else:
            code.comment("Those that may go are the earliest arrivals, up to the first that must stay.")
            code('staying = F.min(F.when(~F.col("_gone"), F.col("_position"))).over(whole)')
            code("leaving = F.coalesce(staying, F.count(F.lit(1)).over(whole))")
        code('rows = rows.withColumn("_leaving", leaving)')
        code('kept = rows.where(F.col("_position") >= F.floor(F.col("_leaving") / SLIDE) * SLIDE)')
        code('return kept.drop("_position", "_gone", "_leaving")')
    code.dedent()
    code.blank(2)
    generous = window.slack is not None and window.slack.mode == "generous"
    code("def missed(late, punctuation):")
    code.indent()
    convert = _converter(ctx)
    if ctx.plan.name is PlanName.REPLAY:
        replay_missed(ctx)
        return
    if mode == "kafka":
        low, high = "t - RANGE", "t"
        named = "windows [x, x + RANGE] with x in [%s, %s]"
    else:
        low, high = "t", "t + RANGE"
        named = "windows named in [%s, %s)"
    if generous:
        code('"""GENEROUS: a late tuple still joins open windows; it misses those the punctuation had closed."""')
        # Kafka's [x, x + RANGE] is final once x + RANGE < punctuation: the last missed x is a tick below.
        high = (
            f"F.least({high}, F.lit(punctuation))"
            if mode != "kafka"
            else f"F.least({high}, F.lit(punctuation) - RANGE - TICK)"
        )
    else:
        code('"""CONSISTENT: a late tuple is in no window; it misses every window it belongs to."""')
    code("t = window_attribute(late)")
    shown = [f"({convert.format(bound)}).cast('string')" for bound in (low, high)]
    text = f"F.format_string({py(named)}, {', '.join(shown)})"
    code(f'return late.withColumn("_missed", {text})')
    code.dedent()
    code.blank(2)
