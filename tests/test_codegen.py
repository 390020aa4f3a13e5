"""Generated PySpark: golden programs, standalone-ness, and inert handling of hostile names."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import pytest

import wql
from tests.conftest import EXAMPLES, ROOT, check_golden
from wql.compiler.codegen.support import MARKER

EXAMPLE_FILES = sorted([*EXAMPLES.glob("*.wql"), *EXAMPLES.glob("paper/*.wql")])


def compiled_code(path: Path, plan: str | None = None, *, whole: bool = False) -> str:
    """The job `wql compile` prints for a file's query: what the query generates (a golden's part: header,
    constants, stages), or, `whole`, with the support code copied after the marker."""
    program = wql.load(str(path.relative_to(ROOT)))
    [statement] = program.queries
    try:
        code = wql.compile_statement(program, statement, plan=plan).code
    except wql.WQLNotSupportedError as error:
        return f"# not supported yet: {error.message}\n"
    code = code.replace(str(ROOT), "<root>")
    return code if whole else own_part(code)


def own_part(code: str) -> str:
    """A job up to the support code's marker: what a golden holds."""
    return code.split(MARKER, maxsplit=1)[0].rstrip("\n") + "\n"


@pytest.fixture(autouse=True)
def _relative_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_golden_generated_code(path: Path) -> None:
    name = str(path.relative_to(EXAMPLES)).replace("/", "__").replace(".wql", ".py")
    check_golden(f"code/{name}", compiled_code(path))


@pytest.mark.parametrize("name", ["sensors", "kafka", "sessions"])
def test_golden_stream_code(name: str) -> None:
    """What `wql compile --stream` prints: a file source with slack and punctuation rows, a Kafka
    source (whose connector cannot be installed here, so its code is checked as text), and sessions
    (whose state is cut at each key's first open session)."""
    program = wql.load(str((EXAMPLES / "streams" / f"{name}.wql").relative_to(ROOT)))
    [statement] = program.queries
    code = wql.compile_statement(program, statement, stream=True).stream_code
    compile(code, f"{name}.py", "exec")
    check_golden(f"code/stream__{name}.py", own_part(code.replace(str(ROOT), "<root>")))


@pytest.mark.parametrize("plan", ["bucket", "pane"])
def test_golden_generated_code_per_plan(plan: str) -> None:
    check_golden(f"code/q1_{plan}.py", compiled_code(EXAMPLES / "paper" / "q1.wql", plan))


@pytest.mark.parametrize("plan", ["bins", "over"])
def test_golden_generated_code_per_tuple_plan(plan: str) -> None:
    """Slide-by-tuple (paper q3) under the plans the optimizer does not choose for it."""
    check_golden(f"code/q3_{plan}.py", compiled_code(EXAMPLES / "paper" / "q3.wql", plan))


def every_job() -> list[tuple[str, str]]:
    """Every example's batch job, and every streaming example's stream job, whole."""
    jobs = [(str(p.relative_to(EXAMPLES)), compiled_code(p, whole=True)) for p in EXAMPLE_FILES]
    for path in sorted((EXAMPLES / "streams").glob("*.wql")):
        program = wql.load(str(path.relative_to(ROOT)))
        [statement] = program.queries
        jobs.append((f"stream {path.name}", wql.compile_statement(program, statement, stream=True).stream_code))
    # Sessions under EMIT CHANGES: the one stream job that retracts (STREAMING["retracts"])
    sessions = (EXAMPLES / "streams" / "sessions.wql").read_text(encoding="utf-8").rstrip().removesuffix(";")
    jobs.append(("stream sessions.wql EMIT CHANGES", wql.compile(f"{sessions} EMIT CHANGES;", stream=True).stream_code))
    return jobs


