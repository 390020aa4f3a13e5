"""Partitioned tuple-based windows: `[RANGE n ROWS SLIDE m ROWS PATTR p]` (docs/semantics.md §2.5).

Rows are counted within each partition: the window-ids are pairs (partition, w), and row_num is
replaced by rank(t, row_num, p), the position within the partition. A tuple's position counts its
partition's earlier arrivals, which makes the window FCF (§5.2); on a stream each partition's row
count is its own punctuation.
"""

from __future__ import annotations

from wql.compiler.kinds.rows import Rows
from wql.compiler.windows import Form, Window


class PartitionedRows(Rows):
    """Sliding and tumbling windows over each PATTR partition's own arrival positions."""

    name = "partitioned-rows"

    def matches(self, window: Window) -> bool:
        return window.form is Form.SLIDING and window.per_partition_rows


KIND = PartitionedRows()
