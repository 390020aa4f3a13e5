"""The files engine: each trigger a batch job over its rows and the state the trigger before left in the
checkpoint's own files (docs/semantics.md §8.9); every query runs on it, in any Spark.

Copied into every streaming job. It implements the stream engine protocol (engine.py). Each trigger runs the
batch job's own stages (number, prepare, lift or shares, merge, windows, lower, finish) over the trigger's
admitted tuples merged with the state before, so that a streaming result equals the batch result by
construction, and one query plan serves both. The state is WQL's: parquet parts under CHECKPOINT/wql, named
after the trigger that wrote them, and the meta that names them (checkpoint.py).
"""

from typing import TYPE_CHECKING

from wql.compiler.kernels.engine import TriggerRun  # a job holds its own copy, beside this class

if TYPE_CHECKING:  # names the job defines, or other support code copied beside this (job.pyi)
    from wql.compiler.kernels.checkpoint import load_state, save_state
    from wql.compiler.kernels.engine import as_read, is_malformed, is_punctuation, late_rule, observed, trigger_counts
    from wql.compiler.kernels.faults import fault
    from wql.compiler.kernels.job import (
        STREAMING,
        anchors_seen,
        closed,
        closing,
        data_end,
        finish,
        is_final,
        lift,
        lower,
        merge,
        number,
        prepare,
        reached,
        replay,
        retain,
        shares,
        window_attribute,
        windows,
    )
    from wql.compiler.kernels.session_changes import changelog, vanished
    from wql.compiler.kernels.state_algebra import state_combine_columns


