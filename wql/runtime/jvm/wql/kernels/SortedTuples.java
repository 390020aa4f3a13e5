package wql.kernels;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Supplier;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.internal.config.package$;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.util.collection.unsafe.sort.PrefixComparators;
import org.apache.spark.util.collection.unsafe.sort.RecordComparator;
import org.apache.spark.util.collection.unsafe.sort.UnsafeExternalSorter;
import org.apache.spark.util.collection.unsafe.sort.UnsafeSorterIterator;

/**
 * The bins kernel in memory bounded by the windows in flight, for a partition whose tuples do not
 * fit in Spark's execution memory (one hot key, say): every tuple goes through Spark's external
 * sorter, which spills sorted runs to disk and merges them, sorted by value alone (a radix sort of
 * the long prefix; tuples of equal value are interchangeable). The sorted tuples are then read once:
 * each key keeps the tuples of its current range (w - size, w] in a {@link StateQueue} (two stacks,
 * no inverse), and window w is emitted when the key's next tuple has a larger value. Memory: the
 * sorter's pages (Spark's to spill) and, per key, the tuples of one window.
 *
 * <p>Slower than the in-memory pass (a sort of every tuple, and a row per tuple instead of arrays),
 * so {@link TupleWindows} takes this path only when a reservation for its arrays fails.
 */
final class SortedTuples {
  private static final RecordComparator EQUAL =
      new RecordComparator() {
        @Override
        public int compare(Object left, long leftOffset, int leftLength, Object right, long rightOffset, int rightLength) {
          return 0; // the prefix is the value: records of equal prefix are in any order
        }
      };

  private final TupleWindows.Spec spec;
  private final States states;
  private final UnsafeExternalSorter sorter;
  private final UnsafeRow record; // [key id, value, stored integral states..., floating states...]
  private final byte[] buffer;
  private final java.util.ArrayList<UnsafeRow> templates = new java.util.ArrayList<>(); // by key id
  private long tuples;

  SortedTuples(TupleWindows.Spec spec) {
    this.spec = spec;
    states = spec.states;
    sorter = sorter(() -> EQUAL, spec.spillThreshold, true);
    int fields = recordSchema(spec).size();
    buffer = new byte[UnsafeRow.calculateBitSetWidthInBytes(fields) + 8 * fields];
    record = new UnsafeRow(fields);
    record.pointTo(buffer, buffer.length);
  }

