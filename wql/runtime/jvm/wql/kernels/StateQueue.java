package wql.kernels;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;

/**
 * One key's open elements (cells, or tuples) in order of their position, as two stacks: the older
 * part carries suffix combines, the newer part one running combine, so the combine of everything
 * in the queue is one merge however long it is, and each element is merged a constant number of
 * times over its life. No inverse is needed, so min and max work as sum does.
 */
final class StateQueue {
  private final States states;
  final UnsafeRow template; // the key's output row: keys and pass-through columns; windows fill in the rest
  private long[] positions = new long[4]; // a ring whose capacity is a power of two: indices wrap by a mask
  private long[] longs;
  private double[] doubles;
  private long[] frontLongs;
  private double[] frontDoubles;
  private final long[] backLongs;
  private final double[] backDoubles;
  private int head;
  int count;
  private int front; // the first `front` elements from head carry suffix combines
  long last; // the newest element's position
  long next; // the kernel's bookmark: the next window end to consider
  boolean open; // the kernel's flag: a window is pending (tuples) or the key has begun (landmark)

  StateQueue(States states, UnsafeRow template) {
    this.states = states;
    this.template = template;
    int nl = states.longs();
    int nd = states.doubles();
    longs = new long[4 * nl];
    doubles = new double[4 * nd];
    frontLongs = new long[4 * nl];
    frontDoubles = new double[4 * nd];
    backLongs = new long[nl];
    backDoubles = new double[nd];
    states.identity(backLongs, backDoubles, 0);
  }

  private int at(int j) {
    return (head + j) & (positions.length - 1);
  }

  void push(long position, long[] l, double[] d) {
    if (count == positions.length) {
      grow();
    }
    int i = at(count);
    positions[i] = position;
    System.arraycopy(l, 0, longs, i * l.length, l.length);
    System.arraycopy(d, 0, doubles, i * d.length, d.length);
    count++;
    last = position;
    states.merge(backLongs, backDoubles, 0, l, d, 0, backLongs, backDoubles, 0);
  }

  /** Adds to the running combine only: landmark windows never drop anything. */
  void accumulate(long[] l, double[] d) {
    states.merge(backLongs, backDoubles, 0, l, d, 0, backLongs, backDoubles, 0);
  }

  /** Empties the running combine: CUMULATE windows start again at each period. */
  void restart() {
    states.identity(backLongs, backDoubles, 0);
  }

  /** Drops the elements at or before `limit`: the window (limit, end] does not hold them. */
  void dropUpTo(long limit) {
    while (count > 0 && positions[head] <= limit) {
      pop();
    }
  }

  private void pop() {
    if (front == 0) { // the back becomes the front: suffix combines, newest to oldest
      int nl = backLongs.length;
      int nd = backDoubles.length;
      int newest = at(count - 1);
      System.arraycopy(longs, newest * nl, frontLongs, newest * nl, nl);
      System.arraycopy(doubles, newest * nd, frontDoubles, newest * nd, nd);
      for (int j = count - 2; j >= 0; j--) {
        int i = at(j);
        states.merge(longs, doubles, i, frontLongs, frontDoubles, at(j + 1), frontLongs, frontDoubles, i);
      }
      front = count;
      states.identity(backLongs, backDoubles, 0);
    }
    head = at(1);
    count--;
    front--;
  }

  /** The combine of every element in the queue (or, for landmarks, every one accumulated). */
  void total(long[] l, double[] d) {
    if (front > 0) {
      states.merge(frontLongs, frontDoubles, head, backLongs, backDoubles, 0, l, d, 0);
    } else {
      System.arraycopy(backLongs, 0, l, 0, l.length);
      System.arraycopy(backDoubles, 0, d, 0, d.length);
    }
  }

  private void grow() {
    int capacity = positions.length * 2;
    int nl = backLongs.length;
    int nd = backDoubles.length;
    long[] p = new long[capacity];
    long[] l = new long[capacity * nl];
    double[] d = new double[capacity * nd];
    long[] fl = new long[capacity * nl];
    double[] fd = new double[capacity * nd];
    for (int j = 0; j < count; j++) {
      int i = at(j);
      p[j] = positions[i];
      System.arraycopy(longs, i * nl, l, j * nl, nl);
      System.arraycopy(doubles, i * nd, d, j * nd, nd);
      System.arraycopy(frontLongs, i * nl, fl, j * nl, nl);
      System.arraycopy(frontDoubles, i * nd, fd, j * nd, nd);
    }
    positions = p;
    longs = l;
    doubles = d;
    frontLongs = fl;
    frontDoubles = fd;
    head = 0;
  }
}
