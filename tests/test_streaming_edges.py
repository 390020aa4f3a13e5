"""Hand-worked streams for the edges of §6: a punctuation exactly at a window's end, a tuple exactly at the
punctuation, CONSISTENT against GENEROUS, the late-rows output, punctuation rows, draining, and row
numbers that continue across triggers. Each trigger is fed to the job's own run_trigger, as foreachBatch
would (tests/streaming.py)."""

from __future__ import annotations

import csv
import datetime
import decimal
from pathlib import Path
from typing import Any

import pytest

import wql
from tests.differential import normalized
from tests.streaming import compile_stream, frame, run
from wql.runtime.execute import load_job
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.spark

BASE = datetime.datetime(2024, 1, 1)


def row(second: float | None, v: float | None = 1.0, k: str = "a", n: int = 1) -> dict[str, Any]:
    ts = None if second is None else BASE + datetime.timedelta(seconds=second)
    return {"case_id": 0, "k": k, "v": v, "n": n, "ts": ts, "x": None, "y": None, "d": None}


def emitted(spark: Any, text: str, batches: list[list[dict[str, Any]]], **options: Any) -> list[tuple[Any, ...]]:
    """(trigger, seconds of window_start, count) for each emitted window, in emission order."""
    got, _ = run(spark, compile_stream(text, **options), batches)
    out = []
    for r in got:
        start = None if r["window_start"] is None else (r["window_start"] - BASE).total_seconds()
        out.append((r["_trigger"], start, r["n"]))
    return sorted(out, key=lambda t: (str(t[0]), t[1] if t[1] is not None else -1))


TUMBLING = "SELECT count(*) AS n FROM s [RANGE 10 SECONDS WATTR ts{}]"


def test_a_window_closes_when_the_punctuation_reaches_its_end(spark: Any) -> None:
    # p = 5 after trigger 0, 10 after trigger 1: [0, 10) is final exactly then, [10, 20) at the drain.
    got = emitted(spark, TUMBLING.format(""), [[row(1), row(5)], [row(10)]])
    assert got == [(1, 0.0, 2), ("drain", 10.0, 1)]


def test_a_tuple_at_the_punctuation_is_not_late(spark: Any) -> None:
    # p = 10 after trigger 0; a tuple at 10 in trigger 1 is on time (late means below p), one at 9.5 is late.
    got = emitted(spark, TUMBLING.format(""), [[row(2), row(10)], [row(10), row(9.5)]])
    assert got == [(0, 0.0, 1), ("drain", 10.0, 2)]


def test_consistent_drops_a_late_tuple_generous_keeps_it_for_open_windows(spark: Any) -> None:
    sliding = "SELECT count(*) AS n FROM s [RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts SLACK 0 SECONDS {}]"
    # After trigger 0, p = 12: [0, 10) is final; a tuple at 8 in trigger 1 is late.
    batches = [[row(1), row(12)], [row(8)]]
    consistent = emitted(spark, sliding.format("CONSISTENT"), batches)
    generous = emitted(spark, sliding.format("GENEROUS"), batches)
    assert (0, 0.0, 1) in consistent and (0, 0.0, 1) in generous  # [0, 10) closed before the late tuple came
    assert ("drain", 5.0, 1) in consistent  # [5, 15): the late tuple is in no window
    assert ("drain", 5.0, 2) in generous  # [5, 15) was still open: GENEROUS counts it there


