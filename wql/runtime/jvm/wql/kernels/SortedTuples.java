package wql.kernels;

import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.collection.unsafe.sort.RecordComparator;
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
final class SortedTuples extends SpillingTuples {
  private static final RecordComparator EQUAL =
      new RecordComparator() {
        @Override
        public int compare(Object left, long leftOffset, int leftLength, Object right, long rightOffset, int rightLength) {
          return 0; // the prefix is the value: records of equal prefix are in any order
        }
      };

  SortedTuples(TupleWindows.Spec spec) {
    super(spec, () -> EQUAL, true, true);
  }

  /** The records' schema, as an UnsafeRow reads them: the key's number, the value, then the stored states. */
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

  @Override
  long first(KeyTuples key, long value) {
    return key.id;
  }

  @Override
  long second(KeyTuples key, long value) {
    return value;
  }

  @Override
  long prefix(KeyTuples key, long value) {
    return value;
  }

  /** The windows of every key added, once all tuples are in. */
  Iterator<InternalRow> windows() {
    UnsafeSorterIterator sorted = sorted();
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
            load(sorted);
            row.pointTo(sorted.getBaseObject(), sorted.getBaseOffset(), sorted.getRecordLength());
            return row;
          }
        };
    return new Windows(rows, Keys.of(schema, List.of("__wql_key")), this);
  }

  /** The key's windows as its sorted tuples come: one at each distinct value w, holding (w - size, w]. */
  private static final class Windows extends KeyedWindows {
    private final SortedTuples source;
    private final TupleWindows.Spec spec;

    Windows(Iterator<InternalRow> rows, Keys keys, SortedTuples source) {
      super(rows, keys, source.spec.states, new Output(null, new int[] {source.spec.widOut}, source.spec.widWidth, source.spec.longOut, source.spec.doubleOut));
      this.source = source;
      this.spec = source.spec;
    }

    @Override
    UnsafeRow template(InternalRow row) {
      return source.template((int) row.getLong(0));
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
}
