"""Frames: threshold, delta and aggregate (docs/semantics.md §2.17).

- `FRAME THRESHOLD (p) [MIN n [ROWS | unit]]`: maximal runs where p is true; a tuple where p is false
  or NULL ends the run and is in no frame.
- `FRAME DELTA d ON x`: a frame keeps every following tuple whose x is within d of its first x.
- `FRAME AGGREGATE (c)`: the tuple at which c, over the frame's aggregates so far, first holds is the
  frame's last.
Ties of the attribute are broken by row_num (arrival). The window is [u₁.a, uₙ.a].
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from wql.compiler import sections
from wql.compiler.kinds.base import Expressions, Extent, Member, Sql, amount
from wql.compiler.kinds.conditions import aggregate_test
from wql.compiler.kinds.data_driven import DataDriven, Run, ordering, rule_of
from wql.compiler.schema import FLOATING_TYPES, INTEGRAL_TYPES, ROW_NUM, Domain
from wql.compiler.units import Number, number_text, quantity_text, to_base
from wql.compiler.windows import Attribute, Form, RunRule, Window
from wql.grammar import ast
from wql.grammar.errors import WQLNotSupportedError, WQLTypeError
from wql.grammar.expressions import parse_sql_expression, render_sql

if TYPE_CHECKING:
    from wql.compiler.sections import Section


class Frames(DataDriven):
    """What the three frame kinds share: their words, and when a frame is final."""

    noun = "frame"
    closer_text = ""  # the tuple that closes a frame, in words

    def partitioned(self, window: Window) -> str:
        return f", per {', '.join(window.partition_by)}" if window.partition_by else ""

    def extent_text(self, window: Window, rule: str) -> str:
        a = window.attr.name
        return f"extent(w) = {self.run_text(window)}, u₁.{a} = w, {rule}, maximal; window [u₁.{a}, uₙ.{a}]"

    def cited(self, window: Window) -> tuple[Section, ...]:
        return (sections.FRAMES,)

    def final(self, window: Window, extent: Extent, point: Number) -> bool:
        """A frame is final once `point` is past the value of the tuple that closed it: every tuple before that
        one in (value, arrival) order is known, and the frame depends on nothing after it. Not at that value:
        the closing tuple itself may still arrive there, after the punctuation did."""
        return extent.closer is not None and extent.closer.a is not None and point > extent.closer.a

    def final_text(self, window: Window) -> str:
        return f"a frame once the punctuation is past the tuple that closed it: {self.closer_text}"


class Threshold(Frames):
    name = "threshold-frames"
    rule_name = "threshold"
    closer_text = "the tuple after it (its predicate false or NULL)"

    def matches(self, window: Window) -> bool:
        return window.form is Form.THRESHOLD

    def reason(self, window: Window) -> str:
        return (
            f"t's frame is the run of tuples around t in {self.order(window)} where the predicate holds; a later "
            "tuple can join two runs or split one, so no bound on t's window-id is known until its neighbours "
            "are all in"
        )

    def describe(self, window: Window) -> str:
        rule = rule_of(window)
        text = f"{ordering(window)} threshold frame (runs where {rule.expression_text()} holds"
        if rule.minimum is not None:
            size = f"{int(rule.minimum)} rows" if rule.minimum_rows else amount(rule.minimum, window.attr.domain)
            text += f", at least {size}"
        return text + ")" + self.partitioned(window)

    def extent(self, window: Window) -> str:
        rule, a = rule_of(window), window.attr.name
        rule_text = f"p(uᵢ) for p = {rule.expression_text()} (false or NULL ends the run and is in no frame)"
        if rule.minimum is not None:
            rule_text += (
                f", n ≥ {int(rule.minimum)}"
                if rule.minimum_rows
                else f", uₙ.{a} − u₁.{a} ≥ {amount(rule.minimum, window.attr.domain)}"
            )
        return self.extent_text(window, rule_text)

    def rule(self, window: Window) -> dict[str, Any]:
        rule = rule_of(window)
        minimum = None
        if rule.minimum is not None:
            domain = Domain.ROW_NUM if rule.minimum_rows else window.attr.domain
            minimum = quantity_text(rule.minimum, domain, rule.units[0])
        return {"predicate": rule.condition, "minimum": minimum}

    def resolve_expressions(self, window: Window, expressions: Expressions) -> Window:
        """The predicate, resolved: a condition on one tuple's columns that is true or false."""
        rule = rule_of(window)
        source = rule.source
        assert isinstance(source, ast.Expr)
        sql = render_sql(expressions.resolve(source, "a FRAME THRESHOLD predicate", allow_aggregates=False))
        kind = expressions.type_of(sql)
        if kind is not None and kind != "BOOLEAN":
            raise WQLTypeError(
                f"a FRAME THRESHOLD predicate is true or false, and '{source.sql}' is {kind}",
                span=source.span,
                hint="write a condition, e.g. FRAME THRESHOLD (speed < 40)",
            )
        return replace(window, rule=replace(rule, condition=sql))

    def runs(self, window: Window, ordered: list[Member], sql: Sql) -> list[Run]:
        condition = rule_of(window).condition
        assert condition is not None
        runs: list[Run] = []
        current: list[Member] = []
        for u in ordered:
            if sql.evaluate(condition, u.row) is True:
                current.append(u)
            elif current:  # a false or NULL predicate ends the run, and the tuple is in no frame
                runs.append((current, u))
                current = []
        if current:
            runs.append((current, None))
        return runs

    def kept(self, window: Window, run: list[Member]) -> bool:
        rule = rule_of(window)
        if rule.minimum is None:
            return True
        size = len(run) if rule.minimum_rows else run[-1].a - run[0].a  # type: ignore[operator]
        return size >= rule.minimum  # a shorter run is no frame


