package wql.kernels;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.PriorityQueue;
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
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.metric.SQLMetrics$;
import org.apache.spark.sql.internal.SQLConf;
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
 * aggregate ever sees the deltas. When Spark grants the arrays no more memory they are shipped as
 * they are and the pass starts afresh. After the shuffle Spark sorts the shipped rows by key and
 * first window-id, and {@link Windows} merges each key's rows by window-id as it runs the combine
 * along them, emitting one row per window that holds an event (the first state, a count, is
 * positive), up to the data's last window. Neither side holds more than its memory grants: a hot
 * key costs shipped rows and Spark's sort, not a key's arrays in one task.
 *
 * <p>Output rows have the input's schema, with {@code first} and {@code last} holding the window-id.
 */
public final class EventDeltas {
  /** The most window-ids one shipped row holds. */
  static final int CHUNK = 1 << 15;
  private static final String LO = "__wql_lo";
  private static final String HORIZON = "__wql_h";
  private static final String CELLS = "__wql_cells";
  private static final String LONG = "__wql_long";
  private static final String DOUBLE = "__wql_double";

  private EventDeltas() {}

  /** The request a job's `difference_windows` sends, or {@link KernelRequest.Refused}: then numpy runs. */
  static KernelRequest request(RequestJson request, StructType input) {
    Spec spec = new Spec(request, input); // refuses what it cannot compute
    return new Request(request, spec.keyNames, input);
  }

  private static StructField array(String name, DataType element) {
    return DataTypes.createStructField(name, DataTypes.createArrayType(element, false), false);
  }

  /**
   * The most the arrays before the shuffle hold per task (bytes) before they are shipped and the pass
   * starts afresh; unset, whatever Spark's execution memory grants.
   */
  static final String MEMORY_LIMIT = "spark.wql.difference.memoryLimit";

  /** What the operators know of the events, the shipped arrays and the windows, from the events' schema. */
  static final class Spec extends EventColumns {
    private static final long serialVersionUID = 1L;
    long memoryLimit = -1;
    final Placements places;
    final StructType partials; // the shipped rows: the keys, the first window-id, the data's last, the arrays
    final Keys partialKeys;

    Spec(RequestJson request, StructType input) {
      super(request, input, "window");
      places = new Placements(request, states, false);
      StructType shipped = new StructType();
      for (String key : keyNames) {
        shipped = shipped.add(input.apply(key));
      }
      shipped = shipped.add(LO, DataTypes.LongType, false).add(HORIZON, DataTypes.LongType, false);
      shipped = shipped.add(array(CELLS, DataTypes.LongType));
      for (int s = 0; s < states.longs(); s++) {
        shipped = shipped.add(array(LONG + s, DataTypes.LongType));
      }
      for (int s = 0; s < states.doubles(); s++) {
        shipped = shipped.add(array(DOUBLE + s, DataTypes.DoubleType));
      }
      partials = shipped;
      partialKeys = Keys.of(partials, keyNames);
    }
  }

  /** Events to windows: each partition's deltas as per-key arrays before the shuffle, then each key's windows. */
  static final class Request extends KernelRequest {
    private static final long serialVersionUID = 1L;
    private final RequestJson request; // read again over the schema each operator is planned on
    private final List<String> keys;

    Request(RequestJson request, List<String> keys, StructType output) {
      super("DifferenceWindows", output);
      this.request = request;
      this.keys = List.copyOf(keys);
    }

    Spec spec(StructType input) {
      return new Spec(request, input);
    }

