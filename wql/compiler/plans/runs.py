"""Plans for sessions and frames (data-driven windows, FCU; semantics.md §2).

Every data-driven window is a maximal run of consecutive tuples of a partition in
(attribute, row_num) order, so every plan makes one pass per partition in that
order, with no per-tuple fan-out: each tuple gets the number of the window it is
in (or none), and an ordinary group-by of (keys, window) aggregates it.

- fold: one pass per partition numbers the windows and folds each window's
  partial states (no group-by of tuples afterwards). Needs fixed-size partial
  states and no GROUP BY inside the partitions. On an integral attribute every
  kind runs in WQL's JVM kernel (tuples shuffled as columnar batches per key,
  each key ordered by a merge of the runs it arrived in and walked once over
  arrays; `in_jvm`); a partition past Spark's execution memory goes through
  Spark's spilling sorter and is walked in chunks, so memory is bounded by the
  windows in flight, not by a hot key. DOUBLE attributes and a stream's frames
  (which need their closing tuples) run in numpy through Arrow (mapInArrow), as
  every fold does without the jar: Spark sorts each partition in window order
  (its sort spills) and the pass folds its batches one at a time, carrying the
  window in flight, so it too holds a batch and the windows in flight.
- starts: inside Spark. A window starts at a tuple that its predecessor alone
  decides (a gap above GAP, a predicate that turns true), so `lag` over the
  partition in order marks the starts, a running count of the marks numbers the
  windows, and a group-by aggregates them: one sort, every aggregate (holistic
  ones too). Sessions without MAX and threshold frames.
- scan: where a window's start depends on where the previous one started (a
  delta frame's anchor, a session's maximum length, a running aggregate that
  resets), no window function can follow the chain: a numpy pass per partition
  (mapInArrow) walks it and numbers the windows; a group-by aggregates them.
  Every window kind, every aggregate. Like numpy's fold, the pass reads Spark's
  sort of the partition batch by batch, carrying the chain's state.

Costs are in tuple-operations for N tuples (see `Statistics`): a shuffle and sort
of every tuple dominates starts, scan and numpy's fold; the Arrow round trip of
numpy's fold and scan costs more than starts' window functions (measured by
benchmarks/sessions.py: starts about 2.5x faster than numpy's fold on sessions),
and fold skips scan's group-by. The JVM fold shuffles a few array rows per
thousand tuples and sorts none of them as rows: about twice as fast as starts
on the same data (benchmarks/sessions.py), hence half its cost.
"""

from __future__ import annotations

from wql.compiler.analysis import Query
from wql.compiler.kinds import kind_of
from wql.compiler.kinds.shapes import RunShape
from wql.compiler.plans.base import Candidate, Plan, PlanName, Statistics
from wql.compiler.plans.states import decompose, state_names, why_not_shared
from wql.compiler.schema import Domain
from wql.compiler.windows import Window

# What a numpy pass (the fold without the JVM kernel, the scan) holds: Spark sorts each partition in
# window order (keys, attribute, arrival; its sort spills) and mapInArrow hands the pass the sorted
# batches, which it walks one at a time, carrying the window in flight from batch to batch; the JVM
# fold streams a partition past memory through Spark's sorter too, and starts' window functions
# buffer through Spark's spilling row array. None holds a hot key's tuples at once.
HOLDS = (
    "reads Spark's sort of each partition (which spills) batch by batch, holding two Arrow batches and the "
    "{what}s in flight, never a key's tuples"
)


def run_shape(window: Window) -> RunShape:
    """The window's shape: a run of tuples (a session or a frame), which says where runs start and end."""
    shape = kind_of(window).shape(window)
    assert isinstance(shape, RunShape), "the runs family computes windows the data cuts"
    return shape


def fold_blocker(query: Query) -> str | None:
    """Why the fold cannot compute this query, or None if it can."""
    if any(k.origin == "group" for k in query.keys):
        return "GROUP BY inside a partition: the fold keeps one group of states per window"
    return None