class FilesEngine(TriggerRun):
    """One trigger of the files engine. What its phases leave for the next: admit numbers the rows, counts them
    (for cell plans the count waits for keep, where one job builds the cells and counts) and gives the tuples
    that join windows in the plan's terms (`fresh`); keep merges them with the state before (`kept`, cached
    where it is read twice); close computes the windows and picks those the trigger emits, and the parts of
    the state it leaves."""

    name = "files"
    place = "WQL's own files"
    # What a trigger's phases set, as they find it (a trigger's own, on its instance).
    micro_cached = state_cached = unchanged = False
    rows = is_late = malformed = marked = counting = seen = None
    fresh = previous = kept = touched = open_windows = computed = None
    closings = counts_before = counts_after = anchors = None

    @classmethod
    def runs(cls, spark):
        return True

    @classmethod
    def owns(cls, meta):
        return meta.get("store") is None

    @classmethod
    def streamed(cls, spark, source):
        return source, {}

    @classmethod
    def drained(cls, spark, checkpoint, meta):
        """Every window the state holds that was not emitted before (none with EMIT CHANGES: every version is
        out already)."""
        from pyspark.sql import functions as F

        kept = load_state(spark, checkpoint, meta, "state")
        if kept is None or STREAMING["emit"] != "final":
            return None
        everything, before = windows_of(kept), meta["punctuation"]
        if STREAMING["positions"]:  # each partition's windows its row count had not closed
            counts = load_state(spark, checkpoint, meta, "positions")
            everything, before = with_points(everything, counts, counts), F.col("_before")
        chosen = everything if before is None else everything.where(~emitted_before(before, meta))
        return finish(chosen.drop("_before", "_after"))

    # ---------------------------------------------------------- admit

    def admit(self):
        """The rows numbered where the window counts arrivals, counted, and those that join windows."""
        self.numbered()
        self.count()
        self.admitted()

    def numbered(self):
        """The micro-batch's rows that are neither malformed nor punctuations, numbered where the window counts
        arrivals. The micro-batch is not cached: Spark's sources give the same rows for the same batch, and
        caching half a million rows costs more than reading them twice (cell plans read them once; see `keep`).
        Row numbers and first arrivals are the exception: they follow the rows' order, which one copy fixes."""
        self.micro_cached = holds_micro_batch()
        if self.micro_cached:
            self.micro = self.micro.persist()
        self.malformed, self.marked = is_malformed(self.micro), is_punctuation()
        rows = self.micro.where(~self.malformed & ~self.marked)
        first, meta, spark = self.meta["next_row"], self.meta, self.micro_spark
        self.counts_before = load_state(spark, self.checkpoint, meta, "positions")
        self.anchors = load_state(spark, self.checkpoint, meta, "anchors")
        if STREAMING["anchored"]:  # ALIGN FIRST: partitions seen before keep the first arrival they had
            rows = number(rows, first, self.counts_before, self.anchors)
        elif STREAMING["mode"] == "kafka":  # Kafka's stream time as each row arrives, from what triggers before saw
            rows = number(rows, first, self.counts_before, seen=meta["max_seen"])
        elif STREAMING["numbered"]:
            rows = number(rows, first, self.counts_before)
        self.rows = rows

    def count(self):
        """The micro-batch counted in one pass, and so the punctuation after the trigger, which the windows it
        emits and the state it leaves depend on. Numbered rows are counted after numbering (their attribute may
        be the row number)."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        micro, malformed, marked = self.micro, self.malformed, self.marked
        t = window_attribute(self.rows)
        self.is_late = late_rule(t, self.before)
        tuples = F.lit(True) if self.micro_cached else ~malformed & ~marked
        reach = None
        if STREAMING.get("reaches"):  # the data's end, over the tuples the windows take in (WHERE or not)
            joins = tuples if STREAMING["mode"] == "generous" else tuples & ~self.is_late
            reach = F.max(F.when(joins, data_end(self.rows)))
        statistics, signals = trigger_counts(t, tuples, self.is_late, malformed, ~malformed & marked, reach)
        self.counting = statistics + signals
        # Cell plans count it while they build the trigger's cells, the one job that reads the micro-batch
        # (an Observation): the cells do not depend on the punctuation after the trigger, only on the one
        # before (`counted_with_cells`).
        if counted_with_cells():
            self.seen = Observation(f"wql_trigger_{self.batch}")
            self.rows = micro.observe(self.seen, *self.counting).where(~malformed & ~marked)
        elif self.micro_cached:
            self.counted(self.rows.agg(*statistics).crossJoin(micro.agg(*signals)).first())
        else:
            self.counted(micro.agg(*self.counting).first())

    def counted(self, stats):
        """Also whether the trigger changes nothing: it admits no tuple and moves no punctuation, so it emits
        nothing, writes no state, and its meta names the state files the trigger before it left."""
        super().counted(stats)
        self.unchanged = self.after == self.before and (
            stats["rows"] == 0
            or (
                stats["rows"] == stats["late"]
                and STREAMING["mode"] == "consistent"
                and not STREAMING["positions"]
                and not STREAMING["anchored"]
            )
        )

    def admitted(self):
        """The tuples that join windows, in the plan's terms (cells, or rows): CONSISTENT leaves out the late
        ones; GENEROUS sessions and frames leave out those at or before their key's closing point."""
        from pyspark.sql import functions as F

        if STREAMING["positions"]:  # rows counted within each partition: each has its own punctuation
            added = self.rows.groupBy(*STREAMING["positions"]).agg(F.count(F.lit(1)).alias("_first"))
            counts = added if self.counts_before is None else self.counts_before.unionByName(added)
            self.counts_after = counts.groupBy(*STREAMING["positions"]).agg(F.sum("_first").alias("_first"))
        if STREAMING["closings"] is not None:
            # Sessions and frames, GENEROUS: a late tuple joins the windows only after the point its key's last
            # final window closes the key's history up to; at or before it (_closed), it is in no window.
            self.closings = load_state(self.micro_spark, self.checkpoint, self.meta, "closings")
            self.rows = closed(self.rows, self.closings)
            admitted = self.rows.where(~self.is_late | ~F.col("_closed"))
        else:
            # Kafka's rule: the replay decides which stored windows a late record joins (maybe none).
            admitted = self.rows if STREAMING["mode"] in ("generous", "kafka") else self.rows.where(~self.is_late)
        fresh = prepare(admitted)
        if STREAMING["keeps"] == "cells":
            fresh = shares(fresh).drop("_t") if STREAMING["shares"] else lift(fresh)
        self.fresh = fresh

    # ---------------------------------------------------------- keep

    def keep(self):
        """The state the trigger before left, merged with the trigger's own (cached where it is read twice);
        for cell plans the counts, and so the punctuation after the trigger, come here."""
        from pyspark.sql import functions as F

        # Sessions and frames per key (STREAMING["keyed"]): only the keys this trigger's tuples touch are
        # computed again; the others' open windows are the ones the trigger before computed, kept beside.
        keyed, fresh = STREAMING["keyed"], self.fresh
        if keyed:
            self.touched = fresh.select(*(F.col(f"`{c}`") for c in keyed)).distinct()
            self.open_windows = load_state(self.micro_spark, self.checkpoint, self.meta, "windows")
        self.previous = load_state(self.micro_spark, self.checkpoint, self.meta, "state")
        if self.previous is not None:
            fresh = self.previous.unionByName(fresh)
        if STREAMING["keeps"] == "cells":
            fresh = merge(fresh)
        elif STREAMING.get("replays"):  # Kafka's rule: the trigger's records through the store the kept ones hold
            fresh = replay(fresh)
        # What the trigger keeps is read at least twice (the windows it emits, the state it leaves). Cells,
        # and the rows of sessions and frames, are few: they are cached, and the micro-batch is read once
        # more, not twice. Rows of other windows (half a million a trigger) cost more to cache than to read
        # again.
        self.state_cached = (
            STREAMING["keeps"] == "cells"
            or bool(keyed)
            or STREAMING["closings"] is not None
            or bool(STREAMING.get("replays"))
        )
        if self.seen is None:
            self.kept = fresh.persist() if self.state_cached and not self.unchanged else fresh
            return
        # One job builds the cells, caches them and counts the micro-batch (a count of the cells is the
        # cheapest action that runs it); the punctuation it finds says which windows close and which cells
        # the state keeps, written beside the windows from the cached cells. Where Spark's optimizer dropped
        # the counting (the micro-batch is empty), it is counted apart, which is cheap.
        self.kept = fresh.persist()
        self.kept.count()
        self.counted(observed(self.seen, lambda: self.micro.agg(*self.counting).first()))

    # ---------------------------------------------------------- close

    def close(self):
        """The windows the trigger emits (final at the punctuation after it and not before, or with EMIT
        CHANGES every open window whose result changed), and the parts of the state it leaves."""
        if self.unchanged:
            return None, {}
        keyed, kept = STREAMING["keyed"], self.kept
        if self.open_windows is not None:
            computed = windows_of(same_keys(kept, self.touched, keyed, "left_semi"))
            computed = computed.unionByName(same_keys(self.open_windows, self.touched, keyed, "left_anti")).persist()
        else:
            computed = windows_of(kept).persist() if keyed else windows_of(kept)
        self.computed = computed
        before, _ = self.points()
        everything = with_points(computed, self.counts_before, self.counts_after)
        # GENEROUS sessions and frames: the state holds no window emitted before, and a late tuple admitted
        # after its key's closing point can make a window that is final at once: every final one goes out.
        already = None if before is None or STREAMING["closings"] is not None else emitted_before(before, self.meta)
        chosen, held, gone = self.chosen(everything, already)
        result = finish(chosen.drop("_before", "_after"))
        if STREAMING.get("retracts"):
            if held is None:  # the first trigger with tuples: every session is new
                result = changelog(result)
            else:
                result = changelog(result, finish(held), finish(gone))
        return result, self.state_parts()

    def points(self):
        """The punctuations before and after the trigger, as the windows and the state compare them: the
        stream's, or where each partition counts its own rows, each partition's counts (columns _before and
        _after, which with_points joins to its windows and rows)."""
        from pyspark.sql import functions as F

        if self.counts_after is not None:
            return F.col("_before"), F.col("_after")
        return self.before, self.after

    def chosen(self, everything, already):
        """The windows the trigger emits, and with EMIT CHANGES of sessions the versions emitted before that are
        still open (`held`) and those whose session is gone (`gone`)."""
        from pyspark.sql import functions as F

        if STREAMING["emit"] != "changes":
            _, after = self.points()
            closes = F.lit(False) if after is None else is_final(after)
            return everything.where(closes if already is None else closes & ~already), None, None
        # Every open window whose result differs from what the trigger before computed for it.
        chosen = everything if already is None else everything.where(~already)
        # The state is read again, not reused from `previous`: that relation is also below `chosen`, and a
        # kernel's node keeps its input's key attributes, which Spark cannot tell apart in exceptAll.
        earlier = None
        if self.previous is not None:
            earlier = load_state(self.micro_spark, self.checkpoint, self.meta, "state")
        if earlier is None:
            return chosen, None, None
        earlier = with_points(windows_of(earlier), self.counts_before, self.counts_after)
        earlier = earlier if already is None else earlier.where(~already)
        if STREAMING.get("retracts"):  # sessions: the versions whose session is gone are taken back
            return chosen, earlier, vanished(earlier, everything, STREAMING.get("retracts"))
        return chosen.exceptAll(earlier), None, None

    def state_parts(self):
        """What the next trigger starts from, by part, as (rows, whether one task writes them): the rows or
        cells that windows not yet final can still need ("state"); with PATTR, the open windows as computed
        ("windows"); for sessions and frames under GENEROUS slack, each key's closing point ("closings"). Each
        depends on the punctuation, not on the windows emitted, so each is written beside the emit."""
        keyed, kept, computed, touched = STREAMING["keyed"], self.kept, self.computed, self.touched
        _, after = self.points()
        if STREAMING["opened"] and after is not None:
            retained = from_open_windows(kept, computed if keyed else windows_of(kept), after, keyed)
        elif self.open_windows is not None:  # a key no tuple touched keeps its rows as they were until one does
            retained = retain(same_keys(kept, touched, keyed, "left_semi"), after)
            retained = retained.unionByName(same_keys(kept, touched, keyed, "left_anti"))
        else:
            retained = retain(with_points(kept, self.counts_before, self.counts_after), after)
            retained = retained.drop("_before", "_after")
        cells = STREAMING["keeps"] == "cells"
        if not cells and self.state_cached:
            # Rows of sessions and frames: few are kept, but they are picked from the whole trigger's rows, a
            # join that coalesce(1) would run in one task; gathered after it instead.
            retained = retained.repartition(1)
        parts = {"state": (retained, cells)}
        if keyed:
            parts["windows"] = (computed if after is None else computed.where(~is_final(after)), True)
        if STREAMING["closings"] is not None and after is not None:
            # Each key's closing point: the last final window's among its rows, else the one it had.
            points = closing(kept, after)
            if self.closings is not None:  # read once, when the trigger admitted its rows
                points = same_keys(self.closings, points, STREAMING["closings"], "left_anti").unionByName(points)
            parts["closings"] = (points, True)
        return parts

    # ---------------------------------------------------------- emit, set aside, commit, release

    def emit(self, sink):
        super().emit(sink)
        fault("state", self.batch)  # every part of the state written (or none: the trigger changes nothing)

    def rejected(self):
        rows = self.rows.where(self.is_late).unionByName(self.micro.where(self.malformed), allowMissingColumns=True)
        return rows, as_read(self.micro.columns)

    def recorded(self):
        """The state files the next trigger reads (a trigger that changes nothing names those of the trigger
        before it), with the row counts of partitions and first arrivals, written last."""
        meta, unchanged, saved, spark, checkpoint = self.meta, self.unchanged, self.saved, self.spark, self.checkpoint
        kept_positions = meta.get("positions")
        if self.counts_after is not None and not unchanged:
            kept_positions = save_state(spark, checkpoint, self.counts_after, "positions", self.batch)
        kept_anchors = meta.get("anchors")
        if STREAMING["anchored"] and not unchanged:
            seen = anchors_seen(self.rows, self.anchors)
            kept_anchors = save_state(spark, checkpoint, seen, "anchors", self.batch)
        return {
            "reach": self.reach,
            "state": meta["state"] if unchanged else saved.get("state"),
            "windows": meta.get("windows") if unchanged else saved.get("windows"),
            "closings": saved.get("closings", meta.get("closings")),
            "positions": kept_positions,
            "anchors": kept_anchors,
        }

    def state_rows(self, entries):
        return 0 if entries["state"] is None else entries["state"]["rows"]

    def release(self):
        if self.kept is not None:
            self.kept.unpersist()
        if self.computed is not None and STREAMING["keyed"]:
            self.computed.unpersist()
        if self.micro_cached:
            self.micro.unpersist()


