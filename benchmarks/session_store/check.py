"""PROTOTYPE check: SessionStore's sessions against Spark's session_window on rows out of order and late.

    python benchmarks/session_store/check.py [--seed 1] [--files 8] [--keys 5]

probe.py's data arrives in time order, so it never tests the merge's harder cases. Here each file (one per
trigger) holds, per key, readings scattered over 260 s of event time starting 60 s before the previous file's
newest reading, in random order: rows that bridge two open sessions, rows joining a session from before its
start, and late rows, some within the gap of the watermark (admitted: their session [t, t + 30 s) ends above
it) and some not (dropped). Prints, per contender, how many sessions differ from session_window's; store_rows
should match exactly. store_premerge and session_window_local (Spark's own map-side merge) chain a task's
rows before Spark's late-row filter, so a late row chained to an on-time one is kept by both: they may differ
from session_window on such data (and should then agree with each other).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from harness import land_parquet  # noqa: E402
from probe import start_session, verify  # noqa: E402
from streaming import SCHEMA  # noqa: E402

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def write_tricky(spark, folder: Path, files: int, keys: int, seed: int) -> int:
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    newest = 0.0  # the newest reading so far: the next trigger's watermark
    older = 0.0  # the one before: the next trigger's watermark for late rows (Spark drops against it)
    total = 0
    for index in range(files):
        rows = []
        low = max(0.0, newest - 60)

        def reading(k: int, t: float, rows: list = rows) -> None:
            rows.append((k, round(rng.uniform(0, 100), 3), EPOCH + timedelta(milliseconds=round(t * 1000))))

        for k in range(keys):
            t = low + rng.uniform(0, 20)
            while t < low + 260:
                reading(k, t)
                t += rng.choice([3, 8, 15, 25, 29, 31, 40, 70])  # gaps on both sides of 30 s
            if index >= 2:  # very late readings: around the watermark for late rows, within the gap of each other
                t = older - 45 + rng.uniform(0, 10)
                while t < older + 20:
                    reading(k, t)
                    t += rng.choice([5, 10, 20])
        rng.shuffle(rows)
        older, newest = newest, max(newest, *((r[2] - EPOCH).total_seconds() for r in rows))
        total += len(rows)
        land_parquet(spark.createDataFrame(rows, SCHEMA), folder, index)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--keys", type=int, default=5)
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    spark = start_session(args.master)
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="wql-check-sessions-"))
    try:
        folder = work / "tricky"
        rows = write_tricky(spark, folder, args.files, args.keys, args.seed)
        print(f"{rows} rows in {args.files} files", flush=True)
        found = verify(spark, folder, work, ["store_rows", "store_premerge", "session_window_local"])
        print(found, flush=True)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
