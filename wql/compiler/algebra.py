"""The state algebra: each partial-state operation's components, identity and combine, in one table.

Plans keep aggregates as partial states (wql.compiler.plans.states) and merge them in numpy kernels,
in Spark columns and in the JVM kernels. The identity (what an empty state holds, and what a NULL
contributes) and the combine (two states into one: sums add, extremes compare, moments merge by
Chan's parallel formula) are written here once, as small expression trees; wql.compiler.algebra_forms
generates the numpy, PySpark and Java forms from them, so no language holds its own copy of a
formula. `combine` evaluates the table in plain Python: the reference the generated forms are
tested against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

OperationName = Literal["sum", "min", "max", "moments"]
Side = Literal["a", "b"]
Type = Literal["integral", "floating", "column"]  # "column": the state column's own type


@dataclass(frozen=True)
class Part:
    """Component `component` of the left (a) or right (b) state."""

    side: Side
    component: str


@dataclass(frozen=True)
class Local:
    """A named intermediate of the combine (a `Let`), computed once."""

    name: str


@dataclass(frozen=True)
class Const:
    value: int | float


@dataclass(frozen=True)
class Binary:
    """Arithmetic; "/" is a floating division in every language, even of two counts."""

    op: Literal["+", "-", "*", "/"]
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Positive:
    """x > 0."""

    x: Expr


@dataclass(frozen=True)
class Choose:
    """`then` where `condition` holds, else `otherwise` (element-wise in numpy and Spark)."""

    condition: Positive
    then: Expr
    otherwise: Expr


@dataclass(frozen=True)
class Least:
    """The smaller of two values. Spark orders NaN above every number, so a floating least skips NaN."""

    left: Expr
    right: Expr


@dataclass(frozen=True)
class Greatest:
    """The larger of two values: a NaN, above every number in Spark, wins."""

    left: Expr
    right: Expr


Expr = Part | Local | Const | Binary | Choose | Least | Greatest


@dataclass(frozen=True)
class Let:
    name: str
    type: Type
    value: Expr


Identity = Literal["zero", "top", "bottom"]  # top: the type's largest value (NaN for floats); bottom: its smallest


@dataclass(frozen=True)
class Component:
    """One column of a state: its type, its identity and how two states' values of it combine."""

    name: str
    type: Type
    identity: Identity
    combine: Expr


@dataclass(frozen=True)
class Operation:
    """A state operation: its components (in column order) and the intermediates their combines share."""

    name: OperationName
    components: tuple[Component, ...]
    lets: tuple[Let, ...] = ()
    spark_fold: str | None = None  # the Spark aggregate that folds a group of such states, if one does

    def component(self, name: str) -> Component:
        return next(c for c in self.components if c.name == name)


def _a(component: str) -> Part:
    return Part("a", component)


def _b(component: str) -> Part:
    return Part("b", component)


def _single(name: OperationName, identity: Identity, combine: Expr, fold: str) -> Operation:
    return Operation(name, (Component("value", "column", identity, combine),), spark_fold=fold)


_N, _SHARE, _DELTA = Local("n"), Local("share"), Local("delta")

OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        _single("sum", "zero", Binary("+", _a("value"), _b("value")), "sum"),
        _single("min", "top", Least(_a("value"), _b("value")), "min"),
        _single("max", "bottom", Greatest(_a("value"), _b("value")), "max"),
        # Count, mean and M2 (the sum of squared deviations), merged by Chan's parallel formula. The share
        # b.n / n is taken first: merged into an empty state (share 1) a mean stays exactly itself, so equal
        # values keep their mean and a variance of exactly 0, where (b.mean − a.mean) · b.n / n would round.
        Operation(
            "moments",
            (
                Component("n", "integral", "zero", _N),
                Component("mean", "floating", "zero", Binary("+", _a("mean"), Binary("*", _DELTA, _SHARE))),
                Component(
                    "m2",
                    "floating",
                    "zero",
                    Binary(
                        "+",
                        Binary("+", _a("m2"), _b("m2")),
                        Binary("*", Binary("*", Binary("*", _DELTA, _DELTA), _a("n")), _SHARE),
                    ),
                ),
            ),
            lets=(
                Let("n", "integral", Binary("+", _a("n"), _b("n"))),
                Let("share", "floating", Binary("/", _b("n"), Choose(Positive(_N), _N, Const(1)))),
                Let("delta", "floating", Binary("-", _b("mean"), _a("mean"))),
            ),
        ),
    )
}


def lets_for(operation: Operation, expr: Expr) -> tuple[Let, ...]:
    """The operation's intermediates that `expr` reaches, in the order they are defined."""
    wanted: set[str] = set()

    def walk(e: Expr) -> None:
        if isinstance(e, Local) and e.name not in wanted:
            wanted.add(e.name)
            walk(next(let for let in operation.lets if let.name == e.name).value)
        for child in children(e):
            walk(child)

    walk(expr)
    return tuple(let for let in operation.lets if let.name in wanted)


def children(e: Expr | Positive) -> tuple[Expr, ...]:
    if isinstance(e, Binary | Least | Greatest):
        return (e.left, e.right)
    if isinstance(e, Choose):
        return (e.condition.x, e.then, e.otherwise)
    if isinstance(e, Positive):
        return (e.x,)
    return ()


# ------------------------------------------------------------------ the table in plain Python


def identity(operation: str, integral: bool, bits: int = 64) -> list[int | float]:
    """Each component's identity, for a state column of an integral type of `bits` bits or a floating one."""
    values: list[int | float] = []
    for c in OPERATIONS[operation].components:
        whole = c.type == "integral" or (c.type == "column" and integral)
        top = 2 ** (bits - 1) - 1
        values.append(
            {
                "zero": 0 if whole else 0.0,
                "top": top if whole else math.nan,
                "bottom": -top - 1 if whole else -math.inf,
            }[c.identity]
        )
    return values


def combine(operation: str, left: list, right: list) -> list:
    """Two states of `operation` merged, evaluated from the table in plain Python (ints stay ints)."""
    op = OPERATIONS[operation]
    parts = {("a", c.name): v for c, v in zip(op.components, left, strict=True)}
    parts |= {("b", c.name): v for c, v in zip(op.components, right, strict=True)}
    local: dict[str, int | float] = {}

    def value(e: Expr) -> int | float:
        if isinstance(e, Part):
            return parts[(e.side, e.component)]
        if isinstance(e, Local):
            return local[e.name]
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Choose):
            return value(e.then) if value(e.condition.x) > 0 else value(e.otherwise)
        x, y = value(e.left), value(e.right)
        if isinstance(e, Least):
            return y if _nan(x) else x if _nan(y) else min(x, y)
        if isinstance(e, Greatest):
            return x if _nan(x) else y if _nan(y) else max(x, y)
        if e.op == "/":
            return x / y
        return x + y if e.op == "+" else x - y if e.op == "-" else x * y

    for let in op.lets:
        local[let.name] = value(let.value)
    return [value(c.combine) for c in op.components]


def _nan(x: int | float) -> bool:
    return isinstance(x, float) and math.isnan(x)


__all__ = [
    "OPERATIONS",
    "Binary",
    "Choose",
    "Component",
    "Const",
    "Greatest",
    "Least",
    "Let",
    "Local",
    "Operation",
    "OperationName",
    "Part",
    "Positive",
    "combine",
    "identity",
    "lets_for",
]
