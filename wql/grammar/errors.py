"""Errors that point at the query text.

Every failure a user can cause (bad query, bad path, bad data, unsupported
feature) is a `WQLError`, so the CLI, the REPL and the API can catch one type
and show a positioned message instead of a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A half-open character range in the source, with 1-based line/column of its start and end."""

    start: int
    end: int
    line: int
    column: int
    end_line: int
    end_column: int

    def merge(self, other: Span) -> Span:
        first, last = (self, other) if self.start <= other.start else (other, self)
        return Span(first.start, max(self.end, other.end), first.line, first.column, last.end_line, last.end_column)

    @staticmethod
    def of_text(text: str, start: int, end: int) -> Span:
        """Build a span from character offsets, computing lines and columns from `text`."""
        start = max(0, min(start, len(text)))
        end = max(start, min(end, len(text)))
        line = text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        end_line = text.count("\n", 0, end) + 1
        end_column = end - (text.rfind("\n", 0, end) + 1) + 1
        return Span(start, end, line, column, end_line, end_column)


class WQLError(Exception):
    """Base of all user-facing errors; carries a position, the source and an optional hint."""

    kind = "error"

    def __init__(
        self,
        message: str,
        *,
        span: Span | None = None,
        source: str | None = None,
        path: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.source = source
        self.path = path
        self.hint = hint

    @property
    def line(self) -> int | None:
        return self.span.line if self.span else None

    @property
    def column(self) -> int | None:
        return self.span.column if self.span else None

    def with_source(self, source: str, path: str | None = None) -> WQLError:
        """Attach the text the span refers to, unless an inner layer already did."""
        if self.source is None:
            self.source = source
        if self.path is None:
            self.path = path
        return self

    def location(self) -> str:
        where = self.path or "<query>"
        if self.span is None:
            return where
        return f"{where}:{self.span.line}:{self.span.column}"

    def excerpt(self) -> list[tuple[int, str, int, int]]:
        """The source line(s) to show: (line number, text, caret start column, caret width)."""
        if self.span is None or self.source is None:
            return []
        lines = self.source.split("\n")  # spans count "\n" only, so split on nothing else
        index = min(self.span.line, len(lines)) - 1
        text = lines[index].expandtabs(1) if index >= 0 else ""
        col = self.span.column
        if self.span.end_line == self.span.line:
            width = max(1, self.span.end_column - self.span.column)
        else:
            width = max(1, len(text) - col + 1)
        return [(self.span.line, text, col, width)]

    def render(self) -> str:
        """Plain-text rendering: message, location, source line with a caret, hint."""
        out = [f"{self.kind}: {self.message}"]
        if self.span is not None or (self.path and self.path not in self.message):
            out.append(f"  --> {self.location()}")
        for number, text, col, width in self.excerpt():
            gutter = " " * len(str(number))
            out.append(f"{gutter} |")
            out.append(f"{number} | {text}")
            out.append(f"{gutter} | {' ' * (col - 1)}{'^' * width}")
        if self.hint:
            out.append(f"  = hint: {self.hint}")
        return "\n".join(out)

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of a traceback: the caret message, in a notebook too."""
        return self.render().splitlines()

    def __str__(self) -> str:
        if self.span is None:
            return self.message
        return f"{self.message} (line {self.span.line}, column {self.span.column})"


class WQLSyntaxError(WQLError):
    """The text does not follow the WQL grammar or Spark SQL expression syntax."""

    kind = "syntax error"


class WQLNameError(WQLError):
    """A stream, column or function name that does not resolve."""

    kind = "name error"


class WQLTypeError(WQLError):
    """A window spec or expression whose types do not fit (units, attributes, aggregates)."""

    kind = "type error"


class WQLSemanticError(WQLError):
    """A well-typed query that still has no defined meaning (e.g. nested aggregates)."""

    kind = "error"


class WQLNotSupportedError(WQLError):
    """Valid WQL that this backend cannot run yet; never silently approximated."""

    kind = "not supported yet"


class WQLRuntimeError(WQLError):
    """Failures while reading data or running a job: bad paths, malformed input, Spark errors."""

    kind = "runtime error"


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """A hint naming the closest candidate, compared case-insensitively."""
    pool = {c.lower(): c for c in candidates}
    close = difflib.get_close_matches(name.lower(), list(pool), n=1, cutoff=0.6)
    return f"did you mean '{pool[close[0]]}'?" if close else None


def relocate(error: WQLError, span: Span) -> WQLError:
    """Give an error without a position the position of the construct that caused it."""
    if error.span is None:
        error.span = span
    return error


__all__ = [
    "Span",
    "WQLError",
    "WQLNameError",
    "WQLNotSupportedError",
    "WQLRuntimeError",
    "WQLSemanticError",
    "WQLSyntaxError",
    "WQLTypeError",
    "did_you_mean",
    "relocate",
]
