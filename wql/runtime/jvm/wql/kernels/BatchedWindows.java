package wql.kernels;

import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;

/**
 * The windows of one partition's batches ({@link BatchedRequest}), every batch of its keys in it, in
 * any order: each key's tuples are copied into primitive columns ({@link KeyTuples}), the memory
 * they take accounted first with Spark's task memory manager ({@link TaskMemory}); then each key's
 * windows are computed from its columns (the kernel's own walk), its columns released, and its
 * windows emitted before the next key's are computed.
 *
 * <p>When Spark cannot grant the columns (or a key's windows' arrays, or {@link
 * BatchedRequest}'s memory limit is reached), the partition's tuples go through Spark's spilling
 * sorter instead ({@link SpillingTuples}): the tuples held in columns, then every batch still to
 * come, and the kernel's windows come from the sorted tuples.
 */
abstract class BatchedWindows implements Iterator<InternalRow> {
  private final Iterator<InternalRow> batches;
  final TupleWindows.Spec base;
  final States states;
  final TaskMemory memory; // null outside a Spark task
  final SorterMetrics metrics; // of the path past memory
  final WindowStates windows; // each window's first value (wids) and states
  private final KeyTemplates templates;
  private final Function<InternalRow, KeyTuples> newKey = this::newKey;
  private KeyIndex<KeyTuples> keys; // while the batches are read
  private List<KeyTuples> pending; // then each key, until its windows are computed
  private int nextKey; // the next key whose windows to compute
  private long tuples;
  int count; // the current key's (or chunk's) windows
  int at; // the next of them to look at
  UnsafeRow template; // the output row of the key whose windows are out
  private UnsafeRow out; // one row, refilled for each window: Spark's consumers copy what they keep
  private UnsafeRow outTemplate; // the template `out` holds the key columns of
  SpillingTuples sorted; // past memory: every tuple of the partition
  private boolean done;

  BatchedWindows(Iterator<InternalRow> batches, TupleWindows.Spec base, SorterMetrics metrics) {
    this.batches = batches;
    this.base = base;
    this.metrics = metrics;
    states = base.states;
    TaskMemory task = TaskMemory.ofTask(base.kind);
    memory = task == null ? null : task.limitedTo(base.memoryLimit);
    keys = new KeyIndex<>(base.batchKeys);
    templates = new KeyTemplates(base.batchKeys, base.output, base.keyOut);
    windows = new WindowStates(states.longs(), states.doubles(), memory);
  }

  /**
   * The key's windows into {@link #windows}: `count` of them, `at` the first; {@link
   * TaskMemory.Refused} when their arrays do not fit (the key's tuples and the rest then stream).
   */
  abstract void compute(KeyTuples key);

  /** Past memory: the sorter that takes every tuple of the partition. */
  abstract SpillingTuples sorter();

  /** Past memory: every tuple is in the sorter; the windows come from it from here on. */
  abstract void sorted();

  /** Past memory: the next windows from the sorter; false once none is left. */
  abstract boolean more();

  /** The row of the window at `at`, which moves past it. */
  abstract InternalRow window();

  /** Whether a window is ready to go: one of the current key's (or chunk's) that holds a row. */
  boolean ready() {
    for (; at < count; at++) {
      if (windows.longs[states.firstSlot][at] > 0) {
        return true; // a window holding no tuple (all outside WHERE) is left out
      }
    }
    return false;
  }

  @Override
  public final boolean hasNext() {
    if (done) {
      return false;
    }
    if (pending == null) {
      load();
    }
    while (!ready()) {
      if (sorted != null ? !more() : !computeNext()) {
        return finish();
      }
    }
    return true;
  }

  @Override
  public final InternalRow next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    return window();
  }

  /** The next key's windows computed (past memory, the rest of the tuples streamed); false once no key is left. */
  private boolean computeNext() {
    if (nextKey == pending.size()) {
      return false;
    }
    KeyTuples key = pending.get(nextKey);
    try {
      compute(key);
    } catch (TaskMemory.Refused e) { // its windows' arrays do not fit: this key and the rest stream
      count = 0;
      stream(pending.subList(nextKey, pending.size()), null, null);
      return true;
    }
    pending.set(nextKey++, null);
    release(key.drop()); // its columns are not needed once its windows are computed
    template = key.template;
    return true;
  }

  /** The partition's last window is out: its memory goes back to Spark. */
  private boolean finish() {
    done = true;
    if (memory != null) {
      memory.reportPeak(sorted == null ? 0 : sorted.peak());
      memory.releaseAll();
    }
    if (sorted != null) {
      metrics.spillSize.add(sorted.spillSize());
      sorted.close();
    }
    return false;
  }

  /**
   * Window `at`'s row: the key's template, the window's wid and its states; the kernel adds what
   * else its rows hold.
   */
  UnsafeRow row() {
    if (out == null) {
      out = template.copy();
    } else if (outTemplate != template) {
      out.copyFrom(template);
    }
    outTemplate = template;
    States.setIntegral(out, base.widOut, base.widWidth, windows.wids[at]);
    for (int s = 0; s < base.longOut.length; s++) {
      states.writeLong(out, base.longOut[s], s, windows.longs[s][at]);
    }
    for (int s = 0; s < base.doubleOut.length; s++) {
      states.writeDouble(out, base.doubleOut[s], s, windows.doubles[s][at]);
    }
    return out;
  }

  /**
   * Every batch of the partition into its key's columns, the memory they take accounted first; if
   * Spark cannot grant it, every tuple streams through the sorter instead.
   */
  private void load() {
    while (batches.hasNext()) {
      InternalRow batch = batches.next();
      KeyTuples key = keys.of(batch, newKey);
      int n = batch.getArray(base.batchValues).numElements();
      if (memory != null && !memory.tryReserve((long) key.growthFor(n) * key.tupleBytes)) {
        stream(keys.values(), key, batch); // the partition does not fit: every tuple streams
        return;
      }
      tuples += n;
      key.append(batch, base.batchValues, base.batchLongs, base.batchDoubles, base.batchExtras);
    }
    pending = keys.values();
    keys = null;
  }

  /**
   * From here on the partition's windows come from the sorter: the tuples `held` in columns, then
   * `batch` (of `key`) and every batch still to come, sorted through Spark's spilling sorter; the
   * columns' memory is released as they are copied out.
   */
  private void stream(List<KeyTuples> held, KeyTuples key, InternalRow batch) {
    sorted = sorter();
    for (KeyTuples k : held) {
      sorted.addColumns(k);
      release(k.drop());
    }
    if (batch != null) {
      sorted.addBatch(key, batch);
    }
    while (batches.hasNext()) {
      InternalRow next = batches.next();
      sorted.addBatch(keys.of(next, newKey), next);
    }
    pending = List.of();
    keys = null;
    metrics.tuples.add(sorted.tuples());
    sorted();
  }

  private KeyTuples newKey(InternalRow batch) {
    int id = keys.values().size(); // the key's number: KeyIndex adds it next
    KeyTuples key = new KeyTuples(templates.of(batch), base.storedLongs, states.doubles(), base.batchExtras.length, base.ties, id);
    if (memory != null) {
      memory.tryReserve((long) key.values.length * key.tupleBytes); // a few bytes: kept even if refused
    }
    return key;
  }

  void account(long bytes) {
    if (memory != null) {
      memory.reserve(bytes, tuples);
    }
  }

  void release(long bytes) {
    if (memory != null) {
      memory.release(bytes);
    }
  }
}
