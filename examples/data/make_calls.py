"""Regenerate calls.csv: a small phone company's calls over one day, in three regions.

Calls start through the day, more in office hours; most last a few minutes, some an hour or more.
Each call's cost is a connection fee plus a rate per minute. The last few calls of the day are
still going on when the file is written: their `ended` is empty (open-ended events). Lines are in
order of the call's start. Deterministic: `python examples/data/make_calls.py` rewrites the same file.
"""

import csv
import random
from datetime import datetime, timedelta
from pathlib import Path

START = datetime(2024, 3, 15, 6, 0, 0)
REGIONS = {"north": 0.05, "south": 0.04, "west": 0.06}  # rate per minute
OPEN = 5  # calls still going on at the end of the file


def main() -> None:
    rng = random.Random(14)
    rows = []
    at = START
    number = 0
    while at < START + timedelta(hours=16):
        office = 9 <= at.hour < 18
        at += timedelta(seconds=rng.randint(30, 420 if office else 1200))
        number += 1
        region = rng.choice(sorted(REGIONS))
        minutes = rng.expovariate(1 / 6) if rng.random() < 0.9 else rng.uniform(45, 150)
        ended = at + timedelta(seconds=round(minutes * 60))
        cost = round(0.10 + REGIONS[region] * minutes, 2)
        rows.append([f"c{number:04d}", region, at, ended, cost])
    for row in rows[-OPEN:]:
        row[3] = None  # still going on: no end yet, nor a cost to charge
        row[4] = None
    path = Path(__file__).with_name("calls.csv")
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["call_id", "region", "started", "ended", "cost"])
        for call_id, region, started, ended, cost in rows:
            end = "" if ended is None else ended.isoformat(" ")
            writer.writerow([call_id, region, started.isoformat(" "), end, cost])


if __name__ == "__main__":
    main()
