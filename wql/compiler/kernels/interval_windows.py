from wql.compiler.kernels.frame_windows import window_keys  # a job holds its own copy, beside this function
from wql.compiler.kernels.job_support import (
    batch_chunks,
    by_keys,
    held_row,
    jvm_kernel,
    jvm_states,
    key_ids,
    spark_column,
)
from wql.compiler.kernels.state_algebra import state_combine, state_identity  # a job holds its own copy


def events_in_order(events, keys, first):
    """Every event of a key in one Spark partition (by_keys), sorted there by the keys and then by `first`
    (the event's first slice or window): the order event_slices and event_differences walk, one key after
    another, each key's events by their start. Spark's sort spills through its external sorter, so no task
    holds a hot key's events in memory at once."""
    from pyspark.sql import functions as F

    order = [spark_column(name) for name in keys]
    return by_keys(events, keys).sortWithinPartitions(*order, F.col(first))


def key_changes(table, keys):
    """Whether each row of a table sorted by `keys` begins a key (the first row does): the keys compared as
    Spark groups and sorts them (window_keys: −0.0 is 0.0), NULL a value of its own."""
    import numpy as np

    ids = key_ids(window_keys(table, keys), keys)
    changes = np.ones(table.num_rows, dtype=bool)
    changes[1:] = ids[1:] != ids[:-1]
    return changes


