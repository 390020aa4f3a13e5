"""The project's own reference (docs/): it exists, the README links it, its links and the sections
`wql explain` cites all resolve, and no file of the project names a path outside the repository.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import wql
from tests.conftest import EXAMPLES, ROOT
from wql.cli import main
from wql.compiler.classify import WindowClass
from wql.compiler.plans import PlanName
from wql.compiler.sections import ALL_SECTIONS, CLASSES, PLANS, github_anchor
from wql.compiler.windows import Form

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))

# Spelled in pieces, so that this file does not name them itself.
OUTSIDE = ("shared" + "/design", "shared" + "/seeds", "../" + "shared", "/" + "work/")


def tracked_files() -> list[Path]:
    """The repository's files: git's list where there is one, else every file outside build output."""
    try:
        command = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        listed = subprocess.run(command, cwd=ROOT, capture_output=True, check=True, timeout=60).stdout.decode()
        return [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        skipped = {".git", ".venv", "build", ".pytest_cache", ".ruff_cache", ".hypothesis", "__pycache__"}
        return [p for p in ROOT.rglob("*") if p.is_file() and not skipped & set(p.relative_to(ROOT).parts)]


def headings(page: Path) -> list[str]:
    """A page's headings, without their #s, outside fenced code blocks."""
    found, fenced = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.+)", line)):
            found.append(match.group(1).strip())
    return found


def anchors(page: Path) -> set[str]:
    return {github_anchor(heading) for heading in headings(page)}


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return re.findall(r"\]\(([^)\s]+)\)", text)


# ------------------------------------------------------------------ no path outside the repository


def outside_paths(text: str) -> list[tuple[int, str]]:
    """(line number, pattern) for every line of `text` that names a path outside the repository."""
    return [
        (number, outside)
        for number, line in enumerate(text.splitlines(), start=1)
        for outside in OUTSIDE
        if outside in line
    ]


def test_no_file_names_a_path_outside_the_repository() -> None:
    files = tracked_files()
    assert ROOT / "README.md" in files and ROOT / "tests" / "test_docs.py" in files
    offenders = []
    for path in files:
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError:  # listed by git but deleted in the working tree
            continue
        offenders += [f"{path.relative_to(ROOT)}:{number}: {outside}" for number, outside in outside_paths(text)]
    assert offenders == []


def test_the_scan_finds_such_paths() -> None:
    """The scan above can fail: each way of naming the outside is found (spelled in pieces here too)."""
    written = [
        "the design note: " + "/".join(["", "work", "shared", "design", "semantics.md"]),
        "source papers in " + "/".join(["shared", "seeds", "000.txt"]),
        "FROM '" + "/".join(["..", "shared", "y.json"]) + "'",
    ]
    found = outside_paths("\n".join(written))
    assert {line for line, _ in found} == {1, 2, 3}
    assert {outside for _, outside in found} == set(OUTSIDE)


# ------------------------------------------------------------------ docs/ and the README


def test_docs_exist_and_the_readme_links_them() -> None:
    assert {p.name for p in PAGES} >= {"README.md", "language.md", "semantics.md"}
    readme = ROOT / "README.md"
    targets = links(readme)
    assert any(t.split("#")[0].rstrip("/") in {"docs", "docs/README.md"} for t in targets), targets
    assert any(t.startswith("docs/semantics.md") for t in targets)
    assert any(t.startswith("docs/language.md") for t in targets)


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        missing = not file.exists()
        if missing or (anchor and (file.is_dir() or file.suffix != ".md" or anchor not in anchors(file))):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_section_headings_are_numbered_and_unique(page: Path) -> None:
    """Other text cites sections by number and anchor: every ##/### heading is numbered, none repeats."""
    text = page.read_text(encoding="utf-8")
    numbered = re.findall(r"^#{2,3} (.+)$", re.sub(r"```.*?```", "", text, flags=re.DOTALL), flags=re.MULTILINE)
    if page.name != "README.md":
        assert all(re.match(r"\d+(\.\d+)*\.? ", h) for h in numbered), numbered
    slugs = [github_anchor(h) for h in headings(page)]
    assert len(slugs) == len(set(slugs))


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [  # as GitHub renders them
        ("2.6 Slide-by-tuple windows", "26-slide-by-tuple-windows"),
        ("5.3 FCB: forward context, bounded", "53-fcb-forward-context-bounded"),
        ("4. Empty windows and EMIT EMPTY", "4-empty-windows-and-emit-empty"),
        ("2.7 Sliding n rows over row_num", "27-sliding-n-rows-over-row_num"),
        ("2.2 SLIDE larger than RANGE: gaps", "22-slide-larger-than-range-gaps"),
    ],
)
def test_anchors_follow_githubs_rule(heading: str, anchor: str) -> None:
    assert github_anchor(heading) == anchor


