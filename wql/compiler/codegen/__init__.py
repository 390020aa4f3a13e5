"""PySpark code generation: one readable, standalone program per query."""

from wql.compiler.codegen.job import generate_job

__all__ = ["generate_job"]
