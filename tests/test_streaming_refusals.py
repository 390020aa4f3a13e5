"""What a stream cannot do exactly yet is refused with the reason, never run approximately."""

from __future__ import annotations

import pytest

import wql
from tests.streaming import compile_stream
from wql.grammar.errors import WQLNotSupportedError

REFUSED = {
    "SELECT count(*) AS n FROM s [RANGE 10 SECONDS WATTR ts] LIMIT 3": "LIMIT on a stream",
    "SELECT count(*) AS n FROM s [RANGE 10 SECONDS WATTR ts] EMIT EMPTY": "EMIT EMPTY on a stream",
    "SELECT count(*) AS n FROM s [RANGE 10 SECONDS WATTR ts] HAVING count(*) < 3 EMIT CHANGES": (
        "EMIT CHANGES with HAVING: a window whose version passed HAVING can stop passing it"
    ),
    "SELECT count(*) AS n FROM s [RANGE 10 SECONDS RATTR ts SLIDE 2 ROWS SATTR rank(ts)] EMIT CHANGES": (
        "EMIT CHANGES of windows named by rank"
    ),
    "SELECT count(*) AS n FROM s [SESSION GAP 5 SECONDS WATTR ts] HAVING count(*) < 3 EMIT CHANGES": (
        "EMIT CHANGES with HAVING: a window whose version passed HAVING can stop passing it"
    ),
    "SELECT avg(v) AS a FROM s [FRAME DELTA 5 ON v WATTR ts] EMIT CHANGES": (
        "EMIT CHANGES of delta-frame windows: a tuple that arrives out of order can split a frame"
    ),
    "SELECT count(*) AS n FROM s [FRAME THRESHOLD (v > 1) WATTR ts] EMIT CHANGES": (
        "EMIT CHANGES of threshold-frame windows"
    ),
    "SELECT count(*) AS n FROM s [SNAPSHOT WATTR (x, y) PATTR case_id] EMIT CHANGES": (
        "EMIT CHANGES of snapshot windows: an event still to come can add an endpoint inside an open snapshot"
    ),
    "SELECT count(*) AS n FROM s [SNAPSHOT WATTR (x, y) SLACK 5 GENEROUS]": (
        "SLACK … GENEROUS with snapshot windows: a late event starts before the punctuation, inside snapshots"
    ),
    "SELECT count(*) AS n FROM s [RANGE 10 SLIDE 5 WATTR (x, y) SNAP] EMIT CHANGES": (
        "EMIT CHANGES with SNAP: a run of windows still open can grow or be cut"
    ),
    "SELECT count(*) AS n FROM s [RANGE 10 SLIDE 5 WATTR (x, y) SNAP SLACK 3 GENEROUS]": (
        "SLACK … GENEROUS with SNAP: a late event joining the open windows would change runs"
    ),
}


@pytest.mark.parametrize("text", sorted(REFUSED))
def test_refused_with_the_reason(text: str) -> None:
    with pytest.raises(WQLNotSupportedError, match=REFUSED[text]):
        compile_stream(text).stream_code  # noqa: B018 - compiling is the act under test


def test_snapshot_windows_and_snap_run_on_a_stream() -> None:
    """Once refused; now a stream emits each snapshot when the punctuation reaches its end, and each SNAP
    run when the window after it is final (§8.10)."""
    compiled = compile_stream("SELECT count(*) AS n FROM s [SNAPSHOT WATTR (x, y) PATTR case_id CLIP SLACK 2]")
    assert 'return F.col("_pnext").isNotNull() & (F.col("_pnext") <= punctuation)' in compiled.stream_code
    snap = compile_stream("SELECT count(*) AS n FROM s [RANGE 10 SLIDE 5 WATTR (x, y) SNAP SLACK 2]")
    assert 'return (ORIGIN + (F.col("_wend") + 2) * SLIDE <= punctuation) & ~grows' in snap.stream_code


@pytest.mark.parametrize(
    "spec", ["SESSION GAP 5 SECONDS", "SESSION GAP 5 SECONDS KAFKA", "SESSION GAP 5 SECONDS MAX 1 MINUTE"]
)
def test_sessions_run_with_emit_changes_and_retract(spec: str) -> None:
    """Once refused; now a session query's stream job retracts the versions whose session is gone (§8.7),
    by the windows stage's wid and keys, and explain says what wql_change means."""
    text = f"SELECT k, count(*) AS n FROM s [{spec} WATTR ts PATTR case_id SLACK 2 SECONDS] GROUP BY k EMIT CHANGES"
    compiled = compile_stream(text)
    assert '"retracts": ["wid", "case_id", "k"]' in compiled.stream_code
    [emit] = [line for line in compiled.stream_code.splitlines() if line.startswith("# Emit")]
    assert "wql_change 'retract'" in emit
    final = compile_stream(text.replace("EMIT CHANGES", "")).stream_code
    assert '"retracts": ' not in final


def test_punctuation_rows_with_a_row_num_window_are_refused() -> None:
    with pytest.raises(WQLNotSupportedError, match="PUNCTUATION WHEN with a window over row_num"):
        compile_stream("SELECT count(*) AS n FROM s [RANGE 4 ROWS]", punctuation="n = 0").stream_code  # noqa: B018


def test_explain_says_when_a_stream_emits_and_what_is_late() -> None:
    header = "CREATE STREAM s (k STRING, v DOUBLE, ts TIMESTAMP);\n"
    [facts] = [e.to_dict()["on_stream"] for e in wql.explain(header + GENEROUS)]
    assert facts["emit"].startswith("EMIT FINAL")
    assert facts["punctuation"] == "max ts seen − SLACK 30 SECONDS, after each trigger"
    assert "GENEROUS" in facts["late"] and "late-rows output" in facts["late"]
    assert facts["final"] == "a window [start, end) once the punctuation reaches end"
    assert facts["state"].startswith("cells of the open windows")
    [refused] = [e.to_dict()["on_stream"] for e in wql.explain(header + GENEROUS + " LIMIT 2")]
    assert refused == {"refused": "LIMIT on a stream: a stream's result has no end to count from"}


GENEROUS = (
    "SELECT k, sum(v) AS s FROM s [RANGE 1 MINUTE SLIDE 10 SECONDS WATTR ts SLACK 30 SECONDS GENEROUS] GROUP BY k"
)
