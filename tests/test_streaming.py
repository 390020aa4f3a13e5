"""Every window kind × plan on a stream equals the model of §6 (tests/streaming.py): random streams, random
arrival disorder, random triggers, SLACK CONSISTENT and GENEROUS, explicit punctuations, EMIT FINAL and
EMIT CHANGES; and a drained stream with nothing late equals the batch result."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import SPARK
from tests.differential import BASE, cases, normalized, runs
from tests.streaming import (
    CORRUPT,
    arrivals,
    check,
    compile_stream,
    difference,
    run,
    triggers,
    with_malformed,
)
from wql.compiler.kernels.names import CHANGE
from wql.runtime.reference import apply_changes, evaluate_query

pytestmark = pytest.mark.spark

SHARED = "count(*) AS n, count(v) AS nv, sum(v) AS sv, avg(v) AS av, min(v) AS lo, max(v) AS hi, stddev(v) AS sd"
HOLISTIC = "median(v) AS med, count(DISTINCT k) AS dk"
# Partial states that are all sums and extremes: cell plans merge each tuple as a cell of its own (shares);
# with stddev (moments), they lift the trigger's cells first.
SUMS = (
    "count(*) AS n, count(v) AS nv, sum(v) AS sv, avg(v) AS av, min(v) AS lo, max(v) AS hi, "
    "count_if(v > 0) AS pos, sum(v) FILTER (WHERE v > 1) AS big, max(ts) AS last"
)
SETTINGS = SPARK  # the profile's examples (tests/conftest.py), no shrinking
SLACKS = st.sampled_from(["", "SLACK 0 SECONDS", "SLACK 3 SECONDS", "SLACK 4 SECONDS GENEROUS", "SLACK 1 SECONDS"])
# The window attribute's type: TIMESTAMP (ts, with SECONDS), BIGINT (x) or DOUBLE (d), in bare units.
TYPES = {"TIMESTAMP": ("ts", " SECONDS"), "BIGINT": ("x", ""), "DOUBLE": ("d", "")}


def typed(
    data: st.DataObject, text: str, types: tuple[str, ...] = ("TIMESTAMP", "BIGINT", "DOUBLE")
) -> tuple[str, str]:
    """`text` (written over ts in SECONDS) over a window attribute of a drawn type: (text, attribute)."""
    attr, unit = TYPES[data.draw(st.sampled_from(types))]
    for clause in ("WATTR {}", "RATTR {}", "rank({})"):
        text = text.replace(clause.format("ts"), clause.format(attr))
    return text.replace(" SECONDS", unit), attr


def aggregates(plan: str, data: st.DataObject) -> str:
    shared = data.draw(st.sampled_from([SHARED, SUMS]))
    return shared if plan in {"pane", "slice", "bins", "prefix"} else f"{shared}, {HOLISTIC}"


@pytest.mark.parametrize("plan", ["bucket", "pane", "slice"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_time_sliding(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    r = data.draw(st.integers(1, 12))
    s = data.draw(st.integers(1, 12))
    if plan == "slice":
        s = data.draw(st.sampled_from([2, 3, 5]))
        r = s * data.draw(st.integers(1, 3)) + data.draw(st.integers(1, s - 1))
    if plan == "pane" and r == s:
        r += s
    slack = data.draw(SLACKS)
    where = data.draw(st.sampled_from(["", "WHERE n <> 3"]))
    text = (
        f"SELECT k, {aggregates(plan, data)} FROM s [RANGE {r} SECONDS SLIDE {s} SECONDS WATTR ts {slack}] {where} "
        "GROUP BY case_id, k"
    )
    text, attr = typed(data, text)
    check(spark, data, text, rows, attr, plan=plan)


@pytest.mark.parametrize("plan", ["bucket", "pane"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_landmark(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    s = data.draw(st.integers(3, 20))
    slack = data.draw(SLACKS)
    where = data.draw(st.sampled_from(["", "WHERE n <> 3", "WHERE v > 0"]))  # WHERE does not move the end
    text = (
        f"SELECT k, {aggregates(plan, data)} FROM s [RANGE UNBOUNDED SLIDE {s} SECONDS WATTR ts {slack}] {where} "
        "GROUP BY case_id, k"
    )
    text, attr = typed(data, text, ("TIMESTAMP", "BIGINT"))
    check(spark, data, text, rows, attr, plan=plan)


@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_landmarks_of_partitions_that_end_at_their_own_last_row(
    spark: Any, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    """OWN END over ROWS: each partition's count is its own punctuation, so its windows close as its rows come,
    and a drain emits them up to the partition's own last row, not the stream's longest partition's."""
    s = data.draw(st.integers(1, 4))
    where = data.draw(st.sampled_from(["", "WHERE n <> 3"]))
    text = (
        f"SELECT {aggregates('bucket', data)} FROM s [RANGE UNBOUNDED SLIDE {s} ROWS PATTR case_id, k OWN END] {where}"
    )
    check(spark, data, text, rows, "ts", plan="bucket")


