"""Regenerate traffic.csv: speed readings from 8 freeway segments over two hours.

Readings come every 30 s per segment with a little jitter, and about one in
fifty arrives late (its line sits after newer readings), as sensor feeds do.
Deterministic: `python examples/data/make_traffic.py` rewrites the same file.
"""

import csv
import random
from datetime import datetime, timedelta
from pathlib import Path

START = datetime(2024, 3, 15, 8, 0, 0)
SEGMENTS = [f"I5-{n:02d}" for n in range(1, 9)]


def main() -> None:
    rng = random.Random(2005)
    rows = []
    for tick in range(240):
        for index, seg in enumerate(SEGMENTS):
            ts = START + timedelta(seconds=tick * 30 + rng.randint(0, 29), milliseconds=rng.randint(0, 999))
            rush = 1.0 - 0.45 * max(0.0, 1 - abs(tick - 120) / 60)  # a slowdown around 09:00
            speed = round(max(5.0, rng.gauss(62 * rush - index, 6)), 1)
            rows.append((ts, seg, speed))
    rows.sort(key=lambda r: r[0])
    arrival = list(rows)
    for i in range(len(arrival) - 1, 0, -1):  # about 2% arrive a few rows late
        if rng.random() < 0.02:
            j = min(len(arrival) - 1, i + rng.randint(1, 6))
            arrival.insert(j, arrival.pop(i))
    out = Path(__file__).with_name("traffic.csv")
    with out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["seg_id", "speed", "ts"])
        for ts, seg, speed in arrival:
            writer.writerow([seg, speed, ts.isoformat(sep=" ", timespec="milliseconds")])


if __name__ == "__main__":
    main()
