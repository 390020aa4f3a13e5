"""A live progress line while Spark works, from its status tracker."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console


@contextlib.contextmanager
def spark_progress(spark: Any, console: Console, label: str) -> Iterator[None]:
    """Show `label` with the running stages' task counts; cancel Spark's jobs on Ctrl-C. A Spark Connect
    session has no status tracker on this side: the label alone shows, and Ctrl-C interrupts its operations."""
    from wql.runtime.session import is_remote

    remote = is_remote(spark)
    tracker = None if remote else spark.sparkContext.statusTracker()
    stop = threading.Event()
    with console.status(label, spinner="dots") as status:

        def poll() -> None:
            while tracker is not None and not stop.wait(0.25):
                parts = []
                for stage_id in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(stage_id)
                    if info is not None and info.numTasks:
                        parts.append(f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks} tasks")
                status.update(f"{label} — {', '.join(parts)}" if parts else label)

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        started = time.monotonic()
        try:
            yield
        except KeyboardInterrupt:
            if remote:
                spark.interruptAll()
            else:
                spark.sparkContext.cancelAllJobs()
            raise
        finally:
            stop.set()
            thread.join(timeout=1)
            elapsed = time.monotonic() - started
            del elapsed
