from wql.compiler.kernels.job_support import (  # a job holds its own copy, beside this function
    batch_chunks,
    held_row,
    jvm_kernel,
    jvm_states,
    spark_column,
)
from wql.compiler.kernels.state_algebra import state_combine, state_identity  # a job holds its own copy


def sliding_combine(keys, cell, states, size, step, last=None, cumulate=False):
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
    first cell in a period to the period's end.

    states: (operation, columns) pairs; operation is "sum", "min", "max" or
    "moments" (count, mean, M2, combined with Chan's parallel formula). Output rows
    have the input's schema, with the cell column holding the window-id.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    TAIL = 65_536  # a landmark tail's windows per record batch

    def scan(operation, blocks):
        """Running combine along each block's cells: prefix (and, on reversed blocks, suffix)."""
        ufunc = {"sum": np.add, "min": np.fmin, "max": np.maximum}.get(operation)
        if ufunc is not None:
            return [ufunc.accumulate(blocks[0], axis=1)]
        out = [b.copy() for b in blocks]
        for j in range(1, out[0].shape[1]):
            merged = state_combine(operation, [o[:, j - 1] for o in out], [b[:, j] for b in blocks])
            for o, m in zip(out, merged, strict=True):
                o[:, j] = m
        return out

    def running(operation, values):
        """Running combine along one long sequence, in blocks of about sqrt(n) to keep loops short."""
        n = len(values[0])
        width = max(1, int(np.sqrt(n)))
        rows = -(-n // width)
        padded = []
        for v in values:
            p = np.full(rows * width, state_identity(operation, v.dtype), dtype=v.dtype)
            p[:n] = v
            padded.append(p.reshape(rows, width))
        inside = scan(operation, padded)  # within each block
        totals = scan(operation, [i[:, -1][None, :] for i in inside])  # across blocks
        carry = [np.r_[state_identity(operation, t.dtype), t[0, :-1]] for t in totals]
        merged = state_combine(operation, [c[:, None] for c in carry], inside)
        return [m.ravel()[:n] for m in merged]

    def key_codes(table):
        codes = []
        for name in keys:
            column = pc.dictionary_encode(table.column(name)).combine_chunks()
            codes.append(pc.fill_null(column.indices, -1).to_numpy(zero_copy_only=False))
        return codes

    def run(batches):
        """Walk the partition's cells, sorted by keys then cell, a chunk at a time (batch_chunks): a pass
        holds the cells of the windows in flight, not the partition."""
        walk = {"carry": None, "done": None, "final": None}  # what goes on from one chunk to the next
        for chunk, last_chunk in batch_chunks(batches, lambda: getattr(walk["carry"], "num_rows", 0)):
            parts = [t for t in (walk["carry"], chunk) if t is not None]
            if not parts:
                return
            table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
            if last is not None and walk["final"] is None:
                walk["final"] = table.column(last)[0].as_py()
            out, walk["carry"], walk["done"] = windows_of(table, walk["final"], walk["done"], not last_chunk)
            yield from out

    def windows_of(table, final, done, continues):
        """The windows of one chunk of cells, sorted by keys then cell, and what the next chunk carries.

        done: the last window end already emitted for the key of the chunk's first row (the key carried
        in), or None. With `continues`, the key of the chunk's last row may go on in the next chunk: its
        windows end at its last cell here at most (its later cells are larger), and it carries the cells
        its later windows hold (a landmark key: one cell holding everything so far combined). Returns
        (record batches, carry or None, the last window end emitted for the carried key)."""
        n = table.num_rows
        cells = table.column(cell).to_numpy()
        codes = key_codes(table)
        order = np.lexsort([cells, *reversed(codes)])
        cells = cells[order]
        new_key = np.zeros(n, dtype=bool)
        new_key[0] = True
        for code in codes:
            sorted_code = code[order]
            new_key[1:] |= sorted_code[1:] != sorted_code[:-1]
        group = np.cumsum(new_key) - 1
        group_of_row = np.empty(n, dtype=group.dtype)
        group_of_row[order] = group
        if cumulate:
            period = np.floor_divide(cells, size)
            starts_run = new_key.copy()
            starts_run[1:] |= period[1:] != period[:-1]  # a run is one key's cells of one period
        elif last is None:
            starts_run = new_key.copy()
            starts_run[1:] |= (cells[1:] - cells[:-1]) >= size  # too far apart to share a window
        else:
            starts_run = new_key
        run_first = np.flatnonzero(starts_run)
        run_last = np.r_[run_first[1:], n] - 1
        lo, hi = cells[run_first], cells[run_last]
        run_group = group[run_first]

        # Window ends, per run: every cell e with (e + 1) % step == 0 that a window can end at. A landmark
        # run's windows are computed cell by cell up to its last cell (or window 0); the windows after it,
        # up to the stream's last, all hold the run's total (its tail).
        if cumulate:
            first_end = lo.copy()
            last_end = size * (np.floor_divide(lo, size) + 1) - 1
        elif last is None:
            first_end = -(-(lo + 1) // step) * step - 1
            last_end = ((hi + size) // step) * step - 1
        else:
            first_end = np.maximum(lo, 0)
            last_end = np.minimum(np.maximum(hi, 0), int(final))
        complete_to = last_end.copy()
        if continues:
            going = run_group == group_of_row[n - 1]
            top = int(cells[run_last[going][-1]])
            last_end[going] = np.minimum(last_end[going], ((top + 1) // step) * step - 1)
        if done is not None:
            carried = run_group == group_of_row[0]
            first_end[carried] = np.maximum(first_end[carried], done + step)
        count = np.maximum((last_end - first_end) // step + 1, 0)

        # Dense, block-aligned layout per run: one block before the first window's start (CUMULATE: the
        # run's period is its one block; landmark: from the run's first cell to its last or window 0).
        if cumulate:
            base = size * np.floor_divide(lo, size)
            end = base + size
        elif last is None:
            base = size * np.floor_divide(lo - size + 1, size)
            end = size * (np.floor_divide(hi + size - 1, size) + 1)
        else:
            base = lo  # cells before 0 still count towards window 0
            end = np.maximum(hi, 0) + 1
        length = end - base
        offset = np.r_[0, np.cumsum(length)[:-1]]
        run_of_row = np.repeat(np.arange(len(run_first)), run_last - run_first + 1)
        position = offset[run_of_row] + (cells - base[run_of_row])
        total = int(length.sum())
        run_of_window = np.repeat(np.arange(len(run_first)), count)
        within = np.arange(int(count.sum())) - np.repeat(np.r_[0, np.cumsum(count)[:-1]], count)
        ends = first_end[run_of_window] + step * within
        dense_end = offset[run_of_window] + (ends - base[run_of_window])

        columns, totals = {}, {}
        for operation, names in states:
            dense = []
            for name in names:
                column = table.column(name)
                v = pc.fill_null(column, state_identity(operation, column.type.to_pandas_dtype()))
                v = v.to_numpy(zero_copy_only=False)[order]
                d = np.full(total, state_identity(operation, v.dtype), dtype=v.dtype)
                d[position] = v
                dense.append(d)
            if last is not None:
                # Landmark: window w holds every cell up to w, a running combine along each run.
                result = [np.empty_like(d) for d in dense]
                for r in range(len(run_first)):
                    part = slice(offset[r], offset[r] + length[r])
                    for out, values in zip(result, running(operation, [d[part] for d in dense]), strict=True):
                        out[part] = values
                merged = [r[dense_end] for r in result]
                through = offset + (hi - base)  # each run's total: every one of its cells combined
                totals.update((name, r[through]) for name, r in zip(names, result, strict=True))
            elif cumulate:
                # CUMULATE: window w is the running combine of its period's block up to w.
                prefix = [p.ravel() for p in scan(operation, [d.reshape(-1, size) for d in dense])]
                merged = [p[dense_end] for p in prefix]
            else:
                blocks = [d.reshape(-1, size) for d in dense]
                prefix = [p.ravel() for p in scan(operation, blocks)]
                suffix = [s[:, ::-1].ravel() for s in scan(operation, [b[:, ::-1] for b in blocks])]
                dense_start = dense_end - size + 1
                aligned = (ends - size + 1) % size == 0
                left = [np.where(aligned, state_identity(operation, s.dtype), s[dense_start]) for s in suffix]
                merged = state_combine(operation, left, [p[dense_end] for p in prefix])
            for name, array in zip(names, merged, strict=True):
                columns[name] = array

        def rows(representative, window_ends, values):
            keep = values[states[0][1][0]] > 0  # the first state counts the window's rows
            out = []
            for field in table.schema:
                if field.name == cell:
                    out.append(pa.array((window_ends[keep] + 1) // step - 1, type=field.type))
                elif field.name in values:
                    out.append(pa.array(values[field.name][keep], type=field.type))
                else:
                    out.append(table.column(field.name).take(pa.array(representative[keep])).combine_chunks())
            return pa.RecordBatch.from_arrays(out, schema=table.schema)

        batches = [rows(order[run_first][run_of_window], ends, columns)] if len(ends) else []
        if last is not None:
            # Each complete run's tail, a slice at a time: the windows after its last cell hold its total.
            for r in np.flatnonzero(~going if continues else np.ones(len(run_first), dtype=bool)):
                start = max(int(complete_to[r]) + 1, int(first_end[r]))
                for lower in range(start, int(final) + 1, TAIL):
                    span = np.arange(lower, min(lower + TAIL, int(final) + 1))
                    values = {name: np.repeat(t[r : r + 1], len(span)) for name, t in totals.items()}
                    batches.append(rows(np.full(len(span), order[run_first[r]]), span, values))
        if not continues:
            return batches, None, None
        r = int(np.flatnonzero(going)[-1])  # the carried key's last run
        if last is not None:
            carry = held_row(table, int(order[run_first[r]]), {cell: top, **{n: t[r] for n, t in totals.items()}})
        else:
            held = cells[run_first[r] : run_last[r] + 1]
            still = held // size == top // size if cumulate else held > top - size
            carry = table.take(pa.array(order[run_first[r] : run_last[r] + 1][still]))
        return batches, carry, ((top + 1) // step) * step - 1

    return run


def combine_cells(cells, keys, cell, states, size, step, last=None, cumulate=False):
    """Combine cells into windows with WQL's JVM kernel when it is on Spark's classpath, else in numpy.

    Both take the same cells and return the same rows (see sliding_combine). The JVM
    kernel is an operator in Spark's own plan: rows stay in Spark's format (no Arrow
    round trip to Python), and Spark plans the cells' aggregation and the combine
    with one shuffle, by the keys, instead of two.
    """
    operations, columns = jvm_states(states)
    request = {"kernel": "SlidingCombine", "keys": keys, "cell": cell, "operations": operations, "columns": columns}
    request.update(size=size, step=step, last=last, cumulate=bool(cumulate))
    windows = jvm_kernel(cells, request)
    if windows is not None:
        return windows

    # numpy walks each partition's cells in (keys, cell) order: Spark sorts them (its sort spills).
    order = [spark_column(name) for name in [*keys, cell]]
    return cells.sortWithinPartitions(*order).mapInArrow(
        sliding_combine(keys, cell, states, size, step, last, cumulate), cells.schema
    )
