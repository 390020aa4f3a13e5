"""Kafka's late-record rule (`SLACK g KAFKA`): each key's records replayed through Kafka's window store.

Copied verbatim into jobs that use it (it imports nothing of WQL at run time).

Under Kafka's rule a window's records are not a range of the attribute: a record later than the grace
joins only the windows stored when it arrives that are still open, and windows created later copy
windows that may or may not hold it (docs/semantics.md §8.13). So the job replays each key's records in
arrival order through the store KStreamSlidingWindowAggregate keeps, and writes down, for every record,
the starts of the windows it ends up in (`_wins`). A window is then its records' aggregate.

On a stream the records kept from earlier triggers carry their `_wins`: together they are the store
(every stored window holds at least one record), and the trigger's records (`_wins` NULL) are replayed
after them. The kept records are every record of a window a later record can still reach.
"""


def stream_time(rows, attribute, seen=None, order="row_num"):
    """_seen: Kafka's observed stream time as each record arrives, the largest window attribute of the
    records up to it in arrival order (`order`), across keys, from `seen` (what earlier triggers saw).
    `attribute` is NULL for a record Kafka never sees (no timestamp, or filtered out by WHERE)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # One ordered pass over the rows: stream time is one running maximum over every key.
    running = F.max(attribute).over(Window.orderBy(F.col(f"`{order}`")).rowsBetween(Window.unboundedPreceding, 0))
    if seen is not None:
        running = F.greatest(running, F.lit(seen))  # greatest skips NULL: a first record without one
    return rows.withColumn("_seen", running)


def kafka_store(rows, partitions, size, tick, grace):
    """`rows` with `_wins` set for every record whose `_wins` is NULL: the starts of the windows it is in
    after every record of its key has gone through Kafka's store, in arrival order (`_row`). Records of
    earlier triggers (with `_wins`) rebuild the store first; what they hold can grow too."""
    from pyspark.sql import functions as F

    def replay(frame):
        return replay_key(frame, size, tick, grace)

    if partitions:
        return rows.groupBy(*(F.col(f"`{p}`") for p in partitions)).applyInPandas(replay, rows.schema)

    def whole(batches):  # no PATTR: one key, one store, so one task gathers every record
        import pandas as pd

        frames = list(batches)
        if frames:
            yield replay(pd.concat(frames, ignore_index=True))

    return rows.repartition(1).mapInPandas(whole, rows.schema)


def replay_key(frame, size, tick, grace):
    """One key's records (a pandas frame) through Kafka's store; the frame with every record's `_wins`.

    The store maps each window's start to its records (by position) and their largest timestamp, Kafka's
    window timestamp. A record at t arriving at close time c (stream time less the grace):
    - is dropped if its last possible window [t, t + size] ends before c;
    - joins every stored window near it that holds it and is still open (end >= c);
    - creates, where missing: the previous record's right window with only itself, its own left window
      [t - size, t] (a copy of the window just before it, plus itself), both only while open, and its own
      right window [t + tick, t + tick + size] (a copy of the first window holding it, without itself).
    Records before `size` share Kafka's one early window [0, size] instead of left windows."""
    import pandas as pd

    frame = frame.sort_values("_row", kind="stable").reset_index(drop=True)
    # pandas holds a column of integers with NULLs as floats (NaN): exact, as base units are below 2^53.
    times = [None if pd.isna(v) else int(v) for v in frame["_t"].tolist()]
    seens = [None if pd.isna(v) else int(v) for v in frame["_seen"].tolist()]
    held = frame["_wins"].tolist()
    store = KafkaWindowStore(times, size, tick)
    for i in store.rebuilt(held):
        t = times[i]
        if t is None or seens[i] is None:
            continue
        close = seens[i] - grace
        if t + size < close:
            continue
        if 0 <= t < size:  # Kafka's early records: the combined window [0, size]
            store.place_early(i, close)
        else:
            store.place(i, close)
    frame["_wins"] = store.windows_of_records(len(held))
    return frame


