"""Window classes (semantics.md §3) and the wids/extent formulas that justify them.

The class says what context wids(t) needs: none (CF), only earlier tuples
(FCF), later tuples within a known range of window-ids (FCB), or later tuples
without such a bound (FCU). Planning keys off it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from wql.compiler.schema import Domain
from wql.compiler.units import format_date, format_timestamp, number_text, short_text
from wql.compiler.windows import SlideOn, Window, WindowKind


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, …"""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


class WindowClass(Enum):
    CF = "CF"
    FCF = "FCF"
    FCB = "FCB"
    FCU = "FCU"


@dataclass(frozen=True)
class Classification:
    window_class: WindowClass
    context: str  # "none", "backward", "forward, bounded", "forward, unbounded"
    reason: str


def classify(window: Window) -> Classification:
    if window.kind is WindowKind.SNAPSHOT:
        return _classify_snapshot(window)
    if window.snap:
        return Classification(
            WindowClass.FCB,
            "forward, bounded",
            "SNAP reports runs of grid windows that hold the same events: t's grid windows follow from t alone, "
            "but where a run holding them ends depends on other events that enter or leave within them",
        )
    if window.kind in {WindowKind.SLIDING, WindowKind.LANDMARK}:
        if window.per_partition_rows:
            return Classification(
                WindowClass.FCF,
                "backward",
                "partitioned tuple-based: a tuple's row number within its partition "
                f"({', '.join(window.partition_by)}) counts the partition's earlier arrivals",
            )
        what = "tuple-based" if window.is_tuple_based else "interval-event" if window.is_interval else "attribute-based"
        return Classification(
            WindowClass.CF,
            "none",
            f"{what} grid window: wids(t) follows from t and the spec alone",
        )
    if window.kind is WindowKind.SLIDE_BY_TUPLE:
        which = "every tuple" if window.slide == 1 else f"every {ordinal(int(window.slide))} arrival"
        return Classification(
            WindowClass.FCB,
            "forward, bounded",
            f"window-ids are the {window.attr.name} values of {which}; t's windows are among "
            f"[t.{window.attr.name}, t.{window.attr.name} + r), known on arrival, but which of them exist "
            "depends on later tuples",
        )
    if window.kind is WindowKind.SLIDE_BY_RANK:
        if window.slide == 1:
            return Classification(
                WindowClass.FCB,
                "forward, bounded",
                f"SLIDE 1 over rank({window.attr.name}) names every tuple's value, the same windows as "
                "slide-by-tuple: the wid range [t.a, t.a + r) is known on arrival",
            )
        return Classification(
            WindowClass.FCU,
            "forward, unbounded",
            f"window-ids are the values of every {ordinal(int(window.slide))} tuple in {window.attr.name} order; "
            "a tuple's rank "
            "can change with any later arrival, so no bound on its window-ids is known until the stream is ordered",
        )
    assert window.kind is WindowKind.KAFKA
    return Classification(
        WindowClass.FCB,
        "forward, bounded",
        "Kafka sliding windows open at records' timestamps; t's windows lie within "
        f"[t.{window.attr.name} − r − 1 tick, t.{window.attr.name} + r], but which exist depends on later records",
    )


def _classify_snapshot(window: Window) -> Classification:
    s, e = window.attr.name, window.end_attr.name if window.end_attr else "end"
    scope = f" of its partition ({', '.join(window.partition_by)})" if window.partition_by else ""
    return Classification(
        WindowClass.FCB,
        "forward, bounded",
        f"window-ids are the endpoints of the events{scope}; t's windows are among [t.{s}, t.{e}), known on "
        f"arrival (unbounded for an open-ended event), but which of them exist depends on other events' endpoints",
    )


def _variant_note(window: Window) -> str:
    """The StreamInsight variant a window over interval events uses, in words ("" for WQL's default)."""
    if window.clip:
        return ", CLIP: aggregates see each event's lifetime clipped to the window (StreamInsight)"
    if window.snap:
        return ", SNAP: one row per run of windows holding the same events (StreamInsight's snap to boundaries)"
    return ""


