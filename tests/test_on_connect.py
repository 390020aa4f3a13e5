"""WQL through a Spark Connect client: run by tests/test_connect.py in a process of its own, against a
local Connect server it starts (WQL_TEST_REMOTE=sc://…), with WQL's kernels on the server or not
(WQL_TEST_KERNELS=1 or 0). Skipped in a run with a local session."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

import wql
from tests.conftest import EXAMPLES, REMOTE
from tests.differential import STREAM, frame, normalized, row
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.skipif(not REMOTE, reason="needs a Spark Connect server (tests/test_connect.py starts one)")

KERNELS = os.environ.get("WQL_TEST_KERNELS") == "1"
ROWS = [row(0, i, "abc"[i % 3], float(i % 7) - 2.5 if i % 11 else None, i, i * 1.5, i, i % 4, 0.5) for i in range(60)]
QUERIES = {
    # (query, the JVM operator that computes it with the kernels, what runs it without them)
    "bins": (
        "SELECT sum(v) AS sv, count(*) AS n, max(v) AS hi FROM s [RANGE 7 RATTR n SLIDE 1 ROW PATTR k]",
        "TupleWindows",
        "MapInArrow",
    ),
    "fold": (
        "SELECT count(*) AS n, sum(v) AS sv, max(v) AS hi FROM s [SESSION GAP 3 WATTR n PATTR k]",
        "FrameWindows",
        "MapInArrow",
    ),
    "pane": (
        "SELECT k, sum(v) AS sv, min(v) AS lo FROM s [RANGE 12 SLIDE 3 WATTR n] GROUP BY k",
        "SlidingCombine",
        "MapInArrow",
    ),
}


def plan_text(result: Any, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    result.explain()  # a Connect client asks the server for its physical plan
    return capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_the_server_plans_wql_operators_and_results_equal_the_reference(
    spark: Any, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text, operator, fallback = QUERIES[name]
    assert type(spark).__module__.startswith("pyspark.sql.connect")
    compiled = wql.compile(STREAM + text, plan=name)
    result = compiled.run(spark, s=frame(spark, ROWS))
    plan = plan_text(result, capsys)
    if KERNELS:
        assert re.search(rf"\b{operator}\b", plan) and fallback not in plan, plan
    else:
        assert fallback in plan and operator not in plan, plan
    got = [r.asDict(recursive=True) for r in result.collect()]
    assert normalized(got) == normalized(evaluate_query(compiled.query, ROWS))


def test_a_limit_above_the_kernels_batches_keeps_its_rows(spark: Any) -> None:
    """On the server too, with adaptive execution's EliminateLimits on: a LIMIT above the number of tuple
    batches the bins kernel shuffles (a few, for 60 windows) still limits, and the job leaves the
    server's excluded rules as they were."""
    excluded = "spark.sql.adaptive.optimizer.excludedRules"
    before = spark.conf.get(excluded, "") or ""
    compiled = wql.compile(STREAM + QUERIES["bins"][0], plan="bins")
    result = compiled.run(spark, s=frame(spark, ROWS))
    assert result.count() == 60
    assert result.limit(30).count() == 30
    assert len(result.limit(30).collect()) == 30
    assert (spark.conf.get(excluded, "") or "") == before
    assert "EliminateLimits" not in before


def test_the_notebook_magic_uses_the_notebooks_connect_session(spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    config.InteractiveShell.colors = "nocolor"
    shell = InteractiveShell.instance(config=config)
    try:
        assert shell.run_cell("%load_ext wql").success
        shell.user_ns["session"] = spark  # the notebook's own session, remote
        traffic = EXAMPLES / "data" / "traffic.csv"
        cell = (
            f"%%wql -o got\nCREATE STREAM traffic (seg_id STRING, speed DOUBLE, ts TIMESTAMP) FROM '{traffic}' "
            "FORMAT csv OPTIONS (header = true);\n"
            "SELECT seg_id, max(speed) AS top FROM traffic [RANGE 5 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY seg_id;"
        )
        result = shell.run_cell(cell)
        out = capsys.readouterr().out
        assert result.success, out
        got = shell.user_ns["got"]
        assert type(got).__module__.startswith("pyspark.sql.connect") and "traffic: 1,920 rows read" in out
        api = wql.compile(cell.split("\n", 1)[1]).run(spark)
        assert sorted(map(tuple, got.collect())) == sorted(map(tuple, api.collect()))
    finally:
        InteractiveShell.clear_instance()
