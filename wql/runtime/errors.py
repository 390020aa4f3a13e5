"""Spark's failures, told the way a WQL user needs to hear them."""

from __future__ import annotations

import re

from wql.grammar.errors import WQLError, WQLRuntimeError


def translate(error: BaseException, context: str = "") -> WQLError:
    """A WQLRuntimeError for an exception raised while Spark ran a job (or the error itself if it is one)."""
    if isinstance(error, WQLError):
        return error
    text = str(error)
    prefix = f"{context}: " if context else ""
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
    kernel = re.search(r"WQL's \w+ kernel [^\n]*", text)  # a JVM kernel's own message, deep in Spark's
    if kernel:
        return WQLRuntimeError(prefix + kernel.group(0))
    if isinstance(error, ValueError):
        return WQLRuntimeError(prefix + text)
    name = type(error).__name__
    first = _first_meaningful_line(text)
    if not type(error).__module__.startswith(("pyspark", "py4j")):  # not Spark's: the job's own code failed
        return WQLRuntimeError(
            f"{prefix}{name}: {first}", hint="an error in the job WQL generated, not in the data: please report it"
        )
    hint = "run with --verbose to see Spark's log" if name in {"Py4JJavaError", "PythonException"} else None
    return WQLRuntimeError(f"{prefix}Spark failed: {first}", hint=hint)


def _first_meaningful_line(text: str) -> str:
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith(("at ", "File ", "Traceback", "JVM stacktrace")):
            return line[:300]
    return "unknown error"
