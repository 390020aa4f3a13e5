"""WQL inside a PySpark program: a DataFrame given for a stream is what the query runs on, and a temp view or a
catalog table is a stream (`CREATE STREAM s FROM TABLE name`), in batch and, where the table is a streaming
source, on a stream; the result is a DataFrame to go on working with."""

from __future__ import annotations

import ast
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import wql
from wql.runtime.reference import evaluate_query

pytestmark = pytest.mark.spark

SCHEMA = "user_id STRING, amount DOUBLE, ts TIMESTAMP"
QUERY = "SELECT user_id, count(*) AS clicks, sum(amount) AS spent FROM clicks [SESSION GAP 10 MINUTES PATTR user_id]"
BASE = datetime(2024, 3, 15, 7, 0)
ROWS = [
    (user, float(i), BASE + timedelta(minutes=minutes))
    for i, (user, minutes) in enumerate([("u1", 0), ("u2", 1), ("u1", 4), ("u1", 30), ("u2", 12), ("u1", 33)])
]


def clicks(spark: Any) -> Any:
    return spark.createDataFrame(ROWS, SCHEMA)


def expected(compiled: wql.CompiledQuery) -> list[tuple[Any, ...]]:
    rows = [dict(zip(("user_id", "amount", "ts"), row, strict=True)) for row in ROWS]
    return sorted(tuple(r.values()) for r in evaluate_query(compiled.query, rows))


def test_a_dataframe_given_for_a_stream_is_what_the_query_runs_on(spark: Any) -> None:
    """`streams={"clicks": df}` gives the schema and the rows: `run(spark)` needs nothing more, and the result is
    a DataFrame the program goes on with. The job's code holds no trace of the DataFrame."""
    frame = clicks(spark)
    compiled = wql.compile(QUERY, streams={"clicks": frame})
    result = compiled.run(spark)
    assert sorted(tuple(r) for r in result.collect()) == expected(compiled)
    assert [r.user_id for r in result.where("clicks > 1").select("user_id").distinct().collect()] == ["u1"]
    assert compiled.run() is not None  # the DataFrame's own session
    assert '"path": None' in compiled.code


def test_a_temp_view_is_a_stream_with_the_views_columns(spark: Any) -> None:
    """FROM TABLE a temp view: no column list, the columns are the view's (from the session given or, in a
    PySpark program, the active one); the job reads it with spark.table, by a name that is only ever a string."""
    clicks(spark).createOrReplaceTempView("clicks_view")
    text = f"CREATE STREAM clicks FROM TABLE clicks_view;\n{QUERY};\n"
    compiled = wql.compile(text, spark=spark)
    assert [(c.name, c.type) for c in compiled.stream.columns] == [
        ("user_id", "STRING"),
        ("amount", "DOUBLE"),
        ("ts", "TIMESTAMP"),
    ]
    assert sorted(tuple(r) for r in compiled.run(spark).collect()) == expected(compiled)
    assert '"table": "`clicks_view`"' in compiled.code
    assert wql.compile(text).stream.columns == compiled.stream.columns  # the active session's catalog
    _, report = compiled.load_inputs(spark)
    assert report == ["clicks: 6 rows read"]


def test_a_catalog_table_is_a_stream_in_batch_and_on_a_stream(spark: Any, tmp_path: Path) -> None:
    """A table of the catalog, in batch with spark.table and on a stream with spark.readStream.table (a
    parquet table is a streaming source): the same windows."""
    location = tmp_path / "clicks_table"
    spark.sql(f"CREATE TABLE wql_clicks ({SCHEMA}) USING parquet LOCATION '{location}'")
    try:
        clicks(spark).write.insertInto("wql_clicks")
        text = f"CREATE STREAM clicks FROM TABLE default.wql_clicks;\n{QUERY};\n"
        compiled = wql.compile(text, spark=spark, stream=True)
        assert sorted(tuple(r) for r in compiled.run(spark).collect()) == expected(compiled)
        run = compiled.start(spark, once=True)
        run.wait()
        run.drain()
        run.close()
        assert sorted(tuple(r) for r in run.rows) == expected(compiled)
    finally:
        spark.sql("DROP TABLE IF EXISTS wql_clicks")


