"""Window classes (docs/semantics.md §5) and the wids/extent formulas that justify them.

The class says what context wids(t) needs: none (CF), only earlier tuples
(FCF), later tuples within a known range of window-ids (FCB), or later tuples
without such a bound (FCU). Planning keys off it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from wql.compiler.schema import Domain
from wql.compiler.units import Number, format_date, format_timestamp, number_text, short_text
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
    if window.frame is not None:
        return Classification(WindowClass.FCU, "forward, unbounded", _data_driven_reason(window))
    if window.is_grid:
        if window.per_partition_rows:
            return Classification(
                WindowClass.FCF,
                "backward",
                "partitioned tuple-based: a tuple's row number within its partition "
                f"({', '.join(window.partition_by)}) counts the partition's earlier arrivals"
                + ("; the grid starts at the partition's first arrival (ALIGN FIRST)" if window.align_first else ""),
            )
        if window.align_first:
            scope = f"t's partition ({', '.join(window.partition_by)})" if window.partition_by else "the stream"
            return Classification(
                WindowClass.FCF,
                "backward",
                f"ALIGN FIRST: the grid's origin is the {window.attr.name} of the first tuple to arrive in {scope}, "
                "so wids(t) needs that earlier tuple",
            )
        what = "tuple-based" if window.is_tuple_based else "interval-event" if window.is_interval else "attribute-based"
        if window.kind is WindowKind.CUMULATE:
            what = f"cumulating {what}"
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


def _order(window: Window) -> str:
    """How a window's tuples are ordered, in words: (ts, row_num) per user."""
    scope = f" per {', '.join(window.partition_by)}" if window.partition_by else ""
    if window.kind is WindowKind.SESSION or window.attr.is_row_num:
        return f"{window.attr.name} order{scope}"
    return f"({window.attr.name}, row_num) order{scope}"


def _data_driven_reason(window: Window) -> str:
    """Why a session or frame is FCU: which later arrivals can change t's window-id."""
    a = window.attr.name
    if window.kind is WindowKind.SESSION:
        return (
            f"t's window-id is the first {a} of its session, a run of tuples in {_order(window)}; a later tuple "
            "that falls between two sessions merges them, so no bound on t's window-id is known until the "
            "tuples before t are all in"
        )
    if window.kind is WindowKind.THRESHOLD:
        return (
            f"t's frame is the run of tuples around t in {_order(window)} where the predicate holds; a later "
            "tuple can join two runs or split one, so no bound on t's window-id is known until its neighbours "
            "are all in"
        )
    if window.kind is WindowKind.DELTA:
        return (
            f"a frame is anchored at its first tuple in {_order(window)}; a later tuple that lands before t can "
            "move every anchor after it, so no bound on t's window-id is known until the tuples before t are all in"
        )
    return (
        f"a frame ends where the running aggregate of its tuples in {_order(window)} first meets the condition; "
        "a later tuple that lands before t changes every running aggregate after it, so no bound on t's "
        "window-id is known until the tuples before t are all in"
    )


def describe_kind(window: Window) -> str:
    """A one-line name for the window, as a user would say it."""
    if window.frame is not None:
        return _describe_data_driven(window)
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
    if window.is_grid and window.align_first:
        first = "each partition's first tuple" if window.partition_by else "the first tuple"
        return f"{_describe_grid(window, basis, partitioned)}, aligned to {first}"
    return _describe_grid(window, basis, partitioned)


def _describe_grid(window: Window, basis: str, partitioned: str) -> str:
    attr = window.attr
    if window.kind is WindowKind.CUMULATE:
        assert window.slide is not None
        return (
            f"{basis}{partitioned} cumulating window (CUMULATE): {window.windows_per_period} windows per period, "
            f"growing by {short_text(window.slide, attr.domain)} from the period's start"
        )
    if window.kafka_grid:
        assert window.range is not None and window.slide is not None
        shape = "tumbling" if window.range == window.slide else "hopping"
        return (
            f"{basis}{partitioned} {shape} window, Kafka Streams TimeWindows: starts on the epoch-aligned grid, "
            "none before 0"
        )
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


