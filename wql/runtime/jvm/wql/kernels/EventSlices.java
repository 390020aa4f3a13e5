package wql.kernels;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.Iterator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;

/**
 * The SE-slices plan over interval events (Suzanne et al., TIME 2020), inside the JVM: the contract
 * of the numpy kernel {@code event_slices} in WQL's generated jobs.
 *
 * <p>Input: one row per event with its key columns, the first and last slice it overlaps (columns
 * {@code first} and {@code last}) and its share of each state. The plan gives every key's events to
 * one partition, sorted by their first slice. Window w is the {@code size} slices ending at slice (w
 * + 1) * step - 1.
 *
 * <p>Each key keeps the slices that events still reach in a ring (insert_event): min and max go into
 * every slice the event overlaps (plain slices); cumulative states (sums, moments) into the φ part of
 * every slice it goes on past and the ϕ part of the slice it ends in. Once an event starts past a
 * slice, no later event can reach it: the slice is final and joins the key's {@link StateQueue},
 * which combines each window's slices with a constant number of merges (combine*); a window then
 * adds the φ of its last slice (lower*), so every event that overlaps it counts once.
 *
 * <p>A long event is not written into slices: one over more slices than {@link #LONGER} (and than a
 * window), or one that lasts to the data's last slice (column {@code horizon} holds the data's last
 * window: an open-ended event). It waits until the windows reach its first slice and then counts
 * whole in each window it overlaps: a finite one as it is, until the windows pass its last slice;
 * the lasting ones combined into one state. So a key holds the slices its short events reach, its
 * long events in the window being emitted and the windows' slices, never the slices a long event
 * spans: one event from the first day to the data's end costs a state, not a slice a day. Windows
 * that hold only long events are emitted as well; between them the kernel skips to the next
 * event's first window.
 *
 * <p>Output rows have the input's schema, with {@code first} and {@code last} holding the window-id;
 * windows whose first state (the event count) is zero are left out.
 */
public final class EventSlices {
  private EventSlices() {}

  /**
   * The most slices an event is written into (at least a window's): a longer one is kept apart and
   * counted whole in each window it overlaps, so no key holds more slices than this and a window.
   */
  static final String LONGER = "spark.wql.slices.longEvent";

  static final long LONGER_SLICES = 1024;

  /** The request a job's `slice_events` sends, or {@link KernelRequest.Refused}: then numpy runs. */
  static KernelRequest request(RequestJson request, StructType schema) {
    Spec spec = new Spec(request, schema);
    String shown = "keys " + spec.keyNames + ", " + spec.size + " slices a window, every " + spec.step;
    return new KeyedRequest("EventSlices", spec.keyNames, spec.first, schema, rows -> new Windows(rows, spec), false, shown);
  }

  static final class Spec extends EventColumns {
    private static final long serialVersionUID = 1L;
    final long size;
    final long step;
    final long longer; // an event over more slices than this (and than a window) is kept apart, not written into each

    Spec(RequestJson request, StructType schema) {
      super(request, schema, "slice");
      size = request.number("size");
      step = request.number("step");
      longer = Long.parseLong(SQLConf.get().getConfString(LONGER, String.valueOf(LONGER_SLICES)));
      if (size <= 0 || step <= 0) {
        throw new KernelRequest.Refused("size and step must be positive");
      }
    }
  }

  /**
   * One key's state: a ring of the slices that its short events still reach (ϕ or plain states, φ
   * states, flags), and its long events, kept apart.
   */
  static final class Pending {
    long base; // the slice at the ring's head
    int count;
    int head;
    long[] longs; // ϕ or plain parts, a state layout per slice
    double[] doubles;
    long[] phiLongs; // φ parts
    double[] phiDoubles;
    boolean[] touched;
    long lastPushed = Long.MIN_VALUE; // the last final slice, and its φ
    long[] lastPhiLongs;
    double[] lastPhiDoubles;
    final ArrayDeque<Carried> waiting = new ArrayDeque<>(); // long events in no window emitted yet, by first slice
    final ArrayList<Carried> active = new ArrayList<>(); // finite long events in the window being emitted
    boolean lasting; // events to the data's last slice in the windows emitted so far: their shares, combined
    final long[] lastingLongs;
    final double[] lastingDoubles;

