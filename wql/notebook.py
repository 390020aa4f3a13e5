"""WQL in Jupyter: `%load_ext wql`, then `%%wql` cells and `%wql` lines.

Streams come from CREATE STREAM statements (remembered for the kernel's
lifetime) or from Spark DataFrames in the notebook's namespace whose variable
name is the stream name in FROM (such a variable shadows a stream of that name
declared in an earlier cell, not one the same cell declares with a FROM); a stream
FROM TABLE reads a temp view or a catalog table of the notebook's session. A cell is analyzed as a whole before anything
runs, so a bad statement changes nothing. Queries run through
`CompiledQuery.load_inputs`/`.run`, the path `wql run` takes, so a magic returns
the rows `wql run` prints.

    %%wql [-o NAME] [--explain] [--code] [--draw] [--plan PLAN] [--limit N] [--quiet] [--stream]
          [--conf KEY=VALUE]... [--packages G:A:V,…] [--jars JAR,…]
    %wql [options] SELECT …;        (returns the result DataFrame)

`--explain` and `--code` show how a query would run instead of running it; `--draw` shows its first
windows over a sample of the stream. `--conf` sets a Spark
setting on the session (a running one keeps it); `--packages` and `--jars` apply when the magic
starts the session.
"""

from __future__ import annotations

import dataclasses
import html
import io
import re
import threading
from collections.abc import Sequence
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.display import display
from rich.console import Console

import wql
from wql.compiler.optimizer import PLAN_CHOICES
from wql.compiler.schema import Catalog, Stream
from wql.display import error_renderable, explanation_renderable, plain_text, results_table
from wql.grammar.formatter import format_table
from wql.highlight import python_html, wql_html
from wql.runtime.jobs import run_in_job_group

DEFAULT_LIMIT = 20

# What a cell is called in messages; its directory (the kernel's current one) anchors relative FROM paths.
SOURCE = "<cell>"
_MONO = "font-family: SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; line-height: 1.4"


# ---------------------------------------------------------------- options


@dataclasses.dataclass
class Options:
    output: str | None = None
    explain: bool = False
    code: bool = False
    draw: bool = False
    plan: str | None = None
    limit: int = DEFAULT_LIMIT
    quiet: bool = False
    stream: bool = False
    conf: tuple[str, ...] = ()  # --conf key=value, repeatable
    packages: str | None = None
    jars: str | None = None


_FLAGS = {
    "--explain": "explain",
    "--code": "code",
    "--draw": "draw",
    "-q": "quiet",
    "--quiet": "quiet",
    "--stream": "stream",
}
_VALUED = {
    "-o": "output",
    "--output": "output",
    "--plan": "plan",
    "--limit": "limit",
    "-n": "limit",
    "--conf": "conf",
    "--packages": "packages",
    "--jars": "jars",
}
USAGE = (
    "%%wql [-o NAME] [--explain] [--code] [--draw] [--plan PLAN] [--limit N] [--quiet] [--stream]"
    " [--conf KEY=VALUE]... [--packages G:A:V,…] [--jars JAR,…]"
)


def parse_options(line: str) -> tuple[Options, str]:
    """Leading options, and the rest of the line verbatim (shell-style splitting would eat WQL's quotes)."""
    options = Options()
    position = 0
    while True:
        match = re.compile(r"\s*(\S+)").match(line, position)
        if match is None or not match.group(1).startswith("-") or re.fullmatch(r"-\d.*", match.group(1)):
            break
        token, position = match.group(1), match.end()
        if token == "--":
            break
        key, _, inline = token.partition("=")
        if key in _FLAGS and not inline:
            setattr(options, _FLAGS[key], True)
            continue
        if key not in _VALUED:
            raise UsageError(f"unknown option {token}; usage: {USAGE}")
        value = inline
        if not value:
            following = re.compile(r"\s*(\S+)").match(line, position)
            if following is None:
                raise UsageError(f"{key} needs a value; usage: {USAGE}")
            value, position = following.group(1), following.end()
        _set(options, _VALUED[key], value)
    return options, line[position:].strip()


def _set(options: Options, field: str, value: str) -> None:
    if field == "output":
        if not value.isidentifier():
            raise UsageError(f"-o takes a Python variable name, not {value!r}")
        options.output = value
    elif field == "plan":
        if value.lower() not in PLAN_CHOICES:
            raise UsageError(f"--plan takes one of {', '.join(PLAN_CHOICES)}, not {value!r}")
        options.plan = None if value.lower() == "auto" else value.lower()
    elif field == "limit":
        if not value.isdigit() or int(value) < 1:
            raise UsageError(f"--limit takes a positive number of rows, not {value!r}")
        options.limit = int(value)
    elif field == "conf":
        if "=" not in value or value.startswith("="):
            raise UsageError(f"--conf takes KEY=VALUE, not {value!r}")
        options.conf = (*options.conf, value)
    else:  # packages, jars
        setattr(options, field, value)


