"""A picture of a query's first windows over a sample of its stream: `wql explain --draw windows.svg`.

The ordering attribute is the axis; each tuple is a mark on its partition's lane (one lane without
PATTR; an interval event is a segment from its start to its end); each window is a bar from its
start to its end, labelled with its wid and how many tuples it holds. Windows that start before the
data does or end after it (the partial windows at the edges) are dashed. Everything comes from the
reference evaluator's extents (wql/runtime/reference.py), the definition every plan is tested
against, so the picture shows what the semantics say, not what a plan does. No Spark, and plain SVG
written here: every text is escaped.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from wql.compiler.analysis import Query
from wql.compiler.kinds import kind_of
from wql.compiler.schema import Domain
from wql.runtime.reference import from_base, to_base, window_extents
from wql.runtime.sample import Sample

WIDTH = 960
LEFT, RIGHT = 170, 30
LANE, BAR = 24, 18
MAX_LANES = 6
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf")


@dataclass(frozen=True)
class DrawnWindow:
    wid: str
    start: float
    end: float
    partition: tuple[Any, ...]
    tuples: int
    partial: bool


@dataclass(frozen=True)
class Drawing:
    svg: str
    windows: tuple[DrawnWindow, ...]
    tuples: int  # marks drawn
    source: str  # where the sample came from
    total: int  # windows over the whole sample, in every partition
    partitions: int = 1  # partitions in the sample
    lanes: int = 1  # partitions drawn, the first MAX_LANES

    def summary(self) -> str:
        return f"{_shown(len(self.windows), self.total, self.partitions, self.lanes)} over {self.source}"


def _shown(drawn: int, total: int, partitions: int, lanes: int) -> str:
    """How many windows the picture shows of how many the query makes, and of which partitions: the lanes
    are the first partitions only, so the windows drawn are theirs, while the count is every partition's."""
    plural = "s" if total != 1 else ""
    counted = f"the first {drawn} of {total:,} window{plural}" if total > drawn else f"all {total:,} window{plural}"
    if partitions > lanes:
        counted += f", in the first {lanes} of {partitions:,} partitions"
    return counted


def draw(query: Query, sample: Sample, count: int = 12) -> Drawing:
    """The picture of the first `count` non-empty windows over the sample."""
    window = query.window
    extents, tuples = window_extents(query, sample.rows)
    domain = Domain.ROW_NUM if window.attr.is_row_num else window.attr.domain

    def position(item: Any) -> float | None:
        value = item.a if window.attr.is_row_num else to_base(item.row.get(window.attr.name), domain)
        return None if value is None else float(value)

    def ending(item: Any) -> float | None:
        if window.end_attr is None:
            return None
        value = to_base(item.row.get(window.end_attr.name), window.end_attr.domain)
        return None if value is None else float(value)

    partitions = sorted({t.partition for t in tuples if position(t) is not None}, key=_sortable)
    lanes = partitions[:MAX_LANES]
    every = [e for e in extents if any(m.passes for m in e.members)]
    reported = [e for e in every if e.partition in lanes]
    starts = [p for p in (position(t) for t in tuples) if p is not None]
    first = min(starts) if starts else 0.0
    reported.sort(key=lambda e: (_base(e.start, domain, first), _sortable(e.partition), e.order))
    shown = reported[:count]

    data_lo = {
        lane: min((p for t in tuples if t.partition == lane and (p := position(t)) is not None), default=0.0)
        for lane in lanes
    }
    data_hi = {
        lane: max((p for t in tuples if t.partition == lane and (p := position(t)) is not None), default=0.0)
        for lane in lanes
    }
    edged = kind_of(window).edged  # the grid and the windows named by tuples: the data may fall inside their edges
    bars: list[DrawnWindow] = []
    finite = [v for e in shown for v in (_base(e.start, domain, None), _base(e.end, domain, None)) if v is not None]
    lo = min([*finite, *(position(m) or 0.0 for e in shown for m in e.members)], default=0.0)
    hi = max([*finite, *(ending(m) or position(m) or 0.0 for e in shown for m in e.members)], default=1.0)
    if hi <= lo:
        hi = lo + 1.0
    for extent in shown:
        start = _base(extent.start, domain, lo)
        end = _base(extent.end, domain, hi)
        assert start is not None and end is not None
        # [start, end) on an integral attribute holds values up to end − 1: it runs past the data
        # only beyond that (a ROWS window ending at the last row + 1 is whole).
        past = data_hi[extent.partition] + (1 if domain in {Domain.ROW_NUM, Domain.INTEGER, Domain.DATE} else 0)
        partial = edged and (start < data_lo[extent.partition] or (sample.whole and end > past))
        bars.append(
            DrawnWindow(
                _label(extent.wid, domain),
                start,
                end,
                extent.partition,
                sum(m.passes for m in extent.members),
                partial,
            )
        )
    span = hi - lo
    lo, hi = lo - span * 0.03, hi + span * 0.03
    shown_text = _shown(len(bars), len(every), len(partitions), len(lanes))
    svg, marks = _svg(query, sample, lanes, tuples, bars, position, ending, (lo, hi), domain, shown_text)
    return Drawing(svg, tuple(bars), marks, sample.source, len(every), max(1, len(partitions)), max(1, len(lanes)))


