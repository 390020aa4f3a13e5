"""`wql server start|status|stop`, and the choice the shells make: the running server, unless told otherwise.

Part of the CLI shell; the server itself is wql/runtime/server.py.
"""

from __future__ import annotations

import argparse
import os

from rich.console import Console
from rich.text import Text

from wql.runtime import server

EXIT_OK, EXIT_NOT_RUNNING = 0, 1
LOCAL_HELP = "start Spark here even when a WQL server runs (wql server start)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("start", "status", "stop"), help="start, report on, or stop the server")
    parser.add_argument("--port", type=int, metavar="N", help="listen on 127.0.0.1:N (default: a free port)")
    parser.add_argument("--master", default="local[*]", metavar="URL", help="the server's Spark master (local[*])")


def command(args: argparse.Namespace, settings: dict[str, str], out: Console, err: Console) -> int:
    if args.action == "status":
        found = server.running()
        if found is None:
            out.print("no WQL server runs")
            return EXIT_NOT_RUNNING
        out.print(f"WQL server running at {found.describe()}; log: {found.log}")
        return EXIT_OK
    if args.action == "stop":
        stopped = server.stop()
        out.print(f"stopped the WQL server at {stopped.url} (pid {stopped.pid})" if stopped else "no WQL server ran")
        return EXIT_OK
    with err.status("starting the WQL server…", spinner="dots"):
        started = server.start(master=args.master, port=args.port, extra=settings)
    out.print(
        Text.assemble(("✓ ", "green"), f"WQL server running at {started.describe()}; log: {started.log}"),
    )
    out.print(Text("wql run, wql repl and %%wql use it until wql server stop (--local: Spark of their own)", "dim"))
    return EXIT_OK


def use_server(args: argparse.Namespace, err: Console) -> None:
    """Point `wql run` or `wql repl` at the running WQL server, saying so in one line, unless they were told
    where Spark runs (--remote, SPARK_REMOTE, --master, --local), need a Spark of their own (--packages and
    --jars join a classpath when it starts; a stream runs its stages in this process), or none runs.

    The server reads and writes on this machine, but from its own working directory: relative --input,
    --output and --late paths are made absolute here (FROM paths are already, relative to the query's file)."""
    told = args.remote or os.environ.get("SPARK_REMOTE") or getattr(args, "master", None) or args.local
    own = args.packages or args.jars or getattr(args, "stream", False)
    found = None if told or own else server.running()
    if found is None:
        return
    args.remote = found.url
    if getattr(args, "input", None):
        args.input = [_absolute_input(item) for item in args.input]
    for name in ("output", "late"):
        path = getattr(args, name, None)
        if path and "://" not in path and not path.startswith("file:"):
            setattr(args, name, os.path.abspath(path))
    err.print(Text(f"using the WQL server at {found.url} (--local: start Spark here)", style="dim"))


def _absolute_input(item: str) -> str:
    name, sep, path = item.partition("=")
    if not sep or "://" in path or path.startswith("file:"):
        return item
    return f"{name}={os.path.abspath(path)}"
