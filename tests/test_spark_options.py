"""Spark settings from the command line (--conf, --packages, --jars) in `wql run`, `wql repl` and the
magic, and what `wql run` says while Spark starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import wql
from tests.conftest import EXAMPLES, ROOT
from wql.cli import _parser
from wql.runtime.session import spark_settings, start_session

WQL = [sys.executable, "-m", "wql"]
TRAFFIC = (EXAMPLES / "data" / "traffic.csv").as_posix()
QUERY = f"""\
CREATE STREAM traffic (seg_id STRING, speed DOUBLE, ts TIMESTAMP)
  FROM '{TRAFFIC}' FORMAT csv OPTIONS (header = true);
SELECT seg_id, max(speed) AS top FROM traffic [RANGE 5 MINUTES] GROUP BY seg_id LIMIT 3;
"""


def test_settings_are_read_as_spark_submit_spells_them() -> None:
    assert spark_settings(["spark.sql.shuffle.partitions=3", "a.b = c=d"], "g:a:1", "x.jar,y.jar") == {
        "spark.sql.shuffle.partitions": "3",
        "a.b": "c=d",
        "spark.jars.packages": "g:a:1",
        "spark.jars": "x.jar,y.jar",
    }
    with pytest.raises(wql.WQLRuntimeError, match=r"--conf takes key=value, got 'spark\.ui\.enabled'"):
        spark_settings(["spark.ui.enabled"])
    for command in (["run", "q.wql"], ["repl"]):
        args = _parser().parse_args([*command, "--conf", "a=1", "--conf", "b=2", "--packages", "p", "--jars", "j"])
        assert (args.conf, args.packages, args.jars) == (["a=1", "b=2"], "p", "j")


def test_a_connect_server_refuses_jars_in_one_line() -> None:
    with pytest.raises(wql.WQLRuntimeError, match="--jars with a Spark Connect server"):
        start_session(None, "sc://localhost:1", extra={"spark.jars": "x.jar"})


def test_wql_run_conf_takes_effect_on_the_running_session(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process, on the suite's session: --conf sets it there, and --verbose reads it back."""
    from wql.cli import main

    path = tmp_path / "q.wql"
    path.write_text(QUERY, encoding="utf-8")
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        assert main(["run", str(path), "--verbose", "--conf", "spark.sql.shuffle.partitions=3"]) == 0
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", partitions)
    done = capsys.readouterr()
    assert "Spark settings given: spark.sql.shuffle.partitions=3" in done.err
    assert "3 rows" in done.out


@pytest.mark.slow
@pytest.mark.deep  # its ground, in process: the test above
def test_wql_run_conf_takes_effect(tmp_path: Path) -> None:
    """The setting reaches a session `wql run` starts: --verbose reads it back from the running Spark."""
    path = tmp_path / "q.wql"
    path.write_text(QUERY, encoding="utf-8")
    done = subprocess.run(
        [*WQL, "run", str(path), "--verbose", "--conf", "spark.sql.shuffle.partitions=3"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Spark settings given: spark.sql.shuffle.partitions=3" in done.stderr
    assert "3 rows" in done.stdout


@pytest.mark.slow
def test_wql_run_says_starting_spark_at_once_on_a_terminal(tmp_path: Path) -> None:
    """Spark's JVM takes its start-up with fd 2 pointed at Spark's log; the status line must not go there."""
    pexpect = pytest.importorskip("pexpect")
    path = tmp_path / "q.wql"
    path.write_text(QUERY, encoding="utf-8")
    started = time.monotonic()
    child = pexpect.spawn(
        WQL[0],
        [*WQL[1:], "run", str(path)],
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=20,
        dimensions=(40, 160),
        env={**os.environ, "TERM": "xterm"},
    )
    try:
        child.expect("starting Spark")
        assert time.monotonic() - started < 20
    finally:
        # The whole process group: killing wql alone left Spark's JVM running after the suite.
        os.killpg(child.pid, signal.SIGKILL)
        child.close(force=True)


@pytest.mark.spark
def test_the_magic_sets_conf_on_the_running_session(spark: Any) -> None:
    pytest.importorskip("IPython")
    from wql.notebook import Options, _apply_settings, parse_options

    options, rest = parse_options("--conf spark.sql.shuffle.partitions=3 --conf=spark.sql.ansi.enabled=true -q")
    assert options.conf == ("spark.sql.shuffle.partitions=3", "spark.sql.ansi.enabled=true") and rest == ""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        _apply_settings(spark, Options(conf=("spark.sql.shuffle.partitions=3",)))
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    with pytest.raises(wql.WQLRuntimeError, match="--jars: the notebook's Spark session is already running"):
        _apply_settings(spark, Options(jars="x.jar"))
    with pytest.raises(wql.WQLRuntimeError, match=r"--conf spark\.driver\.memory: Spark cannot change it"):
        _apply_settings(spark, Options(conf=("spark.driver.memory=8g",)))


def test_the_kafka_example_names_the_command_that_runs_it() -> None:
    import shlex

    import pyspark

    text = (EXAMPLES / "streams" / "kafka.wql").read_text(encoding="utf-8")
    [line] = [line for line in text.splitlines() if "wql run" in line and "--packages" in line]
    argv = shlex.split(line.removeprefix("--").strip())
    assert argv[:3] == ["wql", "run", "examples/streams/kafka.wql"] and (ROOT / argv[2]).exists()
    args = _parser().parse_args(argv[1:])
    assert args.stream and args.packages == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"
