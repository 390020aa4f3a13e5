"""The state algebra's numpy, PySpark and Java forms, generated from its table (wql.compiler.algebra).

A job carries its kernels as source copied from wql.compiler.kernels, and the JVM kernels are compiled
Java, so the generated forms are files kept in the repository: wql/compiler/kernels/state_algebra.py
and the JVM's StateAlgebra.java. `python -m wql.compiler.algebra_forms` writes them; tests/test_algebra.py
fails while either differs from what the table generates, so an edit by hand or a table change without
regenerating cannot go unnoticed. Each language is one small renderer of the same expression trees, as
sqlglot renders one tree to many dialects.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wql.compiler.algebra import (
    OPERATIONS,
    Binary,
    Choose,
    Component,
    Const,
    Expr,
    Greatest,
    Least,
    Local,
    Operation,
    Part,
    lets_for,
)

ROOT = Path(__file__).resolve().parent.parent
NUMPY_PATH = ROOT / "compiler" / "kernels" / "state_algebra.py"
JAVA_PATH = ROOT / "runtime" / "jvm" / "wql" / "kernels" / "StateAlgebra.java"

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
_ATOM = 3


@dataclass(frozen=True)
class Dialect:
    """How one language spells the algebra's nodes; the walk over the tree is shared."""

    part: Callable[[Part], str]
    const: Callable[[Const], str]
    choose: Callable[[str, str, str], str]
    least: Callable[[str, str], str]
    greatest: Callable[[str, str], str]
    divide: Callable[[str, str], str] = lambda left, right: f"{left} / {right}"


def render(e: Expr, dialect: Dialect) -> str:
    return _render(e, dialect)[0]


def _render(e: Expr, d: Dialect) -> tuple[str, int]:
    """The expression's text and its precedence (what a parent needs to know to parenthesize it)."""
    if isinstance(e, Part):
        return d.part(e), _ATOM
    if isinstance(e, Local):
        return e.name, _ATOM
    if isinstance(e, Const):
        return d.const(e), _ATOM
    if isinstance(e, Choose):
        return d.choose(render(e.condition.x, d), render(e.then, d), render(e.otherwise, d)), _ATOM
    if isinstance(e, Least):
        return d.least(render(e.left, d), render(e.right, d)), _ATOM
    if isinstance(e, Greatest):
        return d.greatest(render(e.left, d), render(e.right, d)), _ATOM
    precedence = _PRECEDENCE[e.op]
    left, lp = _render(e.left, d)
    right, rp = _render(e.right, d)
    left = left if lp >= precedence else f"({left})"
    right = right if rp > precedence else f"({right})"  # left-associative: a − (b − c) keeps its parentheses
    if e.op == "/":
        return d.divide(left, right), precedence
    return f"{left} {e.op} {right}", precedence


def _identity_text(op: Operation, integral: str, floating: str, high: str, low: str) -> tuple[str, str]:
    """(integral, floating) identity of an operation's states, one per kind (a moments count, its mean and M2)."""
    texts = {}
    for kind in ("integral", "floating"):
        found = {c.identity for c in op.components if c.type in (kind, "column")}
        if len(found) > 1:
            raise ValueError(f"{op.name}: its {kind} components differ in identity; one per kind is all a kernel reads")
        identity = found.pop() if found else "zero"
        texts[kind] = {"zero": integral if kind == "integral" else floating, "top": high, "bottom": low}[identity]
    return texts["integral"], texts["floating"]


# ------------------------------------------------------------------ numpy and PySpark

_NUMPY = Dialect(
    part=lambda p: f"{p.side}_{p.component}",
    const=lambda c: repr(c.value),
    choose=lambda c, t, o: f"np.where({c} > 0, {t}, {o})",
    least=lambda a, b: f"np.fmin({a}, {b})",
    greatest=lambda a, b: f"np.maximum({a}, {b})",
)

_COLUMNS = Dialect(
    part=lambda p: f"{p.side}_{p.component}",
    const=lambda c: repr(c.value),
    choose=lambda c, t, o: f"F.when({c} > 0, {t}).otherwise({_lit(o)})",
    least=lambda a, b: f"F.least({a}, {b})",
    greatest=lambda a, b: f"F.greatest({a}, {b})",
)


def _lit(text: str) -> str:
    """A constant as a Spark column (F.when's otherwise takes columns or literals; F.lit says which)."""
    return f"F.lit({text})" if text.replace(".", "").lstrip("-").isdigit() else text


