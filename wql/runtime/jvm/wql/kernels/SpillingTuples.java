package wql.kernels;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.function.Supplier;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.internal.config.package$;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.util.collection.unsafe.sort.PrefixComparators;
import org.apache.spark.util.collection.unsafe.sort.RecordComparator;
import org.apache.spark.util.collection.unsafe.sort.UnsafeExternalSorter;
import org.apache.spark.util.collection.unsafe.sort.UnsafeSorterIterator;

/**
 * A batched kernel's tuples through Spark's external sorter, for a partition whose tuples do not fit
 * in Spark's execution memory ({@link BatchedWindows}): the sorter spills sorted runs to disk and
 * merges them, and the kernel reads the tuples back sorted ({@link SortedTuples}, {@link
 * SortedFrames}). A record is 8-byte fields: two the kernel leads with (its key's number, the value,
 * the arrival: the kernel's order), the batches' extras, the stored integral states, the floating
 * ones, after a null bitset where the kernel reads records as UnsafeRows. Tuples held in a key's
 * columns before this pass took over are added first, in their columns' order, then the batches as
 * they come, so each key's tuples keep the order they arrived in.
 */
abstract class SpillingTuples {
  final TupleWindows.Spec spec;
  final UnsafeExternalSorter sorter;
  private final byte[] buffer;
  private final int header; // the record's bytes before its first field
  private final ArrayList<UnsafeRow> templates = new ArrayList<>(); // by key number
  private long tuples; // added so far: each one's arrival

  /**
   * Records ordered by their long prefix (signed) and, where prefixes are equal, by `order`; with
   * `radix`, by the prefix alone (Spark's radix sort never asks `order`). With `bitset`, each record
   * starts with an UnsafeRow's null bitset (no field NULL).
   */
  SpillingTuples(TupleWindows.Spec spec, Supplier<RecordComparator> order, boolean radix, boolean bitset) {
    this.spec = spec;
    int fields = fields(spec);
    header = bitset ? UnsafeRow.calculateBitSetWidthInBytes(fields) : 0;
    buffer = new byte[header + 8 * fields];
    sorter = sorter(order, spec.spillThreshold, radix);
  }

  /** The fields of a record: two leading, the extras, the stored integral states, the floating ones. */
  static int fields(TupleWindows.Spec spec) {
    int fields = 2 + spec.batchExtras.length + spec.states.doubles();
    for (boolean stored : spec.storedLongs) {
      fields += stored ? 1 : 0;
    }
    return fields;
  }

  /**
   * Spark's external sorter for the running task. It spills sorted runs when Spark's execution memory
   * runs short, or once it holds `spillThreshold` records (not positive: Spark's
   * spark.shuffle.spill.numElementsForceSpillThreshold).
   */
  private static UnsafeExternalSorter sorter(Supplier<RecordComparator> order, int spillThreshold, boolean radix) {
    TaskContext task = TaskContext.get();
    SparkEnv env = SparkEnv.get();
    SparkConf conf = env.conf();
    package$ config = package$.MODULE$;
    int threshold = spillThreshold > 0 ? spillThreshold : ((Number) conf.get(config.SHUFFLE_SPILL_NUM_ELEMENTS_FORCE_SPILL_THRESHOLD())).intValue();
    return UnsafeExternalSorter.create(
        task.taskMemoryManager(),
        env.blockManager(),
        env.serializerManager(),
        task,
        order,
        PrefixComparators.LONG,
        (int) ((Number) conf.get(config.SHUFFLE_SORT_INIT_BUFFER_SIZE())).longValue(),
        task.taskMemoryManager().pageSizeBytes(),
        threshold,
        ((Number) conf.get(config.SHUFFLE_SPILL_MAX_SIZE_FORCE_SPILL_THRESHOLD())).longValue(),
        ((Number) conf.get(config.UNSAFE_SORTER_SPILL_MERGE_FACTOR())).intValue(),
        radix);
  }

  /** The record's two leading fields for tuple `value` of `key`, arriving {@link #tuples()}-th. */
  abstract long first(KeyTuples key, long value);

  abstract long second(KeyTuples key, long value);

  /** The record's sort prefix. */
  abstract long prefix(KeyTuples key, long value);

  /** A key's tuples held in its columns (before this pass took over), in the columns' order. */
  void addColumns(KeyTuples key) {
    remember(key);
    for (int i = 0; i < key.size; i++) {
      int at = start(key, key.values[i]);
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
      insert(key, key.values[i]);
    }
  }

  /** A batch of the key's tuples, as the shuffle brings them ({@link TupleBatches}). */
  void addBatch(KeyTuples key, InternalRow batch) {
    remember(key);
    ArrayData values = batch.getArray(spec.batchValues);
    ArrayData[] columns = new ArrayData[spec.batchExtras.length + spec.batchLongs.length + spec.batchDoubles.length];
    int c = 0;
    for (int field : spec.batchExtras) {
      columns[c++] = batch.getArray(field);
    }
    for (int field : spec.batchLongs) {
      columns[c++] = field < 0 ? null : batch.getArray(field); // not stored: a row count, no column
    }
    int longColumns = c;
    for (int field : spec.batchDoubles) {
      columns[c++] = batch.getArray(field);
    }
    int n = values.numElements();
    for (int i = 0; i < n; i++) {
      long value = values.getLong(i);
      int at = start(key, value);
      for (int k = 0; k < longColumns; k++) {
        if (columns[k] != null) {
          at = put(at, columns[k].getLong(i));
        }
      }
      for (int k = longColumns; k < columns.length; k++) {
        at = put(at, Double.doubleToRawLongBits(columns[k].getDouble(i)));
      }
      insert(key, value);
    }
  }

  private void remember(KeyTuples key) {
    while (templates.size() <= key.id) {
      templates.add(null);
    }
    templates.set(key.id, key.template);
  }

  /** The output row of key number `id`: its key columns set. */
  UnsafeRow template(int id) {
    return templates.get(id);
  }

  /** Starts the record of tuple `value` of `key`; returns where its next field goes. */
  private int start(KeyTuples key, long value) {
    return put(put(header, first(key, value)), second(key, value));
  }

  private int put(int at, long field) {
    Platform.putLong(buffer, Platform.BYTE_ARRAY_OFFSET + at, field);
    return at + 8;
  }

  private void insert(KeyTuples key, long value) {
    try {
      sorter.insertRecord(buffer, Platform.BYTE_ARRAY_OFFSET, buffer.length, prefix(key, value), false);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    tuples++;
  }

  /** Every tuple is in: the records in order. */
  UnsafeSorterIterator sorted() {
    try {
      return sorter.getSortedIterator();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Moves `sorted` to its next record. */
  static void load(UnsafeSorterIterator sorted) {
    try {
      sorted.loadNext();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  long tuples() {
    return tuples;
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
