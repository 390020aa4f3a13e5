"""`wql server`: a warm Spark for the command line, a local Spark Connect server with WQL's kernels that
runs in the background, bound to 127.0.0.1.

Every `wql run` that starts its own Spark pays for a JVM's start and warm-up: seconds on a quiet machine,
tens of seconds on a busy one, more than the query itself on small data. The server pays them once; `wql
run`, `wql repl` and the notebook magic then send their queries to it (runner, REPL and notebook ask
`running()`). Its process id, port and log are kept in a state file in a per-user directory, so that any
shell of the same user finds it and `wql server stop` stops exactly the process it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from wql.grammar.errors import WQLRuntimeError
from wql.runtime.local_spark import CONNECT_SERVER, LOOPBACK, connect_command, environment, free_port, wait_for_port
from wql.runtime.session import session_conf

STATE_FILE = "server.json"
LOG_FILE = "server.log"


def state_dir() -> Path:
    """Where the server's state file and log live: $WQL_STATE_DIR, else $XDG_STATE_HOME/wql, else
    ~/.local/state/wql (the tests point WQL_STATE_DIR elsewhere, so that they never meet a user's server)."""
    given = os.environ.get("WQL_STATE_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "wql"


@dataclass(frozen=True)
class Server:
    """A running server, as its state file records it."""

    pid: int
    port: int
    log: str
    started: float  # seconds since the epoch
    master: str

    @property
    def url(self) -> str:
        return f"sc://{LOOPBACK}:{self.port}"

    def describe(self) -> str:
        up = int(time.time() - self.started)
        return f"{self.url} (pid {self.pid}, {self.master}, up {up // 3600}h{up // 60 % 60:02d}m{up % 60:02d}s)"


def _read_state() -> Server | None:
    try:
        return Server(**json.loads((state_dir() / STATE_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def _is_ours(pid: int) -> bool:
    """Whether process `pid` lives and is a Spark Connect server (not another that took a dead server's id)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not cmdline.exists():  # no /proc (macOS): the port answering is the check
        return True
    with contextlib.suppress(OSError):
        return CONNECT_SERVER.encode() in cmdline.read_bytes()
    return False


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((LOOPBACK, port)) == 0


def running() -> Server | None:
    """The server this user started, if it still runs and listens; a state file left by one that died is removed."""
    server = _read_state()
    if server is None:
        return None
    if _is_ours(server.pid) and _listening(server.port):
        return server
    if not _is_ours(server.pid):
        with contextlib.suppress(OSError):
            (state_dir() / STATE_FILE).unlink()
    return None


def start(
    *, master: str = "local[*]", port: int | None = None, extra: dict[str, str] | None = None, seconds: float = 300
) -> Server:
    """Start the server in the background (its own process group: the terminal's Ctrl-C and hang-up do not
    reach it) with WQL's session settings and kernels, and wait until it listens. Raises WQLRuntimeError
    when one already runs or it does not start (with the end of its log)."""
    found = running()
    if found is not None:
        raise WQLRuntimeError(f"a WQL server already runs at {found.describe()}", hint="wql server stop, then start")
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    if _listening(port):
        raise WQLRuntimeError(f"port {port} on {LOOPBACK} is taken", hint="give another with --port, or none")
    conf = session_conf(master, app_name="wql server", extra=extra)
    conf.pop("spark.master")
    log = folder / LOG_FILE
    with log.open("wb") as output:
        process = subprocess.Popen(
            connect_command(port, master=master, conf=conf),
            env=environment(),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for_port(port, seconds, process, log)
    except BaseException as error:  # not started, or Ctrl-C while waiting: leave nothing behind
        _end(process.pid, 30)
        if isinstance(error, TimeoutError):
            raise WQLRuntimeError(f"the WQL server did not listen within {seconds:.0f} s", hint=f"see {log}") from None
        raise
    server = Server(pid=process.pid, port=port, log=str(log), started=time.time(), master=master)
    (folder / STATE_FILE).write_text(json.dumps(asdict(server)), encoding="utf-8")
    return server


def stop(seconds: float = 60) -> Server | None:
    """Stop the server this user started (Spark's shutdown hooks run; killed after `seconds`), and forget it.
    The server that was stopped, or None when none ran."""
    server = _read_state()
    alive = server is not None and _is_ours(server.pid)
    if alive:
        assert server is not None
        _end(server.pid, seconds)
    with contextlib.suppress(OSError):
        (state_dir() / STATE_FILE).unlink()
    return server if alive else None


def _end(pid: int, seconds: float) -> None:
    """SIGTERM to the server's process group (the JVM and its Python workers), SIGKILL if it outlives `seconds`."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # our own child when this process started it: reap it
        if not _is_ours(pid):
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
