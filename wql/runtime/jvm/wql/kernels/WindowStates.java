package wql.kernels;

/**
 * The states of one key's windows, a column per state slot, and the columns' scratch arrays: sized
 * for the largest key so far and reused for the next, with the growth accounted to the task.
 */
final class WindowStates {
  final long[][] longs;
  final double[][] doubles;
  final TaskMemory memory; // null outside a Spark task
  int[] from = new int[0];
  int[] to = new int[0];
  int[] restarts = new int[0];
  long[] wids = new long[0];

  WindowStates(int longSlots, int doubleSlots, TaskMemory memory) {
    longs = new long[longSlots][0];
    doubles = new double[doubleSlots][0];
    this.memory = memory;
  }

  /** Room for `windows` windows' bounds and states. */
  void ensure(int windows) {
    if (windows <= wids.length) {
      return;
    }
    int capacity = Math.max(windows, 2 * wids.length);
    account((long) (capacity - wids.length) * (20 + 8 * (longs.length + doubles.length)), windows);
    from = new int[capacity];
    to = new int[capacity];
    restarts = new int[capacity];
    wids = new long[capacity];
    for (int s = 0; s < longs.length; s++) {
      longs[s] = new long[capacity];
    }
    for (int s = 0; s < doubles.length; s++) {
      doubles[s] = new double[capacity];
    }
  }

  /** `current`, or a larger array when it holds fewer than n. */
  long[] longScratch(long[] current, int n) {
    int have = current == null ? 0 : current.length;
    return have >= n ? current : new long[grownFrom(have, n)];
  }

  double[] doubleScratch(double[] current, int n) {
    int have = current == null ? 0 : current.length;
    return have >= n ? current : new double[grownFrom(have, n)];
  }

  /** The capacity a scratch array of `have` 8-byte slots grows to for n, accounted. */
  private int grownFrom(int have, int n) {
    int capacity = Math.max(n, 2 * have);
    account(8L * (capacity - have), n);
    return capacity;
  }

  private void account(long bytes, long tuples) {
    if (memory != null) {
      memory.reserve(bytes, tuples);
    }
  }
}
