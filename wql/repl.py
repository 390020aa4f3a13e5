"""`wql repl`: an interactive shell over the public API.

A statement runs when Enter follows its closing `;`, so queries can be typed
over several lines as they are written in files. Backslash commands (`\\help`)
act on the session. The shell keeps the streams declared so far and hands them
to `wql.analyze`; queries run through `CompiledQuery.load_inputs` and `.run`,
the path `wql run` takes, so the REPL never shows a result `wql run` would not.

Spark takes seconds to start, so it starts in a background thread as soon as a
stream is declared (set WQL_REPL_PRESTART=0 to wait until a query needs it) and
the prompt stays usable meanwhile. Each query runs in its own Spark job group,
which Ctrl-C cancels without ending the session.

History goes to ~/.wql_history, or to the file named by WQL_HISTORY.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

import wql
from wql.compiler.optimizer import PLAN_CHOICES
from wql.compiler.schema import Catalog, Stream
from wql.display import error_renderable, explanation_renderable, results_table
from wql.grammar.errors import did_you_mean
from wql.grammar.formatter import format_table
from wql.highlight import WQLLexer, format_names, keywords, type_names, units
from wql.runtime.errors import locate_in
from wql.runtime.jobs import run_in_job_group

if TYPE_CHECKING:
    from prompt_toolkit.completion import Completion
    from prompt_toolkit.document import Document

PROMPT = "wql> "
CONTINUATION = "...> "
DEFAULT_LIMIT = 20
T = TypeVar("T")
# What typed text is called in messages; its directory (the current one) anchors relative FROM paths.
SOURCE = "<repl>"

# name, arguments, what it does; aliases map onto these names.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("help", "", "this help"),
    ("streams", "", "the streams declared so far"),
    ("describe", "NAME", "a stream's columns, types and source"),
    ("explain", "[QUERY;]", "how a query is evaluated (the last query, or this one, without running it)"),
    ("code", "[QUERY;]", "the PySpark program of the last query (or of this one)"),
    ("plan", f"[{'|'.join(PLAN_CHOICES)}]", "force a physical plan for the queries that follow"),
    ("draw", "FILE.svg [QUERY;]", "draw the first windows of the last query (or this one) over a sample of its stream"),
    ("load", "FILE", "run the statements of a .wql file (its relative paths are relative to it)"),
    (
        "stream",
        "[QUERY;]",
        "run a query (the last one, or this one) on its stream as files land; windows print as they close",
    ),
    ("stop", "[N] [drain]", "stop a running stream (the newest, or number N); with drain, emit its open windows first"),
    ("timing", "[on|off]", "show how long each query takes"),
    ("limit", "[N]", f"how many result rows to show (default {DEFAULT_LIMIT})"),
    ("quit", "", "leave (or Ctrl-D)"),
)
ALIASES = {"?": "help", "h": "help", "d": "describe", "s": "streams", "q": "quit", "exit": "quit", "i": "load"}


class Quit(Exception):
    """Raised by \\quit; the loop ends the session."""


# ---------------------------------------------------------------- statement boundaries

_LEXEME = re.compile(
    r"""--[^\n]*
      | /\*.*?(?:\*/|\Z)
      | '(?:\\.|''|[^'\\])*(?:'|\Z)
      | "(?:\\.|""|[^"\\])*(?:"|\Z)
      | `(?:[^`]|``)*(?:`|\Z)
      | [^-/'"`]+
      | .""",
    re.VERBOSE | re.DOTALL,
)


def _code_only(text: str) -> tuple[str, bool]:
    """The text without comments (strings kept opaque), and whether a string or comment is still open."""
    kept, open_ = [], False
    for match in _LEXEME.finditer(text):
        piece = match.group()
        if piece.startswith("--"):
            continue
        if piece.startswith("/*"):
            open_ = not piece.endswith("*/") or len(piece) < 4
            continue
        if piece[0] in "'\"`":
            open_ = len(piece) < 2 or piece[-1] != piece[0]
            kept.append("x")
            continue
        kept.append(piece)
    return "".join(kept), open_


def is_complete(text: str) -> bool:
    """Whether Enter should run the buffer: a command line, a blank line, or statements ending in `;`."""
    stripped = text.strip()
    if not stripped or stripped.lower() in {"quit", "exit"}:
        return True
    if stripped.startswith("\\"):
        command, _, rest = stripped[1:].partition(" ")
        if command.lower() in {"explain", "code"} and rest.strip():
            return is_complete(rest)
        query = rest.strip().partition(" ")[2]  # \draw FILE [QUERY;]
        if command.lower() == "draw" and query.strip():
            return is_complete(query)
        return True
    code, unfinished = _code_only(stripped)
    return not unfinished and code.rstrip().endswith(";")


def split_entries(lines: Iterable[str]) -> Iterator[str]:
    """Group input lines into entries the way the prompt does (for piped input: `wql repl < script`)."""
    pending: list[str] = []
    for line in lines:
        pending.append(line.rstrip("\n"))
        text = "\n".join(pending)
        if is_complete(text):
            pending = []
            if text.strip():
                yield text
    if "\n".join(pending).strip():
        yield "\n".join(pending)


# ---------------------------------------------------------------- Spark, started in the background


class SparkStarter:
    """One local SparkSession, started at most once, in a thread, so typing goes on while the JVM boots."""

    def __init__(self, factory: Callable[[], Any] | None = None) -> None:
        self._factory = factory or _default_session
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._session: Any = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    @property
    def state(self) -> str:
        if self._thread is None:
            return "not started"
        if not self._done.is_set():
            return "starting…"
        return "ready" if self._session is not None else "failed"

    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._done.clear()
            self._error = None
            self._thread = threading.Thread(target=self._boot, name="wql-spark-start", daemon=True)
            self._thread.start()

    def _boot(self) -> None:
        try:
            self._session = self._factory()
        except BaseException as error:  # reported to whoever waits for the session
            self._error = error
        finally:
            self._done.set()

    def get(self, console: Console) -> Any:
        """The session, waiting for it with a status line; Ctrl-C stops waiting, not the start."""
        self.start()
        if not self._done.is_set():
            with console.status("starting Spark… (Ctrl-C stops waiting; it keeps starting)", spinner="dots"):
                while not self._done.wait(0.1):
                    pass
        if self._session is None:
            error = self._error
            with self._lock:
                self._thread = None  # the next statement tries again
            if isinstance(error, wql.WQLError):
                raise error
            raise wql.WQLRuntimeError(f"cannot start Spark: {error}")
        return self._session

    @property
    def starting(self) -> bool:
        return self._thread is not None and not self._done.is_set()

    def stop(self) -> None:
        if self._session is not None:
            with contextlib.suppress(Exception):  # leaving anyway
                self._session.stop()
            self._session = None


def _default_session(remote: str | None = None, conf: dict[str, str] | None = None) -> Any:
    """A local session, or a Spark Connect one with `remote` (or $SPARK_REMOTE); `conf`: --conf and the like."""
    from wql.runtime.session import default_jvm_log, start_session

    return start_session(None, remote, app_name="wql repl", jvm_log=default_jvm_log(), extra=conf)


# ---------------------------------------------------------------- the session


@dataclasses.dataclass
class Settings:
    plan: str | None = None  # None: the optimizer's choice
    timing: bool = False
    limit: int = DEFAULT_LIMIT


class Repl:
    """The session state and what each entry does; the prompt loop in `main` only reads lines."""

    def __init__(self, console: Console | None = None, spark: SparkStarter | None = None) -> None:
        self.console = console or Console(highlight=False)
        self.spark = spark or SparkStarter()
        self.catalog = Catalog()
        self.settings = Settings()
        self.last: wql.CompiledQuery | None = None
        self.running: dict[int, Any] = {}  # stream number -> StreamRun, while it runs
        self.stream_count = 0
        self.prestart = os.environ.get("WQL_REPL_PRESTART", "1") != "0"

    # ------------------------------------------------------------ entry points

    def handle(self, entry: str) -> None:
        """Run one entry: a backslash command or statements. Errors are shown, never raised; Quit is."""
        text = entry.strip()
        if not text:
            return
        try:
            if text.startswith("\\"):
                self.command(text[1:])
            elif text.lower().rstrip(";") in {"quit", "exit"}:
                raise Quit
            else:
                self.run_text(entry)
        except wql.WQLError as error:
            self.console.print(error_renderable(error))
        except KeyboardInterrupt:
            self.console.print(Text("cancelled", style="red"))
        except Quit:
            raise
        except Exception as error:  # a bug in WQL must not end the session
            self.console.print(Text(f"internal error: {type(error).__name__}: {error}", style="bold red"))

    def run_text(self, text: str) -> None:
        """Typed statements: relative FROM paths are relative to the current directory."""
        self._run_program(wql.analyze(text, SOURCE, streams=self._streams(), spark=self._catalog_session))

    def load(self, path: str) -> None:
        """A file's statements, as if typed, but with paths relative to the file (as wql.load does)."""
        self._run_program(wql.load(os.path.expanduser(path), streams=self._streams()))

    # ------------------------------------------------------------ statements

    def _streams(self) -> dict[str, Stream]:
        return {stream.name: stream for stream in self.catalog}

    def _catalog_session(self) -> Any:
        """The session whose catalog a stream FROM TABLE takes its columns from: asked for only then."""
        return self.spark.get(self.console)

    def _run_program(self, program: wql.Program) -> None:
        if program.syntax_error is not None:
            raise program.syntax_error
        for statement in program.statements:
            if statement.error is not None:
                self.console.print(error_renderable(statement.error))
            elif statement.stream is not None:
                self._declare(statement.stream)
            elif statement.is_explain:
                self._show_explanation(wql.explain_statement(statement, plan=self.settings.plan))
            else:
                self._run_query(program, statement)

    def _declare(self, stream: Stream) -> None:
        replaced = self.catalog.get(stream.name) is not None
        self.catalog.add(stream)
        columns = ", ".join(f"{c.name} {c.type}" for c in stream.columns)
        message = Text.assemble(("✓ ", "green"), ("stream ", "dim"), (stream.name, "bold"), f" ({columns})")
        if stream.path:
            message.append(f" from {stream.path}", style="dim")
        if stream.table:
            message.append(f" from table {format_table(stream.table)}", style="dim")
        if replaced:
            message.append("  (replaces the earlier definition)", style="dim")
        self.console.print(message)
        local = stream.path is not None and ("://" not in stream.path or stream.path.startswith("file:"))
        if local and not os.path.exists(stream.path.removeprefix("file:")):  # type: ignore[union-attr]
            self.console.print(Text(f"  note: {stream.path} does not exist (yet)", style="yellow"))
        if self.prestart:
            self.spark.start()  # hide the JVM's start-up behind the typing of the first query

    def _compile(self, program: wql.Program, statement: wql.Statement) -> wql.CompiledQuery:
        try:
            return wql.compile_statement(program, statement, plan=self.settings.plan)
        except wql.WQLError as error:
            raise error.with_source(program.source, program.path) from None

    def _run_query(self, program: wql.Program, statement: wql.Statement) -> None:
        compiled = self._compile(program, statement)
        self.last = compiled
        spark = self.spark.get(self.console)
        number = f" {statement.query_number}" if len(program.queries) > 1 else ""
        label = f"query{number} (plan {compiled.plan})"
        started = time.monotonic()
        span = statement.node.span
        locate = locate_in(program.source, span.start, span.end)
        columns, rows, total, report = self._execute(spark, compiled, label, locate)
        elapsed = time.monotonic() - started
        for line in report:
            style = "yellow" if ("malformed" in line or "NULL" in line) else "dim"
            self.console.print(Text(line, style=style))
        self.console.print(results_table(columns, rows, total))
        if self.settings.timing:
            self.console.print(Text(f"time: {elapsed:.3f} s", style="dim"))

    def _execute(
        self, spark: Any, compiled: wql.CompiledQuery, label: str, locate: Callable[[str], Any] | None = None
    ) -> tuple[list[str], list[tuple[Any, ...]], int, list[str]]:
        from wql.runtime.errors import translate
        from wql.runtime.progress import spark_progress
        from wql.runtime.session import default_jvm_log

        limit = self.settings.limit

        def work() -> tuple[list[str], list[tuple[Any, ...]], int, list[str]]:
            try:
                inputs, report = compiled.load_inputs(spark)
                result = compiled.run(spark, **inputs).cache()
                total = result.count()
                rows = [tuple(row) for row in compiled.in_window_order(result).limit(limit).collect()]
                return list(result.columns), rows, total, report
            finally:
                with contextlib.suppress(Exception):
                    spark.catalog.clearCache()  # the REPL owns this session: free the inputs and result

        try:
            with spark_progress(spark, self.console, f"running {label}"):
                return run_in_job_group(spark, f"wql repl: {label}", work)
        except wql.WQLError:
            raise
        except Exception as error:  # Spark and Py4J errors become one clear message
            raise translate(error, label, locate=locate, log=default_jvm_log()) from None

    # ------------------------------------------------------------ commands

    def command(self, line: str) -> None:
        name, _, argument = line.strip().partition(" ")
        name = name.lower()
        name = ALIASES.get(name, name)
        argument = argument.strip()
        handler = getattr(self, f"_cmd_{name}", None)
        if handler is None:
            names = [c[0] for c in COMMANDS]
            hint = did_you_mean(name, names)
            raise wql.WQLSemanticError(
                f"unknown command \\{name}",
                hint=(hint.replace("'", "'\\", 1) if hint else "commands: " + ", ".join("\\" + n for n in names)),
            )
        handler(argument)

    def _cmd_help(self, _: str) -> None:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for name, arguments, what in COMMANDS:
            table.add_row(Text(f"\\{name} {arguments}".rstrip()), Text(what))
        self.console.print(Text("Statements end with ';' and may span lines:", style="bold"))
        self.console.print(
            Text(
                "  CREATE STREAM s (col TYPE, …) FROM 'file.csv';   SELECT … FROM s [RANGE … SLIDE … WATTR …] …;"
                "   EXPLAIN SELECT …;"
            )
        )
        self.console.print(Text("Commands:", style="bold"))
        self.console.print(table)
        self.console.print(
            Text(
                "Keys: Tab completes, Up/Down walk the history, Ctrl-R searches it, Esc Enter inserts a newline,\n"
                "      Ctrl-C clears the input or cancels a running query, Ctrl-D leaves.",
                style="dim",
            )
        )

    def _cmd_quit(self, _: str) -> None:
        raise Quit

    def _cmd_streams(self, _: str) -> None:
        if not len(self.catalog):
            self.console.print(
                Text("no streams yet; declare one: CREATE STREAM name (col TYPE, …) FROM 'file.csv';", style="dim")
            )
            return
        table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
        table.add_column("stream", style="bold")
        table.add_column("columns", overflow="fold")
        table.add_column("source", overflow="fold")
        for stream in self.catalog:
            columns = ", ".join(f"{c.name} {c.type}" for c in stream.columns)
            table.add_row(Text(stream.name), Text(columns), Text(_source(stream)))
        self.console.print(table)

    def _cmd_describe(self, argument: str) -> None:
        if not argument:
            self._cmd_streams("")
            return
        name = argument.rstrip(";").strip()
        stream = self.catalog.get(name)
        if stream is None:
            known = [s.name for s in self.catalog]
            raise wql.WQLNameError(
                f"unknown stream '{name}'",
                hint=did_you_mean(name, known) or (f"known streams: {', '.join(known)}" if known else None),
            )
        table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
        table.add_column("column")
        table.add_column("type")
        for column in stream.columns:
            table.add_row(Text(column.name), Text(column.type))
        self.console.print(Text.assemble(("stream ", "dim"), (stream.name, "bold")))
        self.console.print(table)
        self.console.print(Text(f"source: {_source(stream)}", style="dim"))
        if stream.row_num:
            self.console.print(Text(f"arrival order: ROW_NUM {stream.row_num}", style="dim"))

    def _compile_text(self, text: str) -> list[tuple[wql.Program, wql.Statement]]:
        """Queries typed after \\explain or \\code: analyzed against the catalog, not run, not declared."""
        program = wql.analyze(text, SOURCE, streams=self._streams(), spark=self._catalog_session)
        if program.errors:
            for error in program.errors[1:]:
                self.console.print(error_renderable(error))
            raise program.errors[0]
        if not program.queries:
            raise wql.WQLSemanticError("no query there: give a SELECT")
        return [(program, statement) for statement in program.queries]

    def _cmd_explain(self, argument: str) -> None:
        if argument:
            for _, statement in self._compile_text(argument):
                self._show_explanation(wql.explain_statement(statement, plan=self.settings.plan))
            return
        if self.last is None:
            raise wql.WQLSemanticError("no query yet", hint="run one, or give it: \\explain SELECT …;")
        self._show_explanation(self.last.explain())

    def _show_explanation(self, explanation: wql.Explanation) -> None:
        self.console.print(Syntax(explanation.query, WQLLexer(), theme="ansi_dark", background_color="default"))
        self.console.print(explanation_renderable(explanation))

    def _cmd_code(self, argument: str) -> None:
        if argument:
            chosen = self._compile_text(argument)
            compiled = [self._compile(program, statement) for program, statement in chosen]
        elif self.last is not None:
            compiled = [self.last]
        else:
            raise wql.WQLSemanticError("no query yet", hint="run one, or give it: \\code SELECT …;")
        for query in compiled:
            code = Syntax(query.code, "python", theme="ansi_dark", background_color="default")
            if self.console.is_terminal and query.code.count("\n") >= self.console.height:
                # A program is hundreds of lines: page it ($PAGER, else less) rather than scroll it past.
                with self.console.pager(styles=True):
                    self.console.print(code)
            else:
                self.console.print(code)

    def _cmd_draw(self, argument: str) -> None:
        target, _, text = argument.strip().partition(" ")
        if not target or target.endswith(";"):
            raise wql.WQLSemanticError(
                "\\draw needs a file to write", hint="\\draw windows.svg, or \\draw windows.svg SELECT …;"
            )
        if text.strip():
            drawings = [wql.draw_statement(statement) for _, statement in self._compile_text(text)]
        elif self.last is not None:
            drawings = [self.last.draw()]
        else:
            raise wql.WQLSemanticError("no query yet", hint="run one, or give it: \\draw windows.svg SELECT …;")
        for index, drawing in enumerate(drawings, start=1):
            root, ext = os.path.splitext(os.path.expanduser(target))
            path = f"{root}{ext}" if len(drawings) == 1 else f"{root}_{index}{ext}"
            try:
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(drawing.svg)
            except OSError as error:
                raise wql.WQLRuntimeError(f"cannot write {path}: {error.strerror}") from None
            self.console.print(Text.assemble(("✓ ", "green"), f"drew {path}: {drawing.summary()}"))

    def _cmd_plan(self, argument: str) -> None:
        if argument:
            choice = argument.lower().rstrip(";")
            if choice not in PLAN_CHOICES:
                raise wql.WQLSemanticError(
                    f"unknown plan '{argument}'",
                    hint=did_you_mean(choice, PLAN_CHOICES) or f"plans: {', '.join(PLAN_CHOICES)}",
                )
            self.settings.plan = None if choice == "auto" else choice
        current = self.settings.plan or "auto (the cheapest that can run)"
        self.console.print(Text.assemble(("plan: ", "dim"), (current, "bold")))

    def _cmd_load(self, argument: str) -> None:
        if not argument:
            raise wql.WQLSemanticError("\\load needs a file", hint="\\load queries.wql")
        self.load(argument.strip().strip("'\""))

    def _cmd_stream(self, argument: str) -> None:
        """Start the query on Structured Streaming in the background; each trigger prints its status line and
        the windows it closed, between prompts. The same job `wql compile --stream` prints."""
        from wql.runtime.errors import translate

        if argument:
            chosen = self._compile_text(argument)
            compiled = [self._compile(program, statement) for program, statement in chosen]
        elif self.last is not None:
            compiled = [self.last]
        else:
            raise wql.WQLSemanticError("no query yet", hint="run one, or give it: \\stream SELECT …;")
        spark = self.spark.get(self.console)
        for query in compiled:
            self.stream_count += 1
            number = self.stream_count
            query.stream_code  # noqa: B018 - refusals (LIMIT, EMIT EMPTY, …) before anything starts
            try:
                run = query.start(spark, sink=self._stream_sink(number, query), on_trigger=self._stream_status(number))
            except wql.WQLError:
                raise
            except Exception as error:
                raise translate(error, f"stream {number}") from None
            self.running[number] = run
            self.console.print(
                Text.assemble(
                    ("✓ ", "green"),
                    (f"stream {number}", "bold"),
                    f" started (plan {query.plan}); \\stop {number} stops it, \\stop {number} drain also emits "
                    "its open windows",
                )
            )

    def _stream_sink(self, number: int, query: wql.CompiledQuery) -> Callable[[Any, int | str], int]:
        limit = self.settings.limit

        def show(windows: Any, trigger: int | str) -> int:
            rows = query.in_window_order(windows).collect()  # by wid, then the keys, as a batch query shows them
            if rows:
                shown = [tuple(r) for r in rows[:limit]]
                label = "drain" if trigger == "drain" else f"trigger {trigger}"
                self.console.print(Text(f"stream {number}, {label}: windows", style="bold"))
                self.console.print(results_table(list(windows.columns), shown, len(rows)))
            return len(rows)

        return show

    def _stream_status(self, number: int) -> Callable[[Any], None]:
        def status(trigger: Any) -> None:
            style = "yellow" if trigger.late or trigger.malformed else "dim"
            self.console.print(Text(f"stream {number}, {trigger.line()}", style=style))

        return status

    def _cmd_stop(self, argument: str) -> None:
        words = argument.lower().rstrip(";").split()
        drain = "drain" in words
        numbers = [w for w in words if w != "drain"]
        if not self.running:
            raise wql.WQLSemanticError("no stream is running", hint="start one with \\stream SELECT …;")
        if len(numbers) > 1 or (numbers and not numbers[0].isdigit()):
            raise wql.WQLSemanticError(f"\\stop takes a stream number and 'drain', not '{argument}'")
        number = int(numbers[0]) if numbers else max(self.running)
        run = self.running.pop(number, None)
        if run is None:
            running = ", ".join(str(n) for n in sorted(self.running))
            raise wql.WQLSemanticError(f"no running stream {number}", hint=f"running: {running}")
        run.stop(drain=drain)
        run.close()
        windows = sum(t.windows for t in run.triggers)
        self.console.print(
            Text.assemble(
                ("✓ ", "green"),
                (f"stream {number}", "bold"),
                f" stopped after {len(run.triggers)} trigger{'' if len(run.triggers) == 1 else 's'},"
                f" {windows:,} window{'' if windows == 1 else 's'}",
            )
        )

    def _cmd_timing(self, argument: str) -> None:
        choice = argument.lower().rstrip(";")
        if choice in {"on", "off"}:
            self.settings.timing = choice == "on"
        elif not choice:
            self.settings.timing = not self.settings.timing
        else:
            raise wql.WQLSemanticError(f"\\timing takes on or off, not '{argument}'")
        self.console.print(Text.assemble(("timing: ", "dim"), ("on" if self.settings.timing else "off", "bold")))

    def _cmd_limit(self, argument: str) -> None:
        if argument:
            if not argument.rstrip(";").isdigit() or int(argument.rstrip(";")) < 1:
                raise wql.WQLSemanticError(f"\\limit takes a positive number of rows, not '{argument}'")
            self.settings.limit = int(argument.rstrip(";"))
        self.console.print(Text.assemble(("rows shown: ", "dim"), (str(self.settings.limit), "bold")))

    # ------------------------------------------------------------ for the prompt

    def toolbar(self) -> list[tuple[str, str]]:
        plan = self.settings.plan or "auto"
        timing = "on" if self.settings.timing else "off"
        return [
            ("class:bottom-toolbar", f" Spark: {self.spark.state}  │  plan: {plan}  │  timing: {timing}  │  "),
            ("class:bottom-toolbar", "end statements with ;  │  \\help  │  Ctrl-D quits "),
        ]

    def close(self) -> None:
        for run in self.running.values():  # a stream never outlives the session that started it
            with contextlib.suppress(Exception):
                run.close()
        self.running.clear()
        if self.spark.starting:
            # Nothing to wait for: the JVM leaves by itself when this process's pipe to it closes.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        self.spark.stop()