def test_declared_columns_are_read_from_a_table_by_name(spark: Any) -> None:
    """With a column list, no catalog is needed to compile (`wql compile` on the command line starts no Spark);
    the job selects those columns of the table, whatever else it holds."""
    clicks(spark).selectExpr("*", "amount * 2 AS extra").createOrReplaceTempView("wider")
    text = f"CREATE STREAM clicks ({SCHEMA}) FROM TABLE wider;\n{QUERY};\n"
    compiled = wql.compile(text)
    assert sorted(tuple(r) for r in compiled.run(spark).collect()) == expected(compiled)


def test_an_unknown_table_or_a_missing_column_is_a_positioned_error(spark: Any) -> None:
    clicks(spark).createOrReplaceTempView("clicks_view")
    text = f"CREATE STREAM clicks FROM TABLE clicks_veiw;\n{QUERY};\n"
    error = wql.check(text, spark=spark)[0]  # and the query reads a stream that is not declared
    assert isinstance(error, wql.WQLNameError)
    assert error.message == "unknown table 'clicks_veiw'" and error.hint == "did you mean 'clicks_view'?"
    assert error.span is not None and (error.span.line, error.span.column) == (1, 33)
    assert "^^^^^^^^^^^" in error.render()
    text = f"CREATE STREAM clicks (user_id STRING, amout DOUBLE, ts TIMESTAMP) FROM TABLE clicks_view;\n{QUERY};\n"
    error = wql.check(text, spark=spark)[0]
    assert error.message == "table 'clicks_view' has no column 'amout'" and error.hint == "did you mean 'amount'?"
    error = wql.check(f"CREATE STREAM clicks FROM TABLE nowhere.at.all.clicks;\n{QUERY};\n", spark=spark)[0]
    assert error.span is not None and (error.span.line, error.span.column) == (1, 33), error.render()


def test_a_batch_view_is_not_a_stream(spark: Any) -> None:
    clicks(spark).createOrReplaceTempView("clicks_view")
    compiled = wql.compile(f"CREATE STREAM clicks FROM TABLE clicks_view;\n{QUERY};\n", spark=spark, stream=True)
    with pytest.raises(wql.WQLError, match="table `clicks_view` is not a streaming source"):
        compiled.start(spark, once=True)


def test_a_table_name_never_becomes_code(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A view named with quotes, a backquote and a dot is read by that name; the job holds it as a string."""
    monkeypatch.chdir(tmp_path)
    name = 'x"); import os; os.system("touch PWNED` .y'
    clicks(spark).createOrReplaceTempView("`" + name.replace("`", "``") + "`")
    quoted = "`" + name.replace("`", "``") + "`"
    compiled = wql.compile(f"CREATE STREAM clicks FROM TABLE {quoted};\n{QUERY};\n", spark=spark)
    calls = [n for n in ast.walk(ast.parse(compiled.code)) if isinstance(n, ast.Call)]
    assert not any(isinstance(c.func, ast.Attribute) and c.func.attr == "system" for c in calls)
    assert sorted(tuple(r) for r in compiled.run(spark).collect()) == expected(compiled)
    assert not (tmp_path / "PWNED").exists()


def test_wql_run_reads_a_tables_columns_from_its_sessions_catalog(
    spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`wql run` asks the session it runs in (here the test's, with its temp view) for the table's columns,
    while `wql check` starts no Spark and asks for them to be declared."""
    from wql.cli import main

    clicks(spark).createOrReplaceTempView("clicks_view")
    path = tmp_path / "q.wql"
    path.write_text(f"CREATE STREAM clicks FROM TABLE clicks_view;\n{QUERY};\n", encoding="utf-8")
    assert main(["run", str(path)]) == 0
    captured = capfd.readouterr()
    assert "clicks: 6 rows read" in captured.err and "4 rows" in captured.out
    assert main(["check", str(path)]) == 1
    assert "the columns of table 'clicks_view' are in Spark's catalog" in capfd.readouterr().err
