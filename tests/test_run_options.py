"""`wql run` in batch: malformed rows kept with --late (the columns a stream writes), counts in the
singular, and a relative --output with --remote resolved where the user is."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

import wql
from wql.cli import main

pytestmark = pytest.mark.spark

LATE_COLUMNS = ["wql_reason", "wql_missed", "wql_punctuation", "wql_trigger", "wql_record"]


def query_file(folder: Path, rows: str) -> Path:
    (folder / "t.csv").write_text("k,v,ts\n" + rows, encoding="utf-8")
    path = folder / "q.wql"
    path.write_text(
        f"CREATE STREAM s (k STRING, v DOUBLE, ts TIMESTAMP) FROM '{folder / 't.csv'}' OPTIONS (header = true);\n"
        "SELECT k, count(*) AS n FROM s [RANGE 1 MINUTE] GROUP BY k;\n",
        encoding="utf-8",
    )
    return path


def test_batch_keeps_malformed_rows_with_the_streams_columns(
    spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from wql.compiler.kernels.names import LATE_COLUMNS as STREAM_COLUMNS

    assert list(STREAM_COLUMNS) == LATE_COLUMNS
    path = query_file(tmp_path, "a,1.5,2024-01-01 00:00:00\nb,abc,2024-01-01 00:00:01\nd,3.5,2024-01-01 00:00:03\n")
    late = tmp_path / "late"
    assert main(["run", str(path), "--late", str(late)]) == 0
    err = capfd.readouterr().err
    assert "s: 3 rows read" in err and f"s: 1 malformed row skipped, kept in {late / 's.csv'}" in err
    with open(late / "s.csv", newline="", encoding="utf-8") as handle:
        [row] = list(csv.DictReader(handle))
    assert list(row) == ["k", "v", "ts", *LATE_COLUMNS]
    assert row["k"] == "b" and row["wql_reason"] == "malformed"
    assert row["wql_record"] == "b,abc,2024-01-01 00:00:01"


def test_one_row_is_one_row(spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    path = query_file(tmp_path, "a,1.5,2024-01-01 00:00:00\n")
    assert main(["run", str(path)]) == 0
    captured = capfd.readouterr()
    assert "s: 1 row read" in captured.err and "1 rows" not in captured.err + captured.out
    assert "1 row\n" in captured.out or captured.out.rstrip().endswith("1 row")


def test_remote_output_relative_to_the_client(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """With --remote, `--output out.csv` is where the user is, not the Connect server's directory (nor
    Spark's *.parts directory left in the user's)."""
    from wql.runtime import session

    class Borrowed:
        """The test's session, posing as a Connect session this run owns (and so would stop)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(spark, name)

        def stop(self) -> None:
            pass

    path = query_file(tmp_path, "a,1.5,2024-01-01 00:00:00\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(session, "start_session", lambda *args, **kwargs: Borrowed())
    written: list[str] = []
    monkeypatch.setattr(wql.CompiledQuery, "write", lambda self, result, target, fmt="csv": written.append(target))
    assert main(["run", str(path), "--remote", "sc://server:15002", "--output", "out.csv"]) == 0
    assert written == [str(work / "out.csv")]


def test_several_queries_each_say_which_they_are(spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """`wql run` of a file with several queries prints each table under the query's name, in order."""
    path = query_file(tmp_path, "a,1.5,2024-01-01 00:00:00\nb,2.5,2024-01-01 00:00:30\n")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("SELECT count(*) AS total FROM s [RANGE 1 HOUR];\n")
    assert main(["run", str(path)]) == 0
    out = capfd.readouterr().out.splitlines()
    first = out.index("query 1 (line 2, plan bucket)")
    second = out.index("query 2 (line 3, plan bucket)")
    assert first == 0 and first < second
    assert any("total" in line for line in out[second:]) and not any("total" in line for line in out[:second])


def test_a_malformed_row_names_the_column_that_did_not_parse(
    spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = query_file(tmp_path, "a,1.5,2024-01-01 00:00:00\nb,abc,2024-01-01 00:00:01\nc,2.5,noon\n")
    assert main(["run", str(path)]) == 0
    err = capfd.readouterr().err
    assert "s: 2 malformed rows skipped (e.g. 'b,abc,2024-01-01 00:00:01': v is not a DOUBLE: 'abc')" in err


def test_csv_output_writes_timestamps_as_the_table_shows_them(
    spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = query_file(tmp_path, "a,1.5,2024-03-15 07:02:00\nb,2.5,2024-03-15 07:02:30.25\n")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("SELECT max(ts) AS last FROM s [RANGE 1 HOUR];\n")
    assert main(["run", str(path), "--query", "2"]) == 0
    shown = capfd.readouterr().out
    assert "2024-03-15 07:00:00" in shown and "2024-03-15 07:02:30.250000" in shown
    assert main(["run", str(path), "--query", "2", "--output", str(tmp_path / "out.csv")]) == 0
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        [row] = list(csv.DictReader(handle))
    assert (row["window_start"], row["window_end"]) == ("2024-03-15 07:00:00", "2024-03-15 08:00:00")
    assert row["last"] == "2024-03-15 07:02:30.25"