_PY_HEADER = '''"""The state algebra in numpy and in Spark columns: generated from wql.compiler.algebra, do not edit.

`python -m wql.compiler.algebra_forms` writes this file from the table; tests/test_algebra.py fails while
it is stale. A job copies these functions like any kernel's (wql.compiler.codegen.support).
"""
'''


def _python_function(name: str, doc: str, imports: str, dialect: Dialect) -> list[str]:
    lines = ["", "", f"def {name}(operation, left, right):", f'    """{doc}"""', f"    {imports}", ""]
    for op in OPERATIONS.values():
        lines.append(f'    if operation == "{op.name}":')
        comma = "," if len(op.components) == 1 else ""  # a one-element tuple
        a = ", ".join(f"a_{c.name}" for c in op.components) + comma
        b = ", ".join(f"b_{c.name}" for c in op.components) + comma
        lines.append(f"        ({a}), ({b}) = left, right")
        for let in lets_for(op, _all(op)):
            lines.append(f"        {let.name} = {render(let.value, dialect)}")
        lines.append(f"        return [{', '.join(render(c.combine, dialect) for c in op.components)}]")
    lines.append('    raise ValueError(f"unknown state operation {operation!r}")')
    return lines


def _all(op: Operation) -> Expr:
    """One tree reaching every component's combine (lets_for then finds every intermediate they read)."""
    combined: Expr = op.components[0].combine
    for c in op.components[1:]:
        combined = Binary("+", combined, c.combine)
    return combined


def numpy_module() -> str:
    """The text of wql/compiler/kernels/state_algebra.py."""
    lines = [_PY_HEADER.rstrip("\n")]
    lines += ["", "", "def state_identity(operation, dtype):"]
    lines.append('    """What a partial state starts from, and what a NULL (or a tuple outside WHERE) contributes."""')
    lines += ["    import numpy as np", "", "    dtype = np.dtype(dtype)"]
    for op in OPERATIONS.values():
        integral, floating = _identity_text(op, "0", "0", "np.iinfo(dtype).max", "np.iinfo(dtype).min")
        if floating == "np.iinfo(dtype).max":
            floating = "np.nan"
        elif floating == "np.iinfo(dtype).min":
            floating = "-np.inf"
        value = integral if integral == floating else f'{integral} if dtype.kind in "iu" else {floating}'
        lines += [f'    if operation == "{op.name}":', f"        return {value}"]
    lines.append('    raise ValueError(f"unknown state operation {operation!r}")')
    lines += _python_function(
        "state_combine",
        "Two partial states merged, component by component (numpy arrays or scalars, element-wise).",
        "import numpy as np",
        _NUMPY,
    )
    lines += _python_function(
        "state_combine_columns",
        "Two partial states merged, component by component, as Spark columns.",
        "from pyspark.sql import functions as F",
        _COLUMNS,
    )
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ Java

_JAVA_CODES = {name: i for i, name in enumerate(OPERATIONS)}


def _java_name(p: Part) -> str:
    component = p.component if p.component != "value" else ""
    return p.side + component[:1].upper() + component[1:]


def _java(kind: str) -> Dialect:
    def least(a: str, b: str) -> str:
        if kind == "long":
            return f"Math.min({a}, {b})"
        return f"(Double.isNaN({a}) ? {b} : Double.isNaN({b}) ? {a} : Math.min({a}, {b}))"

    return Dialect(
        part=_java_name,
        const=lambda c: repr(c.value),
        choose=lambda c, t, o: f"({c} > 0 ? {t} : {o})",
        least=least,
        greatest=lambda a, b: f"Math.max({a}, {b})",
        divide=lambda left, right: f"(double) {left} / {right}",
    )


def _java_type(c: Component | str) -> str:
    kind = c if isinstance(c, str) else c.type
    return "long" if kind == "integral" else "double"


def _reads(op: Operation, expr: Expr) -> list[Part]:
    """The parts an expression (with the intermediates it reaches) reads, a's components then b's."""
    found: set[Part] = set()

    def walk(e: Expr) -> None:
        if isinstance(e, Part):
            found.add(e)
        for child in (e.left, e.right) if isinstance(e, Binary | Least | Greatest) else ():
            walk(child)
        if isinstance(e, Choose):
            walk(e.condition.x), walk(e.then), walk(e.otherwise)

    walk(expr)
    for let in lets_for(op, expr):
        walk(let.value)
    order = [Part(side, c.name) for side in ("a", "b") for c in op.components]
    return [p for p in order if p in found]


