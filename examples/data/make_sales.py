"""Regenerate sales.csv: a small shop's orders in two New York stores, January to April 2024.

Orders come through the opening hours (09:00 to 21:00 New York time), more on Saturdays; each has
an amount in dollars. Timestamps are written in UTC, as a till system logs them, so a New York
evening order is dated the next day in the file; the calendar windows of examples/sales.wql put it
back on its local day. The data crosses the change to daylight saving time (2024-03-10, a 23-hour
day) and a leap day. Deterministic: `python examples/data/make_sales.py` rewrites the same file.
"""

import csv
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

NEW_YORK = ZoneInfo("America/New_York")
FIRST = datetime(2024, 1, 1, tzinfo=NEW_YORK)
DAYS = 121  # to 2024-04-30
STORES = {"downtown": 6, "uptown": 4}  # orders on a weekday, on average


def main() -> None:
    rng = random.Random(48)
    rows = []
    for day in range(DAYS):
        date = (FIRST + timedelta(days=day)).date()
        for store, usual in STORES.items():
            for _ in range(rng.randint(usual - 2, usual + 2) + (3 if date.weekday() == 5 else 0)):
                local = datetime(date.year, date.month, date.day, 9, tzinfo=NEW_YORK)
                local += timedelta(seconds=rng.randint(0, 12 * 3600 - 1))
                amount = round(rng.lognormvariate(3.4, 0.6), 2)
                rows.append((local.astimezone(UTC), store, amount))
    rows.sort()
    out = Path(__file__).with_name("sales.csv")
    with out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["store", "amount", "ts"])
        for ts, store, amount in rows:
            writer.writerow([store, amount, ts.strftime("%Y-%m-%d %H:%M:%S")])


if __name__ == "__main__":
    main()
