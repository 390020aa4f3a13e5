"""The state algebra: the table's laws, and each generated form (numpy, Spark columns, Java) against the table.

The table (wql.compiler.algebra) is checked against arithmetic on the values themselves: states combined in
any grouping are the state of the concatenated values. Each generated form is checked against the table:
the files are what the table generates now, and running them on random states gives what the table gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SPARK
from wql.compiler import algebra
from wql.compiler.algebra_forms import JAVA_PATH, NUMPY_PATH, java_class, numpy_module
from wql.compiler.kernels import state_algebra

Tree = int | tuple[Any, Any]  # a leaf: the index of a value; a node: two subtrees combined


@st.composite
def groupings(draw: st.DrawFn, lo: int, hi: int) -> Tree:
    """A random binary grouping of the values lo..hi−1, in order."""
    if hi - lo == 1:
        return lo
    cut = draw(st.integers(lo + 1, hi - 1))
    return (draw(groupings(lo, cut)), draw(groupings(cut, hi)))


@st.composite
def examples(draw: st.DrawFn, operation: str | None = None, least: int = 1) -> tuple[str, bool, list[Any], Tree]:
    """(operation, integral, values, grouping): `least` values or more. Extremes of floats meet NaN, which
    Spark orders above all."""
    operation = operation or draw(st.sampled_from(sorted(algebra.OPERATIONS)))
    integral = operation != "moments" and draw(st.booleans())
    if integral:
        value = st.integers(-(10**6), 10**6)
    else:
        value = st.floats(-1e6, 1e6, allow_nan=False)
        if operation in ("min", "max"):
            value = st.one_of(value, st.just(math.nan))
    values = draw(st.lists(value, min_size=least, max_size=7))
    return operation, integral, values, draw(groupings(0, len(values)))


def lift(operation: str, x: float) -> list[Any]:
    """One value's state: a cell holding only x (its moments: a count of 1, x, no spread)."""
    return [1, float(x), 0.0] if operation == "moments" else [x]


def whole(operation: str, values: list[Any]) -> list[Any]:
    """The state of all the values at once, from the values (not from the algebra)."""
    numbers = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
    if operation == "sum":
        return [sum(values) if isinstance(values[0], int) else math.fsum(values)]
    if operation == "min":
        return [min(numbers) if numbers else math.nan]
    if operation == "max":
        return [max(numbers) if len(numbers) == len(values) else math.nan]
    mean = math.fsum(values) / len(values)
    return [len(values), mean, math.fsum((x - mean) ** 2 for x in values)]


def fold(tree: Tree, leaf: Any, combine: Any) -> Any:
    if isinstance(tree, int):
        return leaf(tree)
    return combine(fold(tree[0], leaf, combine), fold(tree[1], leaf, combine))


def same(got: Any, want: Any, scale: float = 0.0) -> bool:
    """Equal, NaN equal to NaN; floats within rounding of values of size `scale` (0: exactly)."""
    got, want = float(got), float(want)
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9 * scale)


def near_whole(operation: str, values: list[Any], state: list[Any]) -> bool:
    scale = max((abs(v) for v in values if not math.isnan(v)), default=0.0) + 1.0
    scales = [len(values) * scale**2] * 3 if operation == "moments" else [len(values) * scale]
    return all(same(g, w, s) for g, w, s in zip(state, whole(operation, values), scales, strict=True))


def table_fold(example: tuple[str, bool, list[Any], Tree]) -> list[Any]:
    operation, _, values, tree = example
    return fold(tree, lambda i: lift(operation, values[i]), lambda a, b: algebra.combine(operation, a, b))


# ------------------------------------------------------------------ the table


@settings(max_examples=300)
@given(examples())
def test_the_tables_combine_in_any_grouping_is_the_state_of_the_concatenated_values(example: Any) -> None:
    operation, _, values, _ = example
    assert near_whole(operation, values, table_fold(example)), (example, table_fold(example))


@settings(max_examples=200)
@given(examples())
def test_the_tables_identity_changes_no_state_on_either_side(example: Any) -> None:
    operation, integral, _, _ = example
    state = table_fold(example)
    empty = algebra.identity(operation, integral)
    for merged in (algebra.combine(operation, empty, state), algebra.combine(operation, state, empty)):
        assert all(same(g, w) for g, w in zip(merged, state, strict=True)), (example, merged)


# ------------------------------------------------------------------ generated forms: up to date


def test_the_generated_forms_are_what_the_table_generates() -> None:
    """An edit by hand, or a table change without `python -m wql.compiler.algebra_forms`, fails here."""
    assert NUMPY_PATH.read_text(encoding="utf-8") == numpy_module(), "regenerate: python -m wql.compiler.algebra_forms"
    assert JAVA_PATH.read_text(encoding="utf-8") == java_class(), "regenerate: python -m wql.compiler.algebra_forms"


# ------------------------------------------------------------------ numpy


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "float32", "float64"])
def test_numpy_identities_are_the_tables(dtype: str) -> None:
    integral = np.dtype(dtype).kind == "i"
    for operation in algebra.OPERATIONS:
        want = algebra.identity(operation, integral, np.dtype(dtype).itemsize * 8)
        got = state_algebra.state_identity(operation, dtype)
        component = 0 if operation != "moments" else 1 if not integral else 0  # a dtype names one component
        assert same(got, want[component]), (operation, dtype, got, want)


