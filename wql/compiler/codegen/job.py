"""Assembling a complete, standalone PySpark program for one query, for batch or for a stream.

The program is what `wql compile` prints and what `wql run` executes: a header
that explains the query, the window constants, the stream declarations, the
stage functions and `query` (the plan), and the support code it needs, copied
from `wql.compiler.kernels` so the job runs with plain PySpark and no WQL
install. A streaming job has the same stages, plus the window rules and the
streaming driver (`wql.compiler.codegen.stream`).
"""

from __future__ import annotations

import ast
from functools import cache
from importlib import resources

from wql.compiler.analysis import Query
from wql.compiler.classify import describe_kind
from wql.compiler.codegen.common import Context, check_internal_names
from wql.compiler.codegen.emit import Code, comment, identifier, py
from wql.compiler.codegen.families import FAMILIES
from wql.compiler.codegen.stream import (
    STREAM_SUPPORT,
    check_streamable,
    stream_extras,
    stream_header,
    streaming_constants,
)
from wql.compiler.explain import PlanChoice
from wql.compiler.plans import Plan
from wql.compiler.schema import ROW_NUM, Stream

VERSION = "0.1.0"

# Support functions a support function calls, brought in with it (and with them, what they call).
_NEEDS = {
    "jvm_kernel": ("kernel_extension",),
    "slice_events": ("events_in_order", "cut_events"),
    "cut_events": ("spark_column",),
    "difference_windows": ("events_in_order",),
    "sweep_windows": ("events_in_order",),
    "events_in_order": ("by_keys", "spark_column"),
    "by_keys": ("spark_column",),
    "in_window_order": ("by_keys", "spark_column"),
    "combine_cells": ("spark_column",),
    "windows_by_tuple": ("spark_column",),
    "event_slices": ("batch_chunks", "key_changes", "held_row"),
    "event_differences": ("batch_chunks", "key_changes", "state_identity"),
    "sliding_combine": ("batch_chunks", "held_row"),
    "tuple_windows": ("batch_chunks",),
    "key_changes": ("window_keys", "key_ids"),
}

# Support functions, in the order a reader meets them.
_SUPPORT_ORDER = (
    "combine_cells",
    "sliding_combine",
    "windows_by_tuple",
    "tuple_windows",
    "slice_events",
    "cut_events",
    "event_slices",
    "difference_windows",
    "sweep_windows",
    "event_differences",
    "events_in_order",
    "key_changes",
    "held_row",
    "frame_windows",
    "frame_states",
    "merge_states",
    "frame_labels",
    "window_closes",
    "in_window_order",
    "walk_sorted",
    "frame_pending",
    "frame_closings",
    "walk_settled",
    "walk_chunk",
    "window_keys",
    "running_arguments",
    "split_long_sessions",
    "walk_runs",
    "running_values",
    "running_test",
    "jvm_kernel",
    "kernel_extension",
    "jvm_states",
    "key_ids",
    "batch_chunks",
    "state_identity",
    "by_keys",
    "spark_column",
    "arrival_order",
    "number_rows",
    "continue_positions",
    "array_percentile",
    "read_stream",
    "inspect_stream",
    "load_inputs",
    "write_result",
    "main",
)

_FLOAT_EDGES = '''
def first_window(t):
    """The first window holding t: the least w with t < ORIGIN + (w + 1) * SLIDE, exact on doubles."""
    w = F.floor((t - ORIGIN) / SLIDE)
    return F.when(t < ORIGIN + w * SLIDE, w - 1).when(t >= ORIGIN + (w + 1) * SLIDE, w + 1).otherwise(w)


def last_window(t):
    """The last window holding t: the greatest w with ORIGIN + (w + 1) * SLIDE - RANGE <= t."""
    w = F.floor((t - ORIGIN + RANGE) / SLIDE) - 1
    too_late = ORIGIN + (w + 1) * SLIDE - RANGE > t
    one_more = ORIGIN + (w + 2) * SLIDE - RANGE <= t
    return F.when(too_late, w - 1).when(one_more, w + 1).otherwise(w)


def cell_of(t, width):
    """The cell of t on the grid ORIGIN + k * width, exact on doubles for whole-number widths."""
    c = F.floor((t - ORIGIN) / width)
    return F.when(t < ORIGIN + c * width, c - 1).when(t >= ORIGIN + (c + 1) * width, c + 1).otherwise(c)
'''

