"""From an analyzed query to a plan and its program."""

from __future__ import annotations

from dataclasses import dataclass

from wql.compiler.analysis import Query
from wql.compiler.codegen.job import generate_job
from wql.compiler.explain import Explanation, PlanChoice, explain_query
from wql.compiler.optimizer import Statistics, choose
from wql.compiler.plans import Plan


@dataclass(frozen=True)
class Compiled:
    query: Query
    plan: Plan
    choices: tuple[PlanChoice, ...]
    code: str
    number: int  # the query's number among the file's queries
    line: int

    def explain(self) -> Explanation:
        return explain_query(self.query, self.number, self.line, self.choices, self.plan)

    def stream_code(self, source_path: str | None = None) -> str:
        """The Structured Streaming program of the same plan (its stages are the batch program's)."""
        return generate_job(
            self.query,
            self.plan,
            self.choices,
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
    code = generate_job(query, chosen, choices, source_path=source_path, statement=number, line=line)
    return Compiled(query=query, plan=chosen, choices=choices, code=code, number=number, line=line)
