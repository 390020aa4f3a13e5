"""`SLACK g KAFKA`: Kafka Streams' late-row rule for sliding windows, checked against Kafka's own tests.

Kafka lets a record later than the grace (but not later than grace + size) join only the windows its
key's store holds when it arrives that are still open; windows created later copy windows that may or
may not hold it. The cases and their final windows are those of KStreamSlidingWindowAggregateTest in
apache/kafka: testAggregateLargeInput (its emit-final run, grace 10, where stream time is shared by the
keys), testNoGracePeriodSmallInput, testNoGracePeriodLargeInput and
shouldLogAndMeterWhenSkippingExpiredWindowByGrace. A window's value there is its records' names
concatenated in the order they were added; here, the set of names (a string of one-letter names, or a
tuple).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from wql.compiler.kinds.base import Member
from wql.compiler.kinds.kafka import Replay, close_times, kafka_replay, kafka_windows

# case -> (size, grace, records as (key, name, time) in arrival order,
#          the emit-final output {(key, start): names}, or None, and the store's last values, or None)
CASES: dict[str, tuple[int, int, list[tuple[str, str, int]], dict[tuple[str, int], str] | None, Any]] = {
    "aggregate-large, emit final (grace 10)": (
        10,
        10,
        [
            ("A", "1", 10),
            ("A", "2", 20),
            ("A", "3", 22),
            ("A", "4", 15),
            ("B", "1", 12),
            ("B", "2", 13),
            ("B", "3", 18),
            ("B", "4", 19),
            ("B", "5", 25),
            ("B", "6", 14),
            ("C", "1", 11),
            ("C", "2", 15),
            ("C", "3", 16),
            ("C", "4", 21),
            ("C", "5", 23),
            ("D", "4", 11),
            ("D", "2", 12),
            ("D", "3", 29),
            ("D", "5", 16),
        ],
        {
            ("A", 0): "1",
            ("A", 5): "14",
            ("B", 2): "1",
            ("B", 3): "12",
            ("B", 8): "1236",
            ("C", 5): "2",
            ("C", 6): "23",
        },
        None,
    ),
    "no grace, small": (
        50,
        0,
        [("A", "1", 100), ("A", "2", 105), ("A", "3", 106), ("A", "4", 103), ("A", "5", 113), ("A", "6", 110)],
        {("A", 50): "1", ("A", 55): "12", ("A", 56): "1234"},
        {
            ("A", 50): "1",
            ("A", 55): "12",
            ("A", 56): "1234",
            ("A", 63): "123456",
            ("A", 101): "23456",
            ("A", 104): "2356",
            ("A", 106): "356",
            ("A", 107): "56",
            ("A", 111): "5",
        },
    ),
    "no grace, large": (
        10,
        0,
        [
            ("E", "1", 100),
            ("E", "3", 105),
            ("E", "4", 106),
            ("E", "2", 103),
            ("E", "6", 113),
            ("E", "5", 110),
            ("E", "7", 104),
            ("E", "8", 102),
            ("E", "9", 115),
        ],
        {
            ("E", 90): "1",
            ("E", 95): "13",
            ("E", 96): "1342",
            ("E", 101): "342",
            ("E", 103): "342657",
            ("E", 104): "34657",
        },
        {
            ("E", 90): "1",
            ("E", 95): "13",
            ("E", 96): "1342",
            ("E", 101): "342",
            ("E", 103): "342657",
            ("E", 104): "34657",
            ("E", 105): "34659",
            ("E", 106): "4659",
            ("E", 107): "659",
            ("E", 111): "69",
            ("E", 114): "9",
        },
    ),
    "skipping expired windows by grace": (
        10,
        90,
        [
            ("k", "100", 200),
            ("k", "0", 100),
            ("k", "1", 101),
            ("k", "2", 102),
            ("k", "3", 103),
            ("k", "4", 104),
            ("k", "5", 105),
            ("k", "6", 15),
            ("k", "101", 300),
            ("k", "102", 400),
        ],
        {("k", 190): ("100",), ("k", 290): ("101",)},
        {("k", 190): ("100",), ("k", 290): ("101",), ("k", 390): ("102",)},
    ),
}


def replays(size: int, grace: int, records: list[tuple[str, str, int]]) -> dict[str, Replay]:
    """Each key's replay of the records (key, name, time) in arrival order, stream time shared by the keys."""
    members = [Member(row={"name": name}, row_num=i, a=t, partition=(key,)) for i, (key, name, t) in enumerate(records)]
    closes = close_times(members, grace)
    return {
        key: kafka_replay([(m, closes[id(m)]) for m in members if m.partition == (key,)], size, 1)
        for key in dict.fromkeys(k for k, _, _ in records)
    }