def test_late_and_malformed_rows_are_written_with_the_reason(spark: Any, tmp_path: Path) -> None:
    compiled = compile_stream("SELECT count(*) AS n FROM s [RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts]")
    module = load_job(compiled.stream_code)
    checkpoint, late = tmp_path / "ck", tmp_path / "late"
    reports: list[dict[str, Any]] = []
    schema = (
        "case_id INT, k STRING, v DOUBLE, n INT, ts TIMESTAMP, x BIGINT, y BIGINT, d DOUBLE, _corrupt_record STRING"
    )
    first = spark.createDataFrame(
        [(0, "a", 1.0, 1, BASE + datetime.timedelta(seconds=30), None, None, None, None)], schema
    )
    second = spark.createDataFrame(
        [
            (0, "a", 1.0, 1, BASE + datetime.timedelta(seconds=12), None, None, None, None),
            (None, None, None, None, None, None, None, None, "oops,not,a,row"),
        ],
        schema,
    )
    for batch, data in enumerate([first, second]):
        module.run_trigger(
            spark, data, batch, str(checkpoint), lambda r, n: r.count(), str(late), "csv", reports.append
        )
    assert [(r["late"], r["malformed"]) for r in reports] == [(0, 0), (1, 1)]
    [written] = sorted(late.glob("*.csv"))
    assert written.name == "batch-00000001.csv"
    rows = {r["wql_reason"]: r for r in csv.DictReader(written.open())}
    assert rows["late"]["k"] == "a" and rows["late"]["wql_trigger"] == "1"
    assert rows["late"]["wql_punctuation"] == "2024-01-01 00:00:30"
    # ts 12 s is in the windows [5, 15) and [10, 20): ids 340813442 and 340813443 on the 5-second grid.
    assert rows["late"]["wql_missed"] == "windows 340813442 to 340813443"
    assert rows["malformed"]["wql_record"] == "oops,not,a,row" and rows["malformed"]["wql_missed"] == ""


def test_punctuation_rows_are_not_data_and_move_time(spark: Any) -> None:
    # Without SLACK, only punctuation rows (n = 9) advance time; they are in no window themselves.
    text = TUMBLING.format("")
    batches = [[row(3), row(25)], [row(11, n=9)], [row(4)]]
    got = emitted(spark, text, batches, punctuation="n = 9")
    # Trigger 1's punctuation 11 closes [0, 10); the tuple at 4 in trigger 2 is then late (CONSISTENT).
    assert got == [(1, 0.0, 1), ("drain", 20.0, 1)]


def test_a_drained_stream_ends(spark: Any, tmp_path: Path) -> None:
    compiled = compile_stream(TUMBLING.format(""))
    module = load_job(compiled.stream_code)
    checkpoint = str(tmp_path / "ck")
    counts: list[int] = []
    reports: list[dict[str, Any]] = []
    module.run_trigger(spark, frame(spark, [row(1)]), 0, checkpoint, lambda r, n: counts.append(r.count()) or 0)
    assert module.drain_stream(spark, checkpoint, lambda r, n: r.count()) == 1
    assert module.drain_stream(spark, checkpoint, lambda r, n: r.count()) == 0  # once
    # No trigger runs on a drained checkpoint: its rows would all be late (docs/semantics.md §8.6).
    with pytest.raises(module.StreamEnded, match=r"was drained at .*, after trigger 0: it has ended"):
        module.run_trigger(spark, frame(spark, [row(50)]), 1, checkpoint, lambda r, n: r.count(), report=reports.append)
    assert reports == []


def test_row_numbers_continue_across_triggers(spark: Any) -> None:
    text = "SELECT count(*) AS n, sum(v) AS sv FROM s [RANGE 3 ROWS]"
    got, _ = run(spark, compile_stream(text), [[row(1, 1.0), row(2, 2.0)], [row(3, 4.0), row(4, 8.0)], [row(5, 16.0)]])
    assert sorted((r["_trigger"], r["wid"], r["sv"]) for r in got if r["_trigger"] != "drain") == [(1, 0, 7.0)]
    assert [(r["wid"], r["sv"]) for r in got if r["_trigger"] == "drain"] == [(1, 24.0)]


def test_landmark_panes_fold_into_one_running_state(spark: Any) -> None:
    text = "SELECT count(*) AS n, sum(v) AS sv FROM s [RANGE UNBOUNDED SLIDE 10 SECONDS WATTR ts]"
    batches = [[row(1, 1.0), row(11, 2.0)], [row(21, 4.0)], [row(31, 8.0), row(42, 16.0)]]
    compiled = compile_stream(text, plan="pane")
    got, reports = run(spark, compiled, batches)
    assert sorted((str(r["_trigger"]), r["sv"]) for r in got) == [
        ("0", 1.0),
        ("1", 3.0),
        ("2", 7.0),
        ("2", 15.0),
        ("drain", 31.0),
    ]
    assert max(r["state_rows"] for r in reports) <= 2  # one folded pane and the open one


