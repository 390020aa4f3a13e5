package wql.kernels;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;

/**
 * The sweep plan over interval events, inside the JVM: the contract of the numpy kernel {@code
 * event_differences} (with extremes) in WQL's generated jobs.
 *
 * <p>Input: one row per event that counts, with its key columns, its first window ({@code first}),
 * its last ({@code last}; NULL for an open-ended event; before its first for an event inside a gap
 * between windows, which is in none), the data's last window ({@code horizon}, the same on every row)
 * and its share of each state. The plan gives every key's events to one partition, sorted by their
 * first window (Spark's sort, which spills).
 *
 * <p>Each key's windows are swept in order. An event enters at its first window and leaves after
 * its last. Cumulative states (sums, counts, the halves of the moments) are placed as in the
 * difference plan ({@link EventDeltas}): "signed" shares are added when the event enters and
 * subtracted when it leaves, "start" ones merged when it enters, "end" ones when it leaves, into
 * one running state; the leaving parts wait in a ring over the window-ids ahead (an event that ends
 * more than {@link #LONGER} windows ahead, in a heap by window-id). Extremes (min, max) keep, per
 * state, a heap of the events' values with their last windows, ordered best first: a window's
 * extreme is the heap's top once the events that ended before the window are dropped from the top.
 * An event that an entered one beats in value and outlasts can never be the extreme again: it is
 * not put in at all when the top dominates it, and the heap, whenever it has doubled, is compacted
 * to the events that neither have ended nor are dominated (the "staircase" of values by last
 * window). An event that lasts to the data's last window (open-ended) never leaves: its shares,
 * extremes included, go into the running state. So each event costs a few heap and ring steps
 * whatever its length, and a key holds the ring of the windows in flight, the long events still
 * running, and per extreme at most twice the events that could still be a window's extreme.
 *
 * <p>Output rows have the input's schema, with {@code first} and {@code last} holding the
 * window-id; windows whose first state (the event count) is zero are left out.
 */
public final class EventSweep {
  /**
   * An event ending more than this many windows past the one being swept waits for its end in a heap
   * by window-id rather than in the ring: the ring then spans at most this many windows.
   */
  static final String LONGER = "spark.wql.sweep.longEvent";

  static final long LONGER_WINDOWS = 1024;

  private EventSweep() {}

  /** The request a job's `sweep_windows` sends, or {@link KernelRequest.Refused}: then numpy runs. */
  static KernelRequest request(RequestJson request, StructType schema) {
    Spec spec = new Spec(request, schema);
    String shown = "keys " + spec.keyNames + ", a sweep along each key's windows";
    return new KeyedRequest("EventSweep", spec.keyNames, spec.first, schema, rows -> new Windows(rows, spec), false, shown);
  }

  static final class Spec extends EventColumns {
    private static final long serialVersionUID = 1L;
    final Placements places;
    final long longer; // an event ending further ahead than this waits in the heap by window-id, not the ring

    Spec(RequestJson request, StructType schema) {
      super(request, schema, "window");
      places = new Placements(request, states, true);
      longer = Math.max(0, Long.parseLong(SQLConf.get().getConfString(LONGER, String.valueOf(LONGER_WINDOWS))));
    }
  }

  /**
   * The events of one extreme state that can still be a window's extreme: their values as keys that
   * order best first (a larger key is a better value), with their last windows, in a binary heap.
   */
  static final class Extremes {
    final boolean floating;
    final int op; // States.MIN or States.MAX
    final int slot; // the state's slot among the long or the double states
    long[] keys = new long[16];
    long[] ends = new long[16];
    int size;
    private int compacted; // the size after the last compaction

    Extremes(boolean floating, int op, int slot) {
      this.floating = floating;
      this.op = op;
      this.slot = slot;
    }

    /**
     * A value's key: larger is better. Doubles in Double.compare's order (NaN above every number, as
     * Spark orders it; −0.0 below 0.0, as Math.max and Math.min take them); for min, the complement.
     */
    long key(long value) {
      return op == States.MAX ? value : ~value;
    }