def replayed(size: int, grace: int, records: list[tuple[str, str, int]]) -> tuple[dict[tuple[str, int], set[str]], int]:
    """Every key's store after the records, as {(key, start): names}, and the close time after the last."""
    out: dict[tuple[str, int], set[str]] = {}
    for key, replay in replays(size, grace, records).items():
        for start, held in replay.windows.items():
            out[key, int(start)] = {m.row["name"] for m in held}
    return out, max(t for _, _, t in records) - grace


@pytest.mark.parametrize("case", list(CASES))
def test_kafka_rule_gives_kafkas_windows(case: str) -> None:
    size, grace, records, final, last = CASES[case]
    store, close = replayed(size, grace, records)
    if final is not None:  # emit final: what the store holds of every window closed by the last record
        emitted = {w: names for w, names in store.items() if w[1] + size < close}
        assert emitted == {w: set(names) for w, names in final.items()}
    if last is not None:
        assert store == {w: set(names) for w, names in last.items()}


def test_the_late_records_are_those_kafka_marks_as_skipping_their_windows() -> None:
    """Kafka's test input marks, by comment, the records whose left window the grace skips: B@14, C@11, D@11,
    D@12 and D@16; in the expired-window test, k@100 … k@105 skip theirs and k@15 is dropped."""
    for case, want in (
        ("aggregate-large, emit final (grace 10)", [("B", "6"), ("C", "1"), ("D", "4"), ("D", "2"), ("D", "5")]),
        ("skipping expired windows by grace", [("k", str(n)) for n in range(7)]),
    ):
        size, grace, records, _, _ = CASES[case]
        late = [(key, m.row["name"]) for key, replay in replays(size, grace, records).items() for m in replay.late]
        assert late == want, case


def test_a_record_past_the_grace_joins_only_the_open_windows_stored_when_it_arrives() -> None:
    """Worked cases (size 10, grace 20), one for each way a record past the grace differs from the windows'
    extents: created windows copy a closed one that skipped it; it leaves no trace; a window holds a record
    outside its range."""
    store, _ = replayed(10, 20, [("k", "a", 70), ("k", "b", 78), ("k", "c", 100), ("k", "L", 75), ("k", "d", 80)])
    assert store["k", 71] == {"b", "L", "d"}  # open when L arrived (71 + 10 ≥ 80)
    assert store["k", 70] == {"a", "b", "d"}  # created by d from [68, 78], which had skipped L
    store, _ = replayed(10, 20, [("k", "a", 102), ("k", "b", 81), ("k", "c", 91)])
    assert store == {("k", 81): {"c"}, ("k", 92): {"a"}}  # b is in no window, though [81, 91] is open
    store, _ = replayed(
        10, 20, [("k", "a", 110), ("k", "b", 130), ("k", "c", 138), ("k", "d", 111), ("k", "e", 115), ("k", "f", 125)]
    )
    assert store["k", 115] == {"d", "e", "f"}  # d at 111 lies outside [115, 125]


