"""Sliding time windows: WQL's chosen plan against Spark's window() and a tumbling aggregation.

    python benchmarks/sliding.py [--rows N] [--ratios 1,10,60,240] [--cases sliding,cumulate] [--json]

N rows (default 5,000,000), 100 keys, a reading every 0.1 s, SLIDE 1 minute and
RANGE = ratio × SLIDE; sum, count and max per key and window. For each ratio the
three are timed in one process, on the same cached DataFrame, each forced to
compute every output row (a hash sum over all columns), best of --repeat runs.
Machines are shared and noisy: read the ratios, not the seconds.

The cumulate case is [RANGE 1 DAY SLIDE 1 HOUR CUMULATE]: the running totals of
each day, every hour. Spark has no such window; its baseline is what a user writes
for the same result, a window() of one hour and then a running aggregate over the
day's hours (OVER (PARTITION BY k, day ORDER BY hour ROWS UNBOUNDED PRECEDING)).
Its tumbling aggregation is by the hour. With --json it prints one more line, with
"case": "cumulate" and the same keys as the ratio lines.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from harness import session, timed, warm_up

SLIDE_SECONDS = 60
KEYS = 100


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--ratios", default="1,10,60,240", help="RANGE/SLIDE ratios, comma-separated")
    parser.add_argument("--repeat", type=int, default=2, help="runs per measurement; the best is kept")
    parser.add_argument("--cases", default="sliding,cumulate", help="sliding (the ratios), cumulate, or both")
    parser.add_argument("--json", action="store_true", help="one JSON object per ratio, and one for cumulate")
    parser.add_argument("--master", default="local[*]")
    return parser.parse_args()


def main() -> int:
    args = arguments()
    from pyspark.sql import functions as F

    import wql

    spark = session(args.master, "sliding")
    data = (
        spark.range(args.rows)
        .select(
            (F.col("id") % KEYS).cast("int").alias("k"),
            (F.rand(7) * 100).alias("v"),
            F.timestamp_seconds(F.col("id") / 10).alias("ts"),
        )
        .cache()
    )
    data.count()
    schema = {"bench": data}
    cases = set(args.cases.split(","))
    results = []
    for ratio in [int(r) for r in args.ratios.split(",")] if "sliding" in cases else []:
        query = wql.compile(
            f"SELECT k, sum(v) AS total, count(*) AS n, max(v) AS top "
            f"FROM bench [RANGE {ratio} MINUTES SLIDE 1 MINUTE WATTR ts] GROUP BY k",
            streams=schema,
        )
        range_s = ratio * SLIDE_SECONDS
        runs: dict[str, Callable[[], Any]] = {
            "wql": lambda q=query: q.run(spark, bench=data),
            "native": lambda r=range_s: data.groupBy(
                "k", F.window("ts", f"{r} seconds", f"{SLIDE_SECONDS} seconds")
            ).agg(F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"), F.max("v").alias("top")),
            "tumbling": lambda: data.groupBy("k", F.floor(F.unix_seconds("ts") / SLIDE_SECONDS).alias("slide")).agg(
                F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"), F.max("v").alias("top")
            ),
        }
        if not results:
            warm_up(runs)
        seconds = timed(runs, args.repeat)
        row = {
            "ratio": ratio,
            "plan": query.plan,
            "wql_s": round(seconds["wql"], 3),
            "native_s": round(seconds["native"], 3),
            "tumbling_s": round(seconds["tumbling"], 3),
        }
        results.append(row)
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(
                f"ratio {ratio:>4}: {query.plan:<7} wql {row['wql_s']:7.2f}s  native {row['native_s']:7.2f}s  "
                f"tumbling {row['tumbling_s']:6.2f}s  native/wql {row['native_s'] / row['wql_s']:6.1f}x  "
                f"wql/tumbling {row['wql_s'] / row['tumbling_s']:5.2f}x",
                flush=True,
            )
    if "cumulate" in cases:
        cumulate(spark, data, args, warm=not results)
    spark.stop()
    return 0


def cumulate(spark: Any, data: Any, args: argparse.Namespace, warm: bool) -> None:
    """The running totals of each day, every hour: WQL's CUMULATE against the Spark a user would write."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    import wql

    query = wql.compile(
        "SELECT k, sum(v) AS total, count(*) AS n, max(v) AS top "
        "FROM bench [RANGE 1 DAY SLIDE 1 HOUR CUMULATE WATTR ts] GROUP BY k",
        streams={"bench": data},
    )

    def native() -> Any:
        hours = data.groupBy("k", F.window("ts", "1 hour").alias("w")).agg(
            F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"), F.max("v").alias("top")
        )
        day = F.date_trunc("day", F.col("w.start"))
        so_far = (
            Window.partitionBy("k", day).orderBy("w.start").rowsBetween(Window.unboundedPreceding, Window.currentRow)
        )
        return hours.select(
            "k",
            day.alias("window_start"),
            F.col("w.end").alias("window_end"),
            F.sum("total").over(so_far).alias("total"),
            F.sum("n").over(so_far).alias("n"),
            F.max("top").over(so_far).alias("top"),
        )

    runs: dict[str, Callable[[], Any]] = {
        "wql": lambda: query.run(spark, bench=data),
        "native": native,
        "tumbling": lambda: data.groupBy("k", F.floor(F.unix_seconds("ts") / 3600).alias("hour")).agg(
            F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"), F.max("v").alias("top")
        ),
    }
    if warm:
        warm_up(runs)
    seconds = timed(runs, args.repeat)
    row = {
        "case": "cumulate",
        "range": "1 day",
        "slide": "1 hour",
        "ratio": 24,
        "plan": query.plan,
        "wql_s": round(seconds["wql"], 3),
        "native_s": round(seconds["native"], 3),
        "tumbling_s": round(seconds["tumbling"], 3),
    }
    if args.json:
        print(json.dumps(row), flush=True)
    else:
        print(
            f"cumulate 1 day / 1 hour: {query.plan:<7} wql {row['wql_s']:7.2f}s  "
            f"window()+OVER {row['native_s']:7.2f}s  tumbling {row['tumbling_s']:6.2f}s  "
            f"native/wql {row['native_s'] / row['wql_s']:6.1f}x  wql/tumbling {row['wql_s'] / row['tumbling_s']:5.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