def test_a_jobs_support_code_is_the_kernels_source_and_defines_every_name_it_reads() -> None:
    """The support code is checked here, once, rather than in every golden: each definition after the
    marker is its kernel module's source, verbatim, and every global name the whole job reads is defined
    in it or a builtin (a missing definition would otherwise show only as a NameError when a job runs)."""
    import builtins
    import symtable

    from wql.compiler.codegen.stream import GUARDED_RULES
    from wql.compiler.codegen.support import definitions, global_reads
    from wql.runtime.execute import load_job

    known = definitions()
    for name, code in every_job():
        if "not supported yet" in code:
            continue
        tree = ast.parse(code)
        support = code.split(MARKER)[1]
        for node in ast.parse(support).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                assert ast.get_source_segment(support, node) == known[node.name].source, (name, node.name)
        defined = {s.get_name() for s in symtable.symtable(code, name, "exec").get_symbols() if s.is_assigned()}
        defined |= {s.get_name() for s in symtable.symtable(code, name, "exec").get_symbols() if s.is_imported()}
        missing = global_reads(symtable.symtable(code, name, "exec")) - defined - set(dir(builtins))
        if name.startswith("stream"):  # the driver's calls into rules only some queries have, never made here
            streaming = load_job(code).STREAMING
            missing = {m for m in missing if m not in GUARDED_RULES or GUARDED_RULES[m](streaming)}
        assert not missing, f"{name} reads {sorted(missing)} and does not define them"
        assert tree.body, name


