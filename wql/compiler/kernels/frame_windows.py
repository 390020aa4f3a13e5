from wql.compiler.kernels.job_support import (  # a job holds its own copy, beside this function
    by_keys,
    jvm_kernel,
    jvm_states,
    key_ids,
    spark_column,
)
from wql.compiler.kernels.state_algebra import state_combine, state_identity  # a job holds its own copy


def in_window_order(rows, partitions):
    """Every row of a key in one Spark partition (by_keys), sorted there by the keys, then `_t` (NULL
    last) and `_pos` (arrival, where the rows have it: sessions do not depend on the order of equal
    values): the order walk_chunk numbers them in, so a pass over the partition's batches
    (walk_sorted) meets each key's tuples in window order, one key after another. Spark's sort
    spills through its external sorter, so no task holds a hot key's tuples in memory at once."""
    from pyspark.sql import functions as F

    order = [spark_column(name) for name in partitions]
    order.append(F.col("_t").asc_nulls_last())
    if "_pos" in rows.columns:
        order.append(F.col("_pos"))
    return by_keys(rows, partitions).sortWithinPartitions(*order)


def walk_sorted(batches, partitions, rule):
    """One Spark partition's batches in window order (in_window_order), numbered one batch at a time
    (walk_chunk) with what is in flight carried from one batch to the next: per batch with a valued
    `_t`, once the next one's first row is known, (table, t, labels, after, ended).

    `table` holds the batch's rows with a valued `_t` (a NULL is in no window and ends none), `t` their
    `_t` and `labels` their windows' numbers (-1: none; unique in the partition, rising along the
    walk); `after` is (number, `_t`, same key) of each row's successor in window order, the last row's
    from the next batch (-2, its own `_t`, False: none), so a window's last row says whether a tuple of
    its key followed it; `ended` marks an aggregate frame's last tuple where its condition held.
    Holds two batches and the windows in flight, never a key's tuples.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    carry = {"number": 0}
    pending = None

    def view(label, stamp, same):
        table, t, labels, alike, ended = pending
        after = (np.r_[labels[1:], label], np.r_[t[1:], stamp], np.r_[alike[1:], same])
        return table, t, labels, after, ended

    for batch in batches:
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch])
        valued = pc.is_valid(table.column("_t"))
        if not pc.all(valued).as_py():
            table = table.filter(valued)
            if table.num_rows == 0:
                continue
        _, t, labels, alike, ended = walk_chunk(table, partitions, rule, carry)
        if pending is not None:
            yield view(labels[0], t[0], alike[0])
        pending = (table, t, labels, alike, ended)
    if pending is not None:
        yield view(-2, pending[1][-1], False)


def walk_chunk(table, partitions, rule, carry, key=None):
    """Number the sessions or frames of consecutive tuples of a partition in window order (every `_t`
    valued), going on from `carry`, the state the chunk before left (a fresh {"number": 0} at the
    partition's start), which it updates: (key, t, labels, same, ended), each per row: key ids (`key`
    if given), `_t`, the window's number (-1: none), whether the row has the key of the row before
    it, and whether an aggregate frame's condition ended the frame there.

    Rows: the partition key columns, `_t` (the window attribute in base units), and what the rule
    reads: `_p` (THRESHOLD's predicate), `_x` (DELTA's x), `_c0`, `_c1`, … (the arguments of
    AGGREGATE's running aggregates). Each key's tuples are cut into maximal runs (semantics.md §2):

    - "session": consecutive tuples at most `gap` apart; with `longest`, a tuple at or past the
      session's first value + `longest` starts a new one;
    - "threshold": runs where `_p` is true (false or NULL: in no frame);
    - "delta": runs whose `_x` stays within `delta` of the run's first `_x` (a NULL `_x` ends the run
      and is in none);
    - "aggregate": runs that end at the first tuple where `test` holds over the running aggregates
      `running` of the run so far (the key's last run may end without it).

    Numbers rise along the walk. A rule whose runs start where the previous run started (delta,
    aggregate, a session's maximum) is walked run by run, each run's end found by one vectorized
    search over a block of tuples that doubles until it holds the end. What goes on into the next
    chunk: the last row's key and number, and for the run still open there its last and first `_t`
    (sessions), its first `_x` (delta) or its running aggregates (aggregate).
    """
    chunk = FrameChunk(table, partitions, carry, key)
    label = {
        "session": chunk.label_sessions,
        "threshold": chunk.label_thresholds,
        "delta": chunk.label_deltas,
        "aggregate": chunk.label_aggregates,
    }.get(rule["cut"])
    if label is None:
        raise ValueError(f"unknown frame rule {rule['kind']!r}")
    label(rule)
    carry.update(key=chunk.keys.slice(table.num_rows - 1, 1), number=chunk.number, label=int(chunk.labels[-1]))
    return chunk.key, chunk.t, chunk.labels, chunk.same, chunk.ended


class FrameChunk:
    """One chunk of walk_chunk's rows: what every rule reads (each row's `_t`, key and whether it has the
    key of the row before, where its key's rows end, whether the window open at the chunk before's end
    goes on) and what it fills (labels, ended, the next number, `carry`). One method per rule, each
    numbering the chunk's windows from `number` on and leaving in `carry` what its open window needs."""

    def __init__(self, table, partitions, carry, key):
        import numpy as np
        import pyarrow as pa

        n = table.num_rows
        self.table, self.carry = table, carry
        self.keys = window_keys(table, partitions)
        self.key = key_ids(self.keys, partitions) if key is None else key
        self.t = table.column("_t").to_numpy(zero_copy_only=False)
        same = np.zeros(n, dtype=bool)
        same[1:] = self.key[1:] == self.key[:-1]
        if carry.get("key") is not None:  # the first row goes on with the last key of the chunk before?
            if partitions:
                ids = key_ids(pa.concat_tables([carry["key"], self.keys.slice(0, 1)]), partitions)
                same[0] = ids[0] == ids[1]
            else:
                same[0] = True
        self.same = same
        self.going = bool(same[0]) and carry["label"] >= 0  # and the last row was in a window
        self.first = ~same
        stops = np.flatnonzero(np.r_[self.first[1:], True]) + 1  # where each key's tuples end (or the chunk)
        self.key_end = np.repeat(stops, np.diff(np.r_[0, stops]))
        self.number = carry["number"]
        self.labels = np.full(n, -1, dtype=np.int64)
        self.ended = np.zeros(n, dtype=bool)

    def column(self, name, fill):
        """A column's values (NULL as `fill`) and where it is valued."""
        import pyarrow.compute as pc

        values = self.table.column(name)
        present = pc.is_valid(values).to_numpy(zero_copy_only=False)
        return pc.fill_null(values, fill).to_numpy(zero_copy_only=False), present

    def label_sessions(self, rule):
        """Sessions: a new one wherever a key starts or the gap to the tuple before exceeds `gap`, and,
        with `longest`, at the first tuple at or past the session's first value + `longest`. Carries the
        last `_t` and where the open session began."""
        import numpy as np

        t, carry = self.t, self.carry
        starts = self.first.copy()
        starts[1:] |= (t[1:] - t[:-1]) > rule["gap"]
        if self.going:
            starts[0] = (t[0] - carry["last_t"]) > rule["gap"]
        if rule.get("longest") is not None:
            anchor = carry["anchor"] if self.going and not starts[0] else None
            starts = split_long_sessions(t, starts, rule["longest"], anchor)
            heads = np.flatnonzero(starts)
            carry["anchor"] = t[heads[-1]] if len(heads) else carry["anchor"]  # where the open session began
        self.labels = self.number - 1 + np.cumsum(starts)
        self.number += int(starts.sum())
        carry["last_t"] = t[-1]

    def label_thresholds(self, rule):
        """THRESHOLD frames: runs of a key's tuples where `_p` is true; the frame open at the chunk
        before's end goes on while it holds."""
        import numpy as np

        holds, present = self.column("_p", False)
        holds = holds & present
        starts = holds.copy()
        starts[1:] &= ~holds[:-1] | self.first[1:]
        if self.going:
            starts[0] = False  # the frame of the chunk before goes on
        self.labels = np.where(holds, self.number - 1 + np.cumsum(starts), -1)
        self.number += int(starts.sum())

    def label_deltas(self, rule):
        """DELTA frames: runs whose `_x` stays within `delta` of the run's first `_x` (walk_runs); carries
        the open frame's first `_x`. Integers are compared exactly, as Python integers near 2**63."""
        import numpy as np

        x, present = self.column("_x", 0)
        delta = rule["delta"]
        anchor = self.carry["x"] if self.going else None  # the open frame's first x
        if x.dtype.kind in "iu":
            delta = int(np.floor(delta))  # integers within a fractional delta: within its floor, exactly
            ends = [int(x.min()), int(x.max()), *([] if anchor is None else [int(anchor)])]
            if max(abs(e) for e in ends) >= 2**62:
                x = x.astype(object)  # Python integers: differences that cannot overflow

        def joins(lo, hi, anchor):
            block = x[lo:hi]
            return present[lo:hi] & ((block == anchor) | (np.abs(block - anchor) <= delta))

        labels = self.labels
        self.number = walk_runs(
            labels,
            self.key_end,
            lambda i: present[i],
            lambda i: lambda lo, hi: joins(lo, hi, x[i]),
            inclusive=False,
            number=self.number,
            going=None if anchor is None else (lambda lo, hi: joins(lo, hi, anchor)),
        )
        if labels[-1] >= 0:  # the last frame is open: its first x goes on
            others = np.flatnonzero(labels != labels[-1])
            head = int(others[-1]) + 1 if len(others) else 0
            self.carry["x"] = anchor if self.going and labels[-1] == self.carry["label"] else x[head]

    def label_aggregates(self, rule):
        """AGGREGATE frames: runs that end at the first tuple where `test` holds over the running
        aggregates of the run so far (walk_runs); carries the open frame's running aggregates."""
        import numpy as np

        carry, labels, ended = self.carry, self.labels, self.ended
        arguments = running_arguments(self.table, rule, None)
        initial = carry.get("running") if self.going else None  # the open frame's running aggregates
        test, running = rule["test"], rule["running"]

        def ends(i):
            def holds(lo, hi):
                return running_test(test, running, arguments, i, hi)

            return holds

        self.number = walk_runs(
            labels,
            self.key_end,
            lambda i: True,
            ends,
            inclusive=True,
            number=self.number,
            going=None if initial is None else (lambda lo, hi: running_test(test, running, arguments, 0, hi, initial)),
            ended=ended,
        )
        carry["running"] = None
        if not ended[-1]:  # the last frame is open: its running aggregates go on
            head = int(np.searchsorted(labels, labels[-1], side="left"))  # every row is in a frame
            on = initial is not None and labels[-1] == carry["label"]  # the frame of the chunk before
            n = len(labels)
            carry["running"] = running_values(running, arguments, head, n, initial if on else None)[1]


def window_keys(table, partitions):
    """The partition key columns as the walk compares them: as Spark groups, hashes and sorts them, a
    floating −0.0 is 0.0 (NaN is one value already)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = table.select(partitions)
    for index, field in enumerate(keys.schema):
        if pa.types.is_floating(field.type):
            keys = keys.set_column(index, field, pc.add(keys.column(index), pa.scalar(0.0, field.type)))
    return keys


def running_arguments(table, rule, order):
    """AGGREGATE's running-aggregate arguments in window order (`order` of the table's rows, None: as
    they are): {column: (values, present)}."""
    import pyarrow.compute as pc

    arguments = {}
    for _, name, _ in rule["running"]:
        if name is not None and name not in arguments:
            values = table.column(name)
            present = pc.is_valid(values).to_numpy(zero_copy_only=False)
            values = pc.fill_null(values, 0).to_numpy(zero_copy_only=False)
            arguments[name] = (values, present) if order is None else (values[order], present[order])
    return arguments


def walk_settled(batches, partitions, rule, point):
    """One Spark partition's batches in window order (in_window_order), walked (walk_sorted) with which
    rows are in a window final at punctuation `point` (semantics.md §8.4): per chunk, (table, t, labels,
    after, done, key, inherited, goes_on, follower). `after` is walk_sorted's, `key` numbers each row's
    key within the chunk (0: the first), `inherited` says whether key 0 goes on from the chunk before,
    `goes_on` whether the chunk's last key goes on in the next chunk, and `follower` is
    the `_pos` of each row's successor in window order, the last row's from the next chunk (-1 where
    there is none, or the rows have no `_pos`).

    A session is final once `point` is past its last value + gap (or at its first value + longest); a
    frame once `point` is past the tuple that closed it (window_closes). A window is decided once its
    last row is seen: the rows of the one still going on at a batch's end are held and walked again
    with the next batch, so a chunk holds whole windows, and the pass holds two batches and the window
    in flight, never a key's tuples. Finality is monotone along a key: its final windows come first,
    since every tuple still to come sorts after them.
    """
    import numpy as np
    import pyarrow as pa

    held = None  # the rows of the window going on at the last batch's end
    waiting = None  # a chunk waiting for the next one's first `_pos`
    before_same = False  # whether the next chunk's first row goes on with the key before it

    def joined(first, second):
        return (
            pa.concat_tables([first[0], second[0]]),
            *(np.concatenate([first[i], second[i]]) for i in (1, 2)),
            tuple(np.concatenate([first[3][i], second[3][i]]) for i in range(3)),
            np.concatenate([first[4], second[4]]),
        )

    for walked in walk_sorted(batches, partitions, rule):
        table, t, labels, after, ended = walked if held is None else joined(held, walked)
        held = None
        cut = len(t)
        if labels[-1] >= 0 and after[0][-1] == labels[-1]:  # the last window goes on: held
            other = np.flatnonzero(labels != labels[-1])
            cut = int(other[-1]) + 1 if len(other) else 0
            held = (table.slice(cut), t[cut:], labels[cut:], tuple(a[cut:] for a in after), ended[cut:])
        if cut == 0:
            continue
        table, t, labels, ended = table.slice(0, cut), t[:cut], labels[:cut], ended[:cut]
        after = tuple(a[:cut] for a in after)
        ends = np.flatnonzero((labels >= 0) & (after[0] != labels))  # each window's last row
        if rule["cut"] == "session":
            heads = np.searchsorted(labels, labels[ends], side="left")  # sessions label every row, rising
            final = point > t[ends] + rule["gap"]
            if rule.get("longest") is not None:
                final |= point >= t[heads] + rule["longest"]
        else:
            closed, close = window_closes(rule, t, after, ended, ends)
            final = closed & (close < point)
        labelled = labels >= 0
        done = np.zeros(cut, dtype=bool)
        done[labelled] = final[np.searchsorted(labels[ends], labels[labelled])]
        key = np.cumsum(np.r_[False, ~after[2][:-1]])
        inherited, before_same = before_same, bool(after[2][-1])
        own = table.column("_pos").to_numpy(zero_copy_only=False) if "_pos" in table.column_names else None
        follower = np.full(cut, -1, dtype=np.int64)
        if own is not None:
            follower[:-1] = own[1:]
            if waiting is not None:
                waiting[-1][-1] = own[0]
        if waiting is not None:
            yield waiting
        waiting = (table, t, labels, after, done, key, inherited, before_same, follower)
    if waiting is not None:
        yield waiting


def frame_pending(partitions, rule, point, generous=False):
    """A mapInArrow function for a stream's state, over a partition in window order (in_window_order):
    the rows of each key from its first session or frame that is not final at punctuation `point` on
    (semantics.md §8.4), every row after it included.

    The final windows of a key come first in its order (walk_settled), and every tuple still to come
    sorts after them, so the rows kept begin where a window begins and the batch job's own `windows`
    stage, run again over them and the next trigger's rows, finds the same windows as over the whole
    stream. A row in no frame (a false predicate, a NULL x) below `point` and before the first open
    frame is dropped too, unless `generous` (SLACK … GENEROUS, §8.5): then every row after the key's
    last final window is kept, since a late tuple admitted there (frame_closings) is placed among
    them exactly, and a row in no frame can be what separates it from an open frame.

    Chunk by chunk: once a key's cut is found, every later row of it is kept; with `generous`, its
    rows in no frame after its last final window wait until an open window or the key's end shows
    they are kept (another final window after them drops them). Holds two batches, the window in
    flight and those waiting rows, never a key's tuples.
    """
    import numpy as np
    import pyarrow as pa

    def run(batches):
        opened = False  # the last key's cut is behind: every later row of it is kept
        waiting = []  # GENEROUS: the last key's rows in no frame after its last final window, its cut unknown
        for table, t, labels, _, done, key, inherited, goes_on, _ in walk_settled(batches, partitions, rule, point):
            heads = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            sizes = np.diff(np.r_[heads, len(key)])
            first, last = key == 0, key == key[-1]
            if generous:
                seen = np.cumsum(done)
                kept = (seen == np.repeat(seen[heads + sizes - 1], sizes)) & ~done  # after its last final window
                if inherited and opened:
                    kept[first] = True
                if inherited and done[first].any():
                    waiting = []  # a later final window: the rows before it are not kept
                hold = goes_on and not (((labels >= 0) & kept & last).any() or (inherited and opened and key[-1] == 0))
                opened = goes_on and not hold
                if hold:
                    if key[-1] != 0 or not inherited:  # the key the waiting rows belong to ended here
                        yield from waiting
                        waiting = []
                    rest = np.flatnonzero(kept & last)
                    if len(rest):
                        waiting.append(table.take(pa.array(rest)))
                    kept &= ~last
                else:
                    yield from waiting
                    waiting = []
            else:
                settled = np.where(labels >= 0, done, t < point)
                unsettled = np.cumsum(~settled)
                kept = unsettled - np.repeat(np.r_[0, unsettled][heads], sizes) > 0  # from its first unsettled row
                if inherited and opened:
                    kept[first] = True
                opened = goes_on and bool(kept[-1])
            rows = np.flatnonzero(kept)
            if len(rows):
                yield table.take(pa.array(rows))

    def batches_of(batches):
        for table in run(batches):
            yield from table.combine_chunks().to_batches()

    return batches_of


def frame_closings(partitions, rule, point):
    """A mapInArrow function for SLACK … GENEROUS (semantics.md §8.5), over a partition in window order
    (in_window_order): per key whose rows hold a window final at punctuation `point`, the point that
    the last such window closes the key's history up to. A late tuple after it is placed exactly, as if
    on time; one at or before it is in no window.

    Sessions: `_closed_t`, the last value + gap (a tuple above it cannot join the session) and, with
    `longest`, `_closed_from`, the first value + longest (a tuple there starts a session of its own).
    Frames: `_closed_t` and `_closed_pos`, the value and arrival of the tuple that closed the frame
    (window_closes); a tuple after it in (value, arrival) order cannot change the frame. Output: the
    partition key columns, then those. Chunk by chunk (walk_settled): a key that goes on into the next
    chunk carries its last final window's point so far, one row.
    """
    import numpy as np
    import pyarrow as pa

    def run(batches):
        carried = None  # the last key's point so far, one row
        for table, t, labels, after, done, key, _, goes_on, follower in walk_settled(batches, partitions, rule, point):
            rows = np.flatnonzero(done)
            ends = rows[np.r_[key[rows][1:] != key[rows][:-1], True]] if len(rows) else rows  # per key, its last
            if carried is not None:  # key 0 goes on from the chunk before
                if len(ends) and key[ends[0]] == 0:
                    carried = None  # a later final window of the key is here
                elif key[-1] != 0 or not goes_on:
                    yield carried  # the key ended in this chunk: its point is the one carried
                    carried = None
            if len(ends) == 0:
                continue
            stamp = table.schema.field("_t").type
            fields = [table.schema.field(name) for name in partitions]
            arrays = [table.column(name).take(pa.array(ends)) for name in partitions]
            if rule["cut"] == "session":
                heads = np.searchsorted(labels, labels[ends], side="left")  # labels rise along the walk
                fields.append(pa.field("_closed_t", stamp))
                arrays.append(pa.array(t[ends] + rule["gap"], type=stamp))
                if rule.get("longest") is not None:
                    fields.append(pa.field("_closed_from", stamp))
                    arrays.append(pa.array(t[heads] + rule["longest"], type=stamp))
            else:  # closed by its own last tuple (AGGREGATE) or by its key's next tuple
                own = table.column("_pos").to_numpy(zero_copy_only=False)
                aggregate = rule["cut"] == "aggregate"
                fields += [pa.field("_closed_t", stamp), pa.field("_closed_pos", pa.int64())]
                arrays.append(pa.array(t[ends] if aggregate else after[1][ends], type=stamp))
                arrays.append(pa.array(own[ends] if aggregate else follower[ends], type=pa.int64()))
            found = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
            if goes_on and key[ends[-1]] == key[-1]:  # the last key may have a later final window
                carried = found.slice(found.num_rows - 1)
                found = found.slice(0, found.num_rows - 1)
            if found.num_rows:
                yield found

    def batches_of(batches):
        for table in run(batches):
            yield from table.combine_chunks().to_batches()

    return batches_of


def split_long_sessions(t, starts, longest, anchor=None):
    """Session starts with a maximum length: a gap-session whose span reaches `longest` is cut at the
    first tuple at or past its first value + `longest`, again from there, and so on. With `anchor`,
    the tuples before the first start go on with a session (or its last part) that began at `anchor`
    in the chunk before."""
    import numpy as np

    heads = np.flatnonzero(starts)
    tails = np.r_[heads[1:], len(t)]
    long = t[tails - 1] >= t[heads] + longest  # the others fit whole
    cuts = list(zip(heads[long], tails[long], strict=True))
    if anchor is not None:
        tail = int(heads[0]) if len(heads) else len(t)
        at = int(np.searchsorted(t[:tail], anchor + longest, side="left"))  # the first cut of the session going on
        if at < tail:
            cuts.insert(0, (at, tail))
    for head, tail in cuts:
        at = head
        while at < tail:
            starts[at] = True
            at += int(np.searchsorted(t[at:tail], t[at] + longest, side="left"))
    return starts


def walk_runs(labels, key_end, opens, stays, inclusive, number=0, going=None, ended=None):
    """Number the runs of a chain rule in place, from `number` on; returns the next number. A run opens
    at a tuple `opens(i)` accepts and takes the following tuples of its key while `stays(i)(lo, hi)` (a
    vector over tuples lo..hi−1) holds; with `inclusive`, the first tuple where it holds is the run's
    last (aggregate frames), otherwise the first where it fails is outside the run (delta frames).
    Blocks double until they hold the end. `going`: the test of the run the chunk before left open
    (number − 1), which the first tuples go on with; `ended`, where given, marks the last tuple of each
    run that the test ended (inclusive), not the end of its key or of the chunk."""
    import numpy as np

    m = len(labels)
    at, size = 0, 32
    while at < m:
        if going is not None:  # the open run goes on from the chunk before: no tuple of it here yet
            test, label, lo, going = going, number - 1, 0, None
        elif not opens(at):
            at += 1
            continue
        else:
            test, label, lo = stays(at), number, at if inclusive else at + 1
            number += 1
        end = key_end[at]
        stop = end
        width = size
        while lo < end:
            hi = min(end, (at if inclusive else lo) + width)
            found = test(lo, hi)
            hit = np.flatnonzero(found if inclusive else ~found)
            if len(hit):
                stop = lo + int(hit[0]) + (1 if inclusive else 0)
                if ended is not None and inclusive:
                    ended[stop - 1] = True
                break
            if inclusive:
                lo = at  # running aggregates start again from the run's first tuple, over a longer block
                if hi == end:
                    break
            else:
                lo = hi
            width *= 2
        labels[at:stop] = label
        size = max(32, 2 * (stop - at))
        at = stop
    return number


def running_values(running, arguments, first, hi, initial=None):
    """The running aggregates `running` over tuples first..i, for i in first..hi−1, as [(value, known)],
    and their states after tuple hi−1 (count, values seen, sum or extreme), which a chunk's last open
    frame hands to the next chunk as `initial`: the sums go on in the same order, so every value is
    the one a single pass gives. SQL's NULLs (an aggregate of no value is NULL) and Spark's NaN
    (above every number)."""
    import numpy as np

    m = hi - first
    values, states = [], []
    for index, (function, name, integral) in enumerate(running):
        before = None if initial is None else initial[index]
        count = np.arange(1, m + 1) + (0 if before is None else before[0])
        if name is None:
            values.append((count, np.ones(m, dtype=bool)))
            states.append((count[-1], 0, 0))
            continue
        x, present = arguments[name]
        x, present = x[first:hi], present[first:hi]
        seen = np.cumsum(present) + (0 if before is None else before[1])
        if function == "count":
            values.append((seen, np.ones(m, dtype=bool)))
            states.append((count[-1], seen[-1], 0))
            continue
        if not integral or function == "avg":
            x = x.astype(np.float64)
        if function in ("sum", "avg"):
            share, step = np.where(present, x, 0), np.add
        elif function == "min":
            share, step = np.where(present, x, state_identity("min", np.int64 if integral else x.dtype)), np.fmin
        else:
            share, step = np.where(present, x, state_identity("max", np.int64 if integral else x.dtype)), np.maximum
        if before is None:
            value = step.accumulate(share)
        else:
            value = step.accumulate(np.concatenate((np.asarray([before[2]], dtype=share.dtype), share)))[1:]
        states.append((count[-1], seen[-1], value[-1]))
        values.append((value / np.maximum(seen, 1) if function == "avg" else value, seen > 0))
    return values, states


def running_test(test, running, arguments, first, hi, initial=None):
    """Where a FRAME AGGREGATE condition holds over the running aggregates of tuples first..i, for
    i in first..hi−1 (running_values, going on from `initial`): SQL's three values, NaN as Spark
    orders it."""
    import numpy as np

    values = running_values(running, arguments, first, hi, initial)[0]

    def truth(node):
        """(true, false) masks: SQL's three values, unknown where neither holds."""
        if node[0] == "and":
            (t1, f1), (t2, f2) = truth(node[1]), truth(node[2])
            return t1 & t2, f1 | f2
        if node[0] == "or":
            (t1, f1), (t2, f2) = truth(node[1]), truth(node[2])
            return t1 | t2, f1 & f2
        if node[0] == "not":
            t1, f1 = truth(node[1])
            return f1, t1
        _, op, index, constant = node
        value, known = values[index]
        nan = np.isnan(value) if value.dtype.kind == "f" else np.zeros(len(value), dtype=bool)
        with np.errstate(invalid="ignore"):
            compared = {
                "<": value < constant,
                "<=": value <= constant,
                ">": value > constant,
                ">=": value >= constant,
                "=": value == constant,
                "<>": value != constant,
            }[op]
        holds = np.where(nan, op in (">", ">=", "<>"), compared) & known
        return holds, known & ~holds

    return truth(test)[0]


