from wql.compiler.kernels.job_support import (  # a job holds its own copy, beside this function
    by_keys,
    jvm_kernel,
    jvm_states,
    key_ids,
    state_identity,
)


def frame_walk(table, partitions, rule):
    """The rows with a value in window order and the number of the session or frame each is in (-1 for
    none): (order, key, t, labels), where `order` indexes the table's rows and the rest follow it.

    Rows: the partition key columns, `_t` (the window attribute in base units), `_pos`
    (arrival position; absent for sessions, whose windows do not depend on the order of
    equal values), and what the rule reads: `_p` (THRESHOLD's predicate), `_x` (DELTA's
    x), `_c0`, `_c1`, … (the arguments of AGGREGATE's running aggregates). Each key's
    tuples are taken in (`_t`, `_pos`) order and cut into maximal runs (semantics.md §2):

    - "session": consecutive tuples at most `gap` apart; with `longest`, a tuple at or
      past the session's first value + `longest` starts a new one;
    - "threshold": runs where `_p` is true (false or NULL: in no frame);
    - "delta": runs whose `_x` stays within `delta` of the run's first `_x` (a NULL `_x`
      ends the run and is in none);
    - "aggregate": runs that end at the first tuple where `test` holds over the running
      aggregates `running` of the run so far (the key's last run may end without it).

    Numbers are unique within the table and increase along each key's order. A rule
    whose runs start where the previous run started (delta, aggregate, a session's
    maximum) is walked run by run, each run's end found by one vectorized search over a
    block of tuples that doubles until it holds the end.
    """
    import numpy as np
    import pyarrow.compute as pc

    n = table.num_rows
    kind = rule["kind"]

    def column(name, fill):
        values = table.column(name)
        present = pc.is_valid(values).to_numpy(zero_copy_only=False)
        return pc.fill_null(values, fill).to_numpy(zero_copy_only=False), present

    key = key_ids(table, partitions)
    t, valued = column("_t", 0)
    pos = column("_pos", 0)[0] if "_pos" in table.column_names else np.zeros(n, dtype=np.int64)
    order = np.lexsort((pos, t, key, ~valued))[: int(valued.sum())]  # rows with a NULL _t are in no window
    t, key = t[order], key[order]
    m = len(order)
    if m == 0:
        return order, key, t, np.zeros(0, dtype=np.int64)
    first = np.ones(m, dtype=bool)  # the first tuple of its key
    first[1:] = key[1:] != key[:-1]
    stops = np.flatnonzero(np.r_[first[1:], True]) + 1  # where each key's tuples end
    key_end = np.repeat(stops, np.diff(np.r_[0, stops]))
    labels = np.full(m, -1, dtype=np.int64)

    if kind == "session":
        starts = first.copy()
        starts[1:] |= (t[1:] - t[:-1]) > rule["gap"]
        if rule.get("longest") is not None:
            starts = split_long_sessions(t, starts, rule["longest"])
        labels = np.cumsum(starts) - 1
    elif kind == "threshold":
        holds, present = column("_p", False)
        holds = (holds & present)[order]
        starts = holds.copy()
        starts[1:] &= ~holds[:-1] | first[1:]
        labels = np.where(holds, np.cumsum(starts) - 1, -1)
    elif kind == "delta":
        x, present = column("_x", 0)
        x, present = x[order], present[order]
        delta = rule["delta"]
        if x.dtype.kind in "iu":
            delta = int(np.floor(delta))  # integers within a fractional delta: within its floor, exactly
            if len(x) and int(np.abs(x).max()) >= 2**62:
                x = x.astype(object)  # Python integers: differences that cannot overflow

        def joins(lo, hi, anchor):
            block = x[lo:hi]
            return present[lo:hi] & ((block == anchor) | (np.abs(block - anchor) <= delta))

        walk_runs(labels, key_end, lambda i: present[i], lambda i: lambda lo, hi: joins(lo, hi, x[i]), inclusive=False)
    elif kind == "aggregate":
        arguments = running_arguments(table, rule, order)

        def ends(i):
            def holds(lo, hi):
                return running_test(rule["test"], rule["running"], arguments, i, hi)

            return holds

        walk_runs(labels, key_end, lambda i: True, ends, inclusive=True)
    else:
        raise ValueError(f"unknown frame rule {kind!r}")
    return order, key, t, labels


