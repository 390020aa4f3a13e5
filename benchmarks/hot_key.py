"""One hot key: WQL's plans in memory bounded by the windows in flight, not by the key's tuples.

    python benchmarks/hot_key.py [--rows N] [--case bins|pane|sessions|events|extremes|all]
                                 [--memory-limit BYTES] [--plan P] [--json]

N tuples (default 50,000,000), all of ONE key (a single sensor), ten a second, under the default
session memory (WQL's local session: the driver's 1 GB, so about 430 MB of execution memory
shared by its tasks):
- bins: a window at every reading holding the key's last 100 seconds (~1,000 tuples),
  [RANGE 100 SECONDS RATTR ts SLIDE 1 ROW PATTR k], sum and count. The key's tuples are far
  more than memory holds, so the bins kernel streams them through Spark's spilling sorter.
- pane: [RANGE 10 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY k, sum, count and max: per-minute
  cells (Spark's aggregation spills), combined by a queue of the 10 cells in flight.
- sessions: [SESSION GAP 30 SECONDS WATTR ts PATTR k], sum, count and max, over the same readings
  with a pause of a minute after every 1,000 (a session of 100 seconds each). The fold kernel's
  arrays would hold the key's tuples, far more than memory holds, so it streams them through
  Spark's spilling sorter and walks them in chunks, carrying the session in flight.
- events: interval events [s, e), one a second lasting 0 to 599 s, in
  [RANGE 60 SLIDE 1 WATTR (s, e)] GROUP BY k, count and sum: the difference plan's signed deltas
  over one window-id a second (50,000,000 of them at the default N), more than memory grants the
  arrays before the shuffle, so they are shipped as they fill and merged by window-id after Spark's
  sort.
- extremes: events one a second lasting 0 to 59 s, with min and max, which the sweep plan
  computes, and a few long ones: the first is open-ended (it lasts to the data's end) and one in
  100,000 lasts 2,000,000 s. The sweep holds the window-ids in flight, the long events still
  running, and per extreme the events that can still be a window's extreme; the open-ended one is
  in its running state. (--plan se-slices: short events written into the key's slices, the long
  ones kept apart, one state each.)
Each case prints its time and the peak execution memory of its tasks (Spark's task metrics
peakOnHeapExecutionMemory + peakOffHeapExecutionMemory, what the task memory manager held at once,
read from the event log); every output row is computed. --memory-limit sets
spark.wql.bins.memoryLimit, spark.wql.frames.memoryLimit and spark.wql.difference.memoryLimit
(the difference plan then ships its arrays whenever they reach it): the kernels then take the path past
memory at any size (0: from the first tuple), to compare it with their arrays at a size that fits.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile
import time
from typing import Any

from harness import described

CASES = {
    "bins": "SELECT sum(v) AS total, count(*) AS n FROM hot [RANGE 100 SECONDS RATTR ts SLIDE 1 ROW PATTR k]",
    "pane": (
        "SELECT k, sum(v) AS total, count(*) AS n, max(v) AS top FROM hot "
        "[RANGE 10 MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY k"
    ),
    "sessions": (
        "SELECT sum(v) AS total, count(*) AS n, max(v) AS top FROM hot [SESSION GAP 30 SECONDS WATTR ts PATTR k]"
    ),
    "events": "SELECT k, count(*) AS n, sum(v) AS total FROM hot [RANGE 60 SLIDE 1 WATTR (s, e)] GROUP BY k",
    "extremes": (
        "SELECT k, count(*) AS n, min(v) AS low, max(v) AS top FROM hot [RANGE 60 SLIDE 1 WATTR (s, e)] GROUP BY k"
    ),
}
SESSION_READINGS = 1_000  # readings per session in the sessions case, then a pause
PAUSE_SECONDS = 60  # more than the gap: a new session after each pause


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--case", choices=[*CASES, "both", "all"], default="all", help="both: bins and pane")
    parser.add_argument("--json", action="store_true", help="one JSON object per case: case, rows, wql_s, peak_mb")
    parser.add_argument("--memory-limit", type=int, help="bytes the bins, fold and difference kernels' arrays may take")
    parser.add_argument("--plan", default="auto", help="the plan WQL runs: auto (its choice) or one that applies")
    parser.add_argument("--master", default="local[*]")
    return parser.parse_args()


def task_ends(log_dir: str) -> list[dict[str, Any]]:
    """The task-end events Spark's event log holds so far (flushed at each job's end)."""
    events = []
    for path in sorted(glob.glob(os.path.join(log_dir, "**", "*"), recursive=True)):
        if os.path.isdir(path):
            continue
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if '"SparkListenerTaskEnd"' in line:
                    events.append(json.loads(line))
    return events


def task_peak(event: dict[str, Any]) -> int:
    """A task's peak execution memory as its task memory manager saw it (every consumer at once); Spark's
    older metric "Peak Execution Memory" sums each operator's own peak instead."""
    metrics = event.get("Task Metrics", {})
    held = metrics.get("Peak On Heap Execution Memory", 0) + metrics.get("Peak Off Heap Execution Memory", 0)
    return held or metrics.get("Peak Execution Memory", 0)


