"""Sliding n rows over rank: `[RANGE r RATTR a SLIDE n ROWS SATTR rank(a)]` (docs/semantics.md §2.8).

Every n-th tuple in a order (within its partition) names the window (w − r, w] ending at its value,
whatever order the tuples arrived in. With SLIDE 1 ROW it names every tuple's value, the windows of
slide-by-tuple (FCB); with n > 1 any later tuple with a smaller value shifts every rank above it, so
no bound on a tuple's window-ids is known until the stream is ordered (FCU).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wql.compiler import sections
from wql.compiler.classes import Classification, WindowClass, ordinal
from wql.compiler.kinds.base import partitioned
from wql.compiler.kinds.slide_by_tuple import SlideByTuple
from wql.compiler.windows import Form, Window
from wql.grammar.errors import WQLNotSupportedError

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section


class Rank(SlideByTuple):
    """Windows ending at the value of every n-th tuple in value order."""

    name = "rank"

    def matches(self, window: Window) -> bool:
        return window.form is Form.SLIDE_BY_RANK

    def classify(self, window: Window) -> Classification:
        assert window.slide is not None
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

    def describe(self, window: Window) -> str:
        return f"slide-by-{window.slide}-rows over rank({window.attr.name}){partitioned(window)} window"

    def cited(self, window: Window) -> tuple[Section, ...]:
        return (sections.SLIDE_BY_RANK,)

    def refuse_on_stream(self, query: Query) -> None:
        if query.emit == "changes" and query.window.slide != 1:
            raise WQLNotSupportedError(
                "EMIT CHANGES of windows named by rank: a later tuple can move every rank after it, so a window "
                "emitted as changed could stop existing, which needs retractions",
                hint="use EMIT FINAL",
            )


KIND = Rank()
