"""The reference evaluator: window semantics straight from `extent` (docs/semantics.md §2).

Window-centric and deliberately naive: each window kind (wql.compiler.kinds)
enumerates candidate window-ids and decides each window's contents with its
extent predicate alone; this module prepares the tuples, then groups and
aggregates in plain Python. It never uses a wids range or any plan's trick, so
it can judge every physical plan. Quadratic on purpose; use it on small
streams.

Conventions it fixes for every plan (docs/semantics.md §1–4):
- `row_num` is the 0-based arrival position over the whole input, before WHERE;
  with PATTR and a row-based window it is the position within the partition.
- The window spec applies to the stream; WHERE filters window contents. So
  WHERE never renumbers rows and never removes a window-id, only its tuples.
- A tuple whose window attribute is NULL belongs to no window.
- Grid windows are reported when non-empty; landmark windows from the first
  non-empty window to the one holding the stream's largest value.
- Interval events [start, end): a point event (start = end) belongs where its
  start does; an open-ended event (end NULL) lasts to the end of the data: it is
  reported in windows up to the last one that starts at or before the largest
  start or end of the well-formed events; end < start is malformed, belongs
  nowhere and is left out of that largest value too.
- CUMULATE window w is [o + ⌊w/m⌋·r, o + (w+1)·s), m = r/s: from its period's start.
- KAFKA grid windows that would start before 0 do not exist.
- ALIGN [START] FIRST: values are measured from the partition's first arrival (see grid_extents).
- Slide-by-tuple and rank: windows are the RATTR values of the qualifying
  tuples (PATTR: per partition); rank orders non-NULL values, ties by arrival.
- Snapshot windows: one per distinct endpoint p of the partition's well-formed
  events (WHERE filters contents only), [p, next endpoint), NULL end after the
  last; a point event is in the snapshot at its start.
- CLIP: aggregates read the interval attributes clipped to the window.
- SNAP: consecutive windows of a partition and group that hold the same events
  are one row: the first window's wid and start, the last one's end.
- Sessions and frames: each partition's tuples with a non-NULL attribute, in
  (attribute, row_num) order, cut into maximal runs by the window's own rule
  (semantics.md §2), walked one tuple at a time. The rule sees every tuple (WHERE
  filters contents; Kafka sessions filter records first, as Kafka's DSL does).
- EMIT CHANGES of sessions on a stream (semantics.md §8.7): `session_changes`
  gives a trigger's updates and retractions from the results before and after
  it, and `apply_changes` what a consumer of them holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from wql.compiler.analysis import Query
from wql.compiler.kernels.names import CHANGE
from wql.compiler.kinds import kind_of
from wql.compiler.kinds.base import Extent, Member, from_base, partitions
from wql.compiler.schema import Domain
from wql.compiler.units import EPOCH_DATE
from wql.compiler.windows import SlideOn, Window
from wql.runtime.sqleval import aggregate, evaluate

Number = int | float
_EPOCH = datetime(1970, 1, 1)


# ------------------------------------------------------------------ values in base units


def to_base(value: Any, domain: Domain) -> Number | None:
    """An attribute value in base units: µs for timestamps, days for dates."""
    if value is None:
        return None
    if domain is Domain.TIMESTAMP:
        if isinstance(value, int):
            return value
        moment = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        delta = moment - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if domain is Domain.DATE:
        return value if isinstance(value, int) else (value - EPOCH_DATE).days
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


# ------------------------------------------------------------------ prepared tuples

_Tuple = Member  # a tuple as the evaluator sees it (wql.compiler.kinds.base)


def _prepare(query: Query, rows: Sequence[Mapping[str, Any]], arrivals: Sequence[int] | None = None) -> list[_Tuple]:
    window = query.window
    tuples: list[_Tuple] = []
    for index, row in enumerate(rows):
        if query.stream.row_num:
            row_num = int(row[query.stream.row_num])
        else:
            row_num = arrivals[index] if arrivals is not None else index
        partition = tuple(row.get(p) for p in window.partition_by)
        if window.attr.is_row_num:
            a: Number | None = row_num
        else:
            a = to_base(row.get(window.attr.name), window.attr.domain)
        item = _Tuple(row=row, row_num=row_num, a=a, partition=partition)
        if window.end_attr is not None:
            end = to_base(row.get(window.end_attr.name), window.end_attr.domain)
            item.end = end
            item.open_ended = end is None and a is not None
        if query.where is not None:
            item.passes = evaluate(query.where, row) is True
        item.group = tuple(evaluate(k.sql, row) for k in query.keys if k.origin == "group")
        tuples.append(item)

    if window.per_partition_rows:
        # rank(t, row_num, p): the arrival position within the partition, counted over all tuples.
        counters: dict[tuple[Any, ...], int] = {}
        for item in sorted(tuples, key=lambda t: t.row_num):
            position = counters.get(item.partition, 0)
            counters[item.partition] = position + 1
            if window.attr.is_row_num:
                item.a = position
            item.slide_pos = position
    else:
        for item in tuples:
            item.slide_pos = item.row_num
    if window.slide_on is SlideOn.RANK:
        for part in partitions(tuples):
            ranked = sorted((t for t in part if t.a is not None), key=lambda t: (t.a, t.row_num))
            for position, item in enumerate(ranked):
                item.slide_pos = position
    return tuples


# ------------------------------------------------------------------ extents


class _SparkSql:
    """Spark SQL over plain rows (wql.runtime.sqleval), as the kinds' extents read predicates and aggregates."""

    @staticmethod
    def evaluate(sql: str, row: Mapping[str, Any]) -> Any:
        return evaluate(sql, row)

    @staticmethod
    def aggregate(sql: str, rows: Sequence[Mapping[str, Any]]) -> Any:
        return aggregate(sql, rows)