def walk_batches(batches, partitions, rule):
    """One Spark partition's Arrow batches as a table, walked by frame_walk: (table, order, key, t,
    numbers in window order, each row's number in table order (-1: none)); None without rows."""
    import numpy as np
    import pyarrow as pa

    batches = list(batches)
    if not batches or sum(b.num_rows for b in batches) == 0:
        return None
    table = pa.Table.from_batches(batches)
    order, key, t, numbered = frame_walk(table, partitions, rule)
    labels = np.full(table.num_rows, -1, dtype=np.int64)
    labels[order] = numbered
    return table, order, key, t, numbered, labels


def running_arguments(table, rule, order):
    """AGGREGATE's running-aggregate arguments in window order: {column: (values, present)}."""
    import pyarrow.compute as pc

    arguments = {}
    for _, name, _ in rule["running"]:
        if name is not None and name not in arguments:
            values = table.column(name)
            present = pc.is_valid(values).to_numpy(zero_copy_only=False)
            values = pc.fill_null(values, 0).to_numpy(zero_copy_only=False)
            arguments[name] = (values[order], present[order])
    return arguments


def frame_closes(table, rule, order, key, t, labels):
    """Which frames a tuple has closed, and that tuple's _t, by frame number (frame_walk's outputs).

    A frame is closed by the tuple after it (THRESHOLD: the one where the predicate fails; DELTA: the
    next frame's first, or a NULL x) or, for AGGREGATE, by its own last tuple, the one where the
    condition held. Every tuple before the closing one is known once the punctuation is past it (a
    tuple still to come has a value at or past the punctuation), so on a stream the frame is final
    then (semantics.md §8.4). A key's last frame may not be closed yet.
    """
    import numpy as np

    runs = int(labels.max()) + 1 if len(labels) else 0
    closed = np.zeros(runs, dtype=bool)
    close = np.zeros(runs, dtype=t.dtype)
    members = np.flatnonzero(labels >= 0)
    if len(members) == 0:
        return closed, close
    change = labels[members][1:] != labels[members][:-1]
    heads, ends = members[np.r_[True, change]], members[np.r_[change, True]]
    number = labels[ends]
    following = np.minimum(ends + 1, len(t) - 1)
    after = (ends + 1 < len(t)) & (key[following] == key[ends])  # a tuple of the same key follows the frame
    if rule["kind"] == "aggregate":
        held = after.copy()
        if not held.all():
            arguments = running_arguments(table, rule, order)
            for i in np.flatnonzero(~held):  # a key's last frame: closed if the condition held at its last tuple
                held[i] = bool(running_test(rule["test"], rule["running"], arguments, heads[i], ends[i] + 1)[-1])
        closed[number], close[number] = held, t[ends]
    else:
        closed[number], close[number] = after, t[following]
    return closed, close


def walk_final(batches, partitions, rule, point):
    """One Spark partition's rows walked (walk_batches) with which of them, in window order, are in a
    run that is final at punctuation `point` (semantics.md §8.4): (table, order, key, t, labels, done);
    None without rows.

    A session is final once `point` is past its last value + gap (or at its first value + longest);
    a frame once `point` is past the tuple that closed it (frame_closes). The final runs of a key
    come first in its order: every tuple still to come sorts after them.
    """
    import numpy as np

    walked = walk_batches(batches, partitions, rule)
    if walked is None or len(walked[1]) == 0:
        return None
    table, order, key, t, labels, _ = walked
    members = np.flatnonzero(labels >= 0)
    runs = int(labels.max()) + 1 if len(members) else 0
    if rule["kind"] == "session":
        change = labels[members][1:] != labels[members][:-1]
        heads, ends = members[np.r_[True, change]], members[np.r_[change, True]]
        first = np.zeros(runs, dtype=t.dtype)
        last = np.zeros(runs, dtype=t.dtype)
        first[labels[heads]], last[labels[ends]] = t[heads], t[ends]
        final = point > last + rule["gap"]
        if rule.get("longest") is not None:
            final |= point >= first + rule["longest"]
    else:
        closed, close = frame_closes(table, rule, order, key, t, labels)
        final = closed & (close < point)
    done = (labels >= 0) & (final[np.maximum(labels, 0)] if runs else False)
    return table, order, key, t, labels, done


