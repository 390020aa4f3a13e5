"""Streams whose state Spark's state store keeps (docs/semantics.md §8.12): the same windows and late rows
as the engine that keeps its state in the checkpoint's own files, on real Structured Streaming runs.

The files engine is checked against the trigger model (test_streaming.py); here each random stream (grid
windows, kept by StreamCells, or sessions, by StreamSessions) runs through both engines, one file a trigger
and then drained, and their outputs must be equal as multisets: every window once (EMIT FINAL) or every
version once (EMIT CHANGES), and every late or malformed row once.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import wql
from tests.conftest import SPARK
from tests.test_stream_faults import moment, rows_of
from wql.runtime.execute import load_job

pytestmark = pytest.mark.spark

DECLARATION = (
    "CREATE STREAM ev (ts TIMESTAMP, x BIGINT, k STRING, v DOUBLE) FROM '{path}' FORMAT csv "
    "OPTIONS (header = 'true'){punctuation};\n"
)


def land(folder: Path, name: str, lines: list[str], order: int) -> None:
    """A csv file as an upstream writer leaves it: whole, with a later mtime than the ones before."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("ts,x,k,v\n" + "".join(line + "\n" for line in lines))
    os.utime(path, (1_700_000_000 + 10 * order, 1_700_000_000 + 10 * order))


@contextlib.contextmanager
def engine(spark: Any, name: str) -> Iterator[None]:
    """Run streams started inside with `spark.wql.stream.state` = name ("store" or "files")."""
    before = spark.conf.get("spark.wql.stream.state", None)
    spark.conf.set("spark.wql.stream.state", name)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset("spark.wql.stream.state")
        else:
            spark.conf.set("spark.wql.stream.state", before)


def run(spark: Any, job: Any, root: Path, name: str) -> tuple[Counter[tuple[str, ...]], Counter[tuple[str, ...]], dict]:
    """One stream of the job over root/in with the named engine, one file a trigger, then drained: its
    windows, its late-rows output and the meta of its last trigger."""
    out, late, checkpoint = root / name / "out", root / name / "late", root / name / "ck"
    emit = job.file_sink(str(out), "csv")
    with engine(spark, name):
        running = job.start_stream(spark, emit, str(checkpoint), {}, str(late), "csv", True, None, 1)
        job.await_stream(running)
        job.drain_stream(spark, str(checkpoint), emit)
    metas = sorted((checkpoint / "wql").glob("meta-*.json"))
    return rows_of(out), rows_of(late), json.loads(metas[-1].read_text()) if metas else {}


@st.composite
def streams(draw: st.DrawFn) -> tuple[str, list[list[str]]]:
    """A grid query the state store takes (StreamCells) and its rows in files, in arrival order with some
    disorder."""
    ratio = draw(st.integers(1, 4))
    slide = draw(st.sampled_from([2, 3, 5]))
    size = slide * ratio + draw(st.sampled_from([0, 0, 1]))  # a slice plan when RANGE is no multiple
    if size == slide:  # a tumbling window takes the bucket plan, whose state stays in files
        size += slide
    attr, unit = draw(st.sampled_from([("ts", " SECONDS"), ("x", "")]))
    slack = draw(st.sampled_from(["", f"SLACK 0{unit}", f"SLACK 3{unit}", f"SLACK 2{unit} GENEROUS"]))
    keyed = draw(st.booleans())
    emit = draw(st.sampled_from(["", "", "EMIT CHANGES"]))
    punctuation = draw(st.sampled_from(["", "", " PUNCTUATION WHEN (k = 'p')"])) if slack == "" else ""
    select = "count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi, avg(v) AS mean"
    query = (
        f"SELECT {'k, ' if keyed else ''}{select} FROM ev "
        f"[RANGE {size}{unit} SLIDE {slide}{unit} WATTR {attr} {slack}] {'GROUP BY k' if keyed else ''} {emit}"
    )
    seconds = draw(st.lists(st.integers(0, 40), min_size=1, max_size=30))
    seconds.sort()
    for _ in range(draw(st.integers(0, 4))):  # a few rows out of place: some are late
        i, j = draw(st.integers(0, len(seconds) - 1)), draw(st.integers(0, len(seconds) - 1))
        seconds[i], seconds[j] = seconds[j], seconds[i]
    lines = [
        f"{moment(s)},{s},{draw(st.sampled_from('ab'))},{draw(st.sampled_from(['', '1', '2.5', '-4']))}"
        for s in seconds
    ]
    if punctuation:  # a punctuation row moves time by itself; without one the stream is ordered
        at = draw(st.integers(0, len(lines)))
        lines.insert(at, f"{moment(45)},45,p,")
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), "not a time,x,a,1")
    cuts = sorted(draw(st.lists(st.integers(1, max(1, len(lines) - 1)), max_size=3, unique=True)))
    files = [lines[a:b] for a, b in zip([0, *cuts], [*cuts, len(lines)], strict=True) if lines[a:b]]
    return DECLARATION.replace("{punctuation}", punctuation) + query, files


