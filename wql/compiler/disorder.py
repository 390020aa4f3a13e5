"""Disorder on a stream: how time advances, what is late, when each window is final (docs/semantics.md §8).

Disorder never changes what a window contains, only when it can be emitted and
whether a late tuple counts. The rules, for one query:

- The punctuation p is a value of the window attribute: no tuple still to come
  has a smaller one. After each trigger p = max(p, max_seen − SLACK, the largest
  explicit punctuation seen). Without SLACK a stream is taken as in order (slack
  0), unless it declares PUNCTUATION WHEN (…): then only its punctuations advance
  p. Windows over row_num have p = the next row number: rows arrive in order.
- A tuple is late when its attribute is below p as of the start of its trigger.
  CONSISTENT: a late tuple is in no window. GENEROUS: it still joins the windows
  not yet emitted; for sessions and frames, when it comes after the point its
  key's last final window closes the key's history up to, where it is placed as
  if on time. Either way it is counted and written to the late-rows output.
- A window is final once p has passed everything that could still join it: a
  grid window [start, end) once p ≥ end; a window named by a tuple value w once
  p > w; a snapshot [eᵢ, eᵢ₊₁) once p ≥ eᵢ₊₁ (interval events are late by their
  start); a Kafka window [x, x + r] once p > x + r; a session once p > last + g
  (with MAX, also once p ≥ first + MAX); a frame once p is past the tuple that
  closed it. EMIT FINAL emits a window
  once, when it becomes final; EMIT CHANGES emits, each trigger, the open
  windows whose result changed. Draining sets p = +∞.

This module turns those rules into the facts `explain` prints and the numbers
and checks code generation needs; the streaming driver applies them.
"""

from __future__ import annotations

from dataclasses import dataclass

from wql.compiler.analysis import Query
from wql.compiler.kinds import kind_of
from wql.compiler.plans import Plan
from wql.compiler.plans.stored import in_state_store
from wql.compiler.units import Number, quantity_text
from wql.grammar.errors import WQLNotSupportedError


@dataclass(frozen=True)
class Disorder:
    """How one query behaves on a stream, in words for explain and in numbers for the job."""

    emit: str  # EMIT FINAL or EMIT CHANGES, and what that means for this query
    final: str  # when one of its windows is final
    punctuation: str  # how time advances
    late: str  # what counts as late and what happens to it
    slack: Number | None  # punctuation = max_seen − slack; None: only explicit punctuations advance it

    def to_dict(self) -> dict[str, object]:
        return {"emit": self.emit, "final": self.final, "punctuation": self.punctuation, "late": self.late}


def stream_facts(query: Query, plan: Plan | None) -> dict[str, object]:
    """What explain says about running the query on a stream: the rules above for this query, what the
    chosen plan keeps between triggers, or why the stream backend refuses it."""
    try:
        check_streamable(query)
    except WQLNotSupportedError as error:
        return {"refused": error.message}
    facts = disorder(query).to_dict()
    if plan is not None:
        facts["state"] = state_text(query, plan)
    return facts


def cut_from_windows(query: Query) -> bool:
    """Whether a stream's kept tuples follow from the windows a trigger computes (the window's kind says)."""
    return kind_of(query.window).cuts_from_windows(query)


def state_text(query: Query, plan: Plan) -> str:
    """What the plan keeps between triggers, and what bounds it: the open windows, never the stream."""
    kind = kind_of(query.window)
    kept = kind.kept_text(query, plan.keeps == "cells")
    stored = in_state_store(query, plan)
    if stored and query.window.is_data_driven:  # the store keeps no tuples: say both
        kept = (
            f"each key's open {kind.noun}s, as first and last value and partial states, in Spark's state store where "
            f"the job has WQL's JVM kernels; else in the checkpoint's files, {kept}"
        )
    elif stored:
        kept += "; in Spark's state store where the job has WQL's JVM kernels, else in the checkpoint's files"
    if query.window.align_first:
        scope = "each partition's" if query.window.partition_by else "the stream's"
        kept += f"; and {scope} first arrival (ALIGN FIRST), where its grid starts"
    return kept


def disorder(query: Query) -> Disorder:
    window = query.window
    attr = window.attr
    name = "row_num" if attr.is_row_num else attr.name
    if attr.is_row_num:
        punctuation = (
            "rows arrive in order of their position within the partition: once a partition has n rows, "
            "each of its windows ending at or before n is final"
            if window.per_partition_rows
            else "rows arrive in row_num order: after n rows the punctuation is n, and nothing is ever late"
        )
        slack: Number | None = -1  # p = max_seen + 1: the next row number
    elif window.slack is not None:
        amount = quantity_text(window.slack.amount, attr.domain)
        punctuation = f"max {name} seen − SLACK {amount}, after each trigger"
        if query.stream.punctuation:
            punctuation += f", or a punctuation row's {name} ({query.stream.punctuation}), whichever is larger"
        slack = window.slack.amount
    elif query.stream.punctuation:
        punctuation = f"the largest {name} of the punctuation rows ({query.stream.punctuation}) seen so far"
        slack = None
    else:
        punctuation = f"max {name} seen, after each trigger: without SLACK the stream is taken as in order (slack 0)"
        slack = 0
    mode = window.slack.mode if window.slack is not None else "consistent"
    kind = kind_of(window)
    if attr.is_row_num:
        late = "never: row numbers are given in arrival order"
    elif (own := kind.late_text(query, name)) is not None:
        late = own
    elif mode == "generous":
        late = (
            f"a tuple whose {name} is below the punctuation at the start of its trigger (GENEROUS): it still joins "
            "the windows not yet emitted; it is counted and written to the late-rows output"
        )
    else:
        late = (
            f"a tuple whose {name} is below the punctuation at the start of its trigger (CONSISTENT): it is in no "
            "window; it is counted and written to the late-rows output"
        )
    final = kind.final_text(window)
    if query.emit == "changes":
        emit = kind.changes_text(query) or (
            "EMIT CHANGES: each trigger emits the open windows whose result changed; the last version is final"
        )
    else:
        emit = "EMIT FINAL: each window once, in the trigger that makes it final (draining emits the rest)"
    return Disorder(emit=emit, final=final, punctuation=punctuation, late=late, slack=slack)


def check_streamable(query: Query) -> None:
    """Refuse, with the reason, what cannot be exact on a stream yet."""
    window = query.window
    if query.limit is not None:
        raise WQLNotSupportedError(
            "LIMIT on a stream: a stream's result has no end to count from",
            hint="drop LIMIT; ORDER BY on a stream orders each trigger's windows",
        )
    if query.emit_empty:
        raise WQLNotSupportedError("EMIT EMPTY on a stream", hint="run the query in batch, or drop EMPTY")
    if query.stream.punctuation and window.attr.is_row_num:
        raise WQLNotSupportedError(
            "PUNCTUATION WHEN with a window over row_num: rows arrive in row_num order already",
        )
    kind_of(window).refuse_on_stream(query)
    if query.emit == "changes" and query.having is not None:
        raise WQLNotSupportedError(
            "EMIT CHANGES with HAVING: a window whose version passed HAVING can stop passing it as tuples "
            "join it, and taking back the version already emitted needs retractions",
            hint="use EMIT FINAL (HAVING then judges each window once, when it is final), or drop HAVING",
        )
