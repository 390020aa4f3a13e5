"""Rich renderings shared by the CLI, the REPL and the notebook magic.

Presentation only: every function takes public API objects (errors,
explanations, result rows) and returns something rich can print.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from wql.compiler.explain import Explanation
from wql.grammar.errors import WQLError


def error_renderable(error: WQLError) -> Text:
    """An error as the CLI shows it: message, location, the line with a caret, the hint."""
    out = Text()
    out.append(f"{error.kind}: ", style="bold red")
    out.append(error.message + "\n", style="bold")
    if error.span is not None or (error.path and error.path not in error.message):
        out.append(f"  --> {error.location()}\n", style="cyan")
    for number, line, column, width in error.excerpt():
        gutter = " " * len(str(number))
        out.append(f"{gutter} |\n", style="cyan")
        out.append(f"{number} | ", style="cyan")
        out.append(line + "\n")
        out.append(f"{gutter} | ", style="cyan")
        out.append(" " * (column - 1) + "^" * width + "\n", style="bold red")
    if error.hint:
        out.append("  = hint: ", style="bold cyan")
        out.append(error.hint + "\n")
    out.rstrip()
    return out


def explanation_renderable(explanation: Explanation) -> Group:
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold cyan", no_wrap=True)
    facts.add_column()
    window = explanation.window
    # Every value is Text, never a markup string: queries may contain '[' anywhere.
    facts.add_row("window", Text(window["spec"]))
    for note in window["defaults"]:
        facts.add_row("", Text(f"default: {note}", style="dim"))
    facts.add_row("kind", Text(explanation.kind))
    facts.add_row("class", Text.assemble((explanation.window_class, "bold"), f" — context: {explanation.context}"))
    facts.add_row("why", Text(explanation.reason))
    facts.add_row("wids", Text(explanation.wids))
    facts.add_row("extent", Text(explanation.extent))
    if explanation.edges:
        facts.add_row("partial", Text(explanation.edges))
    for index, shown in enumerate(window.get("local_windows", ())):
        facts.add_row("windows" if index == 0 else "", Text(shown))
    if explanation.aggregates:
        for index, agg in enumerate(explanation.aggregates):
            label = "aggregates" if index == 0 else ""
            kind = f"{agg['kind']}, {agg['family']}" + (", approximate" if agg["approximate"] == "yes" else "")
            target = agg["column"] if agg.get("result", True) else f"(inside {agg['used_by']})"
            facts.add_row(label, Text(f"{agg['call']} → {target}  ({kind})"))
    facts.add_row("columns", Text(", ".join(explanation.columns)))
    parts: list[Any] = [
        Text(f"query {explanation.number} (line {explanation.line}) on stream {explanation.stream}", style="bold"),
        facts,
    ]
    if explanation.plans:
        plans = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
        plans.add_column("plan")
        plans.add_column("est. cost", justify="right")
        plans.add_column("")
        for plan in explanation.plans:
            cost = "—" if plan.cost is None else f"{plan.cost:,.0f}"
            marker = Text("← chosen", style="bold green") if plan.chosen else Text("")
            name = Text(plan.name, style="bold" if plan.chosen else "")
            plans.add_row(name, Text(cost), Text.assemble(marker, (" " if plan.chosen else "") + plan.note))
        parts.append(plans)
        if explanation.costs:
            costs = Table.grid(padding=(0, 2))
            costs.add_column(style="bold cyan", no_wrap=True, min_width=10)
            costs.add_column()
            costs.add_row("costs", Text(explanation.costs))
            parts.append(costs)
    if explanation.stream_facts:
        # When a stream emits this query's windows and what it keeps: the same query, run with --stream.
        stream = Table.grid(padding=(0, 2))
        stream.add_column(style="bold cyan", no_wrap=True, min_width=10)
        stream.add_column()
        facts = explanation.stream_facts
        labels = {"refused": "stream", "emit": "stream", "final": "final", "punctuation": "time", "late": "late"}
        labels["state"] = "state"
        for key, label in labels.items():
            if key in facts:
                text = f"not supported yet: {facts[key]}" if key == "refused" else str(facts[key])
                stream.add_row(label, Text(text))
        parts.append(stream)
    if explanation.see:
        # After the plans, like footnotes: where the docs define the window, its class and the plan.
        see = Table.grid(padding=(0, 2))
        labels = ["window", "columns", *(["aggregates"] if explanation.aggregates else [])]
        see.add_column(style="bold cyan", no_wrap=True, min_width=max(len(label) for label in labels))
        see.add_column()
        for index, section in enumerate(explanation.see):
            see.add_row("see" if index == 0 else "", Text(section.cite()))
        parts.append(see)
    return Group(*parts)


def results_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], total: int | None = None) -> Table:
    table = Table(show_header=True, header_style="bold", caption=None)
    for column in columns:
        table.add_column(Text(column), overflow="fold")
    for row in rows:
        table.add_row(*(Text("NULL", style="dim") if v is None else Text(str(v)) for v in row))
    if total is not None:
        shown = len(rows)
        table.caption = f"{total:,} row{'s' if total != 1 else ''}" + (
            f" (first {shown} shown)" if shown < total else ""
        )
    return table


def plain_text(renderable: Any, width: int = 110) -> str:
    """A renderable as plain text (no colour), e.g. for golden tests and logs."""
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width, color_system=None, force_terminal=False, force_jupyter=False, legacy_windows=False
    )  # force_jupyter=False: inside a notebook rich would display the text instead of returning it
    console.print(renderable)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"
