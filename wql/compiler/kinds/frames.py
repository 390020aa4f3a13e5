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
from typing import TYPE_CHECKING, Any

from wql.compiler.kinds.base import Extent, Member, Sql, amount
from wql.compiler.kinds.data_driven import DataDriven, Run, frame_of, ordering
from wql.compiler.schema import Domain
from wql.compiler.units import Number, number_text, quantity_text
from wql.compiler.windows import WindowKind

if TYPE_CHECKING:
    from wql.compiler.codegen.common import Context
    from wql.compiler.sections import Section
    from wql.compiler.windows import Frame, Window


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
        from wql.compiler import sections

        return (sections.FRAMES,)

    def is_final_rule(self, ctx: Context) -> None:
        code = ctx.rules
        code('"""A frame is final once the punctuation is past the tuple that closed it (_close): a tuple still')
        code('to come sorts after that one, so every tuple the frame depends on is known."""')
        code('return F.coalesce(F.col("_close") < punctuation, F.lit(False))')

    def missed_text(self, ctx: Context, convert: str) -> str:
        from wql.compiler.codegen.emit import py

        named = "the frame at %s or next to it"
        return f"F.format_string({py(named)}, {convert.format('t')}.cast('string'))"

    def closing_point(self, window: Window) -> list[tuple[str, str]]:
        return [("_closed_pos", "long")]

    def closing_text(self, window: Window) -> str:
        return "after the tuple that closed it"

    def at_or_before(self, ctx: Context) -> str:
        from wql.compiler.codegen.emit import col
        from wql.compiler.schema import ROW_NUM

        pos = col(ctx.query.stream.row_num or ROW_NUM)
        return f'(t < F.col("_closed_t")) | ((t == F.col("_closed_t")) & ({pos} <= F.col("_closed_pos")))'

    def final(self, window: Window, extent: Extent, point: Number) -> bool:
        """A frame is final once `point` is past the value of the tuple that closed it: every tuple before that
        one in (value, arrival) order is known, and the frame depends on nothing after it. Not at that value:
        the closing tuple itself may still arrive there, after the punctuation did."""
        return extent.closer is not None and extent.closer.a is not None and point > extent.closer.a

    def final_text(self, window: Window) -> str:
        return f"a frame once the punctuation is past the tuple that closed it: {self.closer_text}"


class Threshold(Frames):
    name = "threshold-frames"
    closer_text = "the tuple after it (its predicate false or NULL)"

    def matches(self, window: Window) -> bool:
        return window.kind is WindowKind.THRESHOLD

    def reason(self, window: Window) -> str:
        return (
            f"t's frame is the run of tuples around t in {self.order(window)} where the predicate holds; a later "
            "tuple can join two runs or split one, so no bound on t's window-id is known until its neighbours "
            "are all in"
        )

    def describe(self, window: Window) -> str:
        frame = frame_of(window)
        text = f"{ordering(window)} threshold frame (runs where {frame.expression_text()} holds"
        if frame.minimum is not None:
            size = f"{int(frame.minimum)} rows" if frame.minimum_rows else amount(frame.minimum, window.attr.domain)
            text += f", at least {size}"
        return text + ")" + self.partitioned(window)

    def extent(self, window: Window) -> str:
        frame, a = frame_of(window), window.attr.name
        rule = f"p(uᵢ) for p = {frame.expression_text()} (false or NULL ends the run and is in no frame)"
        if frame.minimum is not None:
            rule += (
                f", n ≥ {int(frame.minimum)}"
                if frame.minimum_rows
                else f", uₙ.{a} − u₁.{a} ≥ {amount(frame.minimum, window.attr.domain)}"
            )
        return self.extent_text(window, rule)

    def rule(self, window: Window) -> dict[str, Any]:
        frame = frame_of(window)
        minimum = None
        if frame.minimum is not None:
            domain = Domain.ROW_NUM if frame.minimum_rows else window.attr.domain
            minimum = quantity_text(frame.minimum, domain, frame.units[0])
        return {"predicate": frame.condition, "minimum": minimum}

    def runs(self, window: Window, ordered: list[Member], sql: Sql) -> list[Run]:
        condition = frame_of(window).condition
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

    def rule_columns(self, ctx: Context) -> list[str]:
        from wql.compiler.codegen.emit import expr

        condition = frame_of(ctx.window).condition
        assert condition is not None
        return [f'{expr(condition)}.alias("_p")']

    def kernel_rule(self, window: Window) -> str:
        return '{"kind": "threshold"}'

    def mark_starts(self, ctx: Context, closes: bool) -> None:
        from wql.compiler.codegen.common import ATTR
        from wql.compiler.codegen.emit import py

        code = ctx.code
        code.comment("A frame starts where the predicate holds and did not hold for the previous tuple (or none).")
        code.comment("A false or NULL predicate ends the frame; that tuple is in no frame.")
        code('rows = rows.withColumn("_p", F.coalesce(F.col("_p"), F.lit(False)))')
        if closes:
            code.comment(f"The next tuple's {ATTR}: after a frame's last, the tuple that closed it.")
            code(f'rows = rows.withColumn("_next", F.lead({py(ATTR)}).over(ordered))')
        code('began = F.col("_p") & ~F.lag("_p", 1, False).over(ordered)')
        code('rows = rows.withColumn("_start", F.when(began, 1).otherwise(0))')

    def keep_labelled(self, ctx: Context) -> None:
        ctx.code('rows = rows.where(F.col("_p"))')

    def kept(self, window: Window, run: list[Member]) -> bool:
        frame = frame_of(window)
        if frame.minimum is None:
            return True
        size = len(run) if frame.minimum_rows else run[-1].a - run[0].a  # type: ignore[operator]
        return size >= frame.minimum  # a shorter run is no frame