class Delta(Frames):
    name = "delta-frames"
    rule_name = "delta"
    closer_text = "the tuple after it (the next frame's first, or a NULL x)"

    def matches(self, window: Window) -> bool:
        return window.form is Form.DELTA

    def chained(self, window: Window) -> str | None:
        return "a delta frame is anchored at its first tuple, which depends on where the previous frame began"

    def reason(self, window: Window) -> str:
        return (
            f"a frame is anchored at its first tuple in {self.order(window)}; a later tuple that lands before t can "
            "move every anchor after it, so no bound on t's window-id is known until the tuples before t are all in"
        )

    def describe(self, window: Window) -> str:
        rule = rule_of(window)
        assert rule.delta is not None
        return (
            f"{ordering(window)} delta frame ({rule.expression_text()} within {number_text(rule.delta)} "
            f"of the frame's first tuple){self.partitioned(window)}"
        )

    def extent(self, window: Window) -> str:
        rule = rule_of(window)
        assert rule.delta is not None
        x = rule.expression_text()
        rule_text = (
            f"|uᵢ.x − u₁.x| ≤ {number_text(rule.delta)} for x = {x} (a NULL x ends the frame and is in no frame)"
        )
        return self.extent_text(window, rule_text)

    def rule(self, window: Window) -> dict[str, Any]:
        rule = rule_of(window)
        return {"delta": rule.delta, "on": rule.on}

    def resolve_expressions(self, window: Window, expressions: Expressions) -> Window:
        """x, resolved: a column or an expression in parentheses that gives an integer or a DOUBLE."""
        rule = rule_of(window)
        source = rule.source
        if isinstance(source, ast.Name):
            sql = expressions.column(source)
        else:
            assert isinstance(source, ast.Expr)
            sql = render_sql(expressions.resolve(source, "FRAME DELTA … ON", allow_aggregates=False))
        kind = expressions.type_of(sql)
        if kind not in INTEGRAL_TYPES | FLOATING_TYPES:
            shown = source.text if isinstance(source, ast.Name) else source.sql
            raise (WQLNotSupportedError if kind == "DECIMAL" else WQLTypeError)(
                f"FRAME DELTA follows a number, and '{shown}' is {kind or 'not a number WQL can type'}",
                span=source.span,
                hint="name an INT, BIGINT or DOUBLE column, or an expression in parentheses that gives one",
            )
        return replace(window, rule=replace(rule, on=sql, on_integral=kind in INTEGRAL_TYPES))

    def runs(self, window: Window, ordered: list[Member], sql: Sql) -> list[Run]:
        rule = rule_of(window)
        assert rule.on is not None and rule.delta is not None
        runs: list[Run] = []
        current: list[Member] = []
        anchor: Any = None  # the frame's first x
        for u in ordered:
            x = sql.evaluate(rule.on, u.row)
            if x is None or (isinstance(x, float) and math.isnan(x)):
                if current:  # a NULL x ends the frame, and the tuple is in no frame
                    runs.append((current, u))
                current = []
                continue
            if not current or not (x == anchor or abs(x - anchor) <= rule.delta):
                if current:
                    runs.append((current, u))
                current = []
                anchor = x
            current.append(u)
        if current:
            runs.append((current, None))
        return runs