@pytest.mark.parametrize("plan", ["bucket", "pane"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_row_windows(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """Tuple-based windows over row_num: the arrival position across triggers; the pane plan's with FULL START
    (none starts before the first row), the bucket plan's maybe with FULL END (a drain leaves out those that
    run past the last row)."""
    r = data.draw(st.integers(2, 6))
    s = data.draw(st.integers(1, 6))
    if plan == "pane" and r == s:
        r += s
    full = " FULL START" if plan == "pane" else data.draw(st.sampled_from(["", " FULL END", " FULL"]))
    text = f"SELECT k, {aggregates(plan, data)} FROM s [RANGE {r} ROWS SLIDE {s} ROWS{full}] GROUP BY case_id, k"
    check(spark, data, text, rows, "ts", plan=plan)


@pytest.mark.parametrize("plan", ["bucket", "pane"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_partitioned_row_windows(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """FCF: positions within each partition continue across triggers; each partition has its own punctuation."""
    r = data.draw(st.integers(2, 5))
    s = data.draw(st.integers(1, 5))
    if plan == "pane" and r == s:
        r += s
    where = data.draw(st.sampled_from(["", "WHERE n <> 3"]))
    full = data.draw(st.sampled_from(["", " FULL START", *([" FULL END", " FULL"] if plan == "bucket" else [])]))
    text = f"SELECT {aggregates(plan, data)} FROM s [RANGE {r} ROWS SLIDE {s} ROWS PATTR case_id, k{full}] {where}"
    check(spark, data, text, rows, "ts", plan=plan)


INTERVAL_AGGREGATES = {
    "bucket": f"{SHARED}, {HOLISTIC}",
    "se-slices": SHARED,
    "difference": "count(*) AS n, count(v) AS nv, sum(v) AS sv, avg(v) AS av, stddev(v) AS sd",
    "sweep": SHARED,
}
INTERVAL_SLACKS = st.sampled_from(["", "SLACK 2", "SLACK 5 GENEROUS"])


@pytest.mark.parametrize("plan", ["bucket", "se-slices", "difference", "sweep"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_interval_events(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """Every intervals plan keeps the events its open windows can still need (open-ended ones always):
    events of any length, point events, open-ended and malformed ones, WHERE as a flag."""
    r = data.draw(st.integers(1, 10))
    s = data.draw(st.integers(1, 10))
    slack = data.draw(INTERVAL_SLACKS)
    where = data.draw(st.sampled_from(["", "WHERE n <> 3"]))
    text = (
        f"SELECT {INTERVAL_AGGREGATES[plan]} FROM s [RANGE {r} SLIDE {s} WATTR (x, y) {slack}] {where} GROUP BY case_id"
    )
    check(spark, data, text, rows, "x", plan=plan)


@pytest.mark.parametrize("variant", ["clip", "landmark"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_interval_event_variants(spark: Any, variant: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """CLIP (bucket: each window reads the lifetimes clipped to it) and landmark windows (difference: every
    event kept) on a stream."""
    s = data.draw(st.integers(1, 6))
    slack = data.draw(INTERVAL_SLACKS)
    if variant == "clip":
        spec = f"RANGE {data.draw(st.integers(1, 10))} SLIDE {s} WATTR (x, y) CLIP {slack}"
        clipped = "count(*) AS n, sum(y - x) AS busy, max(y) AS last_end, sum(v) AS sv"
        text = f"SELECT {clipped} FROM s [{spec}] GROUP BY case_id"
        check(spark, data, text, rows, "x", plan="bucket")
    else:
        text = f"SELECT {INTERVAL_AGGREGATES['difference']} FROM s [RANGE UNBOUNDED SLIDE {s} WATTR (x, y) {slack}]"
        check(spark, data, text, rows, "x", plan="difference")


@pytest.mark.parametrize("plan", ["bucket", "se-slices", "difference", "sweep"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_interval_events_align_first(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """ALIGN FIRST over interval events: one grid from the stream's first arrival, kept across triggers;
    the retained events and the late rows' missed windows are measured from it."""
    s = data.draw(st.integers(1, 6))
    slack = data.draw(INTERVAL_SLACKS)
    landmark = plan == "difference" and data.draw(st.booleans())
    spec = f"RANGE UNBOUNDED SLIDE {s}" if landmark else f"RANGE {data.draw(st.integers(1, 10))} SLIDE {s}"
    text = f"SELECT {INTERVAL_AGGREGATES[plan]} FROM s [{spec} WATTR (x, y) ALIGN FIRST {slack}] GROUP BY case_id"
    check(spark, data, text, rows, "x", plan=plan)


SNAPSHOT_AGGREGATES = {
    "bucket": f"{SHARED}, {HOLISTIC}",
    "difference": INTERVAL_AGGREGATES["difference"],
}


@pytest.mark.parametrize("plan", ["bucket", "difference"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_snapshot_windows(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """Snapshots on a stream, every plan that serves them: a snapshot is emitted once the punctuation
    reaches its end, a partition's last at the drain; the events kept between triggers rebuild every open
    snapshot. Point, open-ended and malformed events; PATTR or one partition; WHERE (an event outside it
    still cuts snapshots); CLIP (bucket: the difference plan refuses it)."""
    slack = data.draw(st.sampled_from(["", "SLACK 2", "SLACK 5"]))
    partition = data.draw(st.sampled_from(["PATTR case_id", ""]))
    where = data.draw(st.sampled_from(["", "WHERE n <> 3"]))
    chosen = SNAPSHOT_AGGREGATES[plan]
    clip = ""
    if plan == "bucket" and data.draw(st.booleans()):
        clip, chosen = (
            "CLIP",
            "count(*) AS n, sum(y - x) AS busy, min(x) AS first_start, max(y) AS last_end, sum(v) AS sv",
        )
    grouped = "GROUP BY case_id" if plan == "bucket" and not partition and data.draw(st.booleans()) else ""
    text = f"SELECT {chosen} FROM s [SNAPSHOT WATTR (x, y) {partition} {clip} {slack}] {where} {grouped}"
    check(spark, data, text, rows, "x", plan=plan)


@pytest.mark.parametrize("plan", ["bucket", "se-slices", "difference", "sweep"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_snap_runs(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """SNAP on a stream, every plan that serves it: a run is emitted once the window after it is final,
    and a run of only its key's open-ended events past the data's last window waits for the data (or the
    drain); the events kept reach back to each key's last final run. Windows with gaps (SLIDE > RANGE),
    malformed events that move the punctuation past the data's end, WHERE, GROUP BY or one key."""
    r = data.draw(st.integers(1, 10))
    s = data.draw(st.integers(1, 10))
    slack = data.draw(st.sampled_from(["", "SLACK 2", "SLACK 5"]))
    where = data.draw(st.sampled_from(["", "WHERE n <> 3"]))
    grouped = data.draw(st.sampled_from(["GROUP BY case_id", ""]))
    text = (
        f"SELECT {INTERVAL_AGGREGATES[plan]} FROM s [RANGE {r} SLIDE {s} WATTR (x, y) SNAP {slack}] {where} {grouped}"
    )
    check(spark, data, text, rows, "x", plan=plan)


TUPLE_SLIDES = {"every": "SLIDE 1 ROW", "row_num": "SLIDE 3 ROWS SATTR row_num", "rank": "SLIDE 2 ROWS SATTR rank(ts)"}


@pytest.mark.parametrize(
    ("plan", "slide"),
    [("bins", "every"), ("bins", "row_num"), ("bins", "rank"), ("prefix", "every"), ("over", "rank")],
)
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_tuple_named_windows(
    spark: Any, plan: str, slide: str, data: st.DataObject, rows: list[dict[str, Any]]
) -> None:
    r = data.draw(st.integers(1, 15))
    slack = data.draw(SLACKS)
    where = data.draw(st.sampled_from(["", "WHERE n <> 3"]))
    text = (
        f"SELECT {aggregates(plan, data) if plan != 'prefix' else 'count(*) AS n, sum(v) AS sv, avg(v) AS av'} FROM s "
        f"[RANGE {r} SECONDS RATTR ts {TUPLE_SLIDES[slide]} PATTR case_id {slack}] {where}"
    )
    # Spark's frames have inclusive edges, so the over plan refuses a DOUBLE window (semantics §3.3).
    text, attr = typed(data, text, ("TIMESTAMP", "BIGINT") if plan == "over" else ("TIMESTAMP", "BIGINT", "DOUBLE"))
    check(spark, data, text, rows, attr, plan=plan)


@pytest.mark.parametrize("plan", ["bins", "over"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_kafka_windows(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    r = data.draw(st.integers(1, 12))
    slack = data.draw(st.sampled_from(["", "SLACK 3", "SLACK 2 GENEROUS"]))
    text = f"SELECT {aggregates(plan, data)} FROM s [RANGE {r} SECONDS WATTR ts SLIDE KAFKA PATTR case_id {slack}]"
    text, attr = typed(
        data, text.replace("SLACK 3", "SLACK 3 SECONDS").replace("SLACK 2", "SLACK 2 SECONDS"), ("TIMESTAMP", "BIGINT")
    )
    check(spark, data, text, rows, attr, plan=plan)


@pytest.mark.parametrize("emit", ["FINAL", "CHANGES"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_kafka_late_record_rule(spark: Any, emit: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """SLACK g KAFKA on a stream: Kafka's rule follows arrival order alone, so however the records are cut
    into triggers the drained stream equals the batch run over them in that order. Each window comes out once
    (EMIT FINAL) in the first trigger whose punctuation is past its end; with EMIT CHANGES its last version
    is the batch's. Every record below its close time as it arrived is counted late and kept."""
    r = data.draw(st.integers(1, 12))
    grace = data.draw(st.integers(0, 6))
    where = data.draw(st.sampled_from(["", " WHERE n <> 3"]))
    window = f"[RANGE {r} SECONDS WATTR ts SLIDE KAFKA PATTR case_id SLACK {grace} SECONDS KAFKA]"
    text = f"SELECT {aggregates('over', data)} FROM s {window}{where} EMIT {emit}"
    text, attr = typed(data, text, ("TIMESTAMP", "BIGINT"))
    compiled = compile_stream(text, "replay")
    ordered = data.draw(arrivals(rows, attr, data.draw(st.integers(0, 6))))
    batches = data.draw(with_malformed(data.draw(triggers(ordered))))
    kept: list[dict[str, Any]] = []
    got, reports = run(spark, compiled, batches, late=kept)
    records = [row for batch in batches for row in batch if row.get(CORRUPT) is None]
    want = evaluate_query(compiled.query, records)
    # Each record's close time as it arrived: stream time over the records Kafka sees (WHERE first), less the grace.
    scale = 1_000_000 if attr == "ts" else 1
    seen, late, points = None, [], []
    for batch in batches:
        for row in batch:
            value = row[attr] if row.get(CORRUPT) is None else None
            if value is not None and not (where and row["n"] in (None, 3)):
                base = round((value - BASE).total_seconds() * scale) if attr == "ts" else value
                seen = base if seen is None else max(seen, base)
                if base < seen - grace * scale:
                    late.append(row)
        points.append(None if seen is None else seen - grace * scale)
    assert sum(report["late"] for report in reports) == len(late)
    assert sorted(row["wql_reason"] for row in kept if row["wql_reason"] == "late") == ["late"] * len(late)
    if emit == "CHANGES":  # a window's last version is the batch's
        last = {(row["wid"], row["case_id"]): row for row in sorted(got, key=lambda row: row["_trigger"] == "drain")}
        got = [{k: v for k, v in row.items() if k != "_trigger"} for row in last.values()]
        assert normalized(got) == normalized(want), difference(got, want)
        return
    untagged = [{k: v for k, v in row.items() if k != "_trigger"} for row in got]
    assert normalized(untagged) == normalized(want), difference(untagged, want)
    for row in got:  # emitted by the first trigger whose punctuation is past the window's end
        end = row["window_end"]
        end = round((end - BASE).total_seconds() * scale) if attr == "ts" else end
        first = next((i for i, p in enumerate(points) if p is not None and end < p), "drain")
        assert row["_trigger"] == first, (row, points)


@pytest.mark.parametrize("plan", ["bucket", "pane"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_punctuation_rows(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """Rows with n = 9 are punctuations (not data): time advances by them alone, or with SLACK too."""
    slack = data.draw(st.sampled_from(["", "SLACK 2 SECONDS"]))
    window = f"[RANGE 6 SECONDS SLIDE 2 SECONDS WATTR ts {slack}]"
    text = f"SELECT k, {aggregates(plan, data)} FROM s {window} GROUP BY case_id, k"
    check(spark, data, text, rows, "ts", plan=plan, punctuation="n = 9", is_punctuation=lambda row: row["n"] == 9)


@pytest.mark.parametrize("plan", ["bucket", "pane", "bins"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_emit_changes(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """EMIT CHANGES: each trigger, the open windows whose result changed."""
    slack = data.draw(SLACKS)
    window = (
        "[RANGE 5 SECONDS RATTR ts SLIDE 1 ROW PATTR case_id"
        if plan == "bins"
        else "[RANGE 6 SECONDS SLIDE 2 SECONDS WATTR ts"
    )
    group = "" if plan == "bins" else "GROUP BY case_id, k"
    keys = "" if plan == "bins" else "k, "
    text = f"SELECT {keys}{aggregates(plan, data)} FROM s {window} {slack}] {group} EMIT CHANGES"
    check(spark, data, text, rows, "ts", plan=plan)


@pytest.mark.parametrize("plan", ["bucket", "pane"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_window_variants(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """CUMULATE (a running combine restarting each period) and Kafka's hopping grid (no window before 0)."""
    s = data.draw(st.integers(1, 5))
    r = s * data.draw(st.integers(2 if plan == "pane" else 1, 4))
    variant = data.draw(st.sampled_from(["CUMULATE", "KAFKA"]))
    slack = data.draw(SLACKS)
    text = (
        f"SELECT k, {aggregates(plan, data)} FROM s [RANGE {r} SECONDS SLIDE {s} SECONDS {variant} WATTR ts {slack}] "
        "GROUP BY case_id, k"
    )
    check(spark, data, text, rows, "ts", plan=plan)


@pytest.mark.parametrize("plan", ["bucket", "pane", "slice"])
@SETTINGS
@given(data=st.data(), rows=cases(count=4, max_rows=10))
def test_align_first(spark: Any, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """ALIGN FIRST: a partition's grid starts at its first arrival, kept across triggers (a late first arrival
    still places it); with PATTR each partition has its own, without it the stream has one."""
    s = data.draw(st.integers(1, 6))
    r = s * data.draw(st.integers(1 if plan == "bucket" else 2, 3))
    if plan == "slice":
        s = data.draw(st.sampled_from([2, 3, 5]))
        r = s * data.draw(st.integers(1, 3)) + data.draw(st.integers(1, s - 1))
    landmark = plan != "slice" and data.draw(st.booleans())
    spec = f"RANGE UNBOUNDED SLIDE {s} SECONDS" if landmark else f"RANGE {r} SECONDS SLIDE {s} SECONDS"
    scope = "GROUP BY case_id, k" if landmark or data.draw(st.booleans()) else "PATTR case_id"
    partition, grouped = (scope, "GROUP BY k") if scope.startswith("PATTR") else ("", scope)
    slack = data.draw(SLACKS)
    text = f"SELECT k, {aggregates(plan, data)} FROM s [{spec} WATTR ts {partition} ALIGN FIRST {slack}] {grouped}"
    check(spark, data, text, rows, "ts", plan=plan)


# Sessions and frames: (spec, plans that can run it); data on a short axis (tests.differential.runs).
DATA_DRIVEN = {
    "session": ("SESSION GAP 2 SECONDS", ["starts", "fold"]),
    "kafka": ("SESSION GAP 1 SECONDS KAFKA", ["scan"]),
    "max": ("SESSION GAP 2 SECONDS MAX 5 SECONDS", ["fold", "scan"]),
    "threshold": ("FRAME THRESHOLD (v < 1) MIN 2 ROWS", ["starts", "scan"]),
    "threshold_span": ("FRAME THRESHOLD (x > 0) MIN 1 SECONDS", ["fold"]),
    "delta": ("FRAME DELTA 3 ON x", ["fold", "scan"]),
    "aggregate": ("FRAME AGGREGATE (sum(v) > 1 OR count(*) >= 3)", ["fold", "scan"]),
}


@pytest.mark.parametrize(("kind", "plan"), [(kind, plan) for kind, (_, plans) in DATA_DRIVEN.items() for plan in plans])
@SETTINGS
@given(data=st.data(), rows=runs(count=3, max_rows=10))
def test_sessions_and_frames(spark: Any, kind: str, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """Out-of-order tuples within the slack merge sessions, split frames and move boundaries: the state keeps
    each key's tuples from its first window not final yet, and the drained stream equals the batch; late
    tuples are in no window (CONSISTENT) or, with GENEROUS, placed as if on time after the closing point of
    their key's last final window and in no window at or before it, as the model says."""
    spec = DATA_DRIVEN[kind][0]
    slacks = ["", "SLACK 0 SECONDS", "SLACK 2 SECONDS", "SLACK 5 SECONDS", "SLACK 0 SECONDS GENEROUS"]
    slack = data.draw(st.sampled_from([*slacks, "SLACK 2 SECONDS GENEROUS"]))
    partition = data.draw(st.sampled_from(["PATTR case_id", "PATTR case_id, k", ""]))
    where = data.draw(st.sampled_from(["", "WHERE n <> 3"]))
    chosen = SHARED if plan == "fold" else f"{SHARED}, {HOLISTIC}"
    text = f"SELECT {chosen} FROM s [{spec} WATTR ts {partition} {slack}] {where}"
    text, attr = typed(data, text, ("TIMESTAMP", "DOUBLE"))
    check(spark, data, text, rows, attr, plan=plan)


SESSION_KINDS = [(kind, plan) for kind in ("session", "kafka", "max") for plan in DATA_DRIVEN[kind][1]]


@pytest.mark.parametrize(("kind", "plan"), SESSION_KINDS)
@SETTINGS
@given(data=st.data(), rows=runs(count=3, max_rows=10))
def test_session_changes(spark: Any, kind: str, plan: str, data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    """EMIT CHANGES of sessions: each trigger's updates and retractions are the reference's (session_changes),
    and a consumer that applies them in order holds, after every trigger, exactly the sessions the reference
    finds over the tuples admitted so far (after the last, what EMIT FINAL emits in all); the drain emits
    nothing more."""
    spec = DATA_DRIVEN[kind][0]
    slacks = ["", "SLACK 2 SECONDS", "SLACK 5 SECONDS", "SLACK 0 SECONDS GENEROUS", "SLACK 3 SECONDS GENEROUS"]
    slack = data.draw(st.sampled_from(slacks))
    partition = data.draw(st.sampled_from(["PATTR case_id", "PATTR case_id, k", ""]))
    where = data.draw(st.sampled_from(["", "WHERE n <> 3"]))
    # GROUP BY (not the fold's: it keeps one group of states per session): a session's rows are retracted together
    grouped = "" if plan == "fold" or partition.endswith(", k") else data.draw(st.sampled_from(["", "GROUP BY k"]))
    chosen = SHARED if plan == "fold" else f"{SHARED}, {HOLISTIC}"
    text = f"SELECT {chosen} FROM s [{spec} WATTR ts {partition} {slack}] {where} {grouped} EMIT CHANGES"
    text, attr = typed(data, text, ("TIMESTAMP", "DOUBLE"))
    states: list[list[dict[str, Any]]] = []
    got = check(spark, data, text, rows, attr, plan=plan, states=states)
    query = compile_stream(text, plan).query
    assert all(r["_trigger"] != "drain" for r in got), "with EMIT CHANGES every version is out before the drain"
    assert {r[CHANGE] for r in got} <= {"update", "retract"}
    held: dict[tuple[Any, ...], dict[str, Any]] = {}
    for number, state in enumerate(states):
        changes = [{c: v for c, v in r.items() if c != "_trigger"} for r in got if r["_trigger"] == number]
        held = apply_changes(query, held, changes)
        assert normalized(list(held.values())) == normalized(state), f"what a consumer holds after trigger {number}"