def main() -> int:
    args = arguments()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import functions as F

    import wql
    from wql.runtime.session import default_jvm_log, local_session

    log_dir = tempfile.mkdtemp(prefix="wql-hot-key-events-")
    spark = local_session(  # the default memory: no spark.driver.memory of our own
        args.master,
        app_name="wql benchmark: hot key",
        extra={"spark.eventLog.enabled": "true", "spark.eventLog.dir": log_dir, "spark.eventLog.compress": "false"},
        jvm_log=default_jvm_log(),
    )
    if args.memory_limit is not None:
        for kernel in ("bins", "frames", "difference"):
            spark.conf.set(f"spark.wql.{kernel}.memoryLimit", str(args.memory_limit))
    data = spark.range(args.rows).select(
        F.lit(1).alias("k"), (F.col("id") % 1000 / 10.0).alias("v"), F.timestamp_seconds(F.col("id") / 10).alias("ts")
    )
    pause = (F.col("id") / SESSION_READINGS).cast("long") * PAUSE_SECONDS  # after every SESSION_READINGS readings
    paused = spark.range(args.rows).select(
        F.lit(1).alias("k"),
        (F.col("id") % 1000 / 10.0).alias("v"),
        F.timestamp_seconds(F.col("id") / 10 + pause).alias("ts"),
    )
    events = spark.range(args.rows).select(  # an event a second, each lasting 0 to 599 s
        F.lit(1).alias("k"),
        (F.col("id") % 1000 / 10.0).alias("v"),
        F.col("id").alias("s"),
        (F.col("id") + F.col("id") % 600).alias("e"),
    )
    lasting = F.when(F.col("s") == 0, None).when(F.col("s") % 100_000 == 1, F.col("s") + 2_000_000)
    extremes = events.withColumn("e", lasting.otherwise(F.col("s") + F.col("s") % 60))  # 0 to 59 s, a few long
    cases = {"both": ["bins", "pane"], "all": list(CASES)}.get(args.case, [args.case])
    for case in cases:
        hot = {"sessions": paused, "events": events, "extremes": extremes}.get(case, data)
        query = wql.compile(CASES[case], streams={"hot": hot}, plan=None if args.plan == "auto" else args.plan)
        result = query.run(spark, hot=hot)
        probe = result.select(F.sum(F.hash(*result.columns)).alias("h"), F.count(F.lit(1)).alias("n"))
        before = len(task_ends(log_dir))
        started = time.perf_counter()
        windows = probe.collect()[0]["n"]
        seconds = time.perf_counter() - started
        time.sleep(1)  # the job's end flushes the log
        tasks = task_ends(log_dir)[before:]
        peak = max(map(task_peak, tasks), default=0)
        row = {"case": case, "plan": query.plan, "rows": args.rows, "windows": windows}
        row.update(wql_s=round(seconds, 2), peak_mb=round(peak / 2**20, 1), where=described(args.master))
        if args.memory_limit is not None:
            row["memory_limit"] = args.memory_limit
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(
                f"{case} ({query.plan}): {args.rows:,} tuples of one key, {windows:,} windows in {seconds:.1f} s,"
                f" peak execution memory {peak / 2**20:.0f} MB",
                flush=True,
            )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
