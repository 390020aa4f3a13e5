"""Streaming differential harness: random streams cut into random triggers, with random disorder.

A query's streaming job (`CompiledQuery.stream_code`) is loaded as a module and
fed one micro-batch DataFrame per trigger through its own `run_trigger`, exactly
as Structured Streaming's foreachBatch calls it, then drained. What it emits is
compared with a model built on the reference evaluator, straight from §6 of the
semantics:

- triggers advance the punctuation p = max(p, max_seen − SLACK, punctuations);
  a tuple is late when its attribute is below p at the start of its trigger;
- what a trigger has admitted so far, D: every tuple but the late ones
  (CONSISTENT), or every tuple (GENEROUS, where a late tuple still joins the
  windows not yet emitted); sessions and frames with GENEROUS: every tuple but
  the late ones at or before the closing point of their key's last window final
  when the trigger begins (`_closing_points`, from the reference's extents);
- EMIT FINAL: trigger i emits the windows the reference computes over D that
  became final in it (p_before < close ≤ p_after; sessions and frames by the
  reference's own `data_driven_final`; with GENEROUS, those final at p_after
  not emitted before, since an admitted late tuple can make one final at
  once); draining emits the rest;
- EMIT CHANGES: trigger i emits the open windows whose result over D differs
  from their result over the D of the trigger before; sessions also retract
  each version emitted before whose session no longer exists (the reference's
  `session_changes`).

When nothing is late, the drained stream must also equal the plain batch result.
"""

from __future__ import annotations

import datetime
import itertools
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

import wql
from tests.differential import normalized
from wql.compiler.disorder import disorder
from wql.compiler.schema import Domain
from wql.compiler.windows import Form
from wql.runtime.execute import load_job
from wql.runtime.reference import (
    Extent,
    _bounds,
    _grid_candidates,
    _prepare,
    data_driven_extents,
    data_driven_final,
    evaluate_query,
    session_changes,
    to_base,
)

DEEP = os.environ.get("WQL_TEST_PROFILE") == "deep"
STREAM = "CREATE STREAM s (case_id INT, k STRING, v DOUBLE, n INT, ts TIMESTAMP, x BIGINT, y BIGINT, d DOUBLE){};\n"
SCHEMA = "case_id INT, k STRING, v DOUBLE, n INT, ts TIMESTAMP, x BIGINT, y BIGINT, d DOUBLE"
COLUMNS = [c.split()[0] for c in SCHEMA.split(", ")]
# A malformed line as Spark's PERMISSIVE csv/json reader leaves it: the fields it could parse, and the line.
CORRUPT = "_corrupt_record"
LATE = ("wql_reason", "wql_missed", "wql_punctuation", "wql_trigger", "wql_record")


def compile_stream(text: str, plan: str | None = None, punctuation: str | None = None) -> wql.CompiledQuery:
    declaration = STREAM.format(f" PUNCTUATION WHEN ({punctuation})" if punctuation else "")
    return wql.compile(declaration + text, plan=plan, stream=True)


@st.composite
def arrivals(draw: st.DrawFn, rows: list[dict[str, Any]], attr: str, disorder_rows: int) -> list[dict[str, Any]]:
    """The rows in an arrival order: by `attr` (NULLs anywhere), each moved up to `disorder_rows` places."""
    keyed = []
    for index, row in enumerate(rows):
        value = row[attr]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            order = draw(st.integers(0, max(0, len(rows) - 1)))
            keyed.append(((0, order, index), row))
        else:
            keyed.append(((1, _sortable(value), index), row))
    ordered = [row for _, row in sorted(keyed, key=lambda pair: pair[0])]
    for index in range(len(ordered)):
        if disorder_rows:
            other = min(len(ordered) - 1, index + draw(st.integers(0, disorder_rows)))
            ordered[index], ordered[other] = ordered[other], ordered[index]
    return ordered


def _sortable(value: Any) -> Any:
    return value.timestamp() if hasattr(value, "timestamp") else value


@st.composite
def triggers(draw: st.DrawFn, rows: list[dict[str, Any]], most: int = 4) -> list[list[dict[str, Any]]]:
    """`rows` (in arrival order) cut into 1 to `most` triggers, some possibly empty."""
    count = draw(st.integers(1, most))
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), min_size=count - 1, max_size=count - 1)))
    edges = [0, *cuts, len(rows)]
    return [rows[a:b] for a, b in itertools.pairwise(edges)]


