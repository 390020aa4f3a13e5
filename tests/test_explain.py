"""`wql explain` and the Explanation it renders: classes of the paper's queries, JSON shape, goldens.

Goldens live in tests/golden/explain/; WQL_UPDATE_GOLDEN=1 rewrites them. Their
wids/extent formulas were checked by hand against docs/semantics.md §2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import wql
from tests.conftest import EXAMPLES, ROOT, check_golden
from wql.cli import main
from wql.compiler.explain import Explanation
from wql.display import explanation_renderable, plain_text

PAPER = {"q1": "CF", "q2": "CF", "q3": "FCB", "q4": "FCF", "q5": "FCU"}
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.wql")) + sorted((EXAMPLES / "paper").glob("*.wql"))

TOP_KEYS = {
    "number",
    "line",
    "query",
    "stream",
    "window",
    "kind",
    "class",
    "context",
    "class_reason",
    "wids",
    "extent",
    "aggregates",
    "columns",
    "plans",
    "plan",
    "see",
}
WINDOW_KEYS = {
    "spec",
    "kind",
    "range",
    "slide",
    "range_attribute",
    "slide_attribute",
    "partition_by",
    "slack",
    "defaults",
}

# Window kinds the example files do not cover; formulas checked by hand against docs/semantics.md §2.
KINDS = """\
CREATE STREAM calls (caller STRING, started TIMESTAMP, ended TIMESTAMP, cost DOUBLE,
                     m_from BIGINT, m_to BIGINT, day_of DATE);

SELECT count(*) AS n FROM calls [RANGE UNBOUNDED SLIDE 1 HOUR WATTR started];
SELECT sum(cost) AS total FROM calls [RANGE 10 MINUTES SLIDE 5 MINUTES WATTR (started, ended)];
SELECT max(cost) AS top FROM calls [RANGE 10 SLIDE 4 WATTR (m_from, m_to) ALIGN 3];
SELECT avg(cost) AS a FROM calls
  [RANGE 1 HOUR SLIDE 15 MINUTES WATTR started ALIGN START TIMESTAMP '2024-01-01 00:05:00' SLACK 30 SECONDS];
