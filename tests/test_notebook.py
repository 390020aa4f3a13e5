"""WQL in Jupyter: the magics' options and output in an in-process IPython shell, their rows against
the API and `wql run`, and examples/notebook.ipynb executed headless by nbclient."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import wql
from tests.conftest import EXAMPLES

pytest.importorskip("IPython")

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from wql.notebook import Options, WQLMagics, parse_options, result_html

TRAFFIC = EXAMPLES / "data" / "traffic.csv"
CREATE = (
    f"CREATE STREAM traffic (seg_id STRING, speed DOUBLE, ts TIMESTAMP)\n"
    f"  FROM '{TRAFFIC}' FORMAT csv OPTIONS (header = true);\n"
)
Q1 = (EXAMPLES / "paper" / "q1.wql").read_text().split(";", 1)[1].strip() + "\n"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ------------------------------------------------------------------ options


def test_options_are_read_up_to_the_query() -> None:
    options, rest = parse_options("-o result --plan pane --limit 5 -q")
    assert options == Options(output="result", plan="pane", limit=5, quiet=True) and rest == ""
    options, rest = parse_options("--explain --plan=auto SELECT '-x' AS a FROM s [RANGE 5 ROWS] WHERE b > -1;")
    assert options.explain and options.plan is None
    assert rest == "SELECT '-x' AS a FROM s [RANGE 5 ROWS] WHERE b > -1;"  # verbatim, quotes and all
    assert parse_options("-- -o x")[1] == "-o x"
    for bad in ("--bogus", "-o", "-o 1x", "--plan fast", "--limit 0", "--limit=many"):
        with pytest.raises(UsageError):
            parse_options(bad)


def test_result_html_escapes_and_counts() -> None:
    page = result_html(["a", "<b>"], [("<script>", None)], 25, ["s: 25 rows read"])
    assert "&lt;script&gt;" in page and "<script>" not in page and "&lt;b&gt;" in page
    assert "NULL" in page and "25 rows (first 1 shown)" in page and "s: 25 rows read" in page


# ------------------------------------------------------------------ the magics in an IPython shell


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InteractiveShell]:
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.ipython_dir = str(tmp_path_factory.mktemp("ipython"))
    instance = InteractiveShell.instance(config=config)
    result = instance.run_cell("%load_ext wql")
    assert result.success
    yield instance
    InteractiveShell.clear_instance()


def magics(shell: InteractiveShell) -> WQLMagics:
    found = shell.magics_manager.registry["WQLMagics"]
    assert isinstance(found, WQLMagics)
    return found


def run(shell: InteractiveShell, source: str, capsys: pytest.CaptureFixture[str]) -> tuple[Any, str]:
    result = shell.run_cell(source)
    return result, ANSI.sub("", capsys.readouterr().out)


def test_declare_explain_code_without_spark(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(WQLMagics, "_session", lambda self: pytest.fail("Spark was asked for"))
    result, out = run(shell, "%%wql\n" + CREATE, capsys)
    assert result.success and "✓ stream traffic (seg_id STRING, speed DOUBLE, ts TIMESTAMP)" in out
    assert magics(shell).catalog.get("traffic") is not None  # for the kernel's lifetime

    result, out = run(shell, "%%wql --explain\n" + Q1, capsys)
    assert result.success and re.search(r"class\s+CF", out) and "← chosen" in out
    result, out = run(
        shell,
        "%%wql --explain\nSELECT count(*) AS n FROM traffic [RANGE 5 MINUTES RATTR ts SLIDE 1 ROW SATTR row_num];",
        capsys,
    )
    assert result.success and re.search(r"class\s+FCB", out)  # explained even where Spark cannot run it yet

    result, out = run(shell, "%%wql --code --plan bucket\n" + Q1, capsys)
    assert result.success and "def query(traffic: DataFrame) -> DataFrame:" in out and "Plan    bucket" in out
    result, out = run(shell, "%wql", capsys)
    assert result.success and "traffic" in out and str(TRAFFIC) in out


def test_errors_show_the_caret_and_change_nothing(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    cell = (
        "%%wql\n"
        "CREATE STREAM other (a INT, t TIMESTAMP) FROM 'o.csv';\n"
        "SELECT seg_id, max(sped) AS top FROM traffic [RANGE 5 MINUTES WATTR ts] GROUP BY seg_id;\n"
    )
    result, out = run(shell, cell, capsys)
    assert isinstance(result.error_in_exec, wql.WQLNameError)
    assert "unknown column 'sped'" in out and "did you mean 'speed'?" in out
    assert re.search(r"3 \| SELECT seg_id, max\(sped\)", out) and re.search(r"\|\s{20}\^\^\^\^", out)
    assert "Traceback" not in out
    assert magics(shell).catalog.get("other") is None  # the cell was refused as a whole

    result, out = run(shell, "%%wql --bogus\nSELECT 1", capsys)
    assert isinstance(result.error_in_exec, UsageError)
    result, _ = run(shell, "%%wql -o x SELECT\nSELECT 1", capsys)
    assert isinstance(result.error_in_exec, UsageError)  # statements belong in the cell body


def sorted_rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in frame.collect())


@pytest.mark.spark
def test_magic_rows_equal_the_api_and_wql_run(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], spark: Any, tmp_path: Path
) -> None:
    run(shell, "%%wql\n" + CREATE, capsys)
    result, out = run(shell, "%%wql -o got\n" + Q1, capsys)
    assert result.success, out
    got = shell.user_ns["got"]
    assert got.columns == ["wid", "window_start", "window_end", "seg_id", "max_speed", "min_speed"]
    assert "traffic: 1,920 rows read" in out and re.search(r"[\d,]+ rows \(first 20 shown\)", out)

    api = wql.compile(CREATE + Q1).run(spark)
    assert sorted_rows(got) == sorted_rows(api)

    from wql.cli import main

    output = tmp_path / "q1.csv"
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        assert main(["run", str(EXAMPLES / "paper" / "q1.wql"), "--output", str(output)]) == 0
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", partitions)  # `wql run` configures the shared session
    written = spark.read.schema(got.schema).option("header", True).csv(str(output))
    assert sorted_rows(got) == sorted_rows(written)


@pytest.mark.spark
def test_dataframes_in_the_namespace_are_streams(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], spark: Any
) -> None:
    readings = spark.read.csv(str(TRAFFIC), header=True, schema="seg_id STRING, speed DOUBLE, ts TIMESTAMP")
    shell.user_ns["readings"] = readings
    query = "SELECT seg_id, min(speed) AS slowest FROM readings [RANGE 30 MINUTES WATTR ts] GROUP BY seg_id;"
    result, out = run(shell, f"slowest = %wql --limit 3 {query}", capsys)
    assert result.success, out
    slowest = shell.user_ns["slowest"]
    assert "rows (first 3 shown)" in out
    expected = wql.compile(query, streams={"readings": readings}).run(spark, readings=readings)
    assert sorted_rows(slowest) == sorted_rows(expected)

    result, out = run(shell, f"%wql -q {query}", capsys)
    assert result.success and "rows" not in out  # --quiet: nothing shown, the DataFrame returned
    result, out = run(
        shell,
        "%%wql\nSELECT seg_id, max(sped) AS top FROM readings [RANGE 5 MINUTES WATTR ts] GROUP BY seg_id;",
        capsys,
    )
    assert "did you mean 'speed'?" in out  # the DataFrame's schema is the stream's


@pytest.mark.spark
def test_a_temp_view_is_a_stream_and_the_result_a_dataframe(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], spark: Any
) -> None:
    """A cell reads a temp view of the notebook's session FROM TABLE (its columns from the catalog); `-o` keeps
    the result, a DataFrame the next cell goes on with in PySpark."""
    schema = "seg_id STRING, speed DOUBLE, ts TIMESTAMP"
    spark.read.csv(str(TRAFFIC), header=True, schema=schema).createOrReplaceTempView("traffic_view")
    cell = (
        "%%wql -o busy --quiet\nCREATE STREAM t FROM TABLE traffic_view;\n"
        "SELECT seg_id, count(*) AS n FROM t [RANGE 30 MINUTES WATTR ts] GROUP BY seg_id;"
    )
    result, out = run(shell, cell, capsys)
    assert result.success, out
    assert "from table traffic_view" in out  # the declaration, with the view's columns
    result, out = run(shell, "print(busy.where('n > 10').groupBy('seg_id').count().count())", capsys)
    assert result.success and out.strip() == "8", out


@pytest.mark.spark
def test_interrupt_cancels_the_query(shell: InteractiveShell, capsys: pytest.CaptureFixture[str], spark: Any) -> None:
    import _thread
    import threading
    import time

    run(shell, "%%wql\n" + CREATE, capsys)
    # A forced bucket plan copies each reading into its 604,800 windows: minutes of work, here in many
    # short tasks, since a cancelled task still finishes its partition (Spark's tight loops do not look
    # for kills) and this Spark session is shared with other tests.
    schema = "seg_id STRING, speed DOUBLE, ts TIMESTAMP"
    shell.user_ns["parts"] = spark.read.csv(str(TRAFFIC), header=True, schema=schema).repartition(96)
    query = "SELECT count(*) AS n FROM parts [RANGE 7 DAYS SLIDE 1 SECOND WATTR ts];"
    timer = threading.Timer(6.0, _thread.interrupt_main)  # what Jupyter's interrupt button sends
    timer.start()
    try:
        result, _ = run(shell, f"%%wql --plan bucket\n{query}", capsys)
    finally:
        timer.cancel()
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 30
    while tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not tracker.getActiveJobsIds()
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None  # later work is not in its group
    started = time.monotonic()
    result, out = run(shell, "%%wql\nSELECT count(*) AS n FROM traffic [RANGE 1 HOUR WATTR ts];", capsys)
    assert result.success and "2 rows" in out
    assert time.monotonic() - started < 60  # not queued behind what was cancelled


# ------------------------------------------------------------------ the example notebook, headless


def cell_starting(notebook: Any, prefix: str) -> Any:
    matches = [c for c in notebook.cells if c.cell_type == "code" and c.source.startswith(prefix)]
    assert len(matches) == 1, f"expected one cell starting with {prefix!r}"
    return matches[0]


def plain(cell: Any) -> str:
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "error":
            parts.append(ANSI.sub("", "\n".join(output.traceback)))
        else:
            parts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def html(cell: Any) -> str:
    return "\n".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)


@pytest.mark.slow
@pytest.mark.deep
def test_example_notebook_runs_headless(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")

    spec = tmp_path / "jupyter" / "kernels" / "wql-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "WQL tests",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")

    notebook = nbformat.read(EXAMPLES / "notebook.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        notebook, kernel_name="wql-test", timeout=600, resources={"metadata": {"path": str(EXAMPLES)}}
    )
    client.execute()

    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if "raises-exception" in cell.metadata.get("tags", []):
            assert errors, f"this cell should fail: {cell.source[:60]}"
        else:
            assert not errors, f"{cell.source[:60]}:\n{plain(cell)}"

    created = plain(cell_starting(notebook, "%%wql\nCREATE STREAM traffic"))
    assert "✓ stream traffic (seg_id STRING, speed DOUBLE, ts TIMESTAMP)" in created

    q1 = cell_starting(notebook, "%%wql -o q1")
    for column in ("wid", "window_start", "window_end", "seg_id", "max_speed", "min_speed"):
        assert f">{column}</th>" in html(q1)
    assert re.search(r"[\d,]+ rows \(first 20 shown\)", html(q1))

    explained = [plain(c) for c in notebook.cells if c.cell_type == "code" and c.source.startswith("%%wql --explain")]
    assert len(explained) == 3
    assert re.search(r"class\s+CF", explained[0]) and re.search(r"pane\s+[\d,]+\s+← chosen", explained[0])
    assert re.search(r"class\s+FCB", explained[1]) and re.search(r"class\s+FCU", explained[2])

    q3 = html(
        cell_starting(
            notebook, "%%wql --limit 5\nSELECT count(*) AS n\nFROM traffic [RANGE 5 MINUTES RATTR ts SLIDE 1 ROW"
        )
    )
    assert ">n</th>" in q3 and "1,920 rows (first 5 shown)" in q3  # a window per reading (no two share a ts)
    q5 = html(
        cell_starting(
            notebook, "%%wql --limit 5\nSELECT count(*) AS n\nFROM traffic [RANGE 5 MINUTES RATTR ts SLIDE 10"
        )
    )
    assert "192 rows (first 5 shown)" in q5  # a window at every 10th reading

    from_frame = cell_starting(notebook, "%%wql\nSELECT seg_id,\n")
    assert ">readings</th>" in html(from_frame) and ">avg_speed</th>" in html(from_frame)
    assert "slowest" in plain(cell_starting(notebook, "slowest = %wql"))
    code = cell_starting(notebook, "%%wql --code")
    assert "def query(traffic: DataFrame) -> DataFrame:" in plain(code) and "<span" in html(code)

    mistake = cell_starting(notebook, "%%wql\nSELECT seg_id, max(sped)")
    [error] = [o for o in mistake.outputs if o.output_type == "error"]
    assert error.ename == "WQLNameError"
    assert "^^^^" in plain(mistake) and "did you mean 'speed'?" in plain(mistake)

    same = cell_starting(notebook, "import wql")
    assert same.outputs[-1]["data"]["text/plain"] == "True"


@pytest.mark.spark
def test_a_stream_cell_shows_a_table_that_updates_as_windows_close(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], spark: Any, tmp_path: Path
) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    lines = [f"2024-01-01 00:00:{s:02d},{'ab'[s % 2]},{s}" for s in range(30)]
    (landing / "part-0.csv").write_text("ts,k,v\n" + "\n".join(lines) + "\n")
    declaration = f"CREATE STREAM ev (ts TIMESTAMP, k STRING, v DOUBLE) FROM '{landing}' FORMAT csv"
    run(shell, f"%%wql\n{declaration} OPTIONS (header = true);", capsys)
    query = "SELECT k, count(*) AS n FROM ev [RANGE 10 SECONDS WATTR ts] GROUP BY k;"
    result, out = run(shell, f"%%wql -o live --stream\n{query}", capsys)
    assert result.success, out
    assert "✓ stream started (plan" in out and "live.stop(drain=True)" in out
    live = shell.user_ns["live"]
    deadline = time.monotonic() + 120
    while not live.triggers:
        assert time.monotonic() < deadline, "no trigger in time"
        time.sleep(0.2)
    live.stop(drain=True)
    out = ANSI.sub("", capsys.readouterr().out)
    assert "trigger 0: 30 rows in, 4 windows emitted" in out and "drain: 0 rows in, 2 windows emitted" in out
    assert (
        sum(t.windows for t in live.triggers)
        == wql.compile(f"{declaration} OPTIONS (header = true);\n{query}").run(spark).count()
    )
    live.close()
    result, out = run(shell, f"%%wql --stream --code\n{query}", capsys)
    assert result.success and "def stream_main" in out


def test_draw_shows_the_first_windows_inline(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(WQLMagics, "_session", lambda self, options=None: pytest.fail("Spark was asked for"))
    shown: list[dict[str, str]] = []
    monkeypatch.setattr("wql.notebook.display", lambda value, **kwargs: shown.append(value))
    result, _ = run(shell, "%%wql --draw\n" + CREATE + Q1, capsys)
    assert result.success
    [picture] = [d for d in shown if "image/svg+xml" in d]
    assert picture["image/svg+xml"].startswith("<svg ") and picture["text/plain"].startswith("the first 12 of")


def test_a_notebook_without_a_session_uses_the_running_wql_server_and_says_so(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `wql server start` running, a cell that would start a local Spark uses the warm server instead;
    --jars (a classpath of its own) still starts one here."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from wql.runtime import server, session

    warm = server.Server(pid=1, port=15999, log="server.log", started=time.time(), master="local[*]")
    started: list[str | None] = []
    shown: list[dict[str, str]] = []
    monkeypatch.setattr(server, "running", lambda: warm)
    monkeypatch.setattr(session, "start_session", lambda master, remote, **kwargs: started.append(remote) or "spark")
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    monkeypatch.setattr("wql.notebook.display", lambda value, **kwargs: shown.append(value))
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert magics(shell)._session(Options()) == "spark" and started == ["sc://127.0.0.1:15999"]
    assert shown[-1]["text/plain"].startswith("using the WQL server at sc://127.0.0.1:15999")
    assert magics(shell)._session(Options(jars="x.jar")) == "spark" and started[-1] is None
