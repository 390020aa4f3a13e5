package wql.kernels;

import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.StructType;

/**
 * What the kernels' partition iterators share: one {@link StateQueue} per key, windows emitted as
 * the sorted rows come in, and each key's last windows once the rows run out.
 */
abstract class KeyedWindows implements Iterator<InternalRow> {
  private final Iterator<InternalRow> rows;
  private Iterator<StateQueue> closing;
  private final KeyIndex<StateQueue> queues;
  private final Function<InternalRow, StateQueue> newQueue;
  final ArrayDeque<UnsafeRow> ready = new ArrayDeque<>();
  private final ArrayDeque<UnsafeRow> spare = new ArrayDeque<>(); // rows already handed out, for reuse
  private UnsafeRow lent; // the row the last next() returned: Spark's consumers copy what they keep
  final long[] rowLongs;
  final double[] rowDoubles;
  final long[] windowLongs;
  final double[] windowDoubles;

  final States states;

  KeyedWindows(Iterator<InternalRow> rows, Keys keys, States states) {
    this.rows = rows;
    this.queues = new KeyIndex<>(keys);
    this.states = states;
    newQueue = row -> new StateQueue(states, template(row));
    rowLongs = new long[states.longs()];
    rowDoubles = new double[states.doubles()];
    windowLongs = new long[rowLongs.length];
    windowDoubles = new double[rowDoubles.length];
  }

  /** Takes one input row, adding any windows it completes to `ready`. */
  abstract void add(InternalRow row);

  /** Adds a key's remaining windows to `ready`, once every row has been read. */
  abstract void close(StateQueue queue);

  /** The output row a new key's windows start from, made from the key's first row. */
  abstract UnsafeRow template(InternalRow row);

  private UnsafeProjection unsafe; // made on the first row that is not already unsafe

  /**
   * The row as an UnsafeRow of `schema`, copied: Spark reuses the rows it hands an operator, and a
   * template outlives its row (kernels whose output rows have their input's schema).
   */
  UnsafeRow copied(InternalRow row, StructType schema) {
    if (row instanceof UnsafeRow) {
      return ((UnsafeRow) row).copy();
    }
    if (unsafe == null) {
      unsafe = UnsafeProjection.create(schema);
    }
    return unsafe.apply(row).copy();
  }

  /** The queue of the row's key, new if the key is. */
  StateQueue queueOf(InternalRow row) {
    return queues.of(row, newQueue);
  }

  @Override
  public boolean hasNext() {
    while (ready.isEmpty()) {
      if (closing == null && rows.hasNext()) {
        add(rows.next());
        continue;
      }
      if (closing == null) {
        closing = queues.values().iterator();
      }
      if (!closing.hasNext()) {
        return false;
      }
      close(closing.next());
    }
    return true;
  }

  @Override
  public InternalRow next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    if (lent != null) {
      spare.add(lent);
    }
    lent = ready.poll();
    return lent;
  }

  /** A fresh output row holding the template's values: a spare row refilled, or a new one. */
  UnsafeRow output(UnsafeRow template) {
    UnsafeRow row = spare.poll();
    if (row == null) {
      return template.copy();
    }
    row.copyFrom(template);
    return row;
  }
}
