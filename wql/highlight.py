"""WQL syntax highlighting (a pygments lexer) and the word lists completion shares with it.

The keywords come from the grammar file itself, so the REPL's colours and
completions cannot fall behind the language. The REPL feeds the lexer to
prompt_toolkit; the notebook turns WQL and generated PySpark into inline-styled
HTML, which renders without any stylesheet in Jupyter, VS Code and GitHub.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import RegexLexer, bygroups, words
from pygments.lexers.python import PythonLexer
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

from wql.grammar.parser import FORMATS, TYPE_NAMES

# Words of Spark SQL expressions (WHERE, select items, ...): the grammar hands
# expressions to sqlglot, so they are not in wql.lark but people type them.
EXPRESSION_KEYWORDS = (
    "AND",
    "OR",
    "NOT",
    "IS",
    "NULL",
    "IN",
    "BETWEEN",
    "LIKE",
    "ILIKE",
    "RLIKE",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "DISTINCT",
    "FILTER",
    "CAST",
    "INTERVAL",
    "EXISTS",
)

# Parts of a window spec, styled apart from the SQL clause words around them.
WINDOW_WORDS = frozenset(
    {
        "RANGE",
        "SLIDE",
        "WATTR",
        "RATTR",
        "SATTR",
        "PATTR",
        "ALIGN",
        "SLACK",
        "UNBOUNDED",
        "KAFKA",
        "CUMULATE",
        "RANK",
        "ROW_NUM",
        "CONSISTENT",
        "GENEROUS",
        "START",
        "END",
        "EMIT",
        "EMPTY",
        "SNAPSHOT",
        "CLIP",
        "SNAP",
        "SESSION",
        "GAP",
        "FRAME",
        "THRESHOLD",
        "DELTA",
        "AGGREGATE",
        "FINAL",
        "CHANGES",
        "PUNCTUATION",
        "WHEN",
        "TIME",
        "ZONE",
    }
)

_TERMINAL = re.compile(r"^_?([A-Z][A-Z_]*)(?:\.\d+)?\s*:\s*/(.*)/i\s*$")


def _expand(pattern: str) -> list[str]:
    """The words a terminal's regex matches: `SELECT\\b` or an alternation like `(ROWS?|DAYS?)\\b`."""
    body = pattern.removesuffix(r"\b").strip("()")
    result = []
    for alternative in body.split("|"):
        if not re.fullmatch(r"[A-Z_]+S?\??", alternative):
            return []
        if alternative.endswith("?"):
            stem = alternative[:-2]
            result += [stem, stem + alternative[-2]]
        else:
            result.append(alternative)
    return result


@cache
def grammar_words() -> dict[str, tuple[str, ...]]:
    """{terminal name: the words it matches}, read from wql.lark (e.g. UNIT: ROW, ROWS, …)."""
    text = resources.files("wql.grammar").joinpath("wql.lark").read_text(encoding="utf-8")
    found: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines():
        match = _TERMINAL.match(line.strip())
        if match:
            expanded = _expand(match.group(2))
            if expanded:
                found[match.group(1)] = tuple(expanded)
    return found


@cache
def keywords() -> tuple[str, ...]:
    """Every keyword of the grammar, upper case, without the time units."""
    terminals = grammar_words()
    return tuple(sorted({w for name, ws in terminals.items() if name != "UNIT" for w in ws}))


@cache
def units() -> tuple[str, ...]:
    return grammar_words().get("UNIT", ())


def type_names() -> tuple[str, ...]:
    return tuple(TYPE_NAMES)


def format_names() -> tuple[str, ...]:
    return tuple(FORMATS)


def _word_rule(items: object, token: object) -> tuple[object, object]:
    return (words(sorted(items, key=len, reverse=True), suffix=r"\b"), token)  # type: ignore[arg-type]


class WQLLexer(RegexLexer):
    """WQL: SQL-like statements with window specs in brackets, plus the REPL's backslash commands."""

    name = "WQL"
    aliases = ["wql"]  # noqa: RUF012 (pygments reads these class attributes)
    filenames = ["*.wql"]  # noqa: RUF012
    mimetypes = ["text/x-wql"]  # noqa: RUF012
    flags = re.IGNORECASE | re.MULTILINE

    tokens = {  # noqa: RUF012
        "root": [
            (r"\s+", Whitespace),
            (r"--[^\n]*", Comment.Single),
            (r"/\*", Comment.Multiline, "block-comment"),
            (r"^(\\[a-z?]+)", Keyword.Pseudo),  # \explain, \describe, … (REPL commands)
            (r"'(\\.|''|[^'\\])*'?", String.Single),
            (r'"(\\.|""|[^"\\])*"?', String.Double),
            (r"`([^`]|``)*`?", Name.Variable),
            (r"(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", Number),
            (
                r"(CREATE)(\s+)(STREAM)(\s+)([A-Za-z_][A-Za-z0-9_]*)",
                bygroups(Keyword, Whitespace, Keyword, Whitespace, Name.Class),
            ),
            (
                r"(FROM)(\s+)(TABLE)(\s+)([A-Za-z_][A-Za-z0-9_]*)",
                bygroups(Keyword, Whitespace, Keyword, Whitespace, Name),
            ),
            (r"(FROM)(\s+)([A-Za-z_][A-Za-z0-9_]*)", bygroups(Keyword, Whitespace, Name.Class)),
            # MIN and MAX are window keywords (FRAME … MIN n, SESSION … MAX m) and SQL functions.
            (r"(MIN|MAX)(\s*)(?=\()", bygroups(Name.Function, Whitespace)),
            _word_rule(units(), Keyword.Constant),
            _word_rule({"TRUE", "FALSE", "NULL"}, Keyword.Constant),
            _word_rule(WINDOW_WORDS & set(keywords()), Keyword.Reserved),
            _word_rule(TYPE_NAMES, Keyword.Type),
            _word_rule(set(keywords()) | set(EXPRESSION_KEYWORDS), Keyword),
            (r"([A-Za-z_][A-Za-z0-9_]*)(\s*)(?=\()", bygroups(Name.Function, Whitespace)),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name),
            (r"<=>|<>|!=|==|<=|>=|\|\||::|->|[-+*/%<>=!&|^~:?]", Operator),
            (r"[()\[\],;.]", Punctuation),
            (r".", Text),
        ],
        "block-comment": [
            (r"[^*]+", Comment.Multiline),
            (r"\*/", Comment.Multiline, "#pop"),
            (r"\*", Comment.Multiline),
        ],
    }


def _html(text: str, lexer: RegexLexer | PythonLexer) -> str:
    formatter = HtmlFormatter(noclasses=True, style="default", nobackground=True)
    return highlight(text, lexer, formatter)


def wql_html(text: str) -> str:
    """WQL as a <div> of inline-styled HTML."""
    return _html(text, WQLLexer())


def python_html(code: str) -> str:
    """Generated PySpark as a <div> of inline-styled HTML."""
    return _html(code, PythonLexer())


__all__ = [
    "EXPRESSION_KEYWORDS",
    "WINDOW_WORDS",
    "WQLLexer",
    "format_names",
    "grammar_words",
    "keywords",
    "python_html",
    "type_names",
    "units",
    "wql_html",
]
