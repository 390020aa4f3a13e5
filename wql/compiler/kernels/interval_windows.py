from wql.compiler.kernels.job_support import (  # a job holds its own copy, beside this function
    jvm_kernel,
    jvm_states,
    key_ids,
)


def event_slices(keys, first, last, states, size, step):
    """Build a mapInArrow function: the SE-slices plan's windows over interval events (seed 001).

    Input rows: one per event, with its key columns, the first and last slice it
    overlaps (columns `first` and `last`) and its share of each state (NULL: none);
    every event of a key must be in the same partition. Window w is the `size`
    slices ending at slice (w + 1) * step - 1.

    Each event is inserted into the slices it overlaps (insert_event, lift*):
    min and max into every one of them (plain slices); cumulative states (sum,
    moments) into the φ part of every slice it goes on past and into the ϕ part
    of the slice it ends in. A window combines the ϕ (or plain) parts of its
    slices and adds the φ of its last slice (combine*, lower*): every event that
    overlaps it is counted once, in the slice it ends in or, if it goes on past
    the window, in the φ of the window's last slice.

    Insertion is a range update, done here on a segment tree (each event touches
    O(log n) nodes, pushed down to the slices once), so a long event costs no more
    than a short one; the window combine is van Herk / Gil-Werman blocks, a
    constant number of combines per slice. Each key's events are cut into runs
    that no window spans, laid out densely. Output rows have the input's schema,
    with `first` holding the window-id; windows whose first state (the row count)
    is zero are left out.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def identity(operation, dtype):
        dtype = np.dtype(dtype)
        if operation == "min":
            return np.iinfo(dtype).max if dtype.kind in "iu" else np.nan
        if operation == "max":
            return np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf
        return 0

    def combine(operation, left, right):
        if operation == "sum":
            return [left[0] + right[0]]
        if operation == "min":
            return [np.fmin(left[0], right[0])]  # Spark orders NaN above all numbers
        if operation == "max":
            return [np.maximum(left[0], right[0])]
        (n1, mean1, m2_1), (n2, mean2, m2_2) = left, right
        n = n1 + n2
        safe = np.where(n > 0, n, 1)
        delta = mean2 - mean1
        share = n2 / safe  # first: merged into an empty state, a mean stays exactly itself
        return [n, mean1 + delta * share, m2_1 + m2_2 + delta * delta * n1 * share]

    def scatter(operation, index, values, length):
        """One state per position: the combine of the values sent to it (the identity where none is)."""
        out = [np.full(length, identity(operation, v.dtype), dtype=v.dtype) for v in values]
        if operation == "sum":
            np.add.at(out[0], index, values[0])
        elif operation == "min":
            np.fmin.at(out[0], index, values[0])
        elif operation == "max":
            np.maximum.at(out[0], index, values[0])
        else:  # moments of a group of parts (Chan): counts, weighted means, spreads about the group's mean
            n, mean, m2 = values
            counts = np.bincount(index, weights=n, minlength=length)
            safe = np.where(counts > 0, counts, 1)
            # About a part's own mean (one per position): equal means stay exact, where Σ n·mean / Σ n rounds.
            present = n > 0
            center = np.zeros(length)
            center[index[present][::-1]] = mean[present][::-1]  # the first part's mean at each position
            shifted = np.where(present, n * (mean - center[index]), 0)
            means = center + np.bincount(index, weights=shifted, minlength=length) / safe
            spread = np.where(n > 0, m2 + n * (mean - means[index]) ** 2, 0)
            out = [counts.astype(n.dtype), means, np.bincount(index, weights=spread, minlength=length)]
        return out

    def covering(low, high, leaves):
        """The segment-tree nodes whose union is [low, high] for each range: (node, range) pairs."""
        left, right = low + leaves, high + leaves + 1
        owner = np.arange(len(low))
        nodes, owners = [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.int64)]
        while len(left):
            active = left < right
            left, right, owner = left[active], right[active], owner[active]
            odd = (left & 1) == 1
            nodes.append(left[odd])
            owners.append(owner[odd])
            left = left + odd
            odd = (right & 1) == 1
            right = right - odd
            nodes.append(right[odd])
            owners.append(owner[odd])
            left, right = left >> 1, right >> 1
        return np.concatenate(nodes), np.concatenate(owners)

    def range_update(operation, values, low, high, length):
        """Each value combined into every position of its range [low, high]: O(log n) nodes each, pushed down."""
        leaves = 1 << max(0, int(length - 1).bit_length())
        nodes, owners = covering(low, high, leaves)
        tree = scatter(operation, nodes, [v[owners] for v in values], 2 * leaves)
        level = 1
        while level < leaves:
            parents = np.arange(level, 2 * level)
            for child in (2 * parents, 2 * parents + 1):
                merged = combine(operation, [t[child] for t in tree], [t[parents] for t in tree])
                for t, m in zip(tree, merged, strict=True):
                    t[child] = m
            level *= 2
        return [t[leaves : leaves + length] for t in tree]

    def scan(operation, blocks):
        """Running combine along each block's cells."""
        ufunc = {"sum": np.add, "min": np.fmin, "max": np.maximum}.get(operation)
        if ufunc is not None:
            return [ufunc.accumulate(blocks[0], axis=1)]
        out = [b.copy() for b in blocks]
        for j in range(1, out[0].shape[1]):
            merged = combine(operation, [o[:, j - 1] for o in out], [b[:, j] for b in blocks])
            for o, m in zip(out, merged, strict=True):
                o[:, j] = m
        return out

    def windows_over(operation, dense, ends):
        """The combine of the `size` slices ending at each of `ends` (dense positions; blocks of `size`)."""
        blocks = [d.reshape(-1, size) for d in dense]
        prefix = [p.ravel() for p in scan(operation, blocks)]
        suffix = [s[:, ::-1].ravel() for s in scan(operation, [b[:, ::-1] for b in blocks])]
        starts = ends - size + 1
        aligned = starts % size == 0
        left = [np.where(aligned, identity(operation, s.dtype), s[starts]) for s in suffix]
        return combine(operation, left, [p[ends] for p in prefix])

    def key_codes(table):
        codes = []
        for name in keys:
            column = pc.dictionary_encode(table.column(name)).combine_chunks()
            codes.append(pc.fill_null(column.indices, -1).to_numpy(zero_copy_only=False))
        return codes

    def run(batches):
        batches = list(batches)
        if not batches or sum(b.num_rows for b in batches) == 0:
            return
        with np.errstate(invalid="ignore", over="ignore"):  # NaN and ∞ among the states are values, not errors
            yield windows(pa.Table.from_batches(batches))

    def windows(table):
        lo_cell = table.column(first).to_numpy()
        hi_cell = np.maximum(table.column(last).to_numpy(), lo_cell)
        codes = key_codes(table)
        order = np.lexsort([lo_cell, *reversed(codes)])
        lo_cell, hi_cell = lo_cell[order], hi_cell[order]
        count = len(order)
        new_key = np.zeros(count, dtype=bool)
        new_key[0] = True
        for code in codes:
            sorted_code = code[order]
            new_key[1:] |= sorted_code[1:] != sorted_code[:-1]

        # Runs: a key's events that windows link (no window spans two runs), each laid out densely.
        key_of = np.cumsum(new_key) - 1
        key_low = lo_cell[new_key]
        key_span = np.maximum.reduceat(hi_cell, np.flatnonzero(new_key)) - key_low + 1
        key_base = np.r_[0, np.cumsum(key_span)[:-1]]
        reach = np.maximum.accumulate(hi_cell - key_low[key_of] + key_base[key_of]) - key_base[key_of] + key_low[key_of]
        starts_run = new_key.copy()
        starts_run[1:] |= lo_cell[1:] > reach[:-1] + size - 1
        run_first = np.flatnonzero(starts_run)
        run_of_event = np.cumsum(starts_run) - 1
        lo = lo_cell[run_first]
        hi = np.maximum.reduceat(hi_cell, run_first)
        first_end = -(-(lo + 1) // step) * step - 1
        last_end = ((hi + size) // step) * step - 1
        base = size * np.floor_divide(np.minimum(lo, first_end - size + 1), size)
        end = size * (np.floor_divide(np.maximum(hi, last_end), size) + 1)
        length = end - base
        offset = np.r_[0, np.cumsum(length)[:-1]]
        total = int(length.sum())
        low = offset[run_of_event] + lo_cell - base[run_of_event]
        high = offset[run_of_event] + hi_cell - base[run_of_event]

        windows = np.maximum((last_end - first_end) // step + 1, 0)
        run_of_window = np.repeat(np.arange(len(run_first)), windows)
        within = np.arange(int(windows.sum())) - np.repeat(np.r_[0, np.cumsum(windows)[:-1]], windows)
        ends = first_end[run_of_window] + step * within
        dense_end = offset[run_of_window] + ends - base[run_of_window]

        columns = {}
        for operation, names in states:
            values = []
            for name in names:
                column = table.column(name)
                v = pc.fill_null(column, identity(operation, column.type.to_pandas_dtype()))
                values.append(v.to_numpy(zero_copy_only=False)[order])
            if operation in ("min", "max"):  # selective: plain slices, every slice the event overlaps
                cells = range_update(operation, values, low, high, total)
                merged = windows_over(operation, cells, dense_end)
            else:  # cumulative: ϕ where the event ends, φ where it goes on past the slice
                phi = scatter(operation, high, values, total)
                on = high > low
                beyond = range_update(operation, [v[on] for v in values], low[on], high[on] - 1, total)
                merged = combine(operation, windows_over(operation, phi, dense_end), [b[dense_end] for b in beyond])
            for name, array in zip(names, merged, strict=True):
                columns[name] = array

        keep = columns[states[0][1][0]] > 0  # the first state counts the window's events
        representative = order[run_first][run_of_window][keep]
        wid = (ends[keep] + 1) // step - 1
        out = []
        for field in table.schema:
            if field.name in (first, last):
                out.append(pa.array(wid, type=field.type))
            elif field.name in columns:
                out.append(pa.array(columns[field.name][keep], type=field.type))
            else:
                out.append(table.column(field.name).take(pa.array(representative)).combine_chunks())
        return pa.RecordBatch.from_arrays(out, schema=table.schema)

    return run


def slice_events(events, keys, first, last, horizon, states, size, step):
    """The SE-slices windows of interval events: WQL's JVM kernel when it is on Spark's classpath, else numpy.

    Both take one row per event (keys, first and last slice, state shares) and
    return the same rows (see event_slices). The JVM kernel is an operator in
    Spark's plan that asks for each key's events in one partition, sorted by
    their first slice, and inserts them into the slices as it goes; column `horizon`
    holds the data's last window, and an event that lasts to its end is carried into
    every later slice at once rather than written into each.
    """
    operations, columns = jvm_states(states)
    request = {"kernel": "EventSlices", "keys": keys, "first": first, "last": last, "horizon": horizon}
    request.update(operations=operations, columns=columns, size=size, step=step)
    windows = jvm_kernel(events, request)
    if windows is not None:
        return windows
    events = events.repartition(*keys) if keys else events.coalesce(1)
    return events.mapInArrow(event_slices(keys, first, last, states, size, step), events.schema)


def event_differences(keys, first, last, horizon, states, placements):
    """Build a mapInArrow function: the difference plan's windows over interval events.

    Input rows: one per event that counts, with its key columns, its first window
    (`first`), its last (`last`; NULL for an open-ended event; before the first for
    an event inside a gap between windows, which is in none), the data's last
    window (`horizon`) and its share of each state; every event of a key must be
    in the same partition. Each state has a placement: "signed" (+share at the
    first window, −share one past the last: a running total holds exactly the
    events overlapping each window), "start" (only at the first window) or "end"
    (only one past the last): the halves of the moments, which only grow.

    Deltas are sorted by key and window-id and combined per distinct id; a running
    combine along each key's ids (sums, and moments by Chan's formula, one id
    after another as the JVM kernel merges them) holds for every window up to the
    next id, or the data's last window. Output rows have the input's schema, with
    `first` and `last` holding the window-id; windows whose first state (a count)
    is zero are left out.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def run(batches):
        batches = list(batches)
        if not batches or sum(b.num_rows for b in batches) == 0:
            return
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            yield windows(pa.Table.from_batches(batches))

    def placed(values, place, at_end, signs):
        """Each delta's share: the event's value where the state is placed, else the identity (0)."""
        if place == "signed":
            return values * signs
        return np.where(at_end if place == "end" else ~at_end, values, np.zeros_like(values))

    def running_moments(n, mean, m2, key_first):
        """Chan's combine of each id's part into the running state, id after id, starting again per key."""
        total, center, spread = n.copy(), mean.copy(), m2.copy()
        for g in range(len(n)):
            if key_first[g]:
                continue
            n1, n2 = total[g - 1], n[g]
            count = n1 + n2 if n1 + n2 > 0 else 1
            delta = mean[g] - center[g - 1]
            total[g] = n1 + n2
            center[g] = center[g - 1] + delta * (n2 / count)
            spread[g] = spread[g - 1] + m2[g] + delta * delta * n1 * n2 / count
        return [total, center, spread]

    def part_moments(n, mean, m2, group, groups):
        """The moments of each id's deltas: counts, means, spreads about each id's mean."""
        counts = np.bincount(group, weights=n, minlength=groups)
        safe = np.where(counts > 0, counts, 1)
        means = np.bincount(group, weights=n * mean, minlength=groups) / safe
        spread = np.where(n > 0, m2 + n * (mean - means[group]) ** 2, 0)
        return [counts.astype(np.int64), means, np.bincount(group, weights=spread, minlength=groups)]

    def windows(table):
        starts, stops = table.column(first), table.column(last)
        table = table.filter(pc.fill_null(pc.less_equal(starts, stops), True))  # first > last: in a gap, in none
        count = table.num_rows
        if count == 0:
            return pa.RecordBatch.from_pylist([], schema=table.schema)
        ending = pc.is_valid(table.column(last)).to_numpy(zero_copy_only=False)
        final = int(pc.max(table.column(horizon)).as_py())
        key = key_ids(table, keys)
        # Two deltas per event that ends (at its first window, one past its last), one per open-ended event.
        event = np.r_[np.arange(count), np.flatnonzero(ending)]
        at_end = np.r_[np.zeros(count, dtype=bool), np.ones(int(ending.sum()), dtype=bool)]
        stop = pc.fill_null(table.column(last), 0).to_numpy(zero_copy_only=False) + 1
        cell = np.r_[table.column(first).to_numpy(zero_copy_only=False), stop[ending]]
        order = np.lexsort([cell, key[event]])
        event, at_end, cell = event[order], at_end[order], cell[order]
        new_key = np.r_[True, key[event][1:] != key[event][:-1]]
        new_id = new_key.copy()
        new_id[1:] |= cell[1:] != cell[:-1]
        group = np.cumsum(new_id) - 1
        heads = np.flatnonzero(new_id)
        groups = len(heads)
        ids = cell[heads]
        key_first = new_key[heads]
        key_starts = np.flatnonzero(key_first)
        key_ends = np.r_[key_starts[1:], groups]
        # The running states of id g hold for windows ids[g] … the next id of its key − 1 (the last id: the
        # data's last window), none past the data's last window.
        key_last = np.r_[key_first[1:], True]
        upto = np.where(key_last, final, np.minimum(np.r_[ids[1:], 0] - 1, final))
        spans = np.maximum(upto - ids + 1, 0)
        signs = np.where(at_end, -1, 1)

        columns = {}
        for (operation, names), place in zip(states, placements, strict=True):
            values = []
            for name in names:
                column = table.column(name)
                values.append(pc.fill_null(column, 0).to_numpy(zero_copy_only=False)[event])
            if operation == "moments":
                n, mean, m2 = (placed(v, place, at_end, signs) for v in values)
                merged = running_moments(*part_moments(n, mean, m2, group, groups), key_first)
            else:
                parts = np.zeros(groups, dtype=values[0].dtype)  # one total per id, exact for integers
                np.add.at(parts, group, placed(values[0], place, at_end, signs))
                merged = [np.empty_like(parts)]
                for begin, end in zip(key_starts, key_ends, strict=True):  # a running total per key
                    merged[0][begin:end] = np.cumsum(parts[begin:end])
            for name, array in zip(names, merged, strict=True):
                columns[name] = array

        spans = np.where(columns[states[0][1][0]] > 0, spans, 0)  # the first state counts the window's events
        of_window = np.repeat(np.arange(groups), spans)
        within = np.arange(int(spans.sum())) - np.repeat(np.r_[0, np.cumsum(spans)[:-1]], spans)
        wid = ids[of_window] + within
        representative = pa.array(event[heads][of_window])
        out = []
        for field in table.schema:
            if field.name in (first, last):
                out.append(pa.array(wid, type=field.type))
            elif field.name == horizon:
                out.append(pa.array(np.full(len(wid), final), type=field.type))
            elif field.name in columns:
                out.append(pa.array(columns[field.name][of_window], type=field.type))
            else:
                out.append(table.column(field.name).take(representative).combine_chunks())
        return pa.RecordBatch.from_arrays(out, schema=table.schema)

    return run


def difference_windows(events, keys, first, last, horizon, states, placements):
    """The difference plan's windows of interval events: WQL's JVM kernel when it is on Spark's classpath,
    else numpy.

    Both take one row per event (keys, first and last window, the data's last window,
    state shares) and return the same rows (see event_differences). The JVM kernel is
    two operators in Spark's plan: before the shuffle, each partition's signed deltas
    are added into per-key arrays over the window-ids, shipped as a few rows of arrays
    per key; after it, each key's arrays are merged and combined along the ids. So no
    hash aggregate groups two delta rows per event, and the shuffle moves arrays, not
    events.
    """
    operations, columns = jvm_states(states)
    places = [place for (_, names), place in zip(states, placements, strict=True) for _ in names]
    request = {"kernel": "EventDeltas", "keys": keys, "first": first, "last": last, "horizon": horizon}
    request.update(operations=operations, columns=columns, placements=places)
    windows = jvm_kernel(events, request)
    if windows is not None:
        return windows
    events = events.repartition(*keys) if keys else events.coalesce(1)
    return events.mapInArrow(event_differences(keys, first, last, horizon, states, placements), events.schema)
