"""Streams end to end: `wql run --stream` over a directory that files land in, and the job `wql compile
--stream` prints, killed mid-stream and restarted from its checkpoint under spark-submit.

What a user relies on: a drained stream with nothing late writes exactly the batch run's windows;
late and malformed rows are counted, reported and kept with the reason; a restart after a crash
neither loses nor repeats a window. Files get increasing modification times, the order in which
Spark's file source picks them up.
"""

from __future__ import annotations

import csv
import datetime
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import wql
from tests.test_jobs import SPARK_HOME, environment
from wql.cli import main
from wql.grammar.errors import WQLRuntimeError

pytestmark = pytest.mark.spark

BASE = datetime.datetime(2024, 1, 1)
QUERY = """CREATE STREAM ev (ts TIMESTAMP, k STRING, v DOUBLE) FROM '{path}' FORMAT csv OPTIONS (header = 'true');
SELECT k, count(*) AS n, sum(v) AS total FROM ev [RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts SLACK 2 SECONDS]
GROUP BY k;
"""


def land(folder: Path, name: str, lines: list[str], order: int) -> None:
    """A csv file as an upstream writer leaves it: complete, with a later mtime than the ones before."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("ts,k,v\n" + "".join(line + "\n" for line in lines))
    stamp = 1_700_000_000 + 10 * order
    os.utime(path, (stamp, stamp))


def events(first: int, count: int) -> list[str]:
    return [f"{BASE + datetime.timedelta(seconds=s)},{'ab'[s % 2]},{s % 7}" for s in range(first, first + count)]


def windows(folder: Path) -> list[tuple[str, ...]]:
    """Every window row in a directory of csv files (or one csv file), sorted."""
    files = sorted(folder.glob("*.csv")) if folder.is_dir() else [folder]
    rows = []
    for path in files:
        with path.open() as handle:
            rows += [tuple(r) for r in list(csv.reader(handle))[1:]]
    return sorted(rows)


def test_a_drained_stream_writes_the_batch_windows_and_keeps_late_and_malformed_rows(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "in"
    for order in range(3):
        land(data, f"part-{order}.csv", events(20 * order, 20), order)
    script = tmp_path / "q.wql"
    script.write_text(QUERY.format(path=data))
    assert main(["run", str(script), "--output", str(tmp_path / "batch.csv")]) == 0
    arguments = ["--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck")]
    late = ["--late", str(tmp_path / "late")]
    code = main(["run", str(script), "--stream", "--drain", "--max-files", "1", *arguments, *late])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert windows(tmp_path / "out") == windows(tmp_path / "batch.csv")
    # Three files, one a trigger; with the open windows in Spark's state store, Spark runs one more trigger,
    # without data, to move its watermark past the last file's windows. Then the drain.
    assert re.search(r"\b[34] triggers and the drain, 26 windows;", err) and "late" not in err, err
    assert not (tmp_path / "late").exists()

    # A second stream: a late row (punctuation 00:00:37 after the first file) and a malformed line.
    land(tmp_path / "in2", "part-0.csv", events(20, 20), 0)
    land(tmp_path / "in2", "part-1.csv", [*events(40, 3), f"{BASE},a,1", "not a time,b,2"], 1)
    script.write_text(QUERY.format(path=tmp_path / "in2"))
    arguments = ["--output", str(tmp_path / "out2"), "--checkpoint", str(tmp_path / "ck2")]
    code = main(["run", str(script), "--stream", "--drain", "--max-files", "1", *arguments, *late])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "1 late row and 1 malformed row" in out + err
    kept = windows(tmp_path / "late")
    header = (tmp_path / "late").glob("*.csv").__next__().read_text().splitlines()[0].split(",")
    reasons = {row[header.index("wql_reason")]: row for row in kept}
    assert set(reasons) == {"late", "malformed"}
    assert reasons["late"][header.index("ts")].startswith("2024-01-01 00:00:")
    assert "not a time" in reasons["malformed"][header.index("wql_record")]


def test_the_summary_counts_the_triggers_its_status_lines_show(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--once --drain` over two files, one a trigger: a status line per trigger and one for the drain. The
    summary counts the triggers those lines show and says the stream was drained; the drain is no trigger."""
    data = tmp_path / "in"
    for order in range(2):
        land(data, f"part-{order}.csv", events(20 * order, 20), order)
    script = tmp_path / "q.wql"
    script.write_text(QUERY.format(path=data))
    code = main(
        ["run", str(script), "--stream", "--once", "--drain", "--max-files", "1", "--checkpoint", str(tmp_path / "ck")]
    )
    _, err = capsys.readouterr()
    assert code == 0, err
    shown = re.findall(r"^trigger \d+:", err, re.MULTILINE)
    assert len(shown) >= 2 and len(re.findall(r"^drain:", err, re.MULTILINE)) == 1, err
    assert re.search(rf": {len(shown)} triggers and the drain, \d+ windows", err), err


