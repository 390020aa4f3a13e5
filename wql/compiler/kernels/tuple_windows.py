from wql.compiler.kernels.job_support import (  # a job holds its own copy, beside this function
    batch_chunks,
    by_keys,
    jvm_kernel,
    jvm_states,
    key_ids,
    spark_column,
)
from wql.compiler.kernels.state_algebra import state_identity  # a job holds its own copy


def tuple_windows(partitions, groups, states, size, step, mode, tick=1):
    """Build a mapInArrow function for windows named by tuples, in one pass over each partition in value order.

    Input rows: one per tuple, with the partition and group key columns, `_t` (the
    range attribute in base units, NULL for none), `_names` (mode "row_num": the
    tuple's arrival within its partition is a multiple of `step`), `_in` (the tuple
    passes WHERE; absent: all do) and one contribution column per state (NULL: no
    contribution; absent: a row count, 1 per tuple). All tuples of a partition in
    one Spark partition, sorted by the partition keys, then `_t` with NULLs last
    (windows_by_tuple has Spark sort them): the pass walks them a chunk at a time
    and holds the windows in flight, whatever a partition's size.

    Windows are values w of the range attribute; their extent is (w - size, w]:
    - "every":   every tuple's value (slide by one tuple);
    - "row_num": values of the tuples whose arrival position within the
                 partition is a multiple of `step`;
    - "rank":    values at every `step`-th position in value order;
    - "kafka":   Kafka Streams' sliding windows [x, x + size] (both ends
                 inclusive), placed as KIP-450 places them; `tick` is 1 ms or 1.
    Window-ids come from every tuple; WHERE (`_in`) only filters contents.

    Within a chunk, each group's tuples are sorted by value; a window's tuples are
    then a contiguous run found by binary search, and its aggregates come from prefix
    differences (sum, moments) or a sparse table (min, max): a constant amount of
    work per window, however many tuples it holds (the start/end bins of the WID
    paper, done as an offline scan).

    Output rows: partition keys, group keys, `wid` (the window value), then the
    states, typed as their input columns.
    """
    return TupleWalk(partitions, groups, states, size, step, mode, tick).run


def kafka_windows(times, size, tick):
    """KIP-450's windows from a key's distinct times, in order: each time's left window (or the
    combined [0, size] near 0) and, where the next time follows within size, its right window."""
    import numpy as np

    if len(times) == 0:
        return times
    starts = np.where((times >= 0) & (times < size), 0, times - size)
    followed = np.r_[times[1:] <= times[:-1] + tick + size, False]
    return np.unique(np.r_[starts, times[followed] + tick])


def sparse_table(values, ufunc, longest):
    """levels[j][i] = ufunc over values[i : i + 2**j]."""
    levels = [values]
    width = 1
    while width * 2 <= longest:
        previous = levels[-1]
        levels.append(ufunc(previous[:-width], previous[width:]))
        width *= 2
    return levels


def window_extremes(ufunc, values, lo, hi):
    """ufunc (fmin or maximum) over values[lo:hi] for each window: two overlapping power-of-two spans of a
    sparse table, so a window costs the same however many tuples it holds."""
    import numpy as np

    span = hi - lo
    levels = sparse_table(values, ufunc, int(span.max()))
    level = np.floor(np.log2(span)).astype(np.int64)
    out = np.empty(len(lo), dtype=values.dtype)
    for j in np.unique(level):
        pick = level == j
        width = 1 << int(j)
        out[pick] = ufunc(levels[j][lo[pick]], levels[j][hi[pick] - width])
    return out