# ------------------------------------------------------------------ the sections explain cites


def test_every_cited_section_exists() -> None:
    for section in ALL_SECTIONS:
        page = ROOT / section.page
        assert page.exists(), section.page
        assert section.heading in headings(page), section.heading
        assert section.anchor in anchors(page)


def test_every_class_and_plan_has_a_section() -> None:
    assert set(CLASSES) == set(WindowClass)
    assert set(PLANS) == {kind.value for kind in PlanName}


KINDS = """\
CREATE STREAM s (k STRING, v DOUBLE, ts TIMESTAMP, m BIGINT, e BIGINT, x DOUBLE);
SELECT k, sum(v) AS total FROM s [RANGE 2 MINUTES SLIDE 1 MINUTE] GROUP BY k;
SELECT count(*) AS n FROM s [RANGE 5 SLIDE 10 WATTR m];
SELECT count(*) AS n FROM s [RANGE UNBOUNDED SLIDE 10 WATTR m];
SELECT count(*) AS n FROM s [RANGE 3 ROWS];
SELECT count(*) AS n FROM s [RANGE 3 ROWS SLIDE 1 ROW PATTR k];
SELECT sum(v) AS total FROM s [RANGE 10 RATTR m SLIDE 1 ROW];
SELECT sum(v) AS total FROM s [RANGE 10 RATTR m SLIDE 2 ROWS];
SELECT sum(v) AS total FROM s [RANGE 10 RATTR m SLIDE 2 ROWS SATTR rank(m)];
SELECT sum(v) AS total FROM s [RANGE 10 WATTR m SLIDE KAFKA];
SELECT sum(v) AS total FROM s [RANGE 10 SLIDE 5 WATTR (m, e)];
SELECT median(v) AS mid FROM s [RANGE 10 SLIDE 5 WATTR x] EMIT EMPTY;
SELECT count(*) AS n FROM s [RANGE 10 WATTR m SLACK 5];
SELECT sum(v) AS total FROM s [RANGE 10 SLIDE 5 CUMULATE WATTR m];
SELECT sum(v) AS total FROM s [RANGE 10 SLIDE 5 KAFKA WATTR m];
SELECT sum(v) AS total FROM s [RANGE 10 SLIDE 5 WATTR m ALIGN FIRST];
SELECT sum(v) AS total FROM s [SESSION GAP 10 WATTR m PATTR k];
SELECT sum(v) AS total FROM s [FRAME THRESHOLD (v > 1) WATTR m];
SELECT median(v) AS mid FROM s [FRAME DELTA 2 ON x WATTR m];
SELECT count(*) AS n FROM s [FRAME AGGREGATE (sum(v) > 10) WATTR m];
SELECT count(*) AS n FROM s [SNAPSHOT WATTR (m, e) PATTR k];
SELECT sum(e - m) AS busy FROM s [RANGE 10 SLIDE 5 WATTR (m, e) CLIP];
SELECT count(*) AS n FROM s [RANGE 10 SLIDE 5 WATTR (m, e) SNAP];
"""

EXPECTED = [  # (the section of the window, the class's section)
    ("2.1", "5.1"),
    ("2.2", "5.1"),
    ("2.3", "5.1"),
    ("2.4", "5.1"),
    ("2.5", "5.2"),
    ("2.6", "5.3"),
    ("2.7", "5.3"),
    ("2.8", "5.4"),
    ("2.9", "5.3"),
    ("2.10", "5.1"),
    ("2.1", "5.1"),
    ("2.1", "5.1"),
    ("2.13", "5.1"),
    ("2.14", "5.1"),
    ("2.15", "5.2"),
    ("2.16", "5.4"),
    ("2.17", "5.4"),
    ("2.17", "5.4"),
    ("2.17", "5.4"),
    ("2.18", "5.3"),
    ("2.19", "5.1"),
    ("2.20", "5.3"),
]