SQL = _SparkSql()


def extents(window: Window, tuples: list[_Tuple]) -> list[Extent]:
    """Every window over the tuples, with its members: the window's kind computes them from `extent`."""
    return kind_of(window).extents(window, tuples, SQL)


def _bounds(window: Window, w: int) -> tuple[Number, Number]:
    """[lo, hi) of grid window w, computed exactly as the extent formula reads."""
    return kind_of(window).bounds(window, w)


def _grid_candidates(window: Window, values: list[Number]) -> range:
    return kind_of(window).candidates(window, values)


def data_driven_extents(window: Window, tuples: list[_Tuple]) -> list[Extent]:
    """Sessions and frames: maximal runs of consecutive tuples, straight from semantics.md §2."""
    return kind_of(window).extents(window, tuples, SQL)


def data_driven_final(window: Window, extent: Extent, point: Number) -> bool:
    """Whether punctuation `point` makes a session or frame final on a stream (semantics.md §8.4)."""
    return kind_of(window).final(window, extent, point)


def _filters_first(window: Window) -> bool:
    return kind_of(window).filters_first(window)


def window_extents(query: Query, rows: Sequence[Mapping[str, Any]]) -> tuple[list[Extent], list[_Tuple]]:
    """Every window of `query` over `rows` (in arrival order) with its members, and the tuples; WHERE is
    not applied (each tuple says whether it `passes`): what `wql explain --draw` pictures."""
    window = query.window
    tuples = _prepare(query, rows)
    if _filters_first(window):
        tuples = [t for t in tuples if t.passes]  # Kafka filters records before placing windows
    return extents(window, tuples), tuples


# ------------------------------------------------------------------ evaluation


