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
from wql.compiler.plans import Plan
from wql.compiler.plans.grid import in_state_store
from wql.compiler.units import Number, quantity_text
from wql.compiler.windows import WindowKind
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
    """Whether a stream's kept tuples follow from the windows a trigger computes: each key's tuples from its
    first open window's wid on. True for plain sessions (no MAX, no WHERE inside the window, no GROUP BY,
    not GENEROUS), where equal values are never split between sessions and every tuple is in one; frames
    split ties by arrival and leave tuples out, and GENEROUS slack keeps more (§8.5), so they walk their
    tuples again."""
    window = query.window
    frame = window.frame
    return (
        window.kind is WindowKind.SESSION
        and frame is not None
        and frame.longest is None
        and (query.where is None or frame.kafka)
        and not any(k.origin == "group" for k in query.keys)
        and not (window.slack is not None and window.slack.mode == "generous")
    )


def state_text(query: Query, plan: Plan) -> str:
    """What the plan keeps between triggers, and what bounds it: the open windows, never the stream."""
    kept = _kept_text(query, plan)
    if query.window.align_first:
        scope = "each partition's" if query.window.partition_by else "the stream's"
        kept += f"; and {scope} first arrival (ALIGN FIRST), where its grid starts"
    return kept


def _kept_text(query: Query, plan: Plan) -> str:
    window = query.window
    per = "per key" if query.keys or window.partition_by else "in all"
    reach = "(RANGE + SLACK)" if window.slack is not None else "RANGE"
    grid = plan.grid
    if plan.family == "intervals":
        if window.is_snapshot:
            return (
                "rows: per partition, every open-ended event and those that end at or after x0, the partition's "
                "largest start or end at or before the punctuation: they hold every snapshot not yet final"
            )
        if window.kind is WindowKind.LANDMARK:
            return "rows: every event (a landmark window holds every event since the stream began)"
        if window.snap:
            return (
                "rows: per key, the events in or after the last window of its last final run (all of a key with "
                "none), every open-ended event, and those with the data's largest start or end"
            )
        return (
            "rows: the events that end at or after the first open window's start (those alive in the last "
            f"{reach} before the punctuation, however long), and every open-ended event"
        )
    if grid is not None and grid.kind == "landmark":
        return f"cells: {per}, one running state for the final windows and the cells after them"
    if grid is not None and grid.kind == "cumulate":
        return f"cells of one SLIDE: {per}, those of the periods that still have an open window"
    if grid is not None:
        kept = f"cells of the open windows: {per}, at most about {reach} / cell width + 1, however many rows"
        if in_state_store(query, plan):
            kept += "; in Spark's state store where the job has WQL's JVM kernels, else in the checkpoint's files"
        return kept
    if window.is_data_driven and window.slack is not None and window.slack.mode == "generous":
        what = "session" if window.kind is WindowKind.SESSION else "frame"
        return (
            f"rows: per key, every tuple after its last final {what} (GENEROUS places an admitted late tuple "
            f"among them; with a threshold or delta frame that includes the tuples in no frame), from which the "
            f"windows stage finds the open {what}s again; and each key's closing point, from its last final {what}"
        )
    if window.is_data_driven:
        what = "session" if window.kind is WindowKind.SESSION else "frame"
        kept = (
            f"rows: per key, the tuples from its first {what} not final yet on, from which the windows stage "
            f"finds the open {what}s again with the next trigger's tuples"
        )
        if window.partition_by and cut_from_windows(query):
            kept += (
                f"; and each key's open {what}s, so that a trigger computes again only the keys its tuples touch; "
                "every key's tuples are cut at its first open session, read off those windows"
            )
        elif window.partition_by:
            kept += (
                f"; and each key's open {what}s, so that a trigger computes again only the keys its tuples touch "
                "(a key none touches keeps its tuples as they were until one does)"
            )
        return kept
    if window.kind is WindowKind.LANDMARK:
        return "rows: every tuple (a landmark window's aggregate without partial states needs them all)"
    if window.attr.is_row_num:
        return f"rows: {per}, the last RANGE rows (and the positions that keep SLIDE's multiples)"
    return f"rows: the tuples the open windows can still hold, within {reach} of the newest"


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
    if attr.is_row_num:
        late = "never: row numbers are given in arrival order"
    elif mode == "generous" and window.is_data_driven:
        what = "session" if window.kind is WindowKind.SESSION else "frame"
        late = (
            f"a tuple whose {name} is below the punctuation at the start of its trigger (GENEROUS): after the "
            f"point its key's last final {what} closes the key's history up to, it is placed as if on time (it "
            f"can merge, split or start {what}s); at or before it, it is in no window; either way it is counted "
            "and written to the late-rows output"
        )
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
    final = _final(query)
    if query.emit == "changes":
        emit = "EMIT CHANGES: each trigger emits the open windows whose result changed; the last version is final"
    else:
        emit = "EMIT FINAL: each window once, in the trigger that makes it final (draining emits the rest)"
    return Disorder(emit=emit, final=final, punctuation=punctuation, late=late, slack=slack)


