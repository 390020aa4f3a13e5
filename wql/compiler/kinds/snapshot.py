"""Snapshot windows: `[SNAPSHOT WATTR (start, end) [PATTR p]]`, StreamInsight's (docs/semantics.md §2.18).

Within each partition, the distinct endpoints e₁ < … < eₘ of the well-formed events cut the axis:
snapshot i is [eᵢ, eᵢ₊₁) and the last one [eₘ, NULL). It holds the events alive over it; a point
event only the snapshot that starts at it. WHERE filters contents, not the endpoints.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from wql.compiler import sections
from wql.compiler.classes import Classification, WindowClass
from wql.compiler.kinds.base import Extent, Kind, Member, Sql, basis, from_base, partitioned, partitions
from wql.compiler.kinds.clauses import Clauses, scaled
from wql.compiler.kinds.intervals import refuse_generous, snap_note, variant_note
from wql.compiler.kinds.shapes import IntervalShape, Shape
from wql.compiler.schema import Domain
from wql.compiler.units import Number
from wql.compiler.windows import Form, Window
from wql.grammar import ast
from wql.grammar.errors import WQLNotSupportedError, WQLSemanticError

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section


class Snapshot(Kind):
    """Windows between consecutive endpoints of a partition's events."""

    name = "snapshot"

    def matches(self, window: Window) -> bool:
        return window.form is Form.SNAPSHOT

    def shape(self, window: Window) -> Shape:
        return IntervalShape(None)

    def classify(self, window: Window) -> Classification:
        s, e = window.attr.name, window.end_attr.name if window.end_attr else "end"
        where = f" of its partition ({', '.join(window.partition_by)})" if window.partition_by else ""
        return Classification(
            WindowClass.FCB,
            "forward, bounded",
            f"window-ids are the endpoints of the events{where}; t's windows are among [t.{s}, t.{e}), known on "
            f"arrival (unbounded for an open-ended event), but which of them exist depends on other events' endpoints",
        )

    def describe(self, window: Window) -> str:
        return (
            f"interval-event ({basis(window)}){partitioned(window)} snapshot window (between consecutive event "
            "endpoints)" + variant_note(window)
        )

    def formulas(self, window: Window) -> tuple[str, str]:
        assert window.end_attr is not None
        s, e = f"t.{window.attr.name}", f"t.{window.end_attr.name}"
        same = "".join(f" ∧ u.{p} = t.{p}" for p in window.partition_by)
        windows = (
            f"windows = {{ u.{window.attr.name}, u.{window.end_attr.name} | u well-formed{same} }} "
            "(NULL ends are no endpoints)"
        )
        wids = f"wids(t) = {{ p ∈ windows | {s} ≤ p < {e} }} (a point event: {{ {s} }}),  {windows}"
        extent = (
            f"extent(p) = {{ t | {s} < next(p) ∧ p < {e} }} ∪ {{ point events with {s} = p }}, "
            "window [p, next(p)), next(p) the next endpoint (none after the last: window_end NULL)"
        )
        return wids, extent

    def wids(self, window: Window) -> str:
        return self.formulas(window)[0]

    def extent(self, window: Window) -> str:
        return self.formulas(window)[1] + snap_note(window)

    def cited(self, window: Window) -> tuple[Section, ...]:
        return (sections.INTERVALS, sections.SNAPSHOT)

    def range_text(self, window: Window) -> str:
        return "SNAPSHOT"

    def slide_text(self, window: Window) -> str:
        return "SNAPSHOT"

    def slide_attribute(self, window: Window) -> str | None:
        return None

    # ---------------------------------------------------------------- the reference evaluator
    def extents(self, window: Window, tuples: list[Member], sql: Sql) -> list[Extent]:
        """A window from each endpoint of the partition's well-formed events to the next (none after the last)."""
        domain = window.attr.domain
        out = []
        for part in partitions(tuples):
            events = [t for t in part if t.a is not None and (t.end is None or t.end >= t.a)]
            points: list[Any] = sorted({t.a for t in events} | {t.end for t in events if t.end is not None})
            for index, p in enumerate(points):
                following = points[index + 1] if index + 1 < len(points) else None
                members = [t for t in events if alive(t, p, following)]
                out.append(
                    Extent(
                        from_base(p, domain),
                        from_base(p, domain),
                        from_base(following, domain),
                        part[0].partition,
                        members,
                        (p,),
                    )
                )
        return out

    # ---------------------------------------------------------------- on a stream
    def final_text(self, window: Window) -> str:
        return (
            "a snapshot [start, end) once the punctuation (on event starts) reaches end: no event still to come "
            "can add an endpoint before it or be alive in it; a partition's last snapshot (no end) once drained"
        )

    def kept_text(self, query: Query, cells: bool) -> str:
        return (
            "rows: per partition, every open-ended event and those that end at or after x0, the partition's "
            "largest start or end at or before the punctuation: they hold every snapshot not yet final"
        )

    def refuse_on_stream(self, query: Query) -> None:
        if query.emit == "changes":
            raise WQLNotSupportedError(
                "EMIT CHANGES of snapshot windows: an event still to come can add an endpoint inside an open "
                "snapshot and cut it in two, so a version already emitted would name a window that no longer "
                "exists, which needs retractions",
                hint="use EMIT FINAL: each snapshot once, when the punctuation reaches its end",
            )
        refuse_generous(
            query,
            "snapshot windows",
            "a late event starts before the punctuation, inside snapshots already emitted, which its start (and end) "
            "would cut in two",
        )


