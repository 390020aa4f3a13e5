"""Sessions: `[SESSION GAP g [MAX m] [KAFKA] WATTR a]` (docs/semantics.md §2.16).

Consecutive tuples uᵢ, uᵢ₊₁ of a partition are in one session when uᵢ₊₁.a − uᵢ.a ≤ g, and with MAX also
uᵢ₊₁.a < u₁.a + m. The window is [u₁.a, uₙ.a + g) as Spark's session_window and Flink report it, cut
to u₁.a + m with MAX; with KAFKA it is Kafka Streams' [u₁.a, uₙ.a], and WHERE filters records before
sessions form, as Kafka's DSL does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wql.compiler.kernels.names import CHANGE
from wql.compiler.kinds.base import Extent, Member, Sql, amount
from wql.compiler.kinds.data_driven import DataDriven, Run, frame_of, gap_of, ordering
from wql.compiler.units import Number, quantity_text
from wql.compiler.windows import WindowKind

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.codegen.common import Context
    from wql.compiler.sections import Section
    from wql.compiler.windows import Window


class Sessions(DataDriven):
    """Runs of tuples at most GAP apart."""

    name = "sessions"
    noun = "session"
    retracts = True  # a tuple out of order can merge two sessions or move one's start
    ties = False  # equal values are never in different sessions
    closed_by_tuple = False  # a session is final once the punctuation is GAP past its last tuple
    start_mark = "a gap above GAP"

    def matches(self, window: Window) -> bool:
        return window.kind is WindowKind.SESSION

    def reason(self, window: Window) -> str:
        return (
            f"t's window-id is the first {window.attr.name} of its session, a run of tuples in {self.order(window)}; "
            "a later tuple that falls between two sessions merges them, so no bound on t's window-id is known until "
            "the tuples before t are all in"
        )

    def describe(self, window: Window) -> str:
        frame, d = frame_of(window), window.attr.domain
        text = f"{ordering(window)} session window (gap {amount(gap_of(window), d)}"
        if frame.longest is not None:
            text += f", at most {amount(frame.longest, d)} long"
        text += ", Kafka's [first, last])" if frame.kafka else ")"
        return text + (f", per {', '.join(window.partition_by)}" if window.partition_by else "")

    def extent(self, window: Window) -> str:
        frame, d, a = frame_of(window), window.attr.domain, window.attr.name
        g = amount(gap_of(window), d)
        rule = f"uᵢ₊₁.{a} − uᵢ.{a} ≤ {g}"
        if frame.longest is not None:
            rule += f" ∧ uᵢ₊₁.{a} < u₁.{a} + {amount(frame.longest, d)}"
        end = f"uₙ.{a}" if frame.kafka else f"uₙ.{a} + {g}"
        if frame.longest is not None and not frame.kafka:
            end = f"min(uₙ.{a} + {g}, u₁.{a} + {amount(frame.longest, d)})"
        bounds = f"[u₁.{a}, uₙ.{a}]" if frame.kafka else f"[u₁.{a}, {end})"
        return f"extent(w) = {self.run_text(window)}, u₁.{a} = w, {rule}, maximal; window {bounds}"

    def rule(self, window: Window) -> dict[str, Any]:
        frame, domain = frame_of(window), window.attr.domain
        first_unit, max_unit = frame.units
        return {
            "gap": quantity_text(gap_of(window), domain, first_unit),
            "max": None if frame.longest is None else quantity_text(frame.longest, domain, max_unit),
            "kafka": frame.kafka,
        }

    def cited(self, window: Window) -> tuple[Section, ...]:
        from wql.compiler import sections

        return (sections.SESSIONS,)

    def chained(self, window: Window) -> str | None:
        if frame_of(window).longest is not None:
            return "MAX cuts a session at its first tuple plus MAX, which depends on where the session began"
        return None

    def merges_by_state(self, window: Window) -> bool:
        """A tuple joins the session whose last value it is at most GAP past, or the one starting at most GAP
        after it: first and last value decide. MAX cuts a merged session again at tuples it no longer holds."""
        return frame_of(window).longest is None

    # ---------------------------------------------------------------- code generation (the frames family)
    def kernel_rule(self, window: Window) -> str:
        longest = "LONGEST" if frame_of(window).longest is not None else "None"
        return f'{{"kind": "session", "gap": GAP, "longest": {longest}}}'

    def mark_starts(self, ctx: Context, closes: bool) -> None:
        from wql.compiler.codegen.common import ATTR
        from wql.compiler.codegen.emit import py

        code = ctx.code
        code.comment("A tuple starts a session when it is the first of its key, or more than GAP after the previous.")
        code(f"step = F.col({py(ATTR)}) - F.lag({py(ATTR)}).over(ordered)")
        code('rows = rows.withColumn("_start", F.when(step.isNull() | (step > GAP), 1).otherwise(0))')

    def end_bound(self, window: Window) -> str:
        """[first, last + GAP), cut at first + MAX; Kafka's [first, last]."""
        frame = frame_of(window)
        end = 'F.col("_last")'
        if not frame.kafka:
            end = f"{end} + GAP"
            if frame.longest is not None:
                end = f'F.least({end}, F.col("wid") + LONGEST)'
        return end

    def is_final_rule(self, ctx: Context) -> None:
        code = ctx.rules
        if frame_of(ctx.window).longest is not None:
            code('"""A session is final once the punctuation is past its last value + GAP, or reaches its first')
            code('value + MAX: a tuple still to come is at or past the punctuation, so it cannot join it."""')
            code('return (F.col("_last") + GAP < punctuation) | (F.col("wid") + LONGEST <= punctuation)')
        else:
            code('"""A session is final once the punctuation is past its last value + GAP: a tuple still to come is')
            code('at or past the punctuation, so it cannot join it."""')
            code('return F.col("_last") + GAP < punctuation')

    def missed_text(self, ctx: Context, convert: str) -> str:
        from wql.compiler.codegen.emit import py

        named = "sessions with a tuple in [%s, %s]"
        low, high = (convert.format(bound) + ".cast('string')" for bound in ("t - GAP", "t + GAP"))
        return f"F.format_string({py(named)}, {low}, {high})"

    def closing_point(self, window: Window) -> list[tuple[str, str]]:
        return [("_closed_from", "stamp")] if frame_of(window).longest is not None else []

    def closing_text(self, window: Window) -> str:
        longest = frame_of(window).longest is not None
        return "above its last value + GAP" + (", or at its first value + MAX," if longest else "")

    def at_or_before(self, ctx: Context) -> str:
        after = '(t > F.col("_closed_t"))'
        if frame_of(ctx.window).longest is not None:
            after += ' | (t >= F.col("_closed_from"))'
        return f"~({after})"

    # ---------------------------------------------------------------- the reference evaluator
    def filters_first(self, window: Window) -> bool:
        return frame_of(window).kafka

    def runs(self, window: Window, ordered: list[Member], sql: Sql) -> list[Run]:
        frame, gap = frame_of(window), gap_of(window)
        runs: list[Run] = []
        current: list[Member] = []
        for u in ordered:
            assert u.a is not None
            joins = bool(current) and u.a - current[-1].a <= gap  # type: ignore[operator]
            if joins and frame.longest is not None:
                joins = u.a < current[0].a + frame.longest  # type: ignore[operator]
            if not joins and current:
                runs.append((current, u))
                current = []
            current.append(u)
        if current:
            runs.append((current, None))  # the last run ends with the stream
        return runs

    def end(self, window: Window, run: list[Member]) -> Number:
        frame = frame_of(window)
        last = super().end(window, run)
        if frame.kafka:
            return last
        end = last + gap_of(window)
        if frame.longest is not None:
            first = run[0].a
            assert first is not None
            end = min(end, first + frame.longest)
        return end

    # ---------------------------------------------------------------- on a stream
    def final(self, window: Window, extent: Extent, point: Number) -> bool:
        """A session is final once `point` is past its last value + g (a tuple still to come is too far to join
        it), or with MAX once `point` reaches its first value + MAX (such a tuple would be cut off)."""
        frame = frame_of(window)
        first, last = extent.members[0].a, extent.members[-1].a
        assert first is not None and last is not None
        return point > last + gap_of(window) or (frame.longest is not None and point >= first + frame.longest)

    def changes_text(self, query: Query) -> str | None:
        return (
            f"EMIT CHANGES: each trigger emits every open session whose result changed, with {CHANGE} 'update', and "
            f"with {CHANGE} 'retract' each version emitted before whose session no longer exists (a tuple out of "
            "order merged it with another or moved its start), as it was emitted; a consumer that upserts updates "
            "and deletes retractions by keys and window_start, trigger by trigger, holds every session at its "
            "current version, and after the drain what EMIT FINAL emits"
        )

    def refuse_on_stream(self, query: Query) -> None:
        """Sessions run with EMIT CHANGES: a version that stops existing is retracted (docs/semantics.md §8.7)."""

    def final_text(self, window: Window) -> str:
        cut = ", or reaches its first value + MAX" if frame_of(window).longest is not None else ""
        return f"a session once the punctuation is past its last value + GAP{cut}"

    def cuts_from_windows(self, query: Query) -> bool:
        """Whether a stream's kept tuples follow from the windows a trigger computes: each key's tuples from its
        first open window's wid on. True for plain sessions (no MAX, no WHERE inside the window, no GROUP BY,
        not GENEROUS), where equal values are never split between sessions and every tuple is in one; frames
        split ties by arrival and leave tuples out, and GENEROUS slack keeps more (§8.5), so they walk their
        tuples again."""
        window, frame = query.window, frame_of(query.window)
        return (
            frame.longest is None
            and (query.where is None or frame.kafka)
            and not any(k.origin == "group" for k in query.keys)
            and not (window.slack is not None and window.slack.mode == "generous")
        )


KIND = Sessions()
