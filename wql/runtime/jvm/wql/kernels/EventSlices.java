package wql.kernels;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.types.LongType;
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
 * <p>Column {@code horizon} holds the data's last window; an event that lasts to its last slice (an
 * open-ended one) is not written into each slice it spans but carried, as a running combine, into
 * every slice from its first on, so open-ended events cost one update each, not one per slice.
 *
 * <p>Output rows have the input's schema, with {@code first} and {@code last} holding the window-id;
 * windows whose first state (the event count) is zero are left out.
 */
public final class EventSlices {
  private EventSlices() {}

  /** The request a job's `slice_events` sends, or {@link KernelRequest.Refused}: then numpy runs. */
  static KernelRequest request(JsonNode request, StructType schema) {
    List<String> keys = KernelRequest.strings(request.path("keys"));
    String first = request.path("first").asText();
    String last = request.path("last").asText();
    String horizon = request.path("horizon").asText();
    List<String> names = List.of(schema.fieldNames());
    for (String column : List.of(first, last, horizon)) {
      if (!names.contains(column) || !(schema.apply(column).dataType() instanceof LongType)) {
        throw new KernelRequest.Refused("the slice column " + column + " is not a BIGINT");
      }
    }
    States states =
        States.of(
            schema,
            KernelRequest.strings(request.path("operations")),
            KernelRequest.strings(request.path("columns")));
    Keys keyFields = names.containsAll(keys) ? Keys.of(schema, keys) : null;
    if (states == null || keyFields == null || states.hasAbsentColumn()) {
      throw new KernelRequest.Refused("a key or state column has a type only the numpy kernel handles");
    }
    Spec spec = new Spec();
    spec.schema = schema;
    spec.states = states;
    spec.keys = keyFields;
    spec.firstField = schema.fieldIndex(first);
    spec.lastField = schema.fieldIndex(last);
    spec.horizonField = schema.fieldIndex(horizon);
    spec.size = request.path("size").asLong();
    spec.step = request.path("step").asLong();
    if (spec.size <= 0 || spec.step <= 0) {
      throw new KernelRequest.Refused("size and step must be positive");
    }
    return new Request(keys, first, spec);
  }

  /** Events to windows, each key's events in one partition sorted by their first slice. */
  static final class Request extends KernelRequest {
    private static final long serialVersionUID = 1L;
    private final List<String> keys;
    private final String first;
    private final Spec spec;

    Request(List<String> keys, String first, Spec spec) {
      this.keys = List.copyOf(keys);
      this.first = first;
      this.spec = spec;
    }

    @Override
    String name() {
      return "EventSlices";
    }

    @Override
    StructType output() {
      return spec.schema;
    }

    @Override
    SparkPlan plan(KernelNode node, KernelStrategy strategy) {
      Spec work = spec; // the closure must hold the spec alone
      KernelSpec kernel = new KernelSpec("EventSlices", keys, List.of(first), rows -> new Windows(rows, work));
      return new KernelExec(strategy.later(node.child), kernel, node.output());
    }

    @Override
    public String toString() {
      return "keys " + keys + ", " + spec.size + " slices a window, every " + spec.step;
    }
  }