# Interval events' ends on DOUBLE attributes: an event [t, e) reaches the windows and cells that start before e.
_INTERVAL_EDGES = '''
def last_window_before(e):
    """The last window starting before e: the greatest w with ORIGIN + (w + 1) * SLIDE - RANGE < e."""
    w = F.ceil((e - ORIGIN + RANGE) / SLIDE) - 2
    too_late = ORIGIN + (w + 1) * SLIDE - RANGE >= e
    one_more = ORIGIN + (w + 2) * SLIDE - RANGE < e
    return F.when(too_late, w - 1).when(one_more, w + 1).otherwise(w)


def cell_before(e, width):
    """The cell holding the last instant before e: the cell of e, or the one before when e is its edge."""
    c = cell_of(e, width)
    return F.when(ORIGIN + c * width == e, c - 1).otherwise(c)
'''


@cache
def _support_sources() -> dict[str, str]:
    """Top-level definitions of the kernel modules, by name; each module's constants as "_constants:MODULE"."""
    sources: dict[str, str] = {}
    for module in (
        "job_support.py",
        "sliding_combine.py",
        "tuple_windows.py",
        "frame_windows.py",
        "interval_windows.py",
        "streaming.py",
    ):
        text = resources.files("wql.compiler.kernels").joinpath(module).read_text(encoding="utf-8")
        tree = ast.parse(text)
        for node in tree.body:
            segment = ast.get_source_segment(text, node)
            if segment is None:
                continue
            if isinstance(node, ast.FunctionDef):
                sources[node.name] = segment
            elif isinstance(node, ast.Assign):
                key = f"_constants:{module}"
                sources[key] = sources.get(key, "") + segment + "\n"
    return sources


def stream_declaration(query: Query, parameter: str, *, stream: bool = False) -> dict[str, object]:
    source: Stream = query.stream
    window = query.window
    attributes = [a.name for a in (window.attr, window.end_attr) if a is not None and not a.is_row_num]
    declaration: dict[str, object] = {
        "parameter": parameter,
        "path": source.path,
        "format": source.format or "csv",
        "schema": source.ddl(),
        "options": {k: _option_text(v) for k, v in source.options},
        "numbered": bool(window.numbers_rows and not source.row_num),
        "window_attributes": attributes,
    }
    if stream:
        declaration["source"] = source.source
        declaration["columns"] = [[c.name, c.type] for c in source.columns]
    return declaration


def _option_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def generate_job(
    query: Query,
    plan: Plan,
    choices: tuple[PlanChoice, ...],
    *,
    source_path: str | None = None,
    statement: int = 1,
    line: int = 1,
    stream: bool = False,
) -> str:
    """The whole program for one query: a batch job, or (`stream`) a Structured Streaming job built from
    the same stages, with the window rules and the streaming driver added."""
    check_internal_names(query)
    if stream:
        check_streamable(query)
    parameter = identifier(query.stream.name)
    ctx = Context(query=query, plan=plan, param=parameter, streaming=stream)
    body(ctx)
    if stream:
        stream_extras(ctx)

    code = Code()
    _header(code, query, plan, choices, source_path, statement, line, stream)
    what = "Spark Structured Streaming job" if stream else "standalone PySpark job"
    code(f'"""A WQL window query as a {what} (see the comments above)."""')
    code.blank()
    code("import sys")
    code.blank()
    code("from pyspark.sql import DataFrame, SparkSession  # noqa: F401 (SparkSession: used by main)")
    if "Window" in ctx.helpers or "number_rows" in ctx.helpers:
        code("from pyspark.sql import Window")
    code("from pyspark.sql import functions as F")
    if "types" in ctx.helpers:
        code("from pyspark.sql.types import LongType, StructField, StructType")
    code.blank()
    code(f"APP_NAME = {py('wql: ' + (source_path or 'query') + f' #{statement}')}")
    code.blank()
    if ctx.constants:
        code.comment("The window spec in the window attribute's own units.")
        for name, literal, note in ctx.constants:
            code(f"{name} = {literal}" + (f"  # {comment(note, '')[0]}" if note else ""))
        code.blank()
    code.comment("The streams the query reads: where, in which format, with which schema.")
    declaration = {query.stream.name: stream_declaration(query, parameter, stream=stream)}
    _dictionary(code, "STREAMS", declaration)
    if stream:
        code.blank()
        code.comment("On a stream: what is kept between triggers, how time advances, what is emitted.")
        _dictionary(code, "STREAMING", streaming_constants(ctx))
    code.blank(2)
    emit_stages(code, ctx)
    code(f"def query({parameter}: DataFrame) -> DataFrame:")
    code.indent()
    code('"""The query as DataFrame operations, stage by stage; see the header for the plan."""')
    composed = parameter
    for stage in ctx.stages:
        if stage.name not in ("shares", "merge"):  # they combine cells across triggers: a stream's steps only
            composed = f"{stage.name}({composed})"
    code(f"return {composed}")
    code.dedent()
    code.blank(2)
    if stream:
        code(*ctx.rules.lines)
        code.blank(2)
    support = _support_sources()
    if "float_edges" in ctx.helpers:
        code(*_FLOAT_EDGES.strip("\n").splitlines())
        code.blank(2)
    if "interval_edges" in ctx.helpers:
        code(*_INTERVAL_EDGES.strip("\n").splitlines())
        code.blank(2)
    wanted = set(ctx.helpers) | {"read_stream", "inspect_stream", "load_inputs", "write_result", "main"}
    if stream:
        wanted = (wanted - {"read_stream", "inspect_stream", "load_inputs", "write_result", "main"}) | set(
            STREAM_SUPPORT
        )
    calling = list(wanted)
    while calling:
        for need in _NEEDS.get(calling.pop(), ()):
            if need not in wanted:
                wanted.add(need)
                calling.append(need)
    code(*support["_constants:job_support.py"].rstrip().splitlines())
    if stream:
        code(*support["_constants:streaming.py"].rstrip().splitlines())
    code.blank(2)
    for name in dict.fromkeys((*_SUPPORT_ORDER, *STREAM_SUPPORT)):  # each once, in order
        if name in wanted and name in support:
            code(*support[name].splitlines())
            code.blank(2)
    code('if __name__ == "__main__":')
    code(f"    sys.exit({'stream_main' if stream else 'main'}())")
    return code.render()


