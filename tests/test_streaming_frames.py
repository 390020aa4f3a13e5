"""Hand-worked streams of sessions and frames (semantics.md §8.4): a tuple that arrives out of order but
within the slack merges two sessions or splits a frame, a window is emitted once the punctuation makes it
final and never again, and a late tuple (CONSISTENT) changes nothing already emitted."""

from __future__ import annotations

from typing import Any

import pytest

from tests.streaming import compile_stream, run
from tests.test_streaming_edges import BASE, row

pytestmark = pytest.mark.spark


def emitted(spark: Any, text: str, batches: list[list[dict[str, Any]]]) -> tuple[list[tuple[Any, ...]], list[dict]]:
    """(trigger, seconds of window_start, seconds of window_end, count) per emitted window; the reports."""
    got, reports = run(spark, compile_stream(text), batches)
    out = [
        (r["_trigger"], (r["window_start"] - BASE).total_seconds(), (r["window_end"] - BASE).total_seconds(), r["n"])
        for r in got
    ]
    return sorted(out, key=lambda t: (str(t[0]), t[1])), reports


SESSIONS = "SELECT count(*) AS n FROM s [SESSION GAP 5 SECONDS WATTR ts SLACK 10 SECONDS]"


def test_a_tuple_out_of_order_merges_two_sessions(spark: Any) -> None:
    # Trigger 0: 0 s and 8 s are two sessions (8 s apart, GAP 5); p = −2 s, neither is final. Trigger 1: 4 s is
    # not late (4 ≥ −2) and joins them into [0, 13); 30 s moves p to 20 s > 8 + 5, so the merged session is
    # final and emitted once; the drain emits [30, 35).
    got, reports = emitted(spark, SESSIONS, [[row(0), row(8)], [row(4), row(30)]])
    assert got == [(1, 0.0, 13.0, 3), ("drain", 30.0, 35.0, 1)]
    assert [r["state_rows"] for r in reports[:2]] == [2, 1]  # after trigger 1 only the open session at 30 s


def test_a_late_tuple_changes_no_emitted_session(spark: Any) -> None:
    # After trigger 1, p = 20 s and [0, 13) is emitted; 9 s in trigger 2 is late: in no window, and the
    # session it would have joined is not emitted again.
    got, reports = emitted(spark, SESSIONS, [[row(0), row(8)], [row(4), row(30)], [row(9)]])
    assert got == [(1, 0.0, 13.0, 3), ("drain", 30.0, 35.0, 1)]
    assert [r["late"] for r in reports[:3]] == [0, 0, 1]


def test_a_session_is_final_once_the_punctuation_is_past_last_plus_gap(spark: Any) -> None:
    # SLACK 0: p = max seen. 5 s joins 0 s (a gap of exactly GAP joins): [0, 10), open while p = 5 s. 10.5 s
    # starts a new session and moves p past 5 + 5: [0, 10) is final in trigger 2.
    text = "SELECT count(*) AS n FROM s [SESSION GAP 5 SECONDS WATTR ts]"
    got, _ = emitted(spark, text, [[row(0)], [row(5)], [row(10.5)]])
    assert got == [(2, 0.0, 10.0, 2), ("drain", 10.5, 15.5, 1)]


THRESHOLD = "SELECT count(*) AS n FROM s [FRAME THRESHOLD (v < 1) WATTR ts SLACK 10 SECONDS]"


def test_a_tuple_out_of_order_splits_a_threshold_frame(spark: Any) -> None:
    # Trigger 0: 0, 2 and 4 s hold v < 1, one frame so far. Trigger 1: 3 s with v = 5 arrives (not late) and
    # splits it into [0, 2] and [4, 4]; 20 s (v = 5) moves p to 10 s, which reaches 3 s, the tuple that closed
    # [0, 2]: final. [4, 4] is closed by 20 s, past p: it is emitted by the drain.
    got, _ = emitted(spark, THRESHOLD, [[row(0, v=0.0), row(2, v=0.0), row(4, v=0.0)], [row(3, v=5.0), row(20, v=5.0)]])
    assert got == [(1, 0.0, 2.0, 2), ("drain", 4.0, 4.0, 1)]


