"""What a streaming job adds to the batch stages: the window rules, its constants and its header.

The stages (number, prepare, lift, windows, finish) are the batch job's, written
by the plan family's generator. A stream adds `merge` (cell plans: cells of one
key and index from several triggers into one), the window rules each family
writes (`is_final`, `retain`, `missed`), `window_attribute` and `show_point`,
and the stream driver copied from `wql.compiler.kernels` (engine.py has its protocol).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wql.compiler.analysis import Query
from wql.compiler.codegen.common import (
    Context,
    anchors_rule,
    attribute_expression,
    from_anchor_back,
    window_attribute_rule,
)
from wql.compiler.disorder import check_streamable, cut_from_windows, disorder, state_text
from wql.compiler.families import FAMILIES
from wql.compiler.kernels.contract import Streaming
from wql.compiler.kinds import kind_of
from wql.compiler.plans import Plan
from wql.compiler.schema import Domain

# The driver's calls into a job's own stages and rules that only some queries define, each with when the
# driver makes it (a test checks every other name the driver reads is defined in every streaming job).
GUARDED_RULES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "number": lambda streaming: bool(streaming["numbered"] or streaming["anchored"]),
    "anchors_seen": lambda streaming: bool(streaming["anchored"]),
    "closed": lambda streaming: streaming["closings"] is not None,
    "closing": lambda streaming: streaming["closings"] is not None,
    "lift": lambda streaming: streaming["keeps"] == "cells" and not streaming["shares"],
    "shares": lambda streaming: streaming["keeps"] == "cells" and bool(streaming["shares"]),
    "merge": lambda streaming: streaming["keeps"] == "cells",
    "replay": lambda streaming: bool(streaming.get("replays")),
    "lower": lambda streaming: bool(streaming["lowered"]),
    "data_end": lambda streaming: bool(streaming.get("reaches")),
    "reached": lambda streaming: bool(streaming.get("reaches")),
}


def stream_extras(ctx: Context) -> None:
    """The merge stage and the window rules, from the plan's family."""
    window_attribute_rule(ctx)
    FAMILIES[ctx.plan.family].generator.stream_rules(ctx)
    last = FAMILIES[ctx.plan.family].generator.last_reached(ctx, "end")
    if last is not None:
        _reach_rules(ctx, last)
    if ctx.window.align_first:
        anchors_rule(ctx)
    _show_point(ctx)
    for name in ("merge", "shares"):  # right after lift, where a reader expects them: lift, shares, merge
        stage = next((s for s in ctx.stages if s.name == name), None)
        if stage is not None:
            ctx.stages.remove(stage)
            ctx.stages.insert(next(i for i, s in enumerate(ctx.stages) if s.name == "lift") + 1, stage)


def _reach_rules(ctx: Context, last: str) -> None:
    """data_end and reached, for windows that go only as far as the data (docs/semantics.md §8.10): the
    punctuation can pass the data's end (a punctuation row, or an interval event that ends before it starts,
    moves it and not the data's end), and a window it passes there is final but not yet among the windows;
    the driver emits it in the trigger whose data reaches it, which needs the data's end each trigger left."""
    code, window = ctx.rules, ctx.window
    code("def data_end(rows):")
    code.indent()
    if window.end_attr is not None:
        code('"""Where an event puts the data\'s end: the larger of its start and end, if it ends at or after its')
        code('start (an open-ended one, its start)."""')
        code(f"start, end = window_attribute(rows), {attribute_expression(ctx, window.end_attr.name)}")
        code("return F.when(end.isNull() | (end >= start), F.greatest(start, end))")
    else:
        code('"""Where a tuple puts the data\'s end: its window attribute."""')
        code("return window_attribute(rows)")
    code.dedent()
    code.blank(2)
    code("def reached(data_end):")
    code.indent()
    code('"""Whether a window is at or before the data\'s last window, the data ending at data_end: a window the')
    code("punctuation passed beyond the data's end is final but not among the windows yet, and is emitted in the")
    code('trigger whose data reaches it."""')
    code("if data_end is None:")
    code("    return F.lit(False)")
    code(f"end = {from_anchor_back(window, 'F.lit(data_end)')}")
    code(f'return F.col("wid") <= {last}')
    code.dedent()
    code.blank(2)