  static final class Spec implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    StructType schema;
    States states;
    Keys keys;
    int firstField;
    int lastField;
    int horizonField;
    long size;
    long step;
  }

  /** One key's slices that events still reach: a ring of ϕ (or plain) states, φ states and flags. */
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
    boolean open; // events seen so far that last to the data's last slice: their shares, combined
    long[] openPlainLongs;
    double[] openPlainDoubles;
    long[] openCumulativeLongs;
    double[] openCumulativeDoubles;

    Pending(States states, int capacity) {
      longs = new long[capacity * states.longs()];
      doubles = new double[capacity * states.doubles()];
      phiLongs = new long[capacity * states.longs()];
      phiDoubles = new double[capacity * states.doubles()];
      touched = new boolean[capacity];
      lastPhiLongs = new long[states.longs()];
      lastPhiDoubles = new double[states.doubles()];
      openPlainLongs = new long[states.longs()];
      openPlainDoubles = new double[states.doubles()];
      openCumulativeLongs = new long[states.longs()];
      openCumulativeDoubles = new double[states.doubles()];
      states.identity(openPlainLongs, openPlainDoubles, 0);
      states.identity(openCumulativeLongs, openCumulativeDoubles, 0);
      for (int i = 0; i < capacity; i++) {
        states.identity(longs, doubles, i);
        states.identity(phiLongs, phiDoubles, i);
      }
    }

    int capacity() {
      return touched.length;
    }

    int at(int j) {
      return (head + j) & (touched.length - 1);
    }
  }

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
    private long end; // the data's last slice

    Windows(Iterator<InternalRow> rows, Spec spec) {
      super(rows, spec.keys, spec.states);
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
      memory = TaskMemory.ofTask("se-slices");
    }

    @Override
    UnsafeRow template(InternalRow row) {
      return copied(row, spec.schema);
    }

    @Override
    void add(InternalRow row) {
      StateQueue queue = queueOf(row);
      Pending slices = pending.get(queue);
      if (slices == null) {
        slices = new Pending(states, 16);
        account(16);
        pending.put(queue, slices);
      }
      long first = row.getLong(spec.firstField);
      long last = Math.max(row.getLong(spec.lastField), first);
      end = (row.getLong(spec.horizonField) + 1) * spec.step - 1;
      finalUpTo(queue, slices, first - 1); // no later event reaches a slice before this one's first
      if (slices.count == 0) {
        slices.base = first;
      }
      reach(slices, (int) Math.min(Integer.MAX_VALUE, Math.max(last, slices.open ? end : last) - slices.base + 1));
      split(row);
      if (last >= end) { // to the end of the data: carried into every slice from here on
        slices.open = true;
        merge(slices.openPlainLongs, slices.openPlainDoubles, plainLongs, plainDoubles);
        merge(slices.openCumulativeLongs, slices.openCumulativeDoubles, cumulativeLongs, cumulativeDoubles);
        return;
      }
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
      Pending slices = pending.get(queue);
      finalUpTo(queue, slices, Long.MAX_VALUE);
      if (queue.count > 0) {
        emitUpTo(queue, slices, queue.last + spec.size - 1);
      }
    }

    /** into ⊕= share, for one state layout. */
    private void merge(long[] intoLongs, double[] intoDoubles, long[] shareLongs, double[] shareDoubles) {
      states.merge(intoLongs, intoDoubles, 0, shareLongs, shareDoubles, 0, intoLongs, intoDoubles, 0);
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

    /** Makes the ring hold `length` slices from its base. */
    private void reach(Pending slices, int length) {
      if (length > slices.count) {
        int capacity = slices.capacity();
        if (length > capacity) {
          grow(slices, length);
        }
        slices.count = length;
      }
    }

    private void grow(Pending slices, int length) {
      int capacity = Integer.highestOneBit(Math.max(length, 2) - 1) << 1;
      account(capacity - slices.capacity());
      Pending grown = new Pending(states, capacity);
      int nl = states.longs();
      int nd = states.doubles();
      for (int j = 0; j < slices.count; j++) {
        int i = slices.at(j);
        System.arraycopy(slices.longs, i * nl, grown.longs, j * nl, nl);
        System.arraycopy(slices.doubles, i * nd, grown.doubles, j * nd, nd);
        System.arraycopy(slices.phiLongs, i * nl, grown.phiLongs, j * nl, nl);
        System.arraycopy(slices.phiDoubles, i * nd, grown.phiDoubles, j * nd, nd);
        grown.touched[j] = slices.touched[i];
      }
      slices.longs = grown.longs;
      slices.doubles = grown.doubles;
      slices.phiLongs = grown.phiLongs;
      slices.phiDoubles = grown.phiDoubles;
      slices.touched = grown.touched;
      slices.head = 0;
    }

    private void account(long slices) {
      if (memory != null) {
        memory.reserve(slices * (1 + 16L * (states.longs() + states.doubles())), slices);
      }
    }

    /** Moves the ring's slices up to `limit` into the key's queue, emitting the windows they complete. */
    private void finalUpTo(StateQueue queue, Pending slices, long limit) {
      int nl = states.longs();
      int nd = states.doubles();
      while (slices.count > 0 && slices.base <= limit) {
        int i = slices.at(0);
        long cell = slices.base;
        if (slices.open && cell <= end) { // the open-ended events: plain everywhere, ϕ in the last slice, φ before
          slices.touched[i] = true;
          states.merge(slices.longs, slices.doubles, i, slices.openPlainLongs, slices.openPlainDoubles, 0, slices.longs, slices.doubles, i);
          long[] l = cell == end ? slices.longs : slices.phiLongs;
          double[] d = cell == end ? slices.doubles : slices.phiDoubles;
          states.merge(l, d, i, slices.openCumulativeLongs, slices.openCumulativeDoubles, 0, l, d, i);
        }
        if (slices.touched[i]) {
          if (queue.count > 0) {
            emitUpTo(queue, slices, cell - 1);
          }
          queue.dropUpTo(cell - spec.size);
          System.arraycopy(slices.longs, i * nl, rowLongs, 0, nl);
          System.arraycopy(slices.doubles, i * nd, rowDoubles, 0, nd);
          queue.push(cell, rowLongs, rowDoubles);
          System.arraycopy(slices.phiLongs, i * nl, slices.lastPhiLongs, 0, nl);
          System.arraycopy(slices.phiDoubles, i * nd, slices.lastPhiDoubles, 0, nd);
          slices.lastPushed = cell;
          queue.next = cell;
          emitUpTo(queue, slices, cell);
        }
        slices.touched[i] = false;
        states.identity(slices.longs, slices.doubles, i);
        states.identity(slices.phiLongs, slices.phiDoubles, i);
        slices.head = slices.at(1);
        slices.count--;
        slices.base++;
      }
    }

    /** Emits the key's windows that end from its bookmark up to slice `last`, while they hold any slice. */
    private void emitUpTo(StateQueue queue, Pending slices, long last) {
      long step = spec.step;
      long end = step == 1 ? queue.next : Math.floorDiv(queue.next + step, step) * step - 1; // (end + 1) % step == 0
      for (; end <= last; end += step) {
        queue.dropUpTo(end - spec.size);
        if (queue.count == 0) {
          break;
        }
        emit(queue, slices, end);
      }
      queue.next = Math.max(queue.next, last + 1);
    }

    private void emit(StateQueue queue, Pending slices, long end) {
      queue.total(windowLongs, windowDoubles);
      if (slices.lastPushed == end) { // the events that go on past the window's last slice
        states.merge(windowLongs, windowDoubles, 0, slices.lastPhiLongs, slices.lastPhiDoubles, 0, windowLongs, windowDoubles, 0);
      }
      if (windowLongs[states.firstSlot] <= 0) {
        return;
      }
      UnsafeRow out = output(queue.template);
      long wid = spec.step == 1 ? end : Math.floorDiv(end + 1, spec.step) - 1;
      out.setLong(spec.firstField, wid);
      out.setLong(spec.lastField, wid);
      states.write(out, states.longField, states.doubleField, windowLongs, windowDoubles);
      ready.add(out);
    }
  }
}