SELECT max(cost) AS m FROM calls [RANGE 10 SLIDE 20 WATTR m_from];
SELECT count(*) AS n, approx_count_distinct(caller) AS callers FROM calls [RANGE 7 DAYS SLIDE 1 DAY WATTR day_of];
SELECT caller, count(*) AS n FROM calls [RANGE UNBOUNDED SLIDE 10 ROWS PATTR caller];
SELECT caller, collect_list(cost) AS costs FROM calls [RANGE 5 MINUTES RATTR started SLIDE 1 ROW PATTR caller];
SELECT caller, min_by(cost, started) AS first_cost FROM calls [RANGE 1 HOUR WATTR started PATTR caller];
"""


def golden_name(path: Path) -> str:
    relative = path.relative_to(EXAMPLES).with_suffix("")
    return "explain/" + "_".join(relative.parts)


def render(explanations: list[Explanation]) -> str:
    return "\n".join(plain_text(explanation_renderable(e), width=110) for e in explanations)


def as_json(explanations: list[Explanation]) -> str:
    return json.dumps([e.to_dict() for e in explanations], indent=2, ensure_ascii=False) + "\n"


def explain_file(path: Path) -> list[Explanation]:
    program = wql.load(str(path))
    assert program.errors == [], [e.render() for e in program.errors]
    return [wql.explain_statement(s) for s in program.queries]


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# ------------------------------------------------------------------ the CLI


@pytest.mark.parametrize(("name", "window_class"), sorted(PAPER.items()))
def test_cli_explain_json_classes(name: str, window_class: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explain", "--json", str(EXAMPLES / "paper" / f"{name}.wql")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err == ""
    [report] = json_lines(captured.out)
    assert report["class"] == window_class
    assert set(report) >= TOP_KEYS
    assert set(report["window"]) >= WINDOW_KEYS
    assert report["stream"] == "traffic"
    assert (report["number"], report["line"]) == (1, 6)
    assert report["columns"][:3] == ["wid", "window_start", "window_end"]
    assert report["plans"] == [] or all({"plan", "cost", "note", "chosen"} <= set(p) for p in report["plans"])


def test_cli_explain_json_as_a_subprocess() -> None:
    wql_bin = Path(sys.executable).with_name("wql")
    assert wql_bin.exists(), wql_bin
    classes = {}
    for name in sorted(PAPER):
        result = subprocess.run(
            [str(wql_bin), "explain", "--json", str(EXAMPLES / "paper" / f"{name}.wql")],
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
            cwd=ROOT,
            env={**os.environ, "NO_COLOR": "1"},
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        [report] = json_lines(result.stdout)
        assert set(report) >= TOP_KEYS
        assert set(report["window"]) >= WINDOW_KEYS
        classes[name] = report["class"]
    assert classes == PAPER


def test_cli_explain_json_window_facts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--json", str(EXAMPLES / "paper" / "q3.wql")]) == 0
    [report] = json_lines(capsys.readouterr().out)
    assert report["window"] == {
        "spec": "[RANGE 5 MINUTES SLIDE 1 ROW RATTR ts SATTR row_num]",
        "kind": "slide-by-tuple",
        "range": "5 MINUTES",
        "slide": "1 ROW",
        "range_attribute": "ts",
        "slide_attribute": "row_num",
        "partition_by": [],
        "slack": None,
        "defaults": [],
    }
    assert report["context"] == "forward, bounded"
    assert report["aggregates"] == [
        {
            "call": "COUNT(*)",
            "column": "n",
            "result": True,
            "used_by": "",
            "kind": "distributive",
            "family": "cumulative",
            "approximate": "no",
        }
    ]
    assert report["columns"] == ["wid", "window_start", "window_end", "n"]


def test_cli_explain_json_one_line_per_query(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "two.wql"
    path.write_text(
        "CREATE STREAM s (k STRING, v DOUBLE, ts TIMESTAMP);\n"
        "SELECT k, sum(v) AS total FROM s [RANGE 1 HOUR] GROUP BY k;\n"
        "EXPLAIN SELECT count(*) AS n FROM s [RANGE 10 ROWS PATTR k];\n",
        encoding="utf-8",
    )
    assert main(["explain", "--json", str(path)]) == 0
    reports = json_lines(capsys.readouterr().out)
    assert [(r["number"], r["line"], r["class"]) for r in reports] == [(1, 2, "CF"), (2, 3, "FCF")]
    assert reports[0]["window"]["defaults"] == [
        "WATTR ts (the stream's only TIMESTAMP column)",
        "SLIDE = RANGE (tumbling: no SLIDE given)",
    ]
    assert reports[1]["window"]["partition_by"] == ["k"]
    assert reports[0]["window"]["slack"] is None


def test_cli_explain_json_slack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "slack.wql"
    path.write_text(
        "CREATE STREAM s (v DOUBLE, ts TIMESTAMP);\nSELECT max(v) AS m FROM s [RANGE 5 MINUTES SLACK 30 SECONDS];\n",
        encoding="utf-8",
    )
    assert main(["explain", "--json", str(path)]) == 0
    [report] = json_lines(capsys.readouterr().out)
    assert report["window"]["slack"] == {"amount": "30 SECONDS", "mode": "consistent"}
    assert "SLACK … CONSISTENT (no mode given)" in report["window"]["defaults"]


def test_cli_explain_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(EXAMPLES / "paper" / "q4.wql")]) == 0
    out = capsys.readouterr().out
    assert "query 1 (line 6) on stream traffic" in out
    assert "FCF" in out and "context: backward" in out
    assert "rank(t, row_num, seg_id)" in out


def test_api_explain_raises_the_first_error() -> None:
    with pytest.raises(wql.WQLNameError, match="unknown stream 'nope'"):
        wql.explain("SELECT count(*) AS n FROM nope [RANGE 10 ROWS]")


# ------------------------------------------------------------------ goldens


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: golden_name(p).removeprefix("explain/"))
def test_golden_explain_text(path: Path) -> None:
    check_golden(golden_name(path) + ".txt", render(explain_file(path)))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: golden_name(p).removeprefix("explain/"))
def test_golden_explain_json(path: Path) -> None:
    check_golden(golden_name(path) + ".json", as_json(explain_file(path)))


def test_golden_explain_kinds() -> None:
    explanations = wql.explain(KINDS)
    assert [e.window_class for e in explanations] == ["CF", "CF", "CF", "CF", "CF", "CF", "FCF", "FCB", "CF"]
    check_golden("explain/kinds.txt", render(explanations))
    check_golden("explain/kinds.json", as_json(explanations))


def test_golden_text_matches_the_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI prints the same renderables as the goldens (at the same width)."""
    monkeypatch.setenv("COLUMNS", "110")
    path = EXAMPLES / "traffic.wql"
    assert main(["explain", str(path)]) == 0
    printed = "\n".join(line.rstrip() for line in capsys.readouterr().out.splitlines()) + "\n"
    assert printed == render(explain_file(path))


