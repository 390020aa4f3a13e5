"""CUMULATE windows: `[RANGE r SLIDE s CUMULATE WATTR a]`, Flink's CUMULATE (docs/semantics.md §2.13).

The axis is cut into periods of length r on the grid o + j·r; inside each, the windows grow by s
from the period's start, m = r/s of them, the last one the whole period. Window w ends at
o + (w+1)·s, like a sliding window, and starts at its period's start, o + ⌊w/m⌋·r.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wql.compiler import sections
from wql.compiler.kinds.clauses import Clauses
from wql.compiler.kinds.grid import Grid
from wql.compiler.schema import Domain
from wql.compiler.units import Number, short_text
from wql.compiler.windows import Attribute, Form, Window
from wql.grammar import ast
from wql.grammar.errors import WQLNotSupportedError, WQLSemanticError

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section


class Cumulate(Grid):
    """Windows growing by SLIDE from the start of each period of RANGE."""

    name = "cumulate"
    reach = "period"  # a window starts where its period does

    def matches(self, window: Window) -> bool:
        return window.form is Form.CUMULATE and window.calendar is None

    def grid_what(self, window: Window) -> str:
        return f"cumulating {super().grid_what(window)}"

    def describe_grid(self, window: Window, basis: str, partitioned: str) -> str:
        assert window.slide is not None
        return (
            f"{basis}{partitioned} cumulating window (CUMULATE): {window.windows_per_period} windows per period, "
            f"growing by {short_text(window.slide, window.attr.domain)} from the period's start"
        )

    def wids_range(self, window: Window, a: str, o: str, first: str) -> str:
        assert window.range is not None
        r = short_text(window.range, window.attr.domain)
        period = f"⌊({a}{o}) / {r}⌋" if o else f"⌊{a} / {r}⌋"
        m = window.windows_per_period
        return f"wids(t) = {first} … {m}·({period} + 1) − 1  ({m} windows per period)"

    def extent_of(self, window: Window, a: str, end: str, o: str, where: str) -> str:
        assert window.range is not None
        start = f"{o}⌊w / {window.windows_per_period}⌋·{short_text(window.range, window.attr.domain)}"
        return f"extent(w) = {{ t | {start} ≤ {a} < {end} }}{where}"

    def cited(self, window: Window) -> tuple[Section, ...]:
        if not window.is_tuple_based:
            return (sections.CUMULATE,)
        return (sections.CUMULATE, sections.PARTITIONED if window.partition_by else sections.TUPLE_BASED)

    def bounds(self, window: Window, w: int) -> tuple[Number, Number]:
        """From the start of w's period."""
        assert window.range is not None and window.slide is not None
        return window.origin + (w // window.windows_per_period) * window.range, window.origin + (w + 1) * window.slide

    def kept_cells(self, query: Query, per: str, reach: str) -> str:
        return f"cells of one SLIDE: {per}, those of the periods that still have an open window"


def check_cumulate(
    clauses: Clauses,
    clause: ast.WindowClause,
    slide: ast.SlideClause | None,
    attr: Attribute,
    end_attr: Attribute | None,
    range_value: Number | None,
    slide_value: Number,
    unbounded: bool,
) -> None:
    """CUMULATE needs a period (RANGE) that is a whole number of steps (SLIDE), as Flink's does."""
    if unbounded or range_value is None:
        raise WQLSemanticError(
            "CUMULATE needs a bounded RANGE, the period its windows grow over",
            span=clause.span,
            hint="RANGE UNBOUNDED is already a landmark window that cumulates forever",
        )
    if slide is None or slide.quantity is None:
        raise WQLSemanticError(
            "CUMULATE needs SLIDE: the step its windows grow by",
            span=clause.span,
            hint="e.g. [RANGE 1 DAY SLIDE 1 HOUR CUMULATE]",
        )
    if slide_value > range_value or range_value % slide_value != 0:
        raise WQLSemanticError(
            "CUMULATE needs a RANGE that is a whole number of SLIDEs: each period ends with its last window",
            span=slide.quantity.span,
        )
    if end_attr is not None:
        raise WQLNotSupportedError("CUMULATE windows over interval events", span=clause.span)
    if attr.domain is Domain.FLOAT and not all(float(v).is_integer() for v in (range_value, slide_value)):
        raise WQLNotSupportedError(
            "CUMULATE over a DOUBLE attribute with fractional RANGE or SLIDE (edges are exact for whole numbers)",
            span=clause.span,
        )


KIND = Cumulate()
