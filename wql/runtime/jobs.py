"""Spark work that Ctrl-C (or a notebook's interrupt) can cancel without losing the session."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_groups = itertools.count(1)


def run_in_job_group(spark: Any, description: str, work: Callable[[], T]) -> T:
    """`work()` in a thread of its own, under a Spark job group of its own; returns or raises what it does.

    The calling thread only waits, so Ctrl-C (or Jupyter's interrupt) reaches it at once instead of
    being held up inside a Py4J call, whose connection an interrupt would leave half-read. It then
    cancels the group — again and again, since a cancel reaches only the jobs running at that moment
    and the work may start its next one — until the work gives up, and raises KeyboardInterrupt.
    """
    from wql.runtime.session import is_remote

    group = f"wql-{os.getpid()}-{next(_groups)}"
    outcome: dict[str, Any] = {}
    remote = is_remote(spark)  # Spark Connect: no SparkContext; operations carry a tag instead of a job group

    def cancel() -> None:
        if remote:
            spark.interruptTag(group)
        else:
            spark.sparkContext.cancelJobGroup(group)

    def target() -> None:
        if remote:
            spark.addTag(group)  # tags this thread's operations
        else:
            spark.sparkContext.setJobGroup(group, description, interruptOnCancel=True)
        try:
            outcome["value"] = work()
        except BaseException as error:  # handed to the waiting thread
            outcome["error"] = error

    worker = threading.Thread(target=target, name=group, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)
    except KeyboardInterrupt:
        while worker.is_alive():
            try:
                cancel()
                worker.join(0.5)
            except KeyboardInterrupt:
                continue  # already cancelling
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