def windows_of(rows):
    """The job's windows over rows or cells: its windows stage, lowered to aggregates where the plan lowers
    combined partial states in a stage of its own."""
    combined = windows(rows)
    return lower(combined) if STREAMING["lowered"] else combined


def emitted_before(before, meta):
    """Whether a window was emitted before the trigger: final at the punctuation it starts with and, where
    windows go only as far as the data, reached by the data then. A window the punctuation passed beyond the
    data's end (a punctuation row, or an interval event ending before its start, moves the punctuation and not
    the data's end) is final but not among the windows yet: it is emitted once the data reaches it."""
    final = is_final(before)
    if not STREAMING.get("reaches") or "reach" not in meta:  # a checkpoint older than the rule: as it was
        return final
    return final & reached(meta["reach"])


def counted_with_cells():
    """Whether a trigger counts its micro-batch in the job that builds its cells: cell plans whose cells
    depend only on the punctuation a trigger starts with (no row numbers or first arrivals, no closing
    points) build them, cache them and count the micro-batch in one job, before the punctuation after the
    trigger is known."""
    return STREAMING["keeps"] == "cells" and not holds_micro_batch() and STREAMING["closings"] is None


def holds_micro_batch():
    """Whether a trigger caches its micro-batch: row numbers and first arrivals follow the rows' order,
    which one copy fixes."""
    return STREAMING["numbered"] or STREAMING["anchored"] or bool(STREAMING["positions"])