def test_explain_cites_the_window_the_class_and_the_plan() -> None:
    explanations = wql.explain(KINDS)
    assert len(explanations) == len(EXPECTED)
    kinds = set()
    for explanation, (window, window_class) in zip(explanations, EXPECTED, strict=True):
        numbers = [s.number for s in explanation.see]
        assert window in numbers and window_class in numbers, (explanation.query, numbers)
        if explanation.plan is not None:
            assert PLANS[explanation.plan] in explanation.see
        assert all(s in ALL_SECTIONS for s in explanation.see)
        kinds.add(explanation.window["kind"])
    assert kinds == {kind.value for kind in Form}
    gaps, double, slack = explanations[1], explanations[10], explanations[11]
    assert "2.2" in [s.number for s in gaps.see]
    assert {"3.3", "4"} <= {s.number for s in double.see}
    assert "8.2" in [s.number for s in slack.see] and slack.plan is not None


def test_explain_shows_the_sections_in_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "paper" / "q3.wql")
    assert main(["explain", path]) == 0
    text = capsys.readouterr().out
    assert "docs/semantics.md §2.6 Slide-by-tuple windows" in text
    assert "docs/semantics.md §5.3 FCB: forward context, bounded" in text
    assert main(["explain", "--json", path]) == 0
    [report] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert report["see"][:2] == [
        "docs/semantics.md#26-slide-by-tuple-windows",
        "docs/semantics.md#53-fcb-forward-context-bounded",
    ]
    assert report["see"][-1] == f"docs/semantics.md#{PLANS[report['plan']].anchor}"
    for link in report["see"]:
        page, _, anchor = link.partition("#")
        assert anchor in anchors(ROOT / page)


# ------------------------------------------------------------------ the worked examples of semantics §2

STREAM = [  # the example stream of docs/semantics.md §2, in arrival order
    {"k": "a", "m": 3, "v": 1.0},
    {"k": "b", "m": 7, "v": 2.0},
    {"k": "a", "m": 12, "v": 3.0},
    {"k": "b", "m": 20, "v": 4.0},
    {"k": "a", "m": 21, "v": 5.0},
]
EVENTS = [  # the interval events of §2.10, (m, e)
    {"k": "a", "m": 3, "e": 5, "v": 1.0},
    {"k": "b", "m": 7, "e": 7, "v": 2.0},
    {"k": "a", "m": 12, "e": None, "v": 3.0},
    {"k": "b", "m": 20, "e": 15, "v": 4.0},
    {"k": "a", "m": 21, "e": 30, "v": 5.0},
]
SCHEMA = {"k": "STRING", "m": "BIGINT", "e": "BIGINT", "v": "DOUBLE"}


def reference(spec: str, aggregate: str = "sum(v)", rows: list[dict[str, object]] = STREAM) -> dict[object, object]:
    """{wid: aggregate} for a window spec over the example stream, by the reference evaluator."""
    from wql.runtime.reference import evaluate_query

    [statement] = wql.analyze(f"SELECT {aggregate} AS x FROM s {spec}", streams={"s": SCHEMA}).queries
    assert statement.query is not None
    return {row["wid"]: row["x"] for row in evaluate_query(statement.query, rows)}