def _own(op: Operation, c: Component) -> bool:
    """Whether a component's combine reads that component alone (a moments count): it then is a slot's combine."""
    return {p.component for p in _reads(op, c.combine)} == {c.name}


def java_class() -> str:
    """The text of wql/runtime/jvm/wql/kernels/StateAlgebra.java."""
    out = [
        "// Generated by wql.compiler.algebra_forms from the table in wql/compiler/algebra.py: do not edit.",
        "// `python -m wql.compiler.algebra_forms` rewrites it; tests/test_algebra.py fails while it is stale.",
        "package wql.kernels;",
        "",
        "/**",
        " * WQL's state algebra: each operation's identity and combine, as the Python table says them. The",
        " * kernels' states ({@link States}) are long and double slots, so each combine comes per slot type;",
        " * a state of several components (moments) has one function per component.",
        " */",
        "public final class StateAlgebra {",
    ]
    for name, code in _JAVA_CODES.items():
        out.append(f"  public static final int {name.upper()} = {code};")
    out += ["", "  private StateAlgebra() {}", ""]
    out += ["  /** The operation a kernel request names, or -1 for one the table does not hold. */"]
    out += ["  public static int operation(String name) {", "    switch (name) {"]
    for name in _JAVA_CODES:
        out += [f'      case "{name}":', f"        return {name.upper()};"]
    out += ["      default:", "        return -1;", "    }", "  }", ""]
    out += ["  /** The identity of an integral state slot whose type holds −high − 1 … high. */"]
    out += ["  public static long longIdentity(int op, long high) {", "    switch (op) {"]
    doubles = []
    for op in OPERATIONS.values():
        integral, floating = _identity_text(op, "0", "0.0", "high", "-high - 1")
        floating = {"high": "Double.NaN", "-high - 1": "Double.NEGATIVE_INFINITY"}.get(floating, floating)
        out += [f"      case {op.name.upper()}:", f"        return {integral};"]
        doubles += [f"      case {op.name.upper()}:", f"        return {floating};"]
    out += ["      default:", '        throw new IllegalArgumentException("unknown state operation " + op);']
    out += ["    }", "  }", ""]
    out += ["  /** The identity of a floating state slot (NaN for a minimum: Spark orders NaN above every number). */"]
    out += ["  public static double doubleIdentity(int op) {", "    switch (op) {", *doubles]
    out += ["      default:", '        throw new IllegalArgumentException("unknown state operation " + op);']
    out += ["    }", "  }"]
    for kind in ("integral", "floating"):
        java = _java_type(kind)
        dialect = _java(java)
        what = "a one-column state's slot, or a moments count" if java == "long" else "a one-column state's slot"
        out += ["", f"  /** a ⊕ b for {what} of type {java}. */"]
        out += [f"  public static {java} combine(int op, {java} a, {java} b) {{", "    switch (op) {"]
        for op in OPERATIONS.values():
            for c in op.components:
                if c.type not in (kind, "column"):
                    continue
                if len(op.components) == 1:
                    out += [f"      case {op.name.upper()}:", f"        return {render(c.combine, dialect)};"]
                elif _own(op, c):
                    call = f"{op.name}{c.name.capitalize()}(a, b)"
                    out += [f"      case {op.name.upper()}:", f"        return {call};"]
        out += ["      default:", '        throw new IllegalArgumentException("no such combine: " + op);']
        out += ["    }", "  }"]
    for op in OPERATIONS.values():
        if len(op.components) == 1:
            continue
        for c in op.components:
            java = _java_type(c)
            dialect = _java(java)
            types = {p.component: _java_type(op.component(p.component)) for p in _reads(op, c.combine)}
            params = ", ".join(f"{types[p.component]} {_java_name(p)}" for p in _reads(op, c.combine))
            out += ["", f"  /** Component {c.name} of two {op.name} states merged. */"]
            out += [f"  public static {java} {op.name}{c.name.capitalize()}({params}) {{"]
            for let in lets_for(op, c.combine):
                out.append(f"    {_java_type(let.type)} {let.name} = {render(let.value, dialect)};")
            out += [f"    return {render(c.combine, dialect)};", "  }"]
    out.append("}")
    return "\n".join(out) + "\n"


def main() -> None:
    """Write the generated forms (and say which changed)."""
    for path, text in ((NUMPY_PATH, numpy_module()), (JAVA_PATH, java_class())):
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT.parent)}", file=sys.stderr)


if __name__ == "__main__":
    main()