def in_jvm(query: Query) -> bool:
    """Whether WQL's JVM kernel folds this query's windows (wql-kernels.jar; numpy without it): every
    data-driven kind on an integral attribute (DOUBLE and DECIMAL ones stay in numpy). A stream's
    frames (not sessions) need each frame's closing tuple, which only numpy's fold reports, so they
    run in numpy there."""
    integral = (Domain.TIMESTAMP, Domain.DATE, Domain.INTEGER, Domain.ROW_NUM)
    return query.window.attr.domain in integral


def candidates(query: Query, stats: Statistics) -> list[Candidate]:
    n = stats.rows
    shape = run_shape(query.window)
    what = shape.noun
    out = []
    decomposition = decompose(query, state_names(query))
    if decomposition is None:
        out.append(Candidate.refused(PlanName.FOLD, why_not_shared(query)))
    elif (blocker := fold_blocker(query)) is not None:
        out.append(Candidate.refused(PlanName.FOLD, blocker))
    elif in_jvm(query):
        note = (
            f"one pass per key in the JVM: tuples shuffled as columnar batches per key, each {what} found and "
            "its partial states folded over arrays; a partition past Spark's execution memory goes through "
            f"Spark's spilling sorter and is folded in chunks, the {what} in flight carried over"
        )
        out.append(Candidate(PlanName.FOLD, Plan("runs", PlanName.FOLD, decomposition=decomposition), 1.5 * n, note))
    else:
        note = (
            f"one numpy pass per key (mapInArrow): each {what} found and its partial states folded as its tuples "
            f"go by; the pass {HOLDS.format(what=what)}"
        )
        out.append(Candidate(PlanName.FOLD, Plan("runs", PlanName.FOLD, decomposition=decomposition), 4.0 * n, note))
    chain = shape.chained
    if chain is not None:
        out.append(Candidate.refused(PlanName.STARTS, chain))
    else:
        mark = shape.start_mark
        note = (
            f"lag over each key's tuples in order marks the tuples that start a {what} ({mark}), a running count "
            f"numbers the {what}s, a group-by aggregates them"
        )
        out.append(Candidate(PlanName.STARTS, Plan("runs", PlanName.STARTS), 3.0 * n, note))
    walk = f"follows the chain of {what}s and numbers them" if chain is not None else f"numbers the {what}s"
    note = f"one numpy pass per key (mapInArrow) {walk}, a group-by aggregates them; the pass {HOLDS.format(what=what)}"
    out.append(Candidate(PlanName.SCAN, Plan("runs", PlanName.SCAN), 5.0 * n, note))
    return out


def in_state_store(query: Query, plan: Plan) -> bool:
    """Whether a stream of this plan keeps its sessions in Spark's state store when the job has WQL's JVM
    kernels (docs/semantics.md §8.12): fold sessions, whose open sessions are each a first and last value and
    partial states a tuple merges into, emitted once final (EMIT FINAL) or as they change (EMIT CHANGES, the
    versions a merge takes back retracted) under CONSISTENT slack, or once final under GENEROUS (each key's
    closing point kept beside its sessions), on an integral attribute (Spark's watermark holds whole
    milliseconds). MAX (a merged session is cut again at tuples the state no longer holds), GENEROUS with
    EMIT CHANGES and Kafka's late-record rule stay with the files engine, as do frames."""
    window = query.window
    if plan.family != "runs" or plan.name is not PlanName.FOLD or plan.decomposition is None:
        return False
    if not run_shape(window).merges_by_state:
        return False
    mode = "consistent" if window.slack is None else window.slack.mode
    # GENEROUS keeps each key's closing point beside its sessions; with EMIT CHANGES it stays on the files engine
    if mode not in ("consistent", "generous") or (mode == "generous" and query.emit != "final"):
        return False
    return in_jvm(query) and not window.numbers_rows