def window_sums(values, lo, hi):
    """Sums of values[lo:hi] by prefix differences. A NaN or an infinity is counted apart rather
    than summed, so that it reaches the windows holding it and no others, as Spark's sum does."""
    import numpy as np

    finite = np.isfinite(values) if values.dtype.kind == "f" else None
    if finite is None or finite.all():
        prefix = np.r_[np.zeros(1, values.dtype), np.cumsum(values)]
        return prefix[hi] - prefix[lo]
    prefix = np.r_[0.0, np.cumsum(np.where(finite, values, 0.0))]
    out = prefix[hi] - prefix[lo]

    def held(kind):
        count = np.r_[0, np.cumsum(kind)]
        return count[hi] - count[lo] > 0

    up, down = held(values == np.inf), held(values == -np.inf)
    out[up] = np.inf
    out[down] = -np.inf
    out[held(np.isnan(values)) | (up & down)] = np.nan
    return out


def window_aggregate(operation, columns, lo, hi):
    """A state over each window's tuples values[lo:hi] of one group sorted by value: sums and moments
    from prefix differences, min and max from a sparse table."""
    import numpy as np

    if operation == "sum":
        return [window_sums(columns[0], lo, hi)]
    if operation in ("min", "max"):
        return [window_extremes(np.fmin if operation == "min" else np.maximum, columns[0], lo, hi)]
    count, value, spread = columns  # moments, shifted by the group's mean against cancellation
    weight = np.where(np.isfinite(value), count, 0).astype(np.float64)  # the center, of finite values
    center = 0.0
    if weight.sum():
        center = float((weight * np.where(weight > 0, value, 0.0)).sum() / weight.sum())
        spread_of = np.where(weight > 0, value - center, 0.0)
        deviation = float(np.sqrt((weight * spread_of**2).sum() / weight.sum()))
        if deviation > 0:  # a power of two near the spread keeps shifted dyadic values (ints, quarters) exact
            step = 2.0 ** np.floor(np.log2(deviation))
            center = float(np.round(center / step) * step)
    shifted = np.where(count > 0, value - center, 0.0)
    total = window_sums(count, lo, hi)
    first = window_sums(count * shifted, lo, hi)
    second = window_sums(count * shifted * shifted + spread, lo, hi)
    safe = np.where(total > 0, total, 1)
    return [total, center + first / safe, second - first * first / safe]


class TupleWalk:
    """tuple_windows's request and its walk over one Spark partition. Its bound `run` is the function
    mapInArrow pickles to Spark's Python workers; each chunk's steps are TupleChunk's methods."""

    def __init__(self, partitions, groups, states, size, step, mode, tick):
        self.partitions, self.groups, self.states = partitions, groups, states
        self.size, self.step, self.mode, self.tick = size, step, mode, tick

    def run(self, batches):
        """Walk the partition's tuples, sorted by the PATTR keys then value (NULLs last), a chunk at a time
        (batch_chunks): a pass holds the windows in flight, not the partition."""
        # (tuples, their naming flags, the key's present tuples so far, emitted below), chunk to chunk
        walk = {"carried": None}
        held = lambda: 0 if walk["carried"] is None else walk["carried"][0].num_rows  # noqa: E731
        for table, last_chunk in batch_chunks(batches, held):
            if table is None and walk["carried"] is None:
                return
            out, walk["carried"] = self.windows_of(table, walk["carried"], continues=not last_chunk)
            yield from out

    def windows_of(self, table, carried, continues):
        """The windows of one chunk: the carried tuples (those of the key the last chunk ended on) and
        `table`'s. With `continues`, the key of the chunk's last tuple may go on in the next chunk: it emits
        only windows whose extent ends below its largest value here (later tuples are not smaller), and
        the result says what it carries: its tuples later windows can hold, which of them name a window,
        how many present tuples it has had (SLIDE n ROWS over rank) and below which window-id it is done."""
        import itertools

        import pyarrow as pa

        chunk = TupleChunk(self, table, carried)
        names, counted = chunk.naming(carried)
        carry = None
        for start, stop in itertools.pairwise(chunk.bounds):
            windows, going = chunk.key_windows(start, stop, names, carried, continues)
            if going is not None:
                kept, done = going
                carry = (chunk.table.take(pa.array(kept)), names[kept], counted, done)
            if len(windows):
                chunk.aggregate_groups(start, stop, windows)
        return chunk.batches(), carry