def with_points(frame, before, after):
    """Partitioned row windows: each partition's punctuation, its row count before (_before) and after
    (_after) the trigger, joined to its windows or state; other windows have one punctuation for all."""
    from pyspark.sql import functions as F

    if after is None:
        return frame
    names, columns = STREAMING["positions"], STREAMING["partition_columns"]
    points = after.select(
        *(F.col(f"`{n}`").alias(c) for n, c in zip(names, columns, strict=True)), F.col("_first").alias("_after")
    )
    if before is not None:
        earlier = before.select(
            *(F.col(f"`{n}`").alias(c) for n, c in zip(names, columns, strict=True)), F.col("_first")
        )
        match = None
        for c in columns:
            same = F.col(f"p.`{c}`").eqNullSafe(F.col(f"b.`{c}`"))
            match = same if match is None else match & same
        points = (
            points.alias("p")
            .join(earlier.alias("b"), match, "left")
            .select(*(F.col(f"p.`{c}`") for c in columns), "_after", F.col("b._first").alias("_before"))
        )
    else:
        points = points.withColumn("_before", F.lit(None).cast("bigint"))
    points = points.withColumn("_before", F.coalesce("_before", F.lit(0)))
    match = None
    for c in columns:
        same = F.col(f"f.`{c}`").eqNullSafe(F.col(f"p.`{c}`"))
        match = same if match is None else match & same
    joined = frame.alias("f").join(F.broadcast(points.alias("p")), match, "left")
    return joined.select(*(F.col(f"f.`{c}`") for c in frame.columns), "_before", "_after")