def _final(query: Query) -> str:
    window = query.window
    frame = window.frame
    if window.kind is WindowKind.SESSION:
        assert frame is not None
        cut = ", or reaches its first value + MAX" if frame.longest is not None else ""
        return f"a session once the punctuation is past its last value + GAP{cut}"
    closer = {
        WindowKind.THRESHOLD: "the tuple after it (its predicate false or NULL)",
        WindowKind.DELTA: "the tuple after it (the next frame's first, or a NULL x)",
        WindowKind.AGGREGATE: "its last tuple (where the condition held)",
    }.get(window.kind)
    if closer is not None:
        return f"a frame once the punctuation is past the tuple that closed it: {closer}"
    if window.kind is WindowKind.KAFKA:
        return "a window [x, x + RANGE] once the punctuation is past x + RANGE"
    if window.kind in {WindowKind.SLIDE_BY_TUPLE, WindowKind.SLIDE_BY_RANK}:
        return "the window named by value w, (w − RANGE, w], once the punctuation is past w"
    if window.is_snapshot:
        return (
            "a snapshot [start, end) once the punctuation (on event starts) reaches end: no event still to come "
            "can add an endpoint before it or be alive in it; a partition's last snapshot (no end) once drained"
        )
    if window.snap:
        return (
            "a run of windows w … w+k (SNAP) once the punctuation (on event starts) reaches the end of window "
            "w+k+1; a run past the data's last window that holds exactly its key's open-ended events once the "
            "data reaches w+k+1 too (a later event would lengthen it), or the drain"
        )
    if window.is_interval:
        return "a window [start, end) once the punctuation (on event starts) reaches end"
    return "a window [start, end) once the punctuation reaches end"


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
    if window.is_snapshot and query.emit == "changes":
        raise WQLNotSupportedError(
            "EMIT CHANGES of snapshot windows: an event still to come can add an endpoint inside an open "
            "snapshot and cut it in two, so a version already emitted would name a window that no longer "
            "exists, which needs retractions",
            hint="use EMIT FINAL: each snapshot once, when the punctuation reaches its end",
        )
    if window.is_snapshot and window.slack is not None and window.slack.mode == "generous":
        raise WQLNotSupportedError(
            "SLACK … GENEROUS with snapshot windows: a late event starts before the punctuation, inside "
            "snapshots already emitted, which its start (and end) would cut in two",
            hint="use SLACK … CONSISTENT (the default): late events are counted and written to the late-rows output",
        )
    if window.snap and query.emit == "changes":
        raise WQLNotSupportedError(
            "EMIT CHANGES with SNAP: a run of windows still open can grow or be cut by an event still to come, "
            "so a version already emitted would name a run that no longer exists, which needs retractions",
            hint="use EMIT FINAL: each run once, when the window after it is final",
        )
    if window.snap and window.slack is not None and window.slack.mode == "generous":
        raise WQLNotSupportedError(
            "SLACK … GENEROUS with SNAP: a late event joining the open windows would change runs next to ones "
            "already emitted, whose first or last window it can belong to",
            hint="use SLACK … CONSISTENT (the default): late events are counted and written to the late-rows output",
        )
    if query.emit == "changes" and query.having is not None:
        raise WQLNotSupportedError(
            "EMIT CHANGES with HAVING: a window whose version passed HAVING can stop passing it as tuples "
            "join it, and taking back the version already emitted needs retractions",
            hint="use EMIT FINAL (HAVING then judges each window once, when it is final), or drop HAVING",
        )
    if query.emit == "changes" and window.kind is WindowKind.SLIDE_BY_RANK and window.slide != 1:
        raise WQLNotSupportedError(
            "EMIT CHANGES of windows named by rank: a later tuple can move every rank after it, so a window "
            "emitted as changed could stop existing, which needs retractions",
            hint="use EMIT FINAL",
        )
    if window.is_data_driven and query.emit == "changes":
        raise WQLNotSupportedError(
            f"EMIT CHANGES of {window.kind.value} windows: a tuple that arrives out of order can merge two "
            "sessions or split a frame, so a window emitted as changed could stop existing, which needs retractions",
            hint="use EMIT FINAL",
        )
