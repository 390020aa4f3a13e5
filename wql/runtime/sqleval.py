"""A small interpreter for Spark SQL expressions, for the reference evaluator.

It covers what differential tests generate: arithmetic, comparisons,
three-valued logic, CASE, CAST to the basic types, a handful of functions, and
the aggregates WQL plans. It follows Spark's rules where they matter for
results (NULL propagation, `/` always divides as double, integer `%` keeps the
dividend's sign). Anything else raises `NotImplementedError`. It is a test
oracle, not an engine.
"""

from __future__ import annotations

import math
import operator
import statistics
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlglot import exp

from wql.compiler.aggregates import aggregate_name, unwrap
from wql.grammar.expressions import parse_sql_expression

Row = Mapping[str, Any]


def parse_sql(sql: str) -> exp.Expression:
    return parse_sql_expression(sql)


def evaluate(sql: str, row: Row) -> Any:
    """Value of a scalar expression on one row (keys: column names, case-insensitive)."""
    lowered = {k.lower(): v for k, v in row.items()}
    return _eval(parse_sql(sql), lowered)


def _num(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value


def _binary(node: exp.Binary, row: Row, op: Callable[[Any, Any], Any]) -> Any:
    left = _eval(node.left, row)
    right = _eval(node.right, row)
    if left is None or right is None:
        return None
    return op(_num(left), _num(right))


def _divide(a: Any, b: Any) -> Any:
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return float(a) / float(b)


def _mod(a: Any, b: Any) -> Any:
    if b == 0:
        raise ZeroDivisionError("division by zero")
    if isinstance(a, int) and isinstance(b, int):
        return int(math.fmod(a, b))
    return math.fmod(a, b)


def _truth(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _nan_last(a: Any, b: Any) -> tuple[Any, Any]:
    """Operands ordered as Spark orders them: NaN equals NaN and is greater than every other number."""
    a_nan = isinstance(a, float) and math.isnan(a)
    b_nan = isinstance(b, float) and math.isnan(b)
    if a_nan or b_nan:
        return (1, 0) if a_nan and not b_nan else (0, 1) if b_nan and not a_nan else (0, 0)
    return a, b


_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    exp.EQ: lambda a, b: operator.eq(*_nan_last(a, b)),
    exp.NEQ: lambda a, b: operator.ne(*_nan_last(a, b)),
    exp.LT: lambda a, b: operator.lt(*_nan_last(a, b)),
    exp.LTE: lambda a, b: operator.le(*_nan_last(a, b)),
    exp.GT: lambda a, b: operator.gt(*_nan_last(a, b)),
    exp.GTE: lambda a, b: operator.ge(*_nan_last(a, b)),
}
_ARITH: dict[type, Callable[[Any, Any], Any]] = {
    exp.Add: lambda a, b: a + b,
    exp.Sub: lambda a, b: a - b,
    exp.Mul: lambda a, b: a * b,
    exp.Div: _divide,
    exp.Mod: _mod,
}


def _cast(value: Any, to: str) -> Any:
    if value is None:
        return None
    to = to.upper()
    if to in {"INT", "BIGINT", "SMALLINT", "TINYINT", "LONG"}:
        if isinstance(value, str):
            value = float(value.strip())
        return int(value) if not isinstance(value, float) else math.trunc(value)
    if to in {"DOUBLE", "FLOAT"}:
        return float(value)
    if to == "STRING":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float) and value == int(value) and abs(value) < 1e7:
            return f"{value:.1f}"
        return str(value)
    if to == "BOOLEAN":
        if isinstance(value, str):
            return {"true": True, "false": False}.get(value.strip().lower())
        return bool(value)
    raise NotImplementedError(f"CAST to {to}")


def _eval(node: exp.Expression, row: Row) -> Any:
    """A scalar expression's value on one row. Arithmetic and comparisons are _binary over _ARITH and
    _COMPARE; every other kind of node has a small evaluator of its own in _EVALUATORS, tried in order,
    so each of SQL's rules (NULL propagation, three-valued logic, Spark's rounding) reads on its own."""
    operation = _ARITH.get(type(node)) or _COMPARE.get(type(node))
    if operation is not None:
        return _binary(node, row, operation)  # type: ignore[arg-type]
    for kinds, evaluator in _EVALUATORS:
        if isinstance(node, kinds):
            return evaluator(node, row)
    raise NotImplementedError(f"reference evaluator: {node.sql(dialect='spark')}")


def _column(node: exp.Column, row: Row) -> Any:
    name = str(node.name).lower()
    if name not in row:
        raise KeyError(f"no column {node.name!r} in row")
    return row[name]


def _literal(node: exp.Literal, row: Row) -> Any:
    """A string, or a number: a float where it has a point or an exponent, as Spark reads it, else an int."""
    if node.is_string:
        return node.this
    text = node.this
    if any(c in text for c in ".eE"):
        return float(text)
    return int(text)


def _negative(node: exp.Neg, row: Row) -> Any:
    value = _eval(node.this, row)
    return None if value is None else -_num(value)


