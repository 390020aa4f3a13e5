"""The reference evaluator: window semantics straight from `extent` (docs/semantics.md §2).

Window-centric and deliberately naive: it enumerates candidate window-ids,
decides each window's contents with the extent predicate alone, then groups and
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
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from wql.compiler.analysis import Query
from wql.compiler.schema import Domain
from wql.compiler.units import EPOCH_DATE
from wql.compiler.windows import SlideOn, Window, WindowKind
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


def from_base(value: Number | None, domain: Domain) -> Any:
    """Base units back to the attribute's Python type (naive UTC datetimes for timestamps)."""
    if value is None:
        return None
    if domain is Domain.TIMESTAMP:
        return _EPOCH + timedelta(microseconds=int(value))
    if domain is Domain.DATE:
        return EPOCH_DATE + timedelta(days=int(value))
    if domain is Domain.ROW_NUM:
        return int(value)
    return value


# ------------------------------------------------------------------ prepared tuples


@dataclass
class _Tuple:
    row: Mapping[str, Any]
    row_num: int  # arrival position (or the stream's ROW_NUM column)
    a: Number | None  # window attribute value, base units (per-partition rank for FCF windows)
    end: Number | None = None  # interval end; None also for open-ended
    open_ended: bool = False
    partition: tuple[Any, ...] = ()
    passes: bool = True  # WHERE holds
    slide_pos: int = 0  # position that decides slide-by-n membership (row_num or rank)
    group: tuple[Any, ...] = field(default=())


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
        for part in _partitions(tuples):
            ranked = sorted((t for t in part if t.a is not None), key=lambda t: (t.a, t.row_num))
            for position, item in enumerate(ranked):
                item.slide_pos = position
    return tuples


def _partitions(tuples: Iterable[_Tuple]) -> list[list[_Tuple]]:
    groups: dict[tuple[Any, ...], list[_Tuple]] = {}
    for item in tuples:
        groups.setdefault(item.partition, []).append(item)
    return list(groups.values())


# ------------------------------------------------------------------ extents


@dataclass
class Extent:
    wid: Any
    start: Any  # window_start, in the attribute's type (None: unbounded)
    end: Any  # window_end
    partition: tuple[Any, ...]
    members: list[_Tuple]
    order: tuple[Any, ...] = ()
    closer: _Tuple | None = None  # a frame's closing tuple, once there is one (see data_driven_final)


