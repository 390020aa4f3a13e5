"""`python -m wql` is the `wql` command."""

from wql.cli import run

run()