class Delta(Frames):
    name = "delta-frames"
    closer_text = "the tuple after it (the next frame's first, or a NULL x)"

    def matches(self, window: Window) -> bool:
        return window.kind is WindowKind.DELTA

    def chained(self, window: Window) -> str | None:
        return "a delta frame is anchored at its first tuple, which depends on where the previous frame began"

    def reason(self, window: Window) -> str:
        return (
            f"a frame is anchored at its first tuple in {self.order(window)}; a later tuple that lands before t can "
            "move every anchor after it, so no bound on t's window-id is known until the tuples before t are all in"
        )

    def describe(self, window: Window) -> str:
        frame = frame_of(window)
        assert frame.delta is not None
        return (
            f"{ordering(window)} delta frame ({frame.expression_text()} within {number_text(frame.delta)} "
            f"of the frame's first tuple){self.partitioned(window)}"
        )

    def extent(self, window: Window) -> str:
        frame = frame_of(window)
        assert frame.delta is not None
        x = frame.expression_text()
        rule = f"|uᵢ.x − u₁.x| ≤ {number_text(frame.delta)} for x = {x} (a NULL x ends the frame and is in no frame)"
        return self.extent_text(window, rule)

    def rule(self, window: Window) -> dict[str, Any]:
        frame = frame_of(window)
        return {"delta": frame.delta, "on": frame.on}

    def rule_columns(self, ctx: Context) -> list[str]:
        from wql.compiler.codegen.emit import expr

        frame = frame_of(ctx.window)
        assert frame.on is not None
        x = expr(frame.on)
        if frame.on_integral:
            return [f'{x}.cast("bigint").alias("_x")']
        return [f'F.nanvl({x}.cast("double"), F.lit(None)).alias("_x")']  # NaN: like NULL

    def kernel_rule(self, window: Window) -> str:
        return '{"kind": "delta", "delta": DELTA}'

    def runs(self, window: Window, ordered: list[Member], sql: Sql) -> list[Run]:
        frame = frame_of(window)
        assert frame.on is not None and frame.delta is not None
        runs: list[Run] = []
        current: list[Member] = []
        anchor: Any = None  # the frame's first x
        for u in ordered:
            x = sql.evaluate(frame.on, u.row)
            if x is None or (isinstance(x, float) and math.isnan(x)):
                if current:  # a NULL x ends the frame, and the tuple is in no frame
                    runs.append((current, u))
                current = []
                continue
            if not current or not (x == anchor or abs(x - anchor) <= frame.delta):
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
    closer_text = "its last tuple (where the condition held)"

    def matches(self, window: Window) -> bool:
        return window.kind is WindowKind.AGGREGATE

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
            f"{ordering(window)} aggregate frame (until {frame_of(window).expression_text()}){self.partitioned(window)}"
        )

    def extent(self, window: Window) -> str:
        a = window.attr.name
        rule = (
            f"c(u₁ … uᵢ) false for i < n and true for i = n, c = {frame_of(window).expression_text()} "
            "(the stream's last frame may end without c)"
        )
        return (
            f"extent(w) = {self.run_text(window)}, u₁.{a} = w after the previous frame's last tuple, {rule}; "
            f"window [u₁.{a}, uₙ.{a}]"
        )

    def rule(self, window: Window) -> dict[str, Any]:
        frame = frame_of(window)
        return {"condition": frame.condition, "running_aggregates": [r.sql for r in frame.running]}

    def rule_columns(self, ctx: Context) -> list[str]:
        from wql.compiler.codegen.emit import expr, py

        columns = []
        for index, running in enumerate(frame_of(ctx.window).running):
            name = py(f"_c{index}")
            if running.arg is None:
                continue  # count(*): the kernel counts tuples
            if running.function == "count":  # only whether a value is there
                columns.append(f"F.when({expr(running.arg)}.isNotNull(), F.lit(1)).alias({name})")
            else:
                kind = "bigint" if running.integral else "double"
                columns.append(f"{expr(running.arg)}.cast({py(kind)}).alias({name})")
        return columns

    def kernel_rule(self, window: Window) -> str:
        from wql.compiler.codegen.emit import py

        frame = frame_of(window)
        running = [(r.function, None if r.arg is None else f"_c{i}", r.integral) for i, r in enumerate(frame.running)]
        return f'{{"kind": "aggregate", "running": {py(running)}, "test": {py(frame.test)}}}'

    def runs(self, window: Window, ordered: list[Member], sql: Sql) -> list[Run]:
        frame = frame_of(window)
        runs: list[Run] = []
        current: list[Member] = []
        for u in ordered:
            current.append(u)
            if condition_holds(frame, current, sql):
                runs.append((current, u))  # the tuple at which the condition first holds is the frame's last
                current = []
        if current:
            runs.append((current, None))
        return runs


def condition_holds(frame: Frame, members: list[Member], sql: Sql) -> bool:
    """A FRAME AGGREGATE condition over the frame so far: each aggregate computed afresh, SQL's rules."""
    from sqlglot import exp

    from wql.grammar.expressions import parse_sql_expression, render_sql

    assert frame.condition is not None
    values = {f"_running{i}": sql.aggregate(r.sql, [m.row for m in members]) for i, r in enumerate(frame.running)}
    names = {r.sql: f"_running{i}" for i, r in enumerate(frame.running)}

    def swap(node: exp.Expression) -> exp.Expression:
        name = names.get(render_sql(node)) if isinstance(node, exp.AggFunc) else None
        return exp.column(name) if name else node

    condition = render_sql(parse_sql_expression(frame.condition).transform(swap))
    return sql.evaluate(condition, values) is True


THRESHOLD = Threshold()
DELTA = Delta()
AGGREGATE = Aggregate()