def _source(stream: Stream) -> str:
    if stream.table:
        return f"table {format_table(stream.table)}"
    if not stream.path:
        return "(no FROM path)"
    options = ", ".join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in stream.options)
    return f"{stream.path} ({stream.format}{', ' + options if options else ''})"


# ---------------------------------------------------------------- completion


def completer(repl: Repl) -> Any:
    """A prompt_toolkit completer over the grammar's keywords, streams, columns and Spark functions.

    prompt_toolkit is imported only once a prompt starts, so its Completer subclass is made here; what it
    offers is CompletionSource's."""
    from prompt_toolkit.completion import Completer, PathCompleter

    from wql.compiler.aggregates import spark_functions

    words = set(keywords()) | set(units()) | {"AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "LIKE"}
    source = CompletionSource(
        repl, sorted(spark_functions()), sorted(words), sorted(type_names()), PathCompleter(expanduser=True)
    )

    class WQLCompleter(Completer):
        def get_completions(self, document: Document, complete_event: Any) -> Iterator[Completion]:
            return source.complete(document, complete_event)

    return WQLCompleter()


@dataclasses.dataclass(frozen=True)
class CompletionSource:
    """What the completer offers at the cursor: a backslash command and its argument, a column after an
    attribute clause, else streams, columns, keywords, types and functions. The session's catalog is read
    at each keystroke (streams are declared as the session goes); the vocabularies are read once."""

    repl: Repl
    functions: list[str]  # Spark's SQL functions
    words: list[str]  # the grammar's keywords and units, and SQL's operators
    types: list[str]  # the column types CREATE STREAM takes
    paths: Any  # prompt_toolkit's PathCompleter, for \load and \draw

    def complete(self, document: Document, complete_event: Any) -> Iterator[Completion]:
        text = document.text_before_cursor
        stripped = text.lstrip()
        if stripped.startswith("\\"):
            yield from self.command(stripped, document, complete_event)
            return
        match = re.search(r"[A-Za-z_][A-Za-z0-9_]*$", text)
        prefix = match.group() if match else ""
        if not prefix and not complete_event.completion_requested:
            return
        before = text[: len(text) - len(prefix)]
        if _naming_attribute(before):
            yield from self.attributes(prefix, text)
            return
        previous = re.findall(r"[A-Za-z_]+", before[-40:])
        after_from = bool(previous) and previous[-1].upper() in {"FROM", "STREAM", "DESCRIBE"}
        yield from self.words_for(prefix, text, after_from)

    def attributes(self, prefix: str, text: str) -> Iterator[Completion]:
        """After WATTR, RATTR, SATTR or PATTR: the columns of the stream the query reads (and row_num,
        which orders windows), never window columns, stream names or keywords."""
        from prompt_toolkit.completion import Completion

        mentioned = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}
        streams = [s for s in self.repl.catalog if s.name.lower() in mentioned] or list(self.repl.catalog)
        names = [(c.name, f"{c.type} in {s.name}") for s in streams for c in s.columns]
        partitioning = re.search(r"\bPATTR\b([^\]]*)$", text, re.IGNORECASE)
        if partitioning is None:
            names.append(("row_num", "arrival position"))
        listed = re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?=\s*,)", partitioning.group(1)) if partitioning else []
        seen: set[str] = {name.lower() for name in listed}  # PATTR names a column once
        for name, meta in names:
            if name.lower().startswith(prefix.lower()) and name != prefix and name.lower() not in seen:
                seen.add(name.lower())
                yield Completion(name, start_position=-len(prefix), display_meta=meta)

    def words_for(self, prefix: str, text: str, streams_only: bool) -> Iterator[Completion]:
        """Streams (only those right after FROM, STREAM or DESCRIBE), then the columns of the streams the
        text mentions first, window columns, keywords, types and formats in CREATE STREAM, functions:
        each word once, in the case the prefix is typed in."""
        from prompt_toolkit.completion import Completion

        key = prefix.lower()
        seen: set[str] = set()

        def offer(word: str, meta: str) -> Iterator[Completion]:
            if word.lower().startswith(key) and word.lower() not in seen and word != prefix:
                seen.add(word.lower())
                yield Completion(word, start_position=-len(prefix), display_meta=meta)

        for stream in self.repl.catalog:
            yield from offer(stream.name, "stream")
        if streams_only:
            return
        mentioned = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}
        streams = sorted(self.repl.catalog, key=lambda s: s.name.lower() not in mentioned)
        for stream in streams:
            for column in stream.columns:
                yield from offer(column.name, f"{column.type} in {stream.name}")
        for column in ("wid", "window_start", "window_end", "row_num"):
            yield from offer(column, "window column")
        lower = prefix.islower()
        for word in self.words:
            yield from offer(word.lower() if lower else word, "keyword")
        if re.search(r"\bCREATE\s+STREAM\b", text, re.IGNORECASE):
            for name in self.types:
                yield from offer(name.lower() if lower else name, "type")
            for name in format_names():
                yield from offer(name, "format")
        for name in self.functions:
            yield from offer(name if lower or not prefix else name.upper(), "function")

    def command(self, stripped: str, document: Document, event: Any) -> Iterator[Completion]:
        """A backslash command's name, then its argument: a stream, a plan, on or off, a path, a query."""
        from prompt_toolkit.completion import Completion
        from prompt_toolkit.document import Document

        head, space, argument = stripped[1:].partition(" ")
        if not space:
            for name, arguments, what in COMMANDS:
                if name.startswith(head.lower()) and name != head:
                    yield Completion(
                        name, start_position=-len(head), display=f"\\{name} {arguments}", display_meta=what
                    )
            return
        command = ALIASES.get(head.lower(), head.lower())
        choices: Sequence[str] = ()
        if command == "describe":
            choices = [s.name for s in self.repl.catalog]
        elif command == "plan":
            choices = PLAN_CHOICES
        elif command == "timing":
            choices = ("on", "off")
        elif command in {"load", "draw"}:
            yield from self.paths.get_completions(Document(argument, len(argument)), event)
            return
        elif command in {"explain", "code"}:
            yield from self.words_in(argument)
            return
        for choice in choices:
            if choice.lower().startswith(argument.lower()) and choice != argument:
                yield Completion(choice, start_position=-len(argument))

    def words_in(self, text: str) -> Iterator[Completion]:
        """The words to complete in a query given as a command's argument."""
        match = re.search(r"[A-Za-z_][A-Za-z0-9_]*$", text)
        prefix = match.group() if match else ""
        if prefix:
            previous = re.findall(r"[A-Za-z_]+", text[: len(text) - len(prefix)][-40:])
            yield from self.words_for(prefix, text, bool(previous) and previous[-1].upper() == "FROM")


