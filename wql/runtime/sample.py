"""A small sample of a stream, read in plain Python (no Spark): what `wql explain --draw` draws.

The first rows of the stream's FROM path (a csv or json file, the first files of a directory, a
parquet file through pyarrow), typed as the CREATE STREAM declares them; a row that does not fit
its types is left out, as Spark's reader would count it malformed. A source this process cannot read
(Kafka, Spark's rate source, a path that is not there yet, a URL) gets a synthetic sample made from
the schema and the window: a few keys, attribute values a fraction of a slide apart with now and
then a pause, so every kind of window has something to show.
"""

from __future__ import annotations

import csv
import datetime
import glob
import json
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from wql.compiler.analysis import Query
from wql.compiler.schema import Column, Domain, Stream
from wql.runtime.reference import from_base

Row = dict[str, Any]
LIMIT = 2_000  # rows read at most: the reference evaluator is quadratic on purpose


@dataclass(frozen=True)
class Sample:
    rows: list[Row]
    source: str  # said in the picture: where the rows came from
    whole: bool  # every row of the source: the last windows are as partial as the data makes them


def sample(query: Query, path: str | None = None, limit: int = LIMIT) -> Sample:
    """The first `limit` rows of the query's stream (or of `path`), or a synthetic sample."""
    stream = query.stream
    where = path or stream.path
    if stream.source == "files" and where and "://" not in where.removeprefix("file:"):
        local = where.removeprefix("file:")
        files = _files(local)
        if files:
            rows, whole = _read(stream, files, limit)
            if rows:
                relative = os.path.relpath(local)
                shown = local if relative.startswith("..") else relative
                return Sample(rows, f"the first {len(rows):,} rows of {shown}" if not whole else shown, whole)
    return Sample(synthetic(query), "a synthetic sample (the stream's source cannot be read here)", True)


def _files(path: str) -> list[str]:
    if os.path.isfile(path):
        return [path]
    if os.path.isdir(path):
        return sorted(p for p in glob.glob(os.path.join(path, "*")) if os.path.isfile(p) and not _hidden(p))
    return []


def _hidden(path: str) -> bool:
    name = os.path.basename(path)
    return name.startswith((".", "_"))


def _read(stream: Stream, files: list[str], limit: int) -> tuple[list[Row], bool]:
    rows: list[Row] = []
    fmt = (stream.format or "csv").lower()
    for path in files:
        reader = {"csv": _csv_rows, "json": _json_rows, "parquet": _parquet_rows}.get(fmt)
        if reader is None:
            return [], False
        for raw in reader(stream, path):
            typed = _typed(stream, raw)
            if typed is not None:
                rows.append(typed)
            if len(rows) >= limit:
                return rows, False
    return rows, True


def _options(stream: Stream) -> dict[str, str]:
    return {str(k).lower(): str(v).lower() if isinstance(v, bool) else str(v) for k, v in stream.options}


def _csv_rows(stream: Stream, path: str) -> Iterator[dict[str, Any]]:
    options = _options(stream)
    header = options.get("header", "false").lower() == "true"
    names = [c.name for c in stream.columns]
    with open(path, encoding=options.get("encoding", "utf-8"), newline="") as handle:
        reader = csv.reader(handle, delimiter=options.get("sep", options.get("delimiter", ",")) or ",")
        for index, cells in enumerate(reader):
            if header and index == 0:
                continue
            yield dict(zip(names, cells, strict=False))


def _json_rows(stream: Stream, path: str) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def _parquet_rows(stream: Stream, path: str) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    for batch in table.to_batches(max_chunksize=LIMIT):
        yield from batch.to_pylist()


def _typed(stream: Stream, raw: dict[str, Any]) -> Row | None:
    """The row with each column in its declared type (None for an empty value), or None if one does not fit."""
    row: Row = {}
    for column in stream.columns:
        value = next((v for k, v in raw.items() if k.lower() == column.name.lower()), None)
        try:
            row[column.name] = _value(column, value)
        except (ValueError, TypeError, InvalidOperation):
            return None
    return row


