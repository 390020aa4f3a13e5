"""What each run rule writes into the runs family's stages: sessions, threshold, delta and aggregate frames.

The runs family (`codegen.runs`) writes what every session and frame shares: prepare, the fold, starts
and scan plans, the stream rules. Where a run ends differs by rule (the window's shape names it,
`RunShape.rule`, and its `RunRule` holds the numbers and expressions), and so do a few pieces of code:
what the rule reads from each tuple, the rule as the kernels take it, how a starts plan marks a run's
first tuple, where a window ends, when one is final on a stream and what a late tuple may have missed.
Each is a table here, one entry per rule, so a new rule is one entry in each table.
"""

from __future__ import annotations

from collections.abc import Callable

from wql.compiler.codegen.common import ATTR, Context
from wql.compiler.codegen.emit import col, expr, py
from wql.compiler.kinds import kind_of
from wql.compiler.kinds.shapes import RuleName, RunShape
from wql.compiler.schema import ROW_NUM
from wql.compiler.windows import RunRule


def run_shape(ctx: Context) -> RunShape:
    """The window's shape: a run of tuples, whose rule says where it ends."""
    shape = kind_of(ctx.window).shape(ctx.window)
    assert isinstance(shape, RunShape), "the runs family computes windows the data cuts"
    return shape


def run_rule(ctx: Context) -> RunRule:
    rule = ctx.window.rule
    assert rule is not None
    return rule


def _is_session(ctx: Context) -> bool:
    return run_shape(ctx).rule == "session"


# ------------------------------------------------------------------ what the rule reads from each tuple


def _threshold_columns(ctx: Context) -> list[str]:
    condition = run_rule(ctx).condition
    assert condition is not None
    return [f'{expr(condition)}.alias("_p")']


def _delta_columns(ctx: Context) -> list[str]:
    rule = run_rule(ctx)
    assert rule.on is not None
    x = expr(rule.on)
    if rule.on_integral:
        return [f'{x}.cast("bigint").alias("_x")']
    return [f'F.nanvl({x}.cast("double"), F.lit(None)).alias("_x")']  # NaN: like NULL


def _aggregate_columns(ctx: Context) -> list[str]:
    columns = []
    for index, running in enumerate(run_rule(ctx).running):
        name = py(f"_c{index}")
        if running.arg is None:
            continue  # count(*): the kernel counts tuples
        if running.function == "count":  # only whether a value is there
            columns.append(f"F.when({expr(running.arg)}.isNotNull(), F.lit(1)).alias({name})")
        else:
            kind = "bigint" if running.integral else "double"
            columns.append(f"{expr(running.arg)}.cast({py(kind)}).alias({name})")
    return columns


_COLUMNS: dict[RuleName, Callable[[Context], list[str]]] = {
    "session": lambda ctx: [],
    "threshold": _threshold_columns,
    "delta": _delta_columns,
    "aggregate": _aggregate_columns,
}


def rule_columns(ctx: Context) -> list[str]:
    """The prepare stage's columns that the rule reads (a predicate, x, the running aggregates' inputs)."""
    return _COLUMNS[run_shape(ctx).rule](ctx)


# ------------------------------------------------------------------ the rule as the kernels take it


def _aggregate_kernel_rule(ctx: Context) -> str:
    rule = run_rule(ctx)
    running = [(r.function, None if r.arg is None else f"_c{i}", r.integral) for i, r in enumerate(rule.running)]
    return f'{{"cut": "aggregate", "running": {py(running)}, "test": {py(rule.test)}}}'


_KERNEL_RULES: dict[RuleName, Callable[[Context], str]] = {
    "session": lambda ctx: (
        f'{{"cut": "session", "gap": GAP, "longest": {"LONGEST" if run_rule(ctx).longest is not None else "None"}}}'
    ),
    "threshold": lambda ctx: '{"cut": "threshold"}',
    "delta": lambda ctx: '{"cut": "delta", "delta": DELTA}',
    "aggregate": _aggregate_kernel_rule,
}


def kernel_rule(ctx: Context) -> str:
    """The rule as the kernels take it: a dict literal naming the job's constants."""
    return _KERNEL_RULES[run_shape(ctx).rule](ctx)


# ------------------------------------------------------------------ the starts plan


