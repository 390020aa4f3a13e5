"""Generated jobs run on their own: `python job.py`, `spark-submit job.py`, and a standalone cluster.

These start separate JVMs, so they are slow and few. Each job runs with a `wql`
shadow module first on PYTHONPATH that fails on import: the job must not need WQL.
"""

from __future__ import annotations

import csv
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

import wql
from tests.conftest import EXAMPLES
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.slow

SPARK_HOME = Path(pyspark.__file__).parent
TRAFFIC = EXAMPLES / "data" / "traffic.csv"


@pytest.fixture
def job(tmp_path: Path) -> Path:
    """q1 compiled to a file, with a shadow `wql` package that must never be imported."""
    compiled = wql.compile(
        TRAFFIC.parent.parent.joinpath("paper", "q1.wql").read_text(), str(EXAMPLES / "paper" / "q1.wql")
    )
    path = tmp_path / "job.py"
    path.write_text(compiled.code)
    shadow = tmp_path / "shadow" / "wql"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('a generated job must not import wql')\n")
    return path


def environment(job: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(job.parent / "shadow")
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["SPARK_HOME"] = str(SPARK_HOME)
    env["TZ"] = "UTC"
    return env


def expected_rows() -> list[tuple[str, ...]]:
    compiled = wql.compile((EXAMPLES / "paper" / "q1.wql").read_text(), str(EXAMPLES / "paper" / "q1.wql"))
    from datetime import datetime

    with TRAFFIC.open() as handle:
        rows = [
            {"seg_id": r["seg_id"], "speed": float(r["speed"]), "ts": datetime.fromisoformat(r["ts"])}
            for r in csv.DictReader(handle)
        ]
    result = evaluate_query(compiled.query, rows)
    return sorted(
        (str(r["wid"]), r["window_start"].strftime("%Y-%m-%d %H:%M:%S"), r["seg_id"], str(r["max_speed"]))
        for r in result
    )


def produced_rows(path: Path) -> list[tuple[str, ...]]:
    with path.open() as handle:
        return sorted((r["wid"], r["window_start"], r["seg_id"], r["max_speed"]) for r in csv.DictReader(handle))


def run_job(job: Path, command: list[str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """Run the job with `command` (argv without the output), check it succeeded and wrote the expected rows."""
    out = job.parent / "result.csv"
    out.unlink(missing_ok=True)
    done = subprocess.run(
        [*command, "--output", str(out)],
        env=environment(job),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert produced_rows(out) == expected_rows()
    return done


def test_job_runs_with_plain_python(job: Path) -> None:
    done = run_job(job, [sys.executable, str(job)])
    assert "wql: traffic: 1,920 rows read" in done.stderr


@pytest.mark.deep  # make test runs the job under plain python (above), the deep profile under spark-submit too
def test_job_runs_under_spark_submit(job: Path) -> None:
    """Quietly (Spark's WARN level, not its hundreds of INFO lines), unless told otherwise."""
    submit = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", "local[2]"]
    done = run_job(job, [*submit, str(job)])
    assert sum(" INFO " in line for line in done.stderr.splitlines()) < 20, done.stderr[-3000:]
    told = run_job(job, [*submit, "--conf", "spark.log.level=INFO", str(job)])
    assert sum(" INFO " in line for line in told.stderr.splitlines()) > 50


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {seconds:.0f}s")


@pytest.fixture
def cluster(job: Path, tmp_path: Path) -> Iterator[str]:
    """A Spark standalone master and one worker on 127.0.0.1, started with pyspark's spark-class."""
    env = environment(job)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["SPARK_WORKER_DIR"] = str(tmp_path / "work")
    port = free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    logs = tmp_path / "logs"
    logs.mkdir()
    master = subprocess.Popen(
        [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(free_port()),
        ],
        env=env,
        stdout=(logs / "master.out").open("w"),
        stderr=subprocess.STDOUT,
    )
    url = f"spark://127.0.0.1:{port}"
    worker = None
    try:
        wait_for_port(port, 120)
        worker = subprocess.Popen(
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--host",
                "127.0.0.1",
                "--cores",
                "2",
                "--memory",
                "1g",
                "--webui-port",
                str(free_port()),
            ],
            env=env,
            stdout=(logs / "worker.out").open("w"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while "Successfully registered with master" not in (logs / "worker.out").read_text():
            assert worker.poll() is None, (logs / "worker.out").read_text()[-2000:]
            assert time.monotonic() < deadline, "the worker did not register with the master"
            time.sleep(0.5)
        yield url
    finally:
        for process in (worker, master):
            if process is not None:
                process.terminate()
        for process in (worker, master):
            if process is not None:
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()


@pytest.mark.deep
def test_job_runs_on_a_standalone_cluster(job: Path, cluster: str, tmp_path: Path) -> None:
    submit = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster]
    run_job(job, [*submit, "--total-executor-cores", "2", "--executor-memory", "1g", str(job)], timeout=900)
    logs = list((tmp_path / "work").rglob("stderr"))
    assert logs, "no executor ran on the worker"


CALLS = EXAMPLES / "calls.wql"
# examples/calls.wql's stream, with min and max over its calls: the sweep plan (no rounding: a running sum
# may differ from the reference's in the last bits, and round() would then tip over).
SWEPT = (
    "CREATE STREAM"
    + CALLS.read_text().split("CREATE STREAM")[1].split(";")[0]
    + ";\nSELECT region, count(*) AS live, sum(cost) AS spent, max(cost) AS top, min(ended) AS first_end FROM calls "
    "[RANGE 1 HOUR SLIDE 15 MINUTES WATTR (started, ended)] GROUP BY region"
)


def calls_rows() -> list[tuple[str, ...]]:
    """The sweep query's windows from the reference evaluator, as the job writes them to csv."""
    from datetime import datetime

    compiled = wql.compile(SWEPT)
    with (EXAMPLES / "data" / "calls.csv").open() as handle:
        rows = [
            {
                **r,
                "started": datetime.fromisoformat(r["started"]),
                "ended": datetime.fromisoformat(r["ended"]) if r["ended"] else None,
                "cost": float(r["cost"]) if r["cost"] else None,
            }
            for r in csv.DictReader(handle)
        ]
    return sorted(
        (
            str(r["wid"]),
            r["region"],
            str(r["live"]),
            "" if r["spent"] is None else f"{r['spent']:.6f}",
            "" if r["top"] is None else str(r["top"]),
            r["first_end"].strftime("%Y-%m-%d %H:%M:%S") if r["first_end"] else "",
        )
        for r in evaluate_query(compiled.query, rows)
    )


@pytest.mark.deep  # make test runs a job under plain python (above); the codegen tests check its support code
@pytest.mark.parametrize("where", ["jvm", "numpy"])
def test_a_sweep_job_runs_without_wql(tmp_path: Path, where: str) -> None:
    """min and max over examples/calls.wql's interval events (the sweep plan) as a job, with a shadow `wql`
    that fails on import: under plain Python its windows come from the numpy pass copied into the job, under
    spark-submit --jars wql-kernels.jar from the JVM kernel; both equal the reference."""
    from wql.runtime.session import kernel_jar

    compiled = wql.compile(SWEPT)
    assert compiled.plan == "sweep"
    job = tmp_path / "job.py"
    job.write_text(compiled.code)
    shadow = tmp_path / "shadow" / "wql"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('a generated job must not import wql')\n")
    if where == "numpy":
        command = [sys.executable, str(job)]
    else:
        jar = kernel_jar()
        assert jar is not None, "wql-kernels.jar is missing: `make jar` builds it"
        command = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", "local[2]", "--jars", jar, str(job)]
    out = tmp_path / "result.csv"
    done = subprocess.run(
        [*command, "--input", f"calls={EXAMPLES / 'data' / 'calls.csv'}", "--output", str(out)],
        env=environment(job),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with out.open() as handle:
        got = sorted(
            (
                r["wid"],
                r["region"],
                r["live"],
                f"{float(r['spent']):.6f}" if r["spent"] else "",
                r["top"],
                r["first_end"],
            )
            for r in csv.DictReader(handle)
        )
    assert got == calls_rows() and len(got) > 50
