"""Streams that lose nothing and double nothing: every window once, every late or malformed row once, at
whatever point a trigger or a drain dies.

The fault matrix stops a stream at each named point of the driver (docs/design.md lists them) with the
driver's fault hook (WQL_FAULT=POINT[@TRIGGER][:kill]), restarts it from its checkpoint, drains it, and
compares the windows and the late-rows output with an undisturbed run's, which equals the batch result.
Points are chained (each restart dies at the next point), so that one stream covers several; a real
SIGKILL of `wql run --stream`'s process group covers one point here and every point in `make test-deep`.
"""

from __future__ import annotations

import csv
import datetime
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import wql
from tests.streaming import compile_stream, frame, read_late
from tests.test_jobs import SPARK_HOME, environment
from tests.test_stream_runs import BASE, land
from wql.cli import main
from wql.grammar.errors import WQLRuntimeError
from wql.runtime.execute import load_job
from wql.runtime.session import kernel_jar

pytestmark = pytest.mark.spark

QUERY = """CREATE STREAM ev (ts TIMESTAMP, k STRING, v DOUBLE) FROM '{path}' FORMAT csv OPTIONS (header = 'true');
SELECT k, count(*) AS n, sum(v) AS total FROM ev [RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts SLACK 2 SECONDS]
GROUP BY k;
"""
# Sessions keep their state in Spark's state store too (StreamSessions): every key's tuples 2 s apart, each a
# session of its own, emitted as the punctuation passes them.
SESSIONS = """CREATE STREAM ev (ts TIMESTAMP, k STRING, v DOUBLE) FROM '{path}' FORMAT csv OPTIONS (header = 'true');
SELECT k, count(*) AS n, sum(v) AS total FROM ev [SESSION GAP 1 SECONDS WATTR ts SLACK 2 SECONDS PATTR k];
"""


def moment(second: float) -> str:
    return str(BASE + datetime.timedelta(seconds=second))


def landed(folder: Path) -> None:
    """Five files of ten rows, a second apart and two keys; the third brings a late row (at 3 s, after the
    punctuation reached 17 s) and a malformed line."""
    for order in range(5):
        lines = [f"{moment(10 * order + s)},{'ab'[s % 2]},{s}" for s in range(10)]
        if order == 2:
            lines += [f"{moment(3)},a,100", "not a time,b,1"]
        land(folder, f"part-{order}.csv", lines, order)


def rows_of(folder: Path, pattern: str = "*.csv") -> Counter[tuple[str, ...]]:
    """Every row of the csv files in a directory, as a multiset (a row twice counts twice)."""
    found: Counter[tuple[str, ...]] = Counter()
    for path in sorted(folder.glob(pattern)):
        with path.open() as handle:
            found.update(tuple(r) for r in list(csv.reader(handle))[1:])
    return found


class Stream:
    """One stream's job in this process, its input, output, late rows and checkpoint, run again and again
    as a restart would, with a fault at a named point."""

    def __init__(
        self, spark: Any, root: Path, *, urls: bool = False, engine: str = "store", query: str = QUERY
    ) -> None:
        self.spark = spark
        self.engine = engine  # where the open windows are kept: Spark's state store, or files (§8.12)
        self.data = root / "in"
        landed(self.data)
        self.module = load_job(wql.compile(query.format(path=self.data), stream=True).stream_code)
        self.out, self.late, self.checkpoint = root / "out", root / "late", root / "ck"
        # file: URLs take Hadoop's FileSystem for the outputs and the checkpoint, as HDFS or S3 would.
        self.where = {p: f"file://{p}" if urls else str(p) for p in (self.out, self.late, self.checkpoint)}

    def run(self, monkeypatch: pytest.MonkeyPatch, fault: str | None = None, *, drain: bool = True) -> str | None:
        """Run to the end of the input (one file a trigger), then drain; the error a fault raised, if any."""
        emit = self.module.file_sink(self.where[self.out], "csv")
        if fault:
            monkeypatch.setenv("WQL_FAULT", fault)
        before = self.spark.conf.get("spark.wql.stream.state", None)
        self.spark.conf.set("spark.wql.stream.state", self.engine)
        try:
            try:
                running = self.module.start_stream(
                    self.spark, emit, self.where[self.checkpoint], {}, self.where[self.late], "csv", True, None, 1
                )
                self.module.await_stream(running)
            except self.module.StreamEnded as ended:
                if ended.finished or not drain:
                    raise
            if drain:
                self.module.drain_stream(self.spark, self.where[self.checkpoint], emit)
        except (self.module.TriggerFailed, RuntimeError) as error:
            assert fault and "WQL_FAULT" in str(error), error
            return str(error)
        finally:
            monkeypatch.delenv("WQL_FAULT", raising=False)
            if before is None:
                self.spark.conf.unset("spark.wql.stream.state")
            else:
                self.spark.conf.set("spark.wql.stream.state", before)
        assert not fault, f"the fault {fault} did not fire"
        return None

    def windows(self) -> Counter[tuple[str, ...]]:
        return rows_of(self.out)

    def kept(self) -> Counter[tuple[str, ...]]:
        return rows_of(self.late)


