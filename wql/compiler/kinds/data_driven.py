"""What sessions and frames share: windows the data cuts (docs/semantics.md §2.16, §2.17).

Each window is a maximal run of consecutive tuples of a PATTR partition taken in (attribute,
row_num) order, named by its first tuple's value; a tuple whose attribute is NULL is in no window
and does not break a run. Whether a tuple belongs to a window depends on tuples after it, as far as
the data goes: every data-driven window is FCU. The subclasses (`sessions`, `frames`) say where a
run ends, and when a run is final on a stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from wql.compiler.classes import Classification, WindowClass
from wql.compiler.kinds.base import Extent, Kind, Member, Sql, from_base, partitions
from wql.compiler.kinds.clauses import Clauses
from wql.compiler.kinds.shapes import RuleName, RunShape, Shape
from wql.compiler.schema import Domain
from wql.compiler.units import Number, quantity_text
from wql.compiler.windows import Attribute, RunRule, Window
from wql.grammar import ast
from wql.grammar.errors import WQLNotSupportedError, WQLSemanticError

if TYPE_CHECKING:
    from wql.compiler.analysis import Query

Run = tuple[list[Member], Member | None]  # a window's tuples, and the tuple that closed it (None: the data ended)


def rule_of(window: Window) -> RunRule:
    assert window.rule is not None
    return window.rule


def order(window: Window, ties: bool) -> str:
    """How a window's tuples are ordered, in words: (ts, row_num) per user."""
    per = f" per {', '.join(window.partition_by)}" if window.partition_by else ""
    if not ties or window.attr.is_row_num:
        return f"{window.attr.name} order{per}"
    return f"({window.attr.name}, row_num) order{per}"


def ordering(window: Window) -> str:
    if window.attr.is_row_num:
        return "arrival-ordered"
    return "time-ordered" if window.attr.domain in {Domain.TIMESTAMP, Domain.DATE} else "value-ordered"


