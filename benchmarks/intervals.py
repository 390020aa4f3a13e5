"""Interval events: WQL's chosen plan against the bucket plan and the Spark a user would write.

    python benchmarks/intervals.py [--rows N] [--lengths 1,10,100] [--aggregates sum,max] [--plan P] [--json]

N events (default 2,000,000) of 100 keys, a start every 0.1 s, lasting an
exponentially distributed time that averages 1, 10 or 100 slides; windows of
RANGE 10 MINUTES SLIDE 1 MINUTE over WATTR (started, ended). Two aggregate sets:
"sum" (count, sum, avg: the difference plan's) and "max" (min, max: SE-slices').
For each case three contenders run in one process on the same cached data:

- wql:    the plan WQL chooses (or --plan's);
- bucket: WQL's bucket plan (each event copied into every window it overlaps);
- native: what a Spark user writes: explode the `sequence` of the window starts
          an event overlaps, then group by key and window.

Each is forced to compute every output row (a hash sum over all columns), best of
--repeat runs; the row counts of the three are checked to agree. Machines are
shared and noisy: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from harness import session, timed, warm_up

SLIDE_SECONDS = 60
RANGE_SECONDS = 600
KEYS = 100
AGGREGATES = {
    "sum": "count(*) AS n, sum(cost) AS total, avg(cost) AS mean",
    "max": "min(cost) AS low, max(cost) AS high",
}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--lengths", default="1,10,100", help="mean event lengths in slides, comma-separated")
    parser.add_argument("--aggregates", default="sum,max", help="aggregate sets: sum (count, sum, avg), max (min, max)")
    parser.add_argument("--repeat", type=int, default=2, help="runs per measurement; the best is kept")
    parser.add_argument("--plan", default="auto", help="the plan WQL runs: auto (its choice), se-slices, difference")
    parser.add_argument("--json", action="store_true", help="one JSON object per case")
    parser.add_argument("--master", default="local[*]")
    return parser.parse_args()


def native(data: Any, aggregate: str) -> Any:
    """The Spark a user writes: every window start the event overlaps, exploded, then grouped."""
    from pyspark.sql import functions as F

    start, end = F.unix_micros("started") / 1e6, F.unix_micros("ended") / 1e6
    first = F.floor((start - RANGE_SECONDS) / SLIDE_SECONDS) + 1  # the first window whose end is after the start
    last = F.ceil(end / SLIDE_SECONDS) - 1  # the last window that starts before the end
    exploded = data.select("caller", "cost", F.explode(F.sequence(first, last)).alias("w"))
    if aggregate == "sum":
        values = [F.count(F.lit(1)).alias("n"), F.sum("cost").alias("total"), F.avg("cost").alias("mean")]
    else:
        values = [F.min("cost").alias("low"), F.max("cost").alias("high")]
    grouped = exploded.groupBy("caller", "w").agg(*values)
    return grouped.select(
        F.timestamp_seconds(F.col("w") * SLIDE_SECONDS).alias("window_start"),
        F.timestamp_seconds(F.col("w") * SLIDE_SECONDS + RANGE_SECONDS).alias("window_end"),
        "caller",
        *(c for c in grouped.columns if c not in ("caller", "w")),
    )


def main() -> int:
    args = arguments()
    from pyspark.sql import functions as F

    import wql

    spark = session(args.master, "intervals")
    results = []
    for length in [float(x) for x in args.lengths.split(",")]:
        mean_seconds = length * SLIDE_SECONDS
        data = (
            spark.range(args.rows)
            .select(
                (F.col("id") % KEYS).cast("int").alias("caller"),
                (F.rand(7) * 100).alias("cost"),
                F.timestamp_micros((F.col("id") * 100_000).cast("bigint")).alias("started"),
                (-F.log(1 - F.rand(11)) * mean_seconds * 1e6).cast("bigint").alias("_length"),
            )
            .select(
                "caller",
                "cost",
                "started",
                F.timestamp_micros(F.unix_micros("started") + F.col("_length") + 1).alias("ended"),
            )
            .cache()
        )
        data.count()
        streams = {"calls": data}
        for aggregate in args.aggregates.split(","):
            text = (
                f"SELECT caller, {AGGREGATES[aggregate]} FROM calls "
                f"[RANGE {RANGE_SECONDS // 60} MINUTES SLIDE {SLIDE_SECONDS // 60} MINUTE WATTR (started, ended)] "
                f"GROUP BY caller"
            )
            chosen = wql.compile(text, streams=streams, plan=None if args.plan == "auto" else args.plan)
            bucket = wql.compile(text, streams=streams, plan="bucket")
            runs: dict[str, Callable[[], Any]] = {
                "wql": lambda q=chosen, d=data: q.run(spark, calls=d),
                "bucket": lambda q=bucket, d=data: q.run(spark, calls=d),
                "native": lambda a=aggregate, d=data: native(d, a),
            }
            if not results:
                warm_up(runs)
            counts: dict[str, int] = {}
            seconds = timed(runs, args.repeat, counts)
            if len(set(counts.values())) > 1:
                print(f"warning: the contenders disagree on the windows: {counts}", file=sys.stderr)
            row = {
                "length": length,
                "aggregate": aggregate,
                "plan": chosen.plan,
                "windows": counts.get("wql"),
                "wql_s": round(seconds["wql"], 3),
                "bucket_s": round(seconds["bucket"], 3),
                "native_s": round(seconds["native"], 3),
                "bucket_over_wql": round(seconds["bucket"] / seconds["wql"], 2),
                "native_over_wql": round(seconds["native"] / seconds["wql"], 2),
            }
            results.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(
                    f"length {length:>5g} slides, {aggregate}: {chosen.plan:<10} wql {row['wql_s']:7.2f}s  "
                    f"bucket {row['bucket_s']:7.2f}s  native {row['native_s']:7.2f}s  "
                    f"bucket/wql {row['bucket_over_wql']:6.1f}x  native/wql {row['native_over_wql']:6.1f}x",
                    flush=True,
                )
        data.unpersist()
    _flatness(results, args.json)
    spark.stop()
    return 0


def _flatness(results: list[dict[str, Any]], as_json: bool) -> None:
    """How WQL's time grows from the shortest to the longest events, per aggregate set."""
    for aggregate in sorted({r["aggregate"] for r in results}):
        rows = sorted((r for r in results if r["aggregate"] == aggregate), key=lambda r: r["length"])
        if len(rows) < 2 or as_json:
            continue
        growth = rows[-1]["wql_s"] / rows[0]["wql_s"]
        print(
            f"{aggregate}: WQL's time grows {growth:.2f}x from {rows[0]['length']:g} to {rows[-1]['length']:g} slides"
        )


if __name__ == "__main__":
    sys.exit(main())