def _and(node: exp.And, row: Row) -> bool | None:
    """Three-valued AND: false wins over NULL."""
    left, right = _truth(_eval(node.left, row)), _truth(_eval(node.right, row))
    if left is False or right is False:
        return False
    return None if left is None or right is None else True


def _or(node: exp.Or, row: Row) -> bool | None:
    """Three-valued OR: true wins over NULL."""
    left, right = _truth(_eval(node.left, row)), _truth(_eval(node.right, row))
    if left is True or right is True:
        return True
    return None if left is None or right is None else False


def _not(node: exp.Not, row: Row) -> bool | None:
    value = _truth(_eval(node.this, row))
    return None if value is None else not value


def _is(node: exp.Is, row: Row) -> bool:
    value = _eval(node.this, row)
    if isinstance(node.expression, exp.Null):
        return value is None
    raise NotImplementedError(node.sql(dialect="spark"))


def _between(node: exp.Between, row: Row) -> bool | None:
    value, low, high = _eval(node.this, row), _eval(node.args["low"], row), _eval(node.args["high"], row)
    if value is None or low is None or high is None:
        return None
    return low <= value <= high


def _in(node: exp.In, row: Row) -> bool | None:
    """IN: NULL where the value is NULL, or where it is not found and a NULL is among the options."""
    value = _eval(node.this, row)
    options = [_eval(e, row) for e in node.expressions]
    if value is None:
        return None
    if value in options:
        return True
    return None if None in options else False


def _case(node: exp.Case, row: Row) -> Any:
    """CASE x WHEN v (equal to x) or CASE WHEN condition (true, not NULL), else the default or NULL."""
    subject = _eval(node.this, row) if node.this is not None else None
    for branch in node.args.get("ifs") or []:
        condition = _eval(branch.this, row)
        hit = condition == subject if node.this is not None else condition is True
        if hit:
            return _eval(branch.args["true"], row)
    default = node.args.get("default")
    return _eval(default, row) if default is not None else None


def _if(node: exp.If, row: Row) -> Any:
    condition = _eval(node.this, row)
    branch = node.args.get("true") if condition is True else node.args.get("false")
    return _eval(branch, row) if branch is not None else None


def _coalesce(node: exp.Coalesce, row: Row) -> Any:
    for arg in [node.this, *node.expressions]:
        value = _eval(arg, row)
        if value is not None:
            return value
    return None


def _absolute(node: exp.Abs, row: Row) -> Any:
    value = _eval(node.this, row)
    return None if value is None else abs(_num(value))


def _floor_or_ceil(node: exp.Floor | exp.Ceil, row: Row) -> Any:
    value = _eval(node.this, row)
    if value is None:
        return None
    return math.floor(value) if isinstance(node, exp.Floor) else math.ceil(value)


def _round(node: exp.Round, row: Row) -> Any:
    """ROUND half up, as Spark rounds, on the value's decimal digits rather than its binary float."""
    value = _eval(node.this, row)
    places = _eval(node.args["decimals"], row) if node.args.get("decimals") is not None else 0
    if value is None:
        return None
    scaled = Decimal(repr(value)).quantize(Decimal(1).scaleb(-int(places)), rounding="ROUND_HALF_UP")
    return float(scaled) if isinstance(value, float) else int(scaled)


def _upper_or_lower(node: exp.Upper | exp.Lower, row: Row) -> Any:
    value = _eval(node.this, row)
    if value is None:
        return None
    return str(value).upper() if isinstance(node, exp.Upper) else str(value).lower()


def _greatest_or_least(node: exp.Greatest | exp.Least, row: Row) -> Any:
    """GREATEST and LEAST skip NULLs: NULL only when every value is."""
    values = [_eval(e, row) for e in [node.this, *node.expressions]]
    present = [v for v in values if v is not None]
    if not present:
        return None
    return max(present) if isinstance(node, exp.Greatest) else min(present)


# The evaluator of each kind of node, in the order _eval tries them.
_EVALUATORS: tuple[tuple[type | tuple[type, ...], Callable[[Any, Row], Any]], ...] = (
    (exp.Paren, lambda node, row: _eval(node.this, row)),
    (exp.Column, _column),
    (exp.Literal, _literal),
    (exp.Null, lambda node, row: None),
    (exp.Boolean, lambda node, row: bool(node.this)),
    (exp.Neg, _negative),
    (exp.NullSafeEQ, lambda node, row: _eval(node.left, row) == _eval(node.right, row)),
    (exp.And, _and),
    (exp.Or, _or),
    (exp.Not, _not),
    (exp.Is, _is),
    (exp.Between, _between),
    (exp.In, _in),
    (exp.Case, _case),
    (exp.If, _if),
    (exp.Cast, lambda node, row: _cast(_eval(node.this, row), node.to.sql(dialect="spark"))),
    (exp.Coalesce, _coalesce),
    (exp.Abs, _absolute),
    ((exp.Floor, exp.Ceil), _floor_or_ceil),
    (exp.Round, _round),
    ((exp.Upper, exp.Lower), _upper_or_lower),
    ((exp.Greatest, exp.Least), _greatest_or_least),
)