    long key(double value) {
      long bits = Double.doubleToLongBits(value);
      long ordered = bits ^ ((bits >> 63) & Long.MAX_VALUE);
      return op == States.MAX ? ordered : ~ordered;
    }

    long longValue(long key) {
      return op == States.MAX ? key : ~key;
    }

    double doubleValue(long key) {
      long ordered = op == States.MAX ? key : ~key;
      return Double.longBitsToDouble(ordered ^ ((ordered >> 63) & Long.MAX_VALUE));
    }

    /** Drops the events at the top that end before window `window`; true when one is left. */
    boolean settle(long window) {
      while (size > 0 && ends[0] < window) {
        pop();
      }
      return size > 0;
    }

    /**
     * Adds an event of value key `key` lasting to window `end`, unless the top beats it and outlasts
     * it; compacts first when the heap has doubled since it last was (events `window` is past
     * dropped). The owner accounts the arrays' growth before they grow.
     */
    void add(long key, long end, long window, Windows owner) {
      if (size > 0 && keys[0] >= key && ends[0] >= end) {
        return; // never a window's extreme: the top is at least as good as long
      }
      if (size >= Math.max(64, 2 * compacted)) {
        compact(window);
      }
      if (size == keys.length) {
        owner.account(16L * size, size);
        keys = Arrays.copyOf(keys, 2 * size);
        ends = Arrays.copyOf(ends, 2 * size);
      }
      int i = size++;
      while (i > 0) { // sift up
        int parent = (i - 1) >>> 1;
        if (keys[parent] >= key) {
          break;
        }
        keys[i] = keys[parent];
        ends[i] = ends[parent];
        i = parent;
      }
      keys[i] = key;
      ends[i] = end;
    }

    private void pop() {
      size--;
      if (size > 0) {
        siftDown(keys[size], ends[size], size);
      }
    }

    /** Puts (key, end) at the root of the first `n` entries and sifts it down. */
    private void siftDown(long key, long end, int n) {
      int i = 0;
      while (true) {
        int child = 2 * i + 1;
        if (child >= n) {
          break;
        }
        if (child + 1 < n && keys[child + 1] > keys[child]) {
          child++;
        }
        if (keys[child] <= key) {
          break;
        }
        keys[i] = keys[child];
        ends[i] = ends[child];
        i = child;
      }
      keys[i] = key;
      ends[i] = end;
    }

    /**
     * Keeps only the events that have not ended before `window` and that no better or equal event
     * outlasts: heapsorted in place (ascending), then read from the best down, each kept only if it
     * ends after every better one; the kept ones, best first, are a heap as they stand.
     */
    void compact(long window) {
      int n = size;
      for (int last = n - 1; last > 0; last--) {
        long key = keys[last];
        long end = ends[last];
        keys[last] = keys[0];
        ends[last] = ends[0];
        siftDown(key, end, last);
      }
      int to = n; // kept entries fill the tail from the end down, best at n - 1
      long reach = window - 1; // the latest end of a better event so far (or of the ended ones)
      for (int i = n - 1; i >= 0; i--) {
        if (ends[i] > reach) {
          reach = ends[i];
          to--;
          keys[to] = keys[i];
          ends[to] = ends[i];
        }
      }
      int kept = n - to;
      for (int i = to, j = n - 1; i < j; i++, j--) { // best first: the tail reversed, then moved to the front
        long key = keys[i];
        long end = ends[i];
        keys[i] = keys[j];
        ends[i] = ends[j];
        keys[j] = key;
        ends[j] = end;
      }
      System.arraycopy(keys, to, keys, 0, kept);
      System.arraycopy(ends, to, ends, 0, kept);
      size = kept;
      compacted = kept;
    }

    /** Empties the heap; returns the bytes freed by shrinking its arrays back to their first size. */
    long clear() {
      size = 0;
      compacted = 0;
      if (keys.length == 16) {
        return 0;
      }
      long freed = 16L * (keys.length - 16);
      keys = new long[16];
      ends = new long[16];
      return freed;
    }
  }