def event_slices(keys, first, last, horizon, states, size, step, going_on=None):
    """Build a mapInArrow function: the SE-slices plan's windows over interval events (seed 001).

    Input rows: one per event, with its key columns, the first and last slice it
    overlaps (columns `first` and `last`), the data's last window (`horizon`) and
    its share of each state (NULL: none), each key's events in one partition, in
    events_in_order's order. Window w is the `size` slices ending at slice
    (w + 1) * step - 1.

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
    that no window spans, laid out densely. An event that lasts to the data's last
    slice (an open-ended one) is in every window from its first on: it is written
    over its own run's slices only; each later run of its key takes it over all of
    its slices at once, and the windows between runs and after the key's last one,
    which hold the key's lasting events and nothing else, repeat their combine. So
    it stretches no run, nor the carry, to the data's end.

    The partition is walked in chunks of Arrow batches (batch_chunks): once an
    event starts at slice f, no later event reaches a window ending before f, so
    those windows go out; the last key's slices from f − size + 1 on (those the
    windows still open read), its first window still to go out and the combine of
    its lasting events go on into the next chunk, the slices as a row that stands
    for them (held_row). The carry is the windows in flight, never the events.
    An event whose column `going_on` is true (a piece of a long event, cut_events) goes
    on past its last slice: φ in every slice it overlaps, ϕ in none.

    Output rows have the input's schema (without `going_on`), with `first` holding the
    window-id; windows whose first state (the row count) is zero are left out.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    piece = 1 << 16  # windows per output batch where one state repeats (after a key's last run)

    def scatter(operation, index, values, length):
        """One state per position: the combine of the values sent to it (the identity where none is)."""
        out = [np.full(length, state_identity(operation, v.dtype), dtype=v.dtype) for v in values]
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
            spread = np.bincount(index, weights=spread, minlength=length).astype(means.dtype)  # float if empty too
            out = [counts.astype(n.dtype), means, spread]
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
                merged = state_combine(operation, [t[child] for t in tree], [t[parents] for t in tree])
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
            merged = state_combine(operation, [o[:, j - 1] for o in out], [b[:, j] for b in blocks])
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
        left = [np.where(aligned, state_identity(operation, s.dtype), s[starts]) for s in suffix]
        return state_combine(operation, left, [p[ends] for p in prefix])

    def merge_into(operation, part, states, at, stop):
        """Combine `states` (arrays over positions at..stop−1, or one state for each) into those positions
        of `part`, the states carried in first."""
        span = slice(at, stop)
        merged = state_combine(operation, states, [p[span] for p in part])
        for p, m in zip(part, merged, strict=True):
            p[span] = m

    def run(batches):
        carry = {}  # what the last key of a chunk leaves in flight, for the next chunk
        for table, last_chunk in batch_chunks(batches, lambda: carry.get("length", 0)):
            pieces = windows(table, carry, last_chunk)
            while True:
                with np.errstate(invalid="ignore", over="ignore"):  # NaN and ∞ among the states are values
                    out = next(pieces, None)
                if out is None:
                    break
                if out.num_rows:
                    yield out

    def output(table, representative, wid, columns):
        """Output rows: the window-ids, the states, and the other columns (keys, horizon) of each
        window's representative event."""
        out, fields = [], [field for field in table.schema if field.name != going_on]
        for field in fields:
            if field.name in (first, last):
                out.append(pa.array(wid, type=field.type))
            elif field.name in columns:
                out.append(pa.array(columns[field.name], type=field.type))
            else:
                out.append(table.column(field.name).take(pa.array(representative)).combine_chunks())
        return pa.RecordBatch.from_arrays(out, schema=pa.schema(fields))

    def repeated(table, run_first, runs, after, windows, states):
        """Batches of windows that each hold one state (the lasting events of a key so far): `windows[i]` of
        them after window end `after[i]`, each with run runs[i]'s states (`states`: column -> per-run values),
        at most `piece` to a batch."""
        first_window = np.r_[0, np.cumsum(windows)]
        for at in range(0, int(first_window[-1]), piece):
            window = np.arange(at, min(at + piece, int(first_window[-1])))
            of = np.searchsorted(first_window, window, side="right") - 1
            ends = after[of] + step * (window - first_window[of] + 1)
            columns = {name: values[runs[of]] for name, values in states.items()}
            yield output(table, run_first[runs[of]], (ends + 1) // step - 1, columns)

    def windows(table, carry, last_chunk):
        """The windows a chunk completes, as batches, going on from `carry`, which it replaces with what the
        chunk's last key leaves in flight (after the partition's last chunk, nothing)."""
        held = dict(carry)
        carry.clear()
        if "row" in held:  # the carried key first: a row over its slices in flight, with no share of its own
            table = held["row"] if table is None else pa.concat_tables([held["row"], table])
        if table is None:
            return
        count = table.num_rows
        lo_cell = table.column(first).to_numpy(zero_copy_only=False)
        hi_cell = np.maximum(table.column(last).to_numpy(zero_copy_only=False), lo_cell)
        top = (int(pc.max(table.column(horizon)).as_py()) + 1) * step - 1  # the data's last slice
        lasting = hi_cell >= top  # in every window from its first on, up to the data's last
        if "row" in held:
            lasting[0] = False
        on_past = lasting.copy()  # an event that goes on past every slice it is written into: φ, never ϕ
        if going_on is not None:
            on_past |= table.column(going_on).to_numpy(zero_copy_only=False).astype(bool)
        reach_cell = np.where(lasting, lo_cell, hi_cell)  # a lasting event stretches no run to the data's end
        new_key = key_changes(table, keys)
        key_of = np.cumsum(new_key) - 1
        heads = np.flatnonzero(new_key)

        # Runs: a key's events that windows link (no window spans two runs), each laid out densely.
        key_low = lo_cell[new_key]
        key_span = np.maximum.reduceat(reach_cell, heads) - key_low + 1
        shift = np.r_[0, np.cumsum(key_span)[:-1]][key_of] - key_low[key_of]
        reach = np.maximum.accumulate(reach_cell + shift) - shift
        starts_run = new_key.copy()
        starts_run[1:] |= lo_cell[1:] > reach[:-1] + size - 1
        run_first = np.flatnonzero(starts_run)
        run_of_event = np.cumsum(starts_run) - 1
        runs = len(run_first)
        key_last_run = np.r_[run_of_event[heads[1:] - 1], runs - 1]
        last_of_key = key_last_run[key_of[run_first]]  # each run's key's last run
        lo = lo_cell[run_first]
        hi = np.maximum.reduceat(reach_cell, run_first)
        first_end = -(-(lo + 1) // step) * step - 1
        if "row" in held:
            first_end[0] = held["next_end"]  # the carried key's earlier windows went out with the chunk before
        last_end = ((hi + size) // step) * step - 1
        base = size * np.floor_divide(np.minimum(lo, first_end - size + 1), size)
        end = size * (np.floor_divide(np.maximum(hi, last_end), size) + 1)
        length = end - base
        offset = np.r_[0, np.cumsum(length)[:-1]]
        total = int(length.sum())
        run_end = offset + length - 1  # each run's last dense position
        low = offset[run_of_event] + lo_cell - base[run_of_event]
        high = np.where(lasting, run_end[run_of_event], offset[run_of_event] + hi_cell - base[run_of_event])

        # The windows that go out: every window of each run, but of the last key's last run only those that
        # end before the chunk's last event starts (a later event starts there or after: it reaches none).
        emit_end = last_end.copy()
        if not last_chunk:
            frontier = lo_cell[-1]
            next_end = -(-(frontier + 1) // step) * step - 1
            emit_end[-1] = min(emit_end[-1], next_end - step)
        per_run = np.maximum((emit_end - first_end) // step + 1, 0)
        run_of_window = np.repeat(np.arange(runs), per_run)
        within = np.arange(int(per_run.sum())) - np.repeat(np.r_[0, np.cumsum(per_run)[:-1]], per_run)
        ends = first_end[run_of_window] + step * within
        dense_end = offset[run_of_window] + ends - base[run_of_window]

        # Lasting events: each run holds those of its key's earlier runs over all its slices (a carried one,
        # over the slices past the carried ones), and the windows after a run, up to the key's next run or
        # the data's end, hold exactly those up to it.
        carried = held.get("lasting")
        since = run_of_event[lasting]
        key_runs = int(key_last_run[0]) + 1  # the carried key's runs, the first ones
        columns, dense, through = {}, [], {}
        for index, (operation, names) in enumerate(states):
            values = []
            for name in names:
                column = table.column(name)
                v = pc.fill_null(column, state_identity(operation, column.type.to_pandas_dtype()))
                values.append(v.to_numpy(zero_copy_only=False))
            if operation in ("min", "max"):  # selective: plain slices, every slice the event overlaps
                parts = [range_update(operation, values, low, high, total)]
            else:  # cumulative: ϕ where the event ends, φ where it goes on past the slice (a lasting one: each)
                ending = ~on_past
                phi = scatter(operation, high[ending], [v[ending] for v in values], total)
                on = on_past | (high > low)
                stop = np.where(on_past, high, high - 1)
                parts = [phi, range_update(operation, [v[on] for v in values], low[on], stop[on], total)]
            shares = [v[lasting] for v in values]
            upto = range_update(operation, shares, since, last_of_key[since], runs)
            if len(since) and runs > 1:
                before = range_update(operation, shares, since + 1, last_of_key[since], runs)
                merge_into(operation, parts[-1], [b[np.repeat(np.arange(runs), length)] for b in before], 0, total)
            if "row" in held:
                for part, kept in zip(parts, held["cells"][index], strict=True):
                    merge_into(operation, part, kept, int(low[0]), int(low[0]) + len(kept[0]))
                if carried is not None:
                    merge_into(operation, parts[-1], carried[index], int(high[0]) + 1, int(run_end[key_runs - 1]) + 1)
                    merge_into(operation, upto, carried[index], 0, key_runs)
            dense.append(parts)
            through.update(zip(names, upto, strict=True))
            merged = windows_over(operation, parts[0], dense_end)
            if operation not in ("min", "max"):
                merged = state_combine(operation, merged, [b[dense_end] for b in parts[1]])
            for name, array in zip(names, merged, strict=True):
                columns[name] = array

        counted = states[0][1][0]  # the first state counts the window's events
        keep = columns[counted] > 0
        wid = (ends[keep] + 1) // step - 1
        yield output(table, run_first[run_of_window][keep], wid, {n: c[keep] for n, c in columns.items()})

        # After each run, up to its key's next run (or the data's end once the key is done), the windows that
        # hold its key's lasting events so far, and nothing else.
        follow = np.minimum(np.r_[first_end[1:], 0] - step, top)
        follow = np.where(last_of_key == np.arange(runs), top, follow)
        if not last_chunk:
            follow[-1] = last_end[-1]  # the last key may have more: its windows after the run wait
        gaps = np.where(through[counted] > 0, np.maximum((follow - last_end) // step, 0), 0)
        yield from repeated(table, run_first, np.flatnonzero(gaps), last_end[gaps > 0], gaps[gaps > 0], through)

        if not last_chunk:  # the last key's slices from the last event's first slice − size + 1 on
            r = runs - 1
            low_at = max(int(frontier) - size + 1, int(lo[r]))
            at, stop = int(offset[r] + low_at - base[r]), int(offset[r] + hi[r] - base[r]) + 1
            cells = [[[p[at:stop].copy() for p in part] for part in parts] for parts in dense]
            lasted = through[counted][r] > 0  # the key's lasting events so far that count (none: no share)
            kept = [[through[name][r] for name in names] for _, names in states] if lasted else None
            shares = {name: None for _, names in states for name in names}
            row = held_row(table, count - 1, {first: low_at, last: int(hi[r]), **shares})
            carry.update(row=row, next_end=next_end, cells=cells, lasting=kept, length=stop - at)

    return run


def slice_events(events, keys, first, last, horizon, states, size, step):
    """The SE-slices windows of interval events: WQL's JVM kernel when it is on Spark's classpath, else numpy.

    Both take one row per event (keys, first and last slice, the data's last window,
    state shares) and return the same rows (see event_slices), and both walk each
    key's events sorted by their first slice, inserting them into the slices as they
    go: the JVM kernel is an operator in Spark's plan that asks for that order; numpy
    reads Spark's sort of each partition (events_in_order) batch by batch. An event
    that lasts to the data's last window (column `horizon`) is carried into every
    later slice at once rather than written into each; the JVM kernel also keeps an
    event longer than spark.wql.slices.longEvent slices (and a window) apart, as one
    state counted whole in each window it overlaps, and numpy takes such an event in
    pieces of that many slices (cut_events).
    """
    operations, columns = jvm_states(states)
    request = {"kernel": "EventSlices", "keys": keys, "first": first, "last": last, "horizon": horizon}
    request.update(operations=operations, columns=columns, size=size, step=step)
    windows = jvm_kernel(events, request)
    if windows is not None:
        return windows
    schema = events.schema
    longest = max(size, int(events.sparkSession.conf.get("spark.wql.slices.longEvent", "1024")))
    events = events_in_order(cut_events(events, first, last, horizon, step, longest, "__wql_on"), keys, first)
    return events.mapInArrow(event_slices(keys, first, last, horizon, states, size, step, "__wql_on"), schema)


def cut_events(events, first, last, horizon, step, longest, going_on):
    """The events for numpy's SE-slices pass, each finite one over more than `longest` slices cut into
    pieces of `longest` slices, all but the last marked (column `going_on`) as going on past their last
    slice; the others are left whole, unmarked.

    A piece that goes on is written as φ into each of its slices and as ϕ into none, so the pieces of an
    event are written exactly as the whole event would be (event_slices): it still counts once in each
    window. But no piece stretches the key's slices laid out at once, nor what a chunk carries into the
    next, past `longest` slices and a window, where a whole event of a hundred million slices would be
    laid out over all of them. The pieces are Spark rows, sorted with the events (Spark's sort spills):
    one per `longest` slices, against at least one window per two slices in the output. Open-ended
    events (to the data's last slice) are left whole: event_slices keeps them apart.
    """
    from pyspark.sql import functions as F

    low = spark_column(first)
    high = F.greatest(low, spark_column(last))
    long = (high - low >= longest) & (high < (spark_column(horizon) + 1) * step - 1)
    starts = F.when(long, F.sequence(low, high, F.lit(longest).cast("bigint"))).otherwise(F.array(low))
    pieces = events.select("*", F.explode(starts).alias("__wql_piece"))
    start = F.col("__wql_piece")
    end = F.least(start + F.lit(longest - 1), high)
    columns = []
    for name in events.columns:
        if name == first:
            columns.append(start.alias(name))
        elif name == last:
            columns.append(F.when(long, end).otherwise(spark_column(name)).alias(name))
        else:
            columns.append(spark_column(name))
    return pieces.select(*columns, (long & (end < high)).alias(going_on))


def event_differences(keys, first, last, horizon, states, placements):
    """Build a mapInArrow function: the difference and sweep plans' windows over interval events.

    Input rows: one per event that counts, with its key columns, its first window
    (`first`), its last (`last`; NULL for an open-ended event; before the first for
    an event inside a gap between windows, which is in none), the data's last
    window (`horizon`) and its share of each state, each key's events in one
    partition, in events_in_order's order. Each state has a placement: "signed"
    (+share at the first window, −share one past the last: a running total holds
    exactly the events overlapping each window), "start" (only at the first window)
    or "end" (only one past the last): the halves of the moments, which only grow;
    or, for min and max (the sweep plan), "extreme": the extreme of the shares of
    the events overlapping each window.

    Deltas are sorted by key and window-id and combined per distinct id; a running
    combine along each key's ids (sums, and moments by Chan's formula, one id
    after another as the JVM kernel merges them) holds for every window up to the
    next id, or the data's last window. The events overlapping the windows from
    one id to the next are the same, so an extreme is one per id too: each event's
    share is combined into the ids from its first window to its last (or the key's
    last id, for an open-ended event) by a range update on a segment tree over the
    ids (range_extreme), O(log ids) per event whatever its length.

    The partition is walked in chunks of Arrow batches (batch_chunks). A window's
    deltas all come from events that start at or before it, so once an event starts
    at window f the windows before f are final and go out; the last key's running
    states up to f and its deltas at f and after (each id's combined, one per id)
    go on into the next chunk, where they count as deltas again, and so do, for each
    extreme, the shares of its events overlapping f that no better event overlapping
    f outlasts (best_first), with their last windows. The carry is the window-ids in
    flight and those events, never the events seen. Output rows have the input's
    schema, with `first` and `last` holding the window-id; windows whose first state
    (a count) is zero are left out.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    piece = 1 << 16  # windows per output batch (a key's last running states last to the data's end)
    lasting_end = np.iinfo(np.int64).max  # the last window of an open-ended event, in the extremes' carry

    def run(batches):
        carry = {}  # what the last key of a chunk leaves in flight, for the next chunk
        for table, last_chunk in batch_chunks(batches, lambda: carry.get("length", 0)):
            pieces = windows(table, carry, last_chunk)
            while True:
                with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                    out = next(pieces, None)
                if out is None:
                    break
                if out.num_rows:
                    yield out

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
            running = [total[g - 1], center[g - 1], spread[g - 1]]
            total[g], center[g], spread[g] = state_combine("moments", running, [n[g], mean[g], m2[g]])
        return [total, center, spread]

    def part_moments(n, mean, m2, group, groups):
        """The moments of each id's deltas: counts, means, spreads about each id's mean."""
        counts = np.bincount(group, weights=n, minlength=groups)
        safe = np.where(counts > 0, counts, 1)
        means = np.bincount(group, weights=n * mean, minlength=groups) / safe
        spread = np.where(n > 0, m2 + n * (mean - means[group]) ** 2, 0)
        return [counts.astype(np.int64), means, np.bincount(group, weights=spread, minlength=groups)]

    def range_extreme(operation, values, low, high, length):
        """The extreme (min or max) at each of `length` positions of the values whose ranges [low, high) hold
        it: each value combined into the O(log length) segment-tree nodes that cover its range, then the
        nodes pushed down to the positions. Spark orders NaN above every number: max keeps it, min skips it."""
        ufunc = np.fmin if operation == "min" else np.maximum
        leaves = 1 << max(0, int(length - 1).bit_length())
        tree = np.full(2 * leaves, state_identity(operation, values.dtype), dtype=values.dtype)
        left, right, which = low + leaves, high + leaves, np.arange(len(low))
        while len(left):
            inside = left < right
            left, right, which = left[inside], right[inside], which[inside]
            odd = (left & 1) == 1
            ufunc.at(tree, left[odd], values[which[odd]])
            left = left + odd
            odd = (right & 1) == 1
            right = right - odd
            ufunc.at(tree, right[odd], values[which[odd]])
            left, right = left >> 1, right >> 1
        level = 1
        while level < leaves:
            parents = np.arange(level, 2 * level)
            for child in (2 * parents, 2 * parents + 1):
                tree[child] = ufunc(tree[child], tree[parents])
            level *= 2
        return tree[leaves : leaves + length]

    def best_first(operation, values, ends):
        """The indices of the events that can still be a window's extreme, best first: those that outlast every
        better (or equal) one. Spark orders NaN above every number."""
        if values.dtype.kind == "f":
            nan = np.isnan(values)
            plain = np.where(nan, 0, values)
            order = np.lexsort((-plain, ~nan)) if operation == "max" else np.lexsort((plain, nan))
        else:
            order = np.argsort(values, kind="stable")
            order = order[::-1] if operation == "max" else order
        if not len(order):
            return order
        ordered = ends[order]
        return order[ordered > np.maximum.accumulate(np.r_[np.iinfo(np.int64).min, ordered[:-1]])]

    def windows(table, carry, last_chunk):
        """The windows a chunk completes, as batches, going on from `carry`, which it replaces with what the
        chunk's last key leaves in flight (after the partition's last chunk, nothing)."""
        held = dict(carry)
        carry.clear()
        if "row" in held:  # the carried key first: a row that stands for it, with no delta of its own
            table = held["row"] if table is None else pa.concat_tables([held["row"], table])
        if table is None:
            return
        count = table.num_rows
        begin = table.column(first).to_numpy(zero_copy_only=False)
        stops = table.column(last)
        live = pc.fill_null(pc.less_equal(table.column(first), stops), True)  # first > last: in a gap, in none
        live = np.array(live.to_numpy(zero_copy_only=False), dtype=bool)
        carried = 0
        if "row" in held:
            live[0] = False
            carried = len(held["ids"])
        ending = live & pc.is_valid(stops).to_numpy(zero_copy_only=False)
        final = int(pc.max(table.column(horizon)).as_py())
        segment = np.cumsum(key_changes(table, keys)) - 1
        # Deltas: the carried ones (at their ids), one per event at its first window, one per event that ends
        # one past its last (none for an open-ended one).
        event = np.r_[np.zeros(carried, dtype=np.int64), np.flatnonzero(live), np.flatnonzero(ending)]
        at_end = np.r_[np.zeros(carried + int(live.sum()), dtype=bool), np.ones(int(ending.sum()), dtype=bool)]
        stop = pc.fill_null(stops, 0).to_numpy(zero_copy_only=False) + 1
        cell = np.r_[held.get("ids", []), begin[live], stop[ending]].astype(np.int64)
        if len(cell) == 0:
            return
        signs = np.where(at_end, -1, 1)
        shares = []
        for index, ((_, names), place) in enumerate(zip(states, placements, strict=True)):
            group_shares = []
            for j, name in enumerate(names):
                if place == "extreme":  # not a delta: range_extreme below
                    group_shares.append(None)
                    continue
                values = pc.fill_null(table.column(name), 0).to_numpy(zero_copy_only=False)
                own = placed(values[event[carried:]], place, at_end[carried:], signs[carried:])
                if carried:
                    own = np.r_[held["parts"][index][j].astype(own.dtype), own]
                group_shares.append(own)
            shares.append(group_shares)
        order = np.lexsort([cell, segment[event]])
        event, cell = event[order], cell[order]
        in_key = segment[event]
        new_key = np.r_[True, in_key[1:] != in_key[:-1]]
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
        # data's last window), none past the data's last window; the last key's only up to the chunk's last
        # event's first window − 1 (a later event starts there or after: it changes none before).
        key_last = np.r_[key_first[1:], True]
        upto = np.where(key_last, final, np.minimum(np.r_[ids[1:], 0] - 1, final))
        if not last_chunk:
            frontier = int(begin[-1])
            open_key = in_key[heads] == segment[-1]
            upto = np.where(open_key, np.minimum(upto, frontier - 1), upto)
        spans = np.maximum(upto - ids + 1, 0)

        # Each live event's ids: from its first window's to its last's (the one before the id one past its last;
        # an open-ended event's: its key's last id). A carried event's: from the carried key's first id.
        group_of = np.empty(len(order), dtype=np.int64)
        group_of[order] = group
        entered = int(live.sum())
        low = group_of[carried : carried + entered]
        key_of_group = np.cumsum(key_first) - 1
        high = key_ends[key_of_group[low]]
        high[ending[live]] = group_of[carried + entered :]
        kept_extremes = held.get("extremes")
        columns, parts, running, extremes = {}, [], [], []
        for (operation, names), unsorted, place in zip(states, shares, placements, strict=True):
            if place == "extreme":
                column = table.column(names[0])
                identity = state_identity(operation, column.type.to_pandas_dtype())
                values = pc.fill_null(column, identity).to_numpy(zero_copy_only=False)[live]
                lows, highs = low, high
                if kept_extremes is not None:  # the carried key's events overlapping the frontier, in order
                    kept_values, kept_ends = kept_extremes[len(extremes)]
                    own = ids[: key_ends[0]]
                    reach = np.where(kept_ends == lasting_end, key_ends[0], np.searchsorted(own, kept_ends + 1))
                    values = np.r_[kept_values.astype(values.dtype), values]
                    lows = np.r_[np.zeros(len(kept_values), dtype=np.int64), low]
                    highs = np.r_[reach, high]
                merged = [range_extreme(operation, values, lows, highs, groups)]
                extremes.append((operation, values, lows, highs))
                parts.append(None)
            else:
                values = [v[order] for v in unsorted]
                if operation == "moments":
                    part = part_moments(*values, group, groups)
                    merged = running_moments(*part, key_first)
                else:
                    part = [np.zeros(groups, dtype=values[0].dtype)]  # one total per id, exact for integers
                    np.add.at(part[0], group, values[0])
                    merged = [np.empty_like(part[0])]
                    for begin_at, end_at in zip(key_starts, key_ends, strict=True):  # a running total per key
                        merged[0][begin_at:end_at] = np.cumsum(part[0][begin_at:end_at])
                parts.append(part)
            running.append(merged)
            for name, array in zip(names, merged, strict=True):
                columns[name] = array

        if not last_chunk:  # the last key's running states before the frontier, as one delta there; its later ids
            mine = np.flatnonzero(open_key)
            before, after = mine[ids[mine] < frontier], mine[ids[mine] >= frontier]
            kept_ids = np.r_[[frontier] * min(len(before), 1), ids[after]].astype(np.int64)
            if len(kept_ids):
                kept = [
                    None
                    if p is None
                    else [np.r_[total[before[-1:]], each[after]] for total, each in zip(r, p, strict=True)]
                    for r, p in zip(running, parts, strict=True)
                ]
                # Each extreme's shares of the last key's events that overlap the frontier (an open-ended
                # one's ids reach its key's last; another's last window is the id one past it, less one),
                # NULL ones and those a better one outlasts left out, with their last windows.
                extremes_kept, events_kept = [], 0
                for operation, shares_of, lows, highs in extremes:
                    mine_too = open_key[lows]
                    values, reach = shares_of[mine_too], highs[mine_too]
                    ends = np.where(reach >= groups, lasting_end, ids[np.minimum(reach, groups - 1)] - 1)
                    identity = state_identity(operation, values.dtype)
                    present = ~np.isnan(values) if np.isnan(identity) else values != identity
                    over = present & (ends >= frontier)
                    best = best_first(operation, values[over], ends[over])
                    extremes_kept.append((values[over][best], ends[over][best]))
                    events_kept += len(best)
                carry.update(row=table.slice(count - 1, 1), ids=kept_ids, parts=kept, extremes=extremes_kept)
                carry.update(length=len(kept_ids) + events_kept)

        # Each id's running states for its windows, a piece at a time (a key's last id may reach far).
        spans = np.where(columns[states[0][1][0]] > 0, spans, 0)  # the first state counts the window's events
        first_window = np.r_[0, np.cumsum(spans)]
        for at in range(0, int(first_window[-1]), piece):
            window = np.arange(at, min(at + piece, int(first_window[-1])))
            of_window = np.searchsorted(first_window, window, side="right") - 1
            wid = ids[of_window] + window - first_window[of_window]
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
            yield pa.RecordBatch.from_arrays(out, schema=table.schema)

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
    events. Without it, the events are shuffled by key and sorted by Spark
    (events_in_order), and numpy walks each partition batch by batch.
    """
    operations, columns = jvm_states(states)
    places = [place for (_, names), place in zip(states, placements, strict=True) for _ in names]
    request = {"kernel": "EventDeltas", "keys": keys, "first": first, "last": last, "horizon": horizon}
    request.update(operations=operations, columns=columns, placements=places)
    windows = jvm_kernel(events, request)
    if windows is not None:
        return windows
    events = events_in_order(events, keys, first)
    return events.mapInArrow(event_differences(keys, first, last, horizon, states, placements), events.schema)


def sweep_windows(events, keys, first, last, horizon, states, placements):
    """The sweep plan's windows of interval events: WQL's JVM kernel when it is on Spark's classpath, else numpy.

    Both take one row per event (keys, first and last window, the data's last window,
    state shares, min and max placed "extreme") and return the same rows (see
    event_differences). The JVM kernel is an operator in Spark's plan that asks for each
    key's events in one partition sorted by first window; it walks each key's windows in
    order, events entering its running states at their first window and leaving after
    their last, min and max from a heap of the events in the window. Without it, numpy
    reads Spark's sort of each partition (events_in_order) batch by batch, with the
    difference plan's pass, extremes from range updates over the window-ids.
    """
    operations, columns = jvm_states(states)
    places = [place for (_, names), place in zip(states, placements, strict=True) for _ in names]
    request = {"kernel": "EventSweep", "keys": keys, "first": first, "last": last, "horizon": horizon}
    request.update(operations=operations, columns=columns, placements=places)
    windows = jvm_kernel(events, request)
    if windows is not None:
        return windows
    events = events_in_order(events, keys, first)
    return events.mapInArrow(event_differences(keys, first, last, horizon, states, placements), events.schema)