@pytest.mark.parametrize("plan", ["bucket", "pane"])
def test_landmarks_with_where_reach_the_last_value_on_a_stream(spark: Any, plan: str) -> None:
    """The last trigger's tuples all fail WHERE, yet they say where the data ends: the drain emits the
    windows up to theirs, and the state keeps one of them, not all."""
    text = "SELECT count(*) AS n, sum(v) AS sv FROM s [RANGE UNBOUNDED SLIDE 10 SECONDS WATTR ts] WHERE v < 5"
    batches = [[row(1, 1.0), row(11, 9.0)], [row(12, 2.0), row(13, 7.0)], [row(35, 8.0), row(31, 6.0)]]
    got, reports = run(spark, compile_stream(text, plan=plan), batches)
    ends = sorted((str(r["_trigger"]), (r["window_end"] - BASE).total_seconds(), r["sv"]) for r in got)
    # p = 11, 13, 35: [.., 20) and [.., 30) close in trigger 2 with nothing new in them; [.., 40) at the drain.
    assert ends == [("0", 10.0, 1.0), ("2", 20.0, 3.0), ("2", 30.0, 3.0), ("drain", 40.0, 3.0)]
    assert max(r["state_rows"] for r in reports) <= 3


def test_own_end_keeps_each_partitions_last_value_that_where_drops(spark: Any) -> None:
    """OWN END: each partition's landmark windows end at its own last value, WHERE or not, so the state keeps,
    per partition, the last tuple WHERE drops. It kept one for the whole stream, so a partition whose last
    rows WHERE drops lost its last window at the drain (found by the streaming differential test)."""
    text = "SELECT k, count(*) AS n FROM s [RANGE UNBOUNDED SLIDE 2 ROWS PATTR k OWN END] WHERE n <> 3"
    shorter = [row(None, k="a", n=1), row(None, k="a", n=1), row(None, k="a", n=3)]
    longer = [row(None, k="b", n=3) for _ in range(5)]  # the stream's last value, in another partition
    got, _ = run(spark, compile_stream(text, plan="bucket"), [shorter + longer])
    # a: window 0 (rows 0-1), final once a has 2 rows, and at the drain window 1 (rows 0-3), the one holding
    # its last row; b: WHERE keeps none of its rows.
    assert sorted((r["k"], r["wid"], r["n"], str(r["_trigger"])) for r in got) == [
        ("a", 0, 2, "0"),
        ("a", 1, 2, "drain"),
    ]


def spans(got: list[dict[str, Any]]) -> dict[Any, tuple[int, int, int]]:
    """Per trigger that emitted windows: the first and last window-id and how many."""
    out: dict[Any, list[int]] = {}
    for r in got:
        out.setdefault(r["_trigger"], []).append(r["wid"])
    return {trigger: (min(w), max(w), len(w)) for trigger, w in out.items()}


@pytest.mark.parametrize("plan", ["bucket", "difference"])
def test_windows_the_punctuation_passed_beyond_the_datas_end_come_out_when_the_data_reaches_them(
    spark: Any, plan: str
) -> None:
    """Found by the streaming differential test: an event that ends before its start moves the punctuation by
    its start but not the data's end. Trigger 1 leaves p = 19 and the data ending at 3: windows 0-3 are final;
    4-18 are final too but past the data's end, so not among the windows yet. Trigger 2 moves the data's end
    to 47 and p to 30: windows 4-29 come out then (they were never emitted: a drained stream with nothing late
    equals the batch, section 8.6), the rest at the drain."""
    text = "SELECT count(*) AS n FROM s [RANGE UNBOUNDED SLIDE 1 WATTR (x, y) ALIGN FIRST] GROUP BY case_id"

    def event(x: int, y: int | None) -> dict[str, Any]:
        return {"case_id": 0, "k": "a", "v": 1.0, "n": 1, "ts": None, "x": x, "y": y, "d": None}

    batches = [[event(0, None)], [event(3, None), event(19, 18)], [event(30, 47)]]
    compiled = compile_stream(text, plan=plan)
    got, _ = run(spark, compiled, batches)
    want = evaluate_query(compiled.query, [r for b in batches for r in b])
    assert sorted(r["wid"] for r in got) == sorted(r["wid"] for r in want)
    assert spans(got) == {1: (0, 3, 4), 2: (4, 29, 26), "drain": (30, 47, 18)}


