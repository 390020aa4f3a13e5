package wql.kernels;

import java.util.ArrayList;
import java.util.List;

/**
 * A state aggregated over each of a key's windows, where window w holds the key's tuples
 * [from[w], to[w]) in value order and both bounds only move forward. Two stacks over the arrays:
 * suffix combines of the older part of the current range, rebuilt once the range's start passes
 * them, and one running combine of the newer part. Each tuple is combined at most twice and each
 * window once more, whatever the window holds, with no inverse: min and max go as sums do, and a
 * floating sum has the rounding of its own window's values only, never a difference of totals.
 */
abstract class RangeColumn {
  /** Rebuilds the suffix combines x[i..to) for i in [from, to) and empties the running combine. */
  abstract void restart(int from, int to);

  /**
   * The states of windows w0..w1: each adds x[to[w - 1]..to[w]) to the running combine and is the
   * suffix combine at from[w] ⊕ the running combine; w0 has just restarted at to[w0 - 1] = its own
   * end. A loop in each column, so the JIT sees one kind of state at a time.
   */
  abstract void slide(int[] from, int[] to, int w0, int w1);

  /** The key's input columns and the scratch and output arrays. */
  abstract void bind(KeyTuples key, WindowStates out);

  /**
   * Every window's states: window w holds tuples [from[w], to[w]), never empty, and from and to
   * never decrease with w. The windows split into runs that share suffix combines: a run restarts
   * at the first window that starts past the previous run's first window's end.
   */
  static void scan(List<RangeColumn> columns, int[] from, int[] to, int windows, int[] restarts) {
    int runs = 0;
    int boundary = 0; // the current run's suffix combines cover [from, boundary)
    for (int w = 0; w < windows; w++) {
      if (from[w] >= boundary) {
        restarts[runs++] = w;
        boundary = to[w];
      }
    }
    for (RangeColumn column : columns) {
      for (int r = 0; r < runs; r++) {
        int w0 = restarts[r];
        int w1 = r + 1 < runs ? restarts[r + 1] : windows;
        column.restart(from[w0], to[w0]);
        column.slide(from, to, w0, w1);
      }
    }
  }

  /**
   * One column per state: moments groups as one (their merge reads all three), a row count that
   * positions give (no stored column) as the width of the range.
   */
  static List<RangeColumn> of(States states, boolean[] storedLongs) {
    List<RangeColumn> columns = new ArrayList<>();
    boolean[] inGroup = new boolean[states.longs()];
    boolean[] doubleInGroup = new boolean[states.doubles()];
    for (int[] group : states.momentGroups()) {
      columns.add(new Moments(group[0], group[1], group[2]));
      inGroup[group[0]] = true;
      doubleInGroup[group[1]] = true;
      doubleInGroup[group[2]] = true;
    }
    for (int s = 0; s < states.longs(); s++) {
      if (inGroup[s]) {
        continue;
      }
      columns.add(storedLongs[s] ? Slot.integral(s, states.longOp(s), states.longIdentityAt(s)) : new Rows(s));
    }
    for (int s = 0; s < states.doubles(); s++) {
      if (!doubleInGroup[s]) {
        columns.add(Slot.floating(s, states.doubleOp(s), states.doubleIdentityAt(s)));
      }
    }
    return columns;
  }

  /** The number of tuples in each window's range: a row count without WHERE. */
  static final class Rows extends RangeColumn {
    private final int slot;
    private long[] out;

    Rows(int slot) {
      this.slot = slot;
    }

    @Override
    void bind(KeyTuples key, WindowStates states) {
      out = states.longs[slot];
    }

    @Override
    void restart(int from, int to) {}

    @Override
    void slide(int[] from, int[] to, int w0, int w1) {
      for (int w = w0; w < w1; w++) {
        out[w] = to[w] - from[w];
      }
    }
  }

  /**
   * A state of one slot, sum (counts), min or max, integral (long arrays) or floating (double ones):
   * one implementation of the two stacks for both kinds. Each loop tests `floating`, a final field
   * that no pass changes: HotSpot's C2 unswitches such a test out of a loop, so each kind still runs a
   * loop over its own primitive arrays, nothing boxed, as when each kind had a class of its own.
   */
  static final class Slot extends RangeColumn {
    private final int slot;
    private final int op;
    private final boolean floating;
    private final long longIdentity;
    private final double doubleIdentity;
    // The key's values of the state, the suffix combines and the windows' states: an integral state's
    // in the long arrays, a floating state's in the double ones.
    private long[] longX;
    private long[] longSuffix;
    private long[] longOut;
    private double[] doubleX;
    private double[] doubleSuffix;
    private double[] doubleOut;
    private long longRunning;
    private double doubleRunning;

    /** Integral slot `slot` of the states. */
    static Slot integral(int slot, int op, long identity) {
      return new Slot(slot, op, false, identity, 0);
    }

