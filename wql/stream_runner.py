"""`wql run --stream`: a query's streaming job on Spark, with its windows and a status line per trigger.

Part of the CLI shell: it compiles with the public API and runs the job through
`CompiledQuery.start`, which loads the code `wql compile --stream` prints. On a
terminal the windows emitted so far and the latest triggers' status lines are
one live display; otherwise each trigger prints its windows and its line.
"""

from __future__ import annotations

import argparse
import collections
import os
import threading
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

import wql
from wql.display import error_renderable, results_table
from wql.runtime.streaming import Trigger

EXIT_OK, EXIT_ERRORS = 0, 1


class Terminal:
    """The windows emitted so far (the newest `limit`) and one status line per trigger."""

    def __init__(self, columns: tuple[str, ...], out: Console, err: Console, limit: int, order: Any = None) -> None:
        self.columns = columns
        self.order = order or (lambda result: result)  # windows as batch shows them: by wid, then the keys
        self.out, self.err = out, err
        self.recent: collections.deque[tuple[Any, ...]] = collections.deque(maxlen=limit)
        self.total = 0
        self.lines: collections.deque[str] = collections.deque(maxlen=5)
        self.lock = threading.Lock()
        self.live: Live | None = None

    def sink(self, result: Any, trigger: int | str) -> int:
        rows = [tuple(r) for r in self.order(result).collect()]
        with self.lock:
            self.columns = tuple(result.columns)  # the emitted ones: EMIT CHANGES of sessions adds wql_change
            self.recent.extend(rows)
            self.total += len(rows)
            if self.live is None and rows:
                label = "drain" if trigger == "drain" else f"trigger {trigger}"
                self.out.print(Text(f"{label}: windows", style="bold"))
                self.out.print(results_table(self.columns, rows))
        self._refresh()
        return len(rows)

    def status(self, trigger: Trigger) -> None:
        line = trigger.line()
        with self.lock:
            self.lines.append(line)
            if self.live is None:
                self.err.print(Text(line, style="dim"))
        self._refresh()

    def renderable(self) -> Group:
        caption = f"{self.total:,} window row{'s' if self.total != 1 else ''} emitted"
        table = results_table(self.columns, list(self.recent))
        table.caption = caption + (f" (the newest {len(self.recent)} shown)" if len(self.recent) < self.total else "")
        return Group(table, *(Text(line, style="dim") for line in self.lines))

    def _refresh(self) -> None:
        if self.live is not None:
            with self.lock:
                self.live.update(self.renderable())


def run_stream(
    args: argparse.Namespace, statements: list[wql.Statement], program: wql.Program, out: Console, err: Console
) -> int:
    from wql.runtime.errors import translate
    from wql.runtime.session import default_jvm_log

    if len(statements) != 1:
        raise wql.WQLSemanticError(
            f"{args.file} has {len(statements)} queries; a stream runs one at a time: choose it with --query N"
        )
    [statement] = statements
    compiled = wql.compile_statement(program, statement, plan=args.plan, stream=True)
    paths = _stream_paths(args, compiled)
    log = None if args.verbose else default_jvm_log()
    from pyspark.sql import SparkSession

    owned = SparkSession.getActiveSession() is None
    spark = _spark(args, err, log)
    terminal = Terminal(compiled.columns, out, err, args.limit, compiled.in_window_order)
    label = f"query {statement.query_number} (line {statement.line}, plan {compiled.plan})"
    try:
        run = compiled.start(
            spark,
            output=args.output,
            format=args.format,
            checkpoint=args.checkpoint,
            late=args.late,
            once=args.once or (args.drain and args.idle is None),
            sink=None if args.output else terminal.sink,
            on_trigger=terminal.status,
            max_files=args.max_files,
            interval=args.interval,
            drain=args.drain,
            **paths,
        )
        _watch(run, terminal, args, out, err)
        err.print(Text.assemble(("✓ ", "green"), summary(label, run.triggers, args)))
    except wql.WQLError:
        raise
    except Exception as error:  # Spark and Py4J errors become one clear line
        raise translate(error, label, log=log) from None
    finally:
        if owned:
            spark.stop()
    return EXIT_OK


def _stream_paths(args: argparse.Namespace, compiled: wql.CompiledQuery) -> dict[str, str]:
    """The --input paths by stream, once the stream's directory and the output's checkpoint are checked."""
    paths = {}
    for item in args.input:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise wql.WQLRuntimeError(f"--input takes STREAM=PATH, got '{item}'")
        paths[name] = path
    directory = paths.get(compiled.stream.name, compiled.stream.path)
    if compiled.stream.source == "files":
        if directory is None:
            raise wql.WQLRuntimeError(
                f"stream '{compiled.stream.name}' has no FROM directory",
                hint=f"add FROM 'dir' to its CREATE STREAM, or pass --input {compiled.stream.name}=DIR",
            )
        if "://" not in directory and not os.path.isdir(directory):
            raise wql.WQLRuntimeError(
                f"stream '{compiled.stream.name}': a stream reads a directory that files land in, and "
                f"{directory} is {'a file' if os.path.exists(directory) else 'not there'}",
                hint="point FROM (or --input) at the directory",
            )
    if args.output and not args.checkpoint:
        raise wql.WQLRuntimeError(
            "--output on a stream needs --checkpoint DIR",
            hint="the checkpoint records what was read and the open windows, so a restart resumes exactly once",
        )
    return paths


def _spark(args: argparse.Namespace, err: Console, log: str | None) -> Any:
    from wql.runtime.session import DEFAULT_MASTER, local_session, spark_settings

    with err.status("starting Spark…", spinner="dots"):
        return local_session(
            args.master or DEFAULT_MASTER,
            app_name=f"wql run --stream {args.file}",
            verbose=args.verbose,
            jvm_log=log,
            extra=spark_settings(args.conf, args.packages, args.jars),
        )


def _watch(run: Any, terminal: Terminal, args: argparse.Namespace, out: Console, err: Console) -> None:
    """Until the stream stops (then drained with --drain): live on a terminal, a line a trigger otherwise."""
    try:
        if out.is_terminal and not args.output:
            with Live(terminal.renderable(), console=out, refresh_per_second=4) as display:
                terminal.live = display
                run.wait(args.idle)
                if args.drain:
                    run.drain()
            terminal.live = None
        else:
            run.wait(args.idle)
            if args.drain:
                run.drain()
    except KeyboardInterrupt:
        run.stop(drain=args.drain)
        err.print(Text("stopped" + (" and drained" if args.drain else ""), style="yellow"))
    finally:
        run.close()


def summary(label: str, triggers: list[Trigger], args: argparse.Namespace) -> str:
    """The run's last line: the triggers its status lines showed (the drain's line is no trigger), the windows
    emitted, the late and malformed rows and where they went."""
    ran = [t for t in triggers if t.trigger != "drain"]
    drained = " and the drain" if len(ran) < len(triggers) else ""
    late = sum(t.late for t in triggers)
    malformed = sum(t.malformed for t in triggers)
    windows = sum(t.windows for t in triggers)
    text = f"{label}: {_count(len(ran), 'trigger')}{drained}, {_count(windows, 'window')}"
    if late or malformed:
        kept = f" (written to {args.late})" if args.late else " (pass --late DIR to keep them)"
        text += f", {_count(late, 'late row')} and {_count(malformed, 'malformed row')}{kept}"
    if args.output:
        text += f"; windows in {args.output}"
    return text


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


__all__ = ["error_renderable", "run_stream"]
