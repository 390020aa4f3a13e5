"""The README is a new user's front door: short, and every command and query in it runs as written
from the repository root. The queries (```sql blocks that start with `-- NAME.wql`) are saved under
that name; the commands (```sh blocks) run in order: `wql check/explain/compile` for real, the first
`wql run` for real on the test session, later runs and streams as far as Spark (arguments, compile,
inputs), `make` targets and `source` checked to exist. The README and docs/ carry no commit hashes,
issue numbers or dated logs."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import wql
from tests.conftest import ROOT
from wql.cli import _parser, main

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)


def prose(page: Path) -> str:
    """A page without fenced code and inline code: what a reader reads as text."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def test_the_readme_is_short_and_starts_with_demo_and_test() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200
    first = blocks("sh")[0].splitlines()
    assert [line.split()[:2] for line in first] == [["make", "demo"], ["make", "test"]]
    text = README.read_text(encoding="utf-8")
    assert "source .venv/bin/activate" in text and ".venv/bin/wql" in text  # how wql gets on PATH
    assert "make test-deep" in text and "docs/performance.md" in text and "docs/images/sliding.png" in text
    assert re.search(r"!\[[^\]]*\]\(docs/images/windows\.svg\)", text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_commit_hashes_issue_numbers_or_dated_logs(page: Path) -> None:
    text = prose(page)
    hashes = [h for h in re.findall(r"\b[0-9a-f]{7,40}\b", text) if re.search(r"\d", h) and re.search(r"[a-f]", h)]
    assert hashes == []
    assert re.findall(r"\b[Ii]ssues? #?\d+|(?<![\w&])#\d+\b|\bPR \d+", text) == []
    assert re.findall(r"\b20(?:2[5-9]|[3-9]\d)-\d\d-\d\d\b", text) == []  # the project's own dates


def commands() -> list[list[str]]:
    found = []
    for block in blocks("sh"):
        for line in block.splitlines():
            command = line.split(" #")[0].strip()
            if command:
                found.append(shlex.split(command))
    return found


@pytest.mark.spark
def test_every_readme_command_and_query_runs_from_the_repository_root(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # The repository root, as a new user sees it: examples/ and the Makefile, and nothing else yet.
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    queries = [block for block in blocks("sql") if block.startswith("-- ")]
    assert len(queries) >= 3
    for block in queries:
        name = block.splitlines()[0].removeprefix("-- ").strip()
        assert name.endswith(".wql") and "/" not in name
        Path(name).write_text(block, encoding="utf-8")
        assert wql.check(block, name) == []
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    ran = 0
    for argv in commands():
        if argv[0] == "make":
            assert re.search(rf"^{re.escape(argv[1])}:", makefile, re.M), argv
        elif argv[0] == "source":
            assert argv[1] == ".venv/bin/activate"
        elif argv[0] == "python":
            done = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, timeout=120, check=False)
            assert done.returncode == 0, done.stderr
        elif argv[0] in {"wql", ".venv/bin/wql"}:
            args = _parser().parse_args(argv[1:])  # every option as written
            if args.command != "run":
                assert main(argv[1:]) == 0, capfd.readouterr().err
            elif not args.stream and not ran:
                assert main(argv[1:]) == 0, capfd.readouterr().err
                ran += 1
            else:  # as far as Spark: the program, its inputs (a stream's directory must be there)
                stream = ["--stream"] if args.stream else []
                assert main(["compile", args.file, *stream, "-o", str(tmp_path / "job.py")]) == 0
                if args.stream:
                    [statement] = wql.load(args.file).queries
                    assert statement.query is not None and Path(statement.query.stream.path).is_dir()
        else:
            pytest.fail(f"the README runs a command this test does not know: {argv}")
    assert ran == 1
    out = capfd.readouterr().out
    assert "max_speed" in out and "min_speed" in out  # the first query's table
    assert Path("windows.svg").exists() and Path("job.py").exists()