def test_windows_a_punctuation_row_passed_beyond_the_datas_end_come_out_when_the_data_reaches_them(
    spark: Any,
) -> None:
    """The same over values, pane plan: a punctuation row moves p to 50 s while the data ends at 3 s; landmark
    windows 1-4 (ending at 20 … 50 s) are final, not yet among the windows, and come out when a tuple at 60 s
    reaches them (without SLACK only punctuation rows move p, so 5 and 6 wait for the drain). The panes fold
    into the last final window's on the old rule, which moved the data's end too and lost windows 1-3."""
    text = "SELECT count(*) AS n FROM s [RANGE UNBOUNDED SLIDE 10 SECONDS WATTR ts]"
    batches = [[row(3)], [row(50, n=9)], [row(60)]]
    got, _ = run(spark, compile_stream(text, punctuation="n = 9"), batches)
    first = min(r["wid"] for r in got)
    assert {t: (lo - first, hi - first, n) for t, (lo, hi, n) in spans(got).items()} == {
        1: (0, 0, 1),
        2: (1, 4, 4),
        "drain": (5, 6, 2),
    }
    assert [r["n"] for r in sorted(got, key=lambda r: r["wid"])] == [1, 1, 1, 1, 1, 1, 2]


@pytest.mark.parametrize("plan", ["bucket", "se-slices", "difference", "sweep"])
def test_interval_events_keep_what_a_grid_from_the_first_arrival_needs(spark: Any, plan: str) -> None:
    """ALIGN FIRST over interval events, first arrival at 103: the events kept between triggers are those
    ending in or after the first open window measured from 103, not from 0 (which would keep none)."""
    text = "SELECT count(*) AS n, sum(v) AS sv FROM s [RANGE 10 SLIDE 5 WATTR (x, y) ALIGN FIRST]"
    events = [[(103, 130), (104, 105)], [(125, 126)], [(131, 132), (140, None)]]
    batches = [[{**row(None, v=float(x)), "x": x, "y": y} for x, y in trigger] for trigger in events]
    compiled = compile_stream(text, plan=plan)
    got, _ = run(spark, compiled, batches)
    want = evaluate_query(compiled.query, [r for b in batches for r in b])
    assert normalized([{k: v for k, v in r.items() if k != "_trigger"} for r in got]) == normalized(want)
    assert len(want) >= 8


def test_state_is_bounded_by_the_open_windows(spark: Any) -> None:
    text = "SELECT count(*) AS n FROM s [RANGE 20 SECONDS SLIDE 10 SECONDS WATTR ts] GROUP BY k"
    batches = [[row(t, k=k) for t in range(start, start + 30) for k in "ab"] for start in range(0, 300, 30)]
    _, reports = run(spark, compile_stream(text, plan="pane"), batches)
    # Two keys, panes of 10 s: the open windows need the last two panes of each key, whatever ran before.
    assert {r["state_rows"] for r in reports if r["trigger"] != "drain"} == {4}


@pytest.mark.parametrize("plan", ["bucket", "pane"])
def test_a_trigger_that_admits_nothing_keeps_the_state_it_found(spark: Any, tmp_path: Path, plan: str) -> None:
    # Trigger 0 (p = 12) closes [-10, 10) and leaves [0, 20) and [10, 30) open. Triggers 1-3 bring a late row,
    # nothing, then only late rows: they emit nothing and name trigger 0's state files, which must outlive the
    # cleanup of older versions; trigger 4 (p = 25) closes [0, 20), the same when Spark replays it.
    text = "SELECT count(*) AS n FROM s [RANGE 20 SECONDS SLIDE 10 SECONDS WATTR ts]"
    module = load_job(compile_stream(text, plan=plan).stream_code)
    checkpoint = str(tmp_path / "ck")
    reports: list[dict[str, Any]] = []
    out: dict[str, list[int]] = {}

    def emit(result: Any, name: str) -> int:
        out[name] = sorted(r["n"] for r in result.collect())
        return len(out[name])

    batches = [[row(1), row(12)], [row(3)], [], [row(5), row(11.5)], [row(25)]]
    for batch, rows in enumerate(batches):
        module.run_trigger(spark, frame(spark, rows), batch, checkpoint, emit, report=reports.append)
    assert [r["windows"] for r in reports] == [1, 0, 0, 0, 1]
    assert [r["late"] for r in reports] == [0, 1, 0, 2, 0]
    assert len({r["state_rows"] for r in reports[:4]}) == 1 and reports[0]["state_rows"] > 0
    assert "batch-00000001" not in out and out["batch-00000004"] == [2]
    module.run_trigger(spark, frame(spark, batches[4]), 4, checkpoint, emit)  # a replay reads trigger 3's meta
    assert out["batch-00000004"] == [2]
    assert module.drain_stream(spark, checkpoint, emit) == 2 and out["drain-00000004"] == [1, 2]