def _basis(window: Window) -> str:
    if window.attr.is_row_num:
        return "arrival-ordered"
    return "time-ordered" if window.attr.domain in {Domain.TIMESTAMP, Domain.DATE} else "value-ordered"


def _amount(amount: Number, domain: Domain) -> str:
    """A quantity for formulas; zero is just 0, in any unit."""
    return short_text(amount, domain) if amount else "0"


def _describe_data_driven(window: Window) -> str:
    frame = window.frame
    assert frame is not None
    d = window.attr.domain
    partitioned = f", per {', '.join(window.partition_by)}" if window.partition_by else ""
    if window.kind is WindowKind.SESSION:
        assert frame.gap is not None
        text = f"{_basis(window)} session window (gap {_amount(frame.gap, d)}"
        if frame.longest is not None:
            text += f", at most {_amount(frame.longest, d)} long"
        text += ", Kafka's [first, last])" if frame.kafka else ")"
        return text + partitioned
    if window.kind is WindowKind.THRESHOLD:
        text = f"{_basis(window)} threshold frame (runs where {frame.expression_text()} holds"
        if frame.minimum is not None:
            size = f"{int(frame.minimum)} rows" if frame.minimum_rows else _amount(frame.minimum, d)
            text += f", at least {size}"
        return text + ")" + partitioned
    if window.kind is WindowKind.DELTA:
        assert frame.delta is not None
        return (
            f"{_basis(window)} delta frame ({frame.expression_text()} within {number_text(frame.delta)} "
            f"of the frame's first tuple){partitioned}"
        )
    return f"{_basis(window)} aggregate frame (until {frame.expression_text()}){partitioned}"


def _data_driven_formulas(window: Window) -> tuple[str, str]:
    """wids and extent of a session or frame: a maximal run of consecutive tuples u₁ … uₙ."""
    frame = window.frame
    assert frame is not None
    d = window.attr.domain
    a = window.attr.name
    run = f"u₁ … uₙ consecutive in {_order(window)}"
    wids = f"wids(t) = {{ u₁.{a} }}, u₁ the first tuple of the run holding t (t with a NULL {a} is in none)"
    if window.kind is WindowKind.SESSION:
        assert frame.gap is not None
        g = _amount(frame.gap, d)
        rule = f"uᵢ₊₁.{a} − uᵢ.{a} ≤ {g}"
        if frame.longest is not None:
            rule += f" ∧ uᵢ₊₁.{a} < u₁.{a} + {_amount(frame.longest, d)}"
        end = f"uₙ.{a}" if frame.kafka else f"uₙ.{a} + {g}"
        if frame.longest is not None and not frame.kafka:
            end = f"min(uₙ.{a} + {g}, u₁.{a} + {_amount(frame.longest, d)})"
        bounds = f"[u₁.{a}, uₙ.{a}]" if frame.kafka else f"[u₁.{a}, {end})"
        return wids, f"extent(w) = {run}, u₁.{a} = w, {rule}, maximal; window {bounds}"
    if window.kind is WindowKind.THRESHOLD:
        rule = f"p(uᵢ) for p = {frame.expression_text()} (false or NULL ends the run and is in no frame)"
        if frame.minimum is not None:
            rule += (
                f", n ≥ {int(frame.minimum)}"
                if frame.minimum_rows
                else (f", uₙ.{a} − u₁.{a} ≥ {_amount(frame.minimum, d)}")
            )
        return wids, f"extent(w) = {run}, u₁.{a} = w, {rule}, maximal; window [u₁.{a}, uₙ.{a}]"
    if window.kind is WindowKind.DELTA:
        assert frame.delta is not None
        x = frame.expression_text()
        rule = f"|uᵢ.x − u₁.x| ≤ {number_text(frame.delta)} for x = {x} (a NULL x ends the frame and is in no frame)"
        return wids, f"extent(w) = {run}, u₁.{a} = w, {rule}, maximal; window [u₁.{a}, uₙ.{a}]"
    rule = (
        f"c(u₁ … uᵢ) false for i < n and true for i = n, c = {frame.expression_text()} "
        "(the stream's last frame may end without c)"
    )
    return wids, f"extent(w) = {run}, u₁.{a} = w after the previous frame's last tuple, {rule}; window [u₁.{a}, uₙ.{a}]"


