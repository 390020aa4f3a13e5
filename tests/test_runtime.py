"""Running compiled queries: inputs, row numbers, malformed rows, outputs, and `wql run`."""

from __future__ import annotations

import csv
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import wql
from tests.conftest import EXAMPLES
from wql.cli import main
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.spark


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def test_row_numbers_follow_file_order_across_files(spark: Any, tmp_path: Path) -> None:
    """row_num is consecutive in file order (files by name, then line), whatever Spark's split order."""
    folder = tmp_path / "parts"
    folder.mkdir()
    base = datetime(2024, 1, 1)
    all_rows = []
    for index, size in enumerate([5, 40, 13]):  # sizes differ, so Spark packs splits in another order
        rows = [
            [f"k{(index + i) % 3}", float(i % 5), (base + timedelta(seconds=index * 100 + i)).isoformat(" ")]
            for i in range(size)
        ]
        write_csv(folder / f"part-{index}.csv", ["k", "v", "ts"], rows)
        all_rows.extend(rows)
    text = (
        f"CREATE STREAM s (k STRING, v DOUBLE, ts TIMESTAMP) FROM '{folder}' FORMAT csv OPTIONS (header = true);\n"
        "SELECT k, count(*) AS n, sum(v) AS total FROM s [RANGE 7 ROWS SLIDE 3 ROWS] WHERE v > 0 GROUP BY k"
    )
    for plan in ("bucket", "pane", "slice"):
        compiled = wql.compile(text, plan=plan)
        got = sorted(tuple(r) for r in compiled.run(spark).collect())
        typed = [{"k": k, "v": float(v), "ts": datetime.fromisoformat(ts)} for k, v, ts in all_rows]
        want = sorted(tuple(r.values()) for r in evaluate_query(compiled.query, typed))
        assert got == want, plan


def test_malformed_rows_are_counted_reported_and_skipped(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "k,v,ts\na,1.5,2024-01-01 00:00:00\nb,abc,2024-01-01 00:00:01\nc,2.5\nd,3.5,2024-01-01 00:00:03\ne,4.5,\n"
    )
    compiled = wql.compile(
        f"CREATE STREAM s (k STRING, v DOUBLE, ts TIMESTAMP) FROM '{path}' OPTIONS (header = true);\n"
        "SELECT count(*) AS n FROM s [RANGE 1 MINUTE]"
    )
    inputs, report = compiled.load_inputs(spark)
    assert report[0] == "s: 5 rows read"
    assert any(line.startswith("s: 2 malformed rows skipped") for line in report), report
    assert "s: 1 row with NULL ts belongs to no window" in report  # one row, not "1 rows"
    [row] = compiled.run(spark, **inputs).collect()
    assert row.n == 2


def test_run_checks_dataframe_inputs(spark: Any) -> None:
    compiled = wql.compile(
        "CREATE STREAM s (k STRING, ts TIMESTAMP); SELECT k, count(*) AS n FROM s [RANGE 1 MINUTE] GROUP BY k"
    )
    with pytest.raises(wql.WQLRuntimeError, match="has no column 'ts'"):
        compiled.run(spark, s=spark.createDataFrame([("a",)], "k STRING"))
    with pytest.raises(wql.WQLRuntimeError, match="is string in the DataFrame"):
        compiled.run(spark, s=spark.createDataFrame([("a", "x")], "k STRING, ts STRING"))
    with pytest.raises(wql.WQLRuntimeError, match="does not read a stream named 'other'"):
        frame = spark.createDataFrame([("a", datetime(2024, 1, 1))], "k STRING, ts TIMESTAMP")
        compiled.run(spark, s=frame, other=frame)


def test_api_schemas_from_dataframes(spark: Any) -> None:
    frame = spark.createDataFrame([("a", 1.0, datetime(2024, 1, 1))], "k STRING, v DOUBLE, ts TIMESTAMP")
    compiled = wql.compile("SELECT k, sum(v) AS total FROM events [RANGE 1 HOUR] GROUP BY k", streams={"events": frame})
    [row] = compiled.run(spark, events=frame).collect()
    assert (row.k, row.total, row.window_start) == ("a", 1.0, datetime(2024, 1, 1))
    assert compiled.explain().window_class == "CF"


# ------------------------------------------------------------------ wql run