    Pending(States states, int capacity) {
      allocate(states, capacity);
      lastPhiLongs = new long[states.longs()];
      lastPhiDoubles = new double[states.doubles()];
      lastingLongs = new long[states.longs()];
      lastingDoubles = new double[states.doubles()];
      states.identity(lastingLongs, lastingDoubles, 0);
    }

    private void allocate(States states, int capacity) {
      longs = new long[capacity * states.longs()];
      doubles = new double[capacity * states.doubles()];
      phiLongs = new long[capacity * states.longs()];
      phiDoubles = new double[capacity * states.doubles()];
      touched = new boolean[capacity];
      for (int i = 0; i < capacity; i++) {
        states.identity(longs, doubles, i);
        states.identity(phiLongs, phiDoubles, i);
      }
    }

    int capacity() {
      return touched.length;
    }

    /** The ring's capacity for `length` slices: the power of two at or above it. */
    static int capacityFor(int length) {
      return Integer.highestOneBit(Math.max(length, 2) - 1) << 1;
    }

    int at(int j) {
      return (head + j) & (touched.length - 1);
    }

    /** Makes the ring hold `length` slices from its base, keeping the ones it holds. */
    void reach(States states, int length) {
      if (length <= count) {
        return;
      }
      if (length > capacity()) {
        long[] l = longs;
        double[] d = doubles;
        long[] pl = phiLongs;
        double[] pd = phiDoubles;
        boolean[] t = touched;
        int mask = t.length - 1;
        allocate(states, capacityFor(length));
        int nl = states.longs();
        int nd = states.doubles();
        for (int j = 0; j < count; j++) {
          int i = (head + j) & mask;
          System.arraycopy(l, i * nl, longs, j * nl, nl);
          System.arraycopy(d, i * nd, doubles, j * nd, nd);
          System.arraycopy(pl, i * nl, phiLongs, j * nl, nl);
          System.arraycopy(pd, i * nd, phiDoubles, j * nd, nd);
          touched[j] = t[i];
        }
        head = 0;
      }
      count = length;
    }
  }

  /** A long event, kept apart: its slices (last: Long.MAX_VALUE to the data's end) and its shares. */
  record Carried(long first, long last, long[] longs, double[] doubles) {}

  /** The windows of one partition's events, sorted by first slice, with every key's events in it. */
  static final class Windows extends KeyedWindows {
    private final Spec spec;
    private final IdentityHashMap<StateQueue, Pending> pending = new IdentityHashMap<>();
    private final long[] plainLongs; // an event's share of the plain states (identity in cumulative ones)
    private final double[] plainDoubles;
    private final long[] cumulativeLongs; // and of the cumulative states (identity in plain ones)
    private final double[] cumulativeDoubles;
    private final boolean[] plainLong;
    private final boolean[] plainDouble;
    private final TaskMemory memory;
    private final long longer; // the most slices an event is written into
    private final long carriedBytes; // what a long event kept apart holds
    private long end; // the data's last slice

    Windows(Iterator<InternalRow> rows, Spec spec) {
      super(rows, spec.keys, spec.states, Output.sameAs(spec.schema, spec.states, spec.firstField, spec.lastField));
      this.spec = spec;
      States s = spec.states;
      plainLongs = new long[s.longs()];
      plainDoubles = new double[s.doubles()];
      cumulativeLongs = new long[s.longs()];
      cumulativeDoubles = new double[s.doubles()];
      plainLong = new boolean[s.longs()];
      plainDouble = new boolean[s.doubles()];
      for (int i = 0; i < plainLong.length; i++) {
        plainLong[i] = s.longOp(i) == States.MIN || s.longOp(i) == States.MAX;
      }
      for (int i = 0; i < plainDouble.length; i++) {
        plainDouble[i] = s.doubleOp(i) == States.MIN || s.doubleOp(i) == States.MAX;
      }
      longer = Math.max(spec.longer, spec.size);
      carriedBytes = 64 + 8L * (s.longs() + s.doubles());
      memory = TaskMemory.ofTask("se-slices");
    }