def evaluate_query(
    query: Query,
    rows: Sequence[Mapping[str, Any]],
    arrivals: Sequence[int] | None = None,
    late: Sequence[tuple[int, Mapping[str, Any]]] = (),
    extents_too: bool = False,
) -> list[dict[str, Any]]:
    """Result rows of `query` over `rows` (dicts by column name, in arrival order). `arrivals` gives each
    row's arrival position instead of its index (a stream's model leaves late rows out but not their
    numbers). `late`: a stream's tuples set apart as late, with their arrival positions; they are in no
    window, but they did arrive, and ALIGN FIRST's grid starts at the first arrival, late or not.
    `extents_too`: each row also holds its window's Extent under "_extent" (a stream's model asks
    whether a session or frame is final)."""
    window = query.window
    tuples = _prepare(query, rows, arrivals)
    if late and window.align_first:
        shaping = _prepare(query, [row for _, row in late], [number for number, _ in late])
        tuples += [replace(t, passes=False, shaping_only=True) for t in shaping]
    if _filters_first(window):
        tuples = [t for t in tuples if t.passes]  # Kafka filters records before placing windows
    partition_keys = [k for k in query.keys if k.origin == "partition"]

    # (partition, group) -> {window order: (extent, members that pass WHERE)}
    cells: dict[tuple[Any, ...], dict[tuple[Any, ...], tuple[Extent, list[_Tuple]]]] = {}
    by_partition: dict[tuple[Any, ...], list[Extent]] = {}
    for extent in extents(window, tuples):
        by_partition.setdefault(extent.partition, []).append(extent)
        for member in extent.members:
            if member.passes:
                cell = cells.setdefault((extent.partition, member.group), {})
                cell.setdefault(extent.order, (extent, []))[1].append(member)

    results: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for (partition, group), windows in cells.items():
        chosen = list(windows.values())
        if window.snap:
            chosen = _snap_runs(chosen)
        if query.emit_empty:
            low, high = min(windows), max(windows)
            chosen = [windows.get(e.order, (e, [])) for e in by_partition[partition] if low <= e.order <= high]
        for extent, members in chosen:
            order = (*extent.order, *_sortable(partition), *_sortable(group))
            row = _result_row(query, extent, group, members, partition_keys)
            results.append((order, {**row, "_extent": extent} if extents_too else row))

    rows_out = [row for _, row in sorted(results, key=lambda pair: pair[0])]
    if query.having is not None:
        rows_out = [r for r in rows_out if evaluate(query.having, r) is True]
    rows_out = _order(query, rows_out)
    if query.limit is not None:
        rows_out = rows_out[: query.limit]
    kept = [*query.columns, *(["_extent"] if extents_too else [])]
    return [{c: r[c] for c in kept} for r in rows_out]


def _snap_runs(windows: list[tuple[Extent, list[_Tuple]]]) -> list[tuple[Extent, list[_Tuple]]]:
    """SNAP: each run of consecutive grid windows that hold the same events, as its first window with the last's end."""
    runs: list[tuple[Extent, list[_Tuple]]] = []
    held: set[int] = set()
    last_wid = None
    for extent, members in sorted(windows, key=lambda pair: pair[0].order):
        ids = {id(m) for m in members}
        if runs and ids == held and last_wid is not None and extent.wid == last_wid + 1:
            first, kept = runs[-1]
            runs[-1] = (Extent(first.wid, first.start, extent.end, first.partition, kept, first.order), kept)
        else:
            runs.append((extent, members))
            held = ids
        last_wid = extent.wid
    return runs


def _sortable(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is not None, v if v is not None else 0) for v in values)


def _result_row(
    query: Query,
    extent: Extent,
    group: tuple[Any, ...],
    members: list[_Tuple],
    partition_keys: list[Any],
) -> dict[str, Any]:
    row: dict[str, Any] = {"wid": extent.wid, "window_start": extent.start, "window_end": extent.end}
    for key, value in zip(partition_keys, extent.partition, strict=True):
        row[key.name] = value
    for key, value in zip([k for k in query.keys if k.origin == "group"], group, strict=True):
        row[key.name] = value
    contents = [m.row for m in members]
    if query.window.clip:
        contents = [_clipped(query.window, row, extent) for row in contents]
    for call in query.aggregates:
        row[call.name] = aggregate(call.sql, contents)
    for output in query.outputs:
        row[output.name] = evaluate(output.sql, row)
    return row