class DataDriven(Kind):
    """A session or a frame: a maximal run of consecutive tuples."""

    data_driven = True
    rule_name: ClassVar[RuleName]  # where a run ends (the shape's rule; the window's RunRule has its numbers)
    ties = True  # whether the order of tuples with equal values matters (frames: yes; sessions: no)
    closed_by_tuple = True  # whether a window's finality depends on the tuple after it (frames; not sessions)
    start_mark = "a predicate that turns true"  # what marks a window's first tuple, for the starts plan

    # ---------------------------------------------------------------- explain
    def classify(self, window: Window) -> Classification:
        return Classification(WindowClass.FCU, "forward, unbounded", self.reason(window))

    def reason(self, window: Window) -> str:
        """Why the window is FCU: which later arrivals can change t's window-id."""
        raise NotImplementedError

    def order(self, window: Window) -> str:
        return order(window, self.ties)

    def run_text(self, window: Window) -> str:
        return f"u₁ … uₙ consecutive in {self.order(window)}"

    def wids(self, window: Window) -> str:
        a = window.attr.name
        return f"wids(t) = {{ u₁.{a} }}, u₁ the first tuple of the run holding t (t with a NULL {a} is in none)"

    def rule(self, window: Window) -> dict[str, Any]:
        """The window's own rule (gap, predicate, delta, condition) as explain's `window.rule` shows it."""
        raise NotImplementedError

    def facts(self, window: Window) -> dict[str, Any]:
        domain = window.attr.domain
        return {
            "spec": window.spec_text(),
            "kind": window.form.value,
            "range": None,
            "slide": None,
            "range_attribute": window.attr.name,
            "slide_attribute": None,
            "rule": self.rule(window),
            "partition_by": list(window.partition_by),
            "slack": None
            if window.slack is None
            else {"amount": quantity_text(window.slack.amount, domain, window.slack_unit), "mode": window.slack.mode},
            "defaults": list(window.defaults),
        }

    # ---------------------------------------------------------------- what the plans need to know
    def shape(self, window: Window) -> Shape:
        return RunShape(
            rule=self.rule_name,
            noun=self.noun,
            ties=self.ties,
            closed_by_tuple=self.closed_by_tuple,
            start_mark=self.start_mark,
            chained=self.chained(window),
            merges_by_state=self.merges_by_state(window),
        )

    def chained(self, window: Window) -> str | None:
        """Why the window's starts depend on earlier starts (so neighbouring tuples cannot mark them), or None:
        then only a pass that follows the chain (the fold and scan plans) finds them."""
        return None

    def merges_by_state(self, window: Window) -> bool:
        """Whether a window's partial states, first and last value say all a tuple still to come needs to join,
        merge or start one, so that a stream can keep each open window as those alone (Spark's state store,
        docs/semantics.md §8.12) rather than its tuples. Frames end at tuples a condition picks: no."""
        return False

    # ---------------------------------------------------------------- the reference evaluator
    def runs(self, window: Window, ordered: list[Member], sql: Sql) -> list[Run]:
        """The partition's windows, each a list of consecutive tuples with the tuple that closed it (the one
        after it; AGGREGATE: its last, where the condition held; None: the data ended first); tuples in none
        are left out."""
        raise NotImplementedError

    def kept(self, window: Window, run: list[Member]) -> bool:
        """Whether a run is a window (a threshold run shorter than MIN is not)."""
        return True

    def end(self, window: Window, run: list[Member]) -> Number:
        """window_end, in base units: the run's last value ([u₁, uₙ])."""
        last = run[-1].a
        assert last is not None
        return last

    def extents(self, window: Window, tuples: list[Member], sql: Sql) -> list[Extent]:
        """Maximal runs of consecutive tuples, straight from semantics.md §2."""
        domain = window.attr.domain
        out = []
        for part in partitions(tuples):
            ordered = sorted((t for t in part if t.a is not None), key=lambda t: (t.a, t.row_num))
            for run, closer in self.runs(window, ordered, sql):
                if not self.kept(window, run):
                    continue
                first = run[0]
                out.append(
                    Extent(
                        from_base(first.a, domain),
                        from_base(first.a, domain),
                        from_base(self.end(window, run), domain),
                        part[0].partition,
                        run,
                        (first.a, first.row_num),  # two frames may start at one value (ties): arrival tells them apart
                        closer,
                    )
                )
        return out

    # ---------------------------------------------------------------- on a stream
    def final(self, window: Window, extent: Extent, point: Number) -> bool:
        """Whether punctuation `point` makes the window final on a stream (semantics.md §8.4)."""
        raise NotImplementedError

    def kept_text(self, query: Query, cells: bool) -> str:
        window = query.window
        what = self.noun
        if window.slack is not None and window.slack.mode == "generous":
            return (
                f"rows: per key, every tuple after its last final {what} (GENEROUS places an admitted late tuple "
                f"among them; with a threshold or delta frame that includes the tuples in no frame), from which the "
                f"windows stage finds the open {what}s again; and each key's closing point, from its last final {what}"
            )
        kept = (
            f"rows: per key, the tuples from its first {what} not final yet on, from which the windows stage "
            f"finds the open {what}s again with the next trigger's tuples"
        )
        if window.partition_by and self.cuts_from_windows(query):
            kept += (
                f"; and each key's open {what}s, so that a trigger computes again only the keys its tuples touch; "
                "every key's tuples are cut at its first open session, read off those windows"
            )
        elif window.partition_by:
            kept += (
                f"; and each key's open {what}s, so that a trigger computes again only the keys its tuples touch "
                "(a key none touches keeps its tuples as they were until one does)"
            )
        return kept

    def late_text(self, query: Query, name: str) -> str | None:
        window = query.window
        if window.slack is None or window.slack.mode != "generous":
            return None
        what = self.noun
        return (
            f"a tuple whose {name} is below the punctuation at the start of its trigger (GENEROUS): after the "
            f"point its key's last final {what} closes the key's history up to, it is placed as if on time (it "
            f"can merge, split or start {what}s); at or before it, it is in no window; either way it is counted "
            "and written to the late-rows output"
        )

    def refuse_on_stream(self, query: Query) -> None:
        if query.emit == "changes":
            raise WQLNotSupportedError(
                f"EMIT CHANGES of {query.window.form.value} windows: a tuple that arrives out of order can split a "
                "frame or move where one ends, so a frame emitted as changed could stop existing, which needs "
                "retractions (sessions have them)",
                hint="use EMIT FINAL",
            )


def gap_of(window: Window) -> Number:
    rule = rule_of(window)
    assert rule.gap is not None
    return rule.gap


def order_attribute(clauses: Clauses, session: ast.SessionClause | None, frame: ast.FrameClause | None) -> Attribute:
    """The attribute that orders the tuples: WATTR, or the default the GAP/MIN unit implies."""
    wattr = clauses.get(ast.WattrClause)
    if wattr is not None:
        assert isinstance(wattr, ast.WattrClause)
        if len(wattr.attrs) == 2:
            raise WQLNotSupportedError(
                "sessions and frames over interval events (WATTR (start, end))",
                span=wattr.span,
                hint="order the tuples by one attribute, e.g. WATTR start",
            )
        return clauses.attribute(wattr.attrs[0])
    if session is not None:
        return clauses.infer_attribute(session.gap)
    assert frame is not None
    minimum = frame.minimum
    if minimum is not None and minimum.unit is not None and minimum.unit is not ast.Unit.ROWS:
        return clauses.infer_attribute(minimum)
    stamps = [c for c in clauses.stream.columns if c.domain is Domain.TIMESTAMP]
    if len(stamps) == 1:
        clauses.notes.append(f"WATTR {stamps[0].name} (the stream's only TIMESTAMP column orders the frames)")
        return Attribute(stamps[0].name, stamps[0].domain)
    raise WQLSemanticError(
        "which attribute orders the tuples of these frames?",
        span=frame.span,
        hint="name it with WATTR: a TIMESTAMP, a number, or row_num for arrival order",
    )