def _origin(window: Window) -> str:
    domain = window.attr.domain
    if window.align_first:
        scope = f", per {', '.join(window.partition_by)}" if window.partition_by else ""
        offset = "" if window.origin == 0 else f" + {short_text(window.origin, domain)}"
        return f"f{offset}, f = the first arrival's {window.attr.name}{scope}"
    if domain is Domain.TIMESTAMP:
        return format_timestamp(int(window.origin))
    if domain is Domain.DATE:
        return format_date(int(window.origin))
    return number_text(window.origin)


def _has_origin(window: Window) -> bool:
    return window.origin != 0 or window.align_first


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
    if window.frame is not None:
        return _data_driven_formulas(window)[0]
    d = window.attr.domain
    a = _value(window)
    if window.is_grid:
        assert window.slide is not None
        s = short_text(window.slide, d)
        o = " − o" if _has_origin(window) else ""
        first = f"⌊({a}{o}) / {s}⌋" if o else f"⌊{a} / {s}⌋"
        if window.kind is WindowKind.CUMULATE:
            assert window.range is not None
            r = short_text(window.range, d)
            period = f"⌊({a}{o}) / {r}⌋" if o else f"⌊{a} / {r}⌋"
            m = window.windows_per_period
            formula = f"wids(t) = {first} … {m}·({period} + 1) − 1  ({m} windows per period)"
        elif window.kind is WindowKind.LANDMARK:
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
            if window.kafka_grid:
                formula = f"wids(t) = max({first}, {window.first_wid}) … ⌊({a}{o} + {r}) / {s}⌋ − 1"
                formula += f"  (window {window.first_wid} is [0, {r}): none starts before 0)"
        if window.per_partition_rows:
            formula = formula.replace(
                "wids(t) = ", f"wids(t) = ({', '.join('t.' + p for p in window.partition_by)}) × "
            )
        if _has_origin(window):
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
    if window.frame is not None:
        return _data_driven_formulas(window)[1]
    return _extent_formula(window) + _snap_note(window)


def _extent_formula(window: Window) -> str:
    d = window.attr.domain
    a = _value(window)
    if window.is_grid:
        assert window.slide is not None
        s = short_text(window.slide, d)
        o = "o + " if _has_origin(window) else ""
        end = f"{o}(w+1)·{s}"
        where = f",  o = {_origin(window)}" if window.align_first else ""
        if window.kind is WindowKind.LANDMARK:
            return f"extent(w) = {{ t | {a} < {end} }},  w ≥ 0{where}"
        if window.kind is WindowKind.CUMULATE:
            assert window.range is not None
            start = f"{o}⌊w / {window.windows_per_period}⌋·{short_text(window.range, d)}"
            return f"extent(w) = {{ t | {start} ≤ {a} < {end} }}{where}"
        assert window.range is not None
        r = short_text(window.range, d)
        if window.is_interval:
            assert window.end_attr is not None
            return (
                f"extent(w) = {{ t | t.{window.attr.name} < {end} ∧ {end} − {r} < t.{window.end_attr.name} }}"
                f"  (a point event, start = end, belongs where its start does){where}"
            )
        if window.kafka_grid:
            return f"extent(w) = {{ t | {end} − {r} ≤ {a} < {end} }},  w ≥ {window.first_wid}{where}"
        return f"extent(w) = {{ t | {end} − {r} ≤ {a} < {end} }}{where}"
    assert window.range is not None
    r = short_text(window.range, d)
    name = window.attr.name
    if window.kind is WindowKind.KAFKA:
        return f"extent([x, x + {r}]) = {{ t | x ≤ t.{name} ≤ x + {r} }}  (both ends inclusive)"
    return f"extent(w) = {{ u | w − {r} < u.{name} ≤ w }}"