    @Override
    void add(InternalRow row) {
      StateQueue queue = queueOf(row);
      Pending slices = pending.get(queue);
      if (slices == null) {
        slices = new Pending(states, 16);
        account(16);
        pending.put(queue, slices);
        queue.next = row.getLong(spec.firstField); // no window ending before the key's first event holds one
      }
      long first = row.getLong(spec.firstField);
      long last = Math.max(row.getLong(spec.lastField), first);
      end = (row.getLong(spec.horizonField) + 1) * spec.step - 1;
      finalUpTo(queue, slices, first - 1); // no later event reaches a slice before this one's first
      if (last >= end || last - first >= longer) { // long: counted whole in each window it overlaps
        states.read(row, rowLongs, rowDoubles);
        if (memory != null) {
          memory.reserve(carriedBytes, 1);
        }
        slices.waiting.add(new Carried(first, last >= end ? Long.MAX_VALUE : last, rowLongs.clone(), rowDoubles.clone()));
        return;
      }
      if (slices.count == 0) {
        slices.base = first;
      }
      int length = (int) (last - slices.base + 1);
      if (length > slices.capacity()) {
        account(Pending.capacityFor(length) - slices.capacity()); // before the ring grows: refused, nothing is allocated
      }
      slices.reach(states, length);
      split(row);
      int stop = (int) (last - slices.base);
      for (int j = (int) (first - slices.base); j <= stop; j++) {
        int i = slices.at(j);
        slices.touched[i] = true;
        states.merge(slices.longs, slices.doubles, i, plainLongs, plainDoubles, 0, slices.longs, slices.doubles, i);
        if (j < stop) { // the event goes on past this slice: φ
          states.merge(
              slices.phiLongs, slices.phiDoubles, i, cumulativeLongs, cumulativeDoubles, 0, slices.phiLongs, slices.phiDoubles, i);
        } else { // the slice it ends in: ϕ
          states.merge(slices.longs, slices.doubles, i, cumulativeLongs, cumulativeDoubles, 0, slices.longs, slices.doubles, i);
        }
      }
    }

    @Override
    void close(StateQueue queue) {
      finalUpTo(queue, pending.get(queue), Long.MAX_VALUE);
    }

    /** An event's shares, apart: plain states (min, max) and cumulative ones (sums, moments). */
    private void split(InternalRow row) {
      states.read(row, rowLongs, rowDoubles);
      states.identity(plainLongs, plainDoubles, 0);
      states.identity(cumulativeLongs, cumulativeDoubles, 0);
      for (int s = 0; s < rowLongs.length; s++) {
        (plainLong[s] ? plainLongs : cumulativeLongs)[s] = rowLongs[s];
      }
      for (int s = 0; s < rowDoubles.length; s++) {
        (plainDouble[s] ? plainDoubles : cumulativeDoubles)[s] = rowDoubles[s];
      }
    }

    private void account(long slices) {
      if (memory != null) {
        memory.reserve(slices * (1 + 16L * (states.longs() + states.doubles())), slices);
      }
    }

