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
    return {target for node in import_nodes(path, top_level_only) for target in targets(name, path, node, known)}


def import_nodes(
    path: Path, top_level_only: bool, typing_too: bool = True, tree: ast.Module | None = None
) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of a module: at module level only, or anywhere; `typing_too`: with those under
    `if TYPE_CHECKING:`, which never run."""
    tree = tree or ast.parse(path.read_text())
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    return [
        node
        for node in nodes
        if isinstance(node, ast.Import | ast.ImportFrom) and (typing_too or id(node) not in typing_only)
    ]


def targets(name: str, path: Path, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> set[str]:
    """The package's modules one import statement of module `name` names."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        for alias in node.names:
            full = f"{target}.{alias.name}"
            found.add(full if full in known else target)
    else:
        found.update(alias.name for alias in node.names)
    return {module for module in found if module in known and module != name}


def function_imports(path: Path) -> list[ast.Import | ast.ImportFrom]:
    """The imports inside functions: they run, so they count for cycles, but hide from a reader."""
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    everywhere = import_nodes(path, top_level_only=False, typing_too=False, tree=tree)
    return [node for node in everywhere if id(node) not in top]


def cycles(graph: dict[str, set[str]]) -> list[str]:
    """Every import cycle of the graph, as a path that returns to its first module."""
    found = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                found.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found


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
    assert cycles(graph) == []


def test_the_compiler_has_no_cycle_even_through_imports_inside_functions() -> None:
    """An import inside a function still runs: a cycle it closes is a cycle, only hidden from a reader (the
    compiler once had one through 24 modules). Imports under TYPE_CHECKING never run and do not count."""
    known = modules()
    graph = {
        name: {
            target
            for node in import_nodes(path, top_level_only=False, typing_too=False)
            for target in targets(name, path, node, known)
        }
        for name, path in known.items()
        if name.startswith("wql.compiler")
    }
    graph = {name: {t for t in found if t in graph} for name, found in graph.items()}
    assert cycles(graph) == []


def test_imports_inside_functions_in_the_compiler_are_few_and_say_why() -> None:
    """At most five imports of WQL's own modules inside functions in wql/compiler, each with a comment on its
    line or the line before saying why it is not at the top of its module (an optional dependency, say)."""
    known = modules()
    found = []
    for name, path in known.items():
        if not name.startswith("wql.compiler"):
            continue
        lines = path.read_text().splitlines()
        for node in function_imports(path):
            if targets(name, path, node, known):
                said = "#" in lines[node.lineno - 1] or lines[node.lineno - 2].strip().startswith("#")
                found.append((f"{name}:{node.lineno}", said))
    assert len(found) <= 5, found
    assert [where for where, said in found if not said] == []


def test_kinds_import_no_plan_and_no_code_generator() -> None:
    """A kind holds semantics; it describes itself to the plans by its shape (kinds.shapes) and imports
    nothing from wql.compiler.plans or wql.compiler.codegen, not even for type hints, nor from the jobs'
    support code but the names generated code shares (kernels.names)."""
    known = modules()
    reaching = sorted(
        f"{name} imports {target}"
        for name, path in known.items()
        if name.startswith("wql.compiler.kinds")
        for target in imports(name, path, known, top_level_only=False)
        if target.startswith(("wql.compiler.plans", "wql.compiler.codegen", "wql.compiler.kernels"))
        and target != "wql.compiler.kernels.names"
    )
    assert reaching == []


def test_no_isinstance_on_a_kind_outside_the_kinds() -> None:
    """Plans and code generators read a kind's typed shape; asking which class a kind is would bring back the
    branches on kind names that the shapes replaced."""
    known = modules()
    kind_classes = (
        {
            node.name
            for name, path in known.items()
            if name.startswith("wql.compiler.kinds")
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ClassDef)
        }
        - {"Member", "Extent", "Replay", "Clauses"}
        - {"GridShape", "TupleShape", "RunShape", "IntervalShape"}
    )
    found = sorted(
        f"{name}:{node.lineno}"
        for name, path in known.items()
        if not name.startswith("wql.compiler.kinds")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and len(node.args) == 2
        and {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} & kind_classes
    )
    assert found == []


def test_the_window_model_stays_small() -> None:
    """windows.py is the Window model; each kind resolves its own clauses in its own module."""
    assert len((PACKAGE / "compiler" / "windows.py").read_text().splitlines()) <= 500


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
