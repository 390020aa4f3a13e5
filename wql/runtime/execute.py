"""Running generated jobs: the one execution path behind `wql run`, the API, REPL and notebook.

The code `wql compile` prints is loaded as a module and its own functions are
called, so what runs is exactly what was printed.
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Mapping
from typing import Any

from wql.compiler.schema import Domain, Stream
from wql.grammar.errors import WQLRuntimeError

_counter = itertools.count(1)

# What jobs learnt about each Spark they ran on (whether it has WQL's extension: job_support's kernel_extension
# asks with a Spark job), shared by the jobs loaded here. Each job is a module of its own: alone, each query
# of a REPL, notebook or `wql run` session asked again, one Spark job each.
_KERNEL_SERVERS: dict[int, Any] = {}


def load_job(code: str) -> types.ModuleType:
    """The generated program as a module (not registered in sys.modules, so Spark pickles its
    functions by value and executors need no WQL install)."""
    name = f"wql_job_{next(_counter)}"
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    exec(compile(code, module.__file__, "exec"), module.__dict__)  # our own generated code
    if isinstance(module.__dict__.get("_kernel_servers"), dict):
        module._kernel_servers = _KERNEL_SERVERS  # type: ignore[attr-defined]
    return module


_COMPATIBLE = {
    Domain.TIMESTAMP: {"timestamp", "timestamp_ntz"},
    Domain.DATE: {"date"},
    Domain.INTEGER: {"tinyint", "smallint", "int", "bigint"},
    Domain.FLOAT: {"float", "double"},
}


def check_input(stream: Stream, frame: Any, needed: tuple[str, ...]) -> None:
    """A DataFrame handed in for a stream must have the columns the query reads, of usable types."""
    fields = {f.name.lower(): f for f in frame.schema.fields}
    for name in needed:
        field = fields.get(name.lower())
        if field is None:
            raise WQLRuntimeError(
                f"the DataFrame for stream '{stream.name}' has no column '{name}'",
                hint=f"its columns are: {', '.join(frame.columns)}",
            )
        column = stream.column(name)
        if column is None:
            continue
        allowed = _COMPATIBLE.get(column.domain)
        actual = field.dataType.simpleString()
        if allowed is not None and actual not in allowed:
            raise WQLRuntimeError(
                f"column '{name}' of stream '{stream.name}' is {actual} in the DataFrame, "
                f"but the query declares it {column.type}"
            )


def run_query(module: types.ModuleType, inputs: Mapping[str, Any]) -> Any:
    """Call the job's query function with DataFrames by stream name."""
    streams = module.STREAMS
    arguments = {}
    for name, spec in streams.items():
        match = next((v for k, v in inputs.items() if k.lower() == name.lower()), None)
        if match is None:
            raise WQLRuntimeError(f"no input for stream '{name}'", hint=f"pass it as {spec['parameter']}=DataFrame")
        arguments[spec["parameter"]] = match
    unknown = [k for k in inputs if k.lower() not in {n.lower() for n in streams}]
    if unknown:
        raise WQLRuntimeError(f"the query does not read a stream named '{unknown[0]}'")
    return module.query(**arguments)