  /** One key's sweep: where it is, its running state, the leaving shares ahead, its extremes. */
  static final class Sweep {
    long next; // the next window to look at: every earlier one has gone out
    long live; // events entered that have not left (finite ones: each has one leaving share ahead)
    boolean lasting; // an event that lasts to the data's last window has entered
    final long[] runLongs; // the running state: cumulative states, and the lasting events' extremes
    final double[] runDoubles;
    long[] ringLongs; // leaving shares, one combined state per window-id ahead (id & mask)
    double[] ringDoubles;
    int[] ringLeaving; // events leaving at each slot's window-id
    int mask;
    long[] farIds = new long[0]; // leaving shares further ahead: a min-heap by window-id
    long[] farLongs = new long[0];
    double[] farDoubles = new double[0];
    int far;
    final Extremes[] extremes;

    Sweep(States states, Extremes[] extremes) {
      runLongs = new long[states.longs()];
      runDoubles = new double[states.doubles()];
      states.identity(runLongs, runDoubles, 0);
      allocateRing(states, 16);
      this.extremes = extremes;
    }

    private void allocateRing(States states, int capacity) {
      ringLongs = new long[capacity * states.longs()];
      ringDoubles = new double[capacity * states.doubles()];
      ringLeaving = new int[capacity];
      for (int i = 0; i < capacity; i++) {
        states.identity(ringLongs, ringDoubles, i);
      }
      mask = capacity - 1;
    }

    int ringCapacity() {
      return mask + 1;
    }

    /** Back to a ring of 16 empty slots: no event is waiting to leave. */
    void shrinkRing(States states) {
      allocateRing(states, 16);
    }

    /** Makes the ring span `span` window-ids from `next`, its shares kept at their ids. */
    void growRing(States states, int span) {
      long[] l = ringLongs;
      double[] d = ringDoubles;
      int[] leaving = ringLeaving;
      int oldMask = mask;
      allocateRing(states, EventSlices.Pending.capacityFor(span));
      int nl = states.longs();
      int nd = states.doubles();
      for (int j = 0; j <= oldMask; j++) {
        int from = (int) ((next + j) & oldMask);
        int to = (int) ((next + j) & mask);
        System.arraycopy(l, from * nl, ringLongs, to * nl, nl);
        System.arraycopy(d, from * nd, ringDoubles, to * nd, nd);
        ringLeaving[to] = leaving[from];
      }
    }
  }

  /** The windows of one partition's events, sorted by first window, with every key's events in it. */
  static final class Windows extends KeyedWindows {
    private final Spec spec;
    private final IdentityHashMap<StateQueue, Sweep> sweeps = new IdentityHashMap<>();
    private final TaskMemory memory;
    private final long[] shareLongs; // an event's shares as it enters (state 0) and as it leaves (state 1)
    private final double[] shareDoubles;
    private final int nl;
    private final int nd;
    private long horizon = Long.MIN_VALUE; // the data's last window

    Windows(Iterator<InternalRow> rows, Spec spec) {
      super(rows, spec.keys, spec.states, Output.sameAs(spec.schema, spec.states, spec.firstField, spec.lastField));
      this.spec = spec;
      nl = states.longs();
      nd = states.doubles();
      shareLongs = new long[2 * nl];
      shareDoubles = new double[2 * nd];
      memory = TaskMemory.ofTask("sweep");
    }

    private Extremes[] newExtremes() {
      List<Extremes> extremes = new ArrayList<>();
      for (int s = 0; s < nl; s++) {
        if (spec.places.longPlace[s] == Placements.EXTREME) {
          extremes.add(new Extremes(false, states.longOp(s), s));
        }
      }
      for (int s = 0; s < nd; s++) {
        if (spec.places.doublePlace[s] == Placements.EXTREME) {
          extremes.add(new Extremes(true, states.doubleOp(s), s));
        }
      }
      return extremes.toArray(new Extremes[0]);
    }

    /** Accounts `bytes` more held for `events` events, or fails with a message that says what to change. */
    void account(long bytes, long events) {
      if (memory != null) {
        memory.reserve(bytes, events);
      }
    }