def _bounds(window: Window, w: int) -> tuple[Number, Number]:
    """[lo, hi) of grid window w, computed exactly as the extent formula reads."""
    assert window.slide is not None
    hi = window.origin + (w + 1) * window.slide
    if window.kind is WindowKind.CUMULATE:  # from the start of w's period
        assert window.range is not None
        return window.origin + (w // window.windows_per_period) * window.range, hi
    lo = hi - window.range if window.range is not None else -math.inf
    return lo, hi


def _grid_candidates(window: Window, values: list[Number]) -> range:
    assert window.slide is not None
    if not values:
        return range(0)
    reach = (window.range or 0) / window.slide
    low = math.floor((min(values) - window.origin) / window.slide) - 2
    high = math.floor((max(values) - window.origin) / window.slide + reach) + 2
    return range(low, high + 1)


def _in_grid_window(window: Window, item: _Tuple, lo: Number, hi: Number) -> bool:
    if item.a is None:
        return False
    if window.end_attr is None:
        return lo <= item.a < hi
    if item.open_ended:
        return item.a < hi
    if item.end is None or item.end < item.a:
        return False
    if item.end == item.a:
        return lo <= item.a < hi
    return item.a < hi and lo < item.end


def grid_extents(window: Window, tuples: list[_Tuple]) -> list[Extent]:
    """Grid windows; with ALIGN FIRST, each partition's on its own grid.

    ALIGN FIRST measures every value from f, the window attribute of the partition's first
    arrival (least row_num; ties, possible only with a declared ROW_NUM column, by least value;
    before WHERE, among tuples with a value): the grid is the ordinary one over t.a − f, and
    the bounds reported are f + lo and f + hi.
    """
    if not window.align_first:
        return _grid_extents(window, tuples)
    out = []
    for part in _partitions(tuples):
        present = [t for t in part if t.a is not None]
        if not present:
            continue
        f = min(present, key=lambda t: (t.row_num, t.a)).a
        assert f is not None
        shifted = [
            replace(t, a=None if t.a is None else t.a - f, end=None if t.end is None else t.end - f) for t in part
        ]
        out.extend(_grid_extents(window, shifted, f))
    return out


def _grid_extents(window: Window, tuples: list[_Tuple], anchor: Number | None = None) -> list[Extent]:
    domain = window.attr.domain

    def reported(value: Number) -> Any:
        return from_base(value if anchor is None else anchor + value, domain)

    well_formed = [t for t in tuples if t.a is not None and (t.end is None or t.end >= t.a)]
    values = [t.a for t in well_formed]  # a malformed event (end < start) does not move the horizon either
    ends = [t.end for t in well_formed if t.end is not None]
    candidates = _grid_candidates(window, values + ends)
    horizon = max(values + ends) if values else None
    extents = []
    for part in _partitions(tuples):
        for w in candidates:
            lo, hi = _bounds(window, w)
            if window.kind is WindowKind.LANDMARK:
                if w < 0 or horizon is None or w > math.floor((horizon - window.origin) / window.slide):
                    continue
            elif window.is_interval and any(t.open_ended for t in tuples) and horizon is not None and lo > horizon:
                continue
            if window.kafka_grid and lo < 0:  # Kafka: no window starts before 0
                continue
            members = [t for t in part if _in_grid_window(window, t, lo, hi)]
            start = None if window.kind is WindowKind.LANDMARK else reported(lo)
            extents.append(Extent(w, start, reported(hi), part[0].partition, members, (w,)))
    return extents


def tuple_extents(window: Window, tuples: list[_Tuple]) -> list[Extent]:
    """Slide-by-tuple, slide by n rows, slide by n over rank: windows named by RATTR values."""
    assert window.range is not None and window.slide is not None
    domain = window.attr.domain
    extents = []
    for part in _partitions(tuples):
        names = sorted({t.a for t in part if t.a is not None and t.slide_pos % window.slide == 0})
        for w in names:
            members = [t for t in part if t.a is not None and w - window.range < t.a <= w]
            extents.append(
                Extent(
                    from_base(w, domain),
                    from_base(w - window.range, domain),
                    from_base(w, domain),
                    part[0].partition,
                    members,
                    (w,),
                )
            )
    return extents


def kafka_extents(window: Window, tuples: list[_Tuple]) -> list[Extent]:
    """Kafka Streams sliding windows, as KIP-450 places them (see wql.runtime.kafka)."""
    from wql.runtime.kafka import kafka_windows

    assert window.range is not None
    domain = window.attr.domain
    tick = 1_000 if domain is Domain.TIMESTAMP else 1
    extents = []
    for part in _partitions(tuples):
        present = [t for t in part if t.a is not None]
        for lo, hi in kafka_windows(sorted(t.a for t in present), window.range, tick):  # type: ignore[misc]
            members = [t for t in present if lo <= t.a <= hi]  # type: ignore[operator]
            extents.append(
                Extent(
                    from_base(lo, domain),
                    from_base(lo, domain),
                    from_base(hi, domain),
                    part[0].partition,
                    members,
                    (lo,),
                )
            )
    return extents


def data_driven_extents(window: Window, tuples: list[_Tuple]) -> list[Extent]:
    """Sessions and frames: maximal runs of consecutive tuples, straight from semantics.md §2."""
    frame = window.frame
    assert frame is not None
    domain = window.attr.domain
    extents = []
    for part in _partitions(tuples):
        ordered = sorted((t for t in part if t.a is not None), key=lambda t: (t.a, t.row_num))
        for run, closer in _runs(window, ordered):
            first, last = run[0], run[-1]
            if window.kind is WindowKind.THRESHOLD and frame.minimum is not None:
                size = len(run) if frame.minimum_rows else last.a - first.a  # type: ignore[operator]
                if size < frame.minimum:
                    continue  # too short to be a frame
            end = last.a
            if window.kind is WindowKind.SESSION and not frame.kafka:
                assert frame.gap is not None
                end = last.a + frame.gap  # type: ignore[operator]
                if frame.longest is not None:
                    end = min(end, first.a + frame.longest)  # type: ignore[operator]
            extents.append(
                Extent(
                    from_base(first.a, domain),
                    from_base(first.a, domain),
                    from_base(end, domain),
                    part[0].partition,
                    run,
                    (first.a, first.row_num),  # two frames may start at one value (ties): arrival tells them apart
                    closer,
                )
            )
    return extents


def _runs(window: Window, ordered: list[_Tuple]) -> list[tuple[list[_Tuple], _Tuple | None]]:
    """The partition's windows, each a list of consecutive tuples with the tuple that closed it (the one
    after it; AGGREGATE: its last, where the condition held; None: the data ended first); tuples in none
    are left out."""
    frame = window.frame
    assert frame is not None
    runs: list[tuple[list[_Tuple], _Tuple | None]] = []
    current: list[_Tuple] = []

    def close(closer: _Tuple | None = None) -> None:
        nonlocal current
        if current:
            runs.append((current, closer))
        current = []

    anchor: Any = None  # DELTA: the frame's first x
    for u in ordered:
        if window.kind is WindowKind.SESSION:
            assert frame.gap is not None
            joins = bool(current) and u.a - current[-1].a <= frame.gap  # type: ignore[operator]
            if joins and frame.longest is not None:
                joins = u.a < current[0].a + frame.longest  # type: ignore[operator]
            if not joins:
                close(u)
            current.append(u)
        elif window.kind is WindowKind.THRESHOLD:
            assert frame.condition is not None
            if evaluate(frame.condition, u.row) is True:
                current.append(u)
            else:
                close(u)  # a false or NULL predicate ends the run, and the tuple is in no frame
        elif window.kind is WindowKind.DELTA:
            assert frame.on is not None and frame.delta is not None
            x = evaluate(frame.on, u.row)
            if x is None or (isinstance(x, float) and math.isnan(x)):
                close(u)  # a NULL x ends the frame, and the tuple is in no frame
                continue
            if not current or not (x == anchor or abs(x - anchor) <= frame.delta):
                close(u)
                anchor = x
            current.append(u)
        else:
            current.append(u)
            if _condition_holds(frame, current):
                close(u)  # the tuple at which the condition first holds is the frame's last
    close()  # the last run ends with the stream
    return runs


def _condition_holds(frame: Any, members: list[_Tuple]) -> bool:
    """A FRAME AGGREGATE condition over the frame so far: each aggregate computed afresh, SQL's rules."""
    from sqlglot import exp

    from wql.grammar.expressions import parse_sql_expression, render_sql

    values = {f"_running{i}": aggregate(r.sql, [m.row for m in members]) for i, r in enumerate(frame.running)}
    names = {r.sql: f"_running{i}" for i, r in enumerate(frame.running)}

    def swap(node: exp.Expression) -> exp.Expression:
        name = names.get(render_sql(node)) if isinstance(node, exp.AggFunc) else None
        return exp.column(name) if name else node

    condition = render_sql(parse_sql_expression(frame.condition).transform(swap))
    return evaluate(condition, values) is True


def data_driven_final(window: Window, extent: Extent, point: Number) -> bool:
    """Whether punctuation `point` makes a session or frame final on a stream (semantics.md §8.4).

    A tuple still to come has a value at or past the punctuation and, on a tie, a later arrival. A
    session is final once `point` is past its last value + g (a tuple still to come is too far to
    join it), or with MAX once `point` reaches its first value + MAX (such a tuple would be cut off).
    A frame is final once `point` is past the value of the tuple that closed it: every tuple before
    that one in (value, arrival) order is known, and the frame depends on nothing after it. Not at
    that value: the closing tuple itself may still arrive there, after the punctuation did."""
    frame = window.frame
    assert frame is not None
    first, last = extent.members[0].a, extent.members[-1].a
    if window.kind is WindowKind.SESSION:
        assert frame.gap is not None and first is not None and last is not None
        return point > last + frame.gap or (frame.longest is not None and point >= first + frame.longest)
    return extent.closer is not None and extent.closer.a is not None and point > extent.closer.a


def snapshot_extents(window: Window, tuples: list[_Tuple]) -> list[Extent]:
    """A window from each endpoint of the partition's well-formed events to the next (none after the last)."""
    domain = window.attr.domain
    extents = []
    for part in _partitions(tuples):
        events = [t for t in part if t.a is not None and (t.end is None or t.end >= t.a)]
        points = sorted({t.a for t in events} | {t.end for t in events if t.end is not None})  # type: ignore[type-var]
        for index, p in enumerate(points):
            following = points[index + 1] if index + 1 < len(points) else None
            members = [t for t in events if _alive(t, p, following)]
            extents.append(
                Extent(
                    from_base(p, domain),
                    from_base(p, domain),
                    from_base(following, domain),
                    part[0].partition,
                    members,
                    (p,),
                )
            )
    return extents


def _alive(item: _Tuple, p: Number, following: Number | None) -> bool:
    """Whether an event is alive over [p, following): a point event only at its start."""
    assert item.a is not None
    if item.end is not None and item.end == item.a:
        return item.a == p
    return (following is None or item.a < following) and (item.end is None or p < item.end)


def extents(window: Window, tuples: list[_Tuple]) -> list[Extent]:
    if window.kind is WindowKind.SNAPSHOT:
        return snapshot_extents(window, tuples)
    if window.frame is not None:
        return data_driven_extents(window, tuples)
    if window.is_grid:
        return grid_extents(window, tuples)
    if window.kind is WindowKind.KAFKA:
        return kafka_extents(window, tuples)
    return tuple_extents(window, tuples)


def window_extents(query: Query, rows: Sequence[Mapping[str, Any]]) -> tuple[list[Extent], list[_Tuple]]:
    """Every window of `query` over `rows` (in arrival order) with its members, and the tuples; WHERE is
    not applied (each tuple says whether it `passes`): what `wql explain --draw` pictures."""
    window = query.window
    tuples = _prepare(query, rows)
    if window.kind is WindowKind.KAFKA or (window.frame is not None and window.frame.kafka):
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
        tuples += [replace(t, passes=False) for t in shaping]
    if window.kind is WindowKind.KAFKA or (window.frame is not None and window.frame.kafka):
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