def resolve_snapshot(clauses: Clauses, clause: ast.SnapshotClause, wattr: ast.WattrClause | None) -> Window:
    """SNAPSHOT WATTR (start, end): windows between consecutive endpoints of the partition's events."""
    if wattr is None or len(wattr.attrs) != 2:
        raise WQLSemanticError(
            "snapshot windows need interval events: name their start and end",
            span=(wattr or clause).span,
            hint="e.g. [SNAPSHOT WATTR (started, ended) PATTR caller]",
        )
    for kind, why in (
        (ast.RangeClause, "RANGE"),
        (ast.SlideClause, "SLIDE"),
        (ast.AlignClause, "ALIGN"),
        (ast.CumulateClause, "CUMULATE"),
        (ast.KafkaClause, "KAFKA"),
        (ast.FullClause, "FULL"),
        (ast.OwnEndClause, "OWN END"),
        (ast.TimeZoneClause, "TIME ZONE"),
    ):
        found = clauses.get(kind)
        if found is not None:
            raise WQLSemanticError(
                f"{why} does not apply to SNAPSHOT: the events' starts and ends cut the windows",
                span=found.span,
            )
    clauses.reject_variant(ast.SnapClause, "snapshot windows already change only where their events do")
    attr = clauses.attribute(wattr.attrs[0], interval=True)
    end_attr = clauses.interval_end(wattr, attr)
    attr, end_attr = scaled(attr, end_attr, ())
    return Window(
        form=Form.SNAPSHOT,
        attr=attr,
        end_attr=end_attr,
        range=None,
        slide=None,
        partition_by=clauses.partition(),
        origin=Decimal(0) if attr.domain is Domain.DECIMAL else 0,
        slack=clauses.slack(attr),
        defaults=tuple(clauses.notes),
        slack_unit=clauses.slack_unit(),
        clip=clauses.get(ast.ClipClause) is not None,
    )


def alive(item: Member, p: Number, following: Number | None) -> bool:
    """Whether an event is alive over [p, following): a point event only at its start."""
    assert item.a is not None
    if item.end is not None and item.end == item.a:
        return item.a == p
    return (following is None or item.a < following) and (item.end is None or p < item.end)


KIND = Snapshot()
