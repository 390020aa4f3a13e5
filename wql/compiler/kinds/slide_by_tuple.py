"""Windows named by tuples: slide-by-tuple (§2.6) and sliding n rows over row_num (§2.7).

`[RANGE r RATTR a SLIDE n ROWS]`: every n-th arrival (every tuple with SLIDE 1 ROW) names the window
(w − r, w] ending at its value w. The window-ids are values of the range attribute, taken from every
tuple of a partition; WHERE filters contents only. A tuple's windows lie in [t.a, t.a + r), known on
arrival, but which of them exist depends on later tuples (FCB).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wql.compiler import sections
from wql.compiler.classes import Classification, WindowClass, ordinal
from wql.compiler.kinds.base import Extent, Kind, Member, Sql, from_base, partitioned, partitions, same_partition
from wql.compiler.kinds.clauses import Clauses
from wql.compiler.kinds.shapes import Shape, TupleShape
from wql.compiler.schema import ROW_NUM, Domain
from wql.compiler.units import quantity_text, short_text, to_base
from wql.compiler.windows import Attribute, Form, SlideOn, Window
from wql.grammar import ast
from wql.grammar.errors import WQLSemanticError, WQLTypeError

if TYPE_CHECKING:
    from wql.compiler.sections import Section


class SlideByTuple(Kind):
    """Windows ending at the values of every tuple, or of every n-th arrival."""

    name = "slide-by-tuple"
    edged = True

    def matches(self, window: Window) -> bool:
        return window.form is Form.SLIDE_BY_TUPLE

    def classify(self, window: Window) -> Classification:
        assert window.slide is not None
        which = "every tuple" if window.slide == 1 else f"every {ordinal(int(window.slide))} arrival"
        a = window.attr.name
        return Classification(
            WindowClass.FCB,
            "forward, bounded",
            f"window-ids are the {a} values of {which}; t's windows are among [t.{a}, t.{a} + r), known on arrival, "
            "but which of them exist depends on later tuples",
        )

    def describe(self, window: Window) -> str:
        if window.slide == 1:
            return f"slide-by-tuple{partitioned(window)} window (one window per arrival)"
        assert window.slide is not None
        return (
            f"slide-by-{window.slide}-rows{partitioned(window)} window "
            f"(a window at every {ordinal(int(window.slide))} arrival)"
        )

    def shape(self, window: Window) -> Shape:
        """Which tuples name windows: every tuple, every n-th arrival, or every n-th in value order."""
        if window.slide == 1:
            return TupleShape("every")
        return TupleShape("row_num" if window.slide_on is SlideOn.ROW_NUM else "rank")

    def naming(self, window: Window) -> str:
        """Which tuples name windows, as the formula of `windows` says it."""
        part = "".join(f", {p}" for p in window.partition_by)
        if window.slide == 1:
            return "u ∈ T"
        if window.slide_on is SlideOn.ROW_NUM:
            position = f"rank(u, row_num{part})" if window.partition_by else "u.row_num"
            return f"{position} mod {window.slide} = 0"
        return f"rank(u, {window.attr.name}{part}) mod {window.slide} = 0"

    def wids(self, window: Window) -> str:
        assert window.range is not None
        r = short_text(window.range, window.attr.domain)
        name = window.attr.name
        which = self.naming(window)
        return (
            f"wids(t) = {{ w ∈ windows | t.{name} ≤ w < t.{name} + {r} }},  "
            f"windows = {{ u.{name} | {which}{same_partition(window)} }}"
        )

    def extent(self, window: Window) -> str:
        assert window.range is not None
        return f"extent(w) = {{ u | w − {short_text(window.range, window.attr.domain)} < u.{window.attr.name} ≤ w }}"

    def cited(self, window: Window) -> tuple[Section, ...]:
        return (sections.SLIDE_BY_TUPLE if window.slide == 1 else sections.SLIDE_BY_ROWS,)

    def slide_text(self, window: Window) -> str:
        assert window.slide is not None
        return quantity_text(window.slide, Domain.ROW_NUM)

    def slide_attribute(self, window: Window) -> str | None:
        return "row_num" if window.slide_on is SlideOn.ROW_NUM else f"rank({window.attr.name})"

    def extents(self, window: Window, tuples: list[Member], sql: Sql) -> list[Extent]:
        """Windows named by RATTR values: every SLIDE-th arrival's (or rank's), per partition."""
        assert window.range is not None and window.slide is not None
        domain = window.attr.domain
        out = []
        for part in partitions(tuples):
            names = sorted({t.a for t in part if t.a is not None and t.slide_pos % window.slide == 0})
            for w in names:
                members = [t for t in part if t.a is not None and w - window.range < t.a <= w]
                out.append(
                    Extent(
                        from_base(w, domain),
                        from_base(w - window.range, domain),
                        from_base(w, domain),
                        part[0].partition,
                        members,
                        (w,),
                    )
                )
        return out

    def final_text(self, window: Window) -> str:
        return "the window named by value w, (w − RANGE, w], once the punctuation is past w"


def resolve_by_tuple(
    clauses: Clauses,
    rng: ast.RangeClause | None,
    slide: ast.SlideClause | None,
    attr: Attribute,
    slide_on: SlideOn,
    end_attr: Attribute | None,
) -> Window:
    """Windows named by every n-th arrival or rank: a bounded RANGE, a SLIDE in rows, no grid."""
    if end_attr is not None:
        raise WQLSemanticError("interval events slide on their own attribute, not on rows", span=clauses.spec.span)
    if rng is None or rng.quantity is None:
        raise WQLSemanticError(
            "a window that slides by rows needs a bounded RANGE",
            span=(rng or clauses.spec).span,
            hint=f"e.g. [RANGE 5 MINUTES RATTR {attr.name} SLIDE 1 ROW]",
        )
    range_value = to_base(rng.quantity, attr.domain, attr.name, "RANGE")
    if slide is None:
        rows = 1
        clauses.notes.append("SLIDE 1 ROW (SATTR without SLIDE)")
    else:
        assert slide.quantity is not None
        if slide.quantity.unit not in (None, ast.Unit.ROWS):
            raise WQLTypeError(
                f"SLIDE over {slide_on.value} counts rows, not time",
                span=slide.quantity.span,
                hint="write SLIDE n ROWS",
            )
        rows = int(to_base(slide.quantity, Domain.ROW_NUM, ROW_NUM, "SLIDE"))
    clauses.reject_align("windows that slide by rows are named by their last tuple, so they have no grid")
    clauses.variants(Form.SLIDE_BY_TUPLE, None)
    form = Form.SLIDE_BY_TUPLE if slide_on is SlideOn.ROW_NUM else Form.SLIDE_BY_RANK
    return Window(
        form=form,
        attr=attr,
        range=range_value,
        slide=rows,
        slide_on=slide_on,
        partition_by=clauses.partition(),
        slack=clauses.slack(attr),
        defaults=tuple(clauses.notes),
        units=(rng.quantity.unit, ast.Unit.ROWS),
        slack_unit=clauses.slack_unit(),
    )


KIND = SlideByTuple()