def test_a_frame_is_final_once_the_punctuation_is_past_its_closing_tuple(spark: Any) -> None:
    # SLACK 0: after trigger 0 p = 3 s. The tuple that closes [0, 3] arrives in trigger 1 at 3 s, exactly the
    # punctuation: on time, after the earlier 3 s in arrival order. p stays 3 s, not past it: the frame is
    # still open (it was not final in trigger 0 either, before its closing tuple came); 4 s makes it final.
    text = "SELECT count(*) AS n FROM s [FRAME THRESHOLD (v < 1) WATTR ts]"
    batches = [[row(0, v=0.0), row(1, v=0.0), row(3, v=0.0)], [row(3, v=5.0)], [row(4, v=5.0)]]
    got, _ = emitted(spark, text, batches)
    assert got == [(2, 0.0, 3.0, 3)]


def test_an_aggregate_frame_is_closed_by_its_own_last_tuple(spark: Any) -> None:
    # sum(v) > 2 first holds at 2 s: [0, 2] is closed there, before any tuple after it, and final once p is
    # past 2 s (trigger 2).
    text = "SELECT count(*) AS n FROM s [FRAME AGGREGATE (sum(v) > 2) WATTR ts]"
    got, _ = emitted(spark, text, [[row(0, v=1.0), row(1, v=1.0)], [row(2, v=1.0)], [row(3, v=1.0)]])
    assert got == [(2, 0.0, 2.0, 3), ("drain", 3.0, 3.0, 1)]


@pytest.mark.parametrize("plan", ["fold", "scan"])
def test_a_delta_frame_closed_by_a_null_is_emitted_beside_other_keys(spark: Any, plan: str) -> None:
    # Per case_id, DELTA 3 on x, SLACK 0. Key 0: 0 s (x 0) is closed by 1 s (x 10): final in trigger 0 (p = 3 s).
    # Key 1: 2 s (x 0) is closed by the NULL x at 3 s, which is in no frame; final once p passes 3 s, in
    # trigger 1. Key 0's frame from 1 s stays open until the drain. The fold once read the closing tuple of
    # key 1's frame at the wrong index when another key or a row in no frame came before it, and lost it.
    def at(case_id: int, second: float, x: int | None) -> dict[str, Any]:
        return {**row(second), "case_id": case_id, "x": x}

    text = "SELECT count(*) AS n FROM s [FRAME DELTA 3 ON x WATTR ts PATTR case_id]"
    batches = [[at(0, 0, 0), at(0, 1, 10), at(1, 2, 0), at(1, 3, None)], [at(0, 10, 10)]]
    got, _ = run(spark, compile_stream(text, plan), batches)
    out = sorted((str(r["_trigger"]), r["case_id"], (r["window_start"] - BASE).total_seconds(), r["n"]) for r in got)
    assert out == [("0", 0, 0.0, 1), ("1", 1, 2.0, 1), ("drain", 0, 1.0, 2)]


# SLACK … GENEROUS (semantics.md §8.5): a late tuple after the point its key's last final window closes the
# key's history up to is placed exactly, as if on time; one at or before that point is in no window.


def test_generous_a_late_tuple_merges_open_sessions_or_makes_one_final_at_once(spark: Any) -> None:
    # GAP 5, SLACK 10. Trigger 0: 0, 20, 27, 34 are four sessions; p = 34 − 10 = 24 > 0 + 5, so [0, 5) is final
    # and emitted, and closes the history up to 5: a late tuple joins no final session only above 5.
    # Trigger 1 (all three below p = 24, late): 3 ≤ 5 would join [0, 5): in no window. 23 > 5 is admitted and
    # joins 20 and 27 (3 and 4 apart) into one session [20, 32). 12 > 5 is admitted, 8 from 20: a session of
    # its own, [12, 17), which is final at once (p ≥ 17) and emitted in this trigger, though p had passed it
    # before the trigger began. 60 moves p to 50: [20, 32) and [34, 39) are final; the drain emits [60, 65).
    text = "SELECT count(*) AS n FROM s [SESSION GAP 5 SECONDS WATTR ts SLACK 10 SECONDS GENEROUS]"
    got, reports = emitted(spark, text, [[row(0), row(20), row(27), row(34)], [row(3), row(23), row(12), row(60)]])
    assert got == [
        (0, 0.0, 5.0, 1),
        (1, 12.0, 17.0, 1),
        (1, 20.0, 32.0, 3),
        (1, 34.0, 39.0, 1),
        ("drain", 60.0, 65.0, 1),
    ]
    assert [r["late"] for r in reports[:2]] == [0, 3]


