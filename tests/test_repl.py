"""`wql repl`: statement boundaries, commands, completion and highlighting in-process, then the real
thing in a pseudo-terminal, typed as a person types it.

The pseudo-terminal sessions are slow (the JVM starts in one of them); the others
keep Spark off with WQL_REPL_PRESTART=0 and only declare and explain.
"""

from __future__ import annotations

import io
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from pygments import lex
from pygments.token import Keyword, Name, Number, String
from rich.console import Console

from tests.conftest import EXAMPLES, ROOT
from wql.highlight import WQLLexer, keywords, python_html, units, wql_html
from wql.repl import Repl, SparkStarter, completer, is_complete, split_entries

TRAFFIC = EXAMPLES / "data" / "traffic.csv"
CREATE = (
    "CREATE STREAM traffic (seg_id STRING, speed DOUBLE, ts TIMESTAMP)\n"
    "  FROM 'data/traffic.csv' FORMAT csv OPTIONS (header = true);"
)
Q1 = (
    "SELECT seg_id, max(speed) AS max_speed, min(speed) AS min_speed\n"
    "FROM traffic [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts]\n"
    "GROUP BY seg_id;"
)

# Cancelling: a forced bucket plan copies each reading into all its 604,800 windows: minutes of work.
SLOW = "SELECT count(*) AS n FROM traffic [RANGE 7 DAYS SLIDE 1 SECOND WATTR ts];"


# ------------------------------------------------------------------ statement boundaries


@pytest.mark.parametrize(
    ("text", "complete"),
    [
        ("", True),
        ("   \n ", True),
        ("SELECT count(*) AS n", False),
        ("SELECT count(*) AS n\nFROM s [RANGE 5 ROWS];", True),
        ("SELECT count(*) AS n FROM s [RANGE 5 ROWS];  -- done", True),
        ("SELECT ';' AS x", False),
        ("SELECT 'a;", False),
        ("SELECT 1 AS x FROM s /* ; */", False),
        ("SELECT 1 AS x FROM s /* unfinished;", False),
        ("SELECT `odd;name` FROM s", False),
        ("SELECT 'it''s' AS x FROM s;", True),
        ("\\describe traffic", True),
        ("\\explain", True),
        ("\\explain SELECT count(*) AS n", False),
        ("\\explain SELECT count(*) AS n\nFROM s [RANGE 5 ROWS];", True),
        ("quit", True),
    ],
)
def test_enter_runs_only_finished_statements(text: str, complete: bool) -> None:
    assert is_complete(text) is complete


def test_piped_input_splits_like_the_prompt() -> None:
    lines = ["CREATE STREAM s (a INT)\n", "  FROM 'x.csv';\n", "\n", "\\streams\n", "SELECT count(*) AS n\n", "FROM s"]
    assert list(split_entries(lines)) == [
        "CREATE STREAM s (a INT)\n  FROM 'x.csv';",
        "\\streams",
        "SELECT count(*) AS n\nFROM s",
    ]


# ------------------------------------------------------------------ the session, in-process


class NoSpark(SparkStarter):
    """A starter that fails the test if anything asks for Spark."""

    def __init__(self) -> None:
        super().__init__(factory=self._refuse)

    @staticmethod
    def _refuse() -> Any:
        raise AssertionError("this statement should not need Spark")

    def start(self) -> None:
        raise AssertionError("Spark was started for a statement that does not need it")


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Repl, io.StringIO]]:
    """A REPL writing plain text into a buffer, run from the examples folder, with no Spark allowed."""
    monkeypatch.chdir(EXAMPLES)
    monkeypatch.setenv("WQL_REPL_PRESTART", "0")
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, color_system=None, force_terminal=False, force_jupyter=False)
    yield Repl(console, spark=NoSpark()), buffer


