package wql.kernels;

import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.unsafe.Platform;

/**
 * One key's tuples as primitive columns: the range attribute's values and each state's contribution
 * (identities for a tuple outside WHERE), in arrival order until {@link #sortByValue}. A column is
 * null for a row count that positions give (no WHERE: every tuple counts one). The frames kernel
 * adds side columns ({@link TupleBatches} extras: arrival, a predicate, a delta's x), one of which may
 * break ties of value. The tuples come in batches ({@link TupleBatches}), whose arrays are copied in
 * whole.
 */
final class KeyTuples {
  final UnsafeRow template; // the key's output row: its key columns set, the rest NULL
  long[] values = new long[16];
  final long[][] longs;
  final double[][] doubles;
  final long[][] extras;
  private final int ties; // the extra that orders tuples of equal value; -1: arrival in the batches
  final int tupleBytes; // bytes a tuple takes in the columns
  final int id; // the key's number in its partition, in the order keys were first seen
  int size;
  private boolean sorted = true;

  KeyTuples(UnsafeRow template, boolean[] storedLongs, int doubleSlots, int id) {
    this(template, storedLongs, doubleSlots, 0, -1, id);
  }

  KeyTuples(UnsafeRow template, boolean[] storedLongs, int doubleSlots, int extraColumns, int ties, int id) {
    this.template = template;
    this.id = id;
    this.ties = ties;
    extras = new long[extraColumns][];
    for (int e = 0; e < extraColumns; e++) {
      extras[e] = new long[values.length];
    }
    longs = new long[storedLongs.length][];
    for (int s = 0; s < longs.length; s++) {
      longs[s] = storedLongs[s] ? new long[values.length] : null;
    }
    doubles = new double[doubleSlots][];
    int columns = 1 + doubleSlots + extraColumns;
    for (int s = 0; s < doubleSlots; s++) {
      doubles[s] = new double[values.length];
    }
    for (boolean stored : storedLongs) {
      columns += stored ? 1 : 0;
    }
    tupleBytes = 8 * columns;
  }

  /**
   * Appends a batch of this key's tuples: its values' array, and each stored state's array (-1: not
   * stored). The columns grow by {@link #growthFor}, which the caller accounts for first.
   */
  void append(InternalRow batch, int valuesField, int[] longFields, int[] doubleFields) {
    append(batch, valuesField, longFields, doubleFields, new int[0]);
  }

  /** The same with the batch's extras' arrays at `extraFields`. */
  void append(InternalRow batch, int valuesField, int[] longFields, int[] doubleFields, int[] extraFields) {
    ArrayData batchValues = batch.getArray(valuesField);
    int n = batchValues.numElements();
    int growth = growthFor(n);
    if (growth > 0) {
      grow(values.length + growth);
    }
    copy(batchValues, values, Platform.LONG_ARRAY_OFFSET, size, n);
    for (int e = 0; e < extras.length; e++) {
      copy(batch.getArray(extraFields[e]), extras[e], Platform.LONG_ARRAY_OFFSET, size, n);
    }
    long[] tie = ties < 0 ? null : extras[ties];
    for (int i = Math.max(size, 1); i < size + n; i++) {
      sorted &= !ValueOrder.before(values, tie, i, i - 1);
    }
    for (int s = 0; s < longs.length; s++) {
      if (longs[s] != null) {
        copy(batch.getArray(longFields[s]), longs[s], Platform.LONG_ARRAY_OFFSET, size, n);
      }
    }
    for (int s = 0; s < doubles.length; s++) {
      copy(batch.getArray(doubleFields[s]), doubles[s], Platform.DOUBLE_ARRAY_OFFSET, size, n);
    }
    size += n;
  }

  /** How many tuples' room the columns gain to take n more: none, or at least double. */
  int growthFor(int n) {
    return size + n <= values.length ? 0 : Math.max(size + n, 2 * values.length) - values.length;
  }

  /** Room for `capacity` tuples in every column (a chunk of {@link SortedFrames}, filled in place). */
  void ensureCapacity(int capacity) {
    if (capacity > values.length) {
      grow(capacity);
    }
  }

  /** Whether the tuples are in ascending order of value already ({@link #sortByValue} costs nothing). */
  boolean isSorted() {
    return sorted;
  }

  /** Copies n 8-byte elements of a batch array into `to` (a long[] or double[]) from index `at`. */
  private static void copy(ArrayData from, Object to, long arrayOffset, int at, int n) {
    if (from instanceof UnsafeArrayData) {
      UnsafeArrayData array = (UnsafeArrayData) from;
      long start = array.getBaseOffset() + UnsafeArrayData.calculateHeaderPortionInBytes(n);
      Platform.copyMemory(array.getBaseObject(), start, to, arrayOffset + 8L * at, 8L * n);
    } else if (to instanceof long[]) {
      for (int i = 0; i < n; i++) {
        ((long[]) to)[at + i] = from.getLong(i);
      }
    } else {
      for (int i = 0; i < n; i++) {
        ((double[]) to)[at + i] = from.getDouble(i);
      }
    }
  }

  /** Drops the columns (the tuples went elsewhere: {@link SortedTuples}); returns the bytes they held. */
  long drop() {
    long held = (long) values.length * tupleBytes;
    values = new long[0];
    for (int e = 0; e < extras.length; e++) {
      extras[e] = new long[0];
    }
    for (int s = 0; s < longs.length; s++) {
      longs[s] = longs[s] == null ? null : new long[0];
    }
    for (int s = 0; s < doubles.length; s++) {
      doubles[s] = new double[0];
    }
    size = 0;
    sorted = true;
    return held;
  }

  /**
   * Puts the tuples in ascending order of value (ties by the tie column, else in arrival order), if
   * they are not already.
   */
  void sortByValue() {
    if (sorted) {
      return;
    }
    int[] order = ValueOrder.of(values, ties < 0 ? null : extras[ties], size);
    values = permuted(values, order);
    for (int e = 0; e < extras.length; e++) {
      extras[e] = permuted(extras[e], order);
    }
    for (int s = 0; s < longs.length; s++) {
      if (longs[s] != null) {
        longs[s] = permuted(longs[s], order);
      }
    }
    for (int s = 0; s < doubles.length; s++) {
      double[] column = doubles[s];
      double[] out = new double[column.length];
      for (int i = 0; i < size; i++) {
        out[i] = column[order[i]];
      }
      doubles[s] = out;
    }
    sorted = true;
  }

  private long[] permuted(long[] column, int[] order) {
    long[] out = new long[column.length];
    for (int i = 0; i < size; i++) {
      out[i] = column[order[i]];
    }
    return out;
  }

  private void grow(int capacity) {
    values = Arrays.copyOf(values, capacity);
    for (int e = 0; e < extras.length; e++) {
      extras[e] = Arrays.copyOf(extras[e], capacity);
    }
    for (int s = 0; s < longs.length; s++) {
      if (longs[s] != null) {
        longs[s] = Arrays.copyOf(longs[s], capacity);
      }
    }
    for (int s = 0; s < doubles.length; s++) {
      doubles[s] = Arrays.copyOf(doubles[s], capacity);
    }
  }
}
