"""WQL on Spark Connect: a local Connect server started from PySpark's own jars on 127.0.0.1, with WQL's
kernels (its jar and extension) and without them, one server at a time.

A Connect client and a local session cannot share a Python process (PySpark's functions serve one
kind), so the client side runs in processes of its own: `wql run --remote`, and pytest over
tests/test_on_connect.py and a differential subset with WQL_TEST_REMOTE set. The results of
`wql run --remote` are compared with the same query run here, locally.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, ROOT
from wql.runtime.local_spark import connect_server
from wql.runtime.session import KERNEL_EXTENSION, kernel_jar

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(os.environ.get("WQL_TEST_REMOTE")), reason="a client run")]

# The differential subset a Connect client runs: every grid plan and both tuple plans' kernels.
DIFFERENTIAL = "(test_time_sliding and (pane or slice or bucket)) or (tuple_named_windows_on_time and bins) or landmark"
QUERIES = f"""
CREATE STREAM traffic (seg_id STRING, speed DOUBLE, ts TIMESTAMP)
  FROM '{EXAMPLES / "data" / "traffic.csv"}' FORMAT csv OPTIONS (header = true);
SELECT seg_id, max(speed) AS top, avg(speed) AS mean FROM traffic [RANGE 10 MINUTES SLIDE 1 MINUTE WATTR ts]
GROUP BY seg_id;
SELECT sum(speed) AS total, count(*) AS n FROM traffic [RANGE 5 MINUTES RATTR ts SLIDE 1 ROW PATTR seg_id];
"""


class Servers:
    """At most one Connect server at a time (the machine has 2 cores): with or without WQL's kernels."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.kernels: bool | None = None
        self.url = ""
        self._running: Any = None

    def start(self, kernels: bool) -> str:
        if self.kernels is kernels:
            return self.url
        self.stop()
        jar = kernel_jar()
        if kernels and jar is None:
            pytest.skip("wql-kernels.jar is not built (make jar needs a JDK)")
        conf = {"spark.sql.shuffle.partitions": "2", "spark.sql.execution.arrow.maxRecordsPerBatch": "100000"}
        if kernels:
            conf["spark.sql.extensions"] = KERNEL_EXTENSION
        logs = self.logs / ("with-kernels" if kernels else "without-kernels")
        self._running = connect_server(logs, jars=[jar] if kernels and jar else None, conf=conf)
        self.url = self._running.__enter__()
        self.kernels = kernels
        return self.url

    def stop(self) -> None:
        if self._running is not None:
            running, self._running, self.kernels = self._running, None, None
            running.__exit__(None, None, None)


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    started = Servers(tmp_path_factory.mktemp("connect"))
    try:
        yield started
    finally:
        started.stop()


def client_environment(url: str, kernels: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.update(WQL_TEST_REMOTE=url, WQL_TEST_KERNELS="1" if kernels else "0", TZ="UTC", PYTHONPATH=str(ROOT))
    env.pop("SPARK_REMOTE", None)
    return env


def pytest_as_client(url: str, kernels: bool, *arguments: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0", *arguments],
        cwd=ROOT,
        env=client_environment(url, kernels),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0 and " passed" in summary and "skipped" not in summary, done.stdout[-4000:]


def rows_of(path: Path) -> list[tuple[str, ...]]:
    """The rows of a csv result, numbers to 12 significant digits: a server without the kernels sums in
    numpy, the local run in the JVM, and the addition order can move a sum's last bit (188.6 against
    188.60000000000002)."""
    with path.open() as handle:
        return sorted(tuple(_rounded(value) for value in r.values()) for r in csv.DictReader(handle))


def _rounded(value: str) -> str:
    try:
        return f"{float(value):.12g}" if any(c in value for c in ".eE") else value
    except ValueError:
        return value  # a timestamp or a key


def run_remote_and_locally(url: str, tmp_path: Path, spark: Any) -> None:
    """`wql run --remote` (a client process) writes what `wql run` writes with the local session."""
    from wql.cli import main

    source = tmp_path / "q.wql"
    source.write_text(QUERIES)
    done = subprocess.run(
        [sys.executable, "-m", "wql", "run", str(source), "--remote", url, "--output", str(tmp_path / "remote.csv")],
        env=client_environment(url, kernels=False),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "traffic: 1,920 rows read" in done.stderr
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        assert main(["run", str(source), "--output", str(tmp_path / "local.csv")]) == 0
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", partitions)
    for index in (1, 2):
        remote, local = tmp_path / f"remote_{index}.csv", tmp_path / f"local_{index}.csv"
        assert rows_of(remote) == rows_of(local) and rows_of(local)


def test_with_kernels_the_server_plans_wql_operators(servers: Servers) -> None:
    pytest_as_client(servers.start(kernels=True), True, "tests/test_on_connect.py")


@pytest.mark.deep  # make test runs the Connect tests of tests/test_on_connect.py and `wql run --remote`
def test_with_kernels_differential_subset(servers: Servers) -> None:
    pytest_as_client(servers.start(kernels=True), True, "tests/test_differential.py", "-k", DIFFERENTIAL)


def test_with_kernels_wql_run_remote_equals_local(servers: Servers, tmp_path: Path, spark: Any) -> None:
    run_remote_and_locally(servers.start(kernels=True), tmp_path, spark)


@pytest.mark.deep  # a second server: make test runs the one with WQL's kernels
def test_without_kernels_numpy_runs_the_same(servers: Servers, tmp_path: Path, spark: Any) -> None:
    url = servers.start(kernels=False)
    pytest_as_client(url, False, "tests/test_on_connect.py", "-k", "reference")
    run_remote_and_locally(url, tmp_path, spark)


def test_an_unreachable_server_is_one_clear_line(tmp_path: Path) -> None:
    from wql.runtime.local_spark import free_port

    source = tmp_path / "q.wql"
    source.write_text(QUERIES)
    done = subprocess.run(
        [sys.executable, "-m", "wql", "run", str(source)],
        env={**client_environment(f"sc://127.0.0.1:{free_port()}", False), "SPARK_REMOTE": "sc://127.0.0.1:1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and "cannot reach Spark Connect at 127.0.0.1:1" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