@pytest.fixture(scope="module")
def undisturbed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Stream:
    """The stream run once with no fault: what every faulted run must end with. Its windows are the batch
    result over the rows that were not late, each once; the late row and the malformed line are kept."""
    return undisturbed_run(spark, tmp_path_factory, QUERY)


@pytest.fixture(scope="module")
def undisturbed_sessions(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Stream:
    """The session query's stream run once with no fault, as `undisturbed`."""
    return undisturbed_run(spark, tmp_path_factory, SESSIONS)


def undisturbed_run(spark: Any, tmp_path_factory: pytest.TempPathFactory, query: str) -> Stream:
    stream = Stream(spark, tmp_path_factory.mktemp("undisturbed"), query=query)
    monkeypatch = pytest.MonkeyPatch()
    stream.run(monkeypatch)
    on_time = tmp_path_factory.mktemp("on_time")
    for order in range(5):  # the same rows without the late one and the malformed line
        land(on_time, f"part-{order}.csv", [f"{moment(10 * order + s)},{'ab'[s % 2]},{s}" for s in range(10)], order)
    batch = tmp_path_factory.mktemp("batch") / "batch.csv"
    script = batch.parent / "q.wql"
    script.write_text(query.format(path=on_time))
    assert main(["run", str(script), "--output", str(batch)]) == 0
    assert sorted(stream.windows().elements()) == sorted(rows_of(batch.parent, "batch.csv").elements())
    assert max(stream.windows().values()) == 1
    reasons = Counter(row[3] for row in stream.kept().elements())
    assert reasons == {"late": 1, "malformed": 1}, reasons
    return stream


CHAINS = {
    # Each restart dies at the next point; the last restarts drain the stream (and a drain dies too).
    "emit": ["trigger@0", "emit@1", "emit-write@2", "emitted@3", "drain-write"],
    "state": ["state-part@1", "state@2", "late-write@2", "meta@3", "drain"],
    "commit": ["committed@1", "committed@2", "late-write@2", "meta@4", "committed@4", "drained"],
}
# The state points are the files engine's; in make test each other chain runs on the state store engine
# (this query's default) and make test-deep runs them on both. Sessions kept by StreamSessions run the
# chains too: Spark's state store versions them by trigger, so a replayed trigger merges its tuples into
# the sessions as the trigger before left them.
ENGINES = [
    ("emit", "store", "grid"),
    ("state", "files", "grid"),
    ("commit", "store", "grid"),
    ("emit", "store", "sessions"),
    ("commit", "store", "sessions"),
    pytest.param("emit", "files", "grid", marks=pytest.mark.deep),
    pytest.param("commit", "files", "grid", marks=pytest.mark.deep),
]


@pytest.mark.parametrize(("chain", "engine", "query"), ENGINES)
def test_a_stream_that_dies_at_each_point_restarts_to_every_window_and_late_row_once(
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    chain: str,
    engine: str,
    query: str,
) -> None:
    undisturbed: Stream = request.getfixturevalue("undisturbed" if query == "grid" else "undisturbed_sessions")
    text = QUERY if query == "grid" else SESSIONS
    stream = Stream(spark, tmp_path, urls=chain == "state", engine=engine, query=text)
    for point in CHAINS[chain]:
        assert stream.run(monkeypatch, point) is not None
    stream.run(monkeypatch)  # the last restart ends the stream (or finishes its drain)
    assert stream.windows() == undisturbed.windows(), chain
    assert stream.kept() == undisturbed.kept(), chain
    assert not list(stream.out.glob("_wql_staging")) and not list(stream.late.glob("_wql_staging"))


def test_a_drain_refuses_while_a_trigger_is_unfinished_and_then_ends_the_stream(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, undisturbed: Stream
) -> None:
    """A trigger Spark logged but that died before WQL finished it: the drain refuses in one line (its
    rows would be lost, or come out twice); run again, the stream finishes that trigger and drains."""
    stream = Stream(spark, tmp_path)
    assert stream.run(monkeypatch, "emit@2", drain=False) is not None
    with pytest.raises(stream.module.TriggerUnfinished, match=r"trigger 2 .* stopped before it finished"):
        stream.module.drain_stream(spark, str(stream.checkpoint), stream.module.file_sink(str(stream.out), "csv"))
    stream.run(monkeypatch)
    assert stream.windows() == undisturbed.windows()


@pytest.mark.parametrize("engine", ["files", "store"])
def test_a_drain_after_a_trigger_spark_had_not_committed_is_not_replayed(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, undisturbed: Stream, engine: str
) -> None:
    """The last trigger finished in WQL but Spark had not written its commit when the stream stopped; then
    it was drained. A restart must not replay that trigger over the state before the drain (its windows
    came out in the drain and again in the replay): the stream has ended, and says so. With its state in
    Spark's state store (whose reader takes only triggers Spark recorded), the drain refuses instead, and
    a run with --drain lets Spark run the trigger again (the same windows, under the same name), then
    drains."""
    stream = Stream(spark, tmp_path, engine=engine)
    later = tmp_path / "later"
    for name in ("part-2.csv", "part-3.csv", "part-4.csv"):  # they land after the drain
        (stream.data / name).rename(later / name if later.exists() else (later.mkdir() or later / name))
    stream.run(monkeypatch, drain=False)
    # As if it stopped before Spark wrote the last trigger's commit (trigger 1; with the state store, the
    # trigger Spark runs without data after it to move the watermark).
    last = max(int(p.name) for p in (stream.checkpoint / "commits").iterdir() if p.name.isdigit())
    for name in (str(last), f".{last}.crc"):  # Hadoop's checksum file too: a crash leaves neither
        (stream.checkpoint / "commits" / name).unlink(missing_ok=True)
    emit = stream.module.file_sink(str(stream.out), "csv")
    if engine == "store":
        with pytest.raises(stream.module.TriggerUnfinished, match=rf"trigger {last} .* Spark had not recorded it"):
            stream.module.drain_stream(spark, str(stream.checkpoint), emit)
        stream.run(monkeypatch)
    else:
        stream.module.drain_stream(spark, str(stream.checkpoint), emit)
    for path in sorted(later.iterdir()):
        path.rename(stream.data / path.name)
    with pytest.raises(WQLRuntimeError, match=rf"was drained at .*, after trigger {last}: it has ended"):
        wql.compile(QUERY.format(path=stream.data), stream=True).start(
            spark, output=str(stream.out), checkpoint=str(stream.checkpoint), once=True
        ).wait()
    # Everything the two triggers brought, once: the batch result over the first two files.
    first_two = tmp_path / "first_two"
    for order in range(2):
        land(first_two, f"part-{order}.csv", (stream.data / f"part-{order}.csv").read_text().splitlines()[1:], order)
    script = tmp_path / "q.wql"
    script.write_text(QUERY.format(path=first_two))
    assert main(["run", str(script), "--output", str(tmp_path / "batch.csv")]) == 0
    assert stream.windows() == rows_of(tmp_path, "batch.csv")


def test_a_run_on_a_drained_checkpoint_refuses_in_one_line(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A drained stream has ended (as a drained Beam pipeline): new files on its checkpoint are not turned
    late in silence; the run says when it was drained and how to start anew."""
    data = tmp_path / "in"
    land(data, "part-0.csv", [f"{moment(s)},a,1" for s in range(10)], 0)
    script = tmp_path / "q.wql"
    script.write_text(QUERY.format(path=data))
    sinks = ["--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck")]
    assert main(["run", str(script), "--stream", "--once", "--drain", *sinks]) == 0
    capsys.readouterr()
    land(data, "part-1.csv", [f"{moment(s)},a,1" for s in range(10, 20)], 1)
    assert main(["run", str(script), "--stream", "--once", "--drain", *sinks]) != 0
    err = capsys.readouterr().err
    # After trigger 0, or 1: with its state in Spark's state store, Spark runs a trigger without data after
    # the last file, to move its watermark.
    assert re.search(r"was drained at .*, after trigger [01]: it has ended", err) and "--checkpoint" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 3


def test_files_that_land_together_are_read_in_name_order(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Four files copied at once (equal modification times), one a trigger: read chunk_00 first, so that no
    row goes late; the drained stream equals the batch."""
    data = tmp_path / "in"
    data.mkdir()
    for order in range(4):
        path = data / f"chunk_{order:02d}.csv"
        path.write_text("ts,k,v\n" + "".join(f"{moment(20 * order + s)},a,1\n" for s in range(20)))
        os.utime(path, (1_700_000_000, 1_700_000_000))
    script = tmp_path / "q.wql"
    script.write_text(QUERY.format(path=data))
    assert main(["run", str(script), "--output", str(tmp_path / "batch.csv")]) == 0
    sinks = ["--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck"), "--late", str(tmp_path / "l")]
    assert main(["run", str(script), "--stream", "--drain", "--max-files", "1", *sinks]) == 0
    err = capsys.readouterr().err
    assert "late" not in err, err
    assert rows_of(tmp_path / "out") == rows_of(tmp_path, "batch.csv")


def test_a_failing_trigger_names_its_cause_in_one_line(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not Spark's cut "[STREAM_FAILED] …" with the cause only in its log: the trigger and what failed."""
    data = tmp_path / "in"
    landed(data)
    script = tmp_path / "q.wql"
    script.write_text(QUERY.format(path=data))
    monkeypatch.setenv("WQL_FAULT", "emit@1")
    sinks = ["--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck")]
    assert main(["run", str(script), "--stream", "--once", "--max-files", "1", *sinks]) != 0
    err = capsys.readouterr().err
    assert "trigger 1 failed: RuntimeError: WQL_FAULT: a fault injected at emit (1)" in err, err
    assert "STREAM_FAILED" not in err and "Traceback" not in err


def test_a_late_row_of_a_kafka_window_on_a_bigint_attribute_is_kept(spark: Any, tmp_path: Path) -> None:
    """The late-rows output of windows named by tuples on a non-TIMESTAMP attribute crashed the trigger."""
    compiled = compile_stream("SELECT count(*) AS n FROM s [RANGE 10 WATTR x SLIDE KAFKA SLACK 0]")
    module = load_job(compiled.stream_code)
    emitted: list[Any] = []

    def emit(result: Any, name: str) -> int:
        rows = result.collect()
        emitted.extend((name.split("-", maxsplit=1)[0], r["window_start"], r["window_end"], r["n"]) for r in rows)
        return len(rows)

    def at(x: int) -> dict[str, Any]:
        return {"case_id": 0, "k": "a", "v": 1.0, "n": 1, "ts": None, "x": x, "y": None, "d": None}

    checkpoint, late = str(tmp_path / "ck"), str(tmp_path / "late")
    module.run_trigger(spark, frame(spark, [at(20)]), 0, checkpoint, emit, late, "parquet")
    module.run_trigger(spark, frame(spark, [at(5)]), 1, checkpoint, emit, late, "parquet")
    module.drain_stream(spark, checkpoint, emit)
    assert emitted == [("drain", 10, 20, 1)]
    [kept] = read_late(late)
    assert (kept["x"], kept["wql_reason"], kept["wql_punctuation"]) == (5, "late", "20")
    assert kept["wql_missed"] == "windows [x, x + RANGE] with x in [-5, 5]"


def test_generous_late_rows_name_the_windows_they_missed_and_none_when_they_missed_none(
    spark: Any, tmp_path: Path
) -> None:
    """GENEROUS: a late row in no closed window missed none (not "windows 3 to 2"); a Kafka window whose
    end equals the punctuation is not final, so the row went into it and did not miss it."""
    checkpoint, late = str(tmp_path / "ck"), str(tmp_path / "late")

    def at(x: int) -> dict[str, Any]:
        return {"case_id": 0, "k": "a", "v": 1.0, "n": 1, "ts": None, "x": x, "y": None, "d": None}

    grid = compile_stream("SELECT count(*) AS n FROM s [RANGE 10 SLIDE 5 WATTR x SLACK 0 GENEROUS]")
    module = load_job(grid.stream_code)
    module.run_trigger(spark, frame(spark, [at(12)]), 0, checkpoint, lambda r, n: 0, late, "parquet")
    module.run_trigger(spark, frame(spark, [at(11)]), 1, checkpoint, lambda r, n: 0, late, "parquet")
    [kept] = read_late(late)
    assert kept["wql_missed"] == "none: it joined the open windows it belongs to"

    checkpoint, late = str(tmp_path / "ck2"), str(tmp_path / "late2")
    kafka = compile_stream("SELECT count(*) AS n FROM s [RANGE 10 WATTR x SLIDE KAFKA SLACK 0 GENEROUS]")
    module = load_job(kafka.stream_code)
    module.run_trigger(spark, frame(spark, [at(20)]), 0, checkpoint, lambda r, n: 0, late, "parquet")
    module.run_trigger(spark, frame(spark, [at(12)]), 1, checkpoint, lambda r, n: 0, late, "parquet")
    [kept] = read_late(late)  # [10, 20] ends at the punctuation 20: not final, the row joined it
    assert kept["wql_missed"] == "windows [x, x + RANGE] with x in [2, 9]"


@pytest.mark.parametrize("plan", ["bucket", "pane"])
def test_a_generous_late_row_on_a_double_attribute_names_every_closed_window_it_missed(
    spark: Any, tmp_path: Path, plan: str
) -> None:
    """On a DOUBLE attribute first_open is one window early (retention rounds down); the missed text once used
    it and left out the last window the punctuation had closed ("windows 0 to 0" for 0.5 at punctuation
    6 with RANGE 6 SLIDE 3, which missed [-3, 3) and [0, 6)); a tumbling window's one missed window was
    "none". Found by make test's random stream with a tumbling pane plan."""

    def at(d: float) -> dict[str, Any]:
        return {"case_id": 0, "k": "a", "v": 1.0, "n": 1, "ts": None, "x": None, "y": None, "d": d}

    tumbling = [("RANGE 3", "windows 0 to 0")] if plan == "bucket" else []
    for window, want in [("RANGE 6 SLIDE 3", "windows 0 to 1"), *tumbling]:
        checkpoint, late = str(tmp_path / window / "ck"), str(tmp_path / window / "late")
        compiled = compile_stream(f"SELECT count(*) AS n FROM s [{window} WATTR d SLACK 4 GENEROUS]", plan)
        module = load_job(compiled.stream_code)
        module.run_trigger(spark, frame(spark, [at(10.0)]), 0, checkpoint, lambda r, n: 0, late, "parquet")
        module.run_trigger(spark, frame(spark, [at(0.5)]), 1, checkpoint, lambda r, n: 0, late, "parquet")
        [kept] = read_late(late)
        assert kept["wql_missed"] == want, window


def test_a_late_interval_event_between_windows_missed_none(spark: Any, tmp_path: Path) -> None:
    """An event [-4, -1] lies between windows of RANGE 1 every 9: it belongs to none (not "windows -1 to
    -2", which the difference plan's SNAP stream once wrote)."""
    checkpoint, late = str(tmp_path / "ck"), str(tmp_path / "late")

    def event(x: int, y: int) -> dict[str, Any]:
        return {"case_id": 0, "k": "a", "v": 1.0, "n": 1, "ts": None, "x": x, "y": y, "d": None}

    compiled = compile_stream("SELECT count(*) AS n FROM s [RANGE 1 SLIDE 9 WATTR (x, y) SNAP SLACK 5]", "difference")
    module = load_job(compiled.stream_code)
    module.run_trigger(spark, frame(spark, [event(26, 30)]), 0, checkpoint, lambda r, n: 0, late, "parquet")
    module.run_trigger(spark, frame(spark, [event(-4, -1)]), 1, checkpoint, lambda r, n: 0, late, "parquet")
    [kept] = read_late(late)
    assert kept["wql_missed"] == "none: it belongs to no window"


POINTS = ["trigger", "emit", "emit-write", "emitted", "state-part", "state", "late-write", "meta", "committed"]


def killed_and_restarted(tmp_path: Path, point: str, restart: list[str], engine: str = "store") -> tuple[Path, Path]:
    """`wql run --stream` killed with SIGKILL (its process group: Python and Spark's JVM) at trigger 2's
    `point`, then `restart` (a command taking the same sinks) with --drain: the output and late rows.
    The state is kept by `engine` (spark.wql.stream.state); spark-submit gets WQL's kernels with --jars,
    since a checkpoint whose state is in Spark's state store needs them."""
    conf = ["--conf", f"spark.wql.stream.state={engine}"]
    data = tmp_path / "in"
    landed(data)
    script = tmp_path / "q.wql"
    script.write_text(QUERY.format(path=data))
    out, late = tmp_path / "out", tmp_path / "late"
    sinks = ["--output", str(out), "--checkpoint", str(tmp_path / "ck"), "--late", str(late), "--max-files", "1"]
    wql_run = [sys.executable, "-m", "wql", "run", str(script), "--stream", "--once", *conf, *sinks]
    env = {**os.environ, "WQL_FAULT": f"{point}@2:kill"}
    first = subprocess.run(
        wql_run, env=env, capture_output=True, text=True, timeout=300, start_new_session=True, check=False
    )
    assert first.returncode == -signal.SIGKILL, first.stderr[-2000:]
    job = tmp_path / "job.py"
    job.write_text(wql.compile(QUERY.format(path=data), stream=True).stream_code)
    shadow = tmp_path / "shadow" / "wql"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('a generated job must not import wql')\n")
    submit = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", "local[2]", *conf]
    jar = kernel_jar()
    command = [*submit, *(["--jars", str(jar)] if jar else []), str(job)] if restart else wql_run
    second = subprocess.run(
        [*command, *(sinks if restart else []), "--drain"],
        env=environment(job) if restart else {k: v for k, v in env.items() if k != "WQL_FAULT"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert second.returncode == 0, second.stderr[-2000:]
    return out, late


@pytest.mark.slow
@pytest.mark.deep
def test_a_sigkill_of_wql_run_restarts_exactly_once_under_spark_submit(
    spark: Any, tmp_path: Path, undisturbed: Stream
) -> None:
    """Killed while trigger 2's late rows are written aside, `wql run --stream`'s checkpoint (its open
    windows in Spark's state store) is taken up by the job `wql compile --stream` prints, under
    spark-submit without WQL installed, which finishes and drains it."""
    out, late = killed_and_restarted(tmp_path, "late-write", ["spark-submit"])
    assert rows_of(out) == undisturbed.windows()
    assert rows_of(late) == undisturbed.kept()


@pytest.mark.slow
@pytest.mark.deep
@pytest.mark.parametrize(
    ("point", "engine"),
    [(p, e) for e in ("store", "files") for p in POINTS if e == "files" or not p.startswith("state")],
)
def test_a_sigkill_of_wql_run_at_each_point_restarts_exactly_once(
    spark: Any, tmp_path: Path, undisturbed: Stream, point: str, engine: str
) -> None:
    """A real SIGKILL of `wql run --stream` at trigger 2's `point`, then `wql run --stream --drain`."""
    out, late = killed_and_restarted(tmp_path, point, [], engine)
    assert rows_of(out) == undisturbed.windows()
    assert rows_of(late) == undisturbed.kept()


def test_a_stream_refuses_a_checkpoint_whose_drain_stopped_and_finishes_it_with_drain(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, undisturbed: Stream
) -> None:
    stream = Stream(spark, tmp_path)
    assert stream.run(monkeypatch, "drained") is not None
    with pytest.raises(stream.module.StreamEnded, match=r"was being drained .* run it again with --drain"):
        stream.run(monkeypatch, drain=False)
    stream.run(monkeypatch)
    assert stream.windows() == undisturbed.windows()
    with pytest.raises(WQLRuntimeError, match="it has ended"):
        wql.compile(QUERY.format(path=stream.data), stream=True).start(spark, checkpoint=str(stream.checkpoint))