# ------------------------------------------------------------------ formulas, checked against docs/semantics.md §2


@pytest.mark.parametrize(
    ("spec", "wids", "extent"),
    [
        (
            "[RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts]",
            "wids(t) = ⌊t.ts / 1 min⌋ … ⌊(t.ts + 5 min) / 1 min⌋ − 1",
            "extent(w) = { t | (w+1)·1 min − 5 min ≤ t.ts < (w+1)·1 min }",
        ),
        (
            "[RANGE 10 SLIDE 4 WATTR mile ALIGN 3]",
            "wids(t) = ⌊(t.mile − o) / 4⌋ … ⌊(t.mile − o + 10) / 4⌋ − 1,  o = 3",
            "extent(w) = { t | o + (w+1)·4 − 10 ≤ t.mile < o + (w+1)·4 }",
        ),
        (
            "[RANGE UNBOUNDED SLIDE 1 HOUR WATTR ts]",
            "wids(t) = { w ≥ 0 | w ≥ ⌊t.ts / 1 h⌋ }  (reported up to the last window of the data)",
            "extent(w) = { t | t.ts < (w+1)·1 h },  w ≥ 0",
        ),
        (
            "[RANGE 100 ROWS SLIDE 10 ROWS PATTR seg_id]",
            "wids(t) = (t.seg_id) × ⌊rank(t, row_num, seg_id) / 10⌋ … ⌊(rank(t, row_num, seg_id) + 100) / 10⌋ − 1",
            "extent(w) = { t | (w+1)·10 − 100 ≤ rank(t, row_num, seg_id) < (w+1)·10 }",
        ),
        (
            "[RANGE 5 MINUTES RATTR ts SLIDE 1 ROW]",
            "wids(t) = { w ∈ windows | t.ts ≤ w < t.ts + 5 min },  windows = { u.ts | u ∈ T }",
            "extent(w) = { u | w − 5 min < u.ts ≤ w }",
        ),
        (
            "[RANGE 5 MINUTES RATTR ts SLIDE 10 ROWS SATTR rank(ts)]",
            "wids(t) = { w ∈ windows | t.ts ≤ w < t.ts + 5 min },  windows = { u.ts | rank(u, ts) mod 10 = 0 }",
            "extent(w) = { u | w − 5 min < u.ts ≤ w }",
        ),
    ],
)
def test_wids_and_extent_formulas(spec: str, wids: str, extent: str) -> None:
    streams = {"traffic": {"seg_id": "STRING", "mile": "BIGINT", "ts": "TIMESTAMP"}}
    [explanation] = wql.explain(f"SELECT count(*) AS n FROM traffic {spec}", streams=streams)
    assert explanation.wids == wids
    assert explanation.extent == extent


def test_partitioned_slide_by_rows_formula_counts_within_the_partition() -> None:
    streams = {"s": {"k": "STRING", "ts": "TIMESTAMP"}}
    [explanation] = wql.explain(
        "SELECT count(*) AS n FROM s [RANGE 5 MINUTES RATTR ts SLIDE 3 ROWS PATTR k]", streams=streams
    )
    assert "rank(u, row_num, k) mod 3 = 0" in explanation.wids


# ------------------------------------------------------------------ rendering