def describe_kind(window: Window) -> str:
    """A one-line name for the window, as a user would say it."""
    return _describe_kind(window) + _variant_note(window)


def _describe_kind(window: Window) -> str:
    attr = window.attr
    basis = (
        "tuple-based"
        if attr.is_row_num
        else "time-based"
        if attr.domain in {Domain.TIMESTAMP, Domain.DATE}
        else "value-based"
    )
    if window.is_interval:
        basis = f"interval-event ({basis})"
    partitioned = " partitioned" if window.partition_by else ""
    if window.kind is WindowKind.SNAPSHOT:
        return f"{basis}{partitioned} snapshot window (between consecutive event endpoints)"
    if window.kind is WindowKind.LANDMARK:
        return f"{basis}{partitioned} landmark window"
    if window.kind is WindowKind.SLIDING:
        assert window.range is not None and window.slide is not None
        if window.range == window.slide:
            return f"{basis}{partitioned} tumbling window"
        ratio = window.range / window.slide
        shape = "sliding window" if window.range > window.slide else "sampling window (SLIDE > RANGE leaves gaps)"
        return (
            f"{basis}{partitioned} {shape}, range/slide = {number_text(round(ratio, 4) if ratio % 1 else int(ratio))}"
        )
    if window.kind is WindowKind.SLIDE_BY_TUPLE:
        if window.slide == 1:
            return f"slide-by-tuple{partitioned} window (one window per arrival)"
        return (
            f"slide-by-{window.slide}-rows{partitioned} window (a window at every {ordinal(int(window.slide))} arrival)"
        )
    if window.kind is WindowKind.SLIDE_BY_RANK:
        return f"slide-by-{window.slide}-rows over rank({attr.name}){partitioned} window"
    return f"Kafka sliding window{partitioned} (windows at records and just after them)"


def _origin(window: Window) -> str:
    domain = window.attr.domain
    if domain is Domain.TIMESTAMP:
        return format_timestamp(int(window.origin))
    if domain is Domain.DATE:
        return format_date(int(window.origin))
    return number_text(window.origin)


def _value(window: Window) -> str:
    """How a tuple's attribute is written in formulas."""
    if window.per_partition_rows:
        return "rank(t, row_num, " + ", ".join(window.partition_by) + ")"
    return f"t.{window.attr.name}"


def _snapshot_formulas(window: Window) -> tuple[str, str]:
    assert window.end_attr is not None
    s, e = f"t.{window.attr.name}", f"t.{window.end_attr.name}"
    scope = "".join(f" ∧ u.{p} = t.{p}" for p in window.partition_by)
    windows = (
        f"windows = {{ u.{window.attr.name}, u.{window.end_attr.name} | u well-formed{scope} }} "
        "(NULL ends are no endpoints)"
    )
    wids = f"wids(t) = {{ p ∈ windows | {s} ≤ p < {e} }} (a point event: {{ {s} }}),  {windows}"
    extent = (
        f"extent(p) = {{ t | {s} < next(p) ∧ p < {e} }} ∪ {{ point events with {s} = p }}, "
        "window [p, next(p)), next(p) the next endpoint (none after the last: window_end NULL)"
    )
    return wids, extent


def _snap_note(window: Window) -> str:
    if window.snap:
        return (
            "; SNAP reports each run of consecutive windows w₁ … w₂ with the same extent once: "
            "wid w₁, [start(w₁), end(w₂))"
        )
    if window.clip:
        end = window.end_attr.name if window.end_attr else ""
        return f"; CLIP: aggregates read {window.attr.name} and {end} clipped to the window"
    return ""