class TupleChunk:
    """One chunk of tuple_windows's tuples, the carried key's first, on its way to windows, a step per
    method: its columns read (__init__), which tuples name a window (naming), each key's windows and what
    the key going on carries (key_windows), each group's states over them (aggregate_groups) and the
    record batch out (batches). The windows found so far are kept on the chunk, one array per group."""

    def __init__(self, spec, table, carried):
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        self.spec = spec
        self.held = 0 if carried is None else carried[0].num_rows
        parts = [t for t in ([] if carried is None else [carried[0]]) + [table] if t is not None]
        self.table = table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        self.n = n = table.num_rows
        self.attribute = table.column("_t")
        self.present = pc.is_valid(self.attribute).to_numpy(zero_copy_only=False)
        self.values = pc.fill_null(self.attribute, 0).to_numpy(zero_copy_only=False)
        self.inside = self.present
        if "_in" in table.column_names:  # without WHERE every tuple counts
            self.inside = pc.fill_null(table.column("_in"), False).to_numpy(zero_copy_only=False) & self.present
        partition = key_ids(table, spec.partitions)
        self.group = key_ids(table, spec.partitions + spec.groups)
        self.bounds = np.flatnonzero(np.r_[True, partition[1:] != partition[:-1], True])  # each key's tuples
        self.contributions = {}
        for operation, names in spec.states:
            for name in names:
                if name not in table.column_names:  # a row count: each tuple contributes 1
                    self.contributions[name] = np.ones(n, dtype=np.int64)
                    continue
                column = table.column(name)
                filled = pc.fill_null(column, state_identity(operation, column.type.to_pandas_dtype()))
                self.contributions[name] = filled.to_numpy(zero_copy_only=False)
        self.representatives, self.wids = [], []
        self.results = {name: [] for _, names in spec.states for name in names}

    def naming(self, carried):
        """Which tuples name a window: every present one; with SLIDE n ROWS, every n-th arrival (numbered by
        Spark, `_names`) or every n-th present tuple in value order (rank, counted across chunks, so the
        result also says how many present tuples the chunk's last key has had)."""
        import itertools

        import numpy as np
        import pyarrow.compute as pc

        spec, present, held = self.spec, self.present, self.held
        names = present.copy()
        if spec.mode == "row_num":
            names &= pc.fill_null(self.table.column("_names"), False).to_numpy(zero_copy_only=False)
        counted = 0
        if spec.mode == "rank":
            for start, stop in itertools.pairwise(self.bounds):
                since = max(start, held)  # the chunk's new tuples of this key (the carried ones come first)
                before = carried[2] if carried is not None and start == 0 else 0
                rank = before + np.cumsum(present[since:stop]) - 1
                names[since:stop] = present[since:stop] & (rank % spec.step == 0)
                counted = before + int(present[since:stop].sum())
        if carried is not None:
            names[:held] = carried[1]
        return names, counted

    def key_windows(self, start, stop, names, carried, continues):
        """The windows of the key whose tuples are start..stop − 1, less those an earlier chunk emitted, and,
        for the key going on into the next chunk, only those no later tuple can reach; for that key also
        (the rows it carries, the window-id below which it is done), else None."""
        import numpy as np

        spec, values, present = self.spec, self.values, self.present
        size, kafka = spec.size, spec.mode == "kafka"
        rows = np.arange(start, stop)
        shown = rows[present[rows]]
        if kafka:
            windows = kafka_windows(np.unique(values[shown]), size, spec.tick)
        else:
            windows = np.unique(values[rows[names[rows]]])
        if carried is not None and start == 0 and carried[3] is not None:
            windows = windows[windows >= carried[3]]  # emitted by an earlier chunk
        if not (continues and stop == self.n and len(shown) > 0):
            return windows, None
        top = values[shown].max()
        reach = windows + size if kafka else windows
        windows = windows[reach < top]  # a later tuple (not below top) can still reach the others
        lowest = top - size - spec.tick if kafka else top - size
        kept = rows[present[rows] & ((values[rows] >= lowest) if kafka else (values[rows] > lowest))]
        return windows, (kept, top - size if kafka else top)

    def aggregate_groups(self, start, stop, windows):
        """Each group's states over the key's windows: its tuples inside the filter, sorted by value, so
        a window's tuples are the run two binary searches find."""
        import itertools

        import numpy as np

        spec, values, group = self.spec, self.values, self.group
        size, rows = spec.size, np.arange(start, stop)
        members = rows[self.inside[rows]]
        members = members[np.lexsort([values[members], group[members]])]
        cuts = np.flatnonzero(np.r_[True, group[members][1:] != group[members][:-1], True])
        for first, last in itertools.pairwise(cuts):
            tuples = members[first:last]
            ordered = values[tuples]
            if spec.mode == "kafka":  # [x, x + size]
                lo = np.searchsorted(ordered, windows, side="left")
                hi = np.searchsorted(ordered, windows + size, side="right")
            else:  # (w - size, w]
                lo = np.searchsorted(ordered, windows - size, side="right")
                hi = np.searchsorted(ordered, windows, side="right")
            keep = hi > lo
            if not keep.any():
                continue
            lo, hi = lo[keep], hi[keep]
            self.representatives.append(np.full(len(lo), tuples[0]))
            self.wids.append(windows[keep])
            for operation, names in spec.states:
                merged = window_aggregate(operation, [self.contributions[c][tuples] for c in names], lo, hi)
                for name, array in zip(names, merged, strict=True):
                    self.results[name].append(array)

    def batches(self):
        """The chunk's windows as one record batch (none if it has none): partition keys, group keys, `wid`,
        then the states, typed as their input columns."""
        import numpy as np
        import pyarrow as pa

        if not self.representatives:
            return []
        spec, table, attribute = self.spec, self.table, self.attribute
        keys = spec.partitions + spec.groups
        taken = pa.array(np.concatenate(self.representatives))
        fields = [table.schema.field(name) for name in keys]
        columns = [table.column(name).take(taken).combine_chunks() for name in keys]
        fields.append(pa.field("wid", attribute.type))
        columns.append(pa.array(np.concatenate(self.wids), type=attribute.type))
        for _, names in spec.states:
            for name in names:
                field = table.schema.field(name) if name in table.column_names else pa.field(name, pa.int64())
                fields.append(field)
                columns.append(pa.array(np.concatenate(self.results[name]), type=field.type))
        return [pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))]


