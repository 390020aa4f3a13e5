"""Land sensor readings in a directory, one csv file at a time, as an upstream writer would.

Each file holds a few seconds of readings from three sensors, shuffled by up to 3 s; a
punctuation row follows now and then; one reading arrives far too late and one line is
malformed, so the demo shows what WQL does with them. Files are written under a temporary
name and renamed, so a reader never sees half a file.

    python examples/streams/generate.py DIR [--files N] [--pause SECONDS] [--follow CHECKPOINT]

With --follow, each file after the first waits for the stream's trigger over the one before it (the
checkpoint's commits/N, which Spark writes when trigger N is done), then the pause: the stream
shows each file's windows as it lands, however long Spark takes to start or to run a trigger.
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
    parser.add_argument("--follow", type=Path, help="the stream's checkpoint: land a file once the last was read")
    parser.add_argument("--patience", type=float, default=300.0, help="seconds to wait for a trigger at most")
    args = parser.parse_args()
    args.directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    for index in range(args.files):
        if args.follow is not None and index:
            waited(args.follow / "commits" / str(index - 1), args.patience)
            time.sleep(args.pause)
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
        if args.follow is None:
            time.sleep(args.pause)


def waited(commit: Path, patience: float) -> bool:
    """Wait until Spark has committed a trigger (its commits/N file), at most `patience` seconds."""
    deadline = time.monotonic() + patience
    while not commit.exists():
        if time.monotonic() > deadline:
            print(f"generator: no trigger after {patience:.0f} s; landing the next file anyway", flush=True)
            return False
        time.sleep(0.2)
    return True


if __name__ == "__main__":
    main()