  /**
   * Spark's external sorter for the running task, records ordered by their long prefix (signed) and,
   * where prefixes are equal, by `order`; with `radix`, by the prefix alone (Spark's radix sort never
   * asks `order`). It spills sorted runs when Spark's execution memory runs short, or once it holds
   * `spillThreshold` records (not positive: Spark's spark.shuffle.spill.numElementsForceSpillThreshold).
   */
  static UnsafeExternalSorter sorter(Supplier<RecordComparator> order, int spillThreshold, boolean radix) {
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

  /** The records' schema: the key's id, the value, then the stored states. */
  static StructType recordSchema(TupleWindows.Spec spec) {
    StructType schema = new StructType().add("__wql_key", DataTypes.LongType, false).add("_t", DataTypes.LongType, false);
    for (int s = 0; s < spec.storedLongs.length; s++) {
      if (spec.storedLongs[s]) {
        schema = schema.add("__wql_long" + s, DataTypes.LongType, false);
      }
    }
    for (int s = 0; s < spec.states.doubles(); s++) {
      schema = schema.add("__wql_double" + s, DataTypes.DoubleType, false);
    }
    return schema;
  }

  private void remember(KeyTuples key) {
    while (templates.size() <= key.id) {
      templates.add(null);
    }
    templates.set(key.id, key.template);
  }

  /** A key's tuples held in its columns (before this pass took over). */
  void addColumns(KeyTuples key) {
    remember(key);
    for (int i = 0; i < key.size; i++) {
      int field = 0;
      record.setLong(field++, key.id);
      record.setLong(field++, key.values[i]);
      for (long[] column : key.longs) {
        if (column != null) {
          record.setLong(field++, column[i]);
        }
      }
      for (double[] column : key.doubles) {
        record.setDouble(field++, column[i]);
      }
      insert(key.values[i]);
    }
  }

  /** A batch of the key's tuples, as the shuffle brings them ({@link TupleBatches}). */
  void addBatch(KeyTuples key, InternalRow batch) {
    remember(key);
    int n = batch.getArray(spec.batchValues).numElements();
    for (int i = 0; i < n; i++) {
      long value = batch.getArray(spec.batchValues).getLong(i);
      int field = 0;
      record.setLong(field++, key.id);
      record.setLong(field++, value);
      for (int s = 0; s < spec.batchLongs.length; s++) {
        if (spec.batchLongs[s] >= 0) {
          record.setLong(field++, batch.getArray(spec.batchLongs[s]).getLong(i));
        }
      }
      for (int s = 0; s < spec.batchDoubles.length; s++) {
        record.setDouble(field++, batch.getArray(spec.batchDoubles[s]).getDouble(i));
      }
      insert(value);
    }
  }

  private void insert(long value) {
    try {
      sorter.insertRecord(buffer, Platform.BYTE_ARRAY_OFFSET, buffer.length, value, false);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    tuples++;
  }

  /** The windows of every key added, once all tuples are in; the sorter's spills go to `metrics`. */
  Iterator<InternalRow> windows(TaskMemory memory, FrameWindows.Sorted metrics) {
    UnsafeSorterIterator sorted;
    try {
      sorted = sorter.getSortedIterator();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    StructType schema = recordSchema(spec);
    UnsafeRow row = new UnsafeRow(schema.size());
    Iterator<InternalRow> rows =
        new Iterator<>() {
          @Override
          public boolean hasNext() {
            return sorted.hasNext();
          }

          @Override
          public InternalRow next() {
            if (!sorted.hasNext()) {
              throw new NoSuchElementException();
            }
            try {
              sorted.loadNext();
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            }
            row.pointTo(sorted.getBaseObject(), sorted.getBaseOffset(), sorted.getRecordLength());
            return row;
          }
        };
    return new Windows(rows, Keys.of(schema, List.of("__wql_key")), this, memory, metrics);
  }

  /** The key's windows as its sorted tuples come: one at each distinct value w, holding (w - size, w]. */
  private static final class Windows extends KeyedWindows {
    private final SortedTuples source;
    private final TupleWindows.Spec spec;
    private final TaskMemory memory;
    private final FrameWindows.Sorted metrics;
    private boolean done;

    Windows(Iterator<InternalRow> rows, Keys keys, SortedTuples source, TaskMemory memory, FrameWindows.Sorted metrics) {
      super(rows, keys, source.states, new Output(null, new int[] {source.spec.widOut}, source.spec.widWidth, source.spec.longOut, source.spec.doubleOut));
      this.source = source;
      this.spec = source.spec;
      this.memory = memory;
      this.metrics = metrics;
    }

    @Override
    public boolean hasNext() {
      boolean more = super.hasNext();
      if (!more && !done) {
        done = true;
        if (memory != null) {
          memory.reportPeak(source.sorter.getPeakMemoryUsedBytes());
        }
        metrics.spillSize.add(source.sorter.getSpillSize());
        source.sorter.cleanupResources();
      }
      return more;
    }

    @Override
    UnsafeRow template(InternalRow row) {
      return source.templates.get((int) row.getLong(0));
    }

    @Override
    void add(InternalRow row) {
      StateQueue queue = queueOf(row);
      long value = row.getLong(1);
      if (queue.open && value != queue.next) {
        emit(queue, queue.next); // every tuple of that value is in: its window is complete
      }
      int field = 2;
      for (int s = 0; s < rowLongs.length; s++) {
        rowLongs[s] = spec.storedLongs[s] ? row.getLong(field++) : 1; // not stored: a row count
      }
      for (int s = 0; s < rowDoubles.length; s++) {
        rowDoubles[s] = row.getDouble(field++);
      }
      queue.push(value, rowLongs, rowDoubles);
      queue.open = true;
      queue.next = value;
    }

    @Override
    void close(StateQueue queue) {
      if (queue.open) {
        emit(queue, queue.next);
      }
    }

    private void emit(StateQueue queue, long wid) {
      queue.dropUpTo(wid - spec.size);
      queue.total(windowLongs, windowDoubles);
      emit(queue.template, wid); // a window holding no tuple (all outside WHERE) is left out
    }
  }

  long tuples() {
    return tuples;
  }
}