def example_tables() -> list[tuple[str, dict[int, float]]]:
    """Each 'Example, `[spec]`, `sum(v)`' of semantics §2 that has a table: the spec and {wid: sum}."""
    text = (DOCS / "semantics.md").read_text(encoding="utf-8")
    found = []
    pattern = r"^Example, `(\[[^`]+\])`, `sum\(v\)`[^\n]*\n(?:[^\n]+\n)*\n((?:\|[^\n]*\n)+)"
    for match in re.finditer(pattern, text, re.MULTILINE):
        table: dict[int, float] = {}
        for line in match.group(2).splitlines()[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            first, _, last = cells[0].partition("–")
            for wid in range(int(first), int(last or first) + 1):
                table[wid] = float(cells[-1])
        found.append((match.group(1), table))
    return found


def test_the_example_tables_are_what_wql_computes() -> None:
    tables = example_tables()
    assert [spec for spec, _ in tables] == [
        "[RANGE 10 SLIDE 5 WATTR m]",
        "[RANGE 10 RATTR m SLIDE 1 ROW]",
        "[RANGE 10 SLIDE 5 WATTR (m, e)]",
    ]
    for spec, table in tables:
        assert reference(spec, rows=EVENTS if "(m, e)" in spec else STREAM) == table, spec


def test_the_examples_in_prose_are_what_wql_computes() -> None:
    assert reference("[RANGE 5 SLIDE 10 WATTR m]", "count(*)") == {0: 1}  # §2.2: only m = 7, in [5, 10)
    assert reference("[RANGE UNBOUNDED SLIDE 10 WATTR m]") == {0: 3, 1: 6, 2: 15}  # §2.3
    assert reference("[RANGE 3 ROWS SLIDE 1 ROW]", "count(*)") == {0: 1, 1: 2, 2: 3, 3: 3, 4: 3, 5: 2, 6: 1}  # §2.4
    assert reference("[RANGE 10 RATTR m SLIDE 2 ROWS]") == {3: 1, 12: 6, 21: 12}  # §2.7
    assert reference("[RANGE 10 SATTR rank(m) SLIDE 2 ROWS]") == {3: 1, 12: 6, 21: 12}  # §2.8
    late = [STREAM[3], *STREAM[:3], STREAM[4]]  # §2.8: had m = 20 arrived first
    assert set(reference("[RANGE 10 RATTR m SLIDE 2 ROWS]", rows=late)) == {20, 7, 21}
    assert set(reference("[RANGE 10 SATTR rank(m) SLIDE 2 ROWS]", rows=late)) == {3, 12, 21}
    kafka = reference("[RANGE 10 WATTR m SLIDE KAFKA]")  # §2.9
    assert sorted(kafka) == [0, 2, 4, 8, 10, 11, 13, 21] and kafka[0] == 3


@pytest.mark.parametrize("heading", ["5.6 ALIGN", "5.13 CUMULATE", "5.14 KAFKA"])
def test_the_language_reference_gives_the_syntax_of_every_clause(heading: str) -> None:
    """CUMULATE, the KAFKA grid and ALIGN FIRST are written as the section's examples show, and they run."""
    text = (DOCS / "language.md").read_text(encoding="utf-8")
    section = text.split(f"### {heading}\n", 1)[1].split("\n### ", 1)[0]
    examples = re.findall(r"^FROM (\w+) (\[[^\]]*\])", section, re.M)
    assert examples, heading
    streams = {
        "traffic": {"seg_id": "STRING", "speed": "DOUBLE", "ts": "TIMESTAMP", "mile": "DOUBLE"},
        "views": {"ts": "TIMESTAMP", "ts_ms": "BIGINT"},
    }
    for stream, spec in examples:
        [explanation] = wql.explain(f"SELECT count(*) AS n FROM {stream} {spec}", streams=streams)
        word = {"5.6 ALIGN": "first tuple", "5.13 CUMULATE": "CUMULATE", "5.14 KAFKA": "Kafka"}[heading]
        assert word in explanation.kind, (spec, explanation.kind)


def test_the_docs_readme_links_every_section_explain_cites() -> None:
    """docs/README.md's table of the sections `wql explain` cites names each of them, by its own link, so that
    a section added or renumbered is not left out of the map."""
    text = (DOCS / "README.md").read_text(encoding="utf-8")
    table = text.split("## The sections explain cites", 1)[1]
    linked = set(re.findall(r"\]\(([^)\s]+)\)", table))
    missing = [section.heading for section in ALL_SECTIONS if section.link.removeprefix("docs/") not in linked]
    assert missing == []


def test_the_maintainers_notes_are_apart_from_the_users_pages() -> None:
    """docs/ is for users; design decisions, prototypes and the fault hooks are in docs/design.md."""
    cli = (DOCS / "cli.md").read_text(encoding="utf-8")
    performance = (DOCS / "performance.md").read_text(encoding="utf-8")
    design = (DOCS / "design.md").read_text(encoding="utf-8")
    assert "WQL_FAULT" not in cli and "WQL_FAULT" in design
    for log, note in (
        ("**How it was chosen.**", "how it was chosen"),
        ("**Exact runs before the shuffle, measured and dropped.**", "exact runs before the shuffle: measured and"),
        ("Prototypes of the choices", "prototypes of the choices"),
        ("Streams against their targets", "streams against their targets"),
    ):
        assert log not in performance and note in design.lower(), log
    assert "design.md" in (DOCS / "README.md").read_text(encoding="utf-8")
