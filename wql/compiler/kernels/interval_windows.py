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
from wql.compiler.kernels.sliding_combine import block_windows  # a job holds its own copy, beside this function
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
    return SliceWalk(keys, first, last, horizon, states, size, step, going_on).run


def scatter_states(operation, index, values, length):
    """One state per position: the combine of the values sent to it (the identity where none is)."""
    import numpy as np

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


def covering_nodes(low, high, leaves):
    """The segment-tree nodes whose union is [low, high] for each range: (node, range) pairs."""
    import numpy as np

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
    import numpy as np

    leaves = 1 << max(0, int(length - 1).bit_length())
    nodes, owners = covering_nodes(low, high, leaves)
    tree = scatter_states(operation, nodes, [v[owners] for v in values], 2 * leaves)
    level = 1
    while level < leaves:
        parents = np.arange(level, 2 * level)
        for child in (2 * parents, 2 * parents + 1):
            merged = state_combine(operation, [t[child] for t in tree], [t[parents] for t in tree])
            for t, m in zip(tree, merged, strict=True):
                t[child] = m
        level *= 2
    return [t[leaves : leaves + length] for t in tree]


def merge_into_span(operation, part, states, at, stop):
    """Combine `states` (arrays over positions at..stop−1, or one state for each) into those positions
    of `part`, the states carried in first."""
    span = slice(at, stop)
    merged = state_combine(operation, states, [p[span] for p in part])
    for p, m in zip(part, merged, strict=True):
        p[span] = m