@st.composite
def with_malformed(draw: st.DrawFn, batches: list[list[dict[str, Any]]], most: int = 2) -> list[list[dict[str, Any]]]:
    """The batches with up to `most` malformed lines put at random places: each keeps a random part of a
    real row's fields (Spark parses what it can), which must neither count, move the punctuation nor take
    an arrival position, and is written to the late-rows output as malformed."""
    every = [row for batch in batches for row in batch]
    out = [list(batch) for batch in batches]
    for number in range(draw(st.integers(0, most))):
        like = draw(st.sampled_from(every)) if every else dict.fromkeys(COLUMNS)
        kept = {c: like.get(c) if draw(st.booleans()) else None for c in COLUMNS}
        target = out[draw(st.integers(0, len(out) - 1))]
        target.insert(draw(st.integers(0, len(target))), {**kept, CORRUPT: f"not a row {number}"})
    return out


def frame(spark: Any, rows: Sequence[dict[str, Any]], textual: bool = False) -> Any:
    """A micro-batch; `textual`: with the malformed lines' column, as a csv or json source has it."""
    if textual:
        return spark.createDataFrame(
            [(*(r.get(c) for c in COLUMNS), r.get(CORRUPT)) for r in rows], f"{SCHEMA}, {CORRUPT} STRING"
        )
    return spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows], SCHEMA)


def run(
    spark: Any,
    compiled: wql.CompiledQuery,
    batches: list[list[dict[str, Any]]],
    late: list[dict[str, Any]] | None = None,
) -> tuple[list[dict], list[dict]]:
    """Feed the batches to the job's own run_trigger, then drain: (emitted rows, trigger reports). With a
    `late` list, late and malformed rows go to a late-rows output, read back into it."""
    module = load_job(compiled.stream_code)
    checkpoint = tempfile.mkdtemp(prefix="wql-test-stream-")
    kept = tempfile.mkdtemp(prefix="wql-test-late-") if late is not None else None
    # Triggers of a few rows: AQE's extra stage jobs and a second shuffle partition cost more than they
    # save (jobs per trigger 7 -> 3 for pane, 14-18 -> 4 for sessions). The deep profile keeps both.
    quick = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "1"} if not DEEP else {}
    saved = {key: spark.conf.get(key) for key in quick}
    for key, value in quick.items():
        spark.conf.set(key, value)
    textual = any(CORRUPT in row for batch in batches for row in batch)
    emitted: list[dict[str, Any]] = []
    reports: list[dict[str, Any]] = []

    def emit(result: Any, name: str) -> int:
        rows = [{**r.asDict(recursive=True), "_trigger": name.split("-", maxsplit=1)[0]} for r in result.collect()]
        for row in rows:  # which trigger emitted it: batch-N or the drain
            row["_trigger"] = "drain" if row["_trigger"] == "drain" else int(name.split("-")[1])
        emitted.extend(rows)
        return len(rows)

    try:
        for batch, rows in enumerate(batches):
            micro = frame(spark, rows, textual)
            module.run_trigger(spark, micro, batch, checkpoint, emit, kept, "parquet", reports.append)
        module.drain_stream(spark, checkpoint, emit, reports.append)
        if late is not None:
            late.extend(read_late(kept))
    finally:
        for key, value in saved.items():
            spark.conf.set(key, value)
        shutil.rmtree(checkpoint, ignore_errors=True)
        if kept is not None:
            shutil.rmtree(kept, ignore_errors=True)
    return emitted, reports


def read_late(directory: str | None) -> list[dict[str, Any]]:
    """The late-rows output's rows (parquet files, one per trigger that had any)."""
    import glob

    import pyarrow.parquet as pq

    rows = []
    for path in sorted(glob.glob(f"{directory}/*.parquet")):
        for row in pq.read_table(path).to_pylist():
            if isinstance(row.get("ts"), datetime.datetime) and row["ts"].tzinfo is not None:
                row["ts"] = row["ts"].astimezone(datetime.UTC).replace(tzinfo=None)
            rows.append(row)
    return rows


# ------------------------------------------------------------------ the model