def _dictionary(code: Code, name: str, entries: dict[str, object]) -> None:
    """NAME = {…} with one key per line, nested one level for stream declarations."""
    code(f"{name} = {{")
    code.indent()
    for key, value in entries.items():
        if isinstance(value, dict):
            code(f"{py(key)}: {{")
            code.indent()
            for inner, item in value.items():
                code(f"{py(inner)}: {py(item)},")
            code.dedent()
            code("},")
        else:
            code(f"{py(key)}: {py(value)},")
    code.dedent()
    code("}")


def emit_stages(code: Code, ctx: Context) -> None:
    """Each stage as a function of its own, in pipeline order."""
    for stage in ctx.stages:
        extra = "".join(f", {e}" for e in stage.extra)
        code(f"def {stage.name}({stage.parameter}: DataFrame{extra}) -> DataFrame:")
        code.indent()
        code(f'"""{stage.doc}"""')
        for text in stage.code.lines:
            code(text)
        code.dedent()
        code.blank(2)


def body(ctx: Context) -> None:
    """The stages, written by the code generator of the plan's family."""
    FAMILIES[ctx.plan.family].generate(ctx)


def _header(
    code: Code,
    query: Query,
    plan: Plan,
    choices: tuple[PlanChoice, ...],
    source_path: str | None,
    statement: int,
    line: int,
    stream: bool = False,
) -> None:
    origin = f"{source_path}, statement {statement} (line {line})" if source_path else f"statement {statement}"
    code.comment(f"Generated by WQL {VERSION} from {origin}.")
    code.comment("Edit the query and recompile rather than editing this file.")
    code("#")
    code(*comment(query.text, "#   "))
    code("#")
    code.comment(f"Window  {query.window.spec_text()}")
    code.comment(f"Kind    {describe_kind(query.window)}")
    code.comment(f"Class   {query.classification.window_class.value}: {query.classification.reason}")
    chosen = next((c for c in choices if c.chosen), None)
    costs = ", ".join(f"{c.name} {c.cost:,.0f}" for c in choices if c.cost is not None)
    code.comment(f"Plan    {plan.kind.value}" + (f" (estimated costs: {costs})" if chosen and costs else ""))
    if chosen is not None and chosen.note:
        code.comment(f"        {chosen.note}")
    if stream:
        for label, text in stream_header(query, plan):
            code.comment(f"{label:<8}{text}")
    code("#")
    name = query.stream.name
    if stream:
        code.comment(f"Run:  python job.py [--input {name}=DIR] [--output DIR --checkpoint DIR] [--late DIR]")
        code.comment("                    [--format csv|json|parquet] [--once] [--drain] [--idle SECONDS]")
    else:
        code.comment(f"Run:  python job.py [--input {name}=PATH] [--output PATH] [--format csv|json|parquet]")
    code.comment("  or: spark-submit job.py …")
    code.blank()


__all__ = ["ROW_NUM", "generate_job"]
