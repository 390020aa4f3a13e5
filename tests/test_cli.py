"""The `wql` command line: --version, --help, usage errors, `check` and `explain` on good and bad files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import wql
from tests.conftest import EXAMPLES
from wql.cli import main

GOOD_FILES = [EXAMPLES / "traffic.wql", *sorted((EXAMPLES / "paper").glob("*.wql"))]

BROKEN = """\
CREATE STREAM traffic (seg_id STRING, speed DOUBLE, ts TIMESTAMP)
  FROM 'traffic.csv';

SELECT max(sped) AS m FROM traffic [RANGE 5 MINUTES WATTR ts];

SELECT seg_id, count(*) AS n
FROM traffic [RANGE 5 ROWS WATTR ts]
GROUP BY seg_id;

SELECT count(*) AS n FROM traffic [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts];

SELECT seg_id, max(speed) AS top FROM traffic [RANGE 5 MINUTES];
"""


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """main() in-process; argparse exits become return codes."""
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in tmp_path, so paths in messages are short and never wrap."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path


# ------------------------------------------------------------------ global options


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--version"], capsys)
    assert code == 0
    assert out.strip() == f"wql {wql.__version__}"


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    assert out.startswith("usage: wql")
    assert "check" in out and "explain" in out
    code, out, _ = run(["explain", "--help"], capsys)
    assert code == 0
    assert "--json" in out


def test_no_command_prints_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([], capsys)
    assert code == 2
    assert "usage: wql" in out + err
    assert "Traceback" not in out + err


@pytest.mark.parametrize("argv", [["bogus"], ["check"], ["explain"], ["explain", "a.wql", "b.wql"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2
    assert "usage: wql" in err
    assert "Traceback" not in out + err


def test_version_as_a_subprocess() -> None:
    wql_bin = Path(sys.executable).with_name("wql")
    result = subprocess.run(
        [str(wql_bin), "--version"], capture_output=True, text=True, timeout=120, check=False, env=os.environ.copy()
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"wql {wql.__version__}"


# ------------------------------------------------------------------ check


def test_check_good_files(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["check", *map(str, GOOD_FILES)], capsys)
    assert code == 0, err
    assert err == ""
    for path in GOOD_FILES:
        assert f"{path}: 1 query OK" in out


def test_check_counts_queries(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(
        in_tmp,
        "two.wql",
        "CREATE STREAM s (v DOUBLE, ts TIMESTAMP);\n"
        "SELECT max(v) AS m FROM s [RANGE 1 HOUR];\n"
        "EXPLAIN SELECT count(*) AS n FROM s [RANGE 10 ROWS];\n",
    )
    write(in_tmp, "none.wql", "CREATE STREAM s (v DOUBLE);\n")
    code, out, _ = run(["check", "two.wql", "none.wql"], capsys)
    assert code == 0
    assert "two.wql: 2 queries OK" in out
    assert "none.wql: 0 queries OK" in out


def test_check_reports_every_error(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(in_tmp, "broken.wql", BROKEN)
    write(in_tmp, "traffic.csv", "seg_id,speed,ts\n")
    code, out, err = run(["check", "broken.wql"], capsys)
    assert code == 1
    assert "OK" not in out
    assert "Traceback" not in out + err
    expected = [
        ("name error: unknown column 'sped' in stream 'traffic'", "broken.wql:4:12", 4, "max(sped)", 4),
        ("type error: RANGE 5 ROWS: ROWS count arrivals, but 'ts' is a TIMESTAMP", "broken.wql:7:21", 7, "5 ROWS", 6),
        ("error: column 'seg_id' in the select list is neither aggregated", "broken.wql:12:8", 12, "seg_id", 6),
    ]
    lines = err.splitlines()
    positions = []
    for message, location, number, snippet, width in expected:
        assert message in err
        assert f"  --> {location}" in lines
        source = BROKEN.splitlines()[number - 1]
        gutter = " " * len(str(number))
        at = lines.index(f"{number} | {source}")
        caret = lines[at + 1]
        column = source.index(snippet) + (4 if snippet == "max(sped)" else 0) + 1
        assert caret == f"{gutter} | " + " " * (column - 1) + "^" * width
        positions.append(at)
    assert positions == sorted(positions), "errors are reported in file order"
    assert "= hint: did you mean 'speed'?" in err
    # the good query on line 10 is not reported
    assert "broken.wql:10:" not in err


def test_check_reports_syntax_errors(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = "SELECT count(*) AS n FROM traffic [RANGE 5 MINUTES;"
    write(in_tmp, "syntax.wql", source + "\n")
    code, _, err = run(["check", "syntax.wql"], capsys)
    assert code == 1
    assert err.startswith("syntax error: unexpected ';'")
    column = source.index(";") + 1
    assert f"  --> syntax.wql:1:{column}" in err.splitlines()
    assert "  | " + " " * (column - 1) + "^" in err.splitlines()
    assert "Traceback" not in err


def test_check_mixed_files_exit_1_but_report_the_good_one(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(in_tmp, "broken.wql", BROKEN)
    write(in_tmp, "traffic.csv", "seg_id,speed,ts\n")
    code, out, err = run(["check", str(EXAMPLES / "paper" / "q1.wql"), "broken.wql"], capsys)
    assert code == 1
    assert "q1.wql: 1 query OK" in out
    assert err.count("  --> broken.wql:") == 3


def test_check_reports_a_from_path_that_is_not_there(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A FROM path that does not exist (relative to the query file) is an error of `wql check`, with a caret
    under the path; one that exists, or a URL only Spark can read, is not."""
    folder = in_tmp / "queries"
    folder.mkdir()
    (folder / "here.csv").write_text("v,ts\n", encoding="utf-8")
    text = (
        "CREATE STREAM a (v DOUBLE, ts TIMESTAMP) FROM 'here.csv';\n"
        "CREATE STREAM b (v DOUBLE, ts TIMESTAMP) FROM 'gone.csv';\n"
        "CREATE STREAM c (v DOUBLE, ts TIMESTAMP) FROM 's3a://bucket/c' FORMAT parquet;\n"
        "SELECT count(*) AS n FROM b [RANGE 1 HOUR];\n"
    )
    write(folder, "q.wql", text)
    code, out, err = run(["check", "queries/q.wql"], capsys)
    assert code == 1 and "OK" not in out
    lines = err.splitlines()
    assert lines[0].startswith("runtime error: stream 'b': no such file or directory: ")
    assert lines[0].endswith("gone.csv")
    assert "  --> queries/q.wql:2:42" in lines
    assert "  |                                          ^^^^^^^^^^^^^^^" in lines
    assert err.count("-->") == 1