# ------------------------------------------------------------------ aggregates


def aggregate(sql: str, rows: Sequence[Row]) -> Any:
    """Value of one aggregate call over a group of rows."""
    node = parse_sql(sql)
    name = aggregate_name(node)
    lowered = [{k.lower(): v for k, v in r.items()} for r in rows]
    if name is None:
        raise NotImplementedError(sql)
    node, condition = unwrap(node)
    if condition is not None:
        lowered = [r for r in lowered if _eval(condition, r) is True]
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
        return len(lowered)
    args = list(node.iter_expressions())
    if name == "count_distinct":
        inner = node.this.expressions  # type: ignore[union-attr]
        seen = {tuple(_eval(e, r) for e in inner) for r in lowered}
        return sum(1 for values in seen if None not in values)
    first = args[0]
    values = [_eval(first, r) for r in lowered]
    present = [_num(v) for v in values if v is not None]
    return _AGGREGATES[name](present, values, args, lowered)


def _sum(present: list[Any], *_: Any) -> Any:
    if not present:
        return None
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return sum(present)
    return _float_sum(present)


def _float_sum(values: list[Any]) -> float:
    """An exact sum of finite values; with NaN or infinities, IEEE's answer, as Spark's sum gives."""
    floats = [float(v) for v in values]
    if all(math.isfinite(v) for v in floats):
        return math.fsum(floats)
    up, down = math.inf in floats, -math.inf in floats
    if any(math.isnan(v) for v in floats) or (up and down):
        return math.nan
    return math.inf if up else -math.inf


def _avg(present: list[Any], *_: Any) -> Any:
    return _float_sum(present) / len(present) if present else None


def _var(present: list[Any], population: bool) -> float | None:
    need = 1 if population else 2
    if len(present) < need:
        return None
    floats = [float(v) for v in present]
    if not all(math.isfinite(v) for v in floats):
        return math.nan  # Spark's moments meet ∞ − ∞ or NaN on the way
    return statistics.pvariance(floats) if population else statistics.variance(floats)


def _percentile(values: list[float], p: float) -> float | None:
    """Spark's exact percentile: linear interpolation between closest ranks."""
    if not values:
        return None
    ordered = sorted((float(v) for v in values), key=lambda v: (math.isnan(v), v))  # Spark: NaN above all
    position = p * (len(ordered) - 1)
    lower = math.floor(position)
    upper = math.ceil(position)
    if lower == upper or ordered[lower] == ordered[upper]:  # Spark: equal neighbours need no interpolation
        return ordered[lower]
    return ordered[lower] + (position - lower) * (ordered[upper] - ordered[lower])


def _by(present: list[Any], values: list[Any], args: list[exp.Expression], rows: list[Row], pick: Callable) -> Any:
    pairs = [(o, v) for v, o in zip(values, (_eval(args[1], r) for r in rows), strict=True) if o is not None]
    if not pairs:
        return None
    return pick(pairs, key=lambda pair: pair[0])[1]


def _spark_order(value: Any) -> tuple[int, Any]:
    """Spark orders NaN above every number, so min skips it unless nothing else is there."""
    if isinstance(value, float) and math.isnan(value):
        return (1, 0.0)
    return (0, value)


def _stddev(population: bool) -> Callable[..., Any]:
    def run(present: list[Any], *_: Any) -> Any:
        variance = _var(present, population)
        return None if variance is None else math.sqrt(variance)

    return run


_AGGREGATES: dict[str, Callable[..., Any]] = {
    "count": lambda present, *_: len(present),
    "sum": _sum,
    "avg": _avg,
    "min": lambda present, *_: min(present, key=_spark_order) if present else None,
    "max": lambda present, *_: max(present, key=_spark_order) if present else None,
    "stddev": _stddev(False),
    "stddev_samp": _stddev(False),
    "stddev_pop": _stddev(True),
    "variance": lambda present, *_: _var(present, False),
    "var_pop": lambda present, *_: _var(present, True),
    "median": lambda present, *_: _percentile(present, 0.5),
    "percentile": lambda present, values, args, rows: _percentile(present, float(_eval(args[1], {}))),
    "count_if": lambda present, *_: sum(1 for v in present if v is True),
    "bool_and": lambda present, *_: all(present) if present else None,
    "bool_or": lambda present, *_: any(present) if present else None,
    "min_by": lambda present, values, args, rows: _by(present, values, args, rows, min),
    "max_by": lambda present, values, args, rows: _by(present, values, args, rows, max),
    "collect_list": lambda present, *_: sorted(present, key=_sort_key),
    "collect_set": lambda present, *_: sorted(set(present), key=_sort_key),
    "approx_count_distinct": lambda present, *_: len(set(present)),
}


def _sort_key(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return (1, value.isoformat())
    return (0, value)
