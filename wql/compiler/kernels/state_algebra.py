"""The state algebra in numpy and in Spark columns: generated from wql.compiler.algebra, do not edit.

`python -m wql.compiler.algebra_forms` writes this file from the table; tests/test_algebra.py fails while
it is stale. A job copies these functions like any kernel's (wql.compiler.codegen.support).
"""


def state_identity(operation, dtype):
    """What a partial state starts from, and what a NULL (or a tuple outside WHERE) contributes."""
    import numpy as np

    dtype = np.dtype(dtype)
    if operation == "sum":
        return 0
    if operation == "min":
        return np.iinfo(dtype).max if dtype.kind in "iu" else np.nan
    if operation == "max":
        return np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf
    if operation == "moments":
        return 0
    raise ValueError(f"unknown state operation {operation!r}")


def state_combine(operation, left, right):
    """Two partial states merged, component by component (numpy arrays or scalars, element-wise)."""
    import numpy as np

    if operation == "sum":
        (a_value,), (b_value,) = left, right
        return [a_value + b_value]
    if operation == "min":
        (a_value,), (b_value,) = left, right
        return [np.fmin(a_value, b_value)]
    if operation == "max":
        (a_value,), (b_value,) = left, right
        return [np.maximum(a_value, b_value)]
    if operation == "moments":
        (a_n, a_mean, a_m2), (b_n, b_mean, b_m2) = left, right
        n = a_n + b_n
        share = b_n / np.where(n > 0, n, 1)
        delta = b_mean - a_mean
        return [n, a_mean + delta * share, a_m2 + b_m2 + delta * delta * a_n * share]
    raise ValueError(f"unknown state operation {operation!r}")


def state_combine_columns(operation, left, right):
    """Two partial states merged, component by component, as Spark columns."""
    from pyspark.sql import functions as F

    if operation == "sum":
        (a_value,), (b_value,) = left, right
        return [a_value + b_value]
    if operation == "min":
        (a_value,), (b_value,) = left, right
        return [F.least(a_value, b_value)]
    if operation == "max":
        (a_value,), (b_value,) = left, right
        return [F.greatest(a_value, b_value)]
    if operation == "moments":
        (a_n, a_mean, a_m2), (b_n, b_mean, b_m2) = left, right
        n = a_n + b_n
        share = b_n / F.when(n > 0, n).otherwise(F.lit(1))
        delta = b_mean - a_mean
        return [n, a_mean + delta * share, a_m2 + b_m2 + delta * delta * a_n * share]
    raise ValueError(f"unknown state operation {operation!r}")