def mark_starts(ctx: Context, closes: bool) -> None:
    """`_start`, 1 where a window begins, from each tuple and the one before it (`ordered`); with `closes`,
    `_next`, the value of the tuple after, which closes a frame. Only rules whose starts neighbouring tuples
    decide have a starts plan (`RunShape.chained` is None): sessions without MAX, threshold frames."""
    code = ctx.code
    if _is_session(ctx):
        code.comment("A tuple starts a session when it is the first of its key, or more than GAP after the previous.")
        code(f"step = F.col({py(ATTR)}) - F.lag({py(ATTR)}).over(ordered)")
        code('rows = rows.withColumn("_start", F.when(step.isNull() | (step > GAP), 1).otherwise(0))')
        return
    assert run_shape(ctx).rule == "threshold", "a chained rule has no starts plan"
    code.comment("A frame starts where the predicate holds and did not hold for the previous tuple (or none).")
    code.comment("A false or NULL predicate ends the frame; that tuple is in no frame.")
    code('rows = rows.withColumn("_p", F.coalesce(F.col("_p"), F.lit(False)))')
    if closes:
        code.comment(f"The next tuple's {ATTR}: after a frame's last, the tuple that closed it.")
        code(f'rows = rows.withColumn("_next", F.lead({py(ATTR)}).over(ordered))')
    code('began = F.col("_p") & ~F.lag("_p", 1, False).over(ordered)')
    code('rows = rows.withColumn("_start", F.when(began, 1).otherwise(0))')


def keep_labelled(ctx: Context) -> None:
    """The starts plan, once every tuple has its window's number: drop the tuples in no window (a threshold
    frame's false or NULL predicate)."""
    if run_shape(ctx).rule == "threshold":
        ctx.code('rows = rows.where(F.col("_p"))')


# ------------------------------------------------------------------ window_end


def end_bound(ctx: Context) -> str:
    """window_end in base units, from the window's first (`wid`) and last (`_last`) values: a frame's last value;
    a session's last value + GAP, cut at its first + MAX; Kafka's sessions [first, last]."""
    rule = run_rule(ctx)
    end = 'F.col("_last")'
    if _is_session(ctx) and not rule.kafka:
        end = f"{end} + GAP"
        if rule.longest is not None:
            end = f'F.least({end}, F.col("wid") + LONGEST)'
    return end


# ------------------------------------------------------------------ on a stream


def is_final_rule(ctx: Context) -> None:
    """The body of `is_final(punctuation)`, over the windows `windows` computes."""
    code = ctx.rules
    if not _is_session(ctx):
        code('"""A frame is final once the punctuation is past the tuple that closed it (_close): a tuple still')
        code('to come sorts after that one, so every tuple the frame depends on is known."""')
        code('return F.coalesce(F.col("_close") < punctuation, F.lit(False))')
    elif run_rule(ctx).longest is not None:
        code('"""A session is final once the punctuation is past its last value + GAP, or reaches its first')
        code('value + MAX: a tuple still to come is at or past the punctuation, so it cannot join it."""')
        code('return (F.col("_last") + GAP < punctuation) | (F.col("wid") + LONGEST <= punctuation)')
    else:
        code('"""A session is final once the punctuation is past its last value + GAP: a tuple still to come is')
        code('at or past the punctuation, so it cannot join it."""')
        code('return F.col("_last") + GAP < punctuation')


def missed_text(ctx: Context, convert: str) -> str:
    """The windows near a late tuple at `t` that it may have joined, merged or split, for the late-rows output."""
    if _is_session(ctx):
        named = "sessions with a tuple in [%s, %s]"
        low, high = (convert.format(bound) + ".cast('string')" for bound in ("t - GAP", "t + GAP"))
        return f"F.format_string({py(named)}, {low}, {high})"
    named = "the frame at %s or next to it"
    return f"F.format_string({py(named)}, {convert.format('t')}.cast('string'))"


def closing_point(ctx: Context) -> list[tuple[str, str]]:
    """GENEROUS: what a key's closing point holds beyond the value `_closed_t`: (column, "stamp" or "long"); a
    session's first value + MAX, a frame's closing tuple's arrival."""
    if _is_session(ctx):
        return [("_closed_from", "stamp")] if run_rule(ctx).longest is not None else []
    return [("_closed_pos", "long")]


def closing_text(ctx: Context) -> str:
    """GENEROUS: which tuple cannot change a key's last final window, in words."""
    if _is_session(ctx):
        longest = run_rule(ctx).longest is not None
        return "above its last value + GAP" + (", or at its first value + MAX," if longest else "")
    return "after the tuple that closed it"


def at_or_before(ctx: Context) -> str:
    """GENEROUS: whether a tuple `t` is at or before its key's closing point (joined as `_closed_*`)."""
    if _is_session(ctx):
        after = '(t > F.col("_closed_t"))'
        if run_rule(ctx).longest is not None:
            after += ' | (t >= F.col("_closed_from"))'
        return f"~({after})"
    pos = col(ctx.query.stream.row_num or ROW_NUM)
    return f'(t < F.col("_closed_t")) | ((t == F.col("_closed_t")) & ({pos} <= F.col("_closed_pos")))'
