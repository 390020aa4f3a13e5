"""Random interval-event streams for the differential tests of the intervals plans (issue 14).

Each stream holds events of random length: zero-length points, events longer
than many windows, open-ended events (NULL end), malformed ones (end < start),
NULL starts, NaN and infinities among the values. The same events are given on
BIGINT (s, e), TIMESTAMP (ts, te), DOUBLE (ds, de) and DECIMAL(10,2) (ms, me)
attributes. Many cases run as one Spark job (case_id first in GROUP BY or
PATTR), as in tests/differential.py.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from decimal import Decimal
from functools import partial
from typing import Any

from hypothesis import strategies as st

from tests import differential

BASE = datetime(2024, 1, 1)
SCHEMA = (
    "case_id INT, seq BIGINT, k STRING, v DOUBLE, n INT, s BIGINT, e BIGINT, ts TIMESTAMP, te TIMESTAMP, "
    "ds DOUBLE, de DOUBLE, ms DECIMAL(10,2), me DECIMAL(10,2)"
)
STREAM = f"CREATE STREAM s ({SCHEMA}) ROW_NUM seq;\n"
SPECIALS = (math.nan, math.inf, -math.inf)


@st.composite
def events(draw: st.DrawFn, count: int = 5, max_rows: int = 12, long: int = 60) -> list[dict[str, Any]]:
    """Rows of `count` random streams of interval events (see the module docstring)."""
    values = st.one_of(st.none(), st.integers(-20, 20).map(lambda q: q / 4), st.sampled_from(SPECIALS))
    lengths = st.one_of(
        st.just(0),  # a point event
        st.integers(1, 8),
        st.integers(9, long),  # longer than many windows
        st.none(),  # open-ended
        st.integers(-5, -1),  # malformed: ends before it starts
    )
    rows: list[dict[str, Any]] = []
    for case_id in range(count):
        for seq in range(draw(st.integers(0, max_rows))):
            start = draw(st.one_of(st.integers(-10, 50), st.integers(-10, 50), st.none()))
            length = draw(lengths)
            quarter = draw(st.sampled_from([0, 0, 0.25, 0.5]))
            rows.append(
                row(
                    case_id,
                    seq,
                    draw(st.sampled_from(["a", "b", None])),
                    draw(values),
                    draw(st.one_of(st.none(), st.integers(-3, 9))),
                    start,
                    None if start is None or length is None else start + length,
                    quarter,
                )
            )
    return rows


def row(
    case_id: int, seq: int, k: str | None, v: float | None, n: int | None, s: int | None, e: int | None, frac: float
) -> dict[str, Any]:
    """One event on every attribute type; DOUBLE and DECIMAL bounds are shifted by `frac` (edges inside cells)."""

    def at(value: int | None, shift: float) -> tuple[Any, Any, Any]:
        if value is None:
            return None, None, None
        return BASE + timedelta(seconds=value), float(value) + shift, Decimal(str(value + shift))

    ts, ds, ms = at(s, frac)
    te, de, me = at(e, frac)  # the same shift: a point event stays one
    return {
        "case_id": case_id,
        "seq": seq,
        "k": k,
        "v": v,
        "n": n,
        "s": s,
        "e": e,
        "ts": ts,
        "te": te,
        "ds": ds,
        "de": de,
        "ms": ms,
        "me": me,
    }


# Building the DataFrame, normalizing the rows and comparing them with the reference as the other
# differential tests do, over this module's stream.
frame = partial(differential.frame, schema=SCHEMA)
compare = partial(differential.compare, stream=STREAM, schema=SCHEMA)
