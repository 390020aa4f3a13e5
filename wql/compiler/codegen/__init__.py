"""PySpark code generation: one readable, standalone program per query.

One generator module per plan family (mirroring `wql.compiler.plans`): each
writes the stages of its plans and, for streaming jobs, its window rules.
"""

from wql.compiler.codegen.families import FAMILIES
from wql.compiler.codegen.job import generate_job

__all__ = ["FAMILIES", "generate_job"]
