"""Spark SQL expressions inside WQL, parsed by sqlglot.

Lark hands over the exact text of each expression; sqlglot parses it with its
Spark dialect. Its error positions are relative to that fragment, so they are
shifted back onto the whole script here.
"""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError
from sqlglot.tokens import TokenType

from wql.grammar.ast import Expr
from wql.grammar.errors import Span, WQLSyntaxError


def _ignore_nulls(generator: Spark.Generator, node: exp.IgnoreNulls) -> str:
    """FIRST(x) IGNORE NULLS as Spark's own FIRST(x, TRUE), which WQL can read back."""
    inner = node.this
    if isinstance(inner, exp.Func):
        args = [generator.sql(a) for a in inner.iter_expressions()]
        name = inner.sql_name() if not isinstance(inner, exp.Anonymous) else str(inner.name)
        return f"{name}({', '.join([*args, 'TRUE'])})"
    return generator.ignorenulls_sql(node)


class _Spark(Spark):
    """Spark SQL as sqlglot reads and writes it, except where WQL needs Spark's own reading.

    The writer avoids forms WQL's statement grammar would misread (IS NOT DISTINCT FROM,
    IGNORE NULLS). The reader treats `range < 5` or `map < 1` as comparisons of columns, as
    Spark does: sqlglot would start a nested type `RANGE<...>` there, which Spark only
    allows after CAST ... AS.
    """

    class Parser(Spark.Parser):
        def _parse_type(self, parse_interval: bool = True, fallback_to_identifier: bool = False) -> exp.Expr | None:
            current, following = self._curr, self._next
            if (
                current is not None
                and following is not None
                and current.token_type in self.NESTED_TYPE_TOKENS
                and following.token_type == TokenType.LT
            ):
                return self._parse_column()
            return super()._parse_type(parse_interval, fallback_to_identifier)

    class Generator(Spark.Generator):
        TRANSFORMS = {  # noqa: RUF012 - extends sqlglot's class-level table
            **Spark.Generator.TRANSFORMS,
            exp.NullSafeEQ: lambda self, e: self.binary(e, "<=>"),
            exp.IgnoreNulls: _ignore_nulls,
        }


_WRITER = _Spark()
DIALECT = _WRITER


def render_sql(tree: exp.Expression) -> str:
    """Canonical Spark SQL for an expression tree: comments dropped, keywords upper-case.

    Rendering is repeated until it is stable, because sqlglot may write a form that
    it reads back differently (e.g. AT TIME ZONE gains a CAST once); the fixed point
    is what makes parse(format(tree)) == tree hold.
    """
    sql = _WRITER.generate(tree, copy=True, comments=False)
    for _ in range(3):
        try:
            again = _WRITER.generate(sqlglot.parse_one(sql, read=DIALECT), comments=False)
        except Exception:  # the rendering does not parse back; keep it, analysis reports it
            return sql
        if again == sql:
            return sql
        sql = again
    return sql


@lru_cache(maxsize=4096)
def _parse_cached(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read=DIALECT)


def parse_sql_expression(sql: str) -> exp.Expression:
    """A fresh tree for canonical SQL that WQL produced itself (so it is known to parse)."""
    return _parse_cached(sql).copy()


def parse_expression(fragment: str, span: Span, source: str) -> Expr:
    """Parse one expression whose text sits at `span` in `source`."""
    try:
        tree = sqlglot.parse_one(fragment, read=DIALECT)
    except ParseError as error:
        raise _positioned(error, fragment, span, source) from None
    except Exception as error:  # sqlglot's tokenizer raises several types; all are syntax errors
        raise WQLSyntaxError(f"cannot parse expression: {_first_line(error)}", span=span) from None
    if tree is None:
        raise WQLSyntaxError("expected an expression", span=span)
    if isinstance(tree, exp.Alias):
        alias = tree.alias
        raise WQLSyntaxError(
            f"an alias needs AS: found '{alias}' after the expression",
            span=span,
            hint=f"write '{render_sql(tree.this)} AS {alias}'",
        )
    try:
        sql = render_sql(tree)
    except Exception as error:  # sqlglot accepts some trees it cannot print back
        raise WQLSyntaxError(f"unsupported expression: {_first_line(error)}", span=span) from None
    return Expr(sql=sql, tree=tree, span=span, text=fragment)


def _positioned(error: ParseError, fragment: str, span: Span, source: str) -> WQLSyntaxError:
    details = error.errors[0] if error.errors else {}
    message = str(details.get("description") or _first_line(error))
    message = _friendly(message)
    line = int(details.get("line") or 1)
    col = int(details.get("col") or 1)
    highlight = str(details.get("highlight") or "")
    lines = fragment.split("\n")
    line = max(1, min(line, len(lines)))
    end = sum(len(text) + 1 for text in lines[: line - 1]) + min(col, len(lines[line - 1]))
    start = max(0, end - len(highlight)) if highlight else max(0, end - 1)
    if start >= end:
        end = start + 1
    absolute = Span.of_text(source, span.start + start, min(span.end, span.start + end))
    if absolute.start >= absolute.end:
        absolute = span
    return WQLSyntaxError(message, span=absolute)


def _friendly(description: str) -> str:
    if description.startswith("Required keyword:"):
        return "incomplete expression: an operand is missing"
    if description.startswith("Expecting )"):
        return "missing ')'"
    if description.startswith("Invalid expression / Unexpected token"):
        return "unexpected token in expression"
    return description[:1].lower() + description[1:]


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