# ---------------------------------------------------------------- rendering


def _console(width: int = 110, *, color: bool = True, record: bool = False) -> Console:
    return Console(
        file=io.StringIO(),
        width=width,
        force_terminal=color,
        color_system="truecolor" if color else None,
        record=record,
        highlight=False,
        force_jupyter=False,
    )


def rich_html(renderable: Any) -> str:
    console = _console(record=True)
    console.print(renderable)
    return console.export_html(inline_styles=True, code_format=f'<pre style="{_MONO}">{{code}}</pre>')


def rich_ansi(renderable: Any, width: int = 110) -> str:
    console = _console(width)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _publish(html_text: str, text: str) -> None:
    display({"text/html": html_text, "text/plain": text}, raw=True)


def _cell_value(value: Any) -> str:
    if value is None:
        return '<span style="color: #999">NULL</span>'
    return html.escape(str(value))


def result_html(columns: Sequence[str], rows: Sequence[Sequence[Any]], total: int, notes: Sequence[str] = ()) -> str:
    """A result as an HTML table: the first rows and how many there are in all."""
    head = "".join(f'<th style="text-align: left">{html.escape(c)}</th>' for c in columns)
    body = "".join(
        "<tr>" + "".join(f'<td style="text-align: left">{_cell_value(v)}</td>' for v in row) + "</tr>" for row in rows
    )
    shown = f" (first {len(rows)} shown)" if len(rows) < total else ""
    caption = f"{total:,} row{'' if total == 1 else 's'}{shown}"
    extra = "".join(f"<br><span>{html.escape(note)}</span>" for note in notes)
    return (
        f'<table class="wql-result"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        f'<div style="color: #777; font-size: 12px">{caption}{extra}</div>'
    )


def show_error(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: int | None = None) -> list[str]:
    """WQL errors as the CLI shows them (message, the line, a caret, the hint), not as a Python traceback."""
    assert isinstance(value, wql.WQLError)
    stb = rich_ansi(error_renderable(value)).rstrip("\n").split("\n")
    shell._showtraceback(etype, value, stb)  # how IPython itself shows a structured traceback
    return stb


# ---------------------------------------------------------------- the magics


