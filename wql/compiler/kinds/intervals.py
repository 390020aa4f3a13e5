"""Grid and landmark windows over interval events: `WATTR (start, end)` (docs/semantics.md §2.10, §2.19, §2.20).

Each tuple is an event lasting from `start` up to, not including, `end`, and belongs to every grid
window its interval overlaps; a point event (start = end) belongs where its start does; an
open-ended event (end NULL) lasts to the end of the data; a malformed one (end < start) belongs to
no window. StreamInsight's CLIP (lifetimes clipped to the window) and SNAP (one row per run of
windows that hold the same events) are this kind's variants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wql.compiler import sections
from wql.compiler.classes import Classification, WindowClass
from wql.compiler.kinds.base import Member, basis
from wql.compiler.kinds.grid import Grid
from wql.compiler.kinds.landmark import KIND as LANDMARK
from wql.compiler.kinds.shapes import GridShape, IntervalShape, Shape
from wql.compiler.units import Number, short_text
from wql.compiler.windows import Form, Window
from wql.grammar.errors import WQLNotSupportedError

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section


def variant_note(window: Window) -> str:
    """The StreamInsight variant a window over interval events uses, in words ("" for WQL's default)."""
    if window.clip:
        return ", CLIP: aggregates see each event's lifetime clipped to the window (StreamInsight)"
    if window.snap:
        return ", SNAP: one row per run of windows holding the same events (StreamInsight's snap to boundaries)"
    return ""


def snap_note(window: Window) -> str:
    if window.snap:
        return (
            "; SNAP reports each run of consecutive windows w₁ … w₂ with the same extent once: "
            "wid w₁, [start(w₁), end(w₂))"
        )
    if window.clip:
        end = window.end_attr.name if window.end_attr else ""
        return f"; CLIP: aggregates read {window.attr.name} and {end} clipped to the window"
    return ""


def refuse_generous(query: Query, what: str, why: str) -> None:
    window = query.window
    if window.slack is not None and window.slack.mode == "generous":
        raise WQLNotSupportedError(
            f"SLACK … GENEROUS with {what}: {why}",
            hint="use SLACK … CONSISTENT (the default): late events are counted and written to the late-rows output",
        )


class Intervals(Grid):
    """Sliding, tumbling and landmark windows over interval events."""

    name = "intervals"

    def matches(self, window: Window) -> bool:
        return window.end_attr is not None and window.form in {Form.SLIDING, Form.LANDMARK}

    def shape(self, window: Window) -> Shape:
        return IntervalShape(GridShape("unbounded" if window.range is None else "range"))

    def classify(self, window: Window) -> Classification:
        if window.snap:
            return Classification(
                WindowClass.FCB,
                "forward, bounded",
                "SNAP reports runs of grid windows that hold the same events: t's grid windows follow from t alone, "
                "but where a run holding them ends depends on other events that enter or leave within them",
            )
        return super().classify(window)

    def basis(self, window: Window) -> str:
        return f"interval-event ({basis(window)})"

    def variant_note(self, window: Window) -> str:
        return variant_note(window)

    def describe_grid(self, window: Window, basis: str, partitioned: str) -> str:
        if window.range is None:
            return LANDMARK.describe_grid(window, basis, partitioned)
        return super().describe_grid(window, basis, partitioned)

    def wids_range(self, window: Window, a: str, o: str, first: str) -> str:
        if window.range is None:
            return LANDMARK.wids_range(window, a, o, first)
        assert window.slide is not None and window.end_attr is not None
        d = window.attr.domain
        r, s = short_text(window.range, d), short_text(window.slide, d)
        end = f"t.{window.end_attr.name}"
        last = f"⌊({a}{o} + {r}) / {s}⌋ − 1"
        return f"wids(t) = {first} … ⌈({end}{o} + {r}) / {s}⌉ − 2; for a point event (start = end) {first} … {last}"

    def extent(self, window: Window) -> str:
        return super().extent(window) + snap_note(window)

    def extent_of(self, window: Window, a: str, end: str, o: str, where: str) -> str:
        if window.range is None:
            return LANDMARK.extent_of(window, a, end, o, where)
        assert window.end_attr is not None
        r = short_text(window.range, window.attr.domain)
        return (
            f"extent(w) = {{ t | t.{window.attr.name} < {end} ∧ {end} − {r} < t.{window.end_attr.name} }}"
            f"  (a point event, start = end, belongs where its start does){where}"
        )

    def cited(self, window: Window) -> tuple[Section, ...]:
        shape = (sections.LANDMARK,) if window.range is None else self.gaps(window)
        return (*shape, sections.INTERVALS)

    def bounds(self, window: Window, w: int) -> tuple[Number, Number]:
        if window.range is None:
            return LANDMARK.bounds(window, w)
        return super().bounds(window, w)

    def holds(self, window: Window, item: Member, lo: Number, hi: Number) -> bool:
        """An event overlaps [lo, hi); a point event where its start is; an open-ended one from its start on."""
        if item.a is None:
            return False
        if item.open_ended:
            return item.a < hi
        if item.end is None or item.end < item.a:
            return False
        if item.end == item.a:
            return lo <= item.a < hi
        return item.a < hi and lo < item.end

    def reported(self, window: Window, w: int, lo: Number, tuples: list[Member], horizon: Number | None) -> bool:
        """Landmark windows as §2.3 reports them; with open-ended events, windows up to the end of the data."""
        if window.range is None:
            return LANDMARK.reported(window, w, lo, tuples, horizon)
        return not (any(t.open_ended for t in tuples) and horizon is not None and lo > horizon)

    def start_of(self, window: Window, lo: Number) -> Number | None:
        return None if window.range is None else lo

    def final_text(self, window: Window) -> str:
        if window.snap:
            return (
                "a run of windows w … w+k (SNAP) once the punctuation (on event starts) reaches the end of window "
                "w+k+1; a run past the data's last window that holds exactly its key's open-ended events once the "
                "data reaches w+k+1 too (a later event would lengthen it), or the drain"
            )
        return "a window [start, end) once the punctuation (on event starts) reaches end"

    def kept_text(self, query: Query, cells: bool) -> str:
        window = query.window
        if window.range is None:
            return "rows: every event (a landmark window holds every event since the stream began)"
        if window.snap:
            return (
                "rows: per key, the events in or after the last window of its last final run (all of a key with "
                "none), every open-ended event, and those with the data's largest start or end"
            )
        reach = "(RANGE + SLACK)" if window.slack is not None else "RANGE"
        return (
            "rows: the events that end at or after the first open window's start (those alive in the last "
            f"{reach} before the punctuation, however long), and every open-ended event"
        )

    def refuse_on_stream(self, query: Query) -> None:
        if not query.window.snap:
            return
        if query.emit == "changes":
            raise WQLNotSupportedError(
                "EMIT CHANGES with SNAP: a run of windows still open can grow or be cut by an event still to come, "
                "so a version already emitted would name a run that no longer exists, which needs retractions",
                hint="use EMIT FINAL: each run once, when the window after it is final",
            )
        refuse_generous(
            query,
            "SNAP",
            "a late event joining the open windows would change runs next to ones already emitted, whose first or "
            "last window it can belong to",
        )


KIND = Intervals()
