"""Shared fixtures: golden files and one session-scoped local SparkSession."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"

# Python workers must run this interpreter (with numpy/pyarrow), and times are UTC everywhere.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ["TZ"] = "UTC"
time.tzset()


def check_golden(name: str, actual: str) -> None:
    """Compare with tests/golden/NAME; WQL_UPDATE_GOLDEN=1 rewrites the file instead."""
    path = GOLDEN / name
    if os.environ.get("WQL_UPDATE_GOLDEN") == "1" or not path.exists():
        if not path.exists() and os.environ.get("WQL_UPDATE_GOLDEN") != "1":
            pytest.fail(f"golden file {path} is missing; run with WQL_UPDATE_GOLDEN=1 to create it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{name} differs from its golden file (WQL_UPDATE_GOLDEN=1 to accept)"


# A Spark Connect server's URL: the run's tests then go through a Connect client instead of a local
# session (tests/test_connect.py runs a subset so, in a process of its own: PySpark's functions module
# serves either Connect or classic sessions in one process, never both).
REMOTE = os.environ.get("WQL_TEST_REMOTE")


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for the whole run: UI off, quiet logs, UTC (or Connect, with WQL_TEST_REMOTE)."""
    from wql.runtime.session import local_session, remote_session

    session = remote_session(REMOTE) if REMOTE else local_session(master="local[2]", shuffle_partitions=2)
    yield session
    session.stop()
