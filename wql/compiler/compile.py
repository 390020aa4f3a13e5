"""From an analyzed query to a plan and its program."""

from __future__ import annotations

from dataclasses import dataclass

from wql.compiler.analysis import Query
from wql.compiler.codegen import generate_job
from wql.compiler.explain import Explanation, PlanChoice, explain_query
from wql.compiler.optimizer import Statistics, choose, choose_for_stream
from wql.compiler.plans import Plan


@dataclass(frozen=True)
class Compiled:
    query: Query
    plan: Plan
    choices: tuple[PlanChoice, ...]
    code: str
    number: int  # the query's number among the file's queries
    line: int
    stream_plan: Plan  # what a stream runs: the plan, or one that keeps less between triggers (optimizer)
    stream_choices: tuple[PlanChoice, ...]

    def explain(self) -> Explanation:
        return explain_query(self.query, self.number, self.line, self.choices, self.plan, self.stream_plan)

    def stream_code(self, source_path: str | None = None) -> str:
        """The Structured Streaming program: the stream plan's stages, generated as a batch job's are."""
        return generate_job(
            self.query,
            self.stream_plan,
            self.stream_choices,
            source_path=source_path,
            statement=self.number,
            line=self.line,
            stream=True,
        )


def compile_query(
    query: Query,
    *,
    plan: str | None = None,
    number: int = 1,
    line: int = 1,
    source_path: str | None = None,
    stats: Statistics | None = None,
) -> Compiled:
    chosen, choices = choose(query, plan, stats)
    on_stream, stream_choices = choose_for_stream(query, plan, stats)
    code = generate_job(query, chosen, choices, source_path=source_path, statement=number, line=line)
    return Compiled(query, chosen, choices, code, number, line, on_stream, stream_choices)
