"""What `wql explain` reports about a query, as plain data.

One structure serves the text rendering (rich), `--json` and the notebook, so
they cannot drift apart. Plans are added by the optimizer when it has run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wql.compiler.analysis import AggregateCall, Query
from wql.compiler.classify import describe_kind, extent_formula, wids_formula
from wql.compiler.disorder import stream_facts
from wql.compiler.plans import Plan
from wql.compiler.schema import Domain
from wql.compiler.sections import Section, sections_for
from wql.compiler.units import quantity_text
from wql.compiler.windows import SlideOn, WindowKind


@dataclass(frozen=True)
class PlanChoice:
    name: str
    cost: float | None  # estimated cost in row-operations; None when the plan cannot run
    note: str
    chosen: bool = False


@dataclass(frozen=True)
class Explanation:
    number: int  # the query's number among the file's queries (what `--query N` takes)
    line: int
    query: str
    stream: str
    window: dict[str, Any]
    kind: str
    window_class: str
    context: str
    reason: str
    wids: str
    extent: str
    aggregates: tuple[dict[str, str], ...]
    columns: tuple[str, ...]
    plans: tuple[PlanChoice, ...] = ()
    plan: str | None = None
    notes: tuple[str, ...] = field(default=())
    see: tuple[Section, ...] = ()  # the docs sections that define what this explanation shows
    stream_facts: dict[str, Any] = field(default_factory=dict)  # on a stream: emit, final, punctuation, late, state
    edges: str | None = None  # which windows are partial at the data's edges (ROWS windows), said in words

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "edges": self.edges,
            "line": self.line,
            "query": self.query,
            "stream": self.stream,
            "window": self.window,
            "kind": self.kind,
            "class": self.window_class,
            "context": self.context,
            "class_reason": self.reason,
            "wids": self.wids,
            "extent": self.extent,
            "aggregates": list(self.aggregates),
            "columns": list(self.columns),
            "plans": [{"plan": p.name, "cost": p.cost, "note": p.note, "chosen": p.chosen} for p in self.plans],
            "plan": self.plan,
            "notes": list(self.notes),
            "see": [section.link for section in self.see],
            "on_stream": self.stream_facts,
        }


def _data_driven_facts(query: Query) -> dict[str, Any]:
    """A session's or frame's spec, kind, attribute, partitions and rule (gap, predicate, delta, condition)."""
    window, frame = query.window, query.window.frame
    assert frame is not None
    domain = window.attr.domain
    first_unit, max_unit = frame.units
    rule: dict[str, Any] = {}
    if window.kind is WindowKind.SESSION:
        assert frame.gap is not None
        rule["gap"] = quantity_text(frame.gap, domain, first_unit)
        rule["max"] = None if frame.longest is None else quantity_text(frame.longest, domain, max_unit)
        rule["kafka"] = frame.kafka
    elif window.kind is WindowKind.THRESHOLD:
        rule["predicate"] = frame.condition
        if frame.minimum is None:
            rule["minimum"] = None
        else:
            rule["minimum"] = quantity_text(frame.minimum, Domain.ROW_NUM if frame.minimum_rows else domain, first_unit)
    elif window.kind is WindowKind.DELTA:
        rule["delta"] = frame.delta
        rule["on"] = frame.on
    else:
        rule["condition"] = frame.condition
        rule["running_aggregates"] = [r.sql for r in frame.running]
    return {
        "spec": window.spec_text(),
        "kind": window.kind.value,
        "range": None,
        "slide": None,
        "range_attribute": window.attr.name,
        "slide_attribute": None,
        "rule": rule,
        "partition_by": list(window.partition_by),
        "slack": None
        if window.slack is None
        else {"amount": quantity_text(window.slack.amount, domain, window.slack_unit), "mode": window.slack.mode},
        "defaults": list(window.defaults),
    }


def window_facts(query: Query) -> dict[str, Any]:
    window = query.window
    if window.frame is not None:
        return _data_driven_facts(query)
    domain = window.attr.domain
    range_unit, slide_unit = window.units
    if window.kind is WindowKind.KAFKA:
        slide = "KAFKA"
    elif window.kind is WindowKind.SNAPSHOT:
        slide = "SNAPSHOT"
    elif window.slide_on is SlideOn.ATTRIBUTE:
        assert window.slide is not None
        slide = quantity_text(window.slide, domain, slide_unit)
    else:
        assert window.slide is not None
        slide = quantity_text(window.slide, Domain.ROW_NUM)
    slide_attr = {
        SlideOn.ATTRIBUTE: window.attr.name,
        SlideOn.ROW_NUM: "row_num",
        SlideOn.RANK: f"rank({window.attr.name})",
    }[window.slide_on]
    return {
        "spec": window.spec_text(),
        "kind": window.kind.value,
        "range": "SNAPSHOT"
        if window.kind is WindowKind.SNAPSHOT
        else "UNBOUNDED"
        if window.range is None
        else quantity_text(window.range, domain, range_unit),
        "slide": slide,
        "range_attribute": window.attr.name
        if window.end_attr is None
        else f"({window.attr.name}, {window.end_attr.name})",
        "slide_attribute": slide_attr if window.kind not in {WindowKind.KAFKA, WindowKind.SNAPSHOT} else None,
        "partition_by": list(window.partition_by),
        "slack": None
        if window.slack is None
        else {
            "amount": quantity_text(window.slack.amount, domain, range_unit),
            "mode": window.slack.mode,
        },
        "defaults": list(window.defaults),
        **({"variant": "clip" if window.clip else "snap"} if window.clip or window.snap else {}),
    }


def _aggregate_facts(query: Query, call: AggregateCall) -> dict[str, Any]:
    """Kind and family; whether the aggregate is itself a result column, or what uses it."""
    from sqlglot import exp

    from wql.grammar.expressions import parse_sql_expression

    def uses(sql: str | None) -> bool:
        return sql is not None and any(str(c.name) == call.name for c in parse_sql_expression(sql).find_all(exp.Column))

    result = call.name in query.columns
    used_by = [o.name for o in query.outputs if o.name != call.name and uses(o.sql)]
    if uses(query.having):
        used_by.append("HAVING")
    if any(uses(o.sql) for o in query.order_by):
        used_by.append("ORDER BY")
    return {
        "call": call.sql,
        "column": call.name,
        "result": result,
        "used_by": ", ".join(used_by),
        "kind": call.info.kind.value,
        "family": call.info.family.value,
        "approximate": "yes" if call.info.approximate else "no",
    }


def explain_query(
    query: Query, number: int, line: int, plans: tuple[PlanChoice, ...] = (), plan: Plan | None = None
) -> Explanation:
    classification = query.classification
    chosen = next((p.name for p in plans if p.chosen), None)
    return Explanation(
        number=number,
        line=line,
        query=query.text,
        stream=query.stream.name,
        window=window_facts(query),
        kind=describe_kind(query.window),
        window_class=classification.window_class.value,
        context=classification.context,
        reason=classification.reason,
        wids=wids_formula(query.window),
        extent=extent_formula(query.window),
        aggregates=tuple(_aggregate_facts(query, call) for call in query.aggregates),
        columns=query.columns,
        plans=plans,
        plan=chosen,
        see=sections_for(query, chosen),
        stream_facts=stream_facts(query, plan),
        edges=partial_windows(query),
    )


def partial_windows(query: Query) -> str | None:
    """For windows that count rows: the first windows start before the first row and the last run past
    the last row, so they hold fewer than RANGE rows (semantics §2.4), and are reported all the same."""
    window = query.window
    if window.kind is not WindowKind.SLIDING or not window.attr.is_row_num:
        return None
    assert window.range is not None and window.slide is not None
    rows, step = int(window.range), int(window.slide)
    where, whose = (" of each partition", "the partition's") if window.partition_by else ("", "the stream's")
    if rows <= step and window.origin == 0:
        return f"the last window{where} may hold fewer than {rows:,} rows: {whose} data ends inside it"
    first = -(-rows // step) - 1  # ⌈n/m⌉ − 1 windows start before row 0, with the grid at 0
    counted = f"the first {first:,} window{'s' if first != 1 else ''}" if window.origin == 0 else "the first windows"
    return (
        f"{counted}{where} start before {whose} first row and the last ones run past its last row: they "
        f"hold fewer than {rows:,} rows, and are reported like every non-empty window"
    )