class Aggregate(Frames):
    name = "aggregate-frames"
    rule_name = "aggregate"
    closer_text = "its last tuple (where the condition held)"

    def matches(self, window: Window) -> bool:
        return window.form is Form.AGGREGATE

    def chained(self, window: Window) -> str | None:
        return "an aggregate frame's running aggregate restarts after each frame, which no window function can follow"

    def reason(self, window: Window) -> str:
        return (
            f"a frame ends where the running aggregate of its tuples in {self.order(window)} first meets the "
            "condition; a later tuple that lands before t changes every running aggregate after it, so no bound "
            "on t's window-id is known until the tuples before t are all in"
        )

    def describe(self, window: Window) -> str:
        return (
            f"{ordering(window)} aggregate frame (until {rule_of(window).expression_text()}){self.partitioned(window)}"
        )

    def extent(self, window: Window) -> str:
        a = window.attr.name
        rule_text = (
            f"c(u₁ … uᵢ) false for i < n and true for i = n, c = {rule_of(window).expression_text()} "
            "(the stream's last frame may end without c)"
        )
        return (
            f"extent(w) = {self.run_text(window)}, u₁.{a} = w after the previous frame's last tuple, {rule_text}; "
            f"window [u₁.{a}, uₙ.{a}]"
        )

    def rule(self, window: Window) -> dict[str, Any]:
        rule = rule_of(window)
        return {"condition": rule.condition, "running_aggregates": [r.sql for r in rule.running]}

    def resolve_expressions(self, window: Window, expressions: Expressions) -> Window:
        """The condition, resolved into running aggregates and a test over them."""
        rule = rule_of(window)
        source = rule.source
        assert isinstance(source, ast.Expr)
        tree = expressions.resolve(source, "a FRAME AGGREGATE condition", allow_aggregates=True)
        running, test = aggregate_test(
            tree, source, lambda node: expressions.span_of(node, source), expressions.type_of
        )
        return replace(window, rule=replace(rule, condition=render_sql(tree), running=running, test=test))

    def runs(self, window: Window, ordered: list[Member], sql: Sql) -> list[Run]:
        rule = rule_of(window)
        runs: list[Run] = []
        current: list[Member] = []
        for u in ordered:
            current.append(u)
            if condition_holds(rule, current, sql):
                runs.append((current, u))  # the tuple at which the condition first holds is the frame's last
                current = []
        if current:
            runs.append((current, None))
        return runs


def condition_holds(rule: RunRule, members: list[Member], sql: Sql) -> bool:
    """A FRAME AGGREGATE condition over the frame so far: each aggregate computed afresh, SQL's rules."""
    assert rule.condition is not None
    values = {f"_running{i}": sql.aggregate(r.sql, [m.row for m in members]) for i, r in enumerate(rule.running)}
    names = {r.sql: f"_running{i}" for i, r in enumerate(rule.running)}

    def swap(node: exp.Expression) -> exp.Expression:
        name = names.get(render_sql(node)) if isinstance(node, exp.AggFunc) else None
        return exp.column(name) if name else node

    condition = render_sql(parse_sql_expression(rule.condition).transform(swap))
    return sql.evaluate(condition, values) is True


def frame_rule(frame: ast.FrameClause, attr: Attribute) -> tuple[RunRule, Form]:
    """A frame's rule from its clause: THRESHOLD's MIN, DELTA's d (its expressions resolve with the query)."""
    if frame.rule == "threshold":
        minimum, rows = None, False
        if frame.minimum is not None:
            if frame.minimum.unit is ast.Unit.ROWS:
                minimum = to_base(frame.minimum, Domain.ROW_NUM, ROW_NUM, "MIN")
                rows = True
            else:
                minimum = to_base(frame.minimum, attr.domain, attr.name, "MIN")
        unit = frame.minimum.unit if frame.minimum is not None else None
        return (
            RunRule(minimum=minimum, minimum_rows=rows, source=frame.condition, units=(unit, None)),
            Form.THRESHOLD,
        )
    if frame.rule == "delta":
        assert frame.delta is not None
        delta = frame.delta
        if delta.unit is not None:
            raise WQLTypeError(
                "DELTA is in the units of the attribute after ON: drop the unit",
                span=delta.span,
                hint=f"e.g. FRAME DELTA {format(delta.value, 'f')} ON speed",
            )
        if not delta.value.is_finite() or delta.value < 0 or delta.value.adjusted() > 18:
            raise WQLTypeError("DELTA must be a number ≥ 0", span=delta.span)
        value: Number = int(delta.value) if delta.value == delta.value.to_integral_value() else float(delta.value)
        return RunRule(delta=value, source=frame.on), Form.DELTA
    return RunRule(source=frame.condition), Form.AGGREGATE


# shared clauses ---------------------------------------------------------------------


THRESHOLD = Threshold()
DELTA = Delta()
AGGREGATE = Aggregate()