@st.composite
def session_streams(draw: st.DrawFn) -> tuple[str, list[list[str]]]:
    """A session query the state store takes (StreamSessions: CONSISTENT with EMIT FINAL or CHANGES, or GENEROUS
    with EMIT FINAL; no MAX) and its rows in files, in arrival order with some disorder: late tuples (placed past
    their key's closing point under GENEROUS), tuples that bridge two sessions or move one's start (with EMIT
    CHANGES, a merge takes versions back)."""
    attr, unit = draw(st.sampled_from([("ts", " SECONDS"), ("x", "")]))
    gap = draw(st.sampled_from([0, 2, 5]))
    slack = draw(st.sampled_from(["", f"SLACK 0{unit}", f"SLACK 4{unit}", f"SLACK 9{unit}", f"SLACK 3{unit} GENEROUS"]))
    keyed = draw(st.booleans())
    kafka = draw(st.sampled_from(["", "", " KAFKA"]))
    where = draw(st.sampled_from(["", "", " WHERE v > 0"]))
    emit = "" if "GENEROUS" in slack else draw(st.sampled_from(["", "", " EMIT CHANGES"]))
    punctuation = draw(st.sampled_from(["", "", " PUNCTUATION WHEN (k = 'p')"])) if slack == "" else ""
    select = "count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi, avg(v) AS mean, stddev(v) AS sd"
    window = f"SESSION GAP {gap}{unit}{kafka} WATTR {attr} {slack}{' PATTR k' if keyed else ''}"
    query = f"SELECT {'k, ' if keyed else ''}{select} FROM ev [{window}]{where}{emit}"
    seconds = draw(st.lists(st.integers(0, 60), min_size=1, max_size=30))
    seconds.sort()
    for _ in range(draw(st.integers(0, 4))):  # a few rows out of place: some late, some bridging sessions
        i, j = draw(st.integers(0, len(seconds) - 1)), draw(st.integers(0, len(seconds) - 1))
        seconds[i], seconds[j] = seconds[j], seconds[i]
    lines = [
        f"{moment(s)},{s},{draw(st.sampled_from('ab'))},{draw(st.sampled_from(['', '1', '2.5', '-4']))}"
        for s in seconds
    ]
    if punctuation:
        lines.insert(draw(st.integers(0, len(lines))), f"{moment(45)},45,p,")
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), "not a time,x,a,1")
    cuts = sorted(draw(st.lists(st.integers(1, max(1, len(lines) - 1)), max_size=3, unique=True)))
    files = [lines[a:b] for a, b in zip([0, *cuts], [*cuts, len(lines)], strict=True) if lines[a:b]]
    return DECLARATION.replace("{punctuation}", punctuation) + query, files


@SPARK
@given(case=st.one_of(streams(), session_streams()))
def test_the_state_store_engine_emits_what_the_files_engine_emits(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, case: tuple[str, list[list[str]]]
) -> None:
    both_engines(spark, tmp_path_factory, case)


@pytest.mark.parametrize("window", ["RANGE 10 SLIDE 5", "RANGE 7 SLIDE 5"])
def test_a_late_row_under_generous_slack_misses_the_windows_final_before_its_trigger(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, window: str
) -> None:
    """x = 15 arrives after the punctuation reached 23: the window ending at 20 that holds it was final before
    its trigger, though the state store emits it in that trigger (Spark moves its watermark between
    triggers), so it must be closed before the trigger's rows join its cells (a pane it shares with the
    open [15, 25), or a slice of its own)."""
    query = f"SELECT k, count(*) AS n, sum(v) AS total FROM ev [{window} WATTR x SLACK 2 GENEROUS] GROUP BY k"
    text = DECLARATION.replace("{punctuation}", "") + query
    first = [f"{moment(x)},{x},a,1" for x in (8, 14, 25, 20)]
    both_engines(spark, tmp_path_factory, (text, [first, [f"{moment(15)},15,a,-4", f"{moment(33)},33,a,2"]]))


