package wql.kernels;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.spark.sql.Row;

/**
 * What the kernels' partition iterators share: one {@link StateQueue} per key, windows emitted as
 * the sorted rows come in, and each key's last windows once the rows run out.
 */
abstract class KeyedWindows implements Iterator<Row> {
  private final Iterator<Row> rows;
  private Iterator<StateQueue> closing;
  final HashMap<Object, StateQueue> queues = new HashMap<>();
  final ArrayDeque<Row> ready = new ArrayDeque<>();
  final long[] rowLongs;
  final double[] rowDoubles;
  final long[] windowLongs;
  final double[] windowDoubles;

  KeyedWindows(Iterator<Row> rows, States states) {
    this.rows = rows;
    rowLongs = new long[states.longs()];
    rowDoubles = new double[states.doubles()];
    windowLongs = new long[rowLongs.length];
    windowDoubles = new double[rowDoubles.length];
  }

  /** Takes one input row, adding any windows it completes to `ready`. */
  abstract void add(Row row);

  /** Adds a key's remaining windows to `ready`, once every row has been read. */
  abstract void close(StateQueue queue);

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
  public Row next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    return ready.poll();
  }
}