def from_open_windows(rows, computed, punctuation, keys):
    """Plain sessions: each key's rows from its first session not final at `punctuation` on, read off the
    windows the trigger computed rather than found by walking the rows again in Python (retain): equal
    values are never in different sessions and every tuple is in one, so those rows are the open
    sessions' tuples. A key with no open session keeps none."""
    from pyspark.sql import functions as F

    # The keys under new names: the windows come from these rows, and a kernel's node keeps its input's key
    # attributes, which a join of the two could not tell apart.
    firsts = (
        computed.where(~is_final(punctuation))
        .groupBy(*(F.col(f"`{c}`").alias(f"_open_key_{i}") for i, c in enumerate(keys)))
        .agg(F.min("wid").alias("_open_from"))
    )
    match = F.lit(True)
    for i, c in enumerate(keys):
        match = match & F.col(f"wql_rows.`{c}`").eqNullSafe(F.col(f"wql_open._open_key_{i}"))
    joined = rows.alias("wql_rows").join(firsts.alias("wql_open"), match, "inner")
    return joined.where(F.col("wql_rows._t") >= F.col("wql_open._open_from")).select(
        *(F.col(f"wql_rows.`{c}`") for c in rows.columns)
    )


def same_keys(frame, keys, columns, how):
    """The rows of `frame` whose key (the named columns; NULL is a value too) is among `keys` ("left_semi")
    or is not ("left_anti")."""
    from pyspark.sql import functions as F

    match = None
    for c in columns:
        same = F.col(f"wql_rows.`{c}`").eqNullSafe(F.col(f"wql_keys.`{c}`"))
        match = same if match is None else match & same
    if match is None:  # no key columns: the whole stream is one key
        match = F.lit(True)
    joined = frame.alias("wql_rows").join(keys.alias("wql_keys"), match, how)
    return joined.select(*(F.col(f"wql_rows.`{c}`") for c in frame.columns))


def merged_moments(n, mean, m2):
    """Cells' moments (count, mean, M2) from several triggers merged with Chan's parallel formula, into one
    struct; in any order, as the combine kernels merge them."""
    from pyspark.sql import functions as F

    def chan(a, b):
        parts = ("n", "mean", "m2")
        merged = state_combine_columns("moments", [a[p] for p in parts], [b[p] for p in parts])
        return F.struct(*(column.alias(p) for column, p in zip(merged, parts, strict=True)))

    part = F.struct(
        F.col(n).cast("bigint").alias("n"),
        F.coalesce(F.col(mean), F.lit(0.0)).alias("mean"),
        F.coalesce(F.col(m2), F.lit(0.0)).alias("m2"),
    )
    empty = F.struct(F.lit(0).cast("bigint").alias("n"), F.lit(0.0).alias("mean"), F.lit(0.0).alias("m2"))
    return F.aggregate(F.collect_list(part), empty, chan)
