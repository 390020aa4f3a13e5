"""The reference evaluator against windows worked out by hand from docs/semantics.md §2.

Every expected result below was computed on paper from the extent formulas, not
by running code; the comments show the working. The reference is the oracle for
every Spark plan, so it is pinned down case by case here.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

import wql
from wql.runtime.reference import evaluate_query

STREAM = "CREATE STREAM s (k STRING, v DOUBLE, t BIGINT, e BIGINT, ts TIMESTAMP);\n"


def run(query: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    program = wql.analyze(STREAM + query)
    assert not program.errors, program.errors
    [statement] = program.queries
    assert statement.query is not None
    return evaluate_query(statement.query, rows)


def windows(result: list[dict[str, Any]], *columns: str) -> list[tuple[Any, ...]]:
    return [tuple(r[c] for c in ("wid", *columns)) for r in result]


def r(
    k: str | None = "a", v: float | None = 1.0, t: int | None = 0, e: int | None = None, ts: datetime | None = None
) -> dict[str, Any]:
    return {"k": k, "v": v, "t": t, "e": e, "ts": ts}


def test_a_tuple_on_an_edge_belongs_to_the_window_that_starts_there() -> None:
    # RANGE 10 SLIDE 5: window w = [5(w+1) - 10, 5(w+1)). t = 10 starts w = 3 = [10, 20) and lies in
    # w = 2 = [5, 15); w = 1 = [0, 10) ends just before it.
    result = run("SELECT count(*) AS n FROM s [RANGE 10 SLIDE 5 WATTR t]", [r(t=10)])
    assert windows(result, "window_start", "window_end", "n") == [(2, 5, 15, 1), (3, 10, 20, 1)]


def test_a_tuple_just_before_an_edge_stays_out_of_the_next_window() -> None:
    # t = 9: w = 1 is [0, 10), w = 2 is [5, 15); w = 3 = [10, 20) starts after 9.
    result = run("SELECT count(*) AS n FROM s [RANGE 10 SLIDE 5 WATTR t]", [r(t=9)])
    assert windows(result, "window_start", "window_end") == [(1, 0, 10), (2, 5, 15)]


def test_slide_greater_than_range_leaves_gaps() -> None:
    # RANGE 3 SLIDE 5: window w = [5(w+1) - 3, 5(w+1)): [2, 5), [7, 10), [12, 15), …
    # t = 0, 1 are in a gap; 2 and 4 are in w = 0; 5 and 6 in a gap; 9 in w = 1; 10 in a gap.
    rows = [r(t=t) for t in (0, 1, 2, 4, 5, 6, 9, 10)]
    result = run("SELECT count(*) AS n FROM s [RANGE 3 SLIDE 5 WATTR t]", rows)
    assert windows(result, "window_start", "window_end", "n") == [(0, 2, 5, 2), (1, 7, 10, 1)]


def test_partial_tuple_windows_at_the_start() -> None:
    # RANGE 3 ROWS SLIDE 1 ROW over row_num: w holds rows [w - 2, w]; w = 0 holds row 0 only.
    rows = [r(v=float(i)) for i in range(4)]
    result = run("SELECT count(*) AS n, sum(v) AS total FROM s [RANGE 3 ROWS SLIDE 1 ROW]", rows)
    assert windows(result, "window_start", "window_end", "n", "total") == [
        (0, -2, 1, 1, 0.0),  # rows {0}: partial
        (1, -1, 2, 2, 1.0),  # rows {0, 1}: partial
        (2, 0, 3, 3, 3.0),
        (3, 1, 4, 3, 6.0),
        (4, 2, 5, 2, 5.0),  # rows {2, 3}: the stream ended
        (5, 3, 6, 1, 3.0),
    ]


def test_align_moves_the_grid() -> None:
    # ALIGN 3, RANGE 4 SLIDE 4: window w = [3 + 4(w+1) - 4, 3 + 4(w+1)) = [3 + 4w, 7 + 4w).
    # t = 2 is in w = -1 = [-1, 3): a value before the origin; t = 3 and 6 in w = 0; t = 7 in w = 1.
    rows = [r(t=t) for t in (2, 3, 6, 7)]
    result = run("SELECT count(*) AS n FROM s [RANGE 4 SLIDE 4 WATTR t ALIGN 3]", rows)
    assert windows(result, "window_start", "window_end", "n") == [(-1, -1, 3, 1), (0, 3, 7, 2), (1, 7, 11, 1)]


def test_align_start_matches_spark_window_starts() -> None:
    # ALIGN START 1 with RANGE 4 SLIDE 2: windows start at 1 + 2k, i.e. end at 5 + 2k.
    result = run("SELECT count(*) AS n FROM s [RANGE 4 SLIDE 2 WATTR t ALIGN START 1]", [r(t=4)])
    assert [(x["window_start"], x["window_end"]) for x in result] == [(1, 5), (3, 7)]


def test_nulls_belong_to_no_window_and_aggregates_skip_null_values() -> None:
    rows = [r(t=None, v=5.0), r(t=1, v=None), r(t=2, v=3.0), r(k=None, t=2, v=1.0)]
    result = run("SELECT k, count(*) AS n, count(v) AS nv, sum(v) AS total FROM s [RANGE 10 WATTR t] GROUP BY k", rows)
    # One window [0, 10); t = NULL is in none; k = NULL is a group of its own.
    assert windows(result, "k", "n", "nv", "total") == [(0, None, 1, 1, 1.0), (0, "a", 2, 1, 3.0)]


def test_where_filters_contents_but_never_renumbers_rows() -> None:
    # RANGE 2 ROWS SLIDE 2 ROWS: windows hold rows {0, 1}, {2, 3}, {4, 5}. WHERE v > 0 drops
    # rows 1 and 2 from the contents; if WHERE renumbered, the windows would be {0, 3}, {4, 5}.
    values = [1.0, -1.0, -1.0, 4.0, 5.0, 6.0]
    rows = [r(v=v) for v in values]
    result = run("SELECT sum(v) AS total FROM s [RANGE 2 ROWS SLIDE 2 ROWS] WHERE v > 0", rows)
    assert windows(result, "total") == [(0, 1.0), (1, 4.0), (2, 11.0)]


def test_partitioned_tuple_windows_count_rows_per_partition() -> None:
    # PATTR k: row positions within each partition. a: rows 0, 2, 4 (positions 0, 1, 2); b: rows 1, 3.
    rows = [r(k="a", v=1.0), r(k="b", v=10.0), r(k="a", v=2.0), r(k="b", v=20.0), r(k="a", v=3.0)]
    result = run("SELECT sum(v) AS total FROM s [RANGE 2 ROWS SLIDE 2 ROWS PATTR k]", rows)
    assert windows(result, "k", "total") == [(0, "a", 3.0), (0, "b", 30.0), (1, "a", 3.0)]


def test_group_by_splits_the_rows_of_a_tuple_window() -> None:
    # Unlike PATTR, GROUP BY takes 2 rows of the stream, then splits them: {a, b}, {a, b}, {a}.
    rows = [r(k="a", v=1.0), r(k="b", v=10.0), r(k="a", v=2.0), r(k="b", v=20.0), r(k="a", v=3.0)]
    result = run("SELECT k, sum(v) AS total FROM s [RANGE 2 ROWS SLIDE 2 ROWS] GROUP BY k", rows)
    assert windows(result, "k", "total") == [
        (0, "a", 1.0),
        (0, "b", 10.0),
        (1, "a", 2.0),
        (1, "b", 20.0),
        (2, "a", 3.0),
    ]


def test_landmark_windows_grow_from_the_first_window_of_the_data() -> None:
    # RANGE UNBOUNDED SLIDE 10: window w holds t < 10(w+1); reported from w = 1 (t = 12) to the
    # window of the largest value (t = 31: w = 3).
    rows = [r(t=12, v=1.0), r(t=25, v=2.0), r(t=31, v=4.0)]
    result = run("SELECT sum(v) AS total FROM s [RANGE UNBOUNDED SLIDE 10 WATTR t]", rows)
    assert windows(result, "window_start", "window_end", "total") == [
        (1, None, 20, 1.0),
        (2, None, 30, 3.0),
        (3, None, 40, 7.0),
    ]


def test_interval_events_overlap_windows() -> None:
    # RANGE 4 SLIDE 4: windows [0, 4), [4, 8), [8, 12). Event [3, 5) overlaps w = 0 and 1;
    # point event [4, 4) is where 4 is (w = 1); [6, 6) likewise; [9, 8) is malformed.
    rows = [r(t=3, e=5, v=1.0), r(t=4, e=4, v=10.0), r(t=9, e=8, v=100.0)]
    result = run("SELECT sum(v) AS total FROM s [RANGE 4 SLIDE 4 WATTR (t, e)]", rows)
    assert windows(result, "total") == [(0, 1.0), (1, 11.0)]


def test_open_ended_events_last_to_the_end_of_the_data() -> None:
    # Event from 1 with no end, event [9, 10): windows up to the last starting at or before 10.
    rows = [r(t=1, e=None, v=1.0), r(t=9, e=10, v=10.0)]
    result = run("SELECT sum(v) AS total FROM s [RANGE 4 SLIDE 4 WATTR (t, e)]", rows)
    assert windows(result, "window_start", "total") == [(0, 0, 1.0), (1, 4, 1.0), (2, 8, 11.0)]


def test_a_malformed_event_does_not_extend_the_end_of_the_data() -> None:
    # Event from 1 with no end; [9, 10); [13, 12) is malformed. The data ends at 10, as without it:
    # windows up to [8, 12), none starting at 12.
    rows = [r(t=1, e=None, v=1.0), r(t=9, e=10, v=10.0), r(t=13, e=12, v=100.0)]
    result = run("SELECT sum(v) AS total FROM s [RANGE 4 SLIDE 4 WATTR (t, e)]", rows)
    assert windows(result, "window_start", "total") == [(0, 0, 1.0), (1, 4, 1.0), (2, 8, 11.0)]


def test_nan_and_infinities_reach_only_the_windows_holding_them() -> None:
    # RANGE 4 SLIDE 4: [0, 4) holds 1 and ∞; [4, 8) holds 2 and 3; [8, 12) holds NaN and 5;
    # [12, 16) holds ∞ and −∞. Sums follow IEEE; a variance meets ∞ − ∞ or NaN (Spark's answer).
    inf, nan = float("inf"), float("nan")
    values = [(1, 1.0), (2, inf), (5, 2.0), (6, 3.0), (9, nan), (10, 5.0), (13, inf), (14, -inf)]
    rows = [r(t=t, v=v) for t, v in values]
    result = run("SELECT sum(v) AS s, stddev(v) AS sd FROM s [RANGE 4 SLIDE 4 WATTR t]", rows)
    got = [(w, str(s), str(sd)) for w, s, sd in windows(result, "s", "sd")]
    assert got == [(0, "inf", "nan"), (1, "5.0", str(0.5**0.5)), (2, "nan", "nan"), (3, "nan", "nan")]


def test_ties_name_one_window_in_slide_by_tuple() -> None:
    # RANGE 5 RATTR t SLIDE 1 ROW: windows are the values {3, 7}; (w - 5, w] includes all ties.
    rows = [r(t=3, v=1.0), r(t=7, v=2.0), r(t=3, v=4.0)]
    result = run("SELECT count(*) AS n, sum(v) AS total FROM s [RANGE 5 RATTR t SLIDE 1 ROW]", rows)
    assert windows(result, "window_start", "window_end", "n", "total") == [(3, -2, 3, 2, 5.0), (7, 2, 7, 3, 7.0)]


def test_slide_by_rows_and_by_rank_differ_when_arrival_is_out_of_order() -> None:
    # Arrival t = 30, 10, 20, 40. SLIDE 2 ROWS over row_num: arrivals 0 and 2 name windows 30 and 20.
    # Over rank(t): t-order 10, 20, 30, 40, ranks 0 and 2 name windows 10 and 30.
    rows = [r(t=t) for t in (30, 10, 20, 40)]
    by_rows = run("SELECT count(*) AS n FROM s [RANGE 15 RATTR t SLIDE 2 ROWS SATTR row_num]", rows)
    by_rank = run("SELECT count(*) AS n FROM s [RANGE 15 RATTR t SLIDE 2 ROWS SATTR rank(t)]", rows)
    assert windows(by_rows, "n") == [(20, 2), (30, 2)]  # (5, 20] = {10, 20}; (15, 30] = {20, 30}
    assert windows(by_rank, "n") == [(10, 1), (30, 2)]


def test_where_keeps_window_ids_of_filtered_tuples() -> None:
    # The window named by t = 5 exists although WHERE drops that tuple: it still holds t = 3.
    rows = [r(t=3, v=1.0), r(t=5, v=-1.0)]
    result = run("SELECT count(*) AS n FROM s [RANGE 5 RATTR t SLIDE 1 ROW] WHERE v > 0", rows)
    assert windows(result, "n") == [(3, 1), (5, 1)]


def test_time_windows_use_timestamps() -> None:
    base = datetime(2024, 1, 1)
    rows = [{**r(), "ts": base + timedelta(seconds=s)} for s in (0, 59, 60)]
    result = run("SELECT count(*) AS n FROM s [RANGE 1 MINUTE WATTR ts]", rows)
    assert [(x["window_start"], x["n"]) for x in result] == [(base, 2), (base + timedelta(minutes=1), 1)]


@pytest.mark.parametrize(
    ("aggregate", "expected"),
    [
        ("median(v)", 2.5),
        ("percentile(v, 0.25)", 1.75),
        ("stddev(v)", 1.2909944487358056),
        ("stddev_pop(v)", 1.118033988749895),
        ("count(DISTINCT k)", 2),
        ("min_by(k, v)", "a"),
        ("max_by(k, v)", "b"),
    ],
)
def test_aggregates(aggregate: str, expected: Any) -> None:
    rows = [r(k="a", v=1.0), r(k="a", v=2.0), r(k="b", v=3.0), r(k="b", v=4.0)]
    [row] = run(f"SELECT {aggregate} AS x FROM s [RANGE 10 WATTR t]", rows)
    assert row["x"] == pytest.approx(expected) if isinstance(expected, float) else row["x"] == expected


def test_a_late_event_places_align_firsts_grid_but_not_the_datas_end() -> None:
    """A stream's late event is given to the reference only to place ALIGN FIRST's grid: it is not in the data
    admitted, so its end must not carry an open-ended event's windows further (semantics §8.10). Found by the
    streaming differential test of ALIGN FIRST over interval events, where the model emitted one more window
    per key at the drain than the stream did."""
    query = wql.compile(
        "CREATE STREAM s (x BIGINT, y BIGINT, v DOUBLE);\n"
        "SELECT count(*) AS n FROM s [RANGE 7 SLIDE 5 WATTR (x, y) ALIGN FIRST]"
    ).query
    open_ended = {"x": 0, "y": None, "v": 1.0}
    got = evaluate_query(query, [open_ended], arrivals=[0], late=[(1, {"x": -3, "y": 30, "v": 1.0})])
    assert [(row["window_start"], row["n"]) for row in got] == [(-2, 1)]  # the data ends at 0, where it starts