def test_a_sink_that_fails_fails_the_trigger_and_its_replay_emits_once(spark: Any, tmp_path: Path) -> None:
    # A cell plan writes its state beside the emit: when the sink fails, the trigger fails with the sink's
    # error, commits nothing, and Spark's replay of the same batch emits its windows once.
    text = "SELECT count(*) AS n FROM s [RANGE 20 SECONDS SLIDE 10 SECONDS WATTR ts]"
    module = load_job(compile_stream(text, plan="pane").stream_code)
    checkpoint = str(tmp_path / "ck")
    out: dict[str, list[int]] = {}
    failing = {"batch-00000001"}

    def emit(result: Any, name: str) -> int:
        if name in failing:
            failing.discard(name)
            raise OSError("the sink is down")
        out[name] = sorted(r["n"] for r in result.collect())
        return len(out[name])

    batches = [[row(1), row(12)], [row(14), row(23)], [row(35)]]
    module.run_trigger(spark, frame(spark, batches[0]), 0, checkpoint, emit)
    with pytest.raises(OSError, match="the sink is down"):
        module.run_trigger(spark, frame(spark, batches[1]), 1, checkpoint, emit)
    assert module.newest_meta(spark, checkpoint)["batch"] == 0
    for batch in (1, 2):
        module.run_trigger(spark, frame(spark, batches[batch]), batch, checkpoint, emit)
    module.drain_stream(spark, checkpoint, emit)
    # Windows [-10, 10) .. [30, 50): trigger 0 (p = 12) closes the first, 1 (p = 23) [0, 20) with 1, 12 and
    # 14, 2 (p = 35) [10, 30); the drain [20, 40) and [30, 50). A state written twice would count 1 and 12 twice.
    assert out == {
        "batch-00000000": [1],
        "batch-00000001": [3],
        "batch-00000002": [3],
        "drain-00000002": [1, 2],
    }


def test_a_state_part_that_fails_fails_the_trigger_after_the_others_end(spark: Any, tmp_path: Path) -> None:
    # Sessions by key write their rows and their open windows beside the emit. When the windows' part fails,
    # the trigger fails with that error once every job has ended, commits nothing, and its replay emits
    # every session once.
    text = "SELECT count(*) AS n FROM s [SESSION GAP 5 SECONDS WATTR ts PATTR k]"
    batches = [[row(1), row(2, k="b")], [row(4), row(30, k="b")], [row(40), row(41, k="b")]]
    module = load_job(compile_stream(text).stream_code)
    checkpoint = str(tmp_path / "ck")
    out: dict[str, list[int]] = {}

    def emit(result: Any, name: str) -> int:
        out[name] = sorted(r["n"] for r in result.collect())
        return len(out[name])

    writes = module.save_state

    def failing(spark: Any, checkpoint: str, frame: Any, part: str, batch: int, one_file: bool = True) -> Any:
        if part == "windows":
            raise OSError("the checkpoint is full")
        return writes(spark, checkpoint, frame, part, batch, one_file)

    module.run_trigger(spark, frame(spark, batches[0]), 0, checkpoint, emit)
    module.save_state = failing
    with pytest.raises(OSError, match="the checkpoint is full"):
        module.run_trigger(spark, frame(spark, batches[1]), 1, checkpoint, emit)
    assert module.newest_meta(spark, checkpoint)["batch"] == 0
    module.save_state = writes
    for batch in (1, 2):
        module.run_trigger(spark, frame(spark, batches[batch]), batch, checkpoint, emit)
    module.drain_stream(spark, checkpoint, emit)
    # a: {1, 4} closes at p = 30 and {40} at the drain; b: {2} at p = 30, {30} at p = 41, {41} at the drain.
    assert out == {
        "batch-00000000": [],
        "batch-00000001": [1, 2],
        "batch-00000002": [1],
        "drain-00000002": [1, 1],
    }


