"""Spark's failures, told the way a WQL user needs to hear them.

`spark_cause` finds what went wrong in whatever Spark raised (a captured PySpark exception, a Py4J
error with a Java stack, a stage failure wrapping a task's error): the error condition, its message
without Java frames or SQLSTATE, Spark's own advice, and the SQL fragment it points at. `translate`
turns that into one WQLRuntimeError line and a hint; a stream's failing trigger can use `spark_cause`
the same way.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

from wql.grammar.errors import WQLError, WQLRuntimeError

# Spark's error conditions a user's data or query can cause, with what to do about them. Spark's own
# advice (the message's "Use `try_cast` …" sentence) is the fallback.
HINTS: dict[str, str] = {
    "CAST_INVALID_INPUT": "a value in the data is not of the type cast to: try_cast(…) reads it as NULL",
    "CAST_OVERFLOW": "a value does not fit the type cast to: try_cast(…) reads it as NULL, or cast to a wider type",
    "DIVIDE_BY_ZERO": "try_divide(a, b) gives NULL where b is 0",
    "ARITHMETIC_OVERFLOW": "a result does not fit its type: cast to a wider type (BIGINT, DOUBLE, DECIMAL) first",
    "NUMERIC_VALUE_OUT_OF_RANGE": "a DECIMAL result needs more digits: cast to a wider DECIMAL or to DOUBLE",
    "INVALID_ARRAY_INDEX": "try_element_at(array, i) gives NULL for an index out of range",
    "CANNOT_PARSE_TIMESTAMP": "a value is not a timestamp in that pattern: try_to_timestamp(…) reads it as NULL",
    "INVALID_FRACTION_OF_SECOND": "a timestamp's seconds are out of range: try_make_timestamp(…) gives NULL",
}

# Words that start Spark's advice in a message: they go to the hint, not the message.
_ADVICE = ("Use ", "Correct ", "If necessary", "Please ", "To tolerate", "Alternatively")
_CONDITION = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]\s*(.*)")
_SQLSTATE = re.compile(r"\s*SQLSTATE:\s*\w+\.?\s*$")
_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


@dataclass(frozen=True)
class SparkCause:
    """What Spark says went wrong, in its own words but without its machinery."""

    condition: str | None  # Spark's error condition, e.g. CAST_INVALID_INPUT
    message: str  # the cause, one line, without the condition, advice, SQLSTATE or Java frames
    advice: str | None  # Spark's own advice sentences, if any
    fragment: str | None  # the expression Spark points at (under its carets), as Spark prints it

    @property
    def hint(self) -> str | None:
        return HINTS.get(self.condition or "") or self.advice


def spark_cause(error: BaseException | str) -> SparkCause | None:
    """The condition, message, advice and fragment of a Spark error, or None when it names no condition.

    Spark's text may wrap the cause (a stage failure quotes its task's exception) and append Java
    frames and a `== SQL … ==` block whose carets mark the expression that failed."""
    text = error if isinstance(error, str) else str(error)
    condition = getattr(error, "getCondition", lambda: None)() if not isinstance(error, str) else None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(("at ", "Caused by", "==", "...")):
            continue
        found = _CONDITION.search(line)
        if found is None:
            continue
        condition = condition or found.group(1)
        body = _SQLSTATE.sub("", found.group(2)).strip()
        message, advice = _split_advice(body)
        return SparkCause(condition, message, advice, _fragment(text))
    return None


def _split_advice(body: str) -> tuple[str, str | None]:
    """Spark's message, and its advice sentences apart (they tell what to do, not what happened)."""
    sentences = re.split(r"(?<=\.)\s+(?=[A-Z])", body)
    kept = [s for s in sentences if not s.startswith(_ADVICE)]
    advice = [s for s in sentences if s.startswith(_ADVICE)]
    message = " ".join(kept).rstrip(".") or body
    return message, (" ".join(advice) or None)