    /**
     * The windows read the shipped arrays, a logical node of their own ({@link Partials}), for the
     * reason {@link BatchedRequest#input} gives: adaptive execution replaces a materialized
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
      Spec spec = spec(KernelPlan.inputNode(node, Partials.class).child.schema());
      List<String> order = new ArrayList<>(keys);
      order.add(LO);
      KernelSpec windowing = new KernelSpec("DifferenceWindows", keys, order, shipped -> new Windows(shipped, spec));
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
      super("EventDeltas", windows.spec(windows.output()).partials);
      this.windows = windows;
    }

    @Override
    SparkPlan plan(KernelNode node, KernelStrategy strategy) {
      Spec spec = windows.spec(node.child.schema());
      spec.memoryLimit = Long.parseLong(SQLConf.get().getConfString(MEMORY_LIMIT, "-1"));
      SQLMetric early = SQLMetrics$.MODULE$.createMetric(strategy.session().sparkContext(), "arrays shipped early (memory)");
      KernelSpec mapping =
          new KernelSpec("EventDeltas", null, null, rows -> new Mapper(rows, spec, early), Map.of("earlyShipments", early));
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
    final Object template; // the key's values
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

    /**
     * id ⊕= the states at index `i` of (l, d); false, adding nothing, when the arrays would have to grow
     * and `memory` grants no more (null: no accounting, they grow).
     */
    boolean add(long id, long[] l, double[] d, int i, TaskMemory memory) {
      if (!sparse && (id < base || id >= base + capacity())) {
        long need = Math.max(hi, id) - Math.min(lo, id) + 1;
        boolean spread = need > 4 * (added + 1) + 4096; // too far apart for a dense array: sorted runs
        long slots = spread ? Math.max(16, 2 * Math.max(0, hi - lo + 1)) : Math.max(2L * capacity(), need + 16);
        long before = bytes();
        if (!afford(memory, 8 * slots * (spread ? 1 + nl + nd : nl + nd))) {
          return false;
        }
        if (spread) {
          toSparse();
        } else {
          grow(id, need);
        }
        if (memory != null) {
          memory.release(before);
        }
      }
      if (sparse && count == cells.length) {
        int grown = Math.max(16, 2 * count);
        long before = bytes();
        if (!afford(memory, 8L * grown * (1 + nl + nd))) {
          return false;
        }
        cells = Arrays.copyOf(cells, grown);
        longs = Arrays.copyOf(longs, grown * nl);
        doubles = Arrays.copyOf(doubles, grown * nd);
        if (memory != null) {
          memory.release(before);
        }
      }
      added++;
      if (!sparse) {
        int at = (int) (id - base);
        states.merge(longs, doubles, at, l, d, i, longs, doubles, at);
        lo = Math.min(lo, id);
        hi = Math.max(hi, id);
        return true;
      }
      cells[count] = id;
      System.arraycopy(l, i * nl, longs, count * nl, nl);
      System.arraycopy(d, i * nd, doubles, count * nd, nd);
      count++;
      return true;
    }

