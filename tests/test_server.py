"""`wql server start|status|stop`: a warm Spark Connect server with WQL's kernels, in the background on
127.0.0.1, which `wql run` and `wql repl` use while it runs (saying so), unless told otherwise.

The suite starts one server (the fixture, which always stops it) in its own state directory
(tests/conftest.py), and fails if one is left running.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.conftest import EXAMPLES, ROOT
from tests.test_connect import rows_of
from wql.runtime import server
from wql.server_command import use_server

TRAFFIC = EXAMPLES / "traffic.wql"


def wql(*arguments: str, cwd: Path = ROOT, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"SPARK_REMOTE"}}
    env.update(TZ="UTC", PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "wql", *arguments],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


# ------------------------------------------------------------------ which Spark a shell uses (no JVM)


def _args(**given: Any) -> argparse.Namespace:
    defaults = {"remote": None, "master": None, "local": False, "packages": None, "jars": None, "stream": False}
    return argparse.Namespace(**{**defaults, "input": [], "output": None, "late": None, **given})


@pytest.fixture
def as_if_running(monkeypatch: pytest.MonkeyPatch) -> server.Server:
    found = server.Server(pid=1, port=15999, log="server.log", started=time.time(), master="local[*]")
    monkeypatch.setattr(server, "running", lambda: found)
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    return found


def test_a_shell_uses_the_running_server_in_one_line_and_makes_its_paths_absolute(
    as_if_running: server.Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = _args(input=["traffic=data/t.csv", "x=s3a://b/k"], output="out.csv", late="late")
    err = Console(record=True, width=200)
    use_server(args, err)
    assert args.remote == "sc://127.0.0.1:15999"
    assert args.input == [f"traffic={tmp_path / 'data' / 't.csv'}", "x=s3a://b/k"]
    assert args.output == str(tmp_path / "out.csv") and args.late == str(tmp_path / "late")
    assert err.export_text().strip() == "using the WQL server at sc://127.0.0.1:15999 (--local: start Spark here)"


@pytest.mark.parametrize(
    "given",
    [
        {"local": True},
        {"master": "local[2]"},
        {"remote": "sc://elsewhere:15002"},
        {"stream": True},  # a stream runs its stages in this process
        {"packages": "g:a:1"},  # a classpath of its own
        {"jars": "x.jar"},
    ],
)
def test_a_shell_told_where_spark_runs_or_needing_its_own_does_not_use_the_server(
    as_if_running: server.Server, given: dict[str, Any]
) -> None:
    args = _args(**given)
    err = Console(record=True, width=200)
    use_server(args, err)
    assert args.remote == given.get("remote") and err.export_text() == ""


def test_spark_remote_wins_over_the_server(as_if_running: server.Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_REMOTE", "sc://elsewhere:15002")
    args = _args()
    use_server(args, Console(record=True))
    assert args.remote is None  # the session reads SPARK_REMOTE itself


def test_no_server_runs_without_a_state_file_and_a_dead_ones_file_is_removed() -> None:
    assert server.running() is None
    assert wql("server", "status").returncode == 1
    state = server.state_dir()
    state.mkdir(parents=True, exist_ok=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    record = f'{{"pid": {dead.pid}, "port": 1, "log": "x", "started": 0, "master": "local[*]"}}'
    (state / server.STATE_FILE).write_text(record)
    assert server.running() is None and not (state / server.STATE_FILE).exists()
    done = wql("server", "stop")
    assert done.returncode == 0 and done.stdout.strip() == "no WQL server ran"


def test_a_taken_port_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = wql("server", "start", "--port", str(port))
    assert done.returncode == 1 and f"port {port} on 127.0.0.1 is taken" in done.stderr
    assert "Traceback" not in done.stderr and server.running() is None


# ------------------------------------------------------------------ the suite's server


@pytest.fixture(scope="module")
def warm() -> Iterator[server.Server]:
    """One server for these tests, started as a user starts it, and always stopped."""
    if server.running() is not None:
        pytest.fail(f"a WQL server already runs in the suite's state directory: {server.running()}")
    try:
        done = wql("server", "start", "--conf", "spark.sql.shuffle.partitions=2")
        assert done.returncode == 0, done.stderr[-3000:]
        found = server.running()
        assert found is not None, done.stdout
        yield found
    finally:
        server.stop()


@pytest.mark.slow
def test_status_says_where_it_runs_on_loopback_only(warm: server.Server) -> None:
    done = wql("server", "status")
    assert done.returncode == 0 and f"WQL server running at sc://127.0.0.1:{warm.port} (pid {warm.pid}" in done.stdout
    cmdline = Path(f"/proc/{warm.pid}/cmdline")
    if cmdline.exists():
        assert b"spark.connect.grpc.binding.address=127.0.0.1" in cmdline.read_bytes()
    again = wql("server", "start")
    assert again.returncode == 1 and "a WQL server already runs at sc://127.0.0.1" in again.stderr


@pytest.mark.slow
def test_wql_run_uses_the_server_and_writes_what_a_local_run_writes(
    warm: server.Server, tmp_path: Path, spark: Any
) -> None:
    from wql.cli import main

    done = wql("run", str(TRAFFIC), "--output", "served.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"using the WQL server at {warm.url}" in done.stderr and "traffic: 1,920 rows read" in done.stderr
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        assert main(["run", str(TRAFFIC), "--local", "--output", str(tmp_path / "local.csv")]) == 0
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", partitions)
    assert rows_of(tmp_path / "served.csv") == rows_of(tmp_path / "local.csv") and rows_of(tmp_path / "local.csv")


@pytest.mark.slow
def test_the_repl_uses_the_server(warm: server.Server, tmp_path: Path) -> None:
    script = f"\\load {TRAFFIC}\n"
    served = wql("repl", stdin=script, cwd=tmp_path)
    assert served.returncode == 0 and f"using the WQL server at {warm.url}" in served.stderr, served.stderr[-2000:]
    assert "1,000 rows" in served.stdout, served.stdout[-2000:]


@pytest.mark.slow
def test_stop_stops_it_cleanly(warm: server.Server) -> None:
    done = wql("server", "stop")
    assert done.returncode == 0 and done.stdout.strip() == f"stopped the WQL server at {warm.url} (pid {warm.pid})"
    assert server.running() is None and wql("server", "status").returncode == 1
    assert not server._is_ours(warm.pid)  # gone (or a zombie its new parent has not reaped yet)
