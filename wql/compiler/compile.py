"""From an analyzed query to a plan and its program."""

from __future__ import annotations

from dataclasses import dataclass, replace

from wql.compiler.analysis import Query
from wql.compiler.codegen import generate_job
from wql.compiler.explain import Explanation, PlanChoice, explain_query
from wql.compiler.optimizer import Statistics, choose
from wql.compiler.plans import Plan


@dataclass(frozen=True)
class Compiled:
    query: Query
    plan: Plan
    choices: tuple[PlanChoice, ...]
    code: str
    statement: int
    line: int
    forced: str | None = None
    stats: Statistics | None = None

    def explain(self) -> Explanation:
        stream_plan, _ = self.stream_choice()
        return explain_query(self.query, self.statement, self.line, self.choices, self.plan, stream_plan)

    def stream_choice(self) -> tuple[Plan, tuple[PlanChoice, ...]]:
        """The plan for a stream, ranked by streaming costs (the same as in batch unless they differ, as for
        a tumbling window: pane keeps cells where bucket would keep rows); a forced plan stays forced."""
        return choose_for_stream(self.query, self.forced, self.stats)

    def stream_code(self, source_path: str | None = None) -> str:
        """The Structured Streaming program: the stream plan's stages, as the batch program's would be."""
        plan, choices = self.stream_choice()
        return generate_job(
            self.query,
            plan,
            choices,
            source_path=source_path,
            statement=self.statement,
            line=self.line,
            stream=True,
        )


def choose_for_stream(
    query: Query, forced: str | None = None, stats: Statistics | None = None
) -> tuple[Plan, tuple[PlanChoice, ...]]:
    return choose(query, forced, replace(stats or Statistics(), stream=True))


def compile_query(
    query: Query,
    *,
    plan: str | None = None,
    statement: int = 1,
    line: int = 1,
    source_path: str | None = None,
    stats: Statistics | None = None,
) -> Compiled:
    chosen, choices = choose(query, plan, stats)
    code = generate_job(query, chosen, choices, source_path=source_path, statement=statement, line=line)
    return Compiled(query, chosen, choices, code, statement, line, forced=plan, stats=stats)