def model(
    compiled: wql.CompiledQuery,
    batches: list[list[dict[str, Any]]],
    is_punctuation: Callable[[dict], bool] | None,
    late: list[dict[str, Any]] | None = None,
    states: list[list[dict[str, Any]]] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """What the stream must emit, and how many rows are late; with a `late` list, the late-rows output:
    every late row (whether GENEROUS placed it or not) and every malformed line, with the trigger, the
    punctuation it started with and, for a late row, the windows it missed (`missed`); with a `states`
    list, each trigger's result over the tuples admitted so far (what a consumer of EMIT CHANGES holds)."""
    query = compiled.query
    window = query.window
    rules = disorder(query)
    generous = window.slack is not None and window.slack.mode == "generous"
    closing = generous and window.is_data_driven  # a late tuple is admitted after its key's closing point only
    emitted: set[tuple[Any, ...]] = set()
    attr = window.attr
    admitted: list[dict[str, Any]] = []
    numbers: list[int] = []
    set_apart: list[tuple[int, dict[str, Any]]] = []  # late under CONSISTENT: in no window
    arrival = 0
    punctuation: Any = None
    max_seen: Any = None
    late_rows = 0
    expected: list[dict[str, Any]] = []
    earlier: list[dict[str, Any]] = []
    counts: dict[tuple[Any, ...], int] = {}
    for number, batch in enumerate(batches):
        before = punctuation
        before_counts = dict(counts)
        reach = _data_end(query, admitted)
        points = _closing_points(query, admitted, numbers, before) if closing else {}
        marked = None
        for row in batch:
            if row.get(CORRUPT) is not None:
                if late is not None:
                    late.append(_kept(query, row, "malformed", None, before, number))
                continue
            if is_punctuation is not None and is_punctuation(row):
                value = to_base(row[attr.name], attr.domain)
                marked = value if marked is None or (value is not None and value > marked) else marked
                continue
            value = arrival if attr.is_row_num else to_base(row[attr.name], attr.domain)
            is_late = not attr.is_row_num and value is not None and before is not None and value < before
            late_rows += is_late
            if is_late and late is not None:
                late.append(_kept(query, row, "late", missed(query, value, before), before, number))
            if not is_late or (generous and (not closing or _after_closing(query, row, arrival, points))):
                admitted.append(row)
                numbers.append(arrival)
            else:
                set_apart.append((arrival, row))
            arrival += 1
            if value is not None:
                max_seen = value if max_seen is None else max(max_seen, value)
            part = tuple(row[p] for p in window.partition_by)
            counts[part] = counts.get(part, 0) + 1
        after = before
        if rules.slack is not None and max_seen is not None:
            after = _larger(after, max_seen - rules.slack)
        after = _larger(after, marked)
        extents_too = window.is_data_driven or window.snap
        current = evaluate_query(query, admitted, numbers, set_apart, extents_too=extents_too)
        data = _Data.of(query, admitted) if window.snap else None
        if query.emit == "changes" and window.form is Form.SESSION:
            chosen = session_changes(query, earlier, current, before)
        elif query.emit == "changes":
            opened = [r for r in current if not _done(query, r, before, before_counts, data, reach)]
            previous = [r for r in earlier if not _done(query, r, before, before_counts, data, reach)]
            chosen = _minus(opened, previous)
        elif closing:
            chosen = [r for r in current if _closed(query, r, after, counts) and _identity(query, r) not in emitted]
            emitted.update(_identity(query, r) for r in chosen)
        else:
            chosen = [
                r
                for r in current
                if _closed(query, r, after, counts, data) and not _done(query, r, before, before_counts, data, reach)
            ]
        expected.extend({**_plain(r), "_trigger": number} for r in chosen)
        if states is not None:
            states.append([_plain(r) for r in current])
        earlier = current
        punctuation = after
    if query.emit == "final" and closing:
        expected.extend({**_plain(r), "_trigger": "drain"} for r in earlier if _identity(query, r) not in emitted)
    elif query.emit == "final":
        expected.extend(
            {**_plain(r), "_trigger": "drain"} for r in earlier if not _closed(query, r, punctuation, counts, data)
        )
    return expected, late_rows


class _Any:
    """A missed-windows text the model does not spell out (sessions, frames, interval events, ALIGN FIRST):
    any text that names windows, and no empty range."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, str) or not other:
            return False
        numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", other)]
        ranged = re.fullmatch(r"windows (-?\d+) to (-?\d+)", other)
        return not ranged or int(ranged[1]) <= int(ranged[2]) or not numbers

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<any missed text>"


ANY_MISSED = _Any()


def _kept(query: Any, row: dict[str, Any], reason: str, text: Any, before: Any, number: int) -> dict[str, Any]:
    """A row of the late-rows output: the row's columns, why, what it missed, the punctuation its trigger
    started with (rows counted per partition have none), the trigger and the malformed line."""
    window = query.window
    shown = None if window.attr.is_row_num and window.per_partition_rows else before
    return {
        **{c: row.get(c) for c in COLUMNS},
        "wql_reason": reason,
        "wql_missed": text,
        "wql_punctuation": _shown(shown, window.attr.domain),
        "wql_trigger": number,
        "wql_record": row.get(CORRUPT),
    }


def _shown(value: Any, domain: Domain) -> str:
    """A punctuation or window bound as the late-rows output writes it."""
    if value is None:
        return "none yet"
    if domain is Domain.TIMESTAMP:
        moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=value)
        return str(moment)
    return str(value)


def _sql_text(value: Any, domain: Domain) -> str:
    """A value in base units cast to a string as Spark casts the attribute's type."""
    if domain is Domain.TIMESTAMP:
        moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=value)
        text = moment.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{moment.microsecond:06d}".rstrip("0") if moment.microsecond else "")
    if domain is Domain.FLOAT:
        return repr(float(value))
    return str(value)