def test_rendering_shows_defaults_and_aggregate_kinds() -> None:
    [explanation] = wql.explain(
        "SELECT count(*) AS n, approx_count_distinct(k) AS ks FROM s [RANGE 10 ROWS]",
        streams={"s": {"k": "STRING"}},
    )
    text = render([explanation])
    assert "default: WATTR row_num (ROWS without an attribute count arrivals)" in text
    assert "default: SLIDE = RANGE (tumbling: no SLIDE given)" in text
    assert "COUNT(*) → n  (distributive, cumulative)" in text
    assert "APPROX_COUNT_DISTINCT(k) → ks  (holistic, cumulative, approximate)" in text
    assert "columns     wid, window_start, window_end, n, ks" in text


def test_kafka_explanation_keeps_bracketed_text() -> None:
    [explanation] = wql.explain(
        "SELECT count(*) AS n FROM s [RANGE 10 SECONDS WATTR ts SLIDE KAFKA]", streams={"s": {"ts": "TIMESTAMP"}}
    )
    assert "[t.ts − r − 1 tick, t.ts + r]" in explanation.reason
    text = " ".join(render([explanation]).split())  # lines wrap at the render width
    assert "[t.ts − r − 1 tick, t.ts + r]" in text
    assert "{ [u.ts − 10 s, u.ts] |" in text
    assert "extent([x, x + 10 s])" in text


@pytest.mark.parametrize("alias", ["[red]x", "[/x]"])
def test_bracketed_alias_is_shown_verbatim(alias: str) -> None:
    [explanation] = wql.explain(
        f"SELECT count(*) AS `{alias}` FROM s [RANGE 10 ROWS]", streams={"s": {"ts": "TIMESTAMP"}}
    )
    assert explanation.columns[-1] == alias
    assert f"window_end, {alias}" in render([explanation])


def test_ordinals_in_explanations() -> None:
    [explanation] = wql.explain(
        "SELECT count(*) AS n FROM s [RANGE 5 MINUTES RATTR ts SLIDE 3 ROWS]", streams={"s": {"ts": "TIMESTAMP"}}
    )
    assert "every 3rd arrival" in explanation.kind
    assert "3th" not in explanation.reason


# ------------------------------------------------------------------ plans for windows named by tuples

READINGS = "CREATE STREAM r (k STRING, g STRING, v DOUBLE, d DOUBLE, ts TIMESTAMP);\n"


@pytest.mark.parametrize(
    ("window", "select", "reason"),
    [
        ("SLIDE 1 ROW PATTR k", "sum(v) AS s, avg(v) AS a, stddev(v) AS sd", None),
        ("SLIDE 4 ROWS SATTR rank(ts) PATTR k", "count(*) AS n", None),
        ("SLIDE 1 ROW PATTR k", "sum(v) AS s, max(v) AS m", "max has no inverse"),
        ("SLIDE 1 ROW PATTR k", "min(v) AS lo, max(v) AS m", "max and min have no inverse"),
        ("SLIDE 3 ROWS SATTR row_num", "count(*) AS n", "a second sort, by arrival"),
        ("SLIDE 1 ROW PATTR k GROUP BY g", "count(*) AS n", "tuples of other groups name windows too"),
        ("SLIDE 1 ROW PATTR k", "median(v) AS m", "needs whole multisets"),
    ],
)
def test_prefix_plan_runs_invertible_aggregates(window: str, select: str, reason: str | None) -> None:
    spec, _, group = window.partition(" GROUP BY ")
    text = f"SELECT {select} FROM r [RANGE 5 MINUTES RATTR ts {spec}]" + (f" GROUP BY {group}" if group else "")
    [explanation] = wql.explain(READINGS + text)
    [prefix] = [p for p in explanation.plans if p.name == "prefix"]
    if reason is None:
        assert prefix.cost is not None
        compiled = wql.compile(READINGS + text, plan="prefix")
        assert compiled.plan == "prefix" and "rangeBetween" in compiled.code
    else:
        assert prefix.cost is None and reason in prefix.note
        with pytest.raises(wql.WQLNotSupportedError, match="plan 'prefix'"):
            wql.compile(READINGS + text, plan="prefix")