def test_generous_a_late_tuple_after_a_threshold_frame_is_placed_between_tuples_in_no_frame(spark: Any) -> None:
    # THRESHOLD (v < 1), SLACK 10. Trigger 0: 0 and 1 hold, 2, 5 and 8 do not, 12 holds, 25 does not: frames
    # [0, 1] (closed by 2) and [12, 12] (closed by 25); p = 15 > 2, so [0, 1] is final and emitted, and its
    # closing tuple, 2, closes the history. The state keeps every tuple after [0, 1]: 2, 5 and 8 too.
    # Trigger 1 (below p = 15, late): 1.5 (holds) comes before 2: it would join [0, 1], in no window. 2 (holds)
    # has the value of the closing tuple but arrives after it, so sorts after it: admitted, a frame [2, 2]
    # closed by 5. 6 (holds) is admitted between 5 and 8: a frame [6, 6] closed by 8 (not [6, 12], as it would
    # be were 8 not kept). Both are final at once; 40 (does not hold) moves p to 30, past 25: [12, 12] too.
    text = "SELECT count(*) AS n FROM s [FRAME THRESHOLD (v < 1) WATTR ts SLACK 10 SECONDS GENEROUS]"
    first = [row(0, v=0.0), row(1, v=0.0), row(2, v=5.0), row(5, v=5.0), row(8, v=5.0), row(12, v=0.0), row(25, v=5.0)]
    second = [row(1.5, v=0.0), row(2, v=0.0), row(6, v=0.0), row(40, v=5.0)]
    got, reports = emitted(spark, text, [first, second])
    assert got == [(0, 0.0, 1.0, 2), (1, 2.0, 2.0, 1), (1, 6.0, 6.0, 1), (1, 12.0, 12.0, 1)]
    assert [r["late"] for r in reports[:2]] == [0, 3]


def test_generous_a_late_tuple_moves_the_end_of_an_open_aggregate_frame(spark: Any) -> None:
    # AGGREGATE (sum(v) > 2), SLACK 10, v = 1 unless said. Trigger 0: 0, 1, 2 make [0, 2] (the sum reaches 3 at
    # 2, its own closing tuple); 3, 4 and 20 (v 0.5) make [3, 20], closed at 20; p = 10 > 2: [0, 2] is final and
    # emitted, and closes the history up to 2. Trigger 1 (below p = 10, late): 1.5 would join [0, 2]: in no
    # window. 3.5 is admitted: the frame from 3 now reaches 3 at 4, [3, 4], and 20 starts the next one. 40
    # (v 0.1) moves p to 30 > 4: [3, 4] is final; [20, 40] (sum 0.6) is closed by nothing and the drain emits it.
    text = "SELECT count(*) AS n FROM s [FRAME AGGREGATE (sum(v) > 2) WATTR ts SLACK 10 SECONDS GENEROUS]"
    first = [row(0), row(1), row(2), row(3), row(4), row(20, v=0.5)]
    got, reports = emitted(spark, text, [first, [row(1.5), row(3.5), row(40, v=0.1)]])
    assert got == [(0, 0.0, 2.0, 3), (1, 3.0, 4.0, 3), ("drain", 20.0, 40.0, 2)]
    assert [r["late"] for r in reports[:2]] == [0, 2]
