"""The typed contract between a generated job and the support code copied into it.

The kernel modules (job_support, streaming, store, edges) are copied verbatim into jobs
(wql.compiler.codegen.support), where the job's own code defines what they call: the
stages (prepare, lift, windows, finish, …), the window rules of the plan's family
(is_final, retain, missed, …) and constants (STREAMS, STREAMING, …). Those names are
declared, with their types, in `job.pyi` beside this module, which the kernel modules
import for type checking only, so that ruff's undefined-name check (F821) holds there as
everywhere. The constants' shapes are the typed dictionaries below, which the code
generators build and a test holds against the declarations. This module is never copied
into a job.
"""

from typing import Literal, NotRequired, TypedDict


class Stream(TypedDict):
    """One input stream of a job (STREAMS[name]): where and how it is read."""

    parameter: str  # the name of `query`'s parameter that takes it
    path: str | None
    format: str  # csv, json, parquet, … (or the source's)
    schema: str  # a DDL string of its columns
    options: dict[str, str]
    numbered: bool  # the job numbers its rows (row_num) before WHERE
    window_attributes: list[str]  # the columns a window reads: a row without them is malformed
    source: NotRequired[Literal["files", "table", "rate", "kafka"]]  # streaming jobs only
    columns: NotRequired[list[list[str]]]  # [name, type] pairs, as declared; streaming jobs and tables
    table: NotRequired[str]  # FROM TABLE: the table's name as Spark parses it, each part backquoted


class CellStore(TypedDict):
    """What Spark's state store keeps of a grid query (STREAMING["store"]), read by the JVM's StreamCells."""

    state: Literal["cells"]  # which JVM function keeps it: StreamCells
    keys: list[str]
    cell: str  # the column of a tuple's cell index
    operations: list[str]  # each partial state's combine: sum, min, max, moments
    columns: list[str]
    size: int  # cells a window spans
    step: int  # cells a window moves by
    origin: int  # the grid's origin, base units (on a calendar grid, cells)
    slide: int  # base units (on a calendar grid, cells)
    emit: Literal["final", "changes"]
    generous: bool
    calendar: "CalendarGrid | None"  # None: a uniform grid


class CalendarGrid(TypedDict):
    """A calendar grid's cells (docs/semantics.md §2.21), for the JVM's CalendarCells: where a window ends."""

    cell: Literal["day", "month"]
    zone: str | None  # the zone whose local days and months they are; None for a DATE attribute


class SessionStore(TypedDict):
    """What Spark's state store keeps of a session query (STREAMING["store"]), read by the JVM's StreamSessions."""

    state: Literal["session"]  # which JVM function keeps it: StreamSessions
    keys: list[str]  # the PATTR columns
    gap: int  # GAP, base units
    operations: list[str]  # each partial state's combine, the first the tuple's count
    columns: list[str]
    counted: list[str]  # the columns whose share is one per tuple, which the job adds (the windows stage counts)
    emit: Literal["final", "changes"]
    generous: bool  # each key's closing point kept beside its sessions; a late tuple past it is placed


StoreRequest = CellStore | SessionStore


class Streaming(TypedDict):
    """What the streaming driver needs to know of a query (STREAMING), written by codegen/stream.py."""

    keeps: Literal["cells", "rows"]  # the state between triggers: partial states of cells, or tuples
    shares: bool  # each tuple becomes a cell of its own (the shares stage) rather than lifted cells
    slack: int | float | None  # SLACK in base units: the punctuation trails max(t) by it
    mode: Literal["consistent", "generous", "kafka"]
    emit: Literal["final", "changes"]
    punctuation: str | None  # the SQL condition that marks a punctuation row, if the stream has one
    numbered: bool  # the job numbers rows (row_num) across triggers
    positions: list[str]  # PATTR attributes whose partitions count their own rows (FCF tuple windows)
    anchored: bool  # ALIGN FIRST: each partition's first arrival is kept across triggers
    partition_columns: list[str]  # the key columns of those partitions
    keyed: list[str]  # data-driven windows: a trigger computes again only the keys its tuples touch
    closings: list[str] | None  # GENEROUS data-driven windows: keys whose closing point the state keeps
    opened: bool  # the kept tuples begin where the earliest open window begins (not at a punctuation)
    lowered: bool  # the job has a lower stage (aggregates from combined partial states)
    store: StoreRequest | None  # the query's state in Spark's state store, or None: in the job's files
    # EMIT CHANGES of sessions only: the windows stage's columns that name a session's row (wid, keys), by which
    # a trigger finds the versions emitted before whose session is gone, to retract them.
    retracts: NotRequired[list[str]]
    # Kafka's late-record rule (SLACK … KAFKA) only: the job's replay stage places each trigger's records in the
    # windows the kept records hold (docs/semantics.md §8.13).
    replays: NotRequired[bool]
    # Windows that go only as far as the data (landmark windows, interval events' windows): the job's data_end and
    # reached rules; the meta keeps the data's end, since a window the punctuation passed beyond it is emitted
    # once the data reaches it (docs/semantics.md §8.10).
    reaches: NotRequired[bool]
