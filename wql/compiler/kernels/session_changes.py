"""EMIT CHANGES of sessions (docs/semantics.md §8.7): the rows a trigger emits as updates and retractions, the
same for both engines, from the versions emitted before and the trigger's own.

Copied into the streaming jobs of session queries under EMIT CHANGES.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # other support code copied beside this
    from wql.compiler.kernels.names import CHANGE


def vanished(earlier, current, columns):
    """EMIT CHANGES of sessions: the versions the trigger before left open (`earlier`) whose session is not
    among the trigger's windows (`current`): a tuple out of order merged it with another or moved its start.
    A session's row is named by `columns` (its wid and keys; NULL is a key too)."""
    from pyspark.sql import functions as F

    # The trigger's names under new names, as from_open_windows joins them: both sides come from kernels'
    # nodes, which keep their input's key attributes.
    names = [f"_now_{i}" for i in range(len(columns))]
    now = current.select(*(F.col(f"`{c}`").alias(n) for c, n in zip(columns, names, strict=True))).distinct()
    match = F.lit(True)
    for c, n in zip(columns, names, strict=True):
        match = match & F.col(f"wql_before.`{c}`").eqNullSafe(F.col(f"wql_now.`{n}`"))
    return earlier.alias("wql_before").join(now.alias("wql_now"), match, "left_anti")


def changelog(current, held=None, retracted=None):
    """EMIT CHANGES of sessions: a trigger's rows marked in the CHANGE column, 'retract' for each version taken
    back (`retracted`, as it was emitted), then 'update' for each of the trigger's sessions (`current`) whose
    version is not among those emitted before (`held`). Versions are compared as `finish` makes them: a plan's
    own columns (the starts plan numbers each key's sessions) depend on which sessions the state still holds.
    A consumer that deletes and upserts the rows in order, by keys and window_start, holds each session's
    current version."""
    from pyspark.sql import functions as F

    if held is None:
        return current.withColumn(CHANGE, F.lit("update"))
    marked = current.exceptAll(held).withColumn(CHANGE, F.lit("update"))
    return retracted.withColumn(CHANGE, F.lit("retract")).unionByName(marked)
