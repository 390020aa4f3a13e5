"""SparkSessions as WQL starts them: quiet, UTC, and with Python workers on this interpreter.

Starting Spark costs seconds, so nothing here runs at import time; `wql check`,
`explain` and `compile` never call it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from typing import Any

from wql.grammar.errors import WQLRuntimeError
from wql.runtime.errors import quiet_query_context_logs

DEFAULT_MASTER = "local[*]"


def _quiet_logging_options() -> str:
    config = resources.files("wql.runtime").joinpath("log4j2.properties")
    return f"-Dlog4j2.configurationFile=file:{config}"


KERNEL_EXTENSION = "wql.kernels.WqlExtensions"


def kernel_jar() -> str | None:
    """WQL's JVM kernels (`make jar` builds them with a JDK), or None: the plans then run in numpy."""
    jar = resources.files("wql.runtime").joinpath("jvm", "wql-kernels.jar")
    return str(jar) if jar.is_file() else None


def session_conf(
    master: str = DEFAULT_MASTER,
    *,
    app_name: str = "wql",
    shuffle_partitions: int | None = None,
    verbose: bool = False,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """The settings WQL starts its own sessions with: CLI, REPL, notebook and tests.

    Generated jobs set only the time zone and leave the rest to spark-submit; they use WQL's
    JVM kernels when `--jars` puts them on the classpath, as these sessions do.
    """
    conf = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        # Window frames keep a partition in memory up to this many rows before they switch to a
        # spillable buffer; Spark's 4,096 made the prefix plan about 15% slower on 20,000-row partitions.
        "spark.sql.windowExec.buffer.in.memory.threshold": "100000",
        # Cleaning cached blocks without waiting: a Python worker that stops reading a cached
        # partition early (a LIMIT, a cancelled query) can keep its read lock (SPARK-27666), and a
        # blocking cleaner then holds up SparkContext.stop() for the 120 s RPC timeout.
        "spark.cleaner.referenceTracking.blocking": "false",
        # PySpark records the Python call site of every DataFrame and Column call for Spark's error
        # contexts: several round trips to the JVM each. WQL reports errors in its own terms and never reads
        # them, and a stream builds its stages again every trigger: about 5% of a trigger at ratio 60.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    }
    if shuffle_partitions is None and master.startswith("local"):
        shuffle_partitions = max(4, 2 * (os.cpu_count() or 2))  # Spark's 200 only suits clusters
    if shuffle_partitions is not None:
        conf["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    if not verbose:
        logging = _quiet_logging_options()
        conf["spark.driver.extraJavaOptions"] += " " + logging
        conf["spark.executor.extraJavaOptions"] += " " + logging
    conf.update(extra or {})
    conf.update(kernel_settings(extra or {}))  # the kernels, and the extension that plans them
    return conf


def kernel_settings(given: Mapping[str, str]) -> dict[str, str]:
    """spark.jars and spark.sql.extensions with WQL's kernels and their extension after those `given`, or
    nothing when the jar is not built (the plans then run in numpy)."""
    jar = kernel_jar()
    if jar is None:
        return {}
    settings = {}
    for key, ours in (("spark.jars", jar), ("spark.sql.extensions", KERNEL_EXTENSION)):
        items = [item for item in str(given.get(key) or "").split(",") if item.strip()]
        settings[key] = ",".join(items if ours in items else [*items, ours])
    return settings


def configure(builder: Any) -> Any:
    """WQL's settings added to a SparkSession builder of your own, before its session starts: WQL's JVM
    kernels (the jar and its extension, after any of yours), and Python workers on this interpreter, which
    has pyarrow, numpy and pandas (PySpark reads PYSPARK_PYTHON when the session starts; one already set is
    kept). A Spark Connect builder is returned as it is: its server's classpath and Python are its own."""
    options = getattr(builder, "_options", {})  # what .config() was given: PySpark's builder keeps it there
    if "spark.remote" in options or os.environ.get("SPARK_REMOTE"):
        return builder
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in kernel_settings(options).items():
        builder = builder.config(key, value)
    return builder


def local_session(
    master: str = DEFAULT_MASTER,
    *,
    app_name: str = "wql",
    shuffle_partitions: int | None = None,
    verbose: bool = False,
    extra: dict[str, str] | None = None,
    jvm_log: str | None = None,
) -> Any:
    """Start (or reuse) a SparkSession. Raises WQLRuntimeError when Spark or Java is missing.

    With `jvm_log`, the JVM's own stderr (warnings log4j cannot silence) goes to that file.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark(\..*)?")
    try:
        from pyspark.sql import SparkSession
    except ImportError as error:  # pragma: no cover - pyspark is a hard dependency
        raise WQLRuntimeError(f"pyspark is not installed ({error})") from None
    builder = SparkSession.builder
    for key, value in session_conf(
        master, app_name=app_name, shuffle_partitions=shuffle_partitions, verbose=verbose, extra=extra
    ).items():
        builder = builder.config(key, value)
    try:
        with _stderr_to(jvm_log):
            spark = builder.getOrCreate()
    except Exception as error:
        message = str(error)
        if "JAVA_HOME" in message or "Java gateway" in message:
            raise WQLRuntimeError(
                "cannot start Spark: Java 17 or newer must be installed and on PATH (or JAVA_HOME set)",
                hint=message.splitlines()[0] if message else None,
            ) from None
        raise WQLRuntimeError(f"cannot start Spark: {message.splitlines()[0] if message else error}") from None
    spark.sparkContext.setLogLevel("INFO" if verbose else "ERROR")
    if not verbose:
        quiet_query_context_logs()
    return spark


def spark_settings(conf: Sequence[str] = (), packages: str | None = None, jars: str | None = None) -> dict[str, str]:
    """Spark settings from the command line's `--conf key=value` (repeatable), `--packages` and `--jars`,
    as spark-submit takes them: the same words mean the same settings in `wql run`, `wql repl` and the
    notebook magic. Raises WQLRuntimeError for a --conf without `=`."""
    settings: dict[str, str] = {}
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise WQLRuntimeError(f"--conf takes key=value, got '{item}'", hint="--conf spark.sql.shuffle.partitions=8")
        settings[key.strip()] = value.strip()
    if packages:
        settings["spark.jars.packages"] = packages
    if jars:
        settings["spark.jars"] = jars
    return settings


def remote_url(explicit: str | None = None) -> str | None:
    """The Spark Connect server to use: `explicit` (--remote), else $SPARK_REMOTE as PySpark reads it."""
    return explicit or os.environ.get("SPARK_REMOTE") or None


def remote_session(url: str, *, app_name: str = "wql", seconds: float = 10, extra: dict[str, str] | None = None) -> Any:
    """A Spark Connect session to `url` (sc://host:port), in UTC. Raises WQLRuntimeError when the
    client packages are missing or nothing answers there (checked first: the client itself retries
    for minutes)."""
    import socket
    from urllib.parse import urlparse

    parsed = urlparse(url)
    if parsed.scheme != "sc" or not parsed.hostname:
        raise WQLRuntimeError(f"--remote takes a Spark Connect URL sc://host:port, not '{url}'")
    host, port = parsed.hostname, parsed.port or 15002
    try:
        socket.create_connection((host, port), timeout=seconds).close()
    except OSError as error:
        raise WQLRuntimeError(
            f"cannot reach Spark Connect at {host}:{port} ({error.strerror or error})",
            hint="start the server (sbin/start-connect-server.sh) or check the URL",
        ) from None
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark(\..*)?")
    # The Connect client warns on stderr of every window without PARTITION BY (a global ordering some plans
    # ask for on purpose); a classic session logs the same at WARN, which WQL's sessions do not print.
    warnings.filterwarnings("ignore", message="WARN WindowExpression", category=UserWarning)
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.remote(url).appName(app_name)
        for key, value in (extra or {}).items():  # session settings the server lets a client set
            builder = builder.config(key, value)
        spark = builder.create()  # its own, never a shared one
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        quiet_query_context_logs()
    except ImportError as error:
        raise WQLRuntimeError(
            f"Spark Connect's client packages are missing ({error})", hint="pip install 'wql[connect]'"
        ) from None
    except Exception as error:
        message = str(error).strip().splitlines()
        raise WQLRuntimeError(
            f"cannot open a Spark Connect session at {url}: {message[0] if message else error}"
        ) from None
    return spark


def start_session(
    master: str | None = None,
    remote: str | None = None,
    *,
    app_name: str = "wql",
    verbose: bool = False,
    jvm_log: str | None = None,
    extra: dict[str, str] | None = None,
) -> Any:
    """The session a shell asks for: Spark Connect with `remote` (or $SPARK_REMOTE), else a local one
    (`master`, default local[*]); `extra` are the user's Spark settings (`spark_settings`)."""
    url = remote_url(remote)
    if url is not None and master is not None:
        source = "--remote" if remote else "SPARK_REMOTE"
        raise WQLRuntimeError(f"give --master or a Spark Connect server ({source}), not both")
    if url is not None:
        shipped = [key for key in ("spark.jars", "spark.jars.packages") if key in (extra or {})]
        if shipped:
            raise WQLRuntimeError(
                f"--{'jars' if shipped[0] == 'spark.jars' else 'packages'} with a Spark Connect server: the server's "
                "classpath is fixed when it starts",
                hint="start the Connect server with them (start-connect-server.sh --jars/--packages)",
            )
        return remote_session(url, app_name=app_name, extra=extra)
    return local_session(master or DEFAULT_MASTER, app_name=app_name, verbose=verbose, jvm_log=jvm_log, extra=extra)


def is_remote(spark: Any) -> bool:
    """Whether `spark` is a Spark Connect session: no SparkContext, no JVM on this side."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextlib.contextmanager
def _stderr_to(path: str | None) -> Iterator[None]:
    """Point file descriptor 2 at `path` while the JVM is spawned, so it inherits that, not the terminal."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    # Python's own writes (the "starting Spark…" status the shells show meanwhile) still reach the
    # terminal: sys.stderr writes to a copy of the old descriptor while 2 points at the log.
    python_stderr = sys.stderr
    terminal = os.fdopen(os.dup(saved), "w", encoding=getattr(python_stderr, "encoding", None) or "utf-8")
    try:
        os.dup2(target, 2)
        sys.stderr = terminal
        yield
    finally:
        sys.stderr = python_stderr
        terminal.close()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


def default_jvm_log() -> str:
    """Where the CLI and REPL send Spark's JVM output: a per-user file in the temp directory."""
    folder = os.path.join(tempfile.gettempdir(), f"wql-{os.getuid() if hasattr(os, 'getuid') else 'user'}")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "spark.log")