def frame_labels(partitions, rule, closes=False):
    """A mapInArrow function over a partition in window order (in_window_order): the rows of sessions
    and frames, each with `_w`, the number of its window (rows in no window are left out), and with
    `closes` (a stream's frames) `_close` on each frame's last row: the value of the tuple that closed
    the frame (window_closes), NULL while none has, and on its other rows (the frame's maximum is its
    `_close`). Batch by batch (walk_sorted): holds two batches and the windows in flight."""
    import numpy as np
    import pyarrow as pa

    def run(batches):
        for table, t, labels, after, ended in walk_sorted(batches, partitions, rule):
            kept = np.flatnonzero(labels >= 0)
            if len(kept) == 0:
                continue
            numbers = labels[kept]
            labelled = table.take(pa.array(kept)).append_column("_w", pa.array(numbers, type=pa.int64()))
            if closes:
                closed, close = window_closes(rule, t, after, ended, kept)
                closed &= after[0][kept] != numbers  # on the frame's last row
                stamp = table.schema.field("_t").type
                labelled = labelled.append_column("_close", pa.array(close, mask=~closed, type=stamp))
            yield from labelled.combine_chunks().to_batches()

    return run


def window_closes(rule, t, after, ended, rows):
    """Whether the window whose last tuple is each of `rows` (walk_sorted's) is closed, and the value of
    the tuple that closed it: the tuple after it, if its key has one (THRESHOLD, DELTA), or its own
    last tuple, if the condition held there (AGGREGATE)."""
    if rule["cut"] == "aggregate":
        return ended[rows], t[rows]
    return after[2][rows], after[1][rows]


