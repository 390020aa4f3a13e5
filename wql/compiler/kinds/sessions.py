"""Sessions: `[SESSION GAP g [MAX m] [KAFKA] WATTR a]` (docs/semantics.md §2.16).

Consecutive tuples uᵢ, uᵢ₊₁ of a partition are in one session when uᵢ₊₁.a − uᵢ.a ≤ g, and with MAX also
uᵢ₊₁.a < u₁.a + m. The window is [u₁.a, uₙ.a + g) as Spark's session_window and Flink report it, cut
to u₁.a + m with MAX; with KAFKA it is Kafka Streams' [u₁.a, uₙ.a], and WHERE filters records before
sessions form, as Kafka's DSL does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wql.compiler import sections
from wql.compiler.kernels.names import CHANGE
from wql.compiler.kinds.base import Extent, Member, Sql, amount
from wql.compiler.kinds.data_driven import DataDriven, Run, gap_of, ordering, rule_of
from wql.compiler.units import Number, quantity_text, to_base
from wql.compiler.windows import Attribute, Form, RunRule, Window
from wql.grammar import ast
from wql.grammar.errors import WQLTypeError

if TYPE_CHECKING:
    from wql.compiler.analysis import Query
    from wql.compiler.sections import Section


class Sessions(DataDriven):
    """Runs of tuples at most GAP apart."""

    name = "sessions"
    rule_name = "session"
    noun = "session"
    retracts = True  # a tuple out of order can merge two sessions or move one's start
    ties = False  # equal values are never in different sessions
    closed_by_tuple = False  # a session is final once the punctuation is GAP past its last tuple
    start_mark = "a gap above GAP"

    def matches(self, window: Window) -> bool:
        return window.form is Form.SESSION

    def reason(self, window: Window) -> str:
        return (
            f"t's window-id is the first {window.attr.name} of its session, a run of tuples in {self.order(window)}; "
            "a later tuple that falls between two sessions merges them, so no bound on t's window-id is known until "
            "the tuples before t are all in"
        )

    def describe(self, window: Window) -> str:
        rule, d = rule_of(window), window.attr.domain
        text = f"{ordering(window)} session window (gap {amount(gap_of(window), d)}"
        if rule.longest is not None:
            text += f", at most {amount(rule.longest, d)} long"
        text += ", Kafka's [first, last])" if rule.kafka else ")"
        return text + (f", per {', '.join(window.partition_by)}" if window.partition_by else "")

    def extent(self, window: Window) -> str:
        rule, d, a = rule_of(window), window.attr.domain, window.attr.name
        g = amount(gap_of(window), d)
        rule_text = f"uᵢ₊₁.{a} − uᵢ.{a} ≤ {g}"
        if rule.longest is not None:
            rule_text += f" ∧ uᵢ₊₁.{a} < u₁.{a} + {amount(rule.longest, d)}"
        end = f"uₙ.{a}" if rule.kafka else f"uₙ.{a} + {g}"
        if rule.longest is not None and not rule.kafka:
            end = f"min(uₙ.{a} + {g}, u₁.{a} + {amount(rule.longest, d)})"
        bounds = f"[u₁.{a}, uₙ.{a}]" if rule.kafka else f"[u₁.{a}, {end})"
        return f"extent(w) = {self.run_text(window)}, u₁.{a} = w, {rule_text}, maximal; window {bounds}"

    def rule(self, window: Window) -> dict[str, Any]:
        rule, domain = rule_of(window), window.attr.domain
        first_unit, max_unit = rule.units
        return {
            "gap": quantity_text(gap_of(window), domain, first_unit),
            "max": None if rule.longest is None else quantity_text(rule.longest, domain, max_unit),
            "kafka": rule.kafka,
        }

    def cited(self, window: Window) -> tuple[Section, ...]:
        return (sections.SESSIONS,)

    def chained(self, window: Window) -> str | None:
        if rule_of(window).longest is not None:
            return "MAX cuts a session at its first tuple plus MAX, which depends on where the session began"
        return None

    def merges_by_state(self, window: Window) -> bool:
        """A tuple joins the session whose last value it is at most GAP past, or the one starting at most GAP
        after it: first and last value decide. MAX cuts a merged session again at tuples it no longer holds."""
        return rule_of(window).longest is None

    # ---------------------------------------------------------------- the reference evaluator
    def filters_first(self, window: Window) -> bool:
        return rule_of(window).kafka

    def runs(self, window: Window, ordered: list[Member], sql: Sql) -> list[Run]:
        rule, gap = rule_of(window), gap_of(window)
        runs: list[Run] = []
        current: list[Member] = []
        for u in ordered:
            assert u.a is not None
            joins = bool(current) and u.a - current[-1].a <= gap  # type: ignore[operator]
            if joins and rule.longest is not None:
                joins = u.a < current[0].a + rule.longest  # type: ignore[operator]
            if not joins and current:
                runs.append((current, u))
                current = []
            current.append(u)
        if current:
            runs.append((current, None))  # the last run ends with the stream
        return runs

    def end(self, window: Window, run: list[Member]) -> Number:
        rule = rule_of(window)
        last = super().end(window, run)
        if rule.kafka:
            return last
        end = last + gap_of(window)
        if rule.longest is not None:
            first = run[0].a
            assert first is not None
            end = min(end, first + rule.longest)
        return end

    # ---------------------------------------------------------------- on a stream
    def final(self, window: Window, extent: Extent, point: Number) -> bool:
        """A session is final once `point` is past its last value + g (a tuple still to come is too far to join
        it), or with MAX once `point` reaches its first value + MAX (such a tuple would be cut off)."""
        rule = rule_of(window)
        first, last = extent.members[0].a, extent.members[-1].a
        assert first is not None and last is not None
        return point > last + gap_of(window) or (rule.longest is not None and point >= first + rule.longest)

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
        cut = ", or reaches its first value + MAX" if rule_of(window).longest is not None else ""
        return f"a session once the punctuation is past its last value + GAP{cut}"

    def cuts_from_windows(self, query: Query) -> bool:
        """Whether a stream's kept tuples follow from the windows a trigger computes: each key's tuples from its
        first open window's wid on. True for plain sessions (no MAX, no WHERE inside the window, no GROUP BY,
        not GENEROUS), where equal values are never split between sessions and every tuple is in one; frames
        split ties by arrival and leave tuples out, and GENEROUS slack keeps more (§8.5), so they walk their
        tuples again."""
        window, rule = query.window, rule_of(query.window)
        return (
            rule.longest is None
            and (query.where is None or rule.kafka)
            and not any(k.origin == "group" for k in query.keys)
            and not (window.slack is not None and window.slack.mode == "generous")
        )


def session_rule(session: ast.SessionClause, attr: Attribute, kafka: bool) -> RunRule:
    """A session's GAP and MAX in the attribute's base units; KAFKA: Kafka's [first, last] sessions."""
    domain = attr.domain
    gap = to_base(session.gap, domain, attr.name, "GAP", allow_negative=True)
    if gap < 0:
        raise WQLTypeError("GAP must not be negative", span=session.gap.span)
    longest = None
    if session.max is not None:
        longest = to_base(session.max, domain, attr.name, "MAX")
    return RunRule(
        gap=gap,
        longest=longest,
        kafka=kafka,
        units=(session.gap.unit, session.max.unit if session.max else None),
    )


KIND = Sessions()
