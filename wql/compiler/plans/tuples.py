"""Plans for windows named by tuples (FCB/FCU): slide-by-tuple, slide by n rows, rank, Kafka.

- bins: one pass per partition in a vectorized kernel: each window's tuples are a
  contiguous run found by binary search, and aggregates come from prefix
  differences and sparse tables, so a window costs the same however many tuples
  it holds. Needs fixed-size partial states (no holistic aggregates). A window at
  every tuple without GROUP BY inside the partitions, on an integral attribute,
  runs in WQL's JVM kernel: tuples shuffled as columnar batches per key, windows
  computed with two stacks over arrays; the cheapest plan where it applies.
  Elsewhere numpy walks each partition sorted by Spark a chunk at a time, so
  neither holds a hot key's tuples at once.
- prefix: the same prefix differences inside Spark: each partition sorted by
  value once, and a window's states are the running totals up to w minus those
  up to w − RANGE, two growing frames that Spark keeps in a single pass. No
  Python round trip, so it beats bins where it applies: sums and counts (and
  avg, stddev from them), windows at every tuple or every n-th in value order,
  no GROUP BY inside the partitions.
- over: what a Spark user writes: a RANGE BETWEEN frame evaluated at every
  window, which Spark re-aggregates per window. The fallback for holistic
  aggregates; exact only on integral attributes (the frame's lower edge is open).
- replay: Kafka's late-record rule (`SLACK g KAFKA`), the only plan for it: a
  window's records are then not a range of the attribute but what Kafka's store
  holds after every record in arrival order, so each key's records are replayed
  through that store (a Python loop per key over the windows near each record),
  and each window's records aggregated by Spark. The others refuse it.
"""

from __future__ import annotations

from wql.compiler.analysis import Query
from wql.compiler.kinds import kind_of
from wql.compiler.kinds.shapes import TupleShape
from wql.compiler.plans.base import Candidate, Plan, PlanName, Statistics
from wql.compiler.plans.states import Decomposition, decompose, state_names, why_not_shared
from wql.compiler.schema import Domain
from wql.compiler.windows import SlideOn, Window


def over_blocker(query: Query) -> str | None:
    """Why a Spark window frame cannot compute this query, or None if it can."""
    if query.window.attr.domain is Domain.FLOAT:
        return "not supported yet: a frame's edges are inclusive, and a DOUBLE window's lower edge is open"
    for call in query.aggregates:
        if call.function == "count_distinct" and len(call.args) != 1:
            return f"not supported yet: {call.sql} in a window frame"
        if call.function in {"percentile_cont", "percentile_disc"}:
            return f"not supported yet: {call.sql} in a window frame"
        if call.function == "percentile" and not _scalar_fraction(call.args[1]):
            return f"not supported yet: {call.sql} in a window frame (one percentage at a time)"
    return None


def prefix_blocker(query: Query, decomposition: Decomposition) -> str | None:
    """Why running frames cannot compute this query, or None if they can."""
    window = query.window
    if tuple_mode(window) == "kafka":
        return "Kafka windows open between records, which the bins kernel places"
    if window.slide != 1 and window.slide_on is SlideOn.ROW_NUM:
        return "windows named by arrival position need a second sort, by arrival"
    if any(k.origin == "group" for k in query.keys):
        return "GROUP BY inside a partition: tuples of other groups name windows too"
    extremes = sorted({g.operation for g in decomposition.groups if g.operation in ("min", "max")})
    if extremes:
        verb, them = ("have", "them") if len(extremes) > 1 else ("has", "it")
        return f"{' and '.join(extremes)} {verb} no inverse, so prefix differences cannot give {them}"
    if window.attr.domain is Domain.FLOAT and not float(window.range or 0).is_integer():
        return "a frame offset must be a whole number; RANGE on this DOUBLE attribute is not"
    return None


def tuple_mode(window: Window) -> str:
    """Which tuples name windows, as the kernels call it: every, row_num, rank or kafka (the kind's shape)."""
    shape = kind_of(window).shape(window)
    assert isinstance(shape, TupleShape), "windows named by tuples"
    return shape.naming


def in_jvm(query: Query) -> bool:
    """Whether WQL's JVM kernel computes this query's bins plan (wql-kernels.jar; numpy without it)."""
    grouped = any(k.origin == "group" for k in query.keys)
    return tuple_mode(query.window) == "every" and not grouped and query.window.attr.domain is not Domain.FLOAT


def candidates(query: Query, stats: Statistics) -> list[Candidate]:
    n = stats.rows
    per_window = stats.rows_per_window
    if query.window.kafka_rule:
        return replay_candidates(n, per_window)
    decomposition = decompose(query, state_names(query))
    out = []
    if decomposition is None:
        out.append(Candidate.refused(PlanName.BINS, why_not_shared(query)))
    elif in_jvm(query):
        note = (
            "one pass in the JVM: tuples shuffled as columnar batches per key, each key's windows computed "
            "with two stacks over arrays"
        )
        out.append(Candidate(PlanName.BINS, Plan("tuples", PlanName.BINS, decomposition=decomposition), 0.6 * n, note))
    else:
        note = (
            "numpy walks each partition sorted by value in Spark (its sort spills) a chunk at a time, holding "
            "the windows in flight: each window found by binary search, aggregated from prefix sums and sparse tables"
        )
        out.append(Candidate(PlanName.BINS, Plan("tuples", PlanName.BINS, decomposition=decomposition), 4.3 * n, note))
    if decomposition is None:
        out.append(Candidate.refused(PlanName.PREFIX, why_not_shared(query)))
    elif (blocker := prefix_blocker(query, decomposition)) is not None:
        out.append(Candidate.refused(PlanName.PREFIX, blocker))
    else:
        note = "one sort by value, then running sums in Spark frames: a window is the total to w less that to w − RANGE"
        plan = Plan("tuples", PlanName.PREFIX, decomposition=decomposition)
        out.append(Candidate(PlanName.PREFIX, plan, 2.0 * n, note))
    blocker = over_blocker(query)
    if blocker is not None:
        out.append(Candidate.refused(PlanName.OVER, blocker))
    else:
        note = f"Spark's RANGE BETWEEN frame, re-aggregating ~{per_window:g} tuples per window"
        out.append(Candidate(PlanName.OVER, Plan("tuples", PlanName.OVER), n * (2 + per_window / 10), note))
    return out


def replay_candidates(n: float, per_window: float) -> list[Candidate]:
    """Kafka's late-record rule: a late record's windows depend on what the store held when it arrived, which
    only a replay in arrival order knows."""
    why = (
        "Kafka's late-record rule (SLACK … KAFKA): a window's records depend on arrival order, which only the "
        "replay follows"
    )
    note = (
        "each key's records replayed in arrival order through Kafka's window store (Python, per key), then each "
        "window's records aggregated by Spark"
    )
    return [
        Candidate.refused(PlanName.BINS, why),
        Candidate.refused(PlanName.PREFIX, why),
        Candidate.refused(PlanName.OVER, why),
        Candidate(PlanName.REPLAY, Plan("tuples", PlanName.REPLAY), n * (20 + 2 * per_window), note),
    ]


def _scalar_fraction(sql: str) -> bool:
    try:
        return 0 <= float(sql) <= 1
    except ValueError:
        return False
