"""Shared fixtures: golden files and one session-scoped local SparkSession."""

from __future__ import annotations

import functools
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"

# The test profile: "dev" for `make test` (few examples, each packing many random streams into one Spark run;
# the streaming harness without AQE), "deep" for `make test-deep` (more examples, every seed, AQE on, every
# process-spawning test). A test's own explicit settings override the profile's.
PROFILE = os.environ.get("WQL_TEST_PROFILE", "dev")
DEEP = PROFILE == "deep"
_QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]
settings.register_profile("dev", max_examples=2, deadline=None, suppress_health_check=_QUIET)
settings.register_profile("deep", max_examples=8, deadline=None, suppress_health_check=_QUIET)
settings.load_profile(PROFILE)
# Each example of a Spark test is one Spark run over several random streams; fewer examples pack more.
PACKED = 1 if DEEP else 2
# Spark runs are the cost of an example: no shrinking (each step would be one).
_SPARK_SETTINGS = settings(phases=[Phase.explicit, Phase.reuse, Phase.generate], max_examples=8 if DEEP else 1)


def SPARK(test: Any) -> Any:
    """The settings of a Spark test (above `@given`): no shrinking, and in `make test` one random example.

    Hypothesis always runs the simplest example first (every choice zero): the same in every run, so in
    `make test` half of a two-example test's Spark runs went to an input it had passed many times. Here
    the first thing each example draws must not be zero, which rejects that example before it reaches
    Spark (rejected examples do not count as examples), and the one that runs is a fresh random one,
    with PACKED random streams in it. `make test-deep` runs the simplest example too, and eight more."""
    test = _SPARK_SETTINGS(test)
    if DEEP:
        return test
    inner = test.hypothesis.inner_test

    @functools.wraps(inner)
    def fresh(*args: Any, **kwargs: Any) -> Any:
        from hypothesis import assume
        from hypothesis import strategies as st
        from hypothesis.control import current_build_context

        assume(current_build_context().data.draw(st.integers(0, 1 << 30)) != 0)
        return inner(*args, **kwargs)

    test.hypothesis.inner_test = fresh
    return test


# `make test`: of a Spark test's parametrizations (plans, kinds, aggregates, fault points), one in SAMPLED, at
# least one, drawn afresh each run; `make test-deep` runs them all. WQL_TEST_SEED=N draws the same ones again
# (the seed is in the run's header).
SAMPLED = 4
SEED = int(os.environ.get("WQL_TEST_SEED") or random.SystemRandom().randrange(1 << 32))


# The suite never meets a WQL server its user started (`wql server start` while tests run): the state
# directory where `wql run`, the REPL and the notebook look for one is the suite's own, for every process it
# starts too. tests/test_server.py starts the suite's server there, and the suite fails if one is left.
os.environ["WQL_STATE_DIR"] = tempfile.mkdtemp(prefix="wql-test-state-")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from wql.runtime import server

    left = server.running()
    if left is not None:
        server.stop()
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(f"\nFAILED: a test left a WQL server running at {left.describe()}; it is stopped now", file=sys.stderr)


def pytest_report_header(config: pytest.Config) -> str:
    if DEEP:
        return "wql test profile: deep (every parametrization)"
    return f"wql test profile: dev (one parametrization in {SAMPLED} of each Spark test; WQL_TEST_SEED={SEED})"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `deep` (process-spawning ones whose ground another test covers in `make test`) are
    collected everywhere and run only in the deep profile. WQL_TEST_FIRST (a test file) runs that file's
    tests first and the rest after, in their order: tests/mutants.py runs the whole suite so, with the
    test that should kill a mutant first.

    In `make test` a Spark test parametrized over plans, kinds or fault points (or one marked `sampled`)
    runs a random quarter of its parametrizations, at least one (`sampled`): a Spark job costs a quarter
    of a second or more even on a few rows, a streaming test runs dozens, and the suite that ran every
    parametrization took over 20 minutes on two cores, twice what `make test` has. Each run draws others,
    as each run draws fresh random streams (hypothesis), so successive runs cover them all; the deep
    profile runs every one, every time."""
    first = os.environ.get("WQL_TEST_FIRST")
    if first:
        items.sort(key=lambda item: item.nodeid.split("::")[0] != first)  # a stable sort keeps each part's order
    if DEEP:
        return
    for item in items:
        if item.get_closest_marker("deep") is not None:
            item.add_marker(pytest.mark.skip(reason="runs in make test-deep (WQL_TEST_PROFILE=deep)"))
    left = sampled(items, first)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if item not in left]


def sampled(items: list[pytest.Item], first: str | None) -> list[pytest.Item]:
    """The parametrizations `make test` leaves to the deep profile: of each Spark test function with several,
    all but one in SAMPLED (rounded up), drawn with SEED; none of the WQL_TEST_FIRST file's (the test a
    mutant must fail runs whole)."""
    groups: dict[tuple[str, str], list[pytest.Item]] = {}
    for item in items:
        spec = getattr(item, "callspec", None)
        marks = {mark.name for mark in item.iter_markers()}
        heavy = bool(marks & {"sampled", "spark"}) or "spark" in getattr(item, "fixturenames", ())
        if spec is None or not heavy or "deep" in marks:
            continue
        path = item.nodeid.split("::")[0]
        if path != first:
            groups.setdefault((path, getattr(item, "originalname", item.name)), []).append(item)
    draw = random.Random(SEED)
    left: list[pytest.Item] = []
    for group in groups.values():
        if len(group) > 1:
            kept = set(draw.sample(range(len(group)), -(-len(group) // SAMPLED)))
            left.extend(item for index, item in enumerate(group) if index not in kept)
    return left


def seeds(every: int, dev: int = 2) -> range:
    """The seeds of an exhaustive loop: `dev` of them in `make test`, all `every` in `make test-deep`."""
    return range(every if DEEP else min(dev, every))


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

    # The suite runs thousands of plans in one JVM, many of the same shape: Spark's cache of compiled
    # generated code (100 entries by default) then misses on most of them, and Janino's compiling, with a
    # class lookup through every jar for each name it resolves, is a sixth of the JVM's time (a JFR profile
    # of test_streaming). A larger cache changes no result: the same code, compiled once. test_streaming:
    # 181 s -> 164 s (mean of two runs each).
    cached = {"spark.sql.codegen.cache.maxEntries": "5000"}
    session = remote_session(REMOTE) if REMOTE else local_session(master="local[2]", shuffle_partitions=2, extra=cached)
    yield session
    session.stop()
