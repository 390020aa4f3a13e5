package wql.kernels;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;

/**
 * What the kernels' partition iterators share: one {@link StateQueue} per key, windows emitted as
 * the sorted rows come in, and each key's last windows once the rows run out.
 */
abstract class KeyedWindows implements Iterator<InternalRow> {
  private final Iterator<InternalRow> rows;
  private Iterator<StateQueue> closing;
  final HashMap<Object, StateQueue> queues = new HashMap<>();
  final ArrayDeque<InternalRow> ready = new ArrayDeque<>();
  final long[] rowLongs;
  final double[] rowDoubles;
  final long[] windowLongs;
  final double[] windowDoubles;

  private final Keys keys;
  final States states;

  KeyedWindows(Iterator<InternalRow> rows, Keys keys, States states) {
    this.rows = rows;
    this.keys = keys;
    this.states = states;
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

  /** The queue of the row's key, new if the key is. */
  StateQueue queueOf(InternalRow row) {
    Object key = keys.of(row);
    StateQueue queue = queues.get(key);
    if (queue == null) {
      queue = new StateQueue(states, template(row));
      queues.put(keys.copy(key), queue);
    }
    return queue;
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
    return ready.poll();
  }
}
