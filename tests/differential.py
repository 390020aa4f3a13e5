"""Running a query on Spark and on the reference evaluator, and comparing the results.

Many small random streams ("cases") run as one Spark job: each row carries a
case_id that the query puts first in GROUP BY (or PATTR), and an explicit
arrival position `seq` (ROW_NUM seq), so one job answers for every case as if
each had run alone. Values are multiples of 1/4 so sums are exact in any order.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

import wql
from tests.conftest import PACKED
from wql.runtime.reference import evaluate_query

EPOCH = datetime(1970, 1, 1)
BASE = datetime(2024, 1, 1)
STREAM = (
    "CREATE STREAM s (case_id INT, seq BIGINT, k STRING, v DOUBLE, n INT, ts TIMESTAMP, x BIGINT, y BIGINT, "
    "d DOUBLE) ROW_NUM seq;\n"
)
SCHEMA = "case_id INT, seq BIGINT, k STRING, v DOUBLE, n INT, ts TIMESTAMP, x BIGINT, y BIGINT, d DOUBLE"


def row(
    case_id: int,
    seq: int,
    k: str | None,
    v: float | None,
    n: int | None,
    ts_s: float | None,
    x: int | None,
    y: int | None,
    d: float | None,
) -> dict[str, Any]:
    """One tuple of the stream STREAM declares, its timestamp `ts_s` seconds after BASE."""
    return {
        "case_id": case_id,
        "seq": seq,
        "k": k,
        "v": v,
        "n": n,
        "ts": None if ts_s is None else BASE + timedelta(seconds=ts_s),
        "x": x,
        "y": y,
        "d": d,
    }


@st.composite
def cases(draw: st.DrawFn, count: int = 6, max_rows: int = 14, specials: bool = False) -> list[dict[str, Any]]:
    """Rows of `count` random streams, with many values on window edges and some NULLs.

    With `specials`, v is sometimes NaN or an infinity: each must reach the windows
    that hold it and no others. The profile packs more streams into a run with fewer runs (PACKED).
    """
    count *= PACKED
    values = st.integers(-20, 20).map(lambda q: q / 4)
    if specials:
        values = st.one_of(values, st.sampled_from([math.nan, math.inf, -math.inf]))
    rows: list[dict[str, Any]] = []
    for case_id in range(count):
        size = draw(st.integers(0, max_rows))
        for seq in range(size):
            ts = draw(st.one_of(st.none(), st.integers(-8, 60), st.integers(-8, 60).map(lambda t: t + 0.5)))
            x = draw(st.one_of(st.none(), st.integers(-12, 40)))
            length = draw(st.one_of(st.none(), st.integers(-1, 12)))
            rows.append(
                row(
                    case_id,
                    seq,
                    draw(st.sampled_from(["a", "b", None])),
                    draw(st.one_of(st.none(), values)),
                    draw(st.one_of(st.none(), st.integers(-3, 9))),
                    None if ts is None else float(ts),
                    x,
                    None if x is None or length is None else x + length,
                    draw(st.one_of(st.none(), st.integers(-40, 120).map(lambda q: q / 4))),
                )
            )
    return rows


@st.composite
def runs(draw: st.DrawFn, count: int = 5, max_rows: int = 18, specials: bool = False) -> list[dict[str, Any]]:
    """Rows of `count` random streams for sessions and frames: timestamps on a short axis, so that ties,
    gaps exactly at a boundary and long runs come up often, arriving in random order, with NULLs.

    With `specials`, v is sometimes NaN or an infinity.
    """
    count *= PACKED
    values = st.integers(-8, 8).map(lambda q: q / 4)
    if specials:
        values = st.one_of(values, st.sampled_from([math.nan, math.inf, -math.inf]))
    rows: list[dict[str, Any]] = []
    for case_id in range(count):
        size = draw(st.integers(0, max_rows))
        for seq in range(size):
            ts = draw(st.one_of(st.none(), st.integers(0, 24), st.integers(0, 24).map(lambda t: t + 0.5)))
            rows.append(
                row(
                    case_id,
                    seq,
                    draw(st.sampled_from(["a", "b", None])),
                    draw(st.one_of(st.none(), values)),
                    draw(st.one_of(st.none(), st.integers(0, 4))),
                    None if ts is None else float(ts),
                    draw(st.one_of(st.none(), st.integers(-6, 12))),
                    None,
                    draw(st.one_of(st.none(), st.integers(0, 40).map(lambda q: q / 4))),
                )
            )
    return rows


def frame(spark: Any, rows: list[dict[str, Any]], schema: str = SCHEMA) -> Any:
    """The rows as a Spark DataFrame of `schema` (a DDL column list; tests/intervals.py passes its own)."""
    columns = [c.split()[0] for c in schema.split(", ")]
    data = [tuple(r[c] for c in columns) for r in rows]
    return spark.createDataFrame(data, schema)


def _value(v: Any) -> Any:
    """A value as rows from Spark and from the reference compare equal: floats to 9 digits (a sum's last
    bits depend on its order), NaN as a string (NaN != NaN), a DECIMAL as its float (tests/intervals.py's
    DECIMAL attributes: one side may give a window's bound as a float), a list as its values in a fixed
    order (collect_list's order is Spark's)."""
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else float(f"{v:.9g}")
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, list):
        return tuple(sorted((_value(x) for x in v), key=repr))
    return v


def normalized(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Rows in a canonical order with their values as _value makes them: a result is a multiset of rows."""
    return sorted((tuple((k, _value(v)) for k, v in sorted(r.items())) for r in rows), key=repr)


@contextlib.contextmanager
def combined_in(spark: Any, mode: str) -> Iterator[None]:
    """Run the pane and slice plans' combine in the JVM ("auto") or in numpy ("arrow")."""
    spark.conf.set("spark.wql.combine", mode)
    try:
        yield
    finally:
        spark.conf.unset("spark.wql.combine")


def compare(
    spark: Any, text: str, rows: list[dict[str, Any]], plan: str | None, stream: str = STREAM, schema: str = SCHEMA
) -> wql.CompiledQuery:
    """Compile `text` (after the declaration `stream`, whose columns are `schema`) with `plan`, run it, and
    assert it equals the reference."""
    compiled = wql.compile(stream + text, plan=plan)
    got = [r.asDict(recursive=True) for r in compiled.run(spark, s=frame(spark, rows, schema)).collect()]
    want = evaluate_query(compiled.query, rows)
    assert normalized(got) == normalized(want), _difference(got, want, compiled)
    return compiled


def _difference(got: list[dict[str, Any]], want: list[dict[str, Any]], compiled: wql.CompiledQuery) -> str:
    spark_only = sorted(set(normalized(got)) - set(normalized(want)), key=repr)[:4]
    reference_only = sorted(set(normalized(want)) - set(normalized(got)), key=repr)[:4]
    return (
        f"plan {compiled.plan}: {len(got)} rows from Spark, {len(want)} from the reference\n"
        f"only in Spark: {spark_only}\nonly in the reference: {reference_only}"
    )


def physical_plan(frame: Any) -> str:
    return frame._jdf.queryExecution().executedPlan().toString()


def in_jvm_and_numpy(spark: Any, compiled: wql.CompiledQuery, frame: Any) -> tuple[list[Any], list[Any], str]:
    """The query's rows from the JVM kernel and from the numpy kernel, and the JVM run's physical plan."""
    in_jvm = compiled.run(spark, s=frame)
    got = normalized([r.asDict() for r in in_jvm.collect()])
    plan = physical_plan(in_jvm)
    with combined_in(spark, "arrow"):
        in_numpy = compiled.run(spark, s=frame)
        assert "MapInArrow" in physical_plan(in_numpy)
        want = normalized([r.asDict() for r in in_numpy.collect()])
    return got, want, plan


def kernel_metrics(result: Any, name: str, metrics: tuple[str, ...] = ("sortedTuples", "spillSize")) -> dict[str, int]:
    """The metrics of the kernel operators named `name` after `result` ran, summed over them: by default
    the tuples that went through Spark's sorter (sortedTuples) and the memory it freed by spilling
    (spillSize) of TupleWindows and FrameWindows. Read from the executed plan, through adaptive
    execution's final plan and its stages."""
    totals = dict.fromkeys(metrics, 0)
    found = 0
    stack = [result._jdf.queryExecution().executedPlan()]
    while stack:
        node = stack.pop()
        kind = node.getClass().getSimpleName()
        if kind == "AdaptiveSparkPlanExec":
            stack.append(node.executedPlan())
            continue
        if kind.endswith("QueryStageExec"):
            stack.append(node.plan())
            continue
        if node.nodeName() == name:
            found += 1
            for metric in totals:
                totals[metric] += max(0, node.metrics().apply(metric).value())
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    assert found, f"no {name} in the executed plan"
    return totals
