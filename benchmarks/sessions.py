"""Sessions and frames: WQL against Spark's native session_window and a tumbling aggregation.

    python benchmarks/sessions.py [--rows N] [--plan auto|fold|starts|scan] [--case session,threshold,delta]
                                  [--repeat R] [--before] [--json]

N rows (default 5,000,000), 100 keys, each key a reading every 10 s; about 50
readings per session (a pause of 10 minutes after each 50), per slow-down (50
readings below 40 then 50 above) and per plateau (the value moves by 10 after
each 50 readings, and by less than 1 within them). Three cases, each with count,
sum and max of the value per window:

- session:   [SESSION GAP 60 SECONDS WATTR ts PATTR k] against Spark's
             groupBy(k, session_window(ts, "60 seconds"));
- threshold: [FRAME THRESHOLD (v < 40) WATTR ts PATTR k] (Spark has no native form);
- delta:     [FRAME DELTA 5 ON v WATTR ts PATTR k] (no native form either).

Each is also compared with a tumbling aggregation of the same data into windows of
about the same size (500 s, 50 readings). With --before, also the plan WQL chose
before its JVM fold (starts for sessions and threshold frames, the fold in numpy for
delta frames), interleaved with the others. The contenders run in one process on the
same cached data, each forced to compute every output row, best of --repeat runs.
Read the ratios: the machines are shared and noisy. --json prints one line per case
with `case`, `wql_s`, `native_s` (session only), `tumbling_s` and `before_s` (--before).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from harness import described, session, timed, warm_up

KEYS = 100
STEP_SECONDS = 10  # between a key's readings
RUN = 50  # readings per session, slow-down and plateau
PAUSE_SECONDS = 600  # between sessions: far more than the gap
GAP_SECONDS = 60
TUMBLING_SECONDS = RUN * STEP_SECONDS

QUERIES = {
    "session": f"[SESSION GAP {GAP_SECONDS} SECONDS WATTR ts PATTR k]",
    "threshold": "[FRAME THRESHOLD (v < 40) WATTR ts PATTR k]",
    "delta": "[FRAME DELTA 5 ON v WATTR ts PATTR k]",
}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is kept")
    parser.add_argument("--plan", default="auto", help="force WQL's plan (fold, starts, scan) instead of its choice")
    parser.add_argument("--case", default="session,threshold,delta", help="comma-separated cases to run")
    parser.add_argument("--json", action="store_true", help="print one JSON object per case")
    parser.add_argument("--before", action="store_true", help="also time the plan chosen before the JVM fold")
    parser.add_argument("--master", default="local[*]")
    return parser.parse_args()


def main() -> int:
    args = arguments()
    from pyspark.sql import functions as F

    import wql

    spark = session(args.master, "sessions and frames")
    i = (F.col("id") / KEYS).cast("long")  # the reading's number within its key
    block = (i / RUN).cast("long")
    data = (
        spark.range(args.rows)
        .select(
            (F.col("id") % KEYS).cast("int").alias("k"),
            F.timestamp_seconds(block * (RUN * STEP_SECONDS + PAUSE_SECONDS) + (i % RUN) * STEP_SECONDS).alias("ts"),
            # slow-downs: 50 readings below 40, 50 above; plateaus: +10 every 50 readings, noise below 1
            (F.when(block % 2 == 0, 30.0).otherwise(60.0) + (block % 7) + F.rand(7)).alias("v"),
        )
        .cache()
    )
    data.count()
    rows: list[dict[str, Any]] = []
    for case in args.case.split(","):
        query = wql.compile(
            f"SELECT k, count(*) AS n, sum(v) AS total, max(v) AS top FROM bench {QUERIES[case]}",
            streams={"bench": data},
            plan=args.plan,
        )

        def tumbling() -> Any:
            return data.groupBy("k", F.window("ts", f"{TUMBLING_SECONDS} seconds")).agg(
                F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"), F.max("v").alias("top")
            )

        runs = {"wql": lambda query=query: query.run(spark, bench=data), "tumbling": tumbling}
        if args.before:
            earlier = wql.compile(
                f"SELECT k, count(*) AS n, sum(v) AS total, max(v) AS top FROM bench {QUERIES[case]}",
                streams={"bench": data},
                plan="fold" if case == "delta" else "starts",
            )

            def before(earlier: Any = earlier) -> Any:
                spark.conf.set("spark.wql.combine", "arrow")  # the fold in numpy, as without the jar
                try:
                    return earlier.run(spark, bench=data)
                finally:
                    spark.conf.unset("spark.wql.combine")

            runs["before"] = before
        if case == "session":

            def native() -> Any:
                return data.groupBy("k", F.session_window("ts", f"{GAP_SECONDS} seconds")).agg(
                    F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"), F.max("v").alias("top")
                )

            runs["native"] = native
        warm_up(runs)
        seconds = timed(runs, args.repeat)
        row: dict[str, Any] = {"case": case, "plan": query.plan, "wql_s": round(seconds["wql"], 3)}
        if "native" in seconds:
            row["native_s"] = round(seconds["native"], 3)
        row["tumbling_s"] = round(seconds["tumbling"], 3)
        if "before" in seconds:
            row["before_s"] = round(seconds["before"], 3)
            row["before_over_wql"] = round(seconds["before"] / seconds["wql"], 2)
        if "native_s" in row:
            row["native_over_wql"] = round(seconds["native"] / seconds["wql"], 2)
        row["wql_over_tumbling"] = round(seconds["wql"] / seconds["tumbling"], 2)
        row["where"] = described(args.master)
        rows.append(row)
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            native_text = ""
            if "native_s" in row:
                native_text = (
                    f"  session_window {row['native_s']:.2f}s  native/wql {row['native_s'] / row['wql_s']:.1f}x"
                )
            print(
                f"{case} ({query.plan}): wql {row['wql_s']:.2f}s{native_text}  tumbling {row['tumbling_s']:.2f}s"
                f"  wql/tumbling {row['wql_s'] / row['tumbling_s']:.2f}x",
                flush=True,
            )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