def missed(query: Any, value: Any, before: Any) -> Any:
    """The windows a late tuple at `value` belongs to and missed, as the late-rows output names them: every
    window it belongs to (CONSISTENT), or those already final when its trigger began (GENEROUS); "none"
    when that is no window (a gap, or GENEROUS placing it in open windows only)."""
    window = query.window
    generous = window.slack is not None and window.slack.mode == "generous"
    domain = window.attr.domain
    nothing = "none: it joined the open windows it belongs to" if generous else "none: it belongs to no window"
    if window.form is Form.LANDMARK and not window.align_first and not window.is_interval:
        # The first window past the value, found from its formula and made exact as the extent reads (counting
        # up from window 0 took minutes for a timestamp in base units).
        first = max(0, math.floor((value - window.origin) / window.slide) - 1)
        while first > 0 and value < _bounds(window, first - 1)[1]:
            first -= 1
        while not value < _bounds(window, first)[1]:
            first += 1
        if not generous:
            return f"windows {first} and every later one"
        last = math.floor((before - window.origin) / window.slide) - 1
        while _bounds(window, last + 1)[1] <= before:
            last += 1
        while last >= first and _bounds(window, last)[1] > before:
            last -= 1
        return f"windows {first} to {last}" if first <= last else nothing
    if window.is_grid and not window.align_first and not window.is_interval and not window.snap:
        found = [
            w
            for w in _grid_candidates(window, [value])
            if _bounds(window, w)[0] <= value < _bounds(window, w)[1]
            and not (window.kafka_grid and _bounds(window, w)[0] < 0)
        ]
        if generous:
            found = [w for w in found if _bounds(window, w)[1] <= before]
        return f"windows {min(found)} to {max(found)}" if found else nothing
    if window.form in {Form.SLIDE_BY_TUPLE, Form.SLIDE_BY_RANK} and not window.is_interval:
        high = min(value + window.range, before) if generous else value + window.range
        return f"windows named in [{_sql_text(value, domain)}, {_sql_text(high, domain)})"
    if window.form is Form.KAFKA:
        tick = 1_000 if domain is Domain.TIMESTAMP else 1
        high = min(value, before - window.range - tick) if generous else value
        low = value - window.range
        return f"windows [x, x + RANGE] with x in [{_sql_text(low, domain)}, {_sql_text(high, domain)}]"
    return ANY_MISSED


def _closing_points(query: Any, rows: list[dict[str, Any]], numbers: list[int], point: Any) -> dict[tuple, Extent]:
    """GENEROUS sessions and frames: per partition, its last window final at punctuation `point` over the
    tuples admitted so far. Every run counts, also one that makes no result row (shorter than MIN, nothing
    inside WHERE): final, it can no longer change, as a final grid window with nothing in it."""
    window = query.window
    if point is None:
        return {}
    tuples = [t for t in _prepare(query, rows, numbers) if t.passes or not window.rule.kafka]
    unfiltered = replace(window, rule=replace(window.rule, minimum=None))
    points: dict[tuple, Extent] = {}
    for extent in data_driven_extents(unfiltered, tuples):  # each partition's in order
        if data_driven_final(window, extent, point):
            points[extent.partition] = extent
    return points


