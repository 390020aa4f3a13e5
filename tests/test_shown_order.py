"""Wherever rows are shown, they are in window order (wid, then the keys) unless the query has ORDER BY:
`wql run`, `python job.py`, a streaming job's console, `wql run --stream`, the REPL's \\stream."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from rich.console import Console

import wql
from wql.runtime.execute import load_job
from wql.stream_runner import Terminal

pytestmark = pytest.mark.spark

TEXT = """\
CREATE STREAM s (k STRING, v DOUBLE, ts TIMESTAMP) FROM 'nowhere' FORMAT csv;
SELECT k, sum(v) AS total FROM s [RANGE 1 MINUTE WATTR ts] GROUP BY k;
"""
# What a trigger or a batch might hand back: neither by window nor by key.
ROWS = [(2, "b", 1.0), (1, "b", 2.0), (2, "a", 3.0), (1, "c", 4.0), (1, "a", 5.0)]
IN_ORDER = [(1, "a"), (1, "b"), (1, "c"), (2, "a"), (2, "b")]


def shuffled(spark: Any) -> Any:
    frame = spark.createDataFrame(ROWS, "wid BIGINT, k STRING, total DOUBLE")
    return frame.repartition(3)


def printed(text: str) -> list[tuple[int, str]]:
    """(wid, k) of each table row printed by Spark's show() or a rich table."""
    return [(int(m.group(1)), m.group(2)) for m in re.finditer(r"^[|│]\s*(\d+)\s*[|│]\s*(\w)\s*[|│]", text, re.M)]


def test_a_batch_job_shows_rows_by_window_then_keys(spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    compiled = wql.compile(TEXT)
    assert 'SHOWN_IN = ("wid", "k")' in compiled.code and "shown_in_order(result).show(" in compiled.code
    module = load_job(compiled.code)
    assert [(r["wid"], r["k"]) for r in module.shown_in_order(shuffled(spark)).collect()] == IN_ORDER
    ordered = wql.compile(TEXT.replace("GROUP BY k;", "GROUP BY k ORDER BY total DESC;"))
    assert "SHOWN_IN = ()" in ordered.code


def test_a_streams_console_and_terminal_show_windows_by_window_then_keys(
    spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    compiled = wql.compile(TEXT)
    module = load_job(compiled.stream_code)
    assert module.console_sink()(shuffled(spark), "trigger 1") == len(ROWS)
    assert printed(capsys.readouterr().out) == IN_ORDER

    buffer = io.StringIO()
    out = Console(file=buffer, width=120, color_system=None, force_terminal=False)
    terminal = Terminal(("wid", "k", "total"), out, out, 20, compiled.in_window_order)
    terminal.sink(shuffled(spark), 1)
    assert printed(buffer.getvalue()) == IN_ORDER