def windows_by_tuple(rows, schema, partitions, groups, states, size, step, mode, tick=1):
    """Windows named by tuples with WQL's JVM kernel where it applies, else with the numpy kernel.

    Window-ids need every tuple of a partition (PATTR), so each partition's tuples
    go to one Spark partition, or the whole stream to one without PATTR. The JVM
    kernel (wql-kernels.jar on Spark's classpath) takes a window at every tuple
    without GROUP BY inside the partitions, on an integral attribute; it is an
    operator in Spark's own plan that asks Spark for that clustering, and returns
    the same rows as tuple_windows without the Arrow round trip to Python.
    """

    if isinstance(size, int):
        operations, columns = jvm_states(states)
        request = {"kernel": "TupleWindows", "partitions": partitions, "groups": groups, "operations": operations}
        request.update(columns=columns, size=size, mode=mode, output=schema.json())
        windows = jvm_kernel(rows, request)
        if windows is not None:
            return windows
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = [spark_column(name) for name in partitions]
    if mode == "row_num":  # every step-th arrival of its partition names a window: numbered by Spark
        arrival = (Window.partitionBy(*keys) if keys else Window).orderBy("_pos")
        rows = rows.withColumn("_names", (F.row_number().over(arrival) - 1) % step == 0)
    # numpy walks each partition's tuples in (keys, value) order, NULLs last: Spark sorts them (its sort spills).
    ordered = by_keys(rows, partitions).sortWithinPartitions(*keys, F.col("_t").asc_nulls_last())
    return ordered.mapInArrow(tuple_windows(partitions, groups, states, size, step, mode, tick), schema)