def event(case: int, start: int, end: int | None, v: float) -> dict[str, Any]:
    return {**row(None, v=v), "case_id": case, "x": start, "y": end}


@pytest.mark.parametrize("plan", ["bucket", "difference"])
def test_snapshots_close_when_the_punctuation_reaches_their_end(spark: Any, tmp_path: Path, plan: str) -> None:
    """Snapshots of two partitions (PATTR case_id) over three triggers and the drain; no SLACK, so the
    punctuation is the largest start seen: 2, then 6, then 8.

    Trigger 0: A (0, 10, 1), A (2, NULL, 2) open-ended, B (1, 4, 10). A's endpoints 0, 2, 10: [0, 2) holds
    (0, 10) and ends at 2 ≤ p = 2: emitted (n 1, sv 1). [2, 10) and A's last [10, NULL) stay open; B's
    [1, 4) ends after 2. Kept: A's both events (x0 = 2), B's (x0 = 1).
    Trigger 1: A (6, 6, 4), a point event, then A (3, 7, 8): out of order but on time (3 ≥ 2), it cuts the
    open [2, 10) at 3 and 7. B (0, 3, 100) starts before p = 2: late, counted, in no snapshot. p = 6. A's
    endpoints 0, 2, 3, 6, 7, 10: [2, 3) (n 2, sv 3) and [3, 6) (n 3, sv 11) end at ≤ 6: emitted; [6, 7)
    holds the point event too (n 4, sv 15), open. B's [1, 4) (n 1, sv 10) ends at 4 ≤ 6: emitted.
    Trigger 2: A (8, 12, 16), B (7, 9, 30). p = 8: A's [6, 7) (n 4, sv 15) and [7, 8) (n 2, sv 3) emitted.
    Kept: A's events that end at or after x0 = 8 ((0, 10), (2, NULL), (8, 12): the point event and (3, 7)
    go), B's (7, 9) (x0 = 7: (1, 4) goes). What remains still rebuilds A's [8, 10) exactly; its snapshots
    rebuilt before 8 ([0, 2), [2, 8)) end at ≤ 8 and are not emitted again.
    Drain: A's [8, 10) (n 3, sv 19), [10, 12) (n 2, sv 18), [12, NULL) (n 1, sv 2: the open-ended event
    alone); B's [7, 9) (n 1, sv 30). B's [4, 7) and [9, NULL) hold nothing and are not output.
    """
    text = "SELECT count(*) AS n, sum(v) AS sv FROM s [SNAPSHOT WATTR (x, y) PATTR case_id]"
    batches = [
        [event(1, 0, 10, 1.0), event(1, 2, None, 2.0), event(2, 1, 4, 10.0)],
        [event(1, 6, 6, 4.0), event(1, 3, 7, 8.0), event(2, 0, 3, 100.0)],
        [event(1, 8, 12, 16.0), event(2, 7, 9, 30.0)],
    ]
    compiled = compile_stream(text, plan=plan)
    module = load_job(compiled.stream_code)
    checkpoint, late = str(tmp_path / "ck"), tmp_path / "late"
    got: list[tuple[Any, ...]] = []
    reports: list[dict[str, Any]] = []

    def emit(result: Any, name: str) -> int:
        rows = result.collect()
        trigger = "drain" if name.startswith("drain") else int(name.split("-")[1])
        got.extend((trigger, r["case_id"], r["window_start"], r["window_end"], r["n"], r["sv"]) for r in rows)
        return len(rows)

    for batch, rows in enumerate(batches):
        module.run_trigger(spark, frame(spark, rows), batch, checkpoint, emit, str(late), "csv", reports.append)
    module.drain_stream(spark, checkpoint, emit, reports.append)
    assert sorted(got, key=lambda r: (str(r[0]), r[1], r[2])) == [
        (0, 1, 0, 2, 1, 1.0),
        (1, 1, 2, 3, 2, 3.0),
        (1, 1, 3, 6, 3, 11.0),
        (1, 2, 1, 4, 1, 10.0),
        (2, 1, 6, 7, 4, 15.0),
        (2, 1, 7, 8, 2, 3.0),
        ("drain", 1, 8, 10, 3, 19.0),
        ("drain", 1, 10, 12, 2, 18.0),
        ("drain", 1, 12, None, 1, 2.0),
        ("drain", 2, 7, 9, 1, 30.0),
    ]
    assert [r["late"] for r in reports] == [0, 1, 0, 0]
    assert [r["punctuation"] for r in reports[:3]] == ["2", "6", "8"]
    assert reports[2]["state_rows"] == 4  # A: (0, 10), (2, NULL), (8, 12); B: (7, 9)
    [written] = sorted(late.glob("*.csv"))
    [late_row] = list(csv.DictReader(written.open()))
    assert (late_row["case_id"], late_row["x"], late_row["wql_trigger"]) == ("2", "0", "1")
    assert late_row["wql_missed"] == "its partition's snapshots from 0 until 3"
    # Everything emitted, once: the batch result over the events that were not late.
    on_time = [r for b in batches for r in b if r["v"] != 100.0]
    batch = [
        (r["case_id"], r["window_start"], r["window_end"], r["n"], r["sv"])
        for r in evaluate_query(compiled.query, on_time)
    ]
    assert sorted(batch, key=repr) == sorted((r[1:] for r in got), key=repr)


