"""The package's layering, read from its source: grammar ← compiler ← runtime, and no import cycles.

A cycle between modules works until someone imports them in a new order; a lower layer reaching
up makes the grammar or the compiler need Spark. Both have happened (optimizer.py and the tuple
plans imported each other; the code generators and their package did), so they are checked here
rather than left to review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "wql"
LAYERS = ("wql.grammar", "wql.compiler", "wql.runtime")


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path], top_level_only: bool) -> set[str]:
    """The package's modules that `name` imports: at module level only, or anywhere (lazy imports too)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                full = f"{target}.{alias.name}"
                found.add(full if full in known else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {module for module in found if module in known and module != name}


def layer(name: str) -> int:
    return next((i for i, prefix in enumerate(LAYERS) if name.startswith(prefix)), len(LAYERS))


def test_lower_layers_never_import_higher_ones() -> None:
    known = modules()
    upward = sorted(
        f"{name} imports {target}"
        for name, path in known.items()
        for target in imports(name, path, known, top_level_only=False)
        if layer(target) > layer(name)
    )
    assert upward == []


def test_no_module_level_import_cycle() -> None:
    known = modules()
    graph = {name: imports(name, path, known, top_level_only=True) for name, path in known.items()}
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


@pytest.mark.parametrize("module", ["wql.grammar", "wql.compiler"])
def test_the_compiler_side_needs_no_spark(module: str) -> None:
    """Compiling needs no Spark. wql.compiler.kernels is exempt: it is the generated jobs' own support
    code, which the code generator copies into each job as text and never imports."""
    known = modules()
    spark = sorted(
        name
        for name, path in known.items()
        if name.startswith(module) and not name.startswith("wql.compiler.kernels")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(
            (getattr(node, "module", None) or alias.name).split(".")[0] in {"pyspark", "py4j"} for alias in node.names
        )
    )
    assert spark == []