def frame_pending(partitions, rule, point, generous=False):
    """A mapInArrow function for a stream's state: the rows of each key from its first session or frame
    that is not final at punctuation `point` on (semantics.md §8.4), every row after it included.

    The final windows of a key come first in its order (walk_final), and every tuple still to come
    sorts after them, so the rows kept begin where a window begins and the batch job's own `windows`
    stage, run again over them and the next trigger's rows, finds the same windows as over the whole
    stream. A row in no frame (a false predicate, a NULL x) below `point` and before the first open
    frame is dropped too, unless `generous` (SLACK … GENEROUS, §8.5): then every row after the key's
    last final window is kept, since a late tuple admitted there (frame_closings) is placed among
    them exactly, and a row in no frame can be what separates it from an open frame. All rows of a
    key must be in one Spark partition.
    """
    import numpy as np
    import pyarrow as pa

    def run(batches):
        walked = walk_final(batches, partitions, rule, point)
        if walked is None:
            return
        table, order, key, t, labels, done = walked
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        sizes = np.diff(np.r_[starts, len(key)])
        if generous:  # after the last row of the key's last final window
            seen = np.cumsum(done)
            kept = order[(seen == np.repeat(seen[starts + sizes - 1], sizes)) & ~done]
        else:  # from the key's first row that is not settled on
            settled = np.where(labels >= 0, done, t < point)
            opened = np.cumsum(~settled)
            kept = order[opened - np.repeat(np.r_[0, opened][starts], sizes) > 0]
        if len(kept) == 0:
            return
        yield from table.take(pa.array(kept)).combine_chunks().to_batches()

    return run


def frame_closings(partitions, rule, point):
    """A mapInArrow function for SLACK … GENEROUS (semantics.md §8.5): per key whose rows hold a window
    final at punctuation `point`, the point that the last such window closes the key's history up to.
    A late tuple after it is placed exactly, as if on time; one at or before it is in no window.

    Sessions: `_closed_t`, the last value + gap (a tuple above it cannot join the session) and, with
    `longest`, `_closed_from`, the first value + longest (a tuple there starts a session of its own).
    Frames: `_closed_t` and `_closed_pos`, the value and arrival of the tuple that closed the frame
    (frame_closes); a tuple after it in (value, arrival) order cannot change the frame. Output: the
    partition key columns, then those. All rows of a key must be in one Spark partition.
    """
    import numpy as np
    import pyarrow as pa

    def run(batches):
        walked = walk_final(batches, partitions, rule, point)
        if walked is None:
            return
        table, order, key, t, labels, done = walked
        done = np.flatnonzero(done)
        if len(done) == 0:
            return
        ends = done[np.r_[key[done][1:] != key[done][:-1], True]]  # each key's last row in a final window
        stamp = table.schema.field("_t").type
        fields = [table.schema.field(name) for name in partitions]
        arrays = [table.column(name).take(pa.array(order[ends])).combine_chunks() for name in partitions]
        if rule["kind"] == "session":
            heads = np.searchsorted(labels, labels[ends], side="left")  # labels rise along the walk
            fields.append(pa.field("_closed_t", stamp))
            arrays.append(pa.array(t[ends] + rule["gap"], type=stamp))
            if rule.get("longest") is not None:
                fields.append(pa.field("_closed_from", stamp))
                arrays.append(pa.array(t[heads] + rule["longest"], type=stamp))
        else:
            closer = ends if rule["kind"] == "aggregate" else ends + 1  # closed: a tuple of the key follows
            fields += [pa.field("_closed_t", stamp), pa.field("_closed_pos", pa.int64())]
            arrays.append(pa.array(t[closer], type=stamp))
            arrays.append(pa.array(table.column("_pos").to_numpy(zero_copy_only=False)[order[closer]], type=pa.int64()))
        yield pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    return run


def split_long_sessions(t, starts, longest):
    """Session starts with a maximum length: a gap-session whose span reaches `longest` is cut at the
    first tuple at or past its first value + `longest`, again from there, and so on."""
    import numpy as np

    heads = np.flatnonzero(starts)
    tails = np.r_[heads[1:], len(t)]
    long = t[tails - 1] >= t[heads] + longest  # the others fit whole
    for head, tail in zip(heads[long], tails[long], strict=True):
        at = head
        while at < tail:
            starts[at] = True
            at += int(np.searchsorted(t[at:tail], t[at] + longest, side="left"))
    return starts