BOUNDS = {
    "timestamp": ("TIMESTAMP", lambda q: BASE + datetime.timedelta(seconds=q / 2)),
    "decimal": ("DECIMAL(8,2)", lambda q: decimal.Decimal(q) / 4),
    "double": ("DOUBLE", lambda q: q / 4),
}


@pytest.mark.parametrize(
    ("kind", "plan"), [("timestamp", "bucket"), ("decimal", "difference"), ("double", "difference")]
)
def test_snapshots_on_a_stream_over_every_kind_of_bound(spark: Any, tmp_path: Path, kind: str, plan: str) -> None:
    """Punctuations, snapshot ends and the kept events compare in the bounds' base units (µs, units of
    10^-scale, doubles): in order across four triggers and drained, the stream equals the batch result."""
    type_name, value = BOUNDS[kind]
    declaration = f"CREATE STREAM e (k INT, v DOUBLE, s {type_name}, f {type_name});\n"
    text = "SELECT count(*) AS n, sum(v) AS sv FROM e [SNAPSHOT WATTR (s, f) PATTR k]"
    compiled = wql.compile(declaration + text, plan=plan, stream=True)
    spans = [(0, 9), (1, None), (3, 3), (2, 6), (5, 12), (7, None), (8, 10), (11, 11), (13, 20)]
    rows = [
        {"k": i % 2, "v": float(i), "s": value(a), "f": None if b is None else value(b)}
        for i, (a, b) in enumerate(spans)
    ]
    triggers = [rows[0:2], rows[2:5], rows[5:7], rows[7:]]
    module = load_job(compiled.stream_code)
    got: list[dict[str, Any]] = []

    def emit(result: Any, name: str) -> int:
        collected = [r.asDict() for r in result.collect()]
        got.extend(collected)
        return len(collected)

    schema = f"k INT, v DOUBLE, s {type_name}, f {type_name}"
    for batch, part in enumerate(triggers):
        data = spark.createDataFrame([tuple(r.values()) for r in part], schema)
        module.run_trigger(spark, data, batch, str(tmp_path / "ck"), emit)
    module.drain_stream(spark, str(tmp_path / "ck"), emit)
    want = evaluate_query(compiled.query, rows)
    assert len(want) >= 10
    assert normalized(got) == normalized(want)