def _fragment(text: str) -> str | None:
    """The part of Spark's `== SQL … ==` (or `== DataFrame ==`) excerpt that its carets underline."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith("== SQL") or index + 2 >= len(lines):
            continue
        source, carets = lines[index + 1], lines[index + 2]
        marks = re.search(r"\^+", carets)
        if marks is None or carets[: marks.start()].strip():
            continue
        piece = source[marks.start() : marks.end()].strip()
        return piece or None
    return None


Located = tuple[int, int, str]  # line, column, and the text as the query writes it


def locate_in(source: str, start: int, end: int) -> Callable[[str], Located | None]:
    """A function that finds Spark's fragment in source[start:end] (one query's text) and returns its
    line, column and text there, or None. Spark prints expressions its own way (upper-case keywords and functions,
    its own spacing, no backquotes), so the match ignores case, spacing and backquotes."""

    def locate(fragment: str) -> Located | None:
        tokens = re.findall(r"\w+|[^\w\s`]", fragment)
        if not tokens:
            return None
        pattern = r"[\s`]*".join(re.escape(token) for token in tokens)
        found = re.compile(pattern, re.IGNORECASE).search(source, start, end)
        if found is None:
            return None
        line = source.count("\n", 0, found.start()) + 1
        column = found.start() - (source.rfind("\n", 0, found.start()) + 1) + 1
        return line, column, found.group()

    return locate


def translate(
    error: BaseException,
    context: str = "",
    *,
    locate: Callable[[str], Located | None] | None = None,
    log: str | None = None,
) -> WQLError:
    """A WQLRuntimeError for an exception raised while Spark ran a job (or the error itself if it is one).

    One line: the context (which query), the cause, and where in the query it lies when `locate` finds
    Spark's fragment there; the hint says what to do. `log` is Spark's log file, named in the hint
    when WQL has nothing better to say."""
    if isinstance(error, WQLError):
        return error
    text = str(error)
    prefix = f"{context}: " if context else ""
    log_hint = f"Spark's log has the details: {log}" if log else "run with --verbose to see Spark's log"
    missing = re.search(r"\[PATH_NOT_FOUND\] Path does not exist: (\S+?)\.?(\s|$)", text)
    if missing:
        return WQLRuntimeError(f"{prefix}no such file or directory: {missing.group(1)}")
    if "UNABLE_TO_INFER_SCHEMA" in text:
        return WQLRuntimeError(f"{prefix}cannot read the input: it is empty or not in the declared format")
    header = re.search(
        r"CSV header does not conform to the schema\.\s*Header: ([^\n]*)\n\s*Schema: ([^\n]*).*?CSV file: (\S+)",
        text,
        re.S,
    )
    if header:
        found, declared, path = (g.strip() for g in header.groups())
        return WQLRuntimeError(
            f"{prefix}{path}: the csv header ({found}) does not match the declared columns ({declared})",
            hint="rename the columns in CREATE STREAM, or fix the file's header",
        )
    workers = _missing_in_workers(text)
    if workers is not None:
        return WQLRuntimeError(prefix + workers[0], hint=workers[1])
    kernel = re.search(r"WQL's \w+ kernel [^\n]*", text)  # a JVM kernel's own message, deep in Spark's
    if kernel:
        return WQLRuntimeError(prefix + kernel.group(0))
    cause = spark_cause(error)
    if cause is not None:
        where = ""
        if cause.fragment:
            found = locate(cause.fragment) if locate is not None else None
            where = f", in {found[2]} at line {found[0]}, column {found[1]}" if found else f", in {cause.fragment}"
        return WQLRuntimeError(f"{prefix}{cause.message}{where}", hint=cause.hint or log_hint)
    if isinstance(error, ValueError):
        return WQLRuntimeError(prefix + text)
    first = _first_meaningful_line(text)
    spark_made = type(error).__module__.startswith(("pyspark", "py4j")) or re.search(
        r"\bjava\.|org\.apache\.spark|\tat ", text
    )
    if not spark_made:  # not Spark's: the job's own code failed
        return WQLRuntimeError(
            f"{prefix}{type(error).__name__}: {first}",
            hint="an error in the job WQL generated, not in the data: please report it",
        )
    return WQLRuntimeError(f"{prefix}Spark failed: {first}", hint=log_hint)


def _missing_in_workers(text: str) -> tuple[str, str] | None:
    """A Python worker that could not import a module (pyarrow, numpy, …): the workers run another Python
    than this one (PySpark starts them with PYSPARK_PYTHON, else `python3` from PATH). The line and hint, or None."""
    missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", text)
    if missing is None or not re.search(r"Python worker|pyspark[/\\]worker\.py", text):
        return None
    from pyspark import SparkContext  # a Python worker failed: PySpark is there

    context = SparkContext._active_spark_context
    if context is None:  # a Spark Connect session: the workers are the server's
        return (
            f"the Spark Connect server's Python workers cannot import {missing.group(1)}",
            f"start the server with PYSPARK_PYTHON set to a Python that has WQL's requirements ({sys.executable})",
        )
    return (
        f"Spark's Python workers run {context.pythonExec}, which cannot import {missing.group(1)}",
        f"start Spark with PYSPARK_PYTHON={sys.executable} (this Python), or build the session with "
        "wql.configure(SparkSession.builder)",
    )


def quiet_query_context_logs() -> None:
    """Stop PySpark's error-context loggers from printing each failure, with its Java stack, as JSON on
    stderr before WQL's own line. WQL reports the failure itself (translate); --verbose keeps them."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # pragma: no cover - PySpark before 4.0 has no such loggers
        return
    for name in _LOGGERS:
        logger = PySparkLogger.getLogger(name)  # PySpark's class: it logs with keywords a plain Logger refuses
        logger.setLevel(logging.CRITICAL + 1)
        logger.propagate = False


def _first_meaningful_line(text: str) -> str:
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith(("at ", "File ", "Traceback", "JVM stacktrace")):
            return line[:300]
    return "unknown error"