def frame_states(partitions, states, rule, minimum=None, minimum_rows=False, closes=False):
    """A mapInArrow function over a partition in window order (in_window_order): one row per session or
    frame with its partial states, folded in one numpy pass. Output: the partition keys, `wid` (the
    first tuple's `_t`), `_last` (the last tuple's), then the states, typed as their input columns (a
    count absent from the input is a row count). A tuple outside WHERE (`_in` false) shapes its window
    but adds nothing to it; a window with nothing in it, or shorter than `minimum` (rows, or a span of
    `_t`), is left out. With `closes` (a stream's frames), `_close` follows `_last`: the value of the
    tuple that closed the frame (window_closes), NULL while none has.

    Batch by batch (walk_sorted): each batch's windows are folded with numpy's reductions, the window
    still open at its end carried into the next batch as partial states (bounds, length, tuples inside
    WHERE, states: sums add, extremes compare, moments merge as Chan's formula), so the pass holds two
    batches and the windows in flight, never a key's tuples."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def run(batches):
        carry = None  # the window in flight: (first, last, size, held, {state column: value})
        for table, t, labels, after, ended in walk_sorted(batches, partitions, rule):
            members = np.flatnonzero(labels >= 0)
            if len(members) == 0:
                continue
            number = labels[members]
            heads = np.flatnonzero(np.r_[True, number[1:] != number[:-1]])
            lasts = members[np.r_[heads[1:] - 1, len(members) - 1]]  # each window's last row
            inside = np.ones(table.num_rows, dtype=bool)
            if "_in" in table.column_names:
                inside = pc.fill_null(table.column("_in"), False).to_numpy(zero_copy_only=False)
            stamps = t[members]
            first, last = np.minimum.reduceat(stamps, heads), np.maximum.reduceat(stamps, heads)
            size = np.diff(np.r_[heads, len(members)])
            held = np.add.reduceat(inside[members].astype(np.int64), heads)
            columns = {}
            for operation, names in states:
                shares = []
                for name in names:
                    if name not in table.column_names:  # a row count: each tuple inside WHERE contributes 1
                        shares.append(inside[members].astype(np.int64))
                        continue
                    values = table.column(name)
                    dtype = np.dtype(values.type.to_pandas_dtype())
                    filled = pc.fill_null(values, state_identity(operation, dtype)).to_numpy(zero_copy_only=False)
                    shares.append(np.where(inside[members], filled[members], state_identity(operation, dtype)))
                if operation == "sum":
                    columns[names[0]] = np.add.reduceat(shares[0], heads)
                elif operation == "min":
                    columns[names[0]] = (np.fmin if shares[0].dtype.kind == "f" else np.minimum).reduceat(
                        shares[0], heads
                    )
                elif operation == "max":
                    columns[names[0]] = np.maximum.reduceat(shares[0], heads)
                else:  # moments: count, mean and M2 of each window, two passes over its values
                    count, value, spread = shares
                    weight = np.where(count > 0, 1.0, 0.0)
                    value = np.where(count > 0, value, 0.0)
                    total = np.add.reduceat(count, heads)
                    mean = np.add.reduceat(weight * value, heads) / np.maximum(total, 1)
                    deviation = (value - np.repeat(mean, np.diff(np.r_[heads, len(members)]))) * weight
                    second = np.add.reduceat(deviation * deviation, heads) + np.add.reduceat(
                        np.where(count > 0, spread, 0.0), heads
                    )
                    columns.update(zip(names, (total, mean, second), strict=True))
            if carry is not None:  # the first window goes on from the batch before: merged into it
                first[0], last[0] = np.minimum(carry[0], first[0]), np.maximum(carry[1], last[0])
                size[0] += carry[2]
                held[0] += carry[3]
                merge_states(states, carry[4], columns)
            carry = None
            windows = len(heads)
            if after[0][-1] == labels[-1] >= 0:  # the last window goes on in the next batch
                windows -= 1
                carry = (first[-1], last[-1], size[-1], held[-1], {name: c[-1] for name, c in columns.items()})
            keep = held[:windows] > 0
            if minimum is not None:
                keep &= (size if minimum_rows else last - first)[:windows] >= minimum
            if not keep.any():
                continue
            picked = pa.array(members[heads[:windows][keep]])
            fields = [table.schema.field(name) for name in partitions]
            arrays = [table.column(name).take(picked).combine_chunks() for name in partitions]
            stamp = table.schema.field("_t").type
            fields += [pa.field("wid", stamp), pa.field("_last", stamp)]
            arrays += [pa.array(first[:windows][keep], type=stamp), pa.array(last[:windows][keep], type=stamp)]
            if closes:
                closed, close = window_closes(rule, t, after, ended, lasts[:windows][keep])
                fields.append(pa.field("_close", stamp))
                arrays.append(pa.array(close, mask=~closed, type=stamp))
            for _, names in states:
                for name in names:
                    field = table.schema.field(name) if name in table.column_names else pa.field(name, pa.int64())
                    fields.append(field)
                    arrays.append(pa.array(columns[name][:windows][keep], type=field.type))
            yield pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    return run


def merge_states(states, before, columns):
    """Fold the partial states `before` (a window's, from the batches before) into the first window of
    `columns` (frame_states'), in place, as the JVM kernel merges its chunks (States.merge): sums add,
    extremes compare (a floating minimum skips NaN, a maximum keeps it: Spark orders NaN above every
    number), moments merge with Chan's formula."""
    import numpy as np

    for operation, names in states:
        with np.errstate(invalid="ignore", over="ignore"):
            merged = state_combine(operation, [before[name] for name in names], [columns[name][0] for name in names])
        for name, value in zip(names, merged, strict=True):
            columns[name][0] = value


def frame_windows(rows, schema, partitions, states, rule, minimum=None, minimum_rows=False, closes=False):
    """Sessions and frames with their partial states: WQL's JVM kernel where it applies, else numpy over
    Arrow batches, with the same results.

    Each key's tuples go to one Spark partition (the whole stream to one without PATTR). The JVM
    kernel (wql-kernels.jar on Spark's classpath) folds every kind on an integral attribute: tuples
    cross the shuffle as columnar batches per key, and each key's windows are found and folded in
    one pass over arrays, with no Arrow round trip to Python; a partition past Spark's execution
    memory goes through Spark's spilling sorter and is walked in chunks, so one hot key needs no more
    memory than its windows in flight. It leaves a stream's frames (`closes`: each needs the tuple
    that closed it) and DOUBLE attributes to frame_states, one numpy pass over each partition sorted
    by Spark in window order (in_window_order; the sort spills), which folds the sorted batches one
    at a time: it holds two batches and the windows in flight, never a key's tuples either.
    """
    if not closes:
        operations, columns = jvm_states(states)
        request = {"kernel": "FrameWindows", "partitions": partitions, "operations": operations, "columns": columns}
        request.update(rule=rule, minimum=minimum, minimum_rows=minimum_rows, output=schema.json())
        windows = jvm_kernel(rows, request)
        if windows is not None:
            return windows
    fold = frame_states(partitions, states, rule, minimum, minimum_rows, closes)
    return in_window_order(rows, partitions).mapInArrow(fold, schema)