@pytest.mark.parametrize("plan", ["bucket", "se-slices", "difference", "sweep"])
def test_a_snap_run_of_open_ended_events_waits_for_the_data(spark: Any, plan: str) -> None:
    """[RANGE 10 SLIDE 5 WATTR (x, y) SNAP], no SLACK: window w is [5w − 5, 5w + 5).

    Trigger 0: the open-ended (0, NULL) and the malformed (30, 20), in no window, whose start still moves
    the punctuation to 30 while the data ends at 0 (its last window is 1, [0, 10)). The run of (0, NULL)
    is windows 0 … 1, [−5, 10), and window 2 ends at 15 ≤ 30; but window 2 lies past the data's last and
    the run holds all of its key's open-ended events: a later event that moves the data's end gives
    window 2 the same events. So nothing is emitted. Trigger 1: (40, 41), data's end 41, last window 9;
    p = 40. The run is now windows 0 … 7, [−5, 40) (window 8, [35, 45), also holds (40, 41)); window 8
    ends at 45 > 40, still open. The drain emits [−5, 40) with 1 event and [35, 50) with 2: the batch
    result, each run once.
    """
    text = "SELECT count(*) AS n FROM s [RANGE 10 SLIDE 5 WATTR (x, y) SNAP]"
    batches = [[event(1, 0, None, 1.0), event(1, 30, 20, 2.0)], [event(1, 40, 41, 3.0)]]
    compiled = compile_stream(text, plan=plan)
    got, reports = run(spark, compiled, batches)
    assert sorted((str(r["_trigger"]), r["window_start"], r["window_end"], r["n"]) for r in got) == [
        ("drain", -5, 40, 1),
        ("drain", 35, 50, 2),
    ]
    assert [r["punctuation"] for r in reports[:2]] == ["30", "40"]
    want = evaluate_query(compiled.query, [r for b in batches for r in b])
    assert normalized([{k: v for k, v in r.items() if k != "_trigger"} for r in got]) == normalized(want)


SESSION_CHANGES = (
    "SELECT count(*) AS n, sum(v) AS sv FROM s [SESSION GAP 2 SECONDS WATTR ts {}SLACK 5 SECONDS] EMIT CHANGES"
)


def changes(spark: Any, text: str, batches: list[list[dict[str, Any]]]) -> list[tuple[Any, ...]]:
    """(trigger, change, key, seconds of window_start, count) for each emitted row, in order."""
    got, _ = run(spark, compile_stream(text), batches)
    out = [
        (r["_trigger"], r["wql_change"], r.get("k"), (r["window_start"] - BASE).total_seconds(), r["n"]) for r in got
    ]
    return sorted(out, key=lambda t: (str(t[0]), t[1], str(t[2]), t[3]))


@pytest.mark.parametrize("partition", ["", "PATTR k "])
def test_a_session_that_a_late_tuple_merges_away_is_retracted(spark: Any, partition: str) -> None:
    # Trigger 0: sessions [0] and [4] (4 s apart, GAP 2). Trigger 1: 2 s joins them into one session from 0,
    # so the version of the session at 4 is taken back; 5.5 s extends it in trigger 2, and 8 s and 7.5 s in
    # trigger 3 (out of order within it) only change its result: nothing more to take back.
    text = SESSION_CHANGES.format(partition)
    select = text.replace("count(*) AS n", "k, count(*) AS n") if partition else text
    got = changes(spark, select, [[row(0), row(4)], [row(2)], [row(5.5)], [row(8), row(7.5)]])
    key = "a" if partition else None
    if not partition:
        got = [(t, c, None, s, n) for t, c, _, s, n in got]
    assert got == [
        (0, "update", key, 0.0, 1),
        (0, "update", key, 4.0, 1),
        (1, "retract", key, 4.0, 1),
        (1, "update", key, 0.0, 3),
        (2, "update", key, 0.0, 4),
        (3, "update", key, 0.0, 6),
    ]


def test_a_tuple_before_a_session_moves_its_start_and_retracts_it(spark: Any) -> None:
    # Trigger 0: a session from 4. Trigger 1: 3 s starts it at 3: the version from 4 no longer exists. Trigger
    # 2: 20 s makes the punctuation 15, past 4 + 2: the session from 3 is final and stays as it was emitted.
    text = SESSION_CHANGES.format("PATTR k ").replace("count(*) AS n", "k, count(*) AS n")
    got = changes(spark, text, [[row(4)], [row(3)], [row(20)]])
    assert got == [
        (0, "update", "a", 4.0, 1),
        (1, "retract", "a", 4.0, 1),
        (1, "update", "a", 3.0, 2),
        (2, "update", "a", 20.0, 1),
    ]
