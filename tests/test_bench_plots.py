"""`make bench-plots`: the benchmarks' --json lines are recorded in benchmarks/results.jsonl, and the
charts of docs/performance.md are drawn from that file alone, never by hand."""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import ROOT


def load(name: str) -> ModuleType:
    """A benchmark script as a module, without putting benchmarks/ on sys.path."""
    spec = importlib.util.spec_from_file_location(f"wql_bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


plots, record = load("plots"), load("record")

RESULTS = ROOT / "benchmarks" / "results.jsonl"
PERFORMANCE = ROOT / "docs" / "performance.md"


def test_the_makefile_records_then_draws() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile[makefile.index("\nbench-plots:") :].split("\n\n")[0]
    assert "benchmarks/record.py --results benchmarks/results.jsonl" in recipe
    assert "benchmarks/plots.py --results benchmarks/results.jsonl --out docs/images" in recipe


def test_every_benchmark_has_recorded_lines_and_every_chart_is_drawn_from_them() -> None:
    rows = [json.loads(line) for line in RESULTS.read_text(encoding="utf-8").splitlines()]
    assert {row["benchmark"] for row in rows} == set(record.BENCHMARKS)
    assert all("load" in row and row["args"] == record.BENCHMARKS[row["benchmark"]][1:] for row in rows)
    charts = re.findall(r"\]\(images/(\w+)\.png\)", PERFORMANCE.read_text(encoding="utf-8"))
    assert set(charts) == set(plots.CHARTS)  # each chart in the doc is one plots.py draws
    for name in charts:
        assert (ROOT / "docs" / "images" / f"{name}.png").exists()


def test_the_tables_come_from_the_same_lines() -> None:
    """The figures in docs/performance.md's tables are the recorded ones (rounded)."""
    rows = [json.loads(line) for line in RESULTS.read_text(encoding="utf-8").splitlines()]
    text = PERFORMANCE.read_text(encoding="utf-8")
    for row in rows:
        for key in (
            "wql_s",
            "native_s",
            "over_s",
            "flink_batch_s",
            "flink_streaming_s",
            "wql_stream_s",
            "native_stream_s",
        ):
            if row.get(key) is not None:
                assert f"{row[key]:.2f} s" in text or f"{row[key]:.1f} s" in text, (row["benchmark"], key, row[key])


def test_the_charts_redraw_from_the_saved_lines(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "plots.py"), "--results", str(RESULTS), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for name in plots.CHARTS:
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_axis_prints_labels_over_each_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every chart's tick labels (a log axis's minor ones too) are apart: none overlaps its neighbour."""
    pytest.importorskip("matplotlib")
    figures: list[Any] = []
    monkeypatch.setattr(plots, "save", lambda fig, path, note: figures.append((path.name, fig)))
    rows = plots.lines(RESULTS)
    assert all(chart(rows, tmp_path) for chart in plots.CHARTS.values())
    overlaps = []
    for name, fig in figures:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for axis in fig.axes:
            for which, ticks in (("x", axis.xaxis), ("y", axis.yaxis)):
                labels = [
                    t
                    for t in (*ticks.get_majorticklabels(), *ticks.get_minorticklabels())
                    if t.get_visible() and t.get_text()
                ]
                shown = [(t.get_text(), t.get_window_extent(renderer)) for t in labels if _in_view(t, axis, which)]
                for (a, box_a), (b, box_b) in itertools.combinations(shown, 2):
                    if box_a.overlaps(box_b):
                        overlaps.append((name, which, a, b))
    assert overlaps == []


def _in_view(label: Any, axis: Any, which: str) -> bool:
    """A tick label matplotlib draws: its tick is within the axis's limits."""
    low, high = sorted(axis.get_xlim() if which == "x" else axis.get_ylim())
    value = label.get_position()[0 if which == "x" else 1]
    return bool(low <= value <= high)


def test_no_benchmark_hides_a_standard_library_module() -> None:
    """The benchmarks run as scripts, so their folder comes first on sys.path: a benchmarks/calendar.py hid
    the standard library's calendar from matplotlib's dateutil, and plots.py failed to import."""
    names = {path.stem for path in (ROOT / "benchmarks").glob("*.py")}
    assert not names & sys.stdlib_module_names