@settings(max_examples=300)
@given(examples())
def test_the_numpy_combine_in_any_grouping_is_the_tables(example: Any) -> None:
    operation, integral, values, tree = example
    kinds = [np.int64 if integral or (operation == "moments" and i == 0) else np.float64 for i in range(3)]

    def leaf(i: int) -> list[Any]:
        return [np.asarray([v], dtype=kind) for v, kind in zip(lift(operation, values[i]), kinds, strict=False)]

    with np.errstate(invalid="ignore"):
        got = fold(tree, leaf, lambda a, b: state_algebra.state_combine(operation, a, b))
    want = table_fold(example)
    assert all(same(g[0], w) for g, w in zip(got, want, strict=True)), (example, got, want)
    assert near_whole(operation, values, [g[0] for g in got])


# ------------------------------------------------------------------ Spark columns


# Seven groupings of two values or more for each operation, so that every combine runs in every Spark run.
PACKED_EXAMPLES = st.tuples(*(examples(op, least=2) for op in sorted(algebra.OPERATIONS) for _ in range(7)))


@SPARK
@given(PACKED_EXAMPLES)
def test_the_spark_column_combine_in_any_grouping_is_the_tables(spark: Any, packed: list[Any]) -> None:
    """Many groupings in one Spark run: each tree's leaves are columns of a one-row frame, and its nodes are
    computed level by level (each node from its children's columns, so no expression repeats a subtree)."""
    from pyspark.sql import functions as F

    leaves: dict[str, Any] = {}
    nodes: list[tuple[int, str, str, str, str]] = []  # (height, node, left, right, operation)

    def walk(e: int, tree: Tree, operation: str) -> tuple[str, int]:
        if isinstance(tree, int):
            name = f"e{e}_v{tree}"
            for k, value in enumerate(lift(operation, packed[e][2][tree])):
                leaves[f"{name}_{k}"] = value
            return name, 0
        (left, hl), (right, hr) = walk(e, tree[0], operation), walk(e, tree[1], operation)
        name, height = f"{left}_{right}", max(hl, hr) + 1
        nodes.append((height, name, left, right, operation))
        return name, height

    roots = [walk(e, tree, operation)[0] for e, (operation, _, _, tree) in enumerate(packed)]
    width = {op: len(algebra.OPERATIONS[op].components) for op in algebra.OPERATIONS}
    types = ["bigint" if isinstance(v, int) else "double" for v in leaves.values()]  # a moments count is integral
    schema = ", ".join(f"`{name}` {kind}" for name, kind in zip(leaves, types, strict=True))
    frame = spark.createDataFrame([tuple(leaves.values())], schema)
    for height in sorted({h for h, *_ in nodes}):
        columns = {}
        for _, name, left, right, operation in (n for n in nodes if n[0] == height):
            a = [F.col(f"`{left}_{k}`") for k in range(width[operation])]
            b = [F.col(f"`{right}_{k}`") for k in range(width[operation])]
            merged = state_algebra.state_combine_columns(operation, a, b)
            columns.update({f"{name}_{k}": c for k, c in enumerate(merged)})
        frame = frame.withColumns(columns)
    [row] = frame.select(*(f"`{r}_{k}`" for e, r in enumerate(roots) for k in range(width[packed[e][0]]))).collect()
    at = 0
    for example in packed:
        want = table_fold(example)
        got = list(row[at : at + len(want)])
        at += len(want)
        assert all(same(g, w, 1e-3) for g, w in zip(got, want, strict=True)), (example, got, want)
        assert near_whole(example[0], example[2], got), (example, got)


# ------------------------------------------------------------------ Java


@dataclass(frozen=True)
class Jvm:
    """The JVM's StateAlgebra class, held: hypothesis probes a test's arguments, which py4j would forward."""

    algebra: Any


@pytest.fixture(scope="module")
def jvm(spark: Any) -> Jvm:
    from wql.compiler.kernels.job_support import jvm_class

    found = jvm_class(spark, "StateAlgebra")
    if found is None:
        pytest.skip("no wql-kernels.jar (make jar builds it with a JDK)")
    return Jvm(found)


def test_java_identities_are_the_tables(jvm: Jvm) -> None:
    java = jvm.algebra
    for operation in algebra.OPERATIONS:
        code = java.operation(operation)
        for bits in (8, 16, 32, 64):
            want = algebra.identity(operation, True, bits)[0]
            assert java.longIdentity(code, 2 ** (bits - 1) - 1) == want, (operation, bits)
        want = algebra.identity(operation, False)[-1]  # a moments state's floating components: mean and M2
        assert same(java.doubleIdentity(code), want), operation
    assert java.operation("median") == -1


@settings(max_examples=100)
@given(examples())
def test_the_java_combine_in_any_grouping_is_the_tables(jvm: Jvm, example: Any) -> None:
    java = jvm.algebra
    operation, integral, values, tree = example
    code = java.operation(operation)

    def combine(a: list[Any], b: list[Any]) -> list[Any]:
        if operation == "moments":
            return [
                java.momentsN(a[0], b[0]),
                java.momentsMean(a[0], a[1], b[0], b[1]),
                java.momentsM2(a[0], a[1], a[2], b[0], b[1], b[2]),
            ]
        return [java.combine(code, a[0], b[0])]

    def leaf(i: int) -> list[Any]:
        state = lift(operation, values[i])
        return state if integral or operation == "moments" else [float(state[0])]

    got = fold(tree, leaf, combine)
    want = table_fold(example)
    assert all(same(g, w) for g, w in zip(got, want, strict=True)), (example, got, want)
    if integral:
        assert all(isinstance(g, int) for g in got), got  # the long overload, not the double one
