"""Spark processes on this machine, bound to 127.0.0.1: a standalone cluster and a Spark Connect server.

The tests and benchmarks start them to run WQL the way it runs beyond one local
session: generated jobs and benchmarks on real executors, and queries from a
client with no JVM. Everything comes from PySpark's own distribution (its
`bin/spark-class` and `bin/spark-submit`, and the Connect server jar it ships);
each process is started here, owned by the context manager, and always stopped.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from wql.grammar.errors import WQLRuntimeError

LOOPBACK = "127.0.0.1"
CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def wait_for_port(
    port: int, seconds: float, process: subprocess.Popen[bytes] | None = None, log: Path | None = None
) -> None:
    """Until something listens on 127.0.0.1:port; fails early when `process` has ended."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log is not None else ""
            raise WQLRuntimeError(
                f"the Spark process ended with code {process.returncode} before it listened", hint=tail
            )
        with socket.socket() as probe:
            if probe.connect_ex((LOOPBACK, port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"nothing listens on {LOOPBACK}:{port} after {seconds:.0f}s")


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The processes' environment: this interpreter for Python workers, UTC, loopback only."""
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env["SPARK_HOME"] = str(spark_home())
    env["SPARK_LOCAL_IP"] = LOOPBACK
    env["TZ"] = "UTC"
    env.update(extra or {})
    return env


def stop(processes: list[subprocess.Popen[bytes]], seconds: float = 30) -> None:
    """Terminate each process (Spark's shutdown hooks run), then kill what is still alive."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def standalone_cluster(
    logs: Path, *, workers: int = 1, cores: int = 2, memory: str = "1g", env: dict[str, str] | None = None
) -> Iterator[str]:
    """A standalone master and `workers` workers (each offering `cores` and `memory`) on 127.0.0.1;
    yields the master's URL spark://127.0.0.1:PORT."""
    logs.mkdir(parents=True, exist_ok=True)
    env = environment({"SPARK_WORKER_DIR": str(logs / "work"), **(env or {})})
    spark_class = str(spark_home() / "bin" / "spark-class")
    port = free_port()
    started: list[subprocess.Popen[bytes]] = []
    try:
        master_log = logs / "master.out"
        command = [spark_class, "org.apache.spark.deploy.master.Master", "--host", LOOPBACK, "--port", str(port)]
        master = subprocess.Popen(
            [*command, "--webui-port", str(free_port())],
            env=env,
            stdout=master_log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        started.append(master)
        wait_for_port(port, 120, master, master_log)
        url = f"spark://{LOOPBACK}:{port}"
        for index in range(workers):
            log = logs / f"worker-{index + 1}.out"
            command = [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", LOOPBACK]
            worker = subprocess.Popen(
                [*command, "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port())],
                env=env,
                stdout=log.open("wb"),
                stderr=subprocess.STDOUT,
            )
            started.append(worker)
            deadline = time.monotonic() + 120
            while "Successfully registered with master" not in log.read_text(errors="replace"):
                if worker.poll() is not None or time.monotonic() > deadline:
                    raise WQLRuntimeError(
                        f"worker {index + 1} did not register with the master", hint=log.read_text()[-2000:]
                    )
                time.sleep(0.5)
        yield url
    finally:
        stop(list(reversed(started)))


def connect_command(
    port: int, *, master: str = "local[2]", jars: list[str] | None = None, conf: dict[str, str] | None = None
) -> list[str]:
    """The spark-submit command of a Spark Connect server listening on 127.0.0.1:port only."""
    settings = {
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
        **(conf or {}),
    }
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", master, "--class", CONNECT_SERVER]
    if jars:
        command += ["--jars", ",".join(jars)]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, "spark-internal"]


@contextlib.contextmanager
def connect_server(
    logs: Path,
    *,
    jars: list[str] | None = None,
    conf: dict[str, str] | None = None,
    master: str = "local[2]",
    seconds: float = 180,
) -> Iterator[str]:
    """A Spark Connect server (PySpark ships its jar) listening on 127.0.0.1; yields sc://127.0.0.1:PORT.

    `jars` and `conf` go to its spark-submit: WQL's kernels are `jars=[wql-kernels.jar]` and
    `conf={"spark.sql.extensions": "wql.kernels.WqlExtensions"}`.
    """
    logs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    settings = {"spark.sql.session.timeZone": "UTC", **(conf or {})}
    command = connect_command(port, master=master, jars=jars, conf=settings)
    log = logs / "connect-server.out"
    server = subprocess.Popen(command, env=environment(), stdout=log.open("wb"), stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, seconds, server, log)
        yield f"sc://{LOOPBACK}:{port}"
    finally:
        stop([server])
