package wql.kernels;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.LogicalQueryStage;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * The difference plan over interval events, inside the JVM: the contract of the numpy kernel {@code
 * event_differences} in WQL's generated jobs.
 *
 * <p>Input: one row per event that counts, with its key columns, its first window ({@code first}),
 * its last ({@code last}; NULL for an open-ended event; before its first for an event inside a gap
 * between windows, which is in none), the data's last window ({@code horizon}, the same on every row)
 * and its share of each state. A state is placed at the event's first window and,
 * negated, one past its last ("signed": sums and counts, so a running total over the windows holds
 * exactly the events that overlap each), or only at its first ("start") or only one past its last
 * ("end"): the two halves of the moments, which only grow and are subtracted per window afterwards.
 *
 * <p>Two nodes of Spark's logical plan, as the bins kernel has ({@link TupleWindows}). Before the
 * shuffle, {@link Mapper} adds each partition's deltas into dense per-key arrays over the window-ids
 * it sees (sorted runs where they are too sparse for an array), and ships each key's arrays as a few
 * rows of arrays: the shuffle moves a row per key and chunk, not two per event, and no hash
 * aggregate ever sees the deltas. After it, {@link Windows} merges each key's arrays, runs the
 * combine along the window-ids, and emits one row per window that holds an event (the first state,
 * a count, is positive), up to the data's last window.
 *
 * <p>Output rows have the input's schema, with {@code first} and {@code last} holding the window-id.
 */
public final class EventDeltas {
  static final int SIGNED = 0;
  static final int START = 1;
  static final int END = 2;
  /** The most window-ids one shipped row holds. */
  static final int CHUNK = 1 << 15;
  private static final String LO = "__wql_lo";
  private static final String HORIZON = "__wql_h";
  private static final String CELLS = "__wql_cells";
  private static final String LONG = "__wql_long";
  private static final String DOUBLE = "__wql_double";

  private EventDeltas() {}

  /** The request a job's `difference_windows` sends, or {@link KernelRequest.Refused}: then numpy runs. */
  static KernelRequest request(JsonNode request, StructType input) {
    List<String> keys = KernelRequest.strings(request.path("keys"));
    String first = request.path("first").asText();
    String last = request.path("last").asText();
    String horizon = request.path("horizon").asText();
    List<String> operations = KernelRequest.strings(request.path("operations"));
    List<String> columns = KernelRequest.strings(request.path("columns"));
    List<String> placements = KernelRequest.strings(request.path("placements"));
    spec(input, keys, first, last, horizon, operations, columns, placements); // refuses what it cannot compute
    return new Request(keys, first, last, horizon, operations, columns, placements, input);
  }

  /** What the operators know of the events, the shipped arrays and the windows, from the events' schema. */
  static Spec spec(
      StructType input,
      List<String> keys,
      String first,
      String last,
      String horizon,
      List<String> operations,
      List<String> columns,
      List<String> placements) {
    List<String> names = List.of(input.fieldNames());
    for (String column : List.of(first, last, horizon)) {
      if (!names.contains(column) || !(input.apply(column).dataType() instanceof LongType)) {
        throw new KernelRequest.Refused("the window column " + column + " is not a BIGINT");
      }
    }
    States states = States.of(input, operations, columns);
    Keys keyFields = names.containsAll(keys) ? Keys.of(input, keys) : null;
    if (states == null || keyFields == null || states.hasAbsentColumn() || placements.size() != columns.size()) {
      throw new KernelRequest.Refused("a key or state column has a type only the numpy kernel handles");
    }
    Spec spec = new Spec();
    spec.input = input;
    spec.states = states;
    spec.keys = keyFields;
    spec.firstField = input.fieldIndex(first);
    spec.lastField = input.fieldIndex(last);
    spec.horizonField = input.fieldIndex(horizon);
    spec.longPlace = new int[states.longs()];
    spec.doublePlace = new int[states.doubles()];
    for (int i = 0; i < columns.size(); i++) {
      int place = List.of("signed", "start", "end").indexOf(placements.get(i));
      if (place < 0 || (place == SIGNED && operations.get(i).equals("moments"))) {
        throw new KernelRequest.Refused("a state's placement is not signed, start or end (moments: not signed)");
      }
      int slot = Arrays.asList(states.longName).indexOf(columns.get(i));
      if (slot >= 0) {
        spec.longPlace[slot] = place;
      } else {
        spec.doublePlace[Arrays.asList(states.doubleName).indexOf(columns.get(i))] = place;
      }
    }
    if (spec.longPlace[states.firstSlot] != SIGNED) {
      throw new KernelRequest.Refused("the first state must be a signed count");
    }
    StructType partials = new StructType();
    for (String key : keys) {
      partials = partials.add(input.apply(key));
    }
    partials = partials.add(LO, DataTypes.LongType, false).add(HORIZON, DataTypes.LongType, false);
    partials = partials.add(array(CELLS, DataTypes.LongType));
    for (int s = 0; s < states.longs(); s++) {
      partials = partials.add(array(LONG + s, DataTypes.LongType));
    }
    for (int s = 0; s < states.doubles(); s++) {
      partials = partials.add(array(DOUBLE + s, DataTypes.DoubleType));
    }
    spec.partials = partials;
    spec.partialKeys = Keys.of(partials, keys);
    spec.keyOut = new int[keys.size()];
    for (int i = 0; i < keys.size(); i++) {
      spec.keyOut[i] = input.fieldIndex(keys.get(i));
    }
    return spec;
  }