class KafkaWindowStore:
    """One key's windows as Kafka's KStreamSlidingWindowAggregate stores them while its records go through in
    arrival order: each window's start, its records (by position in the key's frame, `times` their
    timestamps) and their largest timestamp."""

    def __init__(self, times, size, tick):
        self.times, self.size, self.tick = times, size, tick
        self.store = {}  # start -> set of record positions
        self.newest = {}  # start -> the largest timestamp among them
        self.starts = []  # the stored starts, sorted

    def rebuilt(self, held):
        """The store the records of earlier triggers hold (their `_wins`, in `held`); the positions of the
        trigger's own records (no `_wins` yet), to place in order."""
        fresh = []
        for i, wins in enumerate(held):
            if wins is None:
                fresh.append(i)
                continue
            for start in wins:
                self.store.setdefault(int(start), set()).add(i)
        for start in sorted(self.store):
            self.starts.append(start)
            self.newest[start] = max(self.times[i] for i in self.store[start])
        return fresh

    def add(self, start, members):
        import bisect

        if start not in self.store:
            bisect.insort(self.starts, start)
        self.store[start] = members
        self.newest[start] = max(self.times[i] for i in members)

    def put(self, start, base, i, close):
        """Create a window from `base` plus record i, or add i to the stored one (in place: a record joins
        many windows, and copying each would cost their sizes); a closed window is neither."""
        if start + self.size < close:
            return
        if start in self.store and base is self.store[start]:
            self.store[start].add(i)
            self.newest[start] = max(self.newest[start], self.times[i])
        else:
            self.add(start, set(base) | {i})

    def near(self, lo, hi):
        import bisect

        return self.starts[bisect.bisect_left(self.starts, lo) : bisect.bisect_right(self.starts, hi)]

    def place_early(self, i, close):
        """Record i, earlier than `size`: it joins Kafka's one early window [0, size] and the stored windows
        after it that hold it, and makes its right window and the previous record's."""
        store, newest, t, tick = self.store, self.newest, self.times[i], self.tick
        seen, right, right_made, previous, combined = set(), None, False, None, False
        for start in self.near(0, t + tick):
            seen.add(start)
            if start == 0:
                combined = True
                if newest[0] < t:
                    previous = newest[0]
            elif start <= t:
                right = set(store[start])
                self.put(start, store[start], i, close)
            elif start == t + tick:
                right_made = True
        if right is None and combined and newest[0] > t:
            right = set(store[0])
        if not right_made and right and max(self.times[j] for j in right) > t:
            self.add(t + tick, right)
        if previous is not None and previous + tick not in seen:
            self.put(previous + tick, (), i, close)
        self.put(0, store.get(0, ()), i, close)  # the stored set itself when there is one

    def place(self, i, close):
        """Record i: it joins the stored windows near it that hold it, and makes its left and right windows and
        the previous record's right window where they are missing."""
        store, newest, t, size, tick = self.store, self.newest, self.times[i], self.size, self.tick
        seen, right, right_made, previous, left, left_made = set(), None, False, None, None, False
        for start in reversed(self.near(t - 2 * size, t + tick)):
            seen.add(start)
            end = start + size
            if start == t + tick:
                right_made = True
            elif end > t:
                if right is None:
                    right = set(store[start])
                self.put(start, store[start], i, close)
            elif end == t:  # its own left window exists
                left_made = True
                highest = newest[start]
                self.put(start, store[start], i, close)
                if highest >= t:  # a record at t came first: every window it needs exists
                    return
                previous = highest
            else:
                left, previous = store[start], newest[start]
                break
        if previous is not None and previous + tick not in seen and previous + tick + size >= t:
            self.put(previous + tick, (), i, close)
        if not left_made:
            base = left if left is not None and t - size <= previous else ()
            self.put(t - size, base, i, close)
        if not right_made and right and max(self.times[j] for j in right) > t:
            self.add(t + tick, right)

    def windows_of_records(self, count):
        """Every record's window starts, by position."""
        wins = [[] for _ in range(count)]
        for start in self.starts:
            for i in self.store[start]:
                wins[i].append(start)
        return wins