    @Override
    void add(InternalRow row) {
      long first = row.getLong(spec.firstField);
      boolean ends = !row.isNullAt(spec.lastField);
      long last = ends ? row.getLong(spec.lastField) : Long.MAX_VALUE;
      if (last < first) {
        return; // inside a gap between windows (SLIDE > RANGE): in none
      }
      horizon = row.getLong(spec.horizonField);
      StateQueue queue = queueOf(row);
      Sweep sweep = sweeps.get(queue);
      if (sweep == null) {
        sweep = new Sweep(states, newExtremes());
        account(16L * (4 + 8L * (nl + nd)) + 256L * (1 + sweep.extremes.length), 1);
        sweeps.put(queue, sweep);
        sweep.next = first;
      }
      emitUpTo(queue, sweep, first - 1); // no later event of the key enters before this one's first window
      states.read(row, rowLongs, rowDoubles);
      boolean lasting = last >= horizon; // never leaves before the data's last window
      spec.places.split(states, rowLongs, rowDoubles, lasting, shareLongs, shareDoubles);
      states.merge(sweep.runLongs, sweep.runDoubles, 0, shareLongs, shareDoubles, 0, sweep.runLongs, sweep.runDoubles, 0);
      if (lasting) {
        sweep.lasting = true;
        return;
      }
      sweep.live++;
      leaveAt(sweep, last + 1);
      for (Extremes extreme : sweep.extremes) {
        if (extreme.floating) {
          double value = rowDoubles[extreme.slot];
          if (Double.doubleToLongBits(value) != Double.doubleToLongBits(states.doubleIdentityAt(extreme.slot))) {
            extreme.add(extreme.key(value), last, first, this);
          }
        } else {
          long value = rowLongs[extreme.slot];
          if (value != states.longIdentityAt(extreme.slot)) {
            extreme.add(extreme.key(value), last, first, this);
          }
        }
      }
    }

    /** Puts the event's leaving shares at window-id `id`: in the ring, or in the heap by id if it is far. */
    private void leaveAt(Sweep sweep, long id) {
      long ahead = id - sweep.next;
      if (ahead >= sweep.ringCapacity() && ahead <= spec.longer) {
        int capacity = EventSlices.Pending.capacityFor((int) ahead + 1);
        account((long) (capacity - sweep.ringCapacity()) * (4 + 8L * (nl + nd)), capacity);
        sweep.growRing(states, (int) ahead + 1);
      }
      if (ahead < sweep.ringCapacity()) {
        int i = (int) (id & sweep.mask);
        states.merge(sweep.ringLongs, sweep.ringDoubles, i, shareLongs, shareDoubles, 1, sweep.ringLongs, sweep.ringDoubles, i);
        sweep.ringLeaving[i]++;
        return;
      }
      if (sweep.far == sweep.farIds.length) {
        int grown = Math.max(16, 2 * sweep.far);
        account((long) (grown - sweep.far) * 8L * (1 + nl + nd), grown);
        sweep.farIds = Arrays.copyOf(sweep.farIds, grown);
        sweep.farLongs = Arrays.copyOf(sweep.farLongs, grown * nl);
        sweep.farDoubles = Arrays.copyOf(sweep.farDoubles, grown * nd);
      }
      int i = sweep.far++;
      while (i > 0) { // sift up: the earliest id at the root
        int parent = (i - 1) >>> 1;
        if (sweep.farIds[parent] <= id) {
          break;
        }
        moveFar(sweep, parent, i);
        i = parent;
      }
      sweep.farIds[i] = id;
      System.arraycopy(shareLongs, nl, sweep.farLongs, i * nl, nl);
      System.arraycopy(shareDoubles, nd, sweep.farDoubles, i * nd, nd);
    }

    private void moveFar(Sweep sweep, int from, int to) {
      sweep.farIds[to] = sweep.farIds[from];
      System.arraycopy(sweep.farLongs, from * nl, sweep.farLongs, to * nl, nl);
      System.arraycopy(sweep.farDoubles, from * nd, sweep.farDoubles, to * nd, nd);
    }