def test_run_prints_a_table(capsys: pytest.CaptureFixture[str], spark: Any) -> None:
    assert main(["run", str(EXAMPLES / "paper" / "q4.wql"), "--limit", "3"]) == 0
    out = capsys.readouterr()
    assert "seg_id" in out.out and "96 rows (first 3 shown)" in out.out
    assert "traffic: 1,920 rows read" in out.err


def table_rows(text: str) -> list[list[str]]:
    """The cells of a rich result table, row by row."""
    return [[cell.strip() for cell in line.strip("│").split("│")] for line in text.splitlines() if line.startswith("│")]


def test_run_shows_rows_in_window_order(tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Without ORDER BY, Spark returns a grouped result in shuffle order; wql run shows wid, then keys."""
    rows = [[f"k{key}", minute, f"2024-01-01 00:{minute:02d}:30"] for minute in range(40) for key in (3, 1, 4, 0, 2)]
    write_csv(tmp_path / "s.csv", ["k", "v", "ts"], rows)
    query = tmp_path / "q.wql"
    stream = "CREATE STREAM s (k STRING, v DOUBLE, ts TIMESTAMP) FROM 's.csv' OPTIONS (header = true);\n"
    query.write_text(stream + "SELECT k, sum(v) AS total FROM s [RANGE 3 MINUTES SLIDE 1 MINUTE] GROUP BY k;\n")
    assert main(["run", str(query), "--limit", "300"]) == 0
    shown = [(int(wid), key) for wid, _, _, key, _ in table_rows(capsys.readouterr().out)]
    assert len(shown) == 42 * 5
    assert shown == sorted(shown)

    query.write_text(stream + "SELECT k, count(*) AS n FROM s [RANGE 3 MINUTES] GROUP BY k ORDER BY k DESC, wid;\n")
    assert main(["run", str(query), "--limit", "300"]) == 0
    shown = [(key, int(wid)) for wid, _, _, key, _ in table_rows(capsys.readouterr().out)]
    assert shown == sorted(shown, key=lambda pair: (-int(pair[0][1:]), pair[1]))  # ORDER BY stands


def test_in_window_order_sorts_by_wid_then_keys(spark: Any) -> None:
    frame = spark.createDataFrame(
        [("b", "y", 2), ("a", "y", 1), ("b", "x", 1), (None, "x", 2), ("a", "x", 1)], "p string, g string, v int"
    )
    compiled = wql.compile(
        "SELECT g, count(*) AS n FROM s [RANGE 2 ROWS PATTR p] GROUP BY g", streams={"s": frame}, plan="bucket"
    )
    result = compiled.run(spark, s=frame)
    ordered = [(r.wid, r.p, r.g) for r in compiled.in_window_order(result).collect()]
    assert ordered == sorted(ordered, key=lambda row: (row[0], row[1] is not None, row[1] or "", row[2]))
    assert len(ordered) == len(result.collect())


@pytest.mark.parametrize(
    ("text", "plan"),
    [
        ("SELECT count(*) AS n FROM s [RANGE UNBOUNDED SLIDE 10 WATTR m] WHERE v < 2", "bucket"),
        ("SELECT count(*) AS n FROM s [RANGE UNBOUNDED SLIDE 10 WATTR m] WHERE v < 2", "pane"),
        # The intervals family takes it from every well-formed event, WHERE or not (docs/semantics.md §2.10).
        ("SELECT count(*) AS n FROM s [RANGE 10 SLIDE 10 WATTR (m, e)] WHERE v > 2", "bucket"),
    ],
)
def test_where_does_not_move_the_end_of_the_data(spark: Any, text: str, plan: str) -> None:
    rows = [{"m": 1, "e": 2, "v": 1.0}, {"m": 25, "e": 26, "v": 2.0}, {"m": 3, "e": None, "v": 3.0}]
    frame = spark.createDataFrame(rows, "m bigint, e bigint, v double")
    compiled = wql.compile(text, streams={"s": frame}, plan=plan)
    expected = evaluate_query(compiled.query, rows)
    assert [row["wid"] for row in expected] == [0, 1, 2]  # up to the window holding m = 25 (or e = 26)
    assert sorted((r.asDict() for r in compiled.run(spark, s=frame).collect()), key=lambda r: r["wid"]) == expected


@pytest.mark.parametrize("plan", ["bucket", "pane"])
@pytest.mark.parametrize(
    "spec",
    ["RANGE UNBOUNDED SLIDE 10 WATTR m PATTR k", "RANGE UNBOUNDED SLIDE 2 ROWS", "RANGE UNBOUNDED SLIDE 4 WATTR d"],
)
def test_landmarks_reach_the_last_value_that_where_drops(spark: Any, spec: str, plan: str) -> None:
    """Keys whose every tuple WHERE drops have no windows; the others go on to the window of the stream's
    last value, even when WHERE drops that tuple and every one before it in the last windows."""
    rows = [
        {"k": "a", "m": 1, "d": 1.5, "v": 1.0},
        {"k": "b", "m": 4, "d": 4.0, "v": 9.0},
        {"k": "a", "m": 12, "d": 12.25, "v": 0.5},
        {"k": "a", "m": None, "d": None, "v": 0.0},
        {"k": "b", "m": 47, "d": 47.0, "v": 7.0},
    ]
    frame = spark.createDataFrame(rows, "k string, m bigint, d double, v double")
    text = f"SELECT count(*) AS n, sum(v) AS total, max(v) AS top FROM s [{spec}] WHERE v < 2"
    compiled = wql.compile(text, streams={"s": frame}, plan=plan)
    expected = evaluate_query(compiled.query, rows)
    assert max(row["wid"] for row in expected) >= 2
    got = [r.asDict() for r in compiled.in_window_order(compiled.run(spark, s=frame)).collect()]
    assert got == expected


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_run_writes_output(fmt: str, tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / f"result.{fmt}"
    assert main(["run", str(EXAMPLES / "paper" / "q1.wql"), "--output", str(target), "--format", fmt]) == 0
    if fmt == "csv":
        assert target.is_file()
        with target.open() as handle:
            rows = list(csv.DictReader(handle))
        assert list(rows[0]) == ["wid", "window_start", "window_end", "seg_id", "max_speed", "min_speed"]
        assert len(rows) == 992
    elif fmt == "json":
        assert target.is_file()
        lines = [json.loads(line) for line in target.read_text().splitlines()]
        assert len(lines) == 992 and set(lines[0]) >= {"wid", "seg_id", "max_speed"}
    else:
        assert target.is_dir() and spark.read.parquet(str(target)).count() == 992
    assert "wrote" in capsys.readouterr().err


def test_run_input_override_and_forced_plan(tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    source = EXAMPLES / "data" / "traffic.csv"
    lines = source.read_text().splitlines()
    small = tmp_path / "small.csv"
    small.write_text("\n".join(lines[:101]) + "\n")
    target = tmp_path / "out.csv"
    args = ["run", str(EXAMPLES / "paper" / "q1.wql"), "--input", f"traffic={small}", "--plan", "bucket"]
    assert main([*args, "--output", str(target)]) == 0
    assert "traffic: 100 rows read" in capsys.readouterr().err
    assert target.read_text().count("\n") > 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--input", "traffic=/no/such/file.csv"], "no such file or directory: /no/such/file.csv (from --input)"),
        (["--input", "trafic=/x.csv"], "--input names stream 'trafic'"),
        (["--input", "broken"], "--input takes STREAM=PATH"),
    ],
)
def test_run_bad_inputs_give_one_clear_message(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(EXAMPLES / "paper" / "q1.wql"), *extra]) == 1
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_run_missing_from_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = tmp_path / "q.wql"
    query.write_text("CREATE STREAM s (ts TIMESTAMP) FROM 'gone.csv';\nSELECT count(*) AS n FROM s [RANGE 1 MINUTE];\n")
    assert main(["run", str(query)]) == 1
    err = capsys.readouterr().err
    assert f"stream 's': no such file or directory: {tmp_path / 'gone.csv'} (from its FROM clause)" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("window", "plan"),
    [
        ("RANGE 10 SECONDS RATTR ts SLIDE 1 ROW PATTR _t, _next", "prefix"),
        ("RANGE 10 SECONDS RATTR ts SLIDE 1 ROW PATTR _t, _next", "bins"),
        ("RANGE 10 SECONDS RATTR ts SLIDE 1 ROW PATTR _t, _next", "over"),
        ("RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts PATTR _t, _next", "pane"),
        ("RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts PATTR _t, _next", "bucket"),
    ],
)
def test_keys_named_like_the_plans_own_columns(spark: Any, window: str, plan: str) -> None:
    """PATTR columns called _t or _next must not meet the columns the plans add under those names."""
    stream = "CREATE STREAM r (_t STRING, _next STRING, v DOUBLE, ts TIMESTAMP);\n"
    compiled = wql.compile(stream + f"SELECT count(*) AS n, sum(v) AS s FROM r [{window}]", plan=plan)
    start = datetime(2024, 1, 1)
    rows = [
        {"_t": "a" if i % 3 else "b", "_next": "x" if i % 2 else "y", "v": float(i), "ts": start + timedelta(seconds=i)}
        for i in range(30)
    ]
    frame = spark.createDataFrame(rows, "_t STRING, _next STRING, v DOUBLE, ts TIMESTAMP")
    got = sorted(tuple(sorted(r.asDict().items())) for r in compiled.run(spark, r=frame).collect())
    want = sorted(tuple(sorted(r.items())) for r in evaluate_query(compiled.query, rows))
    assert got == want and len(got) > 0


def test_columns_named_like_the_plans_own_are_refused_or_kept_apart(spark: Any, tmp_path: Path) -> None:
    """An aggregate over a column called _d is refused with a reason; a stream column _id survives row numbering."""
    with pytest.raises(wql.WQLNotSupportedError, match="'_d' has the name of a column"):
        wql.compile(
            "CREATE STREAM r (_d DOUBLE, ts TIMESTAMP);\nSELECT sum(_d) AS s FROM r [RANGE 5 ROWS SLIDE 5 ROWS]"
        )
    path = tmp_path / "r.csv"
    write_csv(path, ["_id", "v"], [[f"id{i}", i] for i in range(7)])
    text = f"CREATE STREAM r (_id STRING, v INT) FROM '{path}';\n"
    text += "SELECT max(_id) AS last_id, sum(v) AS s FROM r [RANGE 3 ROWS]"
    got = [r.asDict() for r in wql.compile(text).run(spark).orderBy("wid").collect()]
    assert [(r["last_id"], r["s"]) for r in got] == [("id2", 3), ("id5", 12), ("id6", 6)]


@pytest.mark.parametrize(
    ("window", "plan_kind"),
    [
        ("RANGE 10 SECONDS SLIDE 2 SECONDS WATTR ts PATTR g, day", "pane"),
        ("RANGE 7 SECONDS SLIDE 3 SECONDS WATTR ts PATTR g, day", "slice"),
        ("RANGE 4 SECONDS SLIDE 6 SECONDS WATTR ts PATTR g, day", "slice"),  # gaps between windows
        ("RANGE UNBOUNDED SLIDE 4 SECONDS WATTR ts ALIGN 1 SECONDS PATTR g, day", "pane"),  # landmark
        ("RANGE 5 SECONDS RATTR ts SLIDE 1 ROW PATTR g, day", "bins"),  # a window at every tuple
        ("RANGE 6 SECONDS RATTR ts SLIDE 1 ROW", "bins"),
        ("RANGE 4 SECONDS RATTR ts SLIDE 1 ROW PATTR b", "bins"),  # one integral key, NULL among its values
        ("RANGE 12 SECONDS SLIDE 3 SECONDS CUMULATE WATTR ts PATTR g, day", "pane"),
        ("RANGE 10 SECONDS SLIDE 2 SECONDS CUMULATE WATTR ts ALIGN FIRST PATTR g", "pane"),
        ("RANGE 7 SECONDS SLIDE 3 SECONDS WATTR ts ALIGN START FIRST PATTR g, day", "slice"),
    ],
)
def test_plans_combine_in_the_jvm(spark: Any, window: str, plan_kind: str) -> None:
    """WQL's sessions combine in the JVM, and that equals the numpy kernel and the reference."""
    from tests.differential import combined_in, normalized
    from wql.runtime.session import kernel_jar

    assert kernel_jar() is not None, "wql-kernels.jar is missing: `make jar` builds it (it needs a JDK)"
    schema = "g STRING, day DATE, b TINYINT, h SMALLINT, f FLOAT, v DOUBLE, ok BOOLEAN, ts TIMESTAMP"
    aggregates = (
        "count(*) AS n, sum(b) AS sb, min(b) AS lb, max(h) AS hh, min(f) AS lf, max(v) AS hv, avg(v) AS av, "
        "stddev(v) AS sd, bool_and(ok) AS every_ok, min(ts) AS first_ts"
    )
    compiled = wql.compile(
        f"CREATE STREAM r ({schema});\nSELECT {aggregates} FROM r [{window}] WHERE h <> 4", plan=plan_kind
    )
    start = datetime(2024, 1, 1)
    rows = [
        {
            "g": None if i % 7 == 0 else "ab"[i % 2],
            "day": start.date() + timedelta(days=i % 2),
            "b": None if i % 5 == 0 else i % 4 - 2,
            "h": i * 3 % 11,
            "f": float("nan") if i == 9 else (i % 6) / 4,
            "v": None if i % 4 == 0 else (i * 7 % 13) / 4,
            "ok": i % 9 != 0,
            "ts": start + timedelta(seconds=i * 3 // 2 + (40 if i > 20 else 0)),
        }
        for i in range(40)
    ]
    frame = spark.createDataFrame(rows, schema)
    in_jvm = compiled.run(spark, r=frame)
    plan = in_jvm._jdf.queryExecution().executedPlan().toString()
    kernels = ("SlidingCombine", "LandmarkCombine", "CumulateCombine", "TupleWindows")  # WQL's own operators
    assert any(kernel in plan for kernel in kernels) and "MapInArrow" not in plan, plan
    assert ("CumulateCombine" in plan) == ("CUMULATE" in window), plan
    if plan_kind in ("pane", "slice") and "UNBOUNDED" not in window and "FIRST" not in window:
        assert plan.count("Exchange") == 1, plan  # cells aggregate clustered by the keys: one shuffle
    with combined_in(spark, "arrow"):
        in_numpy = compiled.run(spark, r=frame)
        assert "MapInArrow" in in_numpy._jdf.queryExecution().executedPlan().toString()
        numpy_rows = normalized([r.asDict() for r in in_numpy.collect()])
    got = normalized([r.asDict() for r in in_jvm.collect()])
    assert got == numpy_rows == normalized(evaluate_query(compiled.query, rows))
    assert len(got) > 10


def test_a_sessions_second_query_does_not_ask_spark_again_for_wqls_kernels(spark: Any) -> None:
    """Each job is a module of its own; whether the session's Spark has WQL's kernels is asked once (a Spark
    job: SELECT wql_kernels()) and shared by the jobs loaded after, as a REPL or notebook runs them."""
    text = (EXAMPLES / "traffic.wql").read_text()
    first = wql.compile(text, str(EXAMPLES / "traffic.wql"))
    inputs, _ = first.load_inputs(spark)
    first.run(spark, **inputs)
    second = wql.compile(text.replace("RANGE 10 MINUTES", "RANGE 5 MINUTES"), str(EXAMPLES / "traffic.wql"))
    context = spark.sparkContext
    context.setJobGroup("wql-second-query", "the second query's DataFrame")
    try:
        second.run(spark, **inputs)
        assert context.statusTracker().getJobIdsForGroup("wql-second-query") == []
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty("spark.job.description", None)
        spark.catalog.clearCache()


def test_reading_and_inspecting_an_input_is_one_spark_job(spark: Any, tmp_path: Path) -> None:
    """The report's counts (rows, malformed rows, NULL window attributes) are observed while the input's
    cache fills, in one job; an aggregation over the cached rows took two more under adaptive execution.
    A malformed row's example for the report is a job more, only when there is one."""
    clean, messy = tmp_path / "clean.csv", tmp_path / "messy.csv"
    write_csv(clean, ["seg_id", "speed", "ts"], [["a", 1.0, "2024-01-01 00:00:00"], ["b", 2.0, "2024-01-01 00:01:00"]])
    write_csv(messy, ["seg_id", "speed", "ts"], [["a", 1.0, "2024-01-01 00:00:00"], ["b", "x", "2024-01-01 00:01:00"]])
    messy.write_text(messy.read_text() + "c,3.0,\n")
    context = spark.sparkContext
    reports, jobs = [], []
    for path in (clean, messy):
        query = wql.compile((EXAMPLES / "traffic.wql").read_text().replace("data/traffic.csv", str(path)))
        context.setJobGroup(f"wql-inspect-{path.stem}", "reading and inspecting the input")
        try:
            inputs, report = query.load_inputs(spark)
            jobs.append(len(context.statusTracker().getJobIdsForGroup(f"wql-inspect-{path.stem}")))
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)
            context.setLocalProperty("spark.job.description", None)
        reports.append(report)
        assert inputs["traffic"].count() == 2
        spark.catalog.clearCache()
    assert jobs == [1, 2]
    assert reports == [
        ["traffic: 2 rows read"],
        [
            "traffic: 3 rows read",
            "traffic: 1 malformed row skipped (e.g. 'b,x,2024-01-01 00:01:00')",
            "traffic: 1 row with NULL ts belongs to no window",
        ],
    ]