def wids_formula(window: Window) -> str:
    if window.kind is WindowKind.SNAPSHOT:
        return _snapshot_formulas(window)[0]
    d = window.attr.domain
    a = _value(window)
    if window.kind in {WindowKind.SLIDING, WindowKind.LANDMARK}:
        assert window.slide is not None
        s = short_text(window.slide, d)
        o = "" if window.origin == 0 else " − o"
        first = f"⌊({a}{o}) / {s}⌋" if o else f"⌊{a} / {s}⌋"
        if window.kind is WindowKind.LANDMARK:
            formula = f"wids(t) = {{ w ≥ 0 | w ≥ {first} }}  (reported up to the last window of the data)"
        elif window.is_interval:
            assert window.range is not None and window.end_attr is not None
            r = short_text(window.range, d)
            end = f"t.{window.end_attr.name}"
            last = f"⌊({a}{o} + {r}) / {s}⌋ − 1"
            formula = (
                f"wids(t) = {first} … ⌈({end}{o} + {r}) / {s}⌉ − 2; for a point event (start = end) {first} … {last}"
            )
        else:
            assert window.range is not None
            r = short_text(window.range, d)
            formula = f"wids(t) = {first} … ⌊({a}{o} + {r}) / {s}⌋ − 1"
        if window.per_partition_rows:
            formula = formula.replace(
                "wids(t) = ", f"wids(t) = ({', '.join('t.' + p for p in window.partition_by)}) × "
            )
        if window.origin != 0:
            formula += f",  o = {_origin(window)}"
        return formula
    assert window.range is not None
    r = short_text(window.range, d)
    name = window.attr.name
    scope = "".join(f" ∧ u.{p} = t.{p}" for p in window.partition_by)
    if window.kind is WindowKind.KAFKA:
        tick = "1 ms" if d is Domain.TIMESTAMP else "1"
        return (
            f"wids(t) = {{ [u.{name} − {r}, u.{name}] | u.{name} − {r} ≤ t.{name} ≤ u.{name} }} ∪ "
            f"{{ [u.{name} + {tick}, u.{name} + {tick} + {r}] | u.{name} < t.{name} ≤ u.{name} + {tick} + {r} }}"
            f"  (u ranges over records{scope})"
        )
    part = "".join(f", {p}" for p in window.partition_by)
    if window.slide == 1:
        which = "u ∈ T"
    elif window.slide_on is SlideOn.ROW_NUM:
        position = f"rank(u, row_num{part})" if window.partition_by else "u.row_num"
        which = f"{position} mod {window.slide} = 0"
    else:
        which = f"rank(u, {name}{part}) mod {window.slide} = 0"
    return f"wids(t) = {{ w ∈ windows | t.{name} ≤ w < t.{name} + {r} }},  windows = {{ u.{name} | {which}{scope} }}"


def extent_formula(window: Window) -> str:
    if window.kind is WindowKind.SNAPSHOT:
        return _snapshot_formulas(window)[1] + _snap_note(window)
    return _extent_formula(window) + _snap_note(window)


def _extent_formula(window: Window) -> str:
    d = window.attr.domain
    a = _value(window)
    if window.kind in {WindowKind.SLIDING, WindowKind.LANDMARK}:
        assert window.slide is not None
        s = short_text(window.slide, d)
        o = "o + " if window.origin != 0 else ""
        end = f"{o}(w+1)·{s}"
        if window.kind is WindowKind.LANDMARK:
            return f"extent(w) = {{ t | {a} < {end} }},  w ≥ 0"
        assert window.range is not None
        r = short_text(window.range, d)
        if window.is_interval:
            assert window.end_attr is not None
            return (
                f"extent(w) = {{ t | t.{window.attr.name} < {end} ∧ {end} − {r} < t.{window.end_attr.name} }}"
                f"  (a point event, start = end, belongs where its start does)"
            )
        return f"extent(w) = {{ t | {end} − {r} ≤ {a} < {end} }}"
    assert window.range is not None
    r = short_text(window.range, d)
    name = window.attr.name
    if window.kind is WindowKind.KAFKA:
        return f"extent([x, x + {r}]) = {{ t | x ≤ t.{name} ≤ x + {r} }}  (both ends inclusive)"
    return f"extent(w) = {{ u | w − {r} < u.{name} ≤ w }}"
