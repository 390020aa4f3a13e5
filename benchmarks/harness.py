"""What the benchmarks share: where they run (local or a standalone cluster), the Spark session, fair
timing, and warm-up."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# --cluster: a master and 2 workers on 127.0.0.1, each worker one core (the machine has 2) and an
# executor of this much memory; the driver then only plans and collects.
CLUSTER_WORKERS = 2
CLUSTER_EXECUTOR_MEMORY = "2g"


def add_placement(parser: argparse.ArgumentParser) -> None:
    """--master (a local or existing master) and --cluster (a standalone cluster started for the run)."""
    parser.add_argument("--master", default="local[*]")
    parser.add_argument(
        "--cluster",
        action="store_true",
        help=f"start a standalone cluster (master + {CLUSTER_WORKERS} workers on 127.0.0.1) and run on its executors",
    )


@contextlib.contextmanager
def placement(args: argparse.Namespace) -> Iterator[str]:
    """The master URL to run on: --master, or with --cluster a standalone cluster started here (from
    PySpark's own spark-class) and always stopped after the run."""
    if not getattr(args, "cluster", False):
        yield args.master
        return
    from wql.runtime.local_spark import standalone_cluster

    logs = tempfile.mkdtemp(prefix="wql-bench-cluster-")
    with standalone_cluster(Path(logs), workers=CLUSTER_WORKERS, cores=1, memory=CLUSTER_EXECUTOR_MEMORY) as url:
        print(f"standalone cluster {url}: {CLUSTER_WORKERS} workers x 1 core, logs in {logs}", file=sys.stderr)
        yield url


def described(master: str) -> str:
    """How a result line names where it ran."""
    return f"cluster ({CLUSTER_WORKERS} executors x 1 core)" if master.startswith("spark://") else master


def session(master: str, name: str) -> Any:
    """WQL's session with the settings of the performance notes: 4 shuffle partitions, 4g driver; on a
    standalone cluster, one executor per worker with WQL's kernels shipped to it (spark.jars)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from wql.runtime.session import default_jvm_log, local_session

    extra = {"spark.driver.memory": "4g"}
    if master.startswith("spark://"):
        extra.update(
            {
                "spark.executor.memory": CLUSTER_EXECUTOR_MEMORY,
                "spark.executor.cores": "1",
                "spark.cores.max": str(CLUSTER_WORKERS),
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
            }
        )
    return local_session(
        master,
        app_name=f"wql benchmark: {name}",
        shuffle_partitions=int(os.environ.get("WQL_BENCH_PARTITIONS", "4")),
        extra=extra,
        jvm_log=default_jvm_log(),
    )


def hashed(frame: Any) -> Callable[[], int]:
    """Forces every row and column of `frame` by a hash sum over all its columns, returning its row count
    (the probe is planned here, before the clock starts)."""
    from pyspark.sql import functions as F

    probe = frame.select(F.sum(F.hash(*frame.columns)).alias("h"), F.count(F.lit(1)).alias("n"))
    return lambda: int(probe.collect()[0]["n"])


def noop(frame: Any) -> Callable[[], int]:
    """Writes `frame` whole to Spark's noop sink, returning its row count, from an Observation on the same
    job (no second job to count)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    seen = Observation()
    observed = frame.observe(seen, F.count(F.lit(1)).alias("n"))

    def write() -> int:
        observed.write.format("noop").mode("overwrite").save()
        return int(seen.get["n"])

    return write


def timed(
    builds: dict[str, Callable[[], Any]],
    repeat: int,
    counts: dict[str, int] | None = None,
    rounds: dict[str, list[float]] | None = None,
    force: Callable[[Any], Callable[[], int]] = hashed,
) -> dict[str, float]:
    """Seconds to compute every row of each fresh build(), best of `repeat` rounds.

    Rounds interleave the contenders so none gains from running after the others
    (JIT, Python workers), and each run builds a new DataFrame: collecting the
    same one twice would reuse its shuffle files and time only the last stage.
    `force` readies a frame to be computed whole, counting its rows: `hashed` (a hash sum over its
    columns, the default) or `noop` (Spark's noop sink). With `counts`, each contender's row count goes
    there (from the timed runs); with `rounds`, every round's seconds, so a caller can take ratios
    within a round, where the contenders ran seconds apart on the same machine, rather than between
    bests that may come from different minutes.
    """
    best = dict.fromkeys(builds, float("inf"))
    for _ in range(repeat):
        for name, build in builds.items():
            run = force(build())
            started = time.perf_counter()
            rows = run()
            seconds = time.perf_counter() - started
            best[name] = min(best[name], seconds)
            if rounds is not None:
                rounds.setdefault(name, []).append(seconds)
            if counts is not None:
                counts[name] = rows
    return best


def warm_up(builds: dict[str, Callable[[], Any]]) -> None:
    """One untimed run of each on a small slice: starts Python workers and warms the JIT."""
    for build in builds.values():
        build().limit(1000).collect()


def counting_sink(counted: list[int]) -> Callable[[Any, Any], int]:
    """A sink for a stream's windows: writes them to Spark's noop sink and appends how many there were to
    `counted`, with an Observation on the same job (no second job to count)."""

    def sink(windows: Any, trigger: Any) -> int:
        counted.append(noop(windows)())
        return counted[-1]

    return sink


def land_parquet(frame: Any, folder: Path, index: int) -> None:
    """`frame` as one parquet file, folder/part-NNNNN.parquet, whose modification time orders it after
    the files landed before it (Spark's file source takes files by modification time)."""
    import shutil

    part = folder.parent / f"part-{index}"
    frame.coalesce(1).write.parquet(str(part))
    [written] = part.glob("part-*.parquet")
    target = folder / f"part-{index:05d}.parquet"
    written.rename(target)
    shutil.rmtree(part)
    stamp = 1_700_000_000 + index
    os.utime(target, (stamp, stamp))


def noop_stream(frame: Any, checkpoint: str) -> tuple[float, Any]:
    """A streaming DataFrame run over the files there now (availableNow), append mode, into Spark's noop sink:
    (seconds to the end, the finished query, whose progress reports each trigger)."""
    started = time.perf_counter()
    query = (
        frame.writeStream.format("noop")
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return time.perf_counter() - started, query
