package wql.kernels;

import java.util.function.Supplier;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.util.collection.unsafe.sort.RecordComparator;
import org.apache.spark.util.collection.unsafe.sort.UnsafeSorterIterator;

/**
 * The frames kernel ({@link FrameWindows}) in memory bounded by a chunk and the window in flight, for
 * a partition whose tuples do not fit in Spark's execution memory (one hot key, say). Every tuple goes
 * through Spark's external sorter, which spills sorted runs to disk and merges them, ordered by (key,
 * {@code _t}, the tie column, arrival); the sorted tuples then come back one key after another, in
 * chunks of at most a fixed number of tuples in the columns of a {@link KeyTuples}, which the kernel
 * walks as it walks a key's arrays in memory, carrying a window still open at a chunk's end into the
 * next chunk. Memory: the sorter's pages (Spark's to spill), one chunk and the windows it closes.
 *
 * <p>A record is 8-byte fields: {@code _t}, the tuple's arrival in this partition, the batches' extras
 * (arrival {@code _pos}, the rule's columns), the stored integral states, the floating ones; the key's
 * number is its sort prefix, which the sorter keeps beside it. Arrival breaks the ties the in-memory
 * order leaves to arrival too ({@link ValueOrder} is stable): a session's equal values, equal {@code
 * _pos}. Tuples in memory before this pass took over are added first, in their columns' order, so each
 * key's tuples keep the order they arrived in and both paths fold the same tuples in the same order:
 * the same states, to the bit.
 *
 * <p>Records of one key share a prefix and are ordered by a comparison of their fields (Spark's radix
 * sort orders by the prefix alone): its TimSort merges the ordered runs a time series arrives in.
 * Slower than the pass over arrays (every tuple sorted and copied twice), so {@link FrameWindows} takes
 * this path only when a reservation for its arrays fails.
 */
final class SortedFrames extends SpillingTuples {
  private UnsafeSorterIterator sorted;
  private boolean loaded; // the iterator's current record is the next chunk's first
  private UnsafeRow template; // of the last chunk's key
  private boolean complete; // the last chunk ends its key

  SortedFrames(TupleWindows.Spec spec) {
    super(spec, order(spec.ties), false, false);
  }

  private static Supplier<RecordComparator> order(int ties) {
    int tie = ties < 0 ? -1 : 8 * (2 + ties);
    return () -> new Order(tie);
  }

  /** (_t, the tie column, arrival) of two records of one key, signed as {@link ValueOrder} compares. */
  private static final class Order extends RecordComparator {
    private final int tie; // the tie column's byte offset, -1 without

    Order(int tie) {
      this.tie = tie;
    }

    @Override
    public int compare(Object left, long leftOffset, int leftLength, Object right, long rightOffset, int rightLength) {
      int order = Long.compare(Platform.getLong(left, leftOffset), Platform.getLong(right, rightOffset));
      if (order == 0 && tie >= 0) {
        order = Long.compare(Platform.getLong(left, leftOffset + tie), Platform.getLong(right, rightOffset + tie));
      }
      if (order == 0) {
        order = Long.compare(Platform.getLong(left, leftOffset + 8), Platform.getLong(right, rightOffset + 8));
      }
      return order;
    }
  }

  @Override
  long first(KeyTuples key, long value) {
    return value;
  }

  @Override
  long second(KeyTuples key, long value) {
    return tuples(); // its arrival
  }

  @Override
  long prefix(KeyTuples key, long value) {
    return key.id;
  }

  /** Every tuple is in: from here on they come back sorted, a chunk at a time ({@link #next}). */
  void sort() {
    sorted = sorted();
  }

  /**
   * Fills `chunk` (columns laid out as the keys', room for `capacity` tuples) with the next tuples of
   * one key in order, at most `capacity`; false once every tuple has been read. {@link #template} is
   * then the key's output row and {@link #complete} whether the chunk holds its last tuple.
   */
  boolean next(KeyTuples chunk, int capacity) {
    if (!loaded) {
      if (!sorted.hasNext()) {
        return false;
      }
      load();
    }
    long key = sorted.getKeyPrefix();
    template = template((int) key);
    int n = 0;
    while (true) {
      copy(chunk, n++);
      loaded = false;
      if (!sorted.hasNext()) {
        break;
      }
      load(); // the record after the chunk's last: the next chunk's first, which says where this key ends
      if (n == capacity || sorted.getKeyPrefix() != key) {
        break;
      }
    }
    chunk.size = n;
    complete = !loaded || sorted.getKeyPrefix() != key;
    return true;
  }

  private void load() {
    load(sorted);
    loaded = true;
  }

  /** The current record into tuple j of the chunk's columns. */
  private void copy(KeyTuples chunk, int j) {
    Object base = sorted.getBaseObject();
    long at = sorted.getBaseOffset();
    chunk.values[j] = Platform.getLong(base, at);
    at += 16;
    for (long[] column : chunk.extras) {
      column[j] = Platform.getLong(base, at);
      at += 8;
    }
    for (long[] column : chunk.longs) {
      if (column != null) {
        column[j] = Platform.getLong(base, at);
        at += 8;
      }
    }
    for (double[] column : chunk.doubles) {
      column[j] = Platform.getDouble(base, at);
      at += 8;
    }
  }

  /** The output row of the last chunk's key: its key columns set. */
  UnsafeRow template() {
    return template;
  }

  /** Whether the last chunk holds its key's last tuple (no window of the key goes on past it). */
  boolean complete() {
    return complete;
  }
}
