"""PySpark code generation: one readable, standalone program per query.

One generator module per plan family (mirroring `wql.compiler.plans`; the table that pairs them is
`wql.compiler.families`): each writes the stages of its plans and, for streaming jobs, its window
rules. `job.generate_job` assembles the program.
"""
