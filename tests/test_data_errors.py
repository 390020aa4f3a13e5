"""A failure in the data (Spark raises it while the job runs) ends in one line with its cause, the
place in the query and a hint: no Java stack, no PySpark JSON log, in `wql run` and in the REPL."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.conftest import EXAMPLES
from wql.cli import main
from wql.repl import Repl, SparkStarter

pytestmark = pytest.mark.spark

CLICKS = (EXAMPLES / "data" / "clicks.csv").as_posix()
BAD = f"""\
CREATE STREAM clicks (user_id STRING, page STRING, ts TIMESTAMP, amount DOUBLE)
  FROM '{CLICKS}' FORMAT csv OPTIONS (header = true);

SELECT user_id, sum(cast(page AS INT)) AS s
FROM clicks [RANGE 1 HOUR WATTR ts]
GROUP BY user_id;
"""


def no_java(text: str) -> bool:
    return "\tat " not in text and "org.apache" not in text and "SQLQueryContextLogger" not in text


def test_wql_run_says_a_data_error_in_at_most_three_lines(
    spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.wql"
    path.write_text(BAD, encoding="utf-8")
    assert main(["run", str(path)]) == 1
    err = capfd.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) <= 3 and no_java(err), err
    assert "clicks: 312 rows read" in lines[0]
    assert 'The value \'home\' of the type "STRING" cannot be cast to "INT"' in err
    assert "in cast(page AS INT) at line 4, column 21" in err
    assert "= hint: " in err and "try_cast" in err


def test_the_repl_says_a_data_error_in_at_most_three_lines(
    spark: Any, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WQL_REPL_PRESTART", "0")
    buffer = io.StringIO()
    console = Console(file=buffer, width=400, color_system=None, force_terminal=False, force_jupyter=False)
    repl = Repl(console, spark=SparkStarter(factory=lambda: spark))
    repl.handle(BAD)
    shown = buffer.getvalue()
    err = capfd.readouterr().err
    assert len(err.strip().splitlines()) <= 3 and no_java(err), err
    error = shown[shown.index("runtime error") :].strip().splitlines()
    assert len(error) <= 2 and no_java(shown), shown
    assert "in cast(page AS INT) at line 4, column 21" in error[0]
    assert error[1].strip().startswith("= hint: ") and "try_cast" in error[1]