def walk_runs(labels, key_end, opens, stays, inclusive):
    """Number the runs of a chain rule in place: a run opens at a tuple `opens(i)` accepts and takes the
    following tuples of its key while `stays(i)(lo, hi)` (a vector over tuples lo..hi−1) holds; with
    `inclusive`, the first tuple where it holds is the run's last (aggregate frames), otherwise the
    first where it fails is outside the run (delta frames). Blocks double until they hold the end."""
    import numpy as np

    m = len(labels)
    at, number, size = 0, 0, 32
    while at < m:
        if not opens(at):
            at += 1
            continue
        end = key_end[at]
        test = stays(at)
        lo = at if inclusive else at + 1
        stop = end
        width = size
        while lo < end:
            hi = min(end, (at if inclusive else lo) + width)
            found = test(lo, hi)
            hit = np.flatnonzero(found if inclusive else ~found)
            if len(hit):
                stop = lo + int(hit[0]) + (1 if inclusive else 0)
                break
            if inclusive:
                lo = at  # running aggregates start again from the run's first tuple, over a longer block
                if hi == end:
                    break
            else:
                lo = hi
            width *= 2
        labels[at:stop] = number
        number += 1
        size = max(32, 2 * (stop - at))
        at = stop


def running_test(test, running, arguments, first, hi):
    """Where a FRAME AGGREGATE condition holds over the running aggregates of tuples first..i, for
    i in first..hi−1: SQL's NULLs (an aggregate of no value is NULL, and so is a comparison with it)
    and Spark's NaN (equal to itself, above every number)."""
    import numpy as np

    count = np.arange(1, hi - first + 1)
    values = []
    for function, name, integral in running:
        if name is None:
            values.append((count, np.ones(len(count), dtype=bool)))
            continue
        x, present = arguments[name]
        x, present = x[first:hi], present[first:hi]
        seen = np.cumsum(present)
        if function == "count":
            values.append((seen, np.ones(len(count), dtype=bool)))
            continue
        if not integral or function == "avg":
            x = x.astype(np.float64)
        if function in ("sum", "avg"):
            total = np.cumsum(np.where(present, x, 0))
            value = total / np.maximum(seen, 1) if function == "avg" else total
        elif function == "min":
            value = (np.minimum if integral else np.fmin).accumulate(
                np.where(present, x, np.iinfo(np.int64).max if integral else np.nan)
            )
        else:
            value = np.maximum.accumulate(np.where(present, x, np.iinfo(np.int64).min if integral else -np.inf))
        values.append((value, seen > 0))

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
    """A mapInArrow function: the rows of sessions and frames, each with `_w`, the number of its window
    (rows in no window are left out), and with `closes` (a stream's frames) `_close`, the value of the
    tuple that closed its frame (frame_closes), NULL while none has. All rows of a key must be in one
    Spark partition."""
    import numpy as np
    import pyarrow as pa

    def run(batches):
        walked = walk_batches(batches, partitions, rule)
        if walked is None:
            return
        table, order, key, t, numbered, labels = walked
        kept = np.flatnonzero(labels >= 0)
        if len(kept) == 0:
            return
        numbers = labels[kept]
        labelled = table.take(pa.array(kept)).append_column("_w", pa.array(numbers, type=pa.int64()))
        if closes:
            closed, close = frame_closes(table, rule, order, key, t, numbered)
            stamp = table.schema.field("_t").type
            labelled = labelled.append_column("_close", pa.array(close[numbers], mask=~closed[numbers], type=stamp))
        yield from labelled.combine_chunks().to_batches()

    return run