def _after_closing(query: Any, row: dict[str, Any], arrival: int, points: dict[tuple, Extent]) -> bool:
    """Whether a late tuple comes after the closing point of its partition's last final window (§8.5): a
    session's tuples are joined by a tuple at most GAP after the last (and, with MAX, below the first +
    MAX); a frame depends on the tuples up to the one that closed it, in (value, arrival) order."""
    window = query.window
    extent = points.get(tuple(row.get(p) for p in window.partition_by))
    if extent is None:
        return True  # nothing final yet
    a = to_base(row[window.attr.name], window.attr.domain)
    frame = window.rule
    if window.form is Form.SESSION:
        first, last = extent.members[0].a, extent.members[-1].a
        return a > last + frame.gap or (frame.longest is not None and a >= first + frame.longest)
    closer = extent.closer
    return (a, arrival) > (closer.a, closer.row_num)


def _identity(query: Any, row: dict[str, Any]) -> tuple[Any, ...]:
    """A result row's window and group, which a stream emits once."""
    extent = row["_extent"]
    return (extent.partition, extent.order, *(row[k.name] for k in query.keys if k.origin == "group"))


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A result row without the Extent the model reads finality from."""
    return {k: v for k, v in row.items() if k != "_extent"}


def _larger(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


@dataclass(frozen=True)
class _Data:
    """What SNAP's finality reads from the data admitted so far: the data's last window, and each key's
    open-ended events (after WHERE)."""

    last: int | None
    open_ended: dict[tuple[Any, ...], int]

    @staticmethod
    def of(query: Any, rows: list[dict[str, Any]]) -> _Data:
        window = query.window
        events = _well_formed(query, rows)
        end = _largest_point(events)
        last = None
        if end is not None:  # the last window starting at or before the data's largest start or end
            last = math.floor((end - window.origin + window.range) / window.slide) - 1
        open_ended: dict[tuple[Any, ...], int] = {}
        for t in events:
            if t.open_ended and t.passes:
                open_ended[(t.partition, t.group)] = open_ended.get((t.partition, t.group), 0) + 1
        return _Data(last, open_ended)


def _snap_closed(query: Any, row: dict[str, Any], point: Any, data: _Data) -> bool:
    """SNAP (docs/semantics.md §8.10): run w … w+k is final once window w+k+1 is (point ≥ its end), unless
    w+k+1 lies past the data's last window and the run holds exactly its key's open-ended events."""
    window = query.window
    extent = row["_extent"]
    end = to_base(row["window_end"], window.attr.domain)
    last_wid = round((end - window.origin) / window.slide) - 1
    members = extent.members
    key = (extent.partition, members[0].group)
    grows = (
        data.last is not None
        and last_wid >= data.last
        and all(m.open_ended for m in members)
        and len(members) == data.open_ended.get(key, 0)
    )
    return end + window.slide <= point and not grows


def _data_end(query: Any, rows: list[dict[str, Any]]) -> Any:
    """Where the data admitted so far ends, for windows that go only as far as the data (landmark windows over
    values, interval events' windows but SNAP's): the largest value, or start or end of a well-formed event
    (WHERE or not); None for other windows, or before any data."""
    window = query.window
    landmark = window.form is Form.LANDMARK and not window.is_tuple_based
    events = window.end_attr is not None and window.form in {Form.SLIDING, Form.LANDMARK}
    if not (landmark or events) or window.snap:
        return None
    end = _largest_point(_well_formed(query, rows))
    return -math.inf if end is None else end


def _well_formed(query: Any, rows: list[dict[str, Any]]) -> list[Any]:
    """The rows as the reference's tuples, those with a value that do not end before they start."""
    return [t for t in _prepare(query, rows) if t.a is not None and (t.end is None or t.end >= t.a)]


def _largest_point(tuples: list[Any]) -> Any:
    """The largest value, start or end among the tuples (None without any): where the data ends."""
    points = [t.a for t in tuples] + [t.end for t in tuples if t.end is not None]
    return max(points) if points else None


def _done(
    query: Any, row: dict[str, Any], point: Any, counts: dict[tuple[Any, ...], int], data: _Data | None, reach: Any
) -> bool:
    """Whether the window of result row `row` was emitted by the time the punctuation is `point` (EMIT FINAL), or
    no longer changes (EMIT CHANGES): final then and, for windows that go only as far as the data (`reach`, the
    data's end then, not None), reached by the data then. A window the punctuation passed beyond the data's end
    comes out in the trigger whose data reaches it (docs/semantics.md §8.10)."""
    if not _closed(query, row, point, counts, data):
        return False
    if reach is None:
        return True
    window = query.window
    domain = window.attr.domain
    if window.range is None:  # a landmark window w starts, for this, at its end less SLIDE
        start = to_base(row["window_end"], domain) - window.slide
    else:
        start = to_base(row["window_start"], domain)
    return start <= reach


