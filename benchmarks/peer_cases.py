"""The windows WQL and Apache Flink are compared on, written once for both engines.

Plain Python with no import of WQL, Spark or Flink: benchmarks/peer_flink.py runs in Flink's own
virtual environment (`make peers` builds it), benchmarks/peer_spark.py in WQL's, and both read their
cases, their SQL and the csv layout from here, so the two sides cannot drift apart.

The rows are `k INT, v DOUBLE, ts TIMESTAMP` in csv files without a header, timestamps as
`2024-01-01 00:00:00.250` (UTC, milliseconds), which Spark's csv reader and Flink's csv format both parse.
Every window is given in whole seconds. The aggregates are count, sum and max of v per key and window.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

COLUMNS = ("k", "v", "ts")
SPARK_SCHEMA = "k INT, v DOUBLE, ts TIMESTAMP"
EPOCH = datetime.datetime(1970, 1, 1)


@dataclass(frozen=True)
class Case:
    """One window. kind: tumble (size), hop (size, slide), cumulate (size, slide: the step), session (size: the
    gap). Flink's HOP and CUMULATE take (slide, size) and (step, max size); WQL's RANGE is the size."""

    kind: str
    size: int
    slide: int = 0

    @property
    def name(self) -> str:
        """How Flink's SQL writes the window, with its arguments in the order a reader says them."""
        if self.kind in ("hop", "cumulate"):
            return f"{self.kind.upper()}({spoken(self.size)}, {spoken(self.slide)})"
        return f"{self.kind.upper()}({spoken(self.size)})"

    @property
    def aligned(self) -> bool:
        """A hop whose size is a whole number of slides: its windows start on multiples of the slide in
        WQL's grid too (which puts window ends there), so WQL needs no ALIGN for Flink's windows."""
        return self.kind != "hop" or self.size % self.slide == 0


# The benchmark's windows (benchmarks/peers.py): one of each of Flink's window functions, three hops.
BENCH_CASES = (
    Case("tumble", 60),
    Case("hop", 300, 60),
    Case("hop", 3600, 60),
    Case("hop", 90, 40),
    Case("cumulate", 3600, 300),
    Case("session", 30),
)


def spoken(seconds: int) -> str:
    """90 -> '90 s', 300 -> '5 min', 3600 -> '1 h': the case's name in a table."""
    for unit, name in ((3600, "h"), (60, "min")):
        if seconds % unit == 0:
            return f"{seconds // unit} {name}"
    return f"{seconds} s"


# --- WQL ---------------------------------------------------------------------------------------------


def wql_window(case: Case, slack: int | None = None) -> str:
    """The window spec; `slack` (seconds) for a stream whose rows arrive that far out of order. A hop whose
    size is not a whole number of slides takes ALIGN START 0 SECONDS: WQL's grid puts window ends on multiples
    of the slide, Flink's puts starts there."""
    tail = f" SLACK {slack} SECONDS" if slack is not None else ""
    if case.kind == "session":
        return f"[SESSION GAP {case.size} SECONDS WATTR ts PATTR k{tail}]"
    spec = f"RANGE {case.size} SECONDS"
    if case.kind in ("hop", "cumulate"):
        spec += f" SLIDE {case.slide} SECONDS"
    if case.kind == "cumulate":
        spec += " CUMULATE"
    if not case.aligned:
        spec += " ALIGN START 0 SECONDS"
    return f"[{spec} WATTR ts{tail}]"


def wql_query(case: Case, stream: str, path: str, slack: int | None = None) -> str:
    """The whole WQL text over the csv files at `path`."""
    group = "" if case.kind == "session" else " GROUP BY k"
    return (
        f"CREATE STREAM {stream} ({SPARK_SCHEMA}) FROM '{path}' FORMAT csv;\n"
        f"SELECT k, count(*) AS n, sum(v) AS total, max(v) AS top FROM {stream} {wql_window(case, slack)}{group}"
    )


# --- Flink SQL ---------------------------------------------------------------------------------------


def interval(seconds: int) -> str:
    """A Flink SQL interval: in the largest unit that divides it (Flink's SECOND, MINUTE and HOUR take at most
    two digits), else as hours to seconds."""
    for unit, name in ((3600, "HOUR"), (60, "MINUTE"), (1, "SECOND")):
        if seconds % unit == 0 and seconds // unit < 100:
            return f"INTERVAL '{seconds // unit}' {name}"
    hours, rest = divmod(seconds, 3600)
    return f"INTERVAL '{hours}:{rest // 60:02d}:{rest % 60:02d}' HOUR TO SECOND"


def flink_table(name: str, path: str, watermark: int | None) -> str:
    """The csv files as a Flink table; `watermark` (seconds behind the largest timestamp seen) for streaming
    mode, which needs one for event-time windows. Batch mode ignores it."""
    mark = f", WATERMARK FOR ts AS ts - {interval(watermark)}" if watermark is not None else ""
    return (
        f"CREATE TABLE {name} (k INT, v DOUBLE, ts TIMESTAMP(3){mark}) "
        f"WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')"
    )


def flink_tvf(case: Case, table: str) -> str:
    """The query with Flink's window table-valued function (its SQL since 1.13)."""
    if case.kind == "tumble":
        call = f"TUMBLE(TABLE {table}, DESCRIPTOR(ts), {interval(case.size)})"
    elif case.kind == "hop":
        call = f"HOP(TABLE {table}, DESCRIPTOR(ts), {interval(case.slide)}, {interval(case.size)})"
    elif case.kind == "cumulate":
        call = f"CUMULATE(TABLE {table}, DESCRIPTOR(ts), {interval(case.slide)}, {interval(case.size)})"
    else:
        call = f"SESSION(TABLE {table} PARTITION BY k, DESCRIPTOR(ts), {interval(case.size)})"
    return (
        "SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS total, MAX(v) AS top "
        f"FROM TABLE({call}) GROUP BY k, window_start, window_end"
    )


def flink_group_window(case: Case, table: str) -> str | None:
    """The same query with Flink's older group-window functions (GROUP BY HOP(ts, …)), which it keeps
    beside the table-valued ones and which run some windows they refuse; CUMULATE has no such form."""
    if case.kind == "cumulate":
        return None
    arguments = (
        f"ts, {interval(case.slide)}, {interval(case.size)}" if case.kind == "hop" else f"ts, {interval(case.size)}"
    )
    call = case.kind.upper()
    return (
        f"SELECT k, {call}_START({arguments}) AS window_start, {call}_END({arguments}) AS window_end, "
        f"COUNT(*) AS n, SUM(v) AS total, MAX(v) AS top FROM {table} GROUP BY k, {call}({arguments})"
    )


# --- the rows ----------------------------------------------------------------------------------------


def csv_line(k: int, v: float, millis: int) -> str:
    """One row as both engines read it: the timestamp in UTC to the millisecond."""
    stamp = EPOCH + datetime.timedelta(milliseconds=millis)
    return f"{k},{v!r},{stamp:%Y-%m-%d %H:%M:%S}.{millis % 1000:03d}\n"


def millis_of(stamp: datetime.datetime) -> int:
    """A timestamp either engine returned (naive, UTC) as milliseconds since the epoch."""
    return (stamp - EPOCH) // datetime.timedelta(milliseconds=1)