def test_generous_sessions_place_late_tuples_past_their_keys_closing_point(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """GENEROUS sessions on the state store (§8.5): after the first file the punctuation is 10, a's session
    [1, 2] and b's [1] are final, so a's closing point is 4 and b's 3. Then a's late 3 is in no session, a's
    late 6 starts a session final at once (out in that trigger), a's late 9 joins the open [10], and b's late
    5 starts one of its own: three late rows placed, one missed, the same windows and late rows on both
    engines."""
    query = "SELECT k, count(*) AS n, sum(v) AS total FROM ev [SESSION GAP 2 WATTR x SLACK 0 GENEROUS PATTR k]"
    first = [f"{moment(x)},{x},{k},1" for x, k in ((1, "a"), (2, "a"), (10, "a"), (1, "b"))]
    second = [f"{moment(x)},{x},{k},2" for x, k in ((3, "a"), (6, "a"), (9, "a"), (5, "b"), (12, "a"))]
    windows, late = both_engines(
        spark, tmp_path_factory, (DECLARATION.replace("{punctuation}", "") + query, [first, second])
    )
    placed = [row for row in late.elements() if any("placed in its key's open sessions" in f for f in row)]
    assert len(placed) == 3 and sum(late.values()) == 4, late
    assert sorted((row[3], row[4]) for row in windows.elements()) == [
        ("a", "1"),  # 6, placed, final at once
        ("a", "2"),  # 1, 2
        ("a", "3"),  # 9, 10, 12
        ("b", "1"),  # 1
        ("b", "1"),  # 5, placed
    ], windows


def both_engines(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, case: tuple[str, list[list[str]]]
) -> tuple[Counter[tuple[str, ...]], Counter[tuple[str, ...]]]:
    """The stream of `case` through each engine: the same windows and late rows (returned)."""
    text, files = case
    root = tmp_path_factory.mktemp("stream")
    for order, lines in enumerate(files):
        land(root / "in", f"part-{order}.csv", lines, order)
    job = load_job(wql.compile(text.format(path=root / "in"), stream=True).stream_code)
    store_windows, store_late, store_meta = run(spark, job, root, "store")
    files_windows, files_late, files_meta = run(spark, job, root, "files")
    assert "store" in store_meta and "store" not in files_meta, text
    assert store_windows == files_windows, text
    assert store_late == files_late, text
    return store_windows, store_late


def test_a_checkpoint_refuses_the_other_engine_in_one_line(spark: Any, tmp_path: Path) -> None:
    """Neither engine can read the other's state: a run with the other says which to use."""
    text = DECLARATION.replace("{punctuation}", "") + (
        "SELECT count(*) AS n FROM ev [RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts SLACK 2 SECONDS]"
    )
    land(tmp_path / "in", "part-0.csv", [f"{moment(s)},{s},a,1" for s in range(10)], 0)
    job = load_job(wql.compile(text.format(path=tmp_path / "in"), stream=True).stream_code)
    emit = job.file_sink(str(tmp_path / "out"), "csv")
    checkpoint = str(tmp_path / "ck")
    with engine(spark, "store"):
        job.await_stream(job.start_stream(spark, emit, checkpoint, {}, None, "csv", True, None, 1))
    with (
        engine(spark, "files"),
        pytest.raises(
            ValueError, match=r"keeps its state in Spark's state store: run it with spark.wql.stream.state=store"
        ),
    ):
        job.start_stream(spark, emit, checkpoint, {}, None, "csv", True, None, 1)


def test_a_stream_begun_in_files_goes_on_there_unless_told_otherwise(spark: Any, tmp_path: Path) -> None:
    """A checkpoint whose state is in WQL's own files (a stream an earlier WQL began there, before the state
    store took its query) goes on in them when no engine is set: every window once, as in one run."""
    text = DECLARATION.replace("{punctuation}", "") + (
        "SELECT k, count(*) AS n FROM ev [SESSION GAP 2 SECONDS WATTR ts SLACK 0 SECONDS PATTR k]"
    )
    land(tmp_path / "in", "part-0.csv", [f"{moment(s)},{s},a,1" for s in (0, 1, 5)], 0)
    job = load_job(wql.compile(text.format(path=tmp_path / "in"), stream=True).stream_code)
    emit = job.file_sink(str(tmp_path / "out"), "csv")
    checkpoint = str(tmp_path / "ck")
    with engine(spark, "files"):
        job.await_stream(job.start_stream(spark, emit, checkpoint, {}, None, "csv", True, None, 1))
    land(tmp_path / "in", "part-1.csv", [f"{moment(s)},{s},a,1" for s in (6, 12)], 1)
    assert spark.conf.get("spark.wql.stream.state", None) is None
    job.await_stream(job.start_stream(spark, emit, checkpoint, {}, None, "csv", True, None, 1))
    job.drain_stream(spark, checkpoint, emit)
    counts = sorted(row[-1] for row in rows_of(tmp_path / "out").elements())
    assert counts == ["1", "2", "2"], counts  # [0, 1], [5, 6], [12]
    metas = sorted((tmp_path / "ck" / "wql").glob("meta-*.json"))
    assert "store" not in json.loads(metas[-1].read_text())


def test_a_value_beyond_what_the_watermark_carries_names_the_setting(spark: Any, tmp_path: Path) -> None:
    text = DECLARATION.replace("{punctuation}", "") + (
        "SELECT count(*) AS n FROM ev [RANGE 10 SLIDE 5 WATTR x SLACK 2]"
    )
    land(tmp_path / "in", "part-0.csv", [f"{moment(1)},{1 << 55},a,1"], 0)
    job = load_job(wql.compile(text.format(path=tmp_path / "in"), stream=True).stream_code)
    emit = job.file_sink(str(tmp_path / "out"), "csv")
    with (
        engine(spark, "store"),
        pytest.raises(
            job.TriggerFailed, match=r"beyond what Spark's watermark carries .* spark.wql.stream.state=files"
        ),
    ):
        job.await_stream(job.start_stream(spark, emit, str(tmp_path / "ck"), {}, None, "csv", True, None, 1))


def test_a_tuple_at_the_punctuation_is_on_time_and_one_below_it_is_late(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The edge of lateness (§8.3) as StreamCells applies it: after the first file the punctuation is 9 s
    (SLACK 0); then a tuple at 9 s joins its windows and one at 8 s is late, in both engines alike."""
    text = DECLARATION.replace("{punctuation}", "") + (
        "SELECT k, count(*) AS n FROM ev [RANGE 4 SECONDS SLIDE 2 SECONDS WATTR ts SLACK 0 SECONDS] GROUP BY k"
    )
    root = tmp_path_factory.mktemp("edge")
    land(root / "in", "part-0.csv", [f"{moment(s)},{s},a,1" for s in range(10)], 0)
    land(root / "in", "part-1.csv", [f"{moment(9)},9,a,1", f"{moment(8)},8,a,1", f"{moment(12)},12,a,1"], 1)
    job = load_job(wql.compile(text.format(path=root / "in"), stream=True).stream_code)
    store_windows, store_late, _ = run(spark, job, root, "store")
    files_windows, files_late, _ = run(spark, job, root, "files")
    assert store_windows == files_windows
    assert store_late == files_late and [row[1] for row in store_late] == ["8"], store_late
    counts = {row[0]: row[-1] for row in store_windows.elements()}
    assert sorted(counts.values()).count("3") >= 1, store_windows  # the window holding 8 s, 9 s and 9 s


def test_a_checkpoint_whose_meta_names_the_functions_input_cells_is_drained(spark: Any, tmp_path: Path) -> None:
    """A trigger's meta names the schema of the rows the JVM function takes meta["store"]["input"]; WQL wrote it
    as "cells" before sessions took the state store too. A checkpoint whose meta says "cells" is drained from
    Spark's state store with the same windows as one written now."""
    text = DECLARATION.replace("{punctuation}", "") + (
        "SELECT k, count(*) AS n FROM ev [RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts SLACK 2 SECONDS] GROUP BY k"
    )
    land(tmp_path / "in", "part-0.csv", [f"{moment(s)},{s},{'ab'[s % 2]},1" for s in range(12)], 0)
    land(tmp_path / "in", "part-1.csv", [f"{moment(s)},{s},{'ab'[s % 2]},1" for s in range(12, 30)], 1)
    job = load_job(wql.compile(text.format(path=tmp_path / "in"), stream=True).stream_code)
    drained = {}
    for name in ("now", "before"):
        checkpoint, out = tmp_path / name / "ck", tmp_path / name / "out"
        emit = job.file_sink(str(out), "csv")
        with engine(spark, "store"):
            job.await_stream(job.start_stream(spark, emit, str(checkpoint), {}, None, "csv", True, None, 1))
        for path in (checkpoint / "wql").glob("meta-*.json"):
            meta = json.loads(path.read_text())
            assert set(meta["store"]) == {"input"}
            if name == "before":  # as WQL wrote it then
                path.write_text(json.dumps({**meta, "store": {"cells": meta["store"]["input"]}}, sort_keys=True))
        assert job.drain_stream(spark, str(checkpoint), emit) > 0
        drained[name] = rows_of(out)
    assert drained["before"] == drained["now"]
    assert sum(int(row[-1]) for row in drained["now"].elements()) == 60  # each tuple in two windows, once each