def _closed(
    query: Any, row: dict[str, Any], point: Any, counts: dict[tuple[Any, ...], int], data: _Data | None = None
) -> bool:
    """Whether the punctuation `point` has made the window of result row `row` final."""
    window = query.window
    domain = window.attr.domain
    if window.attr.is_row_num and window.per_partition_rows:
        keys = [k.name for k in query.keys if k.origin == "partition"]
        point = counts.get(tuple(row[k] for k in keys), 0)
    if point is None:
        return False
    if window.is_data_driven:
        return data_driven_final(window, row["_extent"], point)
    if window.snap:
        assert data is not None
        return _snap_closed(query, row, point, data)
    if window.form is Form.KAFKA:
        return to_base(row["window_end"], domain) < point
    if window.form in {Form.SLIDE_BY_TUPLE, Form.SLIDE_BY_RANK}:
        return to_base(row["wid"], domain) < point
    if window.is_snapshot and row["window_end"] is None:
        return False  # a partition's last snapshot has no end: final only when the stream is drained
    return to_base(row["window_end"], domain) <= point


def _minus(rows: list[dict[str, Any]], others: list[dict[str, Any]]) -> list[dict[str, Any]]:
    remaining = list(normalized(others))
    out = []
    for row in rows:
        key = normalized([row])[0]
        if key in remaining:
            remaining.remove(key)
        else:
            out.append(row)
    return out


def same_late_rows(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    """The late-rows output equals the model's, as multisets; a missed text the model leaves open (ANY_MISSED)
    matches any that names windows without an empty range."""
    if len(got) != len(want):
        return False
    remaining = list(got)
    for expected in sorted(want, key=lambda r: r["wql_missed"] is ANY_MISSED):
        plain = normalized([{k: v for k, v in expected.items() if k != "wql_missed"}])[0]
        for index, row in enumerate(remaining):
            if normalized([{k: v for k, v in row.items() if k != "wql_missed"}])[0] == plain and (
                expected["wql_missed"] == row["wql_missed"]
            ):
                del remaining[index]
                break
        else:
            return False
    return True


def difference(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> str:
    spark_only = sorted(set(normalized(got)) - set(normalized(want)), key=repr)[:4]
    model_only = sorted(set(normalized(want)) - set(normalized(got)), key=repr)[:4]
    return (
        f"{len(got)} rows from the stream, {len(want)} from the model\n"
        f"only in the stream: {spark_only}\nonly in the model: {model_only}"
    )


def check(
    spark: Any,
    data: st.DataObject,
    text: str,
    rows: list[dict[str, Any]],
    attr: str,
    *,
    plan: str | None = None,
    punctuation: str | None = None,
    is_punctuation: Any = None,
    states: list[list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """Run `text` on a stream of `rows` in a random arrival order and triggers; compare with the model. What
    the stream emitted, each row with its `_trigger`; with a `states` list, each trigger's result over the
    tuples admitted so far (tests.streaming.model)."""
    compiled = compile_stream(text, plan, punctuation)
    ordered = data.draw(arrivals(rows, attr, data.draw(st.integers(0, 4))))
    batches = data.draw(with_malformed(data.draw(triggers(ordered))))
    kept: list[dict[str, Any]] = []
    got, reports = run(spark, compiled, batches, late=kept)
    kept_want: list[dict[str, Any]] = []
    want, late = model(compiled, batches, is_punctuation, late=kept_want, states=states)
    assert normalized(got) == normalized(want), difference(got, want)
    assert sum(r["late"] for r in reports) == late
    assert sum(r["malformed"] for r in reports) == sum(r["wql_reason"] == "malformed" for r in kept_want)
    assert same_late_rows(kept, kept_want), difference(kept, kept_want)
    batches = [[r for r in b if r.get(CORRUPT) is None] for b in batches]
    if late == 0 and not punctuation and compiled.query.emit == "final":
        batch = evaluate_query(compiled.query, [r for b in batches for r in b])
        untagged = [{k: v for k, v in r.items() if k != "_trigger"} for r in got]
        assert normalized(untagged) == normalized(batch), "a drained stream with nothing late must equal the batch"
    return got
