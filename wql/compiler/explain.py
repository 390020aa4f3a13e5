"""What `wql explain` reports about a query, as plain data.

One structure serves the text rendering (rich), `--json` and the notebook, so
they cannot drift apart. Plans are added by the optimizer when it has run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from wql.compiler.analysis import AggregateCall, Query
from wql.compiler.classify import describe_kind, extent_formula, wids_formula
from wql.compiler.disorder import stream_facts
from wql.compiler.kinds import kind_of
from wql.compiler.plans import Plan, Statistics
from wql.compiler.sections import Section, sections_for
from wql.grammar.expressions import parse_sql_expression


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
    # What the costs are estimated for: the same assumptions for every query, so that a plan never depends on
    # the data (the job `wql compile` prints is the one `wql run` executes); and, where the runtime can see the
    # stream's data, how much there is, in words.
    assumed: dict[str, float] = field(default_factory=dict)
    data: str | None = None

    @property
    def costs(self) -> str:
        """The assumptions the estimated costs are for, and the data this query's stream holds, in words."""
        if not self.assumed:
            return ""
        text = (
            f"estimated for N = {self.assumed['rows']:,.0f} tuples, ρ = {self.assumed['rows_per_slide']:g} tuples "
            "per slide, the same for every query: the plan does not depend on the data"
        )
        return text + (f"; this stream's data: {self.data}" if self.data else "")

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
            "costs": {"assumed": self.assumed, "data": self.data} if self.assumed else None,
        }


def window_facts(query: Query) -> dict[str, Any]:
    return kind_of(query.window).facts(query.window)


def _aggregate_facts(query: Query, call: AggregateCall) -> dict[str, Any]:
    """Kind and family; whether the aggregate is itself a result column, or what uses it."""

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
        "kind": call.info.partial_state.value,
        "family": call.info.duplicates.value,
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
        see=sections_for(query, kind_of(query.window).cited(query.window), kind_of(query.window).retracts, chosen),
        stream_facts=stream_facts(query, plan),
        edges=partial_windows(query),
        assumed=_assumed() if plans else {},
    )


def _assumed() -> dict[str, float]:
    stats = Statistics()
    return {"rows": stats.rows, "rows_per_slide": stats.rows_per_slide}


def partial_windows(query: Query) -> str | None:
    """Which windows are partial at the data's edges (windows that count rows), in words."""
    return kind_of(query.window).edges(query)
