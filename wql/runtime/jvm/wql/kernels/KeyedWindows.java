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
  private final Output layout;

  KeyedWindows(Iterator<InternalRow> rows, Keys keys, States states, Output output) {
    this.rows = rows;
    this.queues = new KeyIndex<>(keys);
    this.states = states;
    this.layout = output;
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

  /**
   * Where a window's row holds its id and its states. A kernel whose output rows have its input's
   * schema ({@link #sameAs}) starts each key's rows from the key's first row.
   */
  static final class Output {
    final StructType schema; // the input's, which the rows have; null: the kernel makes its templates
    final int[] idFields;
    final int idWidth; // the id columns' byte width (States#setIntegral)
    final int[] longOut;
    final int[] doubleOut;

    Output(StructType schema, int[] idFields, int idWidth, int[] longOut, int[] doubleOut) {
      this.schema = schema;
      this.idFields = idFields;
      this.idWidth = idWidth;
      this.longOut = longOut;
      this.doubleOut = doubleOut;
    }

    /** Rows of the input's `schema`, the id (a BIGINT) in `idFields`, each state where the input has it. */
    static Output sameAs(StructType schema, States states, int... idFields) {
      return new Output(schema, idFields, 8, states.longField, states.doubleField);
    }
  }

  private UnsafeProjection unsafe; // made on the first row that is not already unsafe

  /**
   * The output row a new key's windows start from, made from the key's first row: the row as an
   * UnsafeRow of the input's schema, copied (Spark reuses the rows it hands an operator, and a template
   * outlives its row).
   */
  UnsafeRow template(InternalRow row) {
    if (row instanceof UnsafeRow) {
      return ((UnsafeRow) row).copy();
    }
    if (unsafe == null) {
      unsafe = UnsafeProjection.create(layout.schema);
    }
    return unsafe.apply(row).copy();
  }

  /**
   * Adds the window whose states {@link #windowLongs} and {@link #windowDoubles} hold, as a row of the
   * key's `template` with `id` in the output's id columns, unless it holds no row (its first state, a
   * count, is not positive).
   */
  void emit(UnsafeRow template, long id) {
    if (windowLongs[states.firstSlot] <= 0) {
      return;
    }
    UnsafeRow out = output(template);
    for (int field : layout.idFields) {
      States.setIntegral(out, field, layout.idWidth, id);
    }
    states.write(out, layout.longOut, layout.doubleOut, windowLongs, windowDoubles);
    ready.add(out);
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
