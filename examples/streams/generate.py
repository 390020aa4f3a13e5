"""Land sensor readings in a directory, one csv file at a time, as an upstream writer would.

Each file holds a few seconds of readings from three sensors, shuffled by up to 3 s; a
punctuation row follows now and then; one reading arrives far too late and one line is
malformed, so the demo shows what WQL does with them. Files are written under a temporary
name and renamed, so a reader never sees half a file.

    python examples/streams/generate.py DIR [--files N] [--pause SECONDS]
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import time
from pathlib import Path

START = datetime.datetime(2024, 6, 1, 12, 0, 0)
SENSORS = ("north", "south", "roof")


def readings(second: int, rng: random.Random) -> list[str]:
    lines = []
    for offset in range(5):  # five seconds per file, one reading per sensor and second
        for sensor in SENSORS:
            disorder = rng.uniform(-3, 0) if rng.random() < 0.3 else 0.0
            at = START + datetime.timedelta(seconds=second + offset + disorder)
            temp = 20 + 5 * (sensor == "roof") + rng.gauss(0, 1)
            lines.append(f"{at:%Y-%m-%d %H:%M:%S.%f},{sensor},{temp:.2f},")
    rng.shuffle(lines)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between files")
    args = parser.parse_args()
    args.directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    for index in range(args.files):
        lines = readings(5 * index, rng)
        if index == 3:
            lines.append(f"{START:%Y-%m-%d %H:%M:%S},north,19.50,")  # a minute late: kept apart, counted
            lines.append("12:00 yesterday,south,oops,")  # malformed: kept apart, counted
        if index % 2 == 1:  # everything before this second has arrived
            lines.append(f"{START + datetime.timedelta(seconds=5 * index + 2):%Y-%m-%d %H:%M:%S},,,punctuation")
        hidden = args.directory / f".part-{index:04d}.csv.tmp"
        hidden.write_text("ts,sensor,temp,marker\n" + "\n".join(lines) + "\n")
        os.replace(hidden, args.directory / f"part-{index:04d}.csv")
        print(f"generator: landed part-{index:04d}.csv ({len(lines)} rows)", flush=True)
        time.sleep(args.pause)


if __name__ == "__main__":
    main()