    /** Merges the far heap's root into the running state and removes it. */
    private void leaveFar(Sweep sweep) {
      states.merge(sweep.runLongs, sweep.runDoubles, 0, sweep.farLongs, sweep.farDoubles, 0, sweep.runLongs, sweep.runDoubles, 0);
      sweep.live--;
      int n = --sweep.far;
      if (n == 0) {
        return;
      }
      long id = sweep.farIds[n];
      int i = 0;
      while (true) {
        int child = 2 * i + 1;
        if (child >= n) {
          break;
        }
        if (child + 1 < n && sweep.farIds[child + 1] < sweep.farIds[child]) {
          child++;
        }
        if (sweep.farIds[child] >= id) {
          break;
        }
        moveFar(sweep, child, i);
        i = child;
      }
      moveFar(sweep, n, i);
    }

    /** The events leaving at window `window` leave the running state. */
    private void settle(Sweep sweep, long window) {
      int i = (int) (window & sweep.mask);
      if (sweep.ringLeaving[i] > 0) {
        states.merge(sweep.runLongs, sweep.runDoubles, 0, sweep.ringLongs, sweep.ringDoubles, i, sweep.runLongs, sweep.runDoubles, 0);
        sweep.live -= sweep.ringLeaving[i];
        sweep.ringLeaving[i] = 0;
        states.identity(sweep.ringLongs, sweep.ringDoubles, i);
      }
      while (sweep.far > 0 && sweep.farIds[0] <= window) {
        leaveFar(sweep);
      }
    }

    /**
     * Every event but the lasting ones has left: the heaps hold only ended events and the ring nothing,
     * so they go back to their first size, and a key that waits for its next event (or for the
     * partition's end, among many keys) holds a few hundred bytes.
     */
    private void idle(Sweep sweep) {
      long freed = 0;
      for (Extremes extreme : sweep.extremes) {
        freed += extreme.clear();
      }
      if (sweep.ringCapacity() > 16) {
        freed += (long) (sweep.ringCapacity() - 16) * (4 + 8L * (nl + nd));
        sweep.shrinkRing(states);
      }
      if (sweep.farIds.length > 0) {
        freed += (long) sweep.farIds.length * 8L * (1 + nl + nd);
        sweep.farIds = new long[0];
        sweep.farLongs = new long[0];
        sweep.farDoubles = new double[0];
      }
      if (memory != null && freed > 0) {
        memory.release(freed);
      }
    }

    @Override
    void close(StateQueue queue) {
      Sweep sweep = sweeps.get(queue);
      if (sweep != null) {
        emitUpTo(queue, sweep, Long.MAX_VALUE);
      }
    }

    /**
     * Emits the key's windows from its bookmark up to `limit` (and the data's last window): every
     * event that enters before `limit` + 1 has. Once no event is in, the windows up to the key's next
     * event hold none: the sweep goes on from there.
     */
    private void emitUpTo(StateQueue queue, Sweep sweep, long limit) {
      long stop = Math.min(limit, horizon);
      for (long window = sweep.next; window <= stop; window++) {
        settle(sweep, window);
        if (sweep.live == 0) {
          idle(sweep);
          if (!sweep.lasting) {
            break;
          }
        }
        emit(queue, sweep, window);
      }
      sweep.next = Math.max(sweep.next, stop + 1);
    }

    private void emit(StateQueue queue, Sweep sweep, long window) {
      System.arraycopy(sweep.runLongs, 0, windowLongs, 0, nl);
      System.arraycopy(sweep.runDoubles, 0, windowDoubles, 0, nd);
      for (Extremes extreme : sweep.extremes) {
        if (!extreme.settle(window)) {
          continue;
        }
        int s = extreme.slot;
        if (extreme.floating) {
          windowDoubles[s] = StateAlgebra.combine(extreme.op, windowDoubles[s], extreme.doubleValue(extreme.keys[0]));
        } else {
          windowLongs[s] = StateAlgebra.combine(extreme.op, windowLongs[s], extreme.longValue(extreme.keys[0]));
        }
      }
      emit(queue.template, window);
    }
  }
}
