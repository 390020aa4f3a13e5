"""What both benchmarks share: the Spark session, fair timing, and warm-up."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any


def session(master: str, name: str) -> Any:
    """WQL's local session with the settings of the performance notes: 4 shuffle partitions, 4g driver."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from wql.runtime.session import default_jvm_log, local_session

    return local_session(
        master,
        app_name=f"wql benchmark: {name}",
        shuffle_partitions=int(os.environ.get("WQL_BENCH_PARTITIONS", "4")),
        extra={"spark.driver.memory": "4g"},
        jvm_log=default_jvm_log(),
    )


def timed(builds: dict[str, Callable[[], Any]], repeat: int, counts: dict[str, int] | None = None) -> dict[str, float]:
    """Seconds to compute every row of each fresh build(), best of `repeat` rounds.

    Rounds interleave the contenders so none gains from running after the others
    (JIT, Python workers), and each run builds a new DataFrame: collecting the
    same one twice would reuse its shuffle files and time only the last stage.
    With `counts`, each contender's row count goes there (from the timed runs).
    """
    from pyspark.sql import functions as F

    best = dict.fromkeys(builds, float("inf"))
    for _ in range(repeat):
        for name, build in builds.items():
            frame = build()
            probe = frame.select(F.sum(F.hash(*frame.columns)).alias("h"), F.count(F.lit(1)).alias("n"))
            started = time.perf_counter()
            result = probe.collect()
            best[name] = min(best[name], time.perf_counter() - started)
            if counts is not None:
                counts[name] = result[0]["n"]
    return best


def warm_up(builds: dict[str, Callable[[], Any]]) -> None:
    """One untimed run of each on a small slice: starts Python workers and warms the JIT."""
    for build in builds.values():
        build().limit(1000).collect()