    /**
     * Moves the ring's slices up to `limit` into the key's queue, and emits the windows ending up to
     * `limit`: every event that starts there has been seen.
     */
    private void finalUpTo(StateQueue queue, Pending slices, long limit) {
      int nl = states.longs();
      int nd = states.doubles();
      while (slices.count > 0 && slices.base <= limit) {
        int i = slices.at(0);
        long cell = slices.base;
        if (slices.touched[i]) {
          emitUpTo(queue, slices, cell - 1);
          queue.dropUpTo(cell - spec.size);
          System.arraycopy(slices.longs, i * nl, rowLongs, 0, nl);
          System.arraycopy(slices.doubles, i * nd, rowDoubles, 0, nd);
          queue.push(cell, rowLongs, rowDoubles);
          System.arraycopy(slices.phiLongs, i * nl, slices.lastPhiLongs, 0, nl);
          System.arraycopy(slices.phiDoubles, i * nd, slices.lastPhiDoubles, 0, nd);
          slices.lastPushed = cell;
          emitUpTo(queue, slices, cell);
        }
        slices.touched[i] = false;
        states.identity(slices.longs, slices.doubles, i);
        states.identity(slices.phiLongs, slices.phiDoubles, i);
        slices.head = slices.at(1);
        slices.count--;
        slices.base++;
      }
      emitUpTo(queue, slices, limit);
    }

    /** The first window end at or after slice `cell`: ends are the slices k · step − 1. */
    private long windowEnd(long cell) {
      return spec.step == 1 ? cell : Math.floorDiv(cell + spec.step, spec.step) * spec.step - 1;
    }

    /**
     * Emits the key's windows that end from its bookmark up to slice `last` and hold a final slice or
     * a long event, passing over the stretches where they hold neither.
     */
    private void emitUpTo(StateQueue queue, Pending slices, long last) {
      long at = windowEnd(queue.next);
      while (at <= last) {
        long from = at - spec.size + 1; // the window's first slice
        while (!slices.waiting.isEmpty() && slices.waiting.peek().first() <= at) {
          Carried event = slices.waiting.poll();
          if (event.last() == Long.MAX_VALUE) { // in every later window up to the data's end: combined
            slices.lasting = true;
            states.merge(slices.lastingLongs, slices.lastingDoubles, 0, event.longs(), event.doubles(), 0, slices.lastingLongs, slices.lastingDoubles, 0);
            release(1);
          } else {
            slices.active.add(event);
          }
        }
        queue.dropUpTo(from - 1);
        expire(slices, from);
        boolean lasting = slices.lasting && from <= end;
        if (queue.count == 0 && slices.active.isEmpty() && !lasting) {
          if (slices.waiting.isEmpty()) {
            break; // nothing until a slice is final: the caller comes back then
          }
          at = Math.max(at + spec.step, windowEnd(slices.waiting.peek().first()));
          continue;
        }
        emit(queue, slices, at, lasting);
        at += spec.step;
      }
      queue.next = Math.max(queue.next, last == Long.MAX_VALUE ? at : last + 1);
    }

    /** Drops the long events that end before slice `from`: no later window holds them. */
    private void expire(Pending slices, long from) {
      int kept = 0;
      for (Carried event : slices.active) {
        if (event.last() >= from) {
          slices.active.set(kept++, event);
        }
      }
      int gone = slices.active.size() - kept;
      if (gone > 0) {
        slices.active.subList(kept, slices.active.size()).clear();
        release(gone);
      }
    }

    private void release(int events) {
      if (memory != null) {
        memory.release(events * carriedBytes);
      }
    }

    private void emit(StateQueue queue, Pending slices, long end, boolean lasting) {
      queue.total(windowLongs, windowDoubles);
      if (slices.lastPushed == end) { // the events that go on past the window's last slice
        states.merge(windowLongs, windowDoubles, 0, slices.lastPhiLongs, slices.lastPhiDoubles, 0, windowLongs, windowDoubles, 0);
      }
      if (lasting) {
        states.merge(windowLongs, windowDoubles, 0, slices.lastingLongs, slices.lastingDoubles, 0, windowLongs, windowDoubles, 0);
      }
      for (Carried event : slices.active) {
        states.merge(windowLongs, windowDoubles, 0, event.longs(), event.doubles(), 0, windowLongs, windowDoubles, 0);
      }
      emit(queue.template, spec.step == 1 ? end : Math.floorDiv(end + 1, spec.step) - 1);
    }
  }
}
