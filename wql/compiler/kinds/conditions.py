"""FRAME AGGREGATE conditions: running aggregates and a test over them that a kernel evaluates without SQL.

A frame ends at the tuple where its condition over the frame's aggregates so far first holds, so each
aggregate must have a running value of fixed size (count, sum, avg, min, max), each compared with a
number; AND, OR, NOT and parentheses combine comparisons. The aggregates frame walks keep are the
`RunningAggregate`s of the window's rule, and the test a small tree (`Test`).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from wql.compiler.windows import Comparison, RunningAggregate, Test
from wql.grammar import ast
from wql.grammar.errors import Span, WQLNotSupportedError, WQLSemanticError, WQLTypeError
from wql.grammar.expressions import render_sql

_COMPARISONS: dict[type, Comparison] = {
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.EQ: "=",
    exp.NEQ: "<>",
}
_MIRRORED: dict[Comparison, Comparison] = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<>": "<>"}
_RUNNING = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
_CONDITION_HINT = (
    "a FRAME AGGREGATE condition compares count, sum, avg, min or max of the frame with a number, "
    "e.g. (sum(v) > 100); AND, OR and NOT combine such comparisons"
)


def aggregate_test(
    tree: exp.Expression,
    source: ast.Expr,
    span_of: Callable[[exp.Expression], Span],
    type_of: Callable[[str], str | None],
) -> tuple[tuple[RunningAggregate, ...], Test]:
    """A FRAME AGGREGATE condition (resolved) as running aggregates and a test over them.

    Only aggregates whose running value over a growing frame is a fixed-size state
    are allowed (count, sum, avg, min, max: distributive or algebraic), each compared
    with a number; AND, OR, NOT and parentheses combine comparisons. Anything else is
    refused with the position of the offending part.
    """
    running: list[RunningAggregate] = []

    def aggregate(node: exp.Expression) -> int | None:
        function = _RUNNING.get(type(node))
        if function is None:
            return None
        argument = node.this
        if isinstance(argument, exp.Distinct):
            raise WQLNotSupportedError(
                f"{render_sql(node)} in a FRAME AGGREGATE condition: a distinct count has no running state",
                span=span_of(node),
                hint=_CONDITION_HINT,
            )
        arg = None if isinstance(argument, exp.Star) else render_sql(argument)
        if function == "count" and arg is not None:
            arg_type = type_of(arg)
            integral = True
        elif arg is not None:
            arg_type = type_of(arg)
            if arg_type not in {"TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE"}:
                raise WQLTypeError(
                    f"{render_sql(node)} in a FRAME AGGREGATE condition needs a number, "
                    f"and '{arg}' is {arg_type or 'of a type WQL cannot tell'}",
                    span=span_of(node),
                    hint="aggregate an INT, BIGINT or DOUBLE column",
                )
            integral = arg_type in {"TINYINT", "SMALLINT", "INT", "BIGINT"} and function != "avg"
        else:
            integral = True
        item = RunningAggregate(function, arg, render_sql(node), integral)  # type: ignore[arg-type]
        if item not in running:
            running.append(item)
        return running.index(item)

    def number(node: exp.Expression) -> int | float | None:
        negative = False
        while isinstance(node, exp.Paren | exp.Neg):
            negative ^= isinstance(node, exp.Neg)
            node = node.this
        if not isinstance(node, exp.Literal) or node.is_string:
            return None
        try:
            value = Decimal(node.this)
        except InvalidOperation:
            return None
        if not value.is_finite():
            return None
        value = -value if negative else value
        return int(value) if value == value.to_integral_value() and abs(value) < 2**63 else float(value)

    def walk(node: exp.Expression) -> Test:
        if isinstance(node, exp.Paren):
            return walk(node.this)
        if isinstance(node, exp.And | exp.Or):
            return ("and" if isinstance(node, exp.And) else "or", walk(node.left), walk(node.right))
        if isinstance(node, exp.Not):
            return ("not", walk(node.this))
        op = _COMPARISONS.get(type(node))
        if op is not None:
            left, right = node.left, node.right
            index, value = aggregate(_unparen(left)), number(right)
            if index is None:
                index, value, op = aggregate(_unparen(right)), number(left), _MIRRORED[op]
            if index is not None and value is not None:
                return ("compare", op, index, value)
        raise WQLNotSupportedError(
            f"'{render_sql(node)}' as a FRAME AGGREGATE condition",
            span=span_of(node),
            hint=_CONDITION_HINT,
        )

    test = walk(tree)
    if not running:
        raise WQLSemanticError("a FRAME AGGREGATE condition needs an aggregate", span=source.span, hint=_CONDITION_HINT)
    return tuple(running), test


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node
