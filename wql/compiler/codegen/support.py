"""The support code a generated job carries, found from the names the job's own code reads.

A job runs with plain PySpark and no WQL install, so the kernels and drivers it
calls (wql.compiler.kernels) are copied into it, verbatim. Which ones is read
off the code, not kept in lists: Python's symbol tables give the global names
each function reads, so a job carries exactly the definitions its own code
reaches, and a support function that starts calling another brings it along
without anyone updating a table. A name defined in two kernel modules is an
error here, not a silent choice.
"""

from __future__ import annotations

import ast
import re
import symtable
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

# The kernel modules, in the order their definitions appear in a job: the state algebra (generated from
# wql.compiler.algebra), the family kernels, the stream driver (names a job shares with the compiler, faults,
# checkpoint files, the source, sinks, the engine protocol and its engines, the stream's start and drain), then
# what every job needs (reading, writing, main). A class comes after the classes it derives from.
MODULES = (
    "state_algebra.py",
    "edges.py",
    "sliding_combine.py",
    "tuple_windows.py",
    "kafka_store.py",
    "frame_windows.py",
    "interval_windows.py",
    "calendar_cells.py",
    "names.py",
    "faults.py",
    "stream_io.py",
    "checkpoint.py",
    "stream_source.py",
    "sinks.py",
    "session_changes.py",
    "engine.py",
    "files_engine.py",
    "store_engine.py",
    "stream_run.py",
    "job_support.py",
)

# Names a job imports at its top rather than defines: support code that reads them imports them again
# after the marker (see `imports`), so that what a query's own code imports does not follow the kernels.
IMPORTED = {
    "sys": "import sys",
    "DataFrame": "from pyspark.sql import DataFrame",
    "SparkSession": "from pyspark.sql import SparkSession",
    "Window": "from pyspark.sql import Window",
    "F": "from pyspark.sql import functions as F",
    "LongType": "from pyspark.sql.types import LongType",
    "StructField": "from pyspark.sql.types import StructField",
    "StructType": "from pyspark.sql.types import StructType",
}

MARKER = "# " + "-" * 30 + " WQL's support code, copied from wql.compiler.kernels " + "-" * 30


@dataclass(frozen=True)
class Definition:
    """One top-level definition of a kernel module: a function, a class or a constant."""

    name: str
    module: str
    position: tuple[int, int]  # its order among all modules' definitions: its module's, then its own in it
    source: str
    reads: frozenset[str]  # the global names it reads
    constant: bool = False  # an assignment, not a function or class


def global_reads(table: symtable.SymbolTable) -> set[str]:
    """The names a scope and the scopes inside it read from the module's globals."""
    module = str(table.get_type()).lower().endswith("module")
    names = {s.get_name() for s in table.get_symbols() if s.is_referenced() and (module or s.is_global())}
    for child in table.get_children():
        names |= global_reads(child)
    return names


# A line and its end, as Python's tokenizer cuts them: at \n, \r\n or \r only (not at \f or \u2028).
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_of(lines: list[str], node: ast.stmt) -> str:
    """A statement's text, from its module's lines (`_LINES`) cut once: ast.get_source_segment cuts the
    whole module again on every call, which made choosing the support code 3 s of a cold compile.
    Columns are UTF-8 byte offsets, as the ast gives them."""
    end_line = node.end_lineno or node.lineno
    first, last = lines[node.lineno - 1].encode(), lines[end_line - 1].encode()
    if end_line == node.lineno:
        return first[node.col_offset : node.end_col_offset].decode()
    middle = lines[node.lineno : end_line - 1]
    return "".join([first[node.col_offset :].decode(), *middle, last[: node.end_col_offset].decode()])


# A top-level definition as `module_definitions` takes them: a function, a class, or a plain assignment of
# one name (a chained `A = B = …` is read by the ast only, and `module_definitions` says so).
_DEFINED = re.compile(r"^(?:(?:def|class)\s+([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*=(?!=))", re.MULTILINE)