def _show_point(ctx: Context) -> None:
    code = ctx.rules
    domain = ctx.window.attr.domain
    code("def show_point(value):")
    code.indent()
    code('"""A punctuation as a person reads it."""')
    code("if value is None:")
    code('    return "none yet"')
    if domain is Domain.TIMESTAMP:
        code("import datetime")
        code("")
        code("return str(datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=value))")
    elif domain is Domain.DATE:
        code("import datetime")
        code("")
        code("return str(datetime.date(1970, 1, 1) + datetime.timedelta(days=value))")
    else:
        code("return str(value)")
    code.dedent()
    code.blank(2)


def streaming_constants(ctx: Context) -> Streaming:
    """STREAMING: what the driver needs to know of this query."""
    query, window = ctx.query, ctx.window
    rules = disorder(query)
    partitions = [k for k in query.keys if k.origin == "partition"]
    counted = window.attr.is_row_num and window.per_partition_rows  # FCF: each partition its own punctuation
    generous = window.slack is not None and window.slack.mode == "generous"
    constants: Streaming = {
        "keeps": ctx.plan.keeps,
        "shares": any(s.name == "shares" for s in ctx.stages),
        "slack": rules.slack,
        "mode": window.slack.mode if window.slack is not None else "consistent",
        "emit": query.emit,
        "punctuation": query.stream.punctuation,
        "numbered": any(s.name == "number" for s in ctx.stages),
        "positions": list(window.partition_by) if counted else [],
        "anchored": window.align_first,
        "partition_columns": [ctx.key_columns[k.name] for k in partitions] if counted else [],
        # Sessions and frames with PATTR: each trigger computes again only the keys its tuples touch;
        # with GENEROUS every key, whose closing point (§8.5) follows windows that may not be in the output.
        "keyed": [ctx.key_columns[k.name] for k in partitions] if window.is_data_driven and not generous else [],
        "closings": [ctx.key_columns[k.name] for k in partitions] if window.is_data_driven and generous else None,
        "opened": cut_from_windows(query),
        "lowered": any(s.name == "lower" for s in ctx.stages),
        "store": FAMILIES[ctx.plan.family].generator.store_request(ctx),
    }
    if retracts(query):  # a version emitted before whose session is gone is taken back, found by these columns
        constants["retracts"] = ["wid", *(ctx.key_columns[k.name] for k in query.keys)]
    if (
        FAMILIES[ctx.plan.family].generator.last_reached(ctx, "end") is not None
    ):  # windows that wait for the data to reach them
        constants["reaches"] = True
    if any(s.name == "replay" for s in ctx.stages):  # Kafka's late-record rule: the trigger's records replayed
        constants["replays"] = True
    return constants


def retracts(query: Query) -> bool:
    """Whether a trigger can take back a version it emitted before: EMIT CHANGES of sessions, where a tuple out
    of order can merge two sessions or move one's start (docs/semantics.md §8.7)."""
    return query.emit == "changes" and kind_of(query.window).retracts


def stream_header(query: Query, plan: Plan) -> list[tuple[str, str]]:
    """Header lines of a streaming job: when windows are emitted, how time advances, what is late."""
    rules = disorder(query)
    kept = "the cells of windows still open" if plan.keeps == "cells" else "the tuples of windows still open"
    if query.window.is_data_driven:  # where the kept tuples begin is the point: say it as explain does
        kept = state_text(query, plan)
    return [
        ("Emit", rules.emit),
        ("Final", rules.final),
        ("Time", rules.punctuation),
        ("Late", rules.late),
        ("State", f"{kept}, in the checkpoint directory, between triggers"),
    ]


__all__ = ["GUARDED_RULES", "check_streamable", "stream_extras", "stream_header", "streaming_constants"]