def _base(value: Any, domain: Domain, default: float | None) -> float | None:
    if value is None:
        return default
    base = to_base(value, domain)
    return default if base is None else float(base)


def _sortable(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is not None, str(v)) for v in values)


def _label(value: Any, domain: Domain) -> str:
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f").rstrip("0").rstrip(".")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# ------------------------------------------------------------------ SVG


def _svg(
    query: Query,
    sample: Sample,
    lanes: list[tuple[Any, ...]],
    tuples: Sequence[Any],
    bars: list[DrawnWindow],
    position: Any,
    ending: Any,
    axis: tuple[float, float],
    domain: Domain,
    shown: str,
) -> tuple[str, int]:
    window = query.window
    lo, hi = axis

    def x(value: float) -> float:
        return round(LEFT + (min(max(value, lo), hi) - lo) / (hi - lo) * (WIDTH - LEFT - RIGHT), 1)

    color = {lane: COLORS[index % len(COLORS)] for index, lane in enumerate(lanes)}
    keys = window.partition_by
    out: list[str] = []
    top = 58
    axis_y = top + LANE * max(1, len(lanes)) + 6
    bars_top = axis_y + 44
    height = bars_top + BAR * max(1, len(bars)) + 56
    out.append(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">'
    )
    out.append(f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>')
    title = f"{query.stream.name} {window.spec_text()}"
    out.append(_text(12, 20, title, weight="bold", size=13))
    out.append(_text(12, 38, f"{shown} over {sample.source}", fill="#555555"))

    # Tuples, one lane per partition.
    marks = 0
    for index, lane in enumerate(lanes or [()]):
        y = top + LANE * index + LANE / 2
        name = ", ".join(f"{k}={v}" for k, v in zip(keys, lane, strict=False)) if keys else query.stream.name
        out.append(_text(LEFT - 10, y + 4, name, anchor="end", fill=color.get(lane, COLORS[0])))
        out.append(f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}" stroke="#eeeeee"/>')
        for item in tuples:
            if item.partition != lane:
                continue
            at = position(item)
            if at is None or not lo <= at <= hi:
                continue
            fill = color.get(lane, COLORS[0]) if item.passes else "#ffffff"
            stroke = color.get(lane, COLORS[0])
            end = ending(item)
            if window.end_attr is not None and (end is None or end > at):
                last = hi if end is None else end
                dash = ' stroke-dasharray="2 2"' if end is None else ""
                out.append(
                    f'<line class="event" x1="{x(at)}" y1="{y}" x2="{x(last)}" y2="{y}" stroke="{stroke}" '
                    f'stroke-width="3" stroke-opacity="0.6"{dash}/>'
                )
            out.append(f'<circle class="tuple" cx="{x(at)}" cy="{y}" r="3.5" fill="{fill}" stroke="{stroke}"/>')
            marks += 1

    # The axis: the ordering attribute.
    out.append(f'<line x1="{LEFT}" y1="{axis_y}" x2="{WIDTH - RIGHT}" y2="{axis_y}" stroke="#333333"/>')
    for tick in _ticks(lo, hi, domain=domain):
        out.append(f'<line x1="{x(tick)}" y1="{axis_y}" x2="{x(tick)}" y2="{axis_y + 5}" stroke="#333333"/>')
        out.append(_text(x(tick), axis_y + 18, _tick_label(tick, domain, hi - lo), anchor="middle", fill="#333333"))
    attribute = "row_num" if window.attr.is_row_num else window.attr.name
    if window.end_attr is not None:
        attribute = f"({window.attr.name}, {window.end_attr.name})"
    out.append(_text(LEFT - 10, axis_y + 4, attribute, anchor="end", weight="bold"))

    # Windows, one bar each, in the order of their starts.
    out.append(_text(LEFT - 10, bars_top - 8, "windows", anchor="end", weight="bold"))
    for index, bar in enumerate(bars):
        y = bars_top + BAR * index
        left, right = x(bar.start), max(x(bar.end), x(bar.start) + 2)
        stroke = color.get(bar.partition, COLORS[0])
        dash = ' stroke-dasharray="5 3"' if bar.partial else ""
        out.append(
            f'<rect class="window" data-wid={quoteattr(bar.wid)} x="{left}" y="{y + 2}" '
            f'width="{round(right - left, 1)}" height="{BAR - 5}" fill="{stroke}" fill-opacity="0.18" '
            f'stroke="{stroke}"{dash}/>'
        )
        label = f"wid {bar.wid} · {bar.tuples} tuple{'s' if bar.tuples != 1 else ''}"
        if keys:
            label += " · " + ", ".join(f"{k}={v}" for k, v in zip(keys, bar.partition, strict=False))
        if bar.partial:
            label += " · partial"
        out.append(_bar_label(left, right, y + BAR / 2 + 4, label))
    legend_y = bars_top + BAR * max(1, len(bars)) + 26
    legend = "● tuple   ○ left out by WHERE   ▭ window, from its start to its end"
    if any(bar.partial for bar in bars):
        legend += "   ┅ dashed: partial, the data starts or ends inside it"
    out.append(_text(12, legend_y, legend, fill="#555555"))
    out.append("</svg>")
    return "\n".join(out) + "\n", marks


def _bar_label(left: float, right: float, y: float, label: str) -> str:
    """A bar's label after its end, else before its start, else (a bar across the axis) over the bar itself:
    never past the picture's edges, at the 7 pixels a character that the layout counts."""
    width = 7 * len(label)
    if right + 8 + width < WIDTH:
        return _text(right + 6, y, label, fill="#333333")
    if left - 6 - width >= 0:
        return _text(left - 6, y, label, anchor="end", fill="#333333")
    return _text(max(4.0, min(left + 6, WIDTH - 4 - width)), y, label, fill="#333333")


def _text(
    x: float,
    y: float,
    content: str,
    *,
    anchor: str = "start",
    fill: str = "#000000",
    weight: str = "normal",
    size: int = 12,
) -> str:
    return (
        f'<text x="{round(x, 1)}" y="{round(y, 1)}" text-anchor="{anchor}" fill="{fill}" '
        f'font-weight="{weight}" font-size="{size}">{escape(content)}</text>'
    )


SECOND = 1_000_000
# Steps a clock reads well: seconds, minutes, hours, days (µs).
TIME_STEPS = tuple(
    n * unit
    for unit, counts in (
        (SECOND, (1, 2, 5, 10, 15, 30)),
        (60 * SECOND, (1, 2, 5, 10, 15, 30)),
        (3600 * SECOND, (1, 2, 3, 6, 12)),
        (86_400 * SECOND, (1, 2, 7, 14, 28)),
    )
    for n in counts
)


def _ticks(lo: float, hi: float, wanted: int = 8, domain: Domain = Domain.OTHER) -> list[float]:
    """Round values between lo and hi, about `wanted` of them (for timestamps, on whole clock units)."""
    raw = (hi - lo) / wanted
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next((m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw), 10 * magnitude)
    if domain is Domain.TIMESTAMP and raw >= SECOND:
        step = next((s for s in TIME_STEPS if s >= raw), TIME_STEPS[-1])
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _tick_label(value: float, domain: Domain, span: float) -> str:
    if domain is Domain.TIMESTAMP:
        moment = from_base(int(value), Domain.TIMESTAMP)
        if span > 86_400_000_000 * 2:
            return moment.strftime("%Y-%m-%d")
        if span > 3_600_000_000 * 6:
            return moment.strftime("%m-%d %H:%M")
        return moment.strftime("%H:%M:%S") if span < 600_000_000 else moment.strftime("%H:%M")
    if domain is Domain.DATE:
        return str(from_base(int(value), Domain.DATE))
    return f"{value:g}"


__all__ = ["Drawing", "DrawnWindow", "draw"]
