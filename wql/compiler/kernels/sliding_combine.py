from wql.compiler.kernels.job_support import (  # a job holds its own copy, beside this function
    batch_chunks,
    held_row,
    jvm_kernel,
    jvm_states,
    spark_column,
)
from wql.compiler.kernels.state_algebra import state_combine, state_identity  # a job holds its own copy


def sliding_combine(keys, cell, states, size, step, last=None, cumulate=False, months=None, month_origin=0):
    """Build a mapInArrow function that combines ordered cells (panes or slices) into windows.

    Input rows: one per (keys, cell) with partial aggregate states; all cells of a
    key in the same partition, sorted by keys, then cell (combine_cells has Spark sort
    them): the pass walks them a chunk at a time and holds only the cells of the
    windows in flight, whatever a key's size. Window w is the `size` cells that end at
    cell (w + 1) * step - 1. The cells of each key are laid out densely and cut
    into blocks of `size`; a window is then the suffix of one block combined with
    the prefix of the next (van Herk / Gil-Werman). Each cell takes part in a
    constant number of combines, however large size / step is, and no inverse is
    needed, so min and max share work as well as sum does.

    With `last` (landmark windows), window w is every cell up to w (size and step
    are 1) and windows run from a key's first cell to the value of column `last`,
    the stream's last window.

    With `cumulate` (CUMULATE windows, step 1), window w is the cells of w's period
    (`size` cells, starting at a multiple of size) up to w: a running combine that
    starts again at each period, the prefix of one block. Windows run from a key's
    first cell in a period to the period's end. With `months` (month to date on a
    calendar), the cells are days from 1970-01-01 and a period is `months` calendar
    months from month `month_origin`: its block starts at its first day and holds
    `size` cells (at least its days; the rest are empty, and no window ends there).

    states: (operation, columns) pairs; operation is "sum", "min", "max" or
    "moments" (count, mean, M2, combined with Chan's parallel formula). Output rows
    have the input's schema, with the cell column holding the window-id.
    """
    return CellCombine(keys, cell, states, size, step, last, cumulate, months, month_origin).run


def block_scan(operation, blocks):
    """Running combine along each block's cells: prefix (and, on reversed blocks, suffix). Sum, min and
    max are one ufunc accumulate over every block at once; moments go column by column, each step a
    vectorized combine across the blocks."""
    import numpy as np

    ufunc = {"sum": np.add, "min": np.fmin, "max": np.maximum}.get(operation)
    if ufunc is not None:
        return [ufunc.accumulate(blocks[0], axis=1)]
    out = [b.copy() for b in blocks]
    for j in range(1, out[0].shape[1]):
        merged = state_combine(operation, [o[:, j - 1] for o in out], [b[:, j] for b in blocks])
        for o, m in zip(out, merged, strict=True):
            o[:, j] = m
    return out


def block_windows(operation, dense, ends, size):
    """The combine of the `size` cells ending at each of `ends`, over states laid out densely in blocks of
    `size` (van Herk / Gil-Werman): a window is the suffix of one block combined with the prefix of the
    next, so each cell takes part in a constant number of combines however many windows hold it, and no
    inverse is needed (min and max share work as sum does). Shared by sliding_combine and event_slices."""
    import numpy as np

    blocks = [d.reshape(-1, size) for d in dense]
    prefix = [p.ravel() for p in block_scan(operation, blocks)]
    suffix = [s[:, ::-1].ravel() for s in block_scan(operation, [b[:, ::-1] for b in blocks])]
    starts = ends - size + 1
    aligned = starts % size == 0
    left = [np.where(aligned, state_identity(operation, s.dtype), s[starts]) for s in suffix]
    return state_combine(operation, left, [p[ends] for p in prefix])