    /** Floating slot `slot` of the states. */
    static Slot floating(int slot, int op, double identity) {
      return new Slot(slot, op, true, 0, identity);
    }

    private Slot(int slot, int op, boolean floating, long longIdentity, double doubleIdentity) {
      this.slot = slot;
      this.op = op;
      this.floating = floating;
      this.longIdentity = longIdentity;
      this.doubleIdentity = doubleIdentity;
    }

    @Override
    void bind(KeyTuples key, WindowStates states) {
      if (floating) {
        doubleX = key.doubles[slot];
        doubleSuffix = states.doubleScratch(doubleSuffix, key.size);
        doubleOut = states.doubles[slot];
      } else {
        longX = key.longs[slot];
        longSuffix = states.longScratch(longSuffix, key.size);
        longOut = states.longs[slot];
      }
    }

    @Override
    void restart(int from, int to) {
      long l = longIdentity;
      double d = doubleIdentity;
      for (int i = to - 1; i >= from; i--) {
        if (floating) {
          d = StateAlgebra.combine(op, doubleX[i], d);
          doubleSuffix[i] = d;
        } else {
          l = StateAlgebra.combine(op, longX[i], l);
          longSuffix[i] = l;
        }
      }
      longRunning = longIdentity;
      doubleRunning = doubleIdentity;
    }

    @Override
    void slide(int[] from, int[] to, int w0, int w1) {
      long l = longRunning;
      double d = doubleRunning;
      int end = to[w0];
      if (floating) {
        doubleOut[w0] = doubleSuffix[from[w0]];
      } else {
        longOut[w0] = longSuffix[from[w0]];
      }
      for (int w = w0 + 1; w < w1; w++) {
        for (; end < to[w]; end++) {
          if (floating) {
            d = StateAlgebra.combine(op, d, doubleX[end]);
          } else {
            l = StateAlgebra.combine(op, l, longX[end]);
          }
        }
        if (floating) {
          doubleOut[w] = StateAlgebra.combine(op, doubleSuffix[from[w]], d);
        } else {
          longOut[w] = StateAlgebra.combine(op, longSuffix[from[w]], l);
        }
      }
      longRunning = l;
      doubleRunning = d;
    }
  }

  /** Count, mean and M2 of a value, merged by Chan's parallel formula. */
  static final class Moments extends RangeColumn {
    private final int countSlot;
    private final int meanSlot;
    private final int m2Slot;
    private long[] n;
    private double[] mean;
    private double[] m2;
    private long[] suffixN;
    private double[] suffixMean;
    private double[] suffixM2;
    private long runningN;
    private double runningMean;
    private double runningM2;
    private long[] outN;
    private double[] outMean;
    private double[] outM2;

    Moments(int countSlot, int meanSlot, int m2Slot) {
      this.countSlot = countSlot;
      this.meanSlot = meanSlot;
      this.m2Slot = m2Slot;
    }

    @Override
    void bind(KeyTuples key, WindowStates states) {
      n = key.longs[countSlot];
      mean = key.doubles[meanSlot];
      m2 = key.doubles[m2Slot];
      suffixN = states.longScratch(suffixN, key.size);
      suffixMean = states.doubleScratch(suffixMean, key.size);
      suffixM2 = states.doubleScratch(suffixM2, key.size);
      outN = states.longs[countSlot];
      outMean = states.doubles[meanSlot];
      outM2 = states.doubles[m2Slot];
    }

    @Override
    void restart(int from, int to) {
      long accN = 0;
      double accMean = 0;
      double accM2 = 0;
      for (int i = to - 1; i >= from; i--) {
        double merged = StateAlgebra.momentsMean(n[i], mean[i], accN, accMean);
        accM2 = StateAlgebra.momentsM2(n[i], mean[i], m2[i], accN, accMean, accM2);
        accMean = merged;
        accN += n[i];
        suffixN[i] = accN;
        suffixMean[i] = accMean;
        suffixM2[i] = accM2;
      }
      runningN = 0;
      runningMean = 0;
      runningM2 = 0;
    }

    @Override
    void slide(int[] from, int[] to, int w0, int w1) {
      int end = to[w0];
      for (int w = w0; w < w1; w++) {
        for (; end < to[w]; end++) {
          double merged = StateAlgebra.momentsMean(runningN, runningMean, n[end], mean[end]);
          runningM2 = StateAlgebra.momentsM2(runningN, runningMean, runningM2, n[end], mean[end], m2[end]);
          runningMean = merged;
          runningN += n[end];
        }
        int f = from[w];
        outN[w] = suffixN[f] + runningN;
        outMean[w] = StateAlgebra.momentsMean(suffixN[f], suffixMean[f], runningN, runningMean);
        outM2[w] = StateAlgebra.momentsM2(suffixN[f], suffixMean[f], suffixM2[f], runningN, runningMean, runningM2);
      }
    }
  }
}