def _text(module: str) -> str:
    return resources.files("wql.compiler.kernels").joinpath(module).read_text(encoding="utf-8")


@cache
def index() -> dict[str, str]:
    """Which kernel module defines each name, read off the modules' lines, without parsing them: a job
    needs two or three of them, and parsing all of them (ast and symtable) was half of a cold compile."""
    found: dict[str, str] = {}
    for module in MODULES:
        for match in _DEFINED.finditer(_text(module)):
            name = match.group(1) or match.group(2)
            if name in found:
                raise ValueError(f"{name} is defined in both {found[name]} and {module}")
            found[name] = module
    return found


@cache
def module_definitions(module: str) -> dict[str, Definition]:
    """One kernel module's top-level definitions, by name, in the module's order."""
    text = _text(module)
    tree = ast.parse(text)
    scopes = {child.get_name(): child for child in symtable.symtable(text, module, "exec").get_children()}
    lines = _LINES.findall(text)
    found: dict[str, Definition] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names, reads = [node.name], global_reads(scopes[node.name])
            heads = [*node.decorator_list, *getattr(node, "bases", [])]  # read where it is defined
            reads |= {n.id for head in heads for n in ast.walk(head) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            reads = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        else:
            continue
        for name in names:
            position = (MODULES.index(module), len(found))
            source = source_of(lines, node)
            found[name] = Definition(
                name, module, position, source, frozenset(reads - {name}), isinstance(node, ast.Assign)
            )
    listed = {name for name, home in index().items() if home == module}
    if set(found) != listed:
        raise ValueError(
            f"{module}: the definitions its lines show ({sorted(listed ^ set(found))}) differ from its ast's"
        )
    return found


class Definitions(Mapping[str, Definition]):
    """Every kernel module's top-level definitions, by name; a module is parsed when one of its names is
    looked up."""

    def __contains__(self, name: object) -> bool:
        return name in index()

    def __getitem__(self, name: str) -> Definition:
        return module_definitions(index()[name])[name]

    def __iter__(self) -> Iterator[str]:
        return iter(index())

    def __len__(self) -> int:
        return len(index())


def definitions() -> Definitions:
    return Definitions()


def needed(code: str) -> list[Definition]:
    """The definitions a job whose own code is `code` needs, and what they need in turn, in job order."""
    known = definitions()
    table = symtable.symtable(code, "job", "exec")
    own = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    wanted: set[str] = set()
    pending = [name for name in global_reads(table) if name in known and name not in own]
    while pending:
        name = pending.pop()
        if name in wanted:
            continue
        wanted.add(name)
        pending.extend(n for n in known[name].reads if n in known and n not in own and n not in wanted)
    return sorted((known[name] for name in wanted), key=lambda d: d.position)


def imports(chosen: list[Definition], present: set[str]) -> list[str]:
    """The import lines the support code needs and the job's own imports (`present`) lack."""
    reads = set().union(*(d.reads for d in chosen)) if chosen else set()
    return [IMPORTED[name] for name in IMPORTED if name in reads and name not in present]


def section(code: str) -> list[str]:
    """The support section a job with this code of its own ends with: the marker, imports, definitions."""
    chosen = needed(code)
    if not chosen:
        return []
    present = {s.get_name() for s in symtable.symtable(code, "job", "exec").get_symbols() if s.is_imported()}
    lines = [MARKER, "# The kernels and drivers this query calls, so that the job runs without WQL installed."]
    needs = imports(chosen, present)
    lines += ["", *needs] if needs else []
    previous: Definition | None = None
    for definition in chosen:
        if not (previous is not None and previous.constant and definition.constant):
            lines += ["", ""]
        lines += definition.source.splitlines()
        previous = definition
    return lines


__all__ = ["MARKER", "Definition", "definitions", "imports", "needed", "section"]