@pytest.mark.deep  # make test restarts a stream after a fault at each point in process (test_stream_faults.py)
def test_a_killed_job_restarts_from_its_checkpoint_without_losing_or_repeating_windows(
    spark: object, tmp_path: Path
) -> None:
    """`wql compile --stream` prints the job; `python job.py` is killed (SIGKILL) after its first trigger,
    files keep landing, and spark-submit of the same job with the same checkpoint drains the stream."""
    data = tmp_path / "in"
    land(data, "part-0.csv", events(0, 20), 0)
    land(data, "part-1.csv", events(20, 20), 1)
    job = tmp_path / "job.py"
    job.write_text(wql.compile(QUERY.format(path=data), stream=True).stream_code)
    shadow = tmp_path / "shadow" / "wql"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('a generated job must not import wql')\n")
    out, checkpoint = tmp_path / "out", tmp_path / "ck"
    sinks = ["--output", str(out), "--checkpoint", str(checkpoint), "--max-files", "1", "--interval", "0"]
    first = subprocess.Popen(
        [sys.executable, str(job), *sinks],
        env=environment(job),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not list(out.glob("batch-*.csv")):
            assert first.poll() is None, first.stdout.read() if first.stdout else ""
            assert time.monotonic() < deadline, "the first trigger did not publish in time"
            time.sleep(0.5)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(60)
    land(data, "part-2.csv", events(40, 20), 2)
    submit = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", "local[2]", str(job), *sinks, "--drain"]
    second = subprocess.run(submit, env=environment(job), capture_output=True, text=True, timeout=300, check=False)
    assert second.returncode == 0, second.stderr[-3000:]
    whole = tmp_path / "whole"
    land(whole, "all.csv", events(0, 60), 0)
    batch = tmp_path / "batch.csv"
    script = tmp_path / "whole.wql"
    script.write_text(QUERY.format(path=whole))
    assert main(["run", str(script), "--output", str(batch)]) == 0
    got = windows(out)
    assert len(got) == len(set(got)), "a window was written twice"
    assert got == windows(batch)


@pytest.mark.parametrize("stream", [False, True])
def test_a_csv_header_that_differs_from_the_declaration_is_one_clear_line(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str], stream: bool
) -> None:
    data = tmp_path / "in"
    data.mkdir()
    (data / "x.csv").write_text("time,key,value\n2024-01-01 00:00:01,a,1\n")
    script = tmp_path / "q.wql"
    script.write_text(QUERY.format(path=data))
    options = ["--stream", "--drain", "--checkpoint", str(tmp_path / "ck")] if stream else []
    assert main(["run", str(script), *options]) != 0
    err = capsys.readouterr().err
    assert "x.csv: the csv header (time, key, value) does not match the declared columns (ts, k, v)" in err
    assert "Traceback" not in err


def test_a_missing_kafka_connector_names_the_package_to_add(spark: object, tmp_path: Path) -> None:
    compiled = wql.compile((Path(__file__).parent.parent / "examples" / "streams" / "kafka.wql").read_text())
    package = r"--packages org\.apache\.spark:spark-sql-kafka-0-10_2\.13:4\."
    with pytest.raises(WQLRuntimeError, match=package) as caught:
        compiled.start(spark, once=True, checkpoint=str(tmp_path / "ck"))
    assert "Traceback" not in str(caught.value)


def test_the_trigger_status_line_counts_in_words() -> None:
    """One line per trigger, read by a person: singular and plural as counted, zero counts left out."""
    from wql.runtime.streaming import Trigger

    one = Trigger(
        3, rows=1, late=0, malformed=1, nulls=0, punctuations=1, windows=1, punctuation="12:00:27", state_rows=1
    )
    assert one.line() == (
        "trigger 3: 1 row in, 1 malformed, 1 punctuation row, 1 window emitted, punctuation 12:00:27, state 1 row"
    )
    many = Trigger(
        "drain",
        rows=0,
        late=2,
        malformed=0,
        nulls=0,
        punctuations=0,
        windows=6,
        punctuation="end of stream",
        state_rows=0,
    )
    assert many.line() == "drain: 0 rows in, 2 late, 6 windows emitted, punctuation end of stream, state 0 rows"