@pytest.mark.parametrize(
    ("window", "select", "chosen"),
    [
        ("RATTR ts SLIDE 1 ROW PATTR k", "sum(v) AS s, avg(v) AS a, stddev(v) AS sd", "bins"),
        ("RATTR ts SLIDE 1 ROW PATTR k", "min(v) AS lo, max(v) AS m", "bins"),
        ("RATTR ts SLIDE 4 ROWS SATTR rank(ts) PATTR k", "count(*) AS n", "prefix"),  # not every tuple
        ("RATTR d SLIDE 1 ROW PATTR k", "count(*) AS n", "prefix"),  # a DOUBLE attribute
    ],
)
def test_bins_is_chosen_where_the_jvm_kernel_computes_it(window: str, select: str, chosen: str) -> None:
    """A window at every tuple on an integral attribute, no GROUP BY inside: the JVM kernel's shape."""
    range_ = "2" if "RATTR d" in window else "5 MINUTES"
    [explanation] = wql.explain(READINGS + f"SELECT {select} FROM r [RANGE {range_} {window}]")
    [bins] = [p for p in explanation.plans if p.name == "bins"]
    assert explanation.plan == chosen
    assert ("in the JVM" in bins.note) == (chosen == "bins")


def test_prefix_plan_needs_a_whole_range_on_doubles() -> None:
    whole = wql.compile(READINGS + "SELECT sum(v) AS s FROM r [RANGE 2 RATTR d SLIDE 1 ROW]")
    assert whole.plan == "prefix" and "rangeBetween(Window.unboundedPreceding, -int(RANGE))" in whole.code
    [fractional] = wql.explain(READINGS + "SELECT sum(v) AS s FROM r [RANGE 2.5 RATTR d SLIDE 1 ROW]")
    [prefix] = [p for p in fractional.plans if p.name == "prefix"]
    assert prefix.cost is None and "whole number" in prefix.note


def test_explain_says_which_rows_windows_are_partial() -> None:
    """A ROWS window's first windows start before the first row and its last run past the last (§2.4)."""
    streams = {"s": {"k": "STRING", "v": "DOUBLE"}}
    [sliding] = wql.explain("SELECT count(*) AS n FROM s [RANGE 3 ROWS SLIDE 1 ROW]", streams=streams)
    assert sliding.edges is not None and sliding.edges.startswith("the first 2 windows start before the stream's")
    assert "partial     the first 2 windows" in plain_text(explanation_renderable(sliding))
    assert sliding.to_dict()["edges"] == sliding.edges
    [partitioned] = wql.explain("SELECT count(*) AS n FROM s [RANGE 3 ROWS PATTR k]", streams=streams)
    assert (
        partitioned.edges
        == "the last window of each partition may hold fewer than 3 rows: the partition's data ends inside it"
    )
    [timed] = wql.explain("SELECT count(*) AS n FROM s [RANGE 3 SLIDE 1 WATTR v]", streams=streams)
    assert timed.edges is None


def test_when_no_plan_runs_the_error_gives_each_plans_reason() -> None:
    """The first plan's refusal alone once hid the one a user needed: over's, for a DOUBLE window."""
    text = (
        "CREATE STREAM s (k BIGINT, v DOUBLE, d DOUBLE) FROM 'in' FORMAT json;\n"
        "SELECT median(v) AS m FROM s [RANGE 5.0 RATTR d SLIDE 2 ROWS SATTR rank(d) PATTR k]"
    )
    with pytest.raises(wql.WQLNotSupportedError) as caught:
        wql.compile(text)
    message = str(caught.value)
    assert "bins, prefix: MEDIAN(v) needs whole multisets" in message
    assert "over: a frame's edges are inclusive" in message
    with pytest.raises(wql.WQLNotSupportedError, match=r"plan 'over' for this query: .*DOUBLE window"):
        wql.compile(text, plan="over")