def frame_states(partitions, states, rule, minimum=None, minimum_rows=False, closes=False):
    """A mapInArrow function: one row per session or frame with its partial states, folded in
    one numpy pass. Output: the partition keys, `wid` (the first tuple's `_t`), `_last` (the last
    tuple's), then the states, typed as their input columns (a count absent from the input is a row
    count). A tuple outside WHERE (`_in` false) shapes its window but adds nothing to it; a window with
    nothing in it, or shorter than `minimum` (rows, or a span of `_t`), is left out. With `closes` (a
    stream's frames), `_close` follows `_last`: the value of the tuple that closed the frame
    (frame_closes), NULL while none has."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def run(batches):
        walked = walk_batches(batches, partitions, rule)
        if walked is None:
            return
        table, order, key, t, numbered, labels = walked
        inside = np.ones(table.num_rows, dtype=bool)
        if "_in" in table.column_names:
            inside = pc.fill_null(table.column("_in"), False).to_numpy(zero_copy_only=False)
        members = np.flatnonzero(labels >= 0)
        members = members[np.argsort(labels[members], kind="stable")]
        if len(members) == 0:
            return
        number = labels[members]
        heads = np.flatnonzero(np.r_[True, number[1:] != number[:-1]])
        stamps = table.column("_t").to_numpy(zero_copy_only=False)[members]  # frame by frame; t stays in walk order
        first, last = np.minimum.reduceat(stamps, heads), np.maximum.reduceat(stamps, heads)
        size = np.diff(np.r_[heads, len(members)])
        held = np.add.reduceat(inside[members].astype(np.int64), heads)
        keep = held > 0
        if minimum is not None:
            keep &= (size if minimum_rows else last - first) >= minimum
        columns = {}
        for operation, names in states:
            shares = []
            for name in names:
                if name not in table.column_names:  # a row count: each tuple inside WHERE contributes 1
                    shares.append(inside[members].astype(np.int64))
                    continue
                values = table.column(name)
                dtype = np.dtype(values.type.to_pandas_dtype())
                filled = pc.fill_null(values, state_identity(operation, dtype)).to_numpy(zero_copy_only=False)[members]
                shares.append(np.where(inside[members], filled, state_identity(operation, dtype)))
            if operation == "sum":
                columns[names[0]] = np.add.reduceat(shares[0], heads)
            elif operation == "min":
                columns[names[0]] = (np.fmin if shares[0].dtype.kind == "f" else np.minimum).reduceat(shares[0], heads)
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
        picked = pa.array(members[heads[keep]])
        fields = [table.schema.field(name) for name in partitions]
        arrays = [table.column(name).take(picked).combine_chunks() for name in partitions]
        stamp = table.schema.field("_t").type
        fields += [pa.field("wid", stamp), pa.field("_last", stamp)]
        arrays += [pa.array(first[keep], type=stamp), pa.array(last[keep], type=stamp)]
        if closes:
            closed, close = frame_closes(table, rule, order, key, t, numbered)
            numbers = number[heads[keep]]
            fields.append(pa.field("_close", stamp))
            arrays.append(pa.array(close[numbers], mask=~closed[numbers], type=stamp))
        for _, names in states:
            for name in names:
                field = table.schema.field(name) if name in table.column_names else pa.field(name, pa.int64())
                fields.append(field)
                arrays.append(pa.array(columns[name][keep], type=field.type))
        yield pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    return run


def frame_windows(rows, schema, partitions, states, rule, minimum=None, minimum_rows=False, closes=False):
    """Sessions and frames with their partial states: WQL's JVM kernel where it applies, else numpy over
    Arrow batches, with the same results.

    Each key's tuples go to one Spark partition (the whole stream to one without PATTR). The JVM
    kernel (wql-kernels.jar on Spark's classpath) folds every kind on an integral attribute: tuples
    cross the shuffle as columnar batches per key, and each key's windows are found and folded in
    one pass over arrays, with no Arrow round trip to Python; a partition past Spark's execution
    memory goes through Spark's spilling sorter and is walked in chunks, so one hot key needs no more
    memory than its windows in flight. It leaves a stream's frames (`closes`: each needs the tuple
    that closed it) and DOUBLE attributes to frame_states, one numpy pass, which holds each Spark
    partition's tuples at once (one Arrow table, ordered as a whole).
    """
    if not closes:
        operations, columns = jvm_states(states)
        request = {"kernel": "FrameWindows", "partitions": partitions, "operations": operations, "columns": columns}
        request.update(rule=rule, minimum=minimum, minimum_rows=minimum_rows, output=schema.json())
        windows = jvm_kernel(rows, request)
        if windows is not None:
            return windows
    fold = frame_states(partitions, states, rule, minimum, minimum_rows, closes)
    return by_keys(rows, partitions).mapInArrow(fold, schema)