@magics_class
class WQLMagics(Magics):
    """`%%wql` and `%wql`; the catalog of declared streams lives as long as the kernel."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.catalog = Catalog()

    @no_var_expand
    @line_cell_magic
    def wql(self, line: str, cell: str | None = None) -> Any:
        """Run WQL statements: %%wql [-o NAME] [--explain] [--code] [--plan PLAN] [--limit N] [--quiet]."""
        options, rest = parse_options(line)
        if cell is not None and rest:
            raise UsageError(f"the statements go in the cell body, not after the options: {rest!r}")
        # A leading newline for the %%wql line, so error lines match the line numbers of the cell.
        result = self.execute("\n" + cell if cell is not None else rest, options)
        return result if cell is None else None  # %%wql shows its table; `-o` keeps the DataFrame

    # ------------------------------------------------------------ execution

    def execute(self, text: str, options: Options | None = None) -> Any:
        """Analyze the whole text, then declare, explain or run each statement; the last result is returned."""
        options = options or Options()
        if not text.strip():
            self._show_streams()
            return None
        frames = self._frames(text)
        streams: dict[str, Any] = {s.name: s for s in self.catalog}
        streams.update(frames)
        program = wql.analyze(text, SOURCE, streams=streams, spark=lambda: self._session(options))
        if program.errors:
            raise program.errors[0]
        result = None
        for statement in program.statements:
            if statement.stream is not None:
                self._declare(statement.stream)
            elif statement.is_explain or options.explain:
                explanation = wql.explain_statement(statement, plan=options.plan)
                _publish(
                    wql_html(explanation.query) + rich_html(explanation_renderable(explanation)),
                    plain_text(explanation_renderable(explanation)),
                )
            elif options.draw:
                drawing = wql.draw_statement(statement)
                display({"image/svg+xml": drawing.svg, "text/plain": drawing.summary()}, raw=True)
            elif options.code:
                compiled = self._compile(program, statement, options)
                code = compiled.stream_code if options.stream else compiled.code
                _publish(python_html(code), code)
            elif options.stream:
                result = self._start(self._compile(program, statement, options), options)
            else:
                result = self._run(self._compile(program, statement, options), options)
        if options.output is not None and result is not None:
            self.shell.user_ns[options.output] = result
        return result

    def _frames(self, text: str) -> dict[str, Any]:
        """DataFrames in the namespace named like a word of the text: candidate streams."""
        from pyspark.sql import DataFrame

        mentioned = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}
        return {
            name: value
            for name, value in self.shell.user_ns.items()
            if not name.startswith("_") and name.lower() in mentioned and isinstance(value, DataFrame)
        }

    def _declare(self, stream: Stream) -> None:
        self.catalog.add(stream)
        columns = ", ".join(f"{c.name} {c.type}" for c in stream.columns)
        source = f" from {stream.path} ({stream.format})" if stream.path else ""
        source = f" from table {format_table(stream.table)}" if stream.table else source
        text = f"stream {stream.name} ({columns}){source}"
        _publish(f'<div style="color: #555; {_MONO}">✓ {html.escape(text)}</div>', f"✓ {text}")

    def _compile(self, program: wql.Program, statement: wql.Statement, options: Options) -> wql.CompiledQuery:
        try:
            return wql.compile_statement(program, statement, plan=options.plan)
        except wql.WQLError as error:
            raise error.with_source(program.source, program.path) from None

    def _run(self, compiled: wql.CompiledQuery, options: Options) -> Any:
        """A query on its stream: a DataFrame of the notebook named like it (`compiled.frame`), or its FROM."""
        from wql.runtime.errors import translate

        frame = compiled.frame
        spark = frame.sparkSession if frame is not None else self._session(options)
        if frame is not None:
            _apply_settings(spark, options)
        label = f"query on stream {compiled.stream.name}"

        def work() -> tuple[Any, tuple[list[tuple[Any, ...]], int, list[str]] | None]:
            inputs, report = compiled.load_inputs(spark)
            result = compiled.run(spark, **inputs)
            if options.quiet:
                return result, None
            cached = result.cache()
            try:
                total = cached.count()
                rows = [tuple(row) for row in compiled.in_window_order(cached).limit(options.limit).collect()]
            finally:
                cached.unpersist()
            return result, (rows, total, report)

        try:
            result, shown = run_in_job_group(spark, f"wql notebook: {label}", work)
        except wql.WQLError:
            raise
        except Exception as error:  # Spark and Py4J errors become one clear message
            raise translate(error, label) from None
        if shown is not None:
            rows, total, report = shown
            _publish(
                result_html(result.columns, rows, total, report),
                plain_text(results_table(result.columns, rows, total)) + "".join(f"{r}\n" for r in report),
            )
        return result

    def _start(self, compiled: wql.CompiledQuery, options: Options) -> Any:
        """Run the query on its stream in the background. The cell shows one table that updates as triggers
        close windows (the newest `--limit`), with the last trigger's status; the StreamRun is returned
        (and kept with -o) so that `.stop(drain=True)` ends it."""
        from wql.runtime.errors import translate

        compiled.stream_code  # noqa: B018 - refusals (LIMIT, EMIT EMPTY, …) before anything starts
        spark = self._session(options)
        handle = display({"text/plain": "stream starting…"}, raw=True, display_id=True)
        lock = threading.Lock()
        shown: dict[str, Any] = {"columns": [], "rows": [], "total": 0, "status": "waiting for the first trigger"}

        def refresh() -> None:
            with lock:
                columns, rows, total = shown["columns"], shown["rows"][-options.limit :], shown["total"]
                notes = [shown["status"]]
            if handle is not None:
                text = plain_text(results_table(columns, rows, total)) if columns else ""
                handle.update(
                    {"text/html": result_html(columns, rows, total, notes), "text/plain": text + notes[0]}, raw=True
                )

        def sink(windows: Any, trigger: int | str) -> int:
            rows = [tuple(r) for r in compiled.in_window_order(windows).collect()]  # by wid, then the keys
            with lock:
                shown["columns"] = list(windows.columns)
                shown["rows"].extend(rows)
                shown["total"] += len(rows)
            return len(rows)

        def status(trigger: Any) -> None:
            with lock:
                shown["status"] = trigger.line()
            refresh()

        try:
            run = compiled.start(spark, sink=sink, on_trigger=status)
        except wql.WQLError:
            raise
        except Exception as error:
            raise translate(error, f"stream {compiled.stream.name}") from None
        hint = f"{options.output}.stop(drain=True)" if options.output else "%%wql -o NAME --stream, then NAME.stop()"
        _publish(
            f'<div style="color: #555; {_MONO}">✓ stream started (plan {html.escape(compiled.plan)}); '
            f"stop it with {html.escape(hint)}</div>",
            f"✓ stream started (plan {compiled.plan}); stop it with {hint}",
        )
        return run

    def _session(self, options: Options | None = None) -> Any:
        """The notebook's SparkSession if it has one (with --conf set on it), else a local one started now
        with the cell's --conf, --packages and --jars (and kept)."""
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        from wql.runtime.server import running as running_server
        from wql.runtime.session import default_jvm_log, remote_url, spark_settings, start_session

        options = options or Options()
        active = SparkSession.getActiveSession()  # local, or Spark Connect once the notebook made one
        if active is None:
            active = next(
                (v for v in self.shell.user_ns.values() if isinstance(v, SparkSession) or _is_connect_session(v)),
                None,
            )
        if active is None and SparkContext._active_spark_context is not None:
            active = SparkSession.builder.getOrCreate()
        if active is not None:
            _apply_settings(active, options)
            return active
        settings = spark_settings(options.conf, options.packages, options.jars)
        url = remote_url()
        if url is not None:  # SPARK_REMOTE, as PySpark's own builder reads it
            spark = start_session(None, url, app_name="wql notebook", extra=settings)
            _publish(f'<div style="color: #777">connected to Spark Connect at {html.escape(url)}</div>', url)
            return spark
        warm = None if options.packages or options.jars else running_server()
        if warm is not None:  # `wql server start`: its Spark is warm; --packages and --jars need Spark of their own
            spark = start_session(None, warm.url, app_name="wql notebook", extra=settings)
            text = f"using the WQL server at {warm.url} (wql server stop, or a SparkSession of your own, to run here)"
            _publish(f'<div style="color: #777">{html.escape(text)}</div>', text)
            return spark
        log = default_jvm_log()
        spark = start_session(None, None, app_name="wql notebook", jvm_log=log, extra=settings)
        _publish(
            f'<div style="color: #777">started a local Spark session (Spark\'s log: {html.escape(log)})</div>',
            f"started a local Spark session (Spark's log: {log})",
        )
        return spark

    def _show_streams(self) -> None:
        if not len(self.catalog):
            message = "no streams declared yet: CREATE STREAM name (col TYPE, …) FROM 'file.csv';"
            _publish(f"<div>{html.escape(message)}</div>", message)
            return
        rows = [
            (s.name, ", ".join(f"{c.name} {c.type}" for c in s.columns), s.path or format_table(s.table))
            for s in self.catalog
        ]
        columns = ("stream", "columns", "source")
        _publish(result_html(columns, rows, len(rows)), plain_text(results_table(columns, rows)))


