"""Assembling a complete, standalone PySpark program for one query, for batch or for a stream.

The program is what `wql compile` prints and what `wql run` executes: a header
that explains the query, the window constants, the stream declarations, the
stage functions and `query` (the plan), and the support code it needs, copied
from `wql.compiler.kernels` so the job runs with plain PySpark and no WQL
install. A streaming job has the same stages, plus the window rules and the
streaming driver (`wql.compiler.codegen.stream`).
"""

from __future__ import annotations

import os
import symtable

from wql.compiler.analysis import Query
from wql.compiler.classify import describe_kind
from wql.compiler.codegen.common import Context, check_internal_names
from wql.compiler.codegen.emit import Code, comment, identifier, py
from wql.compiler.codegen.stream import check_streamable, stream_extras, stream_header, streaming_constants
from wql.compiler.codegen.support import IMPORTED, global_reads, section
from wql.compiler.explain import PlanChoice
from wql.compiler.families import FAMILIES
from wql.compiler.kernels.contract import Stream as JobStream
from wql.compiler.plans import Plan
from wql.compiler.schema import ROW_NUM, Stream
from wql.grammar.formatter import format_table

VERSION = "0.1.0"


def stream_declaration(query: Query, parameter: str, *, stream: bool = False) -> JobStream:
    source: Stream = query.stream
    window = query.window
    attributes = [a.name for a in (window.attr, window.end_attr) if a is not None and not a.is_row_num]
    declaration: JobStream = {
        "parameter": parameter,
        "path": job_path(source),
        "format": source.format or "csv",
        "schema": source.ddl(),
        "options": {k: _option_text(v) for k, v in source.options},
        "numbered": bool(window.numbers_rows and not source.row_num),
        "window_attributes": attributes,
    }
    if source.table_identifier is not None:  # read with spark.table, its columns cast to the declared types
        declaration["format"] = "table"
        declaration["table"] = source.table_identifier
    if stream:
        declaration["source"] = source.source  # type: ignore[typeddict-item]
    if stream or source.table_identifier is not None:
        declaration["columns"] = [[c.name, c.type] for c in source.columns]
    return declaration


def job_path(source: Stream) -> str | None:
    """The stream's path as the job reads it: a path the query wrote relative (to the query file) relative to
    the directory the job is compiled in, where `python job.py` runs it; an absolute path or a URL as written."""
    if source.path is None or not source.relative:
        return source.path
    return shown_path(source.path)


def shown_path(path: str) -> str:
    """A local path relative to the working directory: what a job or its header may say of this machine."""
    if "://" in path or not os.path.isabs(path):
        return path
    return os.path.relpath(path)


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
    source_path = None if source_path is None else shown_path(source_path)
    _header(code, query, plan, choices, source_path, statement, line, stream)
    what = "Spark Structured Streaming job" if stream else "standalone PySpark job"
    code(f'"""A WQL window query as a {what} (see the comments above)."""')
    code.blank()
    imports = len(code.lines)  # the imports go here, once the code says what it reads
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
    if query.order_by:
        code("SHOWN_IN = ()  # printed rows keep the query's ORDER BY")
    else:
        code.comment("Printed rows are in window order: by wid, then the keys (the query has no ORDER BY).")
        code(f"SHOWN_IN = {py(('wid', *query.key_names))}")
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
    entry = ['if __name__ == "__main__":', f"    sys.exit({'stream_main' if stream else 'main'}())"]
    reads = global_reads(symtable.symtable("\n".join([*code.lines, *entry]), "job", "exec"))
    standard = [line for name, line in IMPORTED.items() if name in reads and line.startswith("import")]
    others = [line for name, line in IMPORTED.items() if name in reads and not line.startswith("import")]
    code.lines[imports:imports] = [*standard, *([""] if standard and others else []), *others, ""]
    # The query's own code ends here; the support code follows, after a marker (goldens stop at it).
    code(*section("\n".join([*code.lines, *entry])))
    code.blank(2)
    code(*entry)
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
    FAMILIES[ctx.plan.family].generator.generate(ctx)


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
    origin = f"{source_path}, query {statement} (line {line})" if source_path else f"query {statement}"
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
    code.comment(f"Plan    {plan.name.value}" + (f" (estimated costs: {costs})" if chosen and costs else ""))
    if chosen is not None and chosen.note:
        code.comment(f"        {chosen.note}")
    if stream:
        for label, text in stream_header(query, plan):
            code.comment(f"{label:<8}{text}")
    code("#")
    name = query.stream.name
    given = "" if query.stream.table else f"[--input {name}={'DIR' if stream else 'PATH'}] "
    if stream:
        code.comment(f"Run:  python job.py {given}[--output DIR --checkpoint DIR] [--late DIR]")
        code.comment("                    [--format csv|json|parquet] [--once] [--drain] [--idle SECONDS]")
    else:
        code.comment(f"Run:  python job.py {given}[--output PATH] [--format csv|json|parquet]")
    code.comment("  or: spark-submit job.py …")
    if query.stream.table:
        code.comment(f"Reads table {format_table(query.stream.table)} from the catalog of the session it runs in.")
    code.blank()


__all__ = ["ROW_NUM", "generate_job"]