  private static StructField array(String name, DataType element) {
    return DataTypes.createStructField(name, DataTypes.createArrayType(element, false), false);
  }

  static final class Spec implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    StructType input; // the events, and the windows' schema too
    States states;
    Keys keys;
    int firstField;
    int lastField;
    int horizonField;
    int[] longPlace;
    int[] doublePlace;
    StructType partials;
    Keys partialKeys;
    int[] keyOut;
  }

  /** Events to windows: each partition's deltas as per-key arrays before the shuffle, then each key's windows. */
  static final class Request extends KernelRequest {
    private static final long serialVersionUID = 1L;
    private final List<String> keys;
    private final String first;
    private final String last;
    private final String horizon;
    private final List<String> operations;
    private final List<String> columns;
    private final List<String> placements;
    private final StructType output;

    Request(
        List<String> keys,
        String first,
        String last,
        String horizon,
        List<String> operations,
        List<String> columns,
        List<String> placements,
        StructType output) {
      this.keys = List.copyOf(keys);
      this.first = first;
      this.last = last;
      this.horizon = horizon;
      this.operations = List.copyOf(operations);
      this.columns = List.copyOf(columns);
      this.placements = List.copyOf(placements);
      this.output = output;
    }

    Spec spec(StructType input) {
      return EventDeltas.spec(input, keys, first, last, horizon, operations, columns, placements);
    }

    @Override
    String name() {
      return "DifferenceWindows";
    }

    @Override
    StructType output() {
      return output;
    }

    /**
     * The windows read the shipped arrays, a logical node of their own ({@link Partials}), for the
     * reason {@link TupleWindows.Request#input} gives: adaptive execution replaces a materialized
     * shuffle stage's logical node, and that must be the arrays' node, not the windows'.
     */
    @Override
    LogicalPlan input(LogicalPlan child) {
      List<Attribute> shipped = new ArrayList<>();
      for (StructField field : spec(child.schema()).partials.fields()) {
        // The keys keep their input's attributes: when Spark renews the input's attributes (one side of a
        // self-join) the renewal then reaches the windows' keys through the shipped rows.
        shipped.add(keys.contains(field.name()) ? KernelPlan.attribute(child.output(), field.name()) : DataTypeUtils.toAttribute(field));
      }
      return new KernelNode(child, new Partials(this), KernelPlan.seq(shipped));
    }

    @Override
    SparkPlan plan(KernelNode node, KernelStrategy strategy) {
      LogicalPlan partials = node.child instanceof LogicalQueryStage ? ((LogicalQueryStage) node.child).logicalPlan() : node.child;
      if (!(partials instanceof KernelNode) || !(((KernelNode) partials).request instanceof Partials)) {
        throw new IllegalStateException("the windows' input is not their deltas: " + node.child.nodeName());
      }
      Spec spec = spec(((KernelNode) partials).child.schema());
      KernelSpec windowing = new KernelSpec("DifferenceWindows", keys, null, shipped -> new Windows(shipped, spec));
      return new KernelExec(strategy.later(node.child), windowing, node.output());
    }

    @Override
    public String toString() {
      return "keys " + keys + ", a running combine of each key's deltas over the window-ids";
    }
  }

  /** Each partition's deltas as per-key arrays, before the shuffle ({@link Mapper}). */
  static final class Partials extends KernelRequest {
    private static final long serialVersionUID = 1L;
    private final Request windows;

    Partials(Request windows) {
      this.windows = windows;
    }

    @Override
    String name() {
      return "EventDeltas";
    }

    @Override
    StructType output() {
      return windows.spec(windows.output()).partials;
    }

    @Override
    SparkPlan plan(KernelNode node, KernelStrategy strategy) {
      Spec spec = windows.spec(node.child.schema());
      KernelSpec mapping = new KernelSpec("EventDeltas", null, null, rows -> new Mapper(rows, spec));
      return new KernelExec(strategy.later(node.child), mapping, node.output());
    }

    @Override
    public String toString() {
      return "each partition's signed deltas in per-key arrays over the window-ids, for " + windows;
    }
  }

  /**
   * One key's states per window-id: a dense array over the ids seen (grown as they come), or, when
   * they are too far apart for that, appended runs sorted and merged at the end.
   */
  static final class Cells {
    final Object template; // the key (map side) or the key's output row (reduce side)
    private final States states;
    private final int nl;
    private final int nd;
    long horizon = Long.MIN_VALUE;
    private long added;
    private long base;
    private long lo = Long.MAX_VALUE;
    private long hi = Long.MIN_VALUE;
    private boolean sparse;
    long[] cells = new long[0]; // sparse: the id of each entry
    int count; // sparse: entries
    long[] longs;
    double[] doubles;
    // The finished, sorted view: ids `first`… (dense) or `cells[offset…]` (sparse), `size` of them.
    long first;
    int offset;
    int size;

    Cells(Object template, States states) {
      this.template = template;
      this.states = states;
      nl = states.longs();
      nd = states.doubles();
      longs = new long[0];
      doubles = new double[0];
    }

    /** Bytes held. */
    long bytes() {
      return 8L * (cells.length + longs.length + doubles.length);
    }

    /** id ⊕= the states at index `i` of (l, d). */
    void add(long id, long[] l, double[] d, int i) {
      added++;
      if (!sparse) {
        if (id < base || id >= base + capacity()) {
          long newLo = Math.min(lo, id);
          long newHi = Math.max(hi, id);
          long need = newHi - newLo + 1;
          if (need > 4 * added + 4096) {
            toSparse();
          } else {
            grow(id, need);
          }
        }
        if (!sparse) {
          int at = (int) (id - base);
          states.merge(longs, doubles, at, l, d, i, longs, doubles, at);
          lo = Math.min(lo, id);
          hi = Math.max(hi, id);
          return;
        }
      }
      if (count == cells.length) {
        int grown = Math.max(16, 2 * count);
        cells = Arrays.copyOf(cells, grown);
        longs = Arrays.copyOf(longs, grown * nl);
        doubles = Arrays.copyOf(doubles, grown * nd);
      }
      cells[count] = id;
      System.arraycopy(l, i * nl, longs, count * nl, nl);
      System.arraycopy(d, i * nd, doubles, count * nd, nd);
      count++;
    }

    private int capacity() {
      return nl > 0 ? longs.length / nl : 0;
    }

    private void grow(long id, long need) {
      int capacity = (int) Math.max(2L * capacity(), need + 16);
      long newBase = lo == Long.MAX_VALUE || id >= lo ? Math.min(id, lo) : hi - capacity + 1;
      long[] l = new long[capacity * nl];
      double[] d = new double[capacity * nd];
      for (int j = 0; j < capacity; j++) {
        states.identity(l, d, j);
      }
      if (lo <= hi) {
        int from = (int) (lo - base);
        int to = (int) (lo - newBase);
        int n = (int) (hi - lo + 1);
        System.arraycopy(longs, from * nl, l, to * nl, n * nl);
        System.arraycopy(doubles, from * nd, d, to * nd, n * nd);
      }
      longs = l;
      doubles = d;
      base = newBase;
    }

    private void toSparse() {
      long[] l = longs;
      double[] d = doubles;
      int n = lo <= hi ? (int) (hi - lo + 1) : 0;
      int from = (int) (lo - base);
      sparse = true;
      cells = new long[Math.max(16, 2 * n)];
      longs = new long[cells.length * nl];
      doubles = new double[cells.length * nd];
      for (int j = 0; j < n; j++) {
        cells[j] = lo + j;
      }
      if (n > 0) {
        System.arraycopy(l, from * nl, longs, 0, n * nl);
        System.arraycopy(d, from * nd, doubles, 0, n * nd);
      }
      count = n;
    }

    /** Sorts and merges the entries: afterwards ids, states and size describe them in id order. */
    void finish() {
      if (!sparse) {
        first = lo;
        offset = lo <= hi ? (int) (lo - base) : 0;
        size = lo <= hi ? (int) (hi - lo + 1) : 0;
        return;
      }
      boolean sorted = true;
      for (int j = 1; j < count && sorted; j++) {
        sorted = cells[j - 1] <= cells[j];
      }
      if (!sorted) {
        Integer[] order = new Integer[count];
        for (int j = 0; j < count; j++) {
          order[j] = j;
        }
        long[] ids = cells;
        Arrays.sort(order, (a, b) -> Long.compare(ids[a], ids[b]));
        long[] c = new long[count];
        long[] l = new long[count * nl];
        double[] d = new double[count * nd];
        for (int j = 0; j < count; j++) {
          int k = order[j];
          c[j] = ids[k];
          System.arraycopy(longs, k * nl, l, j * nl, nl);
          System.arraycopy(doubles, k * nd, d, j * nd, nd);
        }
        cells = c;
        longs = l;
        doubles = d;
      }
      int kept = 0;
      for (int j = 0; j < count; j++) {
        if (kept > 0 && cells[kept - 1] == cells[j]) {
          states.merge(longs, doubles, kept - 1, longs, doubles, j, longs, doubles, kept - 1);
        } else {
          cells[kept] = cells[j];
          System.arraycopy(longs, j * nl, longs, kept * nl, nl);
          System.arraycopy(doubles, j * nd, doubles, kept * nd, nd);
          kept++;
        }
      }
      count = kept;
      offset = 0;
      size = kept;
    }

    boolean isSparse() {
      return sparse;
    }

    /** The j-th id of the finished view. */
    long id(int j) {
      return sparse ? cells[j] : first + j;
    }
  }

  /** A partition's events in, per key a few rows of arrays out. */
  static final class Mapper implements Iterator<InternalRow> {
    private final Iterator<InternalRow> rows;
    private final Spec spec;
    private final States states;
    private final KeyIndex<Cells> keys;
    private final Function<InternalRow, Cells> newKey;
    private final TaskMemory memory;
    private final long[] rowLongs;
    private final double[] rowDoubles;
    private final long[] shareLongs; // at the first window (index 0) and one past the last (index 1)
    private final double[] shareDoubles;
    private final GenericInternalRow shipped;
    private final UnsafeProjection unsafe;
    private long held;
    private List<Cells> leaving;
    private int nextKey;
    private int nextChunk;

    Mapper(Iterator<InternalRow> rows, Spec spec) {
      this.rows = rows;
      this.spec = spec;
      states = spec.states;
      keys = new KeyIndex<>(spec.keys);
      newKey = this::newKey;
      memory = TaskMemory.ofTask("difference");
      rowLongs = new long[states.longs()];
      rowDoubles = new double[states.doubles()];
      shareLongs = new long[2 * states.longs()];
      shareDoubles = new double[2 * states.doubles()];
      shipped = new GenericInternalRow(spec.partials.size());
      unsafe = UnsafeProjection.create(spec.partials);
    }

    private Cells newKey(InternalRow row) {
      Object[] key = new Object[spec.keys.fields.length];
      for (int i = 0; i < key.length; i++) {
        key[i] = spec.keys.copy(spec.keys.value(row, i)); // the row's memory is reused
      }
      return new Cells(key, states);
    }

    @Override
    public boolean hasNext() {
      if (leaving == null) {
        while (rows.hasNext()) {
          add(rows.next());
        }
        leaving = keys.values();
        for (Cells cells : leaving) {
          cells.finish();
        }
      }
      while (nextKey < leaving.size() && nextChunk >= leaving.get(nextKey).size) {
        leaving.set(nextKey++, null); // shipped: its arrays can go
        nextChunk = 0;
      }
      if (nextKey == leaving.size()) {
        if (memory != null) {
          memory.releaseAll();
        }
        return false;
      }
      return true;
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      Cells cells = leaving.get(nextKey);
      int from = nextChunk;
      int n = Math.min(CHUNK, cells.size - from);
      nextChunk += n;
      return shippedRow(spec, states, unsafe, shipped, (Object[]) cells.template, cells, from, n);
    }

    private void add(InternalRow row) {
      long first = row.getLong(spec.firstField);
      boolean ends = !row.isNullAt(spec.lastField);
      if (ends && row.getLong(spec.lastField) < first) {
        return; // inside a gap between windows (SLIDE > RANGE): in none
      }
      Cells cells = keys.of(row, newKey);
      long before = cells.bytes();
      cells.horizon = Math.max(cells.horizon, row.getLong(spec.horizonField));
      states.read(row, rowLongs, rowDoubles);
      int nl = rowLongs.length;
      int nd = rowDoubles.length;
      for (int s = 0; s < nl; s++) {
        long value = rowLongs[s];
        long identity = states.longIdentityAt(s);
        int place = spec.longPlace[s];
        shareLongs[s] = place == END ? identity : value;
        shareLongs[nl + s] = place == SIGNED ? -value : place == END ? value : identity;
      }
      for (int s = 0; s < nd; s++) {
        double value = rowDoubles[s];
        double identity = states.doubleIdentityAt(s);
        int place = spec.doublePlace[s];
        shareDoubles[s] = place == END ? identity : value;
        shareDoubles[nd + s] = place == SIGNED ? -value : place == END ? value : identity;
      }
      cells.add(first, shareLongs, shareDoubles, 0);
      if (ends) {
        cells.add(row.getLong(spec.lastField) + 1, shareLongs, shareDoubles, 1);
      }
      long grown = cells.bytes() - before;
      if (grown > 0 && memory != null) {
        held += grown;
        memory.reserve(grown, held / 8);
      }
    }
  }

  /** One shipped row: the key, then `n` entries of the cells from `from` on. */
  static InternalRow shippedRow(
      Spec spec, States states, UnsafeProjection unsafe, GenericInternalRow row, Object[] key, Cells cells, int from, int n) {
    int field = 0;
    for (Object value : key) {
      row.update(field++, value);
    }
    row.update(field++, cells.id(from));
    row.update(field++, cells.horizon);
    long[] ids = cells.isSparse() ? Arrays.copyOfRange(cells.cells, from, from + n) : new long[0];
    row.update(field++, UnsafeArrayData.fromPrimitiveArray(ids, Platform.LONG_ARRAY_OFFSET, ids.length, 8));
    int nl = states.longs();
    int nd = states.doubles();
    long[] l = new long[n];
    for (int s = 0; s < nl; s++) {
      for (int j = 0; j < n; j++) {
        l[j] = cells.longs[(cells.offset + from + j) * nl + s];
      }
      row.update(field++, UnsafeArrayData.fromPrimitiveArray(l, Platform.LONG_ARRAY_OFFSET, n, 8));
    }
    double[] d = new double[n];
    for (int s = 0; s < nd; s++) {
      for (int j = 0; j < n; j++) {
        d[j] = cells.doubles[(cells.offset + from + j) * nd + s];
      }
      row.update(field++, UnsafeArrayData.fromPrimitiveArray(d, Platform.DOUBLE_ARRAY_OFFSET, n, 8));
    }
    return unsafe.apply(row);
  }

  /** A partition's shipped arrays, every row of its keys in it, in; each key's windows out. */
  static final class Windows implements Iterator<InternalRow> {
    private final Iterator<InternalRow> shipped;
    private final Spec spec;
    private final States states;
    private final TaskMemory memory;
    private final long[] entryLongs;
    private final double[] entryDoubles;
    private final long[] running;
    private final double[] runningDoubles;
    private final int[] longFields;
    private final int[] doubleFields;
    private final int cellsField;
    private final int loField;
    private final int horizonField;
    private UnsafeProjection unsafe;
    private List<Cells> pending;
    private long horizon = Long.MIN_VALUE;
    private long held;
    private int nextKey = -1;
    private Cells key;
    private UnsafeRow out;
    private int entry; // the next entry of the key to combine
    private long window; // the next window to look at, and the last one the running states hold for
    private long until = Long.MIN_VALUE;

    Windows(Iterator<InternalRow> shipped, Spec spec) {
      this.shipped = shipped;
      this.spec = spec;
      states = spec.states;
      memory = TaskMemory.ofTask("difference");
      entryLongs = new long[states.longs()];
      entryDoubles = new double[states.doubles()];
      running = new long[states.longs()];
      runningDoubles = new double[states.doubles()];
      int keys = spec.keyOut.length;
      loField = keys;
      horizonField = keys + 1;
      cellsField = keys + 2;
      longFields = new int[states.longs()];
      doubleFields = new int[states.doubles()];
      for (int s = 0; s < longFields.length; s++) {
        longFields[s] = keys + 3 + s;
      }
      for (int s = 0; s < doubleFields.length; s++) {
        doubleFields[s] = keys + 3 + longFields.length + s;
      }
    }

    @Override
    public boolean hasNext() {
      if (pending == null) {
        load();
      }
      while (true) {
        if (key != null) {
          for (; window <= until; window++) {
            if (running[states.firstSlot] > 0) {
              return true; // a window holding no event that counts is left out
            }
          }
          if (advance()) {
            continue;
          }
          pending.set(nextKey, null);
          key = null;
        }
        if (++nextKey >= pending.size()) {
          if (memory != null) {
            memory.releaseAll();
          }
          return false;
        }
        start(pending.get(nextKey));
      }
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      out.setLong(spec.firstField, window);
      out.setLong(spec.lastField, window);
      states.write(out, states.longField, states.doubleField, running, runningDoubles);
      window++;
      return out;
    }

    private void load() {
      KeyIndex<Cells> keys = new KeyIndex<>(spec.partialKeys);
      Function<InternalRow, Cells> newKey = this::newKey;
      int nl = states.longs();
      int nd = states.doubles();
      while (shipped.hasNext()) {
        InternalRow row = shipped.next();
        Cells cells = keys.of(row, newKey);
        long before = cells.bytes();
        horizon = Math.max(horizon, row.getLong(horizonField));
        long lo = row.getLong(loField);
        ArrayData ids = row.getArray(cellsField);
        ArrayData[] l = new ArrayData[nl];
        ArrayData[] d = new ArrayData[nd];
        for (int s = 0; s < nl; s++) {
          l[s] = row.getArray(longFields[s]);
        }
        for (int s = 0; s < nd; s++) {
          d[s] = row.getArray(doubleFields[s]);
        }
        int n = nl > 0 ? l[0].numElements() : 0;
        boolean dense = ids.numElements() == 0;
        for (int j = 0; j < n; j++) {
          for (int s = 0; s < nl; s++) {
            entryLongs[s] = l[s].getLong(j);
          }
          for (int s = 0; s < nd; s++) {
            entryDoubles[s] = d[s].getDouble(j);
          }
          cells.add(dense ? lo + j : ids.getLong(j), entryLongs, entryDoubles, 0);
        }
        long grown = cells.bytes() - before;
        if (grown > 0 && memory != null) {
          held += grown;
          memory.reserve(grown, held / 8);
        }
      }
      pending = new ArrayList<>(keys.values());
      for (Cells cells : pending) {
        cells.finish();
      }
    }

    private Cells newKey(InternalRow row) {
      GenericInternalRow values = new GenericInternalRow(spec.input.size());
      for (int i = 0; i < spec.keyOut.length; i++) {
        values.update(spec.keyOut[i], spec.partialKeys.value(row, i));
      }
      if (unsafe == null) {
        unsafe = UnsafeProjection.create(spec.input);
      }
      return new Cells(unsafe.apply(values).copy(), states);
    }

    /** The key's windows start at its first window-id, with nothing combined yet. */
    private void start(Cells cells) {
      key = cells;
      entry = 0;
      states.identity(running, runningDoubles, 0);
      if (out == null) {
        out = ((UnsafeRow) cells.template).copy();
      } else {
        out.copyFrom((UnsafeRow) cells.template);
      }
      out.setLong(spec.horizonField, horizon);
      until = Long.MIN_VALUE;
      window = Long.MIN_VALUE;
      advance();
    }

    /**
     * Combines the key's next entry into the running states: they then hold for the windows from its id
     * up to the next entry's (or the data's last window); false when no entry is left before that.
     */
    private boolean advance() {
      if (entry >= key.size || key.id(entry) > horizon) {
        return false;
      }
      states.merge(running, runningDoubles, 0, key.longs, key.doubles, key.offset + entry, running, runningDoubles, 0);
      window = key.id(entry);
      entry++;
      until = entry < key.size ? Math.min(key.id(entry) - 1, horizon) : horizon;
      return true;
    }
  }
}