def _value(column: Column, value: Any) -> Any:
    if value is None or value == "":
        return None
    kind = column.base_type
    if kind == "TIMESTAMP":
        moment = value if isinstance(value, datetime.datetime) else datetime.datetime.fromisoformat(str(value))
        if moment.tzinfo is not None:
            moment = moment.astimezone(datetime.UTC).replace(tzinfo=None)
        return moment
    if kind == "DATE":
        return value if isinstance(value, datetime.date) else datetime.date.fromisoformat(str(value)[:10])
    if column.domain is Domain.INTEGER:
        return int(value)
    if column.domain is Domain.FLOAT:
        return float(value)
    if column.domain is Domain.DECIMAL:
        return Decimal(str(value))
    if kind == "BOOLEAN":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, dict | list) else str(value)


def data_size(stream: Stream, path: str | None = None, most: int = 256 << 20) -> str | None:
    """How much data the stream's FROM path (or `path`) holds, in words, where this process can see it: rows of
    csv and json files (lines, without a header) and parquet (its metadata), and only its bytes past `most`
    bytes of text; None for a table, a URL, Kafka or `rate`, or a path that is not there."""
    where = path or stream.path
    if stream.source != "files" or not where or "://" in where.removeprefix("file:"):
        return None
    local = where.removeprefix("file:")
    files = _files(local)
    if not files:
        return None
    name = os.path.basename(local.rstrip("/"))
    fmt = (stream.format or "csv").lower()
    count = f"{len(files):,} files in {name}" if len(files) > 1 or os.path.isdir(local) else name
    size = sum(os.path.getsize(f) for f in files)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    elif size <= most:
        header = fmt == "csv" and _options(stream).get("header", "false") == "true"
        rows = sum(_lines(f) - header for f in files)
    else:
        return f"{size / (1 << 20):,.0f} MB ({count})"
    return f"{rows:,} row{'s' if rows != 1 else ''} ({count})"


def _lines(path: str) -> int:
    """Non-empty lines of a text file, read in blocks."""
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


# ------------------------------------------------------------------ a synthetic sample


def synthetic(query: Query, count: int = 60) -> list[Row]:
    """Rows made from the schema: three keys in turn, window attribute values about a third of the
    window's step apart (a pause of several steps now and then, so sessions and frames end), and for
    interval events, lengths of up to two steps."""
    window = query.window
    rng = random.Random(11)
    step = _step(query)
    keys = ("a", "b", "c")
    rows: list[Row] = []
    value = 0.0
    for index in range(count):
        value += step / 3 * rng.uniform(0.5, 1.5) + (step * 4 if index % 17 == 16 else 0)
        row: Row = {}
        for number, column in enumerate(query.stream.columns):
            row[column.name] = _made(column, index, number, value, rng, keys)
        attr = window.attr
        if not attr.is_row_num and attr.domain is not Domain.OTHER:
            row[attr.name] = from_base(_rounded(value, attr.domain), attr.domain)
        if window.end_attr is not None:
            length = step * rng.uniform(0.1, 2.0)
            end = window.end_attr.domain
            row[window.end_attr.name] = from_base(_rounded(value + length, end), end)
        rows.append(row)
    return rows


def _step(query: Query) -> float:
    """A typical distance between windows, in the attribute's base units."""
    window = query.window
    if window.rule is not None and window.rule.gap is not None:
        return float(window.rule.gap)
    if window.slide is not None and window.slide_on.value == "attribute":
        return float(window.slide)
    if window.range is not None and not window.attr.is_row_num:
        return float(window.range) / 3
    if window.attr.domain is Domain.TIMESTAMP:
        return 60_000_000.0  # a minute
    return 3.0


def _rounded(value: float, domain: Domain) -> float | int:
    return value if domain is Domain.FLOAT else round(value)


def _made(column: Column, index: int, number: int, value: float, rng: random.Random, keys: tuple[str, ...]) -> Any:
    if column.domain is Domain.TIMESTAMP:
        return from_base(int(value), Domain.TIMESTAMP)
    if column.domain is Domain.DATE:
        return from_base(int(value), Domain.DATE)
    if column.domain is Domain.INTEGER:
        return int(value) if number == 0 else rng.randint(0, 100)
    if column.domain is Domain.FLOAT:
        return round(rng.uniform(10, 90), 2)
    if column.domain is Domain.DECIMAL:
        return Decimal(rng.randint(0, 10_000)) / 100
    if column.base_type == "BOOLEAN":
        return index % 2 == 0
    return keys[index % len(keys)]


__all__ = ["Sample", "data_size", "sample", "synthetic"]