def test_the_support_code_is_read_from_the_kernel_modules_a_job_needs_and_cut_as_the_ast_cuts_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Choosing the support code parses only the kernel modules whose definitions the job reaches (parsing
    all of them was half a cold compile), knows which module defines each name without parsing them, and
    cuts each definition's text where ast.get_source_segment does (which split the whole module again on
    every call: 3 s of a cold compile)."""
    from importlib import resources

    from wql.compiler.codegen import support

    for module in support.MODULES:
        text = resources.files("wql.compiler.kernels").joinpath(module).read_text(encoding="utf-8")
        lines = support._LINES.findall(text)
        for node in ast.parse(text).body:
            assert support.source_of(lines, node) == ast.get_source_segment(text, node), (module, node.lineno)
        assert {n for n, home in support.index().items() if home == module} == set(support.module_definitions(module))
    text = "x = 'µ' + \\\n  'é'  # ß\n"  # over two lines, with characters of two bytes in UTF-8
    assert support.source_of(support._LINES.findall(text), ast.parse(text).body[0]) == "x = 'µ' + \\\n  'é'"
    parsed: set[str] = set()
    read = support.module_definitions.__wrapped__
    monkeypatch.setattr(support, "module_definitions", lambda module: parsed.add(module) or read(module))
    wql.compile((EXAMPLES / "traffic.wql").read_text(), str(EXAMPLES / "traffic.wql"))
    assert parsed == {"state_algebra.py", "sliding_combine.py", "job_support.py"}


def test_the_support_codes_calls_into_a_job_follow_its_declared_contract() -> None:
    """The names the kernel modules take from the job are the ones wql/compiler/kernels/job.pyi declares
    (none undeclared, none declared that nothing reads), every example job defines those it defines with
    an arity the declaration accepts, and its STREAMS and STREAMING have the typed contract's keys."""
    from typing import get_type_hints

    from wql.compiler.kernels import contract
    from wql.runtime.execute import load_job

    kernels = ROOT / "wql" / "compiler" / "kernels"
    declared: dict[str, ast.AST] = {}
    for node in ast.parse((kernels / "job.pyi").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef):
            declared[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared[node.target.id] = node
    taken: set[str] = set()
    for path in kernels.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "wql.compiler.kernels.job":
                taken |= {alias.name for alias in node.names}
    assert taken == set(declared), (sorted(taken - set(declared)), sorted(set(declared) - taken))

    def keys(typed: type) -> tuple[set[str], set[str]]:
        hints = get_type_hints(typed)
        return set(typed.__required_keys__), set(hints)

    for name, code in every_job():
        if "not supported yet" in code:
            continue
        for node in ast.parse(code).body:
            spec = declared.get(node.name) if isinstance(node, ast.FunctionDef) else None
            if isinstance(spec, ast.FunctionDef) and spec.args.vararg is None and spec.args.kwarg is None:
                given, accepted = len(node.args.args), len(spec.args.args)
                required = accepted - len(spec.args.defaults)
                assert node.args.vararg or required <= given <= accepted, (name, node.name)
        job = load_job(code)
        required, known = keys(contract.Stream)
        for stream in job.STREAMS.values():
            assert required <= set(stream) <= known, (name, set(stream) ^ known)
        if name.startswith("stream"):
            required, known = keys(contract.Streaming)
            assert required <= set(job.STREAMING) <= known, (name, set(job.STREAMING) ^ known)
            assert ("retracts" in job.STREAMING) == name.endswith("EMIT CHANGES"), name
            store = job.STREAMING["store"]
            if store is not None:
                typed = {"cells": contract.CellStore, "session": contract.SessionStore}[store["state"]]
                assert set(store) == keys(typed)[1], name


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_generated_code_is_valid_standalone_python(path: Path) -> None:
    code = compiled_code(path, whole=True)
    tree = ast.parse(code)
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    modules = {a.name.split(".")[0] for n in imports if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module.split(".")[0] for n in imports if isinstance(n, ast.ImportFrom) and n.module}
    assert "wql" not in modules, "a generated job must run without WQL installed"
    pyspark_stack = {"pyspark", "py4j", "numpy", "pyarrow"}
    assert modules <= {"sys", "argparse", "glob", "os", "shutil", "itertools", "json"} | pyspark_stack
    if "not supported yet" not in code:
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert {"query", "main", "load_inputs", "write_result"} <= names


def test_compile_command_writes_the_same_program(tmp_path: Path) -> None:
    from wql.cli import main

    target = tmp_path / "job.py"
    assert main(["compile", "examples/paper/q1.wql", "-o", str(target)]) == 0
    assert target.read_text().replace(str(ROOT), "<root>") == compiled_code(EXAMPLES / "paper" / "q1.wql", whole=True)


# ------------------------------------------------------------------ hostile names and literals

HOSTILE = [
    'x"); import os; os.system("touch PWNED',
    "y'); import os; os.system('touch PWNED",
    "back\\slash",
    "new\nline",
    "tick`tick",
    "tab\tand\rreturn",
    '""" docstring',
    "# comment",
    "ünïcødé",
]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def hostile_query(key: str, value: str, stream: str, literal: str) -> str:
    return (
        f"CREATE STREAM {_quoted(stream)} ({_quoted(key)} STRING, {_quoted(value)} DOUBLE, ts TIMESTAMP) "
        f"FROM {wql_string(literal + '.csv')} FORMAT csv OPTIONS ({wql_string(literal)} = {wql_string(literal)});\n"
        f"SELECT {_quoted(key)}, max({_quoted(value)}) AS {_quoted(value + '!')}, count(*) AS {_quoted(key + '#')} "
        f"FROM {_quoted(stream)} [RANGE 10 SECONDS SLIDE 5 SECONDS WATTR ts] "
        f"WHERE {_quoted(key)} <> {spark_string(literal)} GROUP BY {_quoted(key)}"
    )


def wql_string(value: str) -> str:
    from wql.grammar.formatter import format_string

    return format_string(value)


def spark_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r")
    return "'" + escaped.replace("\t", "\\t") + "'"


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("plan", ["bucket", "pane"])
def test_hostile_names_give_valid_inert_code(name: str, plan: str, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    text = hostile_query(key=name, value=name + "v", stream=name + "s", literal=name)
    compiled = wql.compile(text, plan=plan)
    tree = ast.parse(compiled.code)  # valid Python, whatever the names
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    assert not any(c.func.attr == "system" for c in calls), "query text became a call"
    compiled.module()  # executing the module's top level runs nothing from the query
    assert not (tmp_path / "PWNED").exists()
    assert not Path("PWNED").exists()


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_table_name_gives_valid_inert_code(name: str, tmp_path: Path, monkeypatch: Any) -> None:
    """FROM TABLE with any name (a database part too): the job holds it as a string, in comments escaped."""
    monkeypatch.chdir(tmp_path)
    text = (
        f"CREATE STREAM s (k STRING, ts TIMESTAMP) FROM TABLE {_quoted(name)}.{_quoted(name + 't')};\n"
        "SELECT k, count(*) AS n FROM s [RANGE 10 SECONDS WATTR ts] GROUP BY k"
    )
    for stream in (False, True):
        compiled = wql.compile(text, spark=False, stream=stream)
        code = compiled.stream_code if stream else compiled.code
        tree = ast.parse(code)
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
        assert not any(c.func.attr == "system" for c in calls), "a table name became a call"
        namespace: dict[str, Any] = {}
        exec(compile(tree, "job.py", "exec"), namespace)  # its top level runs nothing from the query
        assert namespace["STREAMS"]["s"]["table"] == f"{_quoted(name)}.{_quoted(name + 't')}"
        assert not (tmp_path / "PWNED").exists()


@pytest.mark.spark
@pytest.mark.parametrize("plan", ["bucket", "pane"])
def test_hostile_names_run_on_spark(spark: Any, plan: str) -> None:
    from datetime import datetime

    from pyspark.sql.types import DoubleType, StringType, StructField, StructType, TimestampType

    from wql.runtime.reference import evaluate_query

    key, value, stream = HOSTILE[0], HOSTILE[3] + "v", HOSTILE[1] + "s"
    compiled = wql.compile(hostile_query(key, value, stream, HOSTILE[2]), plan=plan)
    schema = StructType(
        [StructField(key, StringType()), StructField(value, DoubleType()), StructField("ts", TimestampType())]
    )
    rows = [("a", 1.0, datetime(2024, 1, 1, 0, 0, s)) for s in (0, 3, 7)] + [("b", 5.0, datetime(2024, 1, 1, 0, 0, 9))]
    frame = spark.createDataFrame(rows, schema)
    got = sorted(tuple(r) for r in compiled.run(spark, **{stream: frame}).collect())
    reference = evaluate_query(compiled.query, [dict(zip([key, value, "ts"], r, strict=True)) for r in rows])
    assert got == sorted(tuple(r.values()) for r in reference)
    assert len(got) == 5  # a: [-5, 5), [0, 10), [5, 15); b: [0, 10), [5, 15)
    assert not os.path.exists("PWNED")


# ------------------------------------------------------------------ Spark's own window()


@pytest.mark.spark
@pytest.mark.parametrize("plan", ["bucket", "pane", "slice"])
@pytest.mark.parametrize(("range_s", "slide_s", "start_s"), [(10, 3, 2), (60, 10, 0), (7, 7, 5)])
def test_results_equal_spark_window(spark: Any, plan: str, range_s: int, slide_s: int, start_s: int) -> None:
    from datetime import datetime, timedelta

    from pyspark.sql import functions as F

    if plan == "slice" and range_s % slide_s == 0:
        pytest.skip("SLIDE divides RANGE: no slice plan")
    if plan == "pane" and range_s == slide_s:
        pytest.skip("tumbling: no pane plan")
    base = datetime(2024, 1, 1)
    rows = [
        (k, float(i % 7), base + timedelta(seconds=i * 1.5))
        for i in range(120)
        for k in ("a", "b")
        if i % 3 or k == "a"
    ]
    frame = spark.createDataFrame(rows, "k STRING, v DOUBLE, ts TIMESTAMP")
    text = (
        "CREATE STREAM s (k STRING, v DOUBLE, ts TIMESTAMP);\n"
        f"SELECT k, count(*) AS n, sum(v) AS total, max(v) AS top FROM s "
        f"[RANGE {range_s} SECONDS SLIDE {slide_s} SECONDS WATTR ts ALIGN START {start_s} SECONDS] GROUP BY k"
    )
    ours = wql.compile(text, plan=plan).run(spark, s=frame)
    window = F.window("ts", f"{range_s} seconds", f"{slide_s} seconds", f"{start_s} seconds")
    native = frame.groupBy("k", window.alias("w")).agg(
        F.count("*").alias("n"), F.sum("v").alias("total"), F.max("v").alias("top")
    )
    mine = {(r.window_start, r.window_end, r.k, r.n, r.total, r.top) for r in ours.collect()}
    theirs = {(r.w.start, r.w.end, r.k, r.n, r.total, r.top) for r in native.collect()}
    assert mine == theirs


def test_a_job_holds_no_absolute_path_of_the_machine_that_compiled_it(tmp_path: Path) -> None:
    """A relative FROM path reaches the job relative to the directory it is compiled in (where `python job.py`
    then reads it), however the query file was named; one the query writes absolute stays as written."""
    from wql.cli import main

    target = tmp_path / "job.py"
    assert main(["compile", str(EXAMPLES / "traffic.wql"), "-o", str(target)]) == 0
    code = target.read_text(encoding="utf-8")
    assert str(ROOT) not in code
    assert '"path": "examples/data/traffic.csv",' in code
    written = tmp_path / "abs.wql"
    written.write_text(
        f"CREATE STREAM s (v DOUBLE, ts TIMESTAMP) FROM '{tmp_path / 'data.csv'}';\n"
        "SELECT count(*) AS n FROM s [RANGE 1 HOUR];\n",
        encoding="utf-8",
    )
    assert main(["compile", str(written), "-o", str(target)]) == 0
    assert f'"path": "{tmp_path / "data.csv"}",' in target.read_text(encoding="utf-8")