def test_without_records_past_the_grace_the_rule_gives_the_extents_in_any_order() -> None:
    """Kafka's own promise (testAggregateRandomInput): with the grace never passed, every arrival order gives
    the windows of §2.9 with every record in range."""
    import random

    chooser = random.Random(7)
    for _ in range(300):
        size = chooser.randint(1, 8)
        times = [chooser.randint(0, 40) for _ in range(chooser.randint(1, 12))]
        records = [("k", str(i), t) for i, t in enumerate(times)]
        chooser.shuffle(records)
        store, _ = replayed(size, 1_000, records)
        want = {("k", lo): {n for _, n, t in records if lo <= t <= hi} for lo, hi in kafka_windows(times, size, 1)}
        assert store == want, (size, records)


@pytest.mark.spark
@pytest.mark.parametrize("cuts", [(), (5, 11), (1, 9, 18)])
def test_a_stream_cut_anywhere_gives_kafkas_windows_once(spark: Any, cuts: tuple[int, ...]) -> None:
    """testAggregateLargeInput's emit-final run on a stream (x is the timestamp, case_id the key), cut into
    triggers at `cuts`: the windows the last record closes come out before the drain, as Kafka emits them,
    each once, and the drain adds the rest; all of them are the batch run's."""
    from tests.streaming import compile_stream, run
    from wql.runtime.reference import evaluate_query

    size, grace, records, final, _ = CASES["aggregate-large, emit final (grace 10)"]
    keys = {"A": 1, "B": 2, "C": 3, "D": 4}
    rows = [
        {"case_id": keys[key], "k": name, "v": float(name), "n": 0, "ts": None, "x": t, "y": None, "d": None}
        for key, name, t in records
    ]
    window = f"[RANGE {size} WATTR x SLIDE KAFKA PATTR case_id SLACK {grace} KAFKA]"
    compiled = compile_stream(f"SELECT count(*) AS n, sum(v) AS total FROM s {window}", "replay")
    bounds = [0, *cuts, len(rows)]
    got, reports = run(spark, compiled, [rows[a:b] for a, b in itertools.pairwise(bounds)])
    assert sum(r["late"] for r in reports) == 5  # B@14, C@11, D@11, D@12, D@16: below their close times
    before_drain = {(row["case_id"], row["wid"]): row["total"] for row in got if row["_trigger"] != "drain"}
    assert before_drain == {(keys[k], start): float(sum(map(int, names))) for (k, start), names in final.items()}
    assert sorted((r["case_id"], r["wid"], r["total"]) for r in got) == sorted(
        (r["case_id"], r["wid"], r["total"]) for r in evaluate_query(compiled.query, rows)
    )


def test_the_rule_is_for_kafkas_sliding_windows_only() -> None:
    import wql
    from wql.grammar.errors import WQLNotSupportedError, WQLSemanticError

    stream = "CREATE STREAM s (k STRING, v BIGINT, x BIGINT);\n"
    grid = "SELECT count(*) AS n FROM s [RANGE 10 SLIDE 2 WATTR x SLACK 5 KAFKA]"
    with pytest.raises(WQLSemanticError, match="needs SLIDE KAFKA") as caught:
        wql.compile(stream + grid)
    assert caught.value.span is not None and caught.value.span.column == grid.index("SLACK") + 1  # the caret
    compiled = wql.compile(stream + "SELECT count(*) AS n FROM s [RANGE 10 WATTR x SLIDE KAFKA SLACK 5 KAFKA]")
    assert compiled.plan == "replay"
    for plan in ("bins", "prefix", "over"):
        with pytest.raises(WQLNotSupportedError, match="only the replay follows"):
            wql.compile(stream + "SELECT count(*) AS n FROM s [RANGE 10 WATTR x SLIDE KAFKA SLACK 5 KAFKA]", plan=plan)
    punctuated = "CREATE STREAM s (k STRING, v BIGINT, x BIGINT) PUNCTUATION WHEN (v < 0);\n"
    with pytest.raises(WQLNotSupportedError, match="Kafka's close time follows the records' own timestamps"):
        wql.compile(
            punctuated + "SELECT count(*) AS n FROM s [RANGE 10 WATTR x SLIDE KAFKA SLACK 5 KAFKA]", stream=True
        )