    private static boolean afford(TaskMemory memory, long bytes) {
      return memory == null || memory.tryReserve(bytes);
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

  /**
   * A partition's events in, per key a few rows of arrays out. The arrays hold what Spark's execution
   * memory grants (or spark.wql.difference.memoryLimit): when it grants no more, the arrays held so
   * far are shipped and the pass starts afresh, as Spark's partial aggregation does, so a hot key or a
   * partition of many window-ids costs more shipped rows, never more memory.
   */
  static final class Mapper implements Iterator<InternalRow> {
    private final Iterator<InternalRow> rows;
    private final Spec spec;
    private final States states;
    private KeyIndex<Cells> keys;
    private final Function<InternalRow, Cells> newKey;
    private final TaskMemory memory;
    private final SQLMetric early;
    private final long[] rowLongs;
    private final double[] rowDoubles;
    private final long[] shareLongs; // at the first window (index 0) and one past the last (index 1)
    private final double[] shareDoubles;
    private final GenericInternalRow shipped;
    private final UnsafeProjection unsafe;
    private boolean read; // every input row added
    private InternalRow stashed; // an event whose deltas from the stashedFrom-th on wait for emptied arrays
    private int stashedFrom;
    private List<Cells> leaving;
    private int nextKey;
    private int nextChunk;

    Mapper(Iterator<InternalRow> rows, Spec spec, SQLMetric early) {
      this.rows = rows;
      this.spec = spec;
      this.early = early;
      states = spec.states;
      keys = new KeyIndex<>(spec.keys);
      newKey = this::newKey;
      TaskMemory task = TaskMemory.ofTask("difference");
      memory = task == null ? null : task.limitedTo(spec.memoryLimit);
      rowLongs = new long[states.longs()];
      rowDoubles = new double[states.doubles()];
      shareLongs = new long[2 * states.longs()];
      shareDoubles = new double[2 * states.doubles()];
      shipped = new GenericInternalRow(spec.partials.size());
      unsafe = UnsafeProjection.create(spec.partials);
    }

    private Cells newKey(InternalRow row) {
      return new Cells(spec.keys.values(row), states);
    }

    @Override
    public boolean hasNext() {
      while (true) {
        if (leaving != null) {
          while (nextKey < leaving.size() && nextChunk >= leaving.get(nextKey).size) {
            leaving.set(nextKey++, null); // shipped: its arrays can go
            nextChunk = 0;
          }
          if (nextKey < leaving.size()) {
            return true;
          }
          leaving = null;
          if (memory != null) {
            memory.releaseAll();
          }
        }
        if (read) {
          return false;
        }
        boolean full = false;
        if (stashed != null) {
          InternalRow row = stashed;
          stashed = null;
          add(row, stashedFrom, true);
        }
        while (!full && rows.hasNext()) {
          full = !add(rows.next(), 0, false);
        }
        read = stashed == null && !rows.hasNext();
        if (full && early != null) {
          early.add(1);
        }
        leaving = keys.values();
        keys = new KeyIndex<>(spec.keys);
        for (Cells cells : leaving) {
          cells.finish();
        }
        nextKey = 0;
        nextChunk = 0;
      }
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

    /**
     * Adds the event's deltas from its `from`-th on (0: at its first window, 1: one past its last); false
     * when memory grants the arrays no more: they go now, and the deltas not added wait in `stashed`.
     * `force` adds them whatever memory grants: the stashed event, into arrays just emptied, so the
     * pass always moves on (at most a few thousand window-ids for a fresh key's arrays).
     */
    private boolean add(InternalRow row, int from, boolean force) {
      long first = row.getLong(spec.firstField);
      boolean ends = !row.isNullAt(spec.lastField);
      if (ends && row.getLong(spec.lastField) < first) {
        return true; // inside a gap between windows (SLIDE > RANGE): in none
      }
      Cells cells = keys.of(row, newKey);
      cells.horizon = Math.max(cells.horizon, row.getLong(spec.horizonField));
      states.read(row, rowLongs, rowDoubles);
      spec.places.split(states, rowLongs, rowDoubles, false, shareLongs, shareDoubles);
      for (int delta = from; delta <= (ends ? 1 : 0); delta++) {
        long id = delta == 0 ? first : row.getLong(spec.lastField) + 1;
        if (!cells.add(id, shareLongs, shareDoubles, delta, force ? null : memory)) {
          stashed = row.copy();
          stashedFrom = delta;
          return false;
        }
      }
      return true;
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

  /**
   * One shipped row being combined: its entries' window-ids in order, and the entry next in line. A
   * key's rows from one input partition cover window-ids apart from each other, so a key holds at
   * most one row per input partition (and per early shipment) at a time.
   */
  static final class Run {
    final UnsafeRow row;
    final ArrayData[] longs;
    final ArrayData[] doubles;
    private final ArrayData ids; // empty: dense, the ids run from lo
    private final long lo;
    private final int n;
    int at; // the entry next in line
    long id; // its window-id

    Run(UnsafeRow row, int loField, int cellsField, int[] longFields, int[] doubleFields) {
      this.row = row;
      lo = row.getLong(loField);
      ids = row.getArray(cellsField);
      longs = new ArrayData[longFields.length];
      doubles = new ArrayData[doubleFields.length];
      for (int s = 0; s < longFields.length; s++) {
        longs[s] = row.getArray(longFields[s]);
      }
      for (int s = 0; s < doubleFields.length; s++) {
        doubles[s] = row.getArray(doubleFields[s]);
      }
      n = longs.length > 0 ? longs[0].numElements() : 0;
      at = -1;
    }

    /** Moves to the next entry; false when none is left. */
    boolean step() {
      if (++at >= n) {
        return false;
      }
      id = ids.numElements() == 0 ? lo + at : ids.getLong(at);
      return true;
    }
  }

  /**
   * A partition's shipped arrays in, sorted by key and then their first window-id (Spark sorts them,
   * and its sort spills); each key's windows out. A key's rows are merged by window-id as they come,
   * a row taken in only once the combine reaches its first id, so what is held is the rows that
   * cover the window-id being combined, one per input partition at most: the windows in flight, not
   * the key's window-ids, however many events the key has.
   */
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
    private final PriorityQueue<Run> runs = new PriorityQueue<>(Comparator.comparingLong(run -> run.id));
    private final KeyTemplates templates;
    private long horizon = Long.MIN_VALUE;
    private UnsafeRow ahead; // the next shipped row, not yet taken in (a copy), and its key
    private Object aheadKey;
    private Object key; // the key whose windows go out; null between keys
    private UnsafeRow out;
    private long window; // the next window to look at, and the last one the running states hold for
    private long until = Long.MIN_VALUE;

    Windows(Iterator<InternalRow> shipped, Spec spec) {
      this.shipped = shipped;
      this.spec = spec;
      states = spec.states;
      memory = TaskMemory.ofTask("difference");
      templates = new KeyTemplates(spec.partialKeys, spec.schema, spec.keys.fields);
      entryLongs = new long[states.longs()];
      entryDoubles = new double[states.doubles()];
      running = new long[states.longs()];
      runningDoubles = new double[states.doubles()];
      int keys = spec.keyNames.size();
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
      fetch();
    }

    @Override
    public boolean hasNext() {
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
          finishKey();
        }
        if (ahead == null) {
          if (memory != null) {
            memory.releaseAll();
          }
          return false;
        }
        start();
      }
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      out.setLong(spec.firstField, window);
      out.setLong(spec.lastField, window);
      out.setLong(spec.horizonField, horizon);
      states.write(out, states.longField, states.doubleField, running, runningDoubles);
      window++;
      return out;
    }

    /** Reads the next shipped row into `ahead` (null at the end). */
    private void fetch() {
      if (!shipped.hasNext()) {
        ahead = null;
        aheadKey = null;
        return;
      }
      ahead = ((UnsafeRow) shipped.next()).copy(); // Spark reuses the row it hands over
      aheadKey = spec.partialKeys.of(ahead);
      horizon = Math.max(horizon, ahead.getLong(horizonField)); // the same on every row
    }

    private boolean aheadOfKey() {
      return ahead != null && aheadKey.equals(key);
    }

    /** The next key's windows start at its first window-id, with nothing combined yet. */
    private void start() {
      key = aheadKey;
      out = templates.of(ahead);
      states.identity(running, runningDoubles, 0);
      until = Long.MIN_VALUE;
      window = Long.MIN_VALUE;
      advance();
    }

    /** Takes in the key's rows that start at or before the next window-id in line (the first, if none is). */
    private void takeIn() {
      while (aheadOfKey() && (runs.isEmpty() || ahead.getLong(loField) <= runs.peek().id)) {
        Run run = new Run(ahead, loField, cellsField, longFields, doubleFields);
        if (memory != null) {
          memory.reserve(ahead.getSizeInBytes(), runs.size() + 1L);
        }
        if (run.step()) {
          runs.add(run);
        } else if (memory != null) {
          memory.release(ahead.getSizeInBytes()); // a row of no entries: nothing to combine
        }
        fetch();
      }
    }

    /**
     * Combines the key's next entry into the running states: they then hold for the windows from its id
     * up to the next entry's (or the data's last window); false when no entry is left before that.
     */
    private boolean advance() {
      takeIn();
      Run run = runs.peek();
      if (run == null || run.id > horizon) {
        return false;
      }
      runs.poll();
      for (int s = 0; s < entryLongs.length; s++) {
        entryLongs[s] = run.longs[s].getLong(run.at);
      }
      for (int s = 0; s < entryDoubles.length; s++) {
        entryDoubles[s] = run.doubles[s].getDouble(run.at);
      }
      states.merge(running, runningDoubles, 0, entryLongs, entryDoubles, 0, running, runningDoubles, 0);
      window = run.id;
      if (run.step()) {
        runs.add(run);
      } else if (memory != null) {
        memory.release(run.row.getSizeInBytes());
      }
      takeIn();
      until = runs.isEmpty() ? horizon : Math.min(runs.peek().id - 1, horizon);
      return true;
    }

    /** Drops what is left of the key: entries past the data's last window. */
    private void finishKey() {
      while (aheadOfKey()) {
        fetch();
      }
      if (memory != null) {
        for (Run run : runs) {
          memory.release(run.row.getSizeInBytes());
        }
      }
      runs.clear();
      key = null;
    }
  }
}