@pytest.mark.parametrize(
    ("window", "select", "stored"),
    [
        ("RANGE 10 SECONDS SLIDE 2 SECONDS WATTR ts", "sum(v) AS t", True),
        ("RANGE 10 SLIDE 4 WATTR x", "min(v) AS lo, count(*) AS n", True),  # slices, integral attribute
        ("RANGE 10 SLIDE 2 WATTR v", "sum(v) AS t", False),  # DOUBLE: the watermark holds whole milliseconds
        ("RANGE 10 SECONDS SLIDE 2 SECONDS WATTR ts ALIGN FIRST", "sum(v) AS t", False),
        ("RANGE 10 SECONDS SLIDE 2 SECONDS WATTR ts", "stddev(v) AS s", False),  # moments: no tuple is a cell
        ("RANGE 10 SECONDS WATTR ts", "sum(v) AS t", False),  # tumbling: bucket keeps rows
        ("RANGE 4 ROWS SLIDE 2 ROWS", "sum(v) AS t", False),  # row numbers
        ("SESSION GAP 5 SECONDS WATTR ts SLACK 1 SECONDS PATTR k", "stddev(v) AS s", True),  # sessions' states
        ("SESSION GAP 5 WATTR x PATTR k", "min(v) AS lo", True),
        ("SESSION GAP 5 SECONDS MAX 20 SECONDS WATTR ts PATTR k", "sum(v) AS t", False),  # MAX cuts at tuples
        ("SESSION GAP 5 SECONDS WATTR ts SLACK 1 SECONDS GENEROUS PATTR k", "sum(v) AS t", True),  # closing points
        ("SESSION GAP 5 SECONDS WATTR ts SLACK 1 SECONDS GENEROUS PATTR k", "sum(v) AS t EMIT CHANGES", False),
        ("SESSION GAP 5 SECONDS WATTR ts SLACK 1 SECONDS PATTR k", "sum(v) AS t EMIT CHANGES", True),  # retractions
        ("SESSION GAP 5 WATTR v PATTR k", "sum(v) AS t", False),  # DOUBLE
        ("FRAME THRESHOLD (v > 0) WATTR ts PATTR k", "sum(v) AS t", False),  # frames end at chosen tuples
    ],
)
def test_explain_says_where_a_stream_keeps_its_cells_as_the_job_decides(window: str, select: str, stored: bool) -> None:
    """The state line names Spark's state store exactly for the queries whose job asks for it (one predicate,
    plans.stored.in_state_store, answers both)."""
    head = "CREATE STREAM s (k STRING, v DOUBLE, x BIGINT, ts TIMESTAMP) FROM 'in' FORMAT json;\n"
    select, _, emit = select.partition(" EMIT ")  # EMIT CHANGES goes after the query
    text = f"{head}SELECT k, {select} FROM s [{window}] GROUP BY k{' EMIT ' + emit if emit else ''}"
    compiled = wql.compile(text)
    asked = '\n    "store": {\n' in compiled.stream_code  # STREAMING's entry, not the support code's
    said = "in Spark's state store" in str(compiled.explain().stream_facts["state"])
    assert (asked, said) == (stored, stored)


def test_explain_says_what_its_costs_assume_and_what_the_data_is(tmp_path: Path) -> None:
    """Costs are for fixed assumptions, said with them, so that the same query always gets the same plan; where
    the stream's data can be seen here, explain says how much there is, and the plan stays what it was."""
    [statement] = wql.load(str(EXAMPLES / "paper" / "q1.wql")).queries
    explanation = wql.explain_statement(statement)
    text = render([explanation])
    costs = next(line for line in text.splitlines() if line.startswith("costs"))
    assert "N = 1,000,000 tuples" in costs and "ρ = 10 tuples per slide" in costs
    assert explanation.to_dict()["costs"]["data"] == "1,920 rows (traffic.csv)"
    assert "1,920 rows (traffic.csv)" in text
    small = tmp_path / "small.csv"
    small.write_text("seg_id,speed,ts\na,1.0,2024-01-01 00:00:00\n", encoding="utf-8")
    query = (EXAMPLES / "paper" / "q1.wql").read_text(encoding="utf-8").replace("../data/traffic.csv", str(small))
    [other] = wql.analyze(query).queries
    again = wql.explain_statement(other)
    assert again.to_dict()["costs"]["data"] == "1 row (small.csv)"
    assert again.plans == explanation.plans
