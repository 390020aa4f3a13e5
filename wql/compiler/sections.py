"""The sections of the project's docs/ that define what `wql explain` shows.

The window's kind names the sections that define it (`Kind.cited`), which explain hands to
`sections_for`; this module imports no kind, so that every kind can cite its sections. A table says
which sections its options, class and plan add, and one order says how explain
lists them, so explain can cite, for every query, where its extent, wids, class
and plan are defined. The sections
are headings of docs/*.md; `Section.anchor` is the link GitHub renders for the
heading, and tests/test_docs.py checks that every heading and anchor here
exists, so the docs and the citations cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wql.compiler.classes import WindowClass
from wql.compiler.schema import Domain

if TYPE_CHECKING:
    from wql.compiler.analysis import Query

LANGUAGE = "docs/language.md"
SEMANTICS = "docs/semantics.md"


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@dataclass(frozen=True)
class Section:
    page: str  # a path in the repository, e.g. docs/semantics.md
    heading: str  # the heading's text without its #s, e.g. "2.6 Slide-by-tuple windows"

    @property
    def number(self) -> str:
        return self.heading.split(" ", 1)[0].rstrip(".")

    @property
    def title(self) -> str:
        return self.heading.split(" ", 1)[1]

    @property
    def anchor(self) -> str:
        return github_anchor(self.heading)

    @property
    def link(self) -> str:
        return f"{self.page}#{self.anchor}"

    def cite(self) -> str:
        """How explain prints it: docs/semantics.md §2.6 Slide-by-tuple windows."""
        return f"{self.page} §{self.number} {self.title}"


def _semantics(heading: str) -> Section:
    return Section(SEMANTICS, heading)


DEFAULTS = Section(LANGUAGE, "5.9 Defaults")
GRID = _semantics("2.1 Grid windows: sliding and tumbling")
GAPS = _semantics("2.2 SLIDE larger than RANGE: gaps")
LANDMARK = _semantics("2.3 Landmark windows")
TUPLE_BASED = _semantics("2.4 Tuple-based windows")
PARTITIONED = _semantics("2.5 Partitioned tuple-based windows")
SLIDE_BY_TUPLE = _semantics("2.6 Slide-by-tuple windows")
SLIDE_BY_ROWS = _semantics("2.7 Sliding n rows over row_num")
SLIDE_BY_RANK = _semantics("2.8 Sliding n rows over rank")
KAFKA = _semantics("2.9 Kafka sliding windows")
INTERVALS = _semantics("2.10 Interval events")
CUMULATE = _semantics("2.13 CUMULATE windows")
KAFKA_GRID = _semantics("2.14 Kafka hopping and tumbling windows")
ALIGN_FIRST = _semantics("2.15 ALIGN FIRST")
SESSIONS = _semantics("2.16 Sessions")
FRAMES = _semantics("2.17 Frames: threshold, delta and aggregate")
SNAPSHOT = _semantics("2.18 Snapshot windows")
CLIP = _semantics("2.19 CLIP: lifetimes clipped to the window")
SNAP = _semantics("2.20 SNAP: snapping to boundaries")
CALENDAR = _semantics("2.21 Calendar windows: months and local days")
DOUBLE_EDGES = _semantics("3.3 Exact edges on integral and DOUBLE attributes")
EMPTY = _semantics("4. Empty windows and EMIT EMPTY")
SLACK = _semantics("8.2 Slack")
CHANGES = _semantics("8.7 EMIT FINAL and EMIT CHANGES")
KAFKA_RULE = _semantics("8.13 Kafka's late-record rule")

CLASSES: dict[WindowClass, Section] = {
    WindowClass.CF: _semantics("5.1 CF: context free"),
    WindowClass.FCF: _semantics("5.2 FCF: forward-context free"),
    WindowClass.FCB: _semantics("5.3 FCB: forward context, bounded"),
    WindowClass.FCU: _semantics("5.4 FCU: forward context, unbounded"),
}

PLANS: dict[str, Section] = {
    "bucket": _semantics("7.2 bucket"),
    "pane": _semantics("7.3 pane"),
    "slice": _semantics("7.4 slice"),
    "bins": _semantics("7.5 bins"),
    "prefix": _semantics("7.6 prefix"),
    "over": _semantics("7.7 over"),
    "fold": _semantics("7.9 fold"),
    "starts": _semantics("7.10 starts"),
    "scan": _semantics("7.11 scan"),
    "se-slices": _semantics("7.12 se-slices"),
    "difference": _semantics("7.13 difference"),
    "sweep": _semantics("7.14 sweep"),
    "replay": _semantics("7.15 replay"),
}


# What the window is, in the order explain cites it. The window's kind says which of its own sections
# apply (`Kind.cited`); the options any kind may have are cited by the rules below.
ORDER: tuple[Section, ...] = (
    DEFAULTS,
    GRID,
    LANDMARK,
    TUPLE_BASED,
    PARTITIONED,
    GAPS,
    SLIDE_BY_TUPLE,
    SLIDE_BY_ROWS,
    SLIDE_BY_RANK,
    KAFKA,
    INTERVALS,
    SNAPSHOT,
    CLIP,
    SNAP,
    CALENDAR,
    CUMULATE,
    KAFKA_GRID,
    ALIGN_FIRST,
    SESSIONS,
    FRAMES,
    DOUBLE_EDGES,
    EMPTY,
)
OPTION_RULES: tuple[tuple[Callable[[Query], bool], Section], ...] = (
    (lambda q: bool(q.window.defaults), DEFAULTS),
    (lambda q: q.window.clip, CLIP),
    (lambda q: q.window.snap, SNAP),
    (lambda q: q.window.kafka_grid, KAFKA_GRID),
    (lambda q: q.window.align_first, ALIGN_FIRST),
    (lambda q: q.window.attr.domain is Domain.FLOAT, DOUBLE_EDGES),
    (lambda q: q.emit_empty, EMPTY),
)


def sections_for(
    query: Query, cited: tuple[Section, ...], retracts: bool, plan: str | None = None
) -> tuple[Section, ...]:
    """The sections defining this query's window (`cited`: those its kind names), its class, its plan (if
    chosen) and its options; `retracts`: whether its kind takes back versions under EMIT CHANGES."""
    applying = {*cited, *(s for applies, s in OPTION_RULES if applies(query))}
    cited_here = [section for section in ORDER if section in applying]
    cited_here.append(CLASSES[query.classification.window_class])
    if plan is not None and plan in PLANS:
        cited_here.append(PLANS[plan])
    if query.window.slack is not None:
        cited_here.append(SLACK)
        if query.window.slack.mode == "kafka":
            cited_here.append(KAFKA_RULE)
    if query.emit == "changes" and retracts:
        cited_here.append(CHANGES)
    return tuple(cited_here)


ALL_SECTIONS: tuple[Section, ...] = (
    *ORDER,
    *CLASSES.values(),
    *PLANS.values(),
    SLACK,
    KAFKA_RULE,
    CHANGES,
)
