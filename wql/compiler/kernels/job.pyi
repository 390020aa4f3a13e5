"""What a generated job defines and its copied support code calls: the declarations of wql.compiler.kernels.

The kernel modules import these names for type checking only (a job defines them; see contract.py).
Attribute values and punctuations are in base units (µs for timestamps, days for dates, the value for
numbers); a punctuation of None means no tuple has set one yet.
"""

from pyspark.sql import Column, DataFrame

from wql.compiler.kernels.contract import Stream, Streaming

Point = int | float

# Every job.
APP_NAME: str  # the Spark application's name
STREAMS: dict[str, Stream]  # the input streams, by name
SHOWN_IN: tuple[str, ...]  # the order rows are shown in (wid, then the keys); empty: the query's ORDER BY

def query(**streams: DataFrame) -> DataFrame:
    """The query, stage by stage: finish(windows(prepare(...)))."""

# Jobs over a DOUBLE window attribute (edges.py): the grid.
ORIGIN: float
SLIDE: float
RANGE: float

# Streaming jobs: what the driver knows of the query, the stages it runs each trigger and the window rules.
STREAMING: Streaming

def number(
    rows: DataFrame,
    first_row: int = 0,
    offsets: DataFrame | None = None,
    anchors: DataFrame | None = None,
    seen: Point | None = None,
) -> DataFrame:
    """row_num (and ALIGN FIRST's first arrivals, or Kafka's stream time _seen), continuing across triggers."""

def prepare(*streams: DataFrame) -> DataFrame:
    """The stream's tuples in window terms: keys, inputs and the window attribute _t."""

def lift(rows: DataFrame) -> DataFrame:
    """Cells: one row of partial states per key and cell."""

def shares(rows: DataFrame) -> DataFrame:
    """Each tuple as a cell of its own: its cell index and its share of each partial state."""

def merge(cells: DataFrame) -> DataFrame:
    """Cells of one key and index from several triggers, combined."""

def replay(rows: DataFrame) -> DataFrame:
    """Kafka's late-record rule: each record's windows (_wins), the trigger's records replayed after the kept."""

def windows(rows: DataFrame) -> DataFrame:
    """One row per window and key (partial states where the job also has lower)."""

def lower(windows: DataFrame) -> DataFrame:
    """Each aggregate from its window's combined partial states."""

def finish(windows: DataFrame) -> DataFrame:
    """Window bounds, keys and select expressions; HAVING, ORDER BY, LIMIT."""

def window_attribute(rows: DataFrame) -> Column:
    """The window attribute in base units: what punctuations and lateness compare."""

def is_final(punctuation: Point) -> Column:
    """Whether a window (a row with its wid) is final at the punctuation."""

def data_end(rows: DataFrame) -> Column:
    """Where each row puts the data's end, in base units (NULL: nowhere)."""

def reached(data_end: Point | None) -> Column:
    """Whether a window (a row with its wid) is at or before the data's last window, the data ending there."""

def retain(kept: DataFrame, punctuation: Point | None) -> DataFrame:
    """What windows not yet final can still need of the kept cells or tuples."""

def missed(late: DataFrame, punctuation: Point | None) -> Column:
    """The text of the windows a late tuple missed."""

def show_point(value: Point | None) -> str:
    """A punctuation as a person reads it."""

def anchors_seen(rows: DataFrame, anchors: DataFrame | None) -> DataFrame:
    """ALIGN FIRST: the first arrival of every partition seen so far."""

def closing(rows: DataFrame, punctuation: Point | None) -> DataFrame:
    """GENEROUS data-driven windows: each key's closing point at the punctuation."""

def closed(rows: DataFrame, closings: DataFrame | None) -> DataFrame:
    """GENEROUS data-driven windows: _closed, whether a tuple is at or before its key's closing point."""