@pytest.mark.parametrize(
    ("settings", "adaptive", "partitions"),
    [
        ({}, "false", "cores"),  # by default a trigger's own work runs without adaptive execution, a partition a core
        ({"spark.sql.shuffle.partitions": "3"}, "false", "3"),  # the session's own partitions stay
        ({"spark.wql.stream.adaptive": "true"}, "true", "200"),  # the job keeps adaptive execution when told to
        ({"spark.sql.adaptive.enabled": "true"}, "true", "200"),  # or when the session sets it itself
    ],
)
def test_a_trigger_runs_without_adaptive_execution_unless_told(
    spark: object, tmp_path: Path, settings: dict[str, str], adaptive: str, partitions: str
) -> None:
    """Each trigger's own jobs run with adaptive execution off in the query's session (a clone), and the
    job's session keeps what it had. On the files engine: for a query with a stateful operator (the state
    store engine's) Structured Streaming turns adaptive execution off itself."""
    from wql.runtime.execute import load_job

    keys = ("spark.wql.stream.adaptive", "spark.sql.adaptive.enabled", "spark.wql.stream.state")
    keys += ("spark.sql.shuffle.partitions",)
    before = {key: spark.conf.getAll.get(key) for key in keys}  # type: ignore[attr-defined]
    for key in keys:
        spark.conf.unset(key)  # type: ignore[attr-defined]
    for key, value in {**settings, "spark.wql.stream.state": "files"}.items():
        spark.conf.set(key, value)  # type: ignore[attr-defined]
    land(tmp_path / "in", "part-0.csv", events(0, 20), 0)
    job = load_job(wql.compile(QUERY.format(path=tmp_path / "in"), stream=True).stream_code)
    seen: set[tuple[str, str]] = set()

    def emit(result: object, name: str) -> int:
        conf = result.sparkSession.conf  # type: ignore[attr-defined]
        seen.add((conf.get("spark.sql.adaptive.enabled"), conf.get("spark.sql.shuffle.partitions")))
        return 0

    cores = str(spark.sparkContext.defaultParallelism)  # type: ignore[attr-defined]
    try:
        job.await_stream(job.start_stream(spark, emit, str(tmp_path / "ck"), {}, None, "csv", True, None, 1))
        assert seen == {(adaptive, cores if partitions == "cores" else partitions)}
        assert spark.conf.get("spark.sql.adaptive.enabled") == settings.get("spark.sql.adaptive.enabled", "true")  # type: ignore[attr-defined]
        assert spark.conf.get("spark.sql.shuffle.partitions") == settings.get("spark.sql.shuffle.partitions", "200")  # type: ignore[attr-defined]
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)  # type: ignore[attr-defined]
            else:
                spark.conf.set(key, value)  # type: ignore[attr-defined]


SESSIONS = """CREATE STREAM ev (ts TIMESTAMP, k STRING, v DOUBLE) FROM '{path}' FORMAT csv OPTIONS (header = 'true');
SELECT k, count(*) AS n, sum(v) AS total FROM ev [SESSION GAP 2 SECONDS WATTR ts PATTR k SLACK 10 SECONDS]
{emit};
"""


def test_session_changes_applied_in_order_give_the_batch_sessions(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`wql run --stream` of sessions with EMIT CHANGES: the second file's tuple at 2 s merges the first file's
    sessions at 0 s and 4 s, so its trigger retracts the one at 4 s. A consumer that applies the files in
    trigger order, by k and window_start, ends with the batch run's sessions; the terminal shows wql_change."""
    data = tmp_path / "in"
    at = [f"{BASE + datetime.timedelta(seconds=s)},a,{s}" for s in (0, 4, 2, 30)]
    land(data, "part-0.csv", at[:2], 0)
    land(data, "part-1.csv", at[2:3], 1)
    land(data, "part-2.csv", [at[3], f"{BASE + datetime.timedelta(seconds=31)},b,1"], 2)
    script = tmp_path / "q.wql"
    script.write_text(SESSIONS.format(path=data, emit=""))
    assert main(["run", str(script), "--output", str(tmp_path / "batch.csv")]) == 0
    script.write_text(SESSIONS.format(path=data, emit="EMIT CHANGES"))
    arguments = ["--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck"), "--max-files", "1"]
    code = main(["run", str(script), "--stream", "--drain", *arguments])
    _, err = capsys.readouterr()
    assert code == 0, err
    held: dict[tuple[str, str], tuple[str, ...]] = {}
    changes = []
    for path in sorted((tmp_path / "out").glob("*.csv")):  # batch-00000000 … in trigger order
        with path.open() as handle:
            header, *rows = list(csv.reader(handle))
        change, k, start = header.index("wql_change"), header.index("k"), header.index("window_start")
        for row in rows:
            changes.append((row[change], row[start]))
            if row[change] == "retract":
                del held[row[k], row[start]]
            else:
                held[row[k], row[start]] = tuple(v for i, v in enumerate(row) if i != change)
    retracted = [start for change, start in changes if change == "retract"]
    assert len(retracted) == 1 and "00:00:04" in retracted[0], changes
    assert sorted(held.values()) == windows(tmp_path / "batch.csv")

    # Without --output, the terminal's table has the column too.
    code = main(["run", str(script), "--stream", "--drain", "--checkpoint", str(tmp_path / "ck2"), "--max-files", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "wql_change" in out and "retract" in out