def running_in_blocks(operation, values):
    """Running combine along one long sequence (a landmark run), in blocks of about sqrt(n): block_scan
    within the blocks and across their totals keeps both Python loops short for moments."""
    import numpy as np

    n = len(values[0])
    width = max(1, int(np.sqrt(n)))
    rows = -(-n // width)
    padded = []
    for v in values:
        p = np.full(rows * width, state_identity(operation, v.dtype), dtype=v.dtype)
        p[:n] = v
        padded.append(p.reshape(rows, width))
    inside = block_scan(operation, padded)  # within each block
    totals = block_scan(operation, [i[:, -1][None, :] for i in inside])  # across blocks
    carry = [np.r_[state_identity(operation, t.dtype), t[0, :-1]] for t in totals]
    merged = state_combine(operation, [c[:, None] for c in carry], inside)
    return [m.ravel()[:n] for m in merged]


class CellCombine:
    """sliding_combine's request and its walk over one Spark partition. Its bound `run` is the function
    mapInArrow pickles to Spark's Python workers; each chunk's steps are CombineChunk's methods."""

    TAIL = 65_536  # a landmark tail's windows per record batch

    def __init__(self, keys, cell, states, size, step, last, cumulate, months=None, month_origin=0):
        self.keys, self.cell, self.states = keys, cell, states
        self.size, self.step, self.last, self.cumulate = size, step, last, cumulate
        self.months, self.month_origin = months, month_origin

    def period(self, cells):
        """CUMULATE: the period each cell falls in, `size` cells from 0 or `months` months from month_origin."""
        import numpy as np

        if self.months is None:
            return np.floor_divide(cells, self.size)
        month = np.asarray(cells, dtype=np.int64).astype("datetime64[D]").astype("datetime64[M]").astype(np.int64)
        return np.floor_divide(month - self.month_origin, self.months)

    def period_first(self, period):
        """CUMULATE: each period's first cell."""
        import numpy as np

        if self.months is None:
            return self.size * period
        month = self.month_origin + self.months * np.asarray(period, dtype=np.int64)
        return month.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)

    def period_last(self, period):
        """CUMULATE: each period's last cell (a window ends on every cell of a period, the last one too)."""
        return self.period_first(period + 1) - 1

    def run(self, batches):
        """Walk the partition's cells, sorted by keys then cell, a chunk at a time (batch_chunks): a pass
        holds the cells of the windows in flight, not the partition."""
        import pyarrow as pa

        walk = {"carry": None, "done": None, "final": None}  # what goes on from one chunk to the next
        for chunk, last_chunk in batch_chunks(batches, lambda: getattr(walk["carry"], "num_rows", 0)):
            parts = [t for t in (walk["carry"], chunk) if t is not None]
            if not parts:
                return
            table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
            if self.last is not None and walk["final"] is None:
                walk["final"] = table.column(self.last)[0].as_py()
            out, walk["carry"], walk["done"] = self.windows_of(table, walk["final"], walk["done"], not last_chunk)
            yield from out

    def windows_of(self, table, final, done, continues):
        """The windows of one chunk of cells, sorted by keys then cell, and what the next chunk carries.

        done: the last window end already emitted for the key of the chunk's first row (the key carried
        in), or None. With `continues`, the key of the chunk's last row may go on in the next chunk: its
        windows end at its last cell here at most (its later cells are larger), and it carries the cells
        its later windows hold (a landmark key: one cell holding everything so far combined). Returns
        (record batches, carry or None, the last window end emitted for the carried key)."""
        chunk = CombineChunk(self, table, final, done, continues)
        columns, totals = chunk.combined()
        batches = []
        if len(chunk.ends):
            batches.append(chunk.rows(chunk.order[chunk.run_first][chunk.run_of_window], chunk.ends, columns))
        if self.last is not None:
            batches.extend(chunk.tails(totals))
        if not continues:
            return batches, None, None
        return batches, chunk.carry(totals), ((chunk.top + 1) // self.step) * self.step - 1

    def key_codes(self, table):
        """Each key column's dictionary codes (NULL: -1): sorting and comparing them finds the keys' rows."""
        import pyarrow.compute as pc

        codes = []
        for name in self.keys:
            column = pc.dictionary_encode(table.column(name)).combine_chunks()
            codes.append(pc.fill_null(column.indices, -1).to_numpy(zero_copy_only=False))
        return codes


class CombineChunk:
    """One chunk of sliding_combine's cells on its way to windows, a step per method: the cells sorted and
    cut into runs (cut_runs), each run's window ends (place_windows), the runs laid out densely in blocks
    (lay_out), the states combined over them (combined), then the rows out (rows, tails) and what the
    chunk's last key carries into the next (carry). Every step is vectorized over the chunk's runs."""

    def __init__(self, spec, table, final, done, continues):
        self.spec, self.table, self.final, self.continues = spec, table, final, continues
        self.cut_runs()
        self.place_windows(done)
        self.lay_out()

    def cut_runs(self):
        """The cells in (keys, cell) order, cut into runs: a key's cells that windows link. A landmark run
        is all of a key's cells; a CUMULATE run those of one period; a sliding run ends where the next cell
        is `size` or more past it, so a gap between a key's cells is never laid out."""
        import numpy as np

        spec = self.spec
        n = self.table.num_rows
        cells = self.table.column(spec.cell).to_numpy()
        codes = spec.key_codes(self.table)
        order = np.lexsort([cells, *reversed(codes)])
        cells = cells[order]
        new_key = np.zeros(n, dtype=bool)
        new_key[0] = True
        for code in codes:
            sorted_code = code[order]
            new_key[1:] |= sorted_code[1:] != sorted_code[:-1]
        group = np.cumsum(new_key) - 1
        if spec.cumulate:
            period = spec.period(cells)
            starts_run = new_key.copy()
            starts_run[1:] |= period[1:] != period[:-1]  # a run is one key's cells of one period
        elif spec.last is None:
            starts_run = new_key.copy()
            starts_run[1:] |= (cells[1:] - cells[:-1]) >= spec.size  # too far apart to share a window
        else:
            starts_run = new_key
        self.order, self.cells = order, cells
        self.run_first = np.flatnonzero(starts_run)
        self.run_last = np.r_[self.run_first[1:], n] - 1
        self.lo, self.hi = cells[self.run_first], cells[self.run_last]
        self.run_group = group[self.run_first]
        group_of_row = np.empty(n, dtype=group.dtype)
        group_of_row[order] = group
        self.first_group, self.last_group = group_of_row[0], group_of_row[n - 1]  # the keys carried in and on

    def place_windows(self, done):
        """Window ends, per run: every cell e with (e + 1) % step == 0 that a window can end at. A landmark
        run's windows are computed cell by cell up to its last cell (or window 0); the windows after it,
        up to the stream's last, all hold the run's total (its tail). The key going on into the next chunk
        stops at its last cell here; the key carried in starts after the windows already out (`done`)."""
        import numpy as np

        spec, lo, hi = self.spec, self.lo, self.hi
        size, step = spec.size, spec.step
        if spec.cumulate:
            first_end = lo.copy()
            last_end = spec.period_last(spec.period(lo))
        elif spec.last is None:
            first_end = -(-(lo + 1) // step) * step - 1
            last_end = ((hi + size) // step) * step - 1
        else:
            first_end = np.maximum(lo, 0)
            last_end = np.minimum(np.maximum(hi, 0), int(self.final))
        self.complete_to = last_end.copy()
        self.going, self.top = None, None
        if self.continues:
            self.going = self.run_group == self.last_group
            self.top = int(self.cells[self.run_last[self.going][-1]])
            last_end[self.going] = np.minimum(last_end[self.going], ((self.top + 1) // step) * step - 1)
        if done is not None:
            carried = self.run_group == self.first_group
            first_end[carried] = np.maximum(first_end[carried], done + step)
        self.first_end, self.last_end = first_end, last_end
        self.count = np.maximum((last_end - first_end) // step + 1, 0)

    def lay_out(self):
        """Dense, block-aligned layout per run: one block before the first window's start (CUMULATE: the
        run's period is its one block; landmark: from the run's first cell to its last or window 0). Each
        cell's position in it and each window end's, so the combine is whole-array work."""
        import numpy as np

        spec, lo, hi, size = self.spec, self.lo, self.hi, self.spec.size
        if spec.cumulate:
            base = spec.period_first(spec.period(lo))
            end = base + size
        elif spec.last is None:
            base = size * np.floor_divide(lo - size + 1, size)
            end = size * (np.floor_divide(hi + size - 1, size) + 1)
        else:
            base = lo  # cells before 0 still count towards window 0
            end = np.maximum(hi, 0) + 1
        runs = len(self.run_first)
        self.base, self.length = base, end - base
        self.offset = np.r_[0, np.cumsum(self.length)[:-1]]
        run_of_row = np.repeat(np.arange(runs), self.run_last - self.run_first + 1)
        self.position = self.offset[run_of_row] + (self.cells - base[run_of_row])
        self.total = int(self.length.sum())
        count = self.count
        self.run_of_window = np.repeat(np.arange(runs), count)
        within = np.arange(int(count.sum())) - np.repeat(np.r_[0, np.cumsum(count)[:-1]], count)
        self.ends = self.first_end[self.run_of_window] + spec.step * within
        self.dense_end = self.offset[self.run_of_window] + (self.ends - base[self.run_of_window])

    def dense(self, operation, names):
        """A state's columns over the dense layout, the identity where no cell is."""
        import numpy as np
        import pyarrow.compute as pc

        dense = []
        for name in names:
            column = self.table.column(name)
            v = pc.fill_null(column, state_identity(operation, column.type.to_pandas_dtype()))
            v = v.to_numpy(zero_copy_only=False)[self.order]
            d = np.full(self.total, state_identity(operation, v.dtype), dtype=v.dtype)
            d[self.position] = v
            dense.append(d)
        return dense

    def combined(self):
        """Each state's windows, {column: values per window end}, and (landmark) each run's total, which
        its tail repeats: the combine each kind of window asks for."""
        spec = self.spec
        columns, totals = {}, {}
        for operation, names in spec.states:
            dense = self.dense(operation, names)
            if spec.last is not None:
                merged, through = self.landmark(operation, dense)
                totals.update(zip(names, through, strict=True))
            elif spec.cumulate:
                # CUMULATE: window w is the running combine of its period's block up to w.
                prefix = [p.ravel() for p in block_scan(operation, [d.reshape(-1, spec.size) for d in dense])]
                merged = [p[self.dense_end] for p in prefix]
            else:
                merged = block_windows(operation, dense, self.dense_end, spec.size)
            for name, array in zip(names, merged, strict=True):
                columns[name] = array
        return columns, totals

    def landmark(self, operation, dense):
        """Landmark windows: window w holds every cell up to w, a running combine along each run; and each
        run's total (every one of its cells combined)."""
        import numpy as np

        result = [np.empty_like(d) for d in dense]
        for r in range(len(self.run_first)):
            part = slice(self.offset[r], self.offset[r] + self.length[r])
            for out, values in zip(result, running_in_blocks(operation, [d[part] for d in dense]), strict=True):
                out[part] = values
        through = self.offset + (self.hi - self.base)
        return [r[self.dense_end] for r in result], [r[through] for r in result]

    def rows(self, representative, window_ends, values):
        """A record batch of windows: the window-ids, the states, the other columns of a representative
        cell; windows without rows (the first state counts them) left out."""
        import pyarrow as pa

        spec, table = self.spec, self.table
        keep = values[spec.states[0][1][0]] > 0  # the first state counts the window's rows
        out = []
        for field in table.schema:
            if field.name == spec.cell:
                out.append(pa.array((window_ends[keep] + 1) // spec.step - 1, type=field.type))
            elif field.name in values:
                out.append(pa.array(values[field.name][keep], type=field.type))
            else:
                out.append(table.column(field.name).take(pa.array(representative[keep])).combine_chunks())
        return pa.RecordBatch.from_arrays(out, schema=table.schema)

    def tails(self, totals):
        """Each complete landmark run's tail, a slice at a time: the windows after its last cell, up to
        the stream's last, hold its total. The key going on has no tail yet: its later cells may add."""
        import numpy as np

        final, order = int(self.final), self.order
        complete = ~self.going if self.continues else np.ones(len(self.run_first), dtype=bool)
        for r in np.flatnonzero(complete):
            start = max(int(self.complete_to[r]) + 1, int(self.first_end[r]))
            for lower in range(start, final + 1, self.spec.TAIL):
                span = np.arange(lower, min(lower + self.spec.TAIL, final + 1))
                values = {name: np.repeat(t[r : r + 1], len(span)) for name, t in totals.items()}
                yield self.rows(np.full(len(span), order[self.run_first[r]]), span, values)

    def carry(self, totals):
        """What the chunk's last key carries into the next chunk: the cells its later windows hold (those
        past its last cell here less `size`; CUMULATE: those of its last cell's period), or, landmark, one
        row holding its total so far."""
        import numpy as np
        import pyarrow as pa

        spec, order, top = self.spec, self.order, self.top
        r = int(np.flatnonzero(self.going)[-1])  # the carried key's last run
        first, stop = self.run_first[r], self.run_last[r] + 1
        if spec.last is not None:
            return held_row(self.table, int(order[first]), {spec.cell: top, **{n: t[r] for n, t in totals.items()}})
        held = self.cells[first:stop]
        still = spec.period(held) == spec.period(top) if spec.cumulate else held > top - spec.size
        return self.table.take(pa.array(order[first:stop][still]))


def combine_cells(cells, keys, cell, states, size, step, last=None, cumulate=False, months=None, month_origin=0):
    """Combine cells into windows with WQL's JVM kernel when it is on Spark's classpath, else in numpy.

    Both take the same cells and return the same rows (see sliding_combine). The JVM
    kernel is an operator in Spark's own plan: rows stay in Spark's format (no Arrow
    round trip to Python), and Spark plans the cells' aggregation and the combine
    with one shuffle, by the keys, instead of two.
    """
    operations, columns = jvm_states(states)
    request = {"kernel": "SlidingCombine", "keys": keys, "cell": cell, "operations": operations, "columns": columns}
    request.update(size=size, step=step, last=last, cumulate=bool(cumulate), months=months, month_origin=month_origin)
    windows = jvm_kernel(cells, request)
    if windows is not None:
        return windows

    # numpy walks each partition's cells in (keys, cell) order: Spark sorts them (its sort spills).
    order = [spark_column(name) for name in [*keys, cell]]
    return cells.sortWithinPartitions(*order).mapInArrow(
        sliding_combine(keys, cell, states, size, step, last, cumulate, months, month_origin), cells.schema
    )