def _apply_settings(spark: Any, options: Options) -> None:
    """A cell's --conf on a session that is already running: set on it, where it stays. --packages and
    --jars cannot join a running session's classpath, and settings Spark fixes at start are refused."""
    from wql.runtime.session import spark_settings

    for option, given in (("--packages", options.packages), ("--jars", options.jars)):
        if given:
            raise wql.WQLRuntimeError(
                f"{option}: the notebook's Spark session is already running, and its classpath is fixed",
                hint=f"give {option} in the first %%wql cell that starts Spark, or to your SparkSession's builder",
            )
    for key, value in spark_settings(options.conf).items():
        try:
            spark.conf.set(key, value)
        except Exception as error:
            first = (str(error).strip().splitlines() or [""])[0]
            raise wql.WQLRuntimeError(
                f"--conf {key}: Spark cannot change it in a running session ({first[:200]})",
                hint="set it when the session starts: in the first %%wql cell, or in your SparkSession's builder",
            ) from None


def _is_connect_session(value: Any) -> bool:
    """A Spark Connect session (not a subclass of the classic SparkSession)."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # Spark Connect's client packages are not installed
        return False
    return isinstance(value, ConnectSession)


# ---------------------------------------------------------------- extension hooks


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext wql`: register the magics, and show WQL errors with a caret instead of a traceback."""
    ipython.register_magics(WQLMagics(ipython))
    if not ipython.custom_exceptions:  # never replace someone else's handler
        ipython.set_custom_exc((wql.WQLError,), show_error)


def unload_ipython_extension(ipython: Any) -> None:
    if ipython.custom_exceptions == (wql.WQLError,):
        ipython.set_custom_exc((), None)


__all__ = [
    "Options",
    "WQLMagics",
    "load_ipython_extension",
    "parse_options",
    "result_html",
    "unload_ipython_extension",
]
