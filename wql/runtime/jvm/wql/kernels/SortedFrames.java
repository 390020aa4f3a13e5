package wql.kernels;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.util.collection.unsafe.sort.RecordComparator;
import org.apache.spark.util.collection.unsafe.sort.UnsafeExternalSorter;
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
final class SortedFrames {
  private final FrameWindows.Spec spec;
  private final UnsafeExternalSorter sorter;
  private final byte[] buffer;
  private final int extras;
  private final ArrayList<UnsafeRow> templates = new ArrayList<>(); // by key number
  private long arrived; // tuples added so far: each one's arrival
  private UnsafeSorterIterator sorted;
  private boolean loaded; // the iterator's current record is the next chunk's first
  private UnsafeRow template; // of the last chunk's key
  private boolean complete; // the last chunk ends its key

  SortedFrames(FrameWindows.Spec spec) {
    this.spec = spec;
    extras = spec.batchExtras.length;
    int fields = 2 + extras + spec.base.states.doubles();
    for (boolean stored : spec.base.storedLongs) {
      fields += stored ? 1 : 0;
    }
    buffer = new byte[8 * fields];
    int tie = spec.ties < 0 ? -1 : 8 * (2 + spec.ties);
    sorter = SortedTuples.sorter(() -> new Order(tie), spec.spillThreshold, false);
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

  private void remember(KeyTuples key) {
    while (templates.size() <= key.id) {
      templates.add(null);
    }
    templates.set(key.id, key.template);
  }

  /** A key's tuples held in its columns (before this pass took over), in the columns' order. */
  void addColumns(KeyTuples key) {
    remember(key);
    for (int i = 0; i < key.size; i++) {
      int at = start(key.values[i]);
      for (long[] column : key.extras) {
        at = put(at, column[i]);
      }
      for (long[] column : key.longs) {
        if (column != null) {
          at = put(at, column[i]);
        }
      }
      for (double[] column : key.doubles) {
        at = put(at, Double.doubleToRawLongBits(column[i]));
      }
      insert(key.id);
    }
  }

  /** A batch of the key's tuples, as the shuffle brings them ({@link TupleBatches}). */
  void addBatch(KeyTuples key, InternalRow batch) {
    remember(key);
    TupleWindows.Spec base = spec.base;
    ArrayData values = batch.getArray(base.batchValues);
    ArrayData[] columns = new ArrayData[extras + base.batchLongs.length + base.batchDoubles.length];
    int c = 0;
    for (int field : spec.batchExtras) {
      columns[c++] = batch.getArray(field);
    }
    for (int field : base.batchLongs) {
      columns[c++] = field < 0 ? null : batch.getArray(field); // not stored: a row count, no column
    }
    int longColumns = c;
    for (int field : base.batchDoubles) {
      columns[c++] = batch.getArray(field);
    }
    int n = values.numElements();
    for (int i = 0; i < n; i++) {
      int at = start(values.getLong(i));
      for (int k = 0; k < longColumns; k++) {
        if (columns[k] != null) {
          at = put(at, columns[k].getLong(i));
        }
      }
      for (int k = longColumns; k < columns.length; k++) {
        at = put(at, Double.doubleToRawLongBits(columns[k].getDouble(i)));
      }
      insert(key.id);
    }
  }

  /** Starts the record of a tuple of value `t`, arriving now; returns where its next field goes. */
  private int start(long t) {
    Platform.putLong(buffer, Platform.BYTE_ARRAY_OFFSET, t);
    Platform.putLong(buffer, Platform.BYTE_ARRAY_OFFSET + 8, arrived);
    return 16;
  }

  private int put(int at, long field) {
    Platform.putLong(buffer, Platform.BYTE_ARRAY_OFFSET + at, field);
    return at + 8;
  }

  private void insert(int key) {
    try {
      sorter.insertRecord(buffer, Platform.BYTE_ARRAY_OFFSET, buffer.length, key, false);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    arrived++;
  }

  /** Every tuple is in: from here on they come back sorted, a chunk at a time ({@link #next}). */
  void sort() {
    try {
      sorted = sorter.getSortedIterator();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
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
    template = templates.get((int) key);
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
    try {
      sorted.loadNext();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
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

  long tuples() {
    return arrived;
  }

  /** The most the sorter held at once: its pages and pointer array. */
  long peak() {
    return sorter.getPeakMemoryUsedBytes();
  }

  /** The bytes of sorted runs the sorter wrote out to make room (memory freed by spilling). */
  long spillSize() {
    return sorter.getSpillSize();
  }

  /** Frees the sorter's memory and deletes its spill files (a task's end does too, if it ends first). */
  void close() {
    sorter.cleanupResources();
  }
}