def one_line_failure(err: str, out: str, message: str) -> None:
    assert "Traceback" not in out + err
    first = err.splitlines()[0]
    assert first == f"runtime error: {message}"


def test_check_missing_path(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["check", "nope.wql"], capsys)
    assert code == 1
    one_line_failure(err, out, "no such file: nope.wql")


def test_check_directory(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (in_tmp / "folder").mkdir()
    code, out, err = run(["check", "folder"], capsys)
    assert code == 1
    one_line_failure(err, out, "folder is a directory, not a .wql file")


def test_check_non_utf8_file(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (in_tmp / "latin1.wql").write_bytes("SELECT 'caf\xe9' AS x FROM s [RANGE 1 ROWS];\n".encode("latin-1"))
    code, out, err = run(["check", "latin1.wql"], capsys)
    assert code == 1
    one_line_failure(err, out, "latin1.wql is not UTF-8 text (invalid continuation byte)")


def test_check_continues_after_an_unreadable_file(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["check", "nope.wql", str(EXAMPLES / "paper" / "q2.wql")], capsys)
    assert code == 1
    assert "no such file: nope.wql" in err
    assert "q2.wql: 1 query OK" in out


def test_check_failures_as_a_subprocess(in_tmp: Path) -> None:
    (in_tmp / "folder").mkdir()
    (in_tmp / "bad.wql").write_bytes(b"SELECT \xff\xfe")
    wql_bin = Path(sys.executable).with_name("wql")
    for target, message in (
        ("nope.wql", "runtime error: no such file: nope.wql"),
        ("folder", "runtime error: folder is a directory, not a .wql file"),
        ("bad.wql", "runtime error: bad.wql is not UTF-8 text (invalid start byte)"),
    ):
        result = subprocess.run(
            [str(wql_bin), "check", target],
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
            check=False,
            cwd=in_tmp,
        )
        assert result.returncode == 1
        assert "Traceback" not in result.stdout + result.stderr
        assert result.stderr.splitlines()[0] == message


@pytest.mark.parametrize("folder", ["x[bold]y", "d[/e]"])
def test_check_prints_paths_verbatim(folder: str, in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = in_tmp / folder
    directory.mkdir(parents=True)
    write(directory, "q.wql", "CREATE STREAM s (ts TIMESTAMP);\nSELECT count(*) AS n FROM s [RANGE 1 HOUR];\n")
    path = f"{folder}/q.wql"
    code, out, err = run(["check", path], capsys)
    assert "Traceback" not in out + err
    assert code == 0
    assert f"{path}: 1 query OK" in out


# ------------------------------------------------------------------ explain


def test_explain_a_broken_file(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(in_tmp, "broken.wql", BROKEN)
    code, out, err = run(["explain", "broken.wql"], capsys)
    assert code == 1
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert lines[0] == "name error: unknown column 'sped' in stream 'traffic'"
    assert lines[1] == "  --> broken.wql:4:12"
    assert "4 | SELECT max(sped) AS m FROM traffic [RANGE 5 MINUTES WATTR ts];" in lines
    assert "  |            ^^^^" in lines
    assert err.count("  --> broken.wql:") == 3


def test_explain_json_of_a_broken_file_prints_no_json(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(in_tmp, "broken.wql", BROKEN)
    code, out, err = run(["explain", "--json", "broken.wql"], capsys)
    assert code == 1
    assert out == ""
    assert "broken.wql:7:21" in err


@pytest.mark.parametrize(
    ("setup", "target", "message"),
    [
        (None, "nope.wql", "no such file: nope.wql"),
        ("dir", "folder", "folder is a directory, not a .wql file"),
        ("bytes", "bad.wql", "bad.wql is not UTF-8 text (invalid start byte)"),
    ],
)
def test_explain_unreadable_paths(
    setup: str | None, target: str, message: str, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if setup == "dir":
        (in_tmp / target).mkdir()
    elif setup == "bytes":
        (in_tmp / target).write_bytes(b"SELECT \xff\xfe")
    code, out, err = run(["explain", target], capsys)
    assert code == 1
    one_line_failure(err, out, message)


def test_explain_bracketed_alias_does_not_crash(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(in_tmp, "alias.wql", "CREATE STREAM s (ts TIMESTAMP);\nSELECT count(*) AS `[/x]` FROM s [RANGE 1 HOUR];\n")
    code, out, err = run(["explain", "alias.wql"], capsys)
    assert "Traceback" not in out + err
    assert code == 0
    assert "[/x]" in out


# ------------------------------------------------------------------ one numbering of queries

ONE_QUERY = """\
CREATE STREAM s (k STRING, v DOUBLE, ts TIMESTAMP)
  FROM 'data.csv';

SELECT k, sum(v) AS total
FROM s [RANGE 5 MINUTES] GROUP BY k;
"""


def test_a_files_only_query_is_query_1_everywhere(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """explain, the job's header, the job's name and --query count queries, not statements: the
    CREATE STREAM before the only query does not make it query 2."""
    write(in_tmp, "f.wql", ONE_QUERY)
    code, out, _ = run(["explain", "f.wql"], capsys)
    assert code == 0 and out.startswith("query 1 (line 4) on stream s")
    code, out, _ = run(["explain", "--json", "f.wql"], capsys)
    assert code == 0 and '"number": 1' in out
    code, out, _ = run(["compile", "f.wql", "--query", "1"], capsys)
    assert code == 0
    assert "from f.wql, query 1 (line 4)." in out and 'APP_NAME = "wql: f.wql #1"' in out
    code, _, err = run(["compile", "f.wql", "--query", "2"], capsys)
    assert code == 1 and "there is no query 2; f.wql has 1 query" in err
    assert wql.load("f.wql").query(1).line == 4


def test_explain_into_a_file_is_not_padded(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Output that is not a terminal (a pipe, a file) is wide enough not to wrap, but no line carries the
    spaces that pad it to that width."""
    code, out, _ = run(["explain", str(EXAMPLES / "clicks.wql")], capsys)
    assert code == 0
    padded = [line for line in out.splitlines() if line != line.rstrip()]
    assert padded == []
    assert "window      [SESSION GAP 30 MINUTES WATTR ts PATTR user_id]" in out.splitlines()


def test_check_of_a_stream_from_a_table(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`wql check` starts no Spark: a stream FROM TABLE with its columns declared checks as any other; without
    them its columns are in Spark's catalog, which it says with a caret under the table's name. A stream with
    neither columns nor a table is refused at its name."""
    write(
        in_tmp,
        "declared.wql",
        "CREATE STREAM e (k STRING, ts TIMESTAMP) FROM TABLE db.events;\nSELECT count(*) AS n FROM e [RANGE 1 HOUR];\n",
    )
    code, out, err = run(["check", "declared.wql"], capsys)
    assert (code, err) == (0, "") and "declared.wql: 1 query OK" in out
    write(in_tmp, "catalog.wql", "CREATE STREAM e FROM TABLE db.events;\nSELECT count(*) AS n FROM e [RANGE 1 HOUR];\n")
    code, _, err = run(["check", "catalog.wql"], capsys)
    lines = err.splitlines()
    assert code == 1 and lines[0].startswith("error: the columns of table 'db.events' are in Spark's catalog")
    assert "  --> catalog.wql:1:28" in lines and "  |                            ^^^^^^^^^" in lines
    write(in_tmp, "none.wql", "CREATE STREAM e FROM 'e.csv';\n")
    code, _, err = run(["check", "none.wql"], capsys)
    assert code == 1 and err.splitlines()[0] == "error: stream 'e' declares no columns"