def _naming_attribute(before: str) -> bool:
    """Whether the cursor is where a window spec names an attribute: right after WATTR, RATTR, SATTR
    (or inside its rank(…)) or PATTR, or after a comma of PATTR's list, or in WATTR's (start, end)."""
    clause = r"\b(?:WATTR|RATTR|SATTR|PATTR)\s*"
    listed = r"(?:\(\s*|rank\s*\(\s*)?(?:[A-Za-z_][A-Za-z0-9_]*\s*,\s*)*"
    return re.search(clause + listed + r"$", before, re.IGNORECASE) is not None


# ---------------------------------------------------------------- the prompt


def history_path() -> str:
    return os.path.expanduser(os.environ.get("WQL_HISTORY") or "~/.wql_history")


def _prompt_session(repl: Repl) -> Any:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
    from prompt_toolkit.enums import DEFAULT_BUFFER
    from prompt_toolkit.filters import has_focus
    from prompt_toolkit.history import FileHistory, History, InMemoryHistory
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
    from prompt_toolkit.lexers import PygmentsLexer
    from prompt_toolkit.styles import Style

    bindings = KeyBindings()
    editing = has_focus(DEFAULT_BUFFER)  # not the Ctrl-R search field, whose Enter accepts the match

    @bindings.add("enter", filter=editing)
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)
            return
        if is_complete(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    @bindings.add("escape", "enter", filter=editing)
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    path = history_path()
    history: History
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
        history = FileHistory(path)
    except OSError as error:
        repl.console.print(Text(f"history is not saved: cannot write {path} ({error.strerror})", style="yellow"))
        history = InMemoryHistory()

    def continuation(width: int, line_number: int, wrap_count: int) -> str:
        return CONTINUATION.rjust(width)

    style = Style.from_dict({"prompt": "ansigreen bold", "continuation": "ansigreen", "bottom-toolbar": "noreverse"})
    return PromptSession(
        message=[("class:prompt", PROMPT)],
        multiline=True,
        prompt_continuation=continuation,
        lexer=PygmentsLexer(WQLLexer),
        completer=completer(repl),
        complete_while_typing=False,
        auto_suggest=AutoSuggestFromHistory(),
        history=history,
        key_bindings=bindings,
        bottom_toolbar=repl.toolbar,
        refresh_interval=1.0,
        style=style,
        include_default_pygments_style=True,
    )


def banner(console: Console) -> None:
    console.print(
        Text.assemble(
            (f"WQL {wql.__version__}", "bold"),
            " — window queries on Spark. Statements end with ';'. ",
            ("\\help", "bold cyan"),
            " lists commands, Ctrl-D leaves.",
        )
    )


def main(files: Sequence[str] = (), remote: str | None = None, conf: dict[str, str] | None = None) -> int:
    """`wql repl [FILE...] [--remote sc://…] [--conf k=v …]`: load the files, then read entries until \\quit
    or end of input."""
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(highlight=False, width=200)  # piped: tables as wide as they need
    repl = Repl(console, SparkStarter(lambda: _default_session(remote, conf)))
    try:
        for path in files:
            repl.handle(f"\\load {path}")
        if not sys.stdin.isatty():  # a script on stdin: the same entries, no prompt
            for entry in split_entries(sys.stdin):
                repl.handle(entry)
            return 0
        banner(console)
        session = _prompt_session(repl)
        from prompt_toolkit.patch_stdout import patch_stdout

        while True:
            # While a stream runs, its triggers print from another thread: above the prompt, not into it.
            printing = patch_stdout(raw=True) if repl.running else contextlib.nullcontext()
            try:
                with printing:
                    entry = session.prompt()
            except KeyboardInterrupt:
                continue  # Ctrl-C at the prompt drops the input, as in a shell
            except EOFError:
                break
            repl.handle(entry)
    except Quit:
        pass
    finally:
        repl.close()
    return 0


__all__ = ["Repl", "SparkStarter", "is_complete", "main", "run_in_job_group", "split_entries"]
