"""`wql explain --draw`: a picture of the first windows over a sample of the stream, from the reference
evaluator's extents. For every example query the SVG parses, holds one bar per window shown with the
window's wid, and the bars are the windows the reference reports; text in it is escaped."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

import wql
from tests.conftest import EXAMPLES, ROOT
from tests.test_repl import NoSpark
from wql.cli import main
from wql.repl import Repl
from wql.runtime.reference import evaluate_query
from wql.runtime.sample import sample

SVG = "{http://www.w3.org/2000/svg}"
QUERIES = [
    (path, statement.query_number)
    for path in sorted(EXAMPLES.rglob("*.wql"))
    for statement in wql.load(str(path)).queries
]


def bars(svg: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter(f"{SVG}rect") if e.get("class") == "window"]


@pytest.mark.parametrize(("path", "number"), QUERIES, ids=lambda v: str(v).replace(str(EXAMPLES), "examples"))
def test_every_example_query_draws_its_first_windows(path: Path, number: int) -> None:
    statement = wql.load(str(path)).query(number)
    assert statement.query is not None
    drawing = wql.draw_statement(statement)
    drawn = bars(drawing.svg)
    assert 0 < len(drawn) == len(drawing.windows) <= 12
    assert [b.get("data-wid") for b in drawn] == [w.wid for w in drawing.windows]
    assert drawing.tuples > 0 and all(w.end >= w.start for w in drawing.windows)
    # The bars are windows the reference reports for the same sample (HAVING and LIMIT aside: they
    # drop result rows, not windows).
    query = statement.query
    if query.having is None and query.limit is None:
        reported = evaluate_query(query, sample(query).rows)
        wids = {str(row["wid"]).split(".")[0] for row in reported}
        assert {w.wid.split(".")[0] for w in drawing.windows} <= wids


def test_partial_windows_at_the_edges_are_dashed() -> None:
    """RANGE 3 ROWS SLIDE 1 ROW over 5 rows: windows 0 and 1 start before row 0, 5 and 6 run past row 4."""
    text = "CREATE STREAM s (k STRING, v DOUBLE);\nSELECT count(*) AS n FROM s [RANGE 3 ROWS SLIDE 1 ROW];\n"
    [statement] = wql.analyze(text).queries
    from wql.runtime.drawing import draw
    from wql.runtime.sample import Sample

    rows = [{"k": "a", "v": float(i)} for i in range(5)]
    drawing = draw(statement.query, Sample(rows, "five rows", whole=True))  # type: ignore[arg-type]
    assert [(w.wid, w.tuples, w.partial) for w in drawing.windows] == [
        ("0", 1, True),
        ("1", 2, True),
        ("2", 3, False),
        ("3", 3, False),
        ("4", 3, False),
        ("5", 2, True),
        ("6", 1, True),
    ]
    dashed = [b for b in bars(drawing.svg) if b.get("stroke-dasharray")]
    assert len(dashed) == 4


def test_text_in_the_picture_is_escaped() -> None:
    text = (
        'CREATE STREAM `a<b>&c` (`k"<x>` STRING, ts TIMESTAMP);\n'
        'SELECT count(*) AS n FROM `a<b>&c` [RANGE 1 MINUTE PATTR `k"<x>`];\n'
    )
    [statement] = wql.analyze(text).queries
    svg = wql.draw_statement(statement).svg
    root = ET.fromstring(svg)  # parses: nothing unescaped
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert any("a<b>&c" in t for t in texts) and any('k"<x>=a' in t for t in texts)


def test_cli_explain_draw_writes_the_svg(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "windows.svg"
    assert main(["explain", str(EXAMPLES / "paper" / "q1.wql"), "--draw", str(target)]) == 0
    err = capsys.readouterr().err
    assert f"drew {target}: the first 12 of" in err and "traffic.csv" in err
    assert 0 < len(bars(target.read_text(encoding="utf-8"))) <= 12


def test_the_readme_picture_is_drawn_by_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/images/windows.svg is what `wql explain examples/paper/q1.wql --draw` draws, never a hand edit."""
    monkeypatch.chdir(ROOT)
    target = tmp_path / "windows.svg"
    assert main(["explain", "examples/paper/q1.wql", "--draw", str(target)]) == 0
    capsys.readouterr()
    assert (ROOT / "docs" / "images" / "windows.svg").read_text(encoding="utf-8") == target.read_text(encoding="utf-8")


def test_the_repl_draws_the_last_query_or_a_given_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES)
    monkeypatch.setenv("WQL_REPL_PRESTART", "0")
    buffer = io.StringIO()
    repl = Repl(Console(file=buffer, width=200, color_system=None, force_terminal=False), spark=NoSpark())
    repl.handle(
        "CREATE STREAM traffic (seg_id STRING, speed DOUBLE, ts TIMESTAMP)\n"
        "  FROM 'data/traffic.csv' FORMAT csv OPTIONS (header = true);"
    )
    target = tmp_path / "w.svg"
    repl.handle(f"\\draw {target} SELECT seg_id, count(*) AS n FROM traffic [SESSION GAP 2 MINUTES PATTR seg_id];")
    assert f"drew {target}" in buffer.getvalue(), buffer.getvalue()
    assert 0 < len(bars(target.read_text(encoding="utf-8"))) <= 12


def _label_bounds(svg: str) -> list[tuple[str, float, float]]:
    """Each text's horizontal extent, at the 7 pixels a character the drawing itself counts with."""
    found = []
    for text in ET.fromstring(svg).iter(f"{SVG}text"):
        content, x, anchor = text.text or "", float(text.get("x", "0")), text.get("text-anchor")
        width = 7 * len(content)
        left = x - width if anchor == "end" else x - width / 2 if anchor == "middle" else x
        found.append((content, left, left + width))
    return found


def test_the_window_count_is_the_querys_and_every_label_stays_in_the_picture() -> None:
    """PATTR over more partitions than the picture has lanes: the summary counts every window the query makes
    over the sample, not those of the lanes drawn; and a label of a bar that spans the axis stays inside."""
    from wql.runtime.drawing import MAX_LANES, WIDTH, draw
    from wql.runtime.sample import Sample

    text = "CREATE STREAM s (k STRING, v DOUBLE);\nSELECT k, count(*) AS n FROM s [RANGE 5 ROWS SLIDE 1 ROW PATTR k];\n"
    [statement] = wql.analyze(text).queries
    assert statement.query is not None
    keys = [f"key-{index:02d}" for index in range(MAX_LANES + 4)]
    rows = [{"k": key, "v": float(i)} for i in range(3) for key in keys]
    drawing = draw(statement.query, Sample(rows, "ten keys", whole=True))
    reported = {(row["k"], row["wid"]) for row in evaluate_query(statement.query, rows)}
    assert drawing.total == len(reported) == len(keys) * 7
    assert f"of {len(reported)} windows" in drawing.summary()
    outside = [(t, a, b) for t, a, b in _label_bounds(drawing.svg) if a < 0 or b > WIDTH]
    assert outside == []