def said(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text


def test_typed_streams_resolve_against_the_current_directory(session: tuple[Repl, io.StringIO]) -> None:
    repl, out = session
    repl.handle(CREATE)
    stream = repl.catalog.get("traffic")
    assert stream is not None and stream.path == str(TRAFFIC)
    assert "✓ stream traffic (seg_id STRING, speed DOUBLE, ts TIMESTAMP)" in said(out)
    repl.handle("\\describe traffic")
    text = said(out)
    assert re.search(r"speed\s+DOUBLE", text) and f"source: {TRAFFIC} (csv, header = true)" in text
    repl.handle("\\streams")
    assert "traffic" in said(out)


def test_loaded_streams_resolve_against_their_file(session: tuple[Repl, io.StringIO], tmp_path: Path) -> None:
    repl, out = session
    folder = tmp_path / "queries"
    folder.mkdir()
    (folder / "streams.wql").write_text(
        "CREATE STREAM s (a INT, t TIMESTAMP) FROM 'data/s.csv';\nCREATE STREAM u (b INT) FROM '/abs/u.json';\n"
    )
    repl.handle(f"\\load {folder / 'streams.wql'}")
    s, u = repl.catalog.get("s"), repl.catalog.get("u")
    assert s is not None and s.path == str(folder / "data" / "s.csv")
    assert u is not None and u.path == "/abs/u.json"
    assert "does not exist (yet)" in said(out)  # a warning, not an error


def test_errors_show_the_caret_and_the_session_goes_on(session: tuple[Repl, io.StringIO]) -> None:
    repl, out = session
    repl.handle(CREATE)
    said(out)
    repl.handle("SELECT max(sped) AS m\nFROM traffic [RANGE 5 MINUTES WATTR ts];")
    text = said(out)
    assert "unknown column 'sped'" in text
    assert "1 | SELECT max(sped) AS m" in text and "  |            ^^^^" in text
    assert "did you mean 'speed'?" in text
    repl.handle("SELECT count(*) AS n FROM traffic [RANGE 5 MINUTES SLIDE WATTR ts];")
    assert "syntax error" in said(out)
    repl.handle("\\bogus")
    assert "unknown command \\bogus" in said(out)
    repl.handle("\\explian")
    assert "did you mean '\\explain'?" in said(out)
    repl.handle("\\describe trafic")
    assert "did you mean 'traffic'?" in said(out)
    repl.handle("\\load /no/such/file.wql")
    assert "no such file" in said(out)
    assert repl.catalog.get("traffic") is not None  # nothing above changed the session


def test_explain_code_plan_timing_limit(session: tuple[Repl, io.StringIO]) -> None:
    repl, out = session
    repl.handle(CREATE)
    said(out)
    repl.handle("\\explain")
    assert "no query yet" in said(out)
    repl.handle(f"\\explain {Q1}")
    text = said(out)
    assert "class       CF" in text and "← chosen" in text and "pane" in text
    repl.handle(f"EXPLAIN {Q1}")
    assert "class       CF" in said(out)
    repl.handle("\\plan bucket")
    assert "plan: bucket" in said(out)
    repl.handle(f"\\code {Q1}")
    text = said(out)
    assert "def query(traffic: DataFrame) -> DataFrame:" in text and "Plan    bucket" in text
    repl.handle("\\plan pain")
    assert "did you mean 'pane'?" in said(out)
    repl.handle("\\plan auto")
    assert "plan: auto" in said(out)
    repl.handle("\\timing on")
    assert repl.settings.timing and "timing: on" in said(out)
    repl.handle("\\timing")
    assert not repl.settings.timing
    repl.handle("\\limit 5")
    assert repl.settings.limit == 5
    repl.handle("\\limit none")
    assert "positive number" in said(out)
    repl.handle("\\help")
    text = said(out)
    assert all(f"\\{name}" in text for name in ("streams", "describe", "explain", "code", "plan", "load", "quit"))


def test_quit_ends_the_session(session: tuple[Repl, io.StringIO]) -> None:
    from wql.repl import Quit

    repl, _ = session
    for entry in ("\\quit", "\\q", "quit", "exit;"):
        with pytest.raises(Quit):
            repl.handle(entry)


# ------------------------------------------------------------------ completion and highlighting


def completions(repl: Repl, text: str) -> list[str]:
    found = completer(repl).get_completions(Document(text, len(text)), CompleteEvent(completion_requested=True))
    return [c.text for c in found]


def test_completion_offers_keywords_streams_columns_functions(session: tuple[Repl, io.StringIO]) -> None:
    repl, _ = session
    repl.handle(CREATE)
    assert completions(repl, "SEL") == ["SELECT"]
    assert completions(repl, "sel") == ["select"]
    assert completions(repl, "SELECT max(spe") == ["speed"]
    assert completions(repl, "SELECT seg_id FROM tr") == ["traffic"]  # only streams after FROM
    assert "RANGE" in completions(repl, "SELECT 1 AS x FROM traffic [RAN")
    assert "MINUTES" in completions(repl, "SELECT 1 AS x FROM traffic [RANGE 5 MINU")
    assert "percentile_approx" in completions(repl, "SELECT percentile_a")
    assert "window_start" in completions(repl, "SELECT window_s")
    assert completions(repl, "\\des") == ["describe"]
    assert completions(repl, "\\describe tr") == ["traffic"]
    assert completions(repl, "\\plan pa") == ["pane"]
    assert completions(repl, "\\timing o") == ["on", "off"]
    assert completions(repl, "\\explain SELECT max(spe") == ["speed"]


def test_completion_of_types_only_in_create_stream(session: tuple[Repl, io.StringIO]) -> None:
    repl, _ = session
    assert "TIMESTAMP" in completions(repl, "CREATE STREAM s (t TIMES")
    assert "DOUBLE" in completions(repl, "CREATE STREAM s (t DOUB")
    assert "INTEGER" in completions(repl, "CREATE STREAM s (n INTEG")
    assert "INTEGER" not in completions(repl, "SELECT INTEG")  # a type, not a function


def test_keywords_come_from_the_grammar() -> None:
    grammar = (ROOT / "wql" / "grammar" / "wql.lark").read_text()
    for word in ("SELECT", "WATTR", "SATTR", "PATTR", "SLACK", "EMIT", "UNBOUNDED", "ROW_NUM"):
        assert word in keywords() and word in grammar
    assert {"MINUTE", "MINUTES", "ROWS", "ROW"} <= set(units())


def test_lexer_tokens() -> None:
    text = "SELECT max(speed) AS top FROM traffic [RANGE 5 MINUTES WATTR ts] WHERE seg_id = 'I5;01' -- note"
    tokens = [(kind, value) for kind, value in lex(text, WQLLexer()) if value.strip()]
    assert (Keyword, "SELECT") in tokens
    assert (Name.Function, "max") in tokens
    assert (Name.Class, "traffic") in tokens
    assert (Keyword.Reserved, "RANGE") in tokens and (Keyword.Reserved, "WATTR") in tokens
    assert (Keyword.Constant, "MINUTES") in tokens
    assert (Number, "5") in tokens
    assert (String.Single, "'I5;01'") in tokens
    assert tokens[-1][1] == "-- note"
    backslash = [value for kind, value in lex("\\describe traffic", WQLLexer()) if kind is Keyword.Pseudo]
    assert backslash == ["\\describe"]
    assert "".join(value for _, value in lex(text, WQLLexer())).rstrip("\n") == text  # nothing lost


def test_html_is_inline_styled() -> None:
    page = wql_html("SELECT 1 AS x FROM s;")
    assert '<span style="' in page and "SELECT" in page
    assert '<span style="' in python_html("def f():\n    return 1\n")


# ------------------------------------------------------------------ queries on Spark, in-process


@pytest.mark.spark
def test_query_runs_through_the_api_path(session: tuple[Repl, io.StringIO], spark: Any) -> None:
    import wql

    repl, out = session
    repl.spark = SparkStarter(factory=lambda: spark)
    repl.handle(CREATE)
    repl.handle("\\timing on")
    said(out)
    repl.handle(Q1)
    text = said(out)
    expected = wql.compile(CREATE + "\n" + Q1, str(EXAMPLES / "q.wql")).run(spark).count()
    assert "traffic: 1,920 rows read" in text
    assert re.search(r"wid\s+┃\s+window_start\s+┃\s+window_end\s+┃\s+seg_id\s+┃\s+max_speed", text)
    assert f"{expected:,} rows (first 20 shown)" in text
    shown = [line.strip("│").split("│") for line in text.splitlines() if line.startswith("│")]
    windows = [(int(cells[0]), cells[3].strip()) for cells in shown]
    assert len(windows) == 20 and windows == sorted(windows)  # no ORDER BY: window order, wid then seg_id
    assert re.search(r"time: \d+\.\d{3} s", text)
    assert "Plan    pane" in (repl.last.code if repl.last else "")
    repl.handle("\\explain")
    assert "← chosen" in said(out)


@pytest.mark.spark
def test_ctrl_c_cancels_the_query_and_keeps_the_session(session: tuple[Repl, io.StringIO], spark: Any) -> None:
    import _thread

    repl, out = session
    repl.spark = SparkStarter(factory=lambda: spark)
    repl.handle(CREATE)
    repl.handle("\\plan bucket")
    said(out)
    # Many small input partitions: a cancelled task still finishes its partition (Spark's tight loops
    # over a cached batch never look for kills), and this session is shared with other tests.
    confs = {"spark.sql.files.maxPartitionBytes": "512", "spark.sql.files.openCostInBytes": "0"}
    saved = {key: spark.conf.get(key) for key in confs}
    timer = threading.Timer(6.0, _thread.interrupt_main)
    try:
        for key, value in confs.items():
            spark.conf.set(key, value)
        timer.start()
        started = time.monotonic()
        repl.handle(SLOW)
    finally:
        timer.cancel()
        for key, value in saved.items():
            spark.conf.set(key, value)
    assert "cancelled" in said(out)
    assert time.monotonic() - started < 60
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 30  # the status store hears of the cancel a little later
    while tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not tracker.getActiveJobsIds()  # the jobs are gone, not just abandoned
    repl.handle("\\plan auto")
    started = time.monotonic()
    repl.handle("SELECT count(*) AS n FROM traffic [RANGE 1 HOUR WATTR ts];")
    assert "2 rows" in said(out)
    assert time.monotonic() - started < 60  # not queued behind what was cancelled


# ------------------------------------------------------------------ in a pseudo-terminal, as a person types

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")


def spawn(tmp_path: Path, *files: str, term: str = "dumb", spark: bool = False) -> Any:
    """`wql repl` in a pseudo-terminal, in the examples folder, with its history in tmp_path."""
    import pexpect

    env = dict(os.environ)
    env.update(
        TERM=term,
        COLUMNS="200",
        LINES="50",
        WQL_HISTORY=str(tmp_path / "history"),
        WQL_REPL_PRESTART="1" if spark else "0",
        PROMPT_TOOLKIT_NO_CPR="1",
        PYTHONUNBUFFERED="1",
    )
    env.pop("NO_COLOR", None)
    if spark:  # small input partitions: a cancelled task still finishes its own (see SLOW), so keep them short
        conf = {"spark.sql.files.maxPartitionBytes": "2048", "spark.sql.files.openCostInBytes": "0"}
        env["PYSPARK_SUBMIT_ARGS"] = " ".join(f"--conf {k}={v}" for k, v in conf.items()) + " pyspark-shell"
    child = pexpect.spawn(
        sys.executable,
        ["-m", "wql", "repl", *files],
        cwd=str(EXAMPLES),
        env=env,
        encoding="utf-8",
        dimensions=(50, 200),
        timeout=180,
    )
    child.expect("wql> ")
    return child


def type_line(child: Any, text: str) -> None:
    """Type a line and press Enter, a little slower than a paste."""
    child.send(text)
    time.sleep(0.05)
    child.send("\r")


def press_tab(child: Any) -> None:
    """Tab, then a pause: completions are computed asynchronously, as when a person looks at them."""
    time.sleep(0.3)
    child.send("\t")
    time.sleep(0.7)


def leave(child: Any) -> None:
    import pexpect

    type_line(child, "\\quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.fixture
def streams_file(tmp_path: Path) -> str:
    path = tmp_path / "streams.wql"
    path.write_text(CREATE.replace("'data/traffic.csv'", f"'{TRAFFIC}'") + "\n")
    return str(path)


@pytest.mark.slow
@pytest.mark.deep  # make test runs a query in the REPL in process and the terminal UI without Spark
def test_terminal_session_with_spark(tmp_path: Path) -> None:
    """The one session that starts Spark: tables, errors with carets, timing, code, explain, Ctrl-C."""
    child = spawn(tmp_path, spark=True)
    type_line(child, CREATE.splitlines()[0])
    type_line(child, CREATE.splitlines()[1])
    child.expect("✓ stream traffic")
    child.expect("wql> ")
    for line in Q1.splitlines():  # Enter after the first two lines continues the statement
        type_line(child, line)
    child.expect("traffic: 1,920 rows read")
    child.expect(r"┃ wid +┃ window_start +┃ window_end +┃ seg_id +┃ max_speed +┃ min_speed +┃")
    child.expect(r"│ \d+ +│ 2024-03-15 \d\d:\d\d:00 │ 2024-03-15 \d\d:\d\d:00 │ I5-0\d  │")
    child.expect(r"([\d,]+) rows \(first 20 shown\)")
    child.expect("wql> ")

    type_line(child, "SELECT seg_id, max(sped) AS top")
    type_line(child, "FROM traffic [RANGE 5 MINUTES WATTR ts] GROUP BY seg_id;")
    child.expect("name error: unknown column 'sped'")
    child.expect(r"1 \| SELECT seg_id, max\(sped\) AS top")
    child.expect(r"\|\s{20}\^\^\^\^")
    child.expect("did you mean 'speed'")
    child.expect("wql> ")

    type_line(child, "\\timing on")
    child.expect("timing: on")
    type_line(child, "SELECT count(*) AS n FROM traffic [RANGE 30 MINUTES WATTR ts];")
    child.expect("4 rows")
    child.expect(r"time: \d+\.\d+ s")
    child.expect("wql> ")

    type_line(child, "\\code")
    child.expect("def query\\(traffic: DataFrame\\) -> DataFrame:")
    child.expect("wql> ")
    type_line(child, "\\explain")
    child.expect("class +CF")
    child.expect("← chosen")
    child.expect("wql> ")

    type_line(child, "\\plan bucket")
    child.expect("plan: bucket")
    type_line(child, SLOW.replace("7 DAYS", "3 DAYS"))  # each reading into 259,200 windows: long enough
    time.sleep(4)  # the job is running
    child.sendintr()
    child.expect("cancelled", timeout=60)
    child.expect("wql> ")
    type_line(child, "\\plan auto")
    type_line(child, "SELECT count(*) AS n FROM traffic [RANGE 1 HOUR WATTR ts];")
    child.expect("2 rows")
    child.expect("wql> ")
    leave(child)


@pytest.mark.slow
def test_terminal_completion_describe_history(tmp_path: Path, streams_file: str) -> None:
    """Tab completes commands, streams, keywords and columns; a second session recalls the first's entries."""
    child = spawn(tmp_path, streams_file)
    child.send("\\des")
    press_tab(child)
    child.send(" tra")
    press_tab(child)
    child.send("\r")
    child.expect("stream traffic")
    child.expect(r"speed +DOUBLE")
    child.expect("wql> ")

    child.send("EXPLAIN SEL")
    press_tab(child)
    child.send(" max(spe")
    press_tab(child)
    type_line(child, ") AS top FROM traffic [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts];")
    child.expect(r"SELECT MAX\(speed\) AS top")  # the completed query, as WQL read it
    child.expect("class +CF")
    child.expect("wql> ")

    type_line(child, "\\streams")
    child.expect(r"traffic +seg_id STRING, speed DOUBLE, ts TIMESTAMP")
    child.expect("wql> ")
    leave(child)

    history = (tmp_path / "history").read_text()
    assert "+\\describe traffic" in history
    assert "+EXPLAIN SELECT max(speed) AS top FROM traffic" in history

    child = spawn(tmp_path, streams_file)
    for _ in range(3):  # Up: \\quit, \\streams, then the EXPLAIN
        child.send("\x1b[A")
        time.sleep(0.3)
    child.send("\r")
    child.expect(r"SELECT MAX\(speed\) AS top")
    child.expect("class +CF")
    child.expect("wql> ")
    leave(child)


@pytest.mark.slow
def test_full_terminal_ui(tmp_path: Path, streams_file: str) -> None:
    """With a real terminal type: colours, the toolbar and the completion menu, and still the same answers."""
    import pexpect

    child = spawn(tmp_path, streams_file, term="xterm-256color")
    child.send("\\describe traffic")
    time.sleep(0.3)
    child.send("\r")
    child.expect("TIMESTAMP")
    child.expect("wql> ")
    child.send("SELECT m")
    press_tab(child)  # several candidates: a menu, nothing inserted
    child.send("\x03")  # Ctrl-C drops the input
    child.expect("wql> ")
    child.send("\x04")  # Ctrl-D leaves
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    screen = ANSI.sub("", child.before or "")
    assert "Traceback" not in screen


@pytest.mark.spark
def test_a_stream_starts_prints_windows_as_triggers_close_them_and_stops(
    session: tuple[Repl, io.StringIO], spark: Any, tmp_path: Path
) -> None:
    repl, out = session
    repl.spark = SparkStarter(factory=lambda: spark)
    landing = tmp_path / "landing"
    landing.mkdir()
    lines = [f"2024-01-01 00:00:{s:02d},{'ab'[s % 2]},{s}" for s in range(30)]
    (landing / "part-0.csv").write_text("ts,k,v\n" + "\n".join(lines) + "\n")
    declaration = f"CREATE STREAM ev (ts TIMESTAMP, k STRING, v DOUBLE) FROM '{landing}' FORMAT csv"
    repl.handle(declaration + " OPTIONS (header = true);")
    query = "SELECT k, count(*) AS n FROM ev [RANGE 10 SECONDS WATTR ts] GROUP BY k;"
    repl.handle(f"\\stream {query}")
    assert "✓ stream 1 started (plan" in said(out)
    run = repl.running[1]
    deadline = time.monotonic() + 120
    while not run.triggers:
        assert time.monotonic() < deadline, said(out)
        time.sleep(0.2)
    repl.handle("\\stop 1 drain")
    text = said(out)
    assert "stream 1, trigger 0: windows" in text and "stream 1, drain: windows" in text
    assert re.search(r"stream 1, trigger 0: 30 rows in, 4 windows emitted", text), text
    assert "✓ stream 1 stopped after 2 triggers, 6 windows" in text
    assert not repl.running
    repl.handle("\\stop")
    assert "no stream is running" in said(out)


def test_completion_after_an_attribute_clause_offers_the_streams_columns(session: tuple[Repl, io.StringIO]) -> None:
    """WATTR takes a column of the stream (or row_num): not wid, not the stream's name, not a keyword."""
    repl, _ = session
    repl.handle(CREATE)
    offered = completions(repl, "SELECT max(speed) AS m FROM traffic [RANGE 5 MINUTES WATTR ")
    assert offered == ["seg_id", "speed", "ts", "row_num"]
    assert completions(repl, "SELECT max(speed) AS m FROM traffic [RANGE 5 MINUTES WATTR s") == ["seg_id", "speed"]
    assert completions(repl, "SELECT 1 AS x FROM traffic [RANGE 5 ROWS PATTR seg_id, s") == ["speed"]
    assert "row_num" not in completions(repl, "SELECT 1 AS x FROM traffic [RANGE 5 ROWS PATTR ")
    assert completions(repl, "SELECT 1 AS x FROM traffic [RANGE 5 ROWS SATTR rank(t") == ["ts"]
    assert "wid" in completions(repl, "SELECT w")  # elsewhere window columns are still offered


def test_code_pages_a_long_program_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES)
    monkeypatch.setenv("WQL_REPL_PRESTART", "0")
    buffer = io.StringIO()
    console = Console(file=buffer, width=120, height=40, force_terminal=True, color_system=None)
    paged: list[str] = []

    class Pager:
        def __enter__(self) -> None:
            paged.append("open")

        def __exit__(self, *exc: object) -> None:
            paged.append("shown")

    monkeypatch.setattr(console, "pager", lambda **kwargs: Pager())
    repl = Repl(console, spark=NoSpark())
    repl.handle(CREATE)
    repl.handle("\\code " + Q1)
    assert paged == ["open", "shown"] and "def query(traffic: DataFrame)" in buffer.getvalue()