def _clipped(window: Window, row: Mapping[str, Any], extent: Extent) -> Mapping[str, Any]:
    """CLIP: the event's start and end as the window sees them, [max(start, window_start), min(end, window_end))."""
    assert window.end_attr is not None
    start, end = window.attr.name, window.end_attr.name
    clipped = dict(row)
    if extent.start is not None and clipped[start] is not None and clipped[start] < extent.start:
        clipped[start] = extent.start
    if extent.end is not None and (clipped[end] is None or _nan(clipped[end]) or clipped[end] > extent.end):
        clipped[end] = extent.end
    return clipped


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _order(query: Query, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for key in reversed(query.order_by):
        nulls_first = key.nulls == "first" if key.nulls else not key.descending

        def sort_key(row: dict[str, Any], sql: str = key.sql) -> Any:
            value = evaluate(sql, row)
            return (0 if value is None else 1, value if value is not None else 0)

        present = [r for r in rows if evaluate(key.sql, r) is not None]
        absent = [r for r in rows if evaluate(key.sql, r) is None]
        present.sort(key=sort_key, reverse=key.descending)
        rows = absent + present if nulls_first else present + absent
    return rows


__all__ = ["Extent", "data_driven_final", "evaluate_query", "from_base", "to_base", "window_extents"]


# ------------------------------------------------------------------ EMIT CHANGES of sessions on a stream


def session_identity(query: Query, row: Mapping[str, Any]) -> tuple[Any, ...]:
    """What names a session's result row for a consumer of its changes: its keys (PATTR and GROUP BY) and
    window_start (docs/semantics.md §8.7). Sessions never tie, so one start names one session of a key."""
    return (*(row[k.name] for k in query.keys), row["window_start"])


def session_changes(
    query: Query, earlier: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]], point: Number | None
) -> list[dict[str, Any]]:
    """What one trigger of a session query emits under EMIT CHANGES (docs/semantics.md §8.7), from the result
    rows over the tuples admitted before the trigger (`earlier`) and after it (`current`), each with its
    "_extent" (evaluate_query's extents_too), and the punctuation the trigger started with (`point`).

    A row of `earlier` final at `point` was emitted as final and never changes. Every other row of `earlier`
    is the version a consumer holds of an open session: the trigger emits, marked 'update', each row of
    `current` that is neither a final row of `earlier` nor such a version (a new session, or one whose
    result changed), and marked 'retract', each such version whose session is not in `current` (an
    out-of-order tuple merged it with another or moved its start), as it was emitted."""
    window = query.window

    def final(row: Mapping[str, Any]) -> bool:
        return point is not None and data_driven_final(window, row["_extent"], point)

    held = [row for row in earlier if not final(row)]
    settled = [row for row in earlier if final(row)]
    fresh = _without(_without(current, settled), held)
    now = {session_identity(query, row) for row in current}
    gone = [row for row in held if session_identity(query, row) not in now]
    return [{**row, CHANGE: "retract"} for row in gone] + [{**row, CHANGE: "update"} for row in fresh]


def apply_changes(
    query: Query, held: dict[tuple[Any, ...], dict[str, Any]], changes: Sequence[Mapping[str, Any]]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """A consumer of a session query's changes: `held` (by session_identity) after applying `changes` in
    order, an 'update' upserted and a 'retract' deleted by its identity; the rows keep no CHANGE column."""
    out = dict(held)
    for change in changes:
        row = {c: v for c, v in change.items() if c != CHANGE}
        identity = session_identity(query, row)
        if change[CHANGE] == "retract":
            out.pop(identity, None)
        else:
            out[identity] = row
    return out


def _without(rows: Sequence[Mapping[str, Any]], others: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """`rows` less `others`, as multisets of values (an Extent aside; NaN equal to NaN)."""

    def key(row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple((c, "NaN" if _nan(v) else v) for c, v in sorted(row.items()) if c != "_extent")

    remaining = [key(row) for row in others]
    out = []
    for row in rows:
        if key(row) in remaining:
            remaining.remove(key(row))
        else:
            out.append(row)
    return out
