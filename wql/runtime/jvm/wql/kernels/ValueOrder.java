package wql.kernels;

/**
 * The permutation that sorts a key's values, stably, by natural merge sort: the ordered runs the
 * values already come in are merged pairwise. After a shuffle a key's tuples arrive as one run per
 * map task (each in its input's order), and a time series is mostly in order, so this costs a pass
 * or a few where Spark's sort of every row costs a full sort.
 */
final class ValueOrder {
  private ValueOrder() {}

  /** Indices of values[0..n) in ascending order of value, ties in their original order. */
  static int[] of(long[] values, int n) {
    return of(values, null, n);
  }

  /**
   * Indices of values[0..n) in ascending order of (value, tie), ties of both in their original order;
   * `ties` null: by value alone. The frames kernel breaks ties of the window attribute by arrival.
   */
  static int[] of(long[] values, long[] ties, int n) {
    int[] order = new int[n];
    int[] starts = new int[n + 1]; // where each ordered run begins, then n
    int runs = 0;
    for (int i = 0; i < n; i++) {
      order[i] = i;
      if (i == 0 || before(values, ties, i, i - 1)) {
        starts[runs++] = i;
      }
    }
    starts[runs] = n;
    int[] merged = new int[n];
    while (runs > 1) {
      int kept = 0;
      for (int r = 0; r < runs; r += 2) {
        int hi = r + 2 <= runs ? starts[r + 2] : n;
        int mid = r + 1 < runs ? starts[r + 1] : hi;
        merge(values, ties, order, starts[r], mid, hi, merged);
        starts[kept++] = starts[r];
      }
      starts[kept] = n;
      runs = kept;
      int[] swap = order;
      order = merged;
      merged = swap;
    }
    return order;
  }

  /** Merges the ordered index runs src[lo..mid) and src[mid..hi) into dst[lo..hi), left first on ties. */
  private static void merge(long[] values, long[] ties, int[] src, int lo, int mid, int hi, int[] dst) {
    int i = lo;
    int j = mid;
    for (int k = lo; k < hi; k++) {
      if (j >= hi || (i < mid && !before(values, ties, src[j], src[i]))) {
        dst[k] = src[i++];
      } else {
        dst[k] = src[j++];
      }
    }
  }

  /** Whether tuple a sorts strictly before tuple b: a smaller value, or an equal one and a smaller tie. */
  static boolean before(long[] values, long[] ties, int a, int b) {
    return values[a] < values[b] || (ties != null && values[a] == values[b] && ties[a] < ties[b]);
  }
}
