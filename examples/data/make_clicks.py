"""Regenerate clicks.csv: a web shop's click stream, twelve users over one day.

Each user comes back a few times a day; a visit is a burst of clicks seconds to a few minutes apart,
and visits are hours apart, so sessions with a 30-minute gap find the visits. A click on the
checkout page carries the order's amount (NULL elsewhere). About one click in thirty arrives late
(its line sits after newer clicks), as collected logs do. Deterministic:
`python examples/data/make_clicks.py` rewrites the same file.
"""

import csv
import random
from datetime import datetime, timedelta
from pathlib import Path

START = datetime(2024, 3, 15, 7, 0, 0)
USERS = [f"u{n:02d}" for n in range(1, 13)]
PAGES = ["home", "search", "product", "product", "product", "reviews", "cart"]


def main() -> None:
    rng = random.Random(2016)
    rows = []
    for user in USERS:
        at = START + timedelta(minutes=rng.randint(0, 180))
        for _visit in range(rng.randint(2, 4)):
            clicks = rng.randint(2, 14)
            for click in range(clicks):
                page = "home" if click == 0 else rng.choice(PAGES)
                amount = None
                if click == clicks - 1 and rng.random() < 0.4:
                    page, amount = "checkout", round(rng.uniform(8, 240), 2)
                rows.append((at, user, page, amount))
                at += timedelta(seconds=rng.randint(4, 420), milliseconds=rng.randint(0, 999))
            at += timedelta(hours=rng.uniform(1.5, 5))
    rows.sort(key=lambda r: r[0])
    arrival = list(rows)
    for i in range(len(arrival) - 1, 0, -1):
        if rng.random() < 0.033:
            j = min(len(arrival) - 1, i + rng.randint(1, 5))
            arrival.insert(j, arrival.pop(i))
    out = Path(__file__).with_name("clicks.csv")
    with out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["user_id", "page", "ts", "amount"])
        for ts, user, page, amount in arrival:
            writer.writerow([user, page, ts.isoformat(sep=" ", timespec="milliseconds"), "" if amount is None else amount])


if __name__ == "__main__":
    main()