class SliceWalk:
    """event_slices's request and its walk over one Spark partition. Its bound `run` is the function
    mapInArrow pickles to Spark's Python workers; each chunk's steps are SliceChunk's methods."""

    PIECE = 1 << 16  # windows per output batch where one state repeats (after a key's last run)

    def __init__(self, keys, first, last, horizon, states, size, step, going_on):
        self.keys, self.first, self.last, self.horizon = keys, first, last, horizon
        self.states, self.size, self.step, self.going_on = states, size, step, going_on

    def run(self, batches):
        """Walk the partition's events a chunk at a time (batch_chunks), NaN and overflow among the states
        being values, not faults."""
        import numpy as np

        carry = {}  # what the last key of a chunk leaves in flight, for the next chunk
        for table, last_chunk in batch_chunks(batches, lambda: carry.get("length", 0)):
            pieces = self.windows(table, carry, last_chunk)
            while True:
                with np.errstate(invalid="ignore", over="ignore"):  # NaN and ∞ among the states are values
                    out = next(pieces, None)
                if out is None:
                    break
                if out.num_rows:
                    yield out

    def windows(self, table, carry, last_chunk):
        """The windows a chunk completes, as batches, going on from `carry`, which it replaces with what the
        chunk's last key leaves in flight (after the partition's last chunk, nothing)."""
        import pyarrow as pa

        held = dict(carry)
        carry.clear()
        if "row" in held:  # the carried key first: a row over its slices in flight, with no share of its own
            table = held["row"] if table is None else pa.concat_tables([held["row"], table])
        if table is None:
            return
        chunk = SliceChunk(self, table, held, last_chunk)
        columns, dense, through = chunk.combined()
        counted = self.states[0][1][0]  # the first state counts the window's events
        keep = columns[counted] > 0
        wid = (chunk.ends[keep] + 1) // self.step - 1
        representative = chunk.run_first[chunk.run_of_window][keep]
        yield self.output(table, representative, wid, {n: c[keep] for n, c in columns.items()})
        yield from chunk.lasting_windows(through)
        if not last_chunk:
            carry.update(chunk.carry(dense, through))

    def output(self, table, representative, wid, columns):
        """Output rows: the window-ids, the states, and the other columns (keys, horizon) of each
        window's representative event."""
        import pyarrow as pa

        out, fields = [], [field for field in table.schema if field.name != self.going_on]
        for field in fields:
            if field.name in (self.first, self.last):
                out.append(pa.array(wid, type=field.type))
            elif field.name in columns:
                out.append(pa.array(columns[field.name], type=field.type))
            else:
                out.append(table.column(field.name).take(pa.array(representative)).combine_chunks())
        return pa.RecordBatch.from_arrays(out, schema=pa.schema(fields))

    def repeated(self, table, run_first, runs, after, windows, states):
        """Batches of windows that each hold one state (the lasting events of a key so far): `windows[i]` of
        them after window end `after[i]`, each with run runs[i]'s states (`states`: column -> per-run values),
        at most PIECE to a batch."""
        import numpy as np

        first_window = np.r_[0, np.cumsum(windows)]
        for at in range(0, int(first_window[-1]), self.PIECE):
            window = np.arange(at, min(at + self.PIECE, int(first_window[-1])))
            of = np.searchsorted(first_window, window, side="right") - 1
            ends = after[of] + self.step * (window - first_window[of] + 1)
            columns = {name: values[runs[of]] for name, values in states.items()}
            yield self.output(table, run_first[runs[of]], (ends + 1) // self.step - 1, columns)


class SliceChunk:
    """One chunk of event_slices's events (the carried key's row first) on its way to windows, a step per
    method: the events read (read_events), cut into runs laid out densely (cut_runs), the windows that go
    out placed (place_windows), each state inserted and combined (combined), the windows after each run
    that hold only its key's lasting events (lasting_windows), and what the last key carries (carry)."""

    def __init__(self, spec, table, held, last_chunk):
        self.spec, self.table, self.held, self.last_chunk = spec, table, held, last_chunk
        self.read_events()
        self.cut_runs()
        self.place_windows()

    def read_events(self):
        """Each event's first and last slice, and whether it lasts to the data's last slice: a lasting
        event is in every window from its first on, so it stretches no run to the data's end and is kept
        apart (φ everywhere it is written). The carried row stands for slices, not an event."""
        import numpy as np
        import pyarrow.compute as pc

        spec, table = self.spec, self.table
        self.lo_cell = table.column(spec.first).to_numpy(zero_copy_only=False)
        self.hi_cell = np.maximum(table.column(spec.last).to_numpy(zero_copy_only=False), self.lo_cell)
        self.top = (int(pc.max(table.column(spec.horizon)).as_py()) + 1) * spec.step - 1  # the data's last slice
        lasting = self.hi_cell >= self.top  # in every window from its first on, up to the data's last
        if "row" in self.held:
            lasting[0] = False
        self.lasting = lasting
        self.on_past = lasting.copy()  # an event that goes on past every slice it is written into: φ, never ϕ
        if spec.going_on is not None:
            self.on_past |= table.column(spec.going_on).to_numpy(zero_copy_only=False).astype(bool)
        self.reach_cell = np.where(lasting, self.lo_cell, self.hi_cell)  # a lasting event stretches no run

    def cut_runs(self):
        """Runs: a key's events that windows link (no window spans two runs), each laid out densely over
        whole blocks of `size` slices from a block before its first window's start, so the combine is
        block_windows over one array. Each event's dense range [low, high] (a lasting one: to its run's end)."""
        import numpy as np

        size, step, lo_cell, reach_cell = self.spec.size, self.spec.step, self.lo_cell, self.reach_cell
        new_key = key_changes(self.table, self.spec.keys)
        key_of = np.cumsum(new_key) - 1
        heads = np.flatnonzero(new_key)
        key_low = lo_cell[new_key]
        key_span = np.maximum.reduceat(reach_cell, heads) - key_low + 1
        shift = np.r_[0, np.cumsum(key_span)[:-1]][key_of] - key_low[key_of]
        reach = np.maximum.accumulate(reach_cell + shift) - shift
        starts_run = new_key.copy()
        starts_run[1:] |= lo_cell[1:] > reach[:-1] + size - 1
        self.run_first = run_first = np.flatnonzero(starts_run)
        self.run_of_event = run_of_event = np.cumsum(starts_run) - 1
        self.runs = runs = len(run_first)
        self.key_last_run = np.r_[run_of_event[heads[1:] - 1], runs - 1]
        self.last_of_key = self.key_last_run[key_of[run_first]]  # each run's key's last run
        self.lo = lo = lo_cell[run_first]
        self.hi = hi = np.maximum.reduceat(reach_cell, run_first)
        first_end = -(-(lo + 1) // step) * step - 1
        if "row" in self.held:
            first_end[0] = self.held["next_end"]  # the carried key's earlier windows went out with the chunk before
        self.first_end, self.last_end = first_end, ((hi + size) // step) * step - 1
        self.base = base = size * np.floor_divide(np.minimum(lo, first_end - size + 1), size)
        end = size * (np.floor_divide(np.maximum(hi, self.last_end), size) + 1)
        self.length = end - base
        self.offset = offset = np.r_[0, np.cumsum(self.length)[:-1]]
        self.total = int(self.length.sum())
        self.run_end = offset + self.length - 1  # each run's last dense position
        start = offset[run_of_event] - base[run_of_event]
        self.low = start + lo_cell
        self.high = np.where(self.lasting, self.run_end[run_of_event], start + self.hi_cell)

    def place_windows(self):
        """The windows that go out: every window of each run, but of the last key's last run only those that
        end before the chunk's last event starts (a later event starts there or after: it reaches none)."""
        import numpy as np

        step, first_end = self.spec.step, self.first_end
        emit_end = self.last_end.copy()
        if not self.last_chunk:
            self.frontier = self.lo_cell[-1]
            self.next_end = -(-(self.frontier + 1) // step) * step - 1
            emit_end[-1] = min(emit_end[-1], self.next_end - step)
        per_run = np.maximum((emit_end - first_end) // step + 1, 0)
        self.run_of_window = run_of_window = np.repeat(np.arange(self.runs), per_run)
        within = np.arange(int(per_run.sum())) - np.repeat(np.r_[0, np.cumsum(per_run)[:-1]], per_run)
        self.ends = first_end[run_of_window] + step * within
        self.dense_end = self.offset[run_of_window] + self.ends - self.base[run_of_window]

    def combined(self):
        """Each state inserted into the slices and combined into the windows going out: ({column: values per
        window}, each state's dense parts, {column: per-run states of the key's lasting events up to it})."""
        import pyarrow.compute as pc

        columns, dense, through = {}, [], {}
        for index, (operation, names) in enumerate(self.spec.states):
            values = []
            for name in names:
                column = self.table.column(name)
                v = pc.fill_null(column, state_identity(operation, column.type.to_pandas_dtype()))
                values.append(v.to_numpy(zero_copy_only=False))
            parts = self.inserted(operation, values)
            upto = self.add_lasting(operation, values, parts)
            if "row" in self.held:
                self.add_held(index, operation, parts, upto)
            dense.append(parts)
            through.update(zip(names, upto, strict=True))
            merged = block_windows(operation, parts[0], self.dense_end, self.spec.size)
            if operation not in ("min", "max"):
                merged = state_combine(operation, merged, [b[self.dense_end] for b in parts[1]])
            for name, array in zip(names, merged, strict=True):
                columns[name] = array
        return columns, dense, through

    def inserted(self, operation, values):
        """A state's events written into the slices: min and max into every slice an event overlaps (plain
        slices); a cumulative state as ϕ where the event ends and φ where it goes on past the slice (a
        lasting one: each), so a window counts each event once."""
        import numpy as np

        low, high, total, on_past = self.low, self.high, self.total, self.on_past
        if operation in ("min", "max"):  # selective: plain slices, every slice the event overlaps
            return [range_update(operation, values, low, high, total)]
        ending = ~on_past
        phi = scatter_states(operation, high[ending], [v[ending] for v in values], total)
        on = on_past | (high > low)
        stop = np.where(on_past, high, high - 1)
        return [phi, range_update(operation, [v[on] for v in values], low[on], stop[on], total)]

    def add_lasting(self, operation, values, parts):
        """Lasting events: each run holds those of its key's earlier runs over all its slices, and the
        windows after a run, up to the key's next run or the data's end, hold exactly those up to it (the
        per-run states returned)."""
        import numpy as np

        runs, since = self.runs, self.run_of_event[self.lasting]
        shares = [v[self.lasting] for v in values]
        upto = range_update(operation, shares, since, self.last_of_key[since], runs)
        if len(since) and runs > 1:
            before = range_update(operation, shares, since + 1, self.last_of_key[since], runs)
            spread = [b[np.repeat(np.arange(runs), self.length)] for b in before]
            merge_into_span(operation, parts[-1], spread, 0, self.total)
        return upto

    def add_held(self, index, operation, parts, upto):
        """The carried key's slices in flight from the chunk before, and its lasting events so far: over the
        slices past the carried ones and in each of its runs' lasting states."""
        held, low, high = self.held, self.low, self.high
        for part, kept in zip(parts, held["cells"][index], strict=True):
            merge_into_span(operation, part, kept, int(low[0]), int(low[0]) + len(kept[0]))
        carried = held.get("lasting")
        if carried is not None:
            key_runs = int(self.key_last_run[0]) + 1  # the carried key's runs, the first ones
            merge_into_span(operation, parts[-1], carried[index], int(high[0]) + 1, int(self.run_end[key_runs - 1]) + 1)
            merge_into_span(operation, upto, carried[index], 0, key_runs)

    def lasting_windows(self, through):
        """After each run, up to its key's next run (or the data's end once the key is done), the windows that
        hold its key's lasting events so far, and nothing else: batches of one repeated state."""
        import numpy as np

        spec, runs = self.spec, self.runs
        counted = spec.states[0][1][0]
        follow = np.minimum(np.r_[self.first_end[1:], 0] - spec.step, self.top)
        follow = np.where(self.last_of_key == np.arange(runs), self.top, follow)
        if not self.last_chunk:
            follow[-1] = self.last_end[-1]  # the last key may have more: its windows after the run wait
        gaps = np.where(through[counted] > 0, np.maximum((follow - self.last_end) // spec.step, 0), 0)
        after, windows = self.last_end[gaps > 0], gaps[gaps > 0]
        yield from spec.repeated(self.table, self.run_first, np.flatnonzero(gaps), after, windows, through)

    def carry(self, dense, through):
        """What the last key carries into the next chunk: its slices from the last event's first slice −
        size + 1 on (those the windows still open read), its first window still to go out, the combine of
        its lasting events so far, as a row that stands for it (held_row)."""
        spec, r = self.spec, self.runs - 1
        counted = spec.states[0][1][0]
        low_at = max(int(self.frontier) - spec.size + 1, int(self.lo[r]))
        at, stop = int(self.offset[r] + low_at - self.base[r]), int(self.offset[r] + self.hi[r] - self.base[r]) + 1
        cells = [[[p[at:stop].copy() for p in part] for part in parts] for parts in dense]
        lasted = through[counted][r] > 0  # the key's lasting events so far that count (none: no share)
        kept = [[through[name][r] for name in names] for _, names in spec.states] if lasted else None
        shares = {name: None for _, names in spec.states for name in names}
        row = held_row(self.table, self.table.num_rows - 1, {spec.first: low_at, spec.last: int(self.hi[r]), **shares})
        return {"row": row, "next_end": self.next_end, "cells": cells, "lasting": kept, "length": stop - at}


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
    return DifferenceWalk(keys, first, last, horizon, states, placements).run


def placed_shares(values, place, at_end, signs):
    """Each delta's share: the event's value where the state is placed, else the identity (0)."""
    import numpy as np

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
    import numpy as np

    counts = np.bincount(group, weights=n, minlength=groups)
    safe = np.where(counts > 0, counts, 1)
    means = np.bincount(group, weights=n * mean, minlength=groups) / safe
    spread = np.where(n > 0, m2 + n * (mean - means[group]) ** 2, 0)
    return [counts.astype(np.int64), means, np.bincount(group, weights=spread, minlength=groups)]


def range_extreme(operation, values, low, high, length):
    """The extreme (min or max) at each of `length` positions of the values whose ranges [low, high) hold
    it: each value combined into the O(log length) segment-tree nodes that cover its range, then the
    nodes pushed down to the positions. Spark orders NaN above every number: max keeps it, min skips it."""
    import numpy as np

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
    import numpy as np

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


class DifferenceWalk:
    """event_differences's request and its walk over one Spark partition. Its bound `run` is the function
    mapInArrow pickles to Spark's Python workers; each chunk's steps are DifferenceChunk's methods."""

    PIECE = 1 << 16  # windows per output batch (a key's last running states last to the data's end)
    LASTING_END = (1 << 63) - 1  # the last window of an open-ended event, in the extremes' carry

    def __init__(self, keys, first, last, horizon, states, placements):
        self.keys, self.first, self.last, self.horizon = keys, first, last, horizon
        self.states, self.placements = states, placements

    def run(self, batches):
        """Walk the partition's events a chunk at a time (batch_chunks), NaN, overflow and empty moments
        among the states being values, not faults."""
        import numpy as np

        carry = {}  # what the last key of a chunk leaves in flight, for the next chunk
        for table, last_chunk in batch_chunks(batches, lambda: carry.get("length", 0)):
            pieces = self.windows(table, carry, last_chunk)
            while True:
                with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                    out = next(pieces, None)
                if out is None:
                    break
                if out.num_rows:
                    yield out

    def windows(self, table, carry, last_chunk):
        """The windows a chunk completes, as batches, going on from `carry`, which it replaces with what the
        chunk's last key leaves in flight (after the partition's last chunk, nothing)."""
        import pyarrow as pa

        held = dict(carry)
        carry.clear()
        if "row" in held:  # the carried key first: a row that stands for it, with no delta of its own
            table = held["row"] if table is None else pa.concat_tables([held["row"], table])
        if table is None:
            return
        chunk = DifferenceChunk(self, table, held, last_chunk)
        if not chunk.deltas():
            return
        chunk.number_ids()
        chunk.event_ranges()
        columns, parts, running, extremes = chunk.combined()
        if not last_chunk:
            carry.update(chunk.carry(parts, running, extremes))
        yield from chunk.batches(columns)


class DifferenceChunk:
    """One chunk of event_differences's events (the carried key's row first) on its way to windows, a step
    per method: the events read (read_events), their deltas (deltas), sorted and combined per key and
    window-id (number_ids), each event's range of ids (event_ranges), the running states (combined), what
    the last key carries (carry) and the windows out (batches)."""

    def __init__(self, spec, table, held, last_chunk):
        self.spec, self.table, self.held, self.last_chunk = spec, table, held, last_chunk
        self.read_events()

    def read_events(self):
        """Which rows enter as events: `live` ones (first ≤ last; first > last is in a gap between windows,
        in none; the carried row stands for its key, no event), `ending` ones (live with a last window: an
        open-ended one never leaves); each row's key segment and the data's last window."""
        import numpy as np
        import pyarrow.compute as pc

        spec, table = self.spec, self.table
        self.begin = table.column(spec.first).to_numpy(zero_copy_only=False)
        self.stops = table.column(spec.last)
        live = pc.fill_null(pc.less_equal(table.column(spec.first), self.stops), True)  # first > last: in none
        live = np.array(live.to_numpy(zero_copy_only=False), dtype=bool)
        self.carried = 0
        if "row" in self.held:
            live[0] = False
            self.carried = len(self.held["ids"])
        self.live = live
        self.ending = live & pc.is_valid(self.stops).to_numpy(zero_copy_only=False)
        self.final = int(pc.max(table.column(spec.horizon)).as_py())
        self.segment = np.cumsum(key_changes(table, spec.keys)) - 1

    def deltas(self):
        """The deltas: the carried ones (at their ids), one per event at its first window, one per event that
        ends one past its last (none for an open-ended one), and each state's share of each as its placement
        puts it (extremes: none, range_extreme takes them). False where the chunk has no delta."""
        import numpy as np
        import pyarrow.compute as pc

        spec, held, carried, live, ending = self.spec, self.held, self.carried, self.live, self.ending
        event = np.r_[np.zeros(carried, dtype=np.int64), np.flatnonzero(live), np.flatnonzero(ending)]
        at_end = np.r_[np.zeros(carried + int(live.sum()), dtype=bool), np.ones(int(ending.sum()), dtype=bool)]
        stop = pc.fill_null(self.stops, 0).to_numpy(zero_copy_only=False) + 1
        cell = np.r_[held.get("ids", []), self.begin[live], stop[ending]].astype(np.int64)
        if len(cell) == 0:
            return False
        signs = np.where(at_end, -1, 1)
        self.shares = []
        for index, ((_, names), place) in enumerate(zip(spec.states, spec.placements, strict=True)):
            group_shares = []
            for j, name in enumerate(names):
                if place == "extreme":  # not a delta: range_extreme
                    group_shares.append(None)
                    continue
                values = pc.fill_null(self.table.column(name), 0).to_numpy(zero_copy_only=False)
                own = placed_shares(values[event[carried:]], place, at_end[carried:], signs[carried:])
                if carried:
                    own = np.r_[held["parts"][index][j].astype(own.dtype), own]
                group_shares.append(own)
            self.shares.append(group_shares)
        self.event, self.cell = event, cell
        return True

    def number_ids(self):
        """The deltas sorted by key and window-id, each distinct id a group. The running states of id g hold
        for windows ids[g] … the next id of its key − 1 (the last id: the data's last window), none past the
        data's last window; the last key's only up to the chunk's last event's first window − 1 (a later
        event starts there or after: it changes none before)."""
        import numpy as np

        segment, final = self.segment, self.final
        self.order = order = np.lexsort([self.cell, segment[self.event]])
        self.event, cell = self.event[order], self.cell[order]
        in_key = segment[self.event]
        new_key = np.r_[True, in_key[1:] != in_key[:-1]]
        new_id = new_key.copy()
        new_id[1:] |= cell[1:] != cell[:-1]
        self.group = np.cumsum(new_id) - 1
        self.heads = heads = np.flatnonzero(new_id)
        self.groups = len(heads)
        self.ids = ids = cell[heads]
        self.key_first = key_first = new_key[heads]
        self.key_starts = np.flatnonzero(key_first)
        self.key_ends = np.r_[self.key_starts[1:], self.groups]
        key_last = np.r_[key_first[1:], True]
        upto = np.where(key_last, final, np.minimum(np.r_[ids[1:], 0] - 1, final))
        if not self.last_chunk:
            self.frontier = int(self.begin[-1])
            self.open_key = in_key[heads] == segment[-1]
            upto = np.where(self.open_key, np.minimum(upto, self.frontier - 1), upto)
        self.spans = np.maximum(upto - ids + 1, 0)

    def event_ranges(self):
        """Each live event's ids: from its first window's to its last's (the one before the id one past its
        last; an open-ended event's: its key's last id). A carried event's: from the carried key's first id."""
        import numpy as np

        carried = self.carried
        group_of = np.empty(len(self.order), dtype=np.int64)
        group_of[self.order] = self.group
        entered = int(self.live.sum())
        self.low = group_of[carried : carried + entered]
        key_of_group = np.cumsum(self.key_first) - 1
        self.high = self.key_ends[key_of_group[self.low]]
        self.high[self.ending[self.live]] = group_of[carried + entered :]

    def combined(self):
        """Each state's running value per id ({column: values}), with what the carry needs: each summed
        state's parts per id, each state's running values, and each extreme's (operation, shares, ranges)."""
        spec = self.spec
        kept_extremes = self.held.get("extremes")
        columns, parts, running, extremes = {}, [], [], []
        for (operation, names), unsorted, place in zip(spec.states, self.shares, spec.placements, strict=True):
            if place == "extreme":
                kept = None if kept_extremes is None else kept_extremes[len(extremes)]
                merged, extreme = self.extreme(operation, names[0], kept)
                extremes.append(extreme)
                parts.append(None)
            else:
                part, merged = self.summed(operation, unsorted)
                parts.append(part)
            running.append(merged)
            for name, array in zip(names, merged, strict=True):
                columns[name] = array
        return columns, parts, running, extremes

    def extreme(self, operation, name, kept):
        """An extreme per id: each live event's share (and each carried one's, `kept`: the carried key's
        events overlapping the frontier, in order) over its range of ids, by range_extreme."""
        import numpy as np
        import pyarrow.compute as pc

        column = self.table.column(name)
        identity = state_identity(operation, column.type.to_pandas_dtype())
        values = pc.fill_null(column, identity).to_numpy(zero_copy_only=False)[self.live]
        lows, highs = self.low, self.high
        if kept is not None:  # the carried key's events overlapping the frontier, in order
            kept_values, kept_ends = kept
            own = self.ids[: self.key_ends[0]]
            reach = np.where(kept_ends == self.spec.LASTING_END, self.key_ends[0], np.searchsorted(own, kept_ends + 1))
            values = np.r_[kept_values.astype(values.dtype), values]
            lows = np.r_[np.zeros(len(kept_values), dtype=np.int64), self.low]
            highs = np.r_[reach, self.high]
        return [range_extreme(operation, values, lows, highs, self.groups)], (operation, values, lows, highs)

    def summed(self, operation, unsorted):
        """A sum or moments per id: the deltas combined per id, then a running combine along each key's ids
        (sums exact for integers; moments by Chan's formula, id after id as the JVM kernel merges them)."""
        import numpy as np

        group, groups = self.group, self.groups
        values = [v[self.order] for v in unsorted]
        if operation == "moments":
            part = part_moments(*values, group, groups)
            return part, running_moments(*part, self.key_first)
        part = [np.zeros(groups, dtype=values[0].dtype)]  # one total per id, exact for integers
        np.add.at(part[0], group, values[0])
        merged = [np.empty_like(part[0])]
        for begin_at, end_at in zip(self.key_starts, self.key_ends, strict=True):  # a running total per key
            merged[0][begin_at:end_at] = np.cumsum(part[0][begin_at:end_at])
        return part, merged

    def carry(self, parts, running, extremes):
        """What the last key carries into the next chunk ({} if nothing): its running states before the
        frontier, as one delta there, and its later ids' parts; each extreme's shares of its events that
        overlap the frontier (kept_extremes); a row that stands for the key."""
        import numpy as np

        ids, frontier = self.ids, self.frontier
        mine = np.flatnonzero(self.open_key)
        before, after = mine[ids[mine] < frontier], mine[ids[mine] >= frontier]
        kept_ids = np.r_[[frontier] * min(len(before), 1), ids[after]].astype(np.int64)
        if not len(kept_ids):
            return {}
        kept = [
            None if p is None else [np.r_[total[before[-1:]], each[after]] for total, each in zip(r, p, strict=True)]
            for r, p in zip(running, parts, strict=True)
        ]
        extremes_kept, events_kept = self.kept_extremes(extremes)
        row = self.table.slice(self.table.num_rows - 1, 1)
        return {
            "row": row,
            "ids": kept_ids,
            "parts": kept,
            "extremes": extremes_kept,
            "length": len(kept_ids) + events_kept,
        }

    def kept_extremes(self, extremes):
        """Each extreme's shares of the last key's events that overlap the frontier (an open-ended one's ids
        reach its key's last; another's last window is the id one past it, less one), NULL ones and those a
        better one outlasts left out (best_first), with their last windows; and how many they are."""
        import numpy as np

        ids, groups, frontier = self.ids, self.groups, self.frontier
        extremes_kept, events_kept = [], 0
        for operation, shares_of, lows, highs in extremes:
            mine_too = self.open_key[lows]
            values, reach = shares_of[mine_too], highs[mine_too]
            ends = np.where(reach >= groups, self.spec.LASTING_END, ids[np.minimum(reach, groups - 1)] - 1)
            identity = state_identity(operation, values.dtype)
            present = ~np.isnan(values) if np.isnan(identity) else values != identity
            over = present & (ends >= frontier)
            best = best_first(operation, values[over], ends[over])
            extremes_kept.append((values[over][best], ends[over][best]))
            events_kept += len(best)
        return extremes_kept, events_kept

    def batches(self, columns):
        """Each id's running states for its windows, a piece at a time (a key's last id may reach far);
        windows whose first state (a count) is zero left out."""
        import numpy as np
        import pyarrow as pa

        spec, table, ids = self.spec, self.table, self.ids
        spans = np.where(columns[spec.states[0][1][0]] > 0, self.spans, 0)  # the first state counts the events
        first_window = np.r_[0, np.cumsum(spans)]
        for at in range(0, int(first_window[-1]), spec.PIECE):
            window = np.arange(at, min(at + spec.PIECE, int(first_window[-1])))
            of_window = np.searchsorted(first_window, window, side="right") - 1
            wid = ids[of_window] + window - first_window[of_window]
            representative = pa.array(self.event[self.heads][of_window])
            out = []
            for field in table.schema:
                if field.name in (spec.first, spec.last):
                    out.append(pa.array(wid, type=field.type))
                elif field.name == spec.horizon:
                    out.append(pa.array(np.full(len(wid), self.final), type=field.type))
                elif field.name in columns:
                    out.append(pa.array(columns[field.name][of_window], type=field.type))
                else:
                    out.append(table.column(field.name).take(representative).combine_chunks())
            yield pa.RecordBatch.from_arrays(out, schema=table.schema)


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
