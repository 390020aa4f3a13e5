"""A SparkSession the user built, not WQL: `wql.configure(builder)` gives it WQL's kernels and Python workers on
this interpreter, and without it a Python worker that cannot import pyarrow is one line that says why.

Each test runs in a process of its own with a `python3` first on PATH that has no site-packages (as a system
Python without pyarrow), and without PYSPARK_PYTHON: PySpark then starts its workers with that `python3`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT
from wql.runtime.session import kernel_jar

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(os.environ.get("WQL_TEST_REMOTE")), reason="a client run")]

# The user's program: a session from their own builder (through wql.configure or not), then what the notebook
# magic does with a query; it prints one JSON line with what happened.
PROGRAM = """
import json, sys
from pyspark.sql import SparkSession
import wql
from wql.runtime.errors import translate

builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
builder = builder.config("spark.sql.shuffle.partitions", "2")
if sys.argv[2] == "configure":
    builder = wql.configure(builder)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("OFF")
spark.conf.set("spark.wql.combine", sys.argv[3])  # auto: the JVM kernels where Spark has them; arrow: numpy
query = wql.compile(open(sys.argv[1]).read(), sys.argv[1])
out = {"python": spark.sparkContext.pythonExec}
try:
    inputs, _ = query.load_inputs(spark)
    result = query.run(spark, **inputs)
    out["rows"] = result.count()
    out["plan"] = result._jdf.queryExecution().executedPlan().toString()
except Exception as error:
    failure = translate(error, "query 1")
    out["error"], out["hint"], out["raw"] = failure.message, failure.hint, str(error)[-300:]
print(json.dumps(out))
"""


def run_user_program(tmp_path: Path, how: str, combine: str) -> dict[str, str]:
    bare = tmp_path / "bin"
    bare.mkdir(exist_ok=True)
    python3 = bare / "python3"
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')  # a Python without site-packages
    python3.chmod(0o755)
    program = tmp_path / "user.py"
    program.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if k not in {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_REMOTE"}}
    env.update(PATH=f"{bare}{os.pathsep}{env.get('PATH', '')}", TZ="UTC", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, str(program), str(EXAMPLES / "traffic.wql"), how, combine],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_workers_on_a_python_without_pyarrow_are_one_line_that_says_which_python(tmp_path: Path) -> None:
    """Spark's Python workers raise ModuleNotFoundError deep in a Java stack; WQL says, in one line, which
    interpreter they run and how to point them at this one."""
    out = run_user_program(tmp_path, "builder", "arrow")
    assert out["python"] == "python3"
    assert "error" in out, out
    assert out["error"] == "query 1: Spark's Python workers run python3, which cannot import pyarrow", out
    assert f"PYSPARK_PYTHON={sys.executable}" in out["hint"] and "wql.configure(" in out["hint"]


@pytest.mark.skipif(kernel_jar() is None, reason="wql-kernels.jar is not built (make jar needs a JDK)")
def test_configure_gives_a_users_own_session_wqls_kernels_and_this_python(tmp_path: Path) -> None:
    """One call on the user's builder: the pane plan runs in WQL's JVM kernel (its operator in Spark's plan),
    and a plan in numpy runs in Python workers on this interpreter."""
    kernels = run_user_program(tmp_path, "configure", "auto")
    assert "error" not in kernels, kernels
    assert "SlidingCombine" in kernels["plan"] and kernels["rows"] == 1000
    numpy = run_user_program(tmp_path, "configure", "arrow")
    assert numpy["python"] == sys.executable and "error" not in numpy, numpy
    assert "SlidingCombine" not in numpy["plan"] and numpy["rows"] == 1000
