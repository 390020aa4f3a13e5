package wql.kernels;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.AtomicType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructType;

/**
 * The pane and slice plans' combine step, inside the JVM: the same contract as the numpy kernel
 * {@code sliding_combine} in WQL's generated jobs, without its Arrow round trip, which costs about
 * as much as a tumbling aggregation of the cells.
 *
 * <p>Input: one row per (keys, cell) with partial aggregate states, every cell of a key in the same
 * partition. Window w is the {@code size} cells that end at cell (w + 1) * step - 1. Each partition
 * is sorted by cell only (a single long, which Spark radix-sorts), and each key keeps a queue of
 * the cells its open windows hold, as two stacks: a window is the suffix combine of the older cells
 * plus the running combine of the newer ones. Every cell is combined a constant number of times
 * however large size / step is, and no inverse is needed, so min and max share work as well as sum.
 *
 * <p>With {@code last} (landmark windows, size and step 1), window w is every cell up to w, and
 * windows run from a key's first cell (or 0) to the value of column {@code last}.
 *
 * <p>Output rows have the input's schema, with the cell column holding the window-id; only windows
 * whose first state (the row count) is positive are kept.
 */
public final class SlidingCombine {
  static final int SUM = 0;
  static final int MIN = 1;
  static final int MAX = 2;
  static final int MOMENTS = 3;

  private SlidingCombine() {}

  /**
   * The windows, or null when a column has a type this kernel does not handle: the caller then uses
   * the numpy kernel, which does. {@code operations} and {@code columns} run in parallel, one entry
   * per state column; a "moments" group is its three columns (count, mean, M2) in that order.
   */
  public static Dataset<Row> combine(
      Dataset<Row> cells,
      List<String> keys,
      String cell,
      List<String> operations,
      List<String> columns,
      long size,
      long step,
      String last) {
    Layout layout = Layout.of(cells.schema(), keys, cell, operations, columns, size, step, last);
    if (layout == null) {
      return null;
    }
    MapPartitionsFunction<Row, Row> windows = rows -> new Windows(rows, layout);
    return cells.sortWithinPartitions(cell).mapPartitions(windows, Encoders.row(cells.schema()));
  }

  /** Where each state lives: integral states in a long slot, floating ones in a double slot. */
  static final class Layout implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    int[] keyFields;
    int cellField;
    int lastField = -1;
    long size;
    long step;
    int[] longField;
    int[] longOp;
    long[] longIdentity;
    DataType[] longType;
    int[] doubleField;
    int[] doubleOp;
    double[] doubleIdentity;
    DataType[] doubleType;
    int[][] moments; // {count long slot, mean double slot, M2 double slot}
    int keepSlot; // the long slot of the first state: the window's row count

    static Layout of(
        StructType schema,
        List<String> keys,
        String cell,
        List<String> operations,
        List<String> columns,
        long size,
        long step,
        String last) {
      Layout layout = new Layout();
      layout.size = size;
      layout.step = step;
      layout.keyFields = new int[keys.size()];
      for (int i = 0; i < keys.size(); i++) {
        int field = schema.fieldIndex(keys.get(i));
        DataType type = schema.fields()[field].dataType();
        if (!(type instanceof AtomicType) || type instanceof BinaryType) {
          return null; // equality of such values as Java objects is not Spark's
        }
        layout.keyFields[i] = field;
      }
      layout.cellField = schema.fieldIndex(cell);
      if (!(schema.fields()[layout.cellField].dataType() instanceof LongType)) {
        return null;
      }
      if (last != null) {
        layout.lastField = schema.fieldIndex(last);
        if (!(schema.fields()[layout.lastField].dataType() instanceof LongType)) {
          return null;
        }
      }
      int n = columns.size();
      int[] slot = new int[n];
      boolean[] integral = new boolean[n];
      int longs = 0;
      int doubles = 0;
      for (int i = 0; i < n; i++) {
        DataType type = schema.fields()[schema.fieldIndex(columns.get(i))].dataType();
        if (type instanceof LongType
            || type instanceof IntegerType
            || type instanceof ShortType
            || type instanceof ByteType) {
          integral[i] = true;
          slot[i] = longs++;
        } else if (type instanceof DoubleType || type instanceof FloatType) {
          slot[i] = doubles++;
        } else {
          return null;
        }
      }
      layout.longField = new int[longs];
      layout.longOp = new int[longs];
      layout.longIdentity = new long[longs];
      layout.longType = new DataType[longs];
      layout.doubleField = new int[doubles];
      layout.doubleOp = new int[doubles];
      layout.doubleIdentity = new double[doubles];
      layout.doubleType = new DataType[doubles];
      List<int[]> groups = new java.util.ArrayList<>();
      for (int i = 0; i < n; i++) {
        int op = operation(operations.get(i));
        if (op < 0) {
          return null;
        }
        int field = schema.fieldIndex(columns.get(i));
        DataType type = schema.fields()[field].dataType();
        if (op == MOMENTS && i == groupStart(operations, i)) {
          if (i + 2 >= n || !integral[i] || integral[i + 1] || integral[i + 2]) {
            return null;
          }
          groups.add(new int[] {slot[i], slot[i + 1], slot[i + 2]});
        }
        if (integral[i]) {
          int s = slot[i];
          layout.longField[s] = field;
          layout.longOp[s] = op;
          layout.longType[s] = type;
          layout.longIdentity[s] = longIdentity(op, type);
        } else {
          int s = slot[i];
          layout.doubleField[s] = field;
          layout.doubleOp[s] = op;
          layout.doubleType[s] = type;
          layout.doubleIdentity[s] = op == MIN ? Double.NaN : op == MAX ? Double.NEGATIVE_INFINITY : 0.0;
        }
      }
      layout.moments = groups.toArray(new int[0][]);
      if (n == 0 || !integral[0] || operation(operations.get(0)) != SUM) {
        return null;
      }
      layout.keepSlot = slot[0];
      return layout;
    }

    /** Where the moments group holding column i starts: groups are consecutive runs of three. */
    private static int groupStart(List<String> operations, int i) {
      int start = i;
      while (start > 0 && operation(operations.get(start - 1)) == MOMENTS) {
        start--;
      }
      return start + (i - start) / 3 * 3;
    }

    private static int operation(String name) {
      switch (name) {
        case "sum":
          return SUM;
        case "min":
          return MIN;
        case "max":
          return MAX;
        case "moments":
          return MOMENTS;
        default:
          return -1;
      }
    }

    private static long longIdentity(int op, DataType type) {
      if (op != MIN && op != MAX) {
        return 0;
      }
      long high =
          type instanceof ByteType
              ? Byte.MAX_VALUE
              : type instanceof ShortType
                  ? Short.MAX_VALUE
                  : type instanceof IntegerType ? Integer.MAX_VALUE : Long.MAX_VALUE;
      return op == MIN ? high : -high - 1;
    }

    /** out[o] = a[ai] ⊕ b[bi], state by state; moments with Chan's parallel formula. */
    void merge(long[] al, double[] ad, int ai, long[] bl, double[] bd, int bi, long[] ol, double[] od, int oi) {
      int nl = longOp.length;
      int nd = doubleOp.length;
      for (int[] group : moments) { // before the plain states: it reads the counts before they add up
        long n1 = al[ai * nl + group[0]];
        long n2 = bl[bi * nl + group[0]];
        double mean1 = ad[ai * nd + group[1]];
        double mean2 = bd[bi * nd + group[1]];
        double m2a = ad[ai * nd + group[2]];
        double m2b = bd[bi * nd + group[2]];
        long count = n1 + n2;
        double safe = count > 0 ? count : 1;
        double delta = mean2 - mean1;
        od[oi * nd + group[1]] = mean1 + delta * n2 / safe;
        od[oi * nd + group[2]] = m2a + m2b + delta * delta * n1 * n2 / safe;
      }
      for (int s = 0; s < nl; s++) {
        long a = al[ai * nl + s];
        long b = bl[bi * nl + s];
        int op = longOp[s];
        ol[oi * nl + s] = op == MIN ? Math.min(a, b) : op == MAX ? Math.max(a, b) : a + b;
      }
      for (int s = 0; s < nd; s++) {
        int op = doubleOp[s];
        if (op == MOMENTS) {
          continue;
        }
        double a = ad[ai * nd + s];
        double b = bd[bi * nd + s];
        double r;
        if (op == MIN) {
          r = Double.isNaN(a) ? b : Double.isNaN(b) ? a : Math.min(a, b); // Spark orders NaN above all
        } else if (op == MAX) {
          r = Math.max(a, b);
        } else {
          r = a + b;
        }
        od[oi * nd + s] = r;
      }
    }

    void identity(long[] l, double[] d, int i) {
      System.arraycopy(longIdentity, 0, l, i * longIdentity.length, longIdentity.length);
      System.arraycopy(doubleIdentity, 0, d, i * doubleIdentity.length, doubleIdentity.length);
    }

    Object boxLong(int slot, long value) {
      DataType type = longType[slot];
      if (type instanceof IntegerType) {
        return (int) value;
      }
      if (type instanceof ShortType) {
        return (short) value;
      }
      if (type instanceof ByteType) {
        return (byte) value;
      }
      return value;
    }

    Object boxDouble(int slot, double value) {
      return doubleType[slot] instanceof FloatType ? (Object) (float) value : (Object) value;
    }
  }

  /** One key's open cells: a ring of states, the suffix combines of its front, the running back. */
  static final class Queue {
    final Layout layout;
    final Object[] template; // the key's first row: keys and any other pass-through columns
    long[] cells = new long[4];
    long[] longs;
    double[] doubles;
    long[] frontLongs;
    double[] frontDoubles;
    final long[] backLongs;
    final double[] backDoubles;
    int head;
    int count;
    int front; // the first `front` cells from head carry suffix combines
    long lastCell;
    long nextEnd;
    boolean seen;

    Queue(Layout layout, Object[] template) {
      this.layout = layout;
      this.template = template;
      int nl = layout.longOp.length;
      int nd = layout.doubleOp.length;
      longs = new long[4 * nl];
      doubles = new double[4 * nd];
      frontLongs = new long[4 * nl];
      frontDoubles = new double[4 * nd];
      backLongs = new long[nl];
      backDoubles = new double[nd];
      layout.identity(backLongs, backDoubles, 0);
    }

    int at(int j) {
      return (head + j) % cells.length;
    }

    void push(long cell, long[] l, double[] d) {
      if (count == cells.length) {
        grow();
      }
      int i = at(count);
      cells[i] = cell;
      System.arraycopy(l, 0, longs, i * l.length, l.length);
      System.arraycopy(d, 0, doubles, i * d.length, d.length);
      count++;
      layout.merge(backLongs, backDoubles, 0, l, d, 0, backLongs, backDoubles, 0);
    }

    void pop() {
      if (front == 0) { // the back becomes the front: suffix combines, newest to oldest
        int last = at(count - 1);
        int nl = backLongs.length;
        int nd = backDoubles.length;
        System.arraycopy(longs, last * nl, frontLongs, last * nl, nl);
        System.arraycopy(doubles, last * nd, frontDoubles, last * nd, nd);
        for (int j = count - 2; j >= 0; j--) {
          int i = at(j);
          layout.merge(longs, doubles, i, frontLongs, frontDoubles, at(j + 1), frontLongs, frontDoubles, i);
        }
        front = count;
        layout.identity(backLongs, backDoubles, 0);
      }
      head = at(1);
      count--;
      front--;
    }

    /** Drops the cells that no window ending at `end` or later holds. */
    void dropBefore(long end) {
      while (count > 0 && cells[head] <= end - layout.size) {
        pop();
      }
    }

    private void grow() {
      int capacity = cells.length * 2;
      int nl = backLongs.length;
      int nd = backDoubles.length;
      long[] c = new long[capacity];
      long[] l = new long[capacity * nl];
      double[] d = new double[capacity * nd];
      long[] fl = new long[capacity * nl];
      double[] fd = new double[capacity * nd];
      for (int j = 0; j < count; j++) {
        int i = at(j);
        c[j] = cells[i];
        System.arraycopy(longs, i * nl, l, j * nl, nl);
        System.arraycopy(doubles, i * nd, d, j * nd, nd);
        System.arraycopy(frontLongs, i * nl, fl, j * nl, nl);
        System.arraycopy(frontDoubles, i * nd, fd, j * nd, nd);
      }
      cells = c;
      longs = l;
      doubles = d;
      frontLongs = fl;
      frontDoubles = fd;
      head = 0;
    }
  }

  /** The windows of one partition's cells, sorted by cell, with every key's cells in it. */
  static final class Windows implements Iterator<Row> {
    private final Iterator<Row> rows;
    private final Layout layout;
    private final HashMap<List<Object>, Queue> queues = new HashMap<>();
    private final ArrayDeque<Row> ready = new ArrayDeque<>();
    private final long[] cellLongs;
    private final double[] cellDoubles;
    private final long[] windowLongs;
    private final double[] windowDoubles;
    private Iterator<Queue> closing;
    private long finalWindow;

    Windows(Iterator<Row> rows, Layout layout) {
      this.rows = rows;
      this.layout = layout;
      cellLongs = new long[layout.longOp.length];
      cellDoubles = new double[layout.doubleOp.length];
      windowLongs = new long[cellLongs.length];
      windowDoubles = new double[cellDoubles.length];
    }

    @Override
    public boolean hasNext() {
      while (ready.isEmpty()) {
        if (closing == null && rows.hasNext()) {
          add(rows.next());
        } else {
          if (closing == null) {
            closing = queues.values().iterator();
          }
          if (!closing.hasNext()) {
            return false;
          }
          Queue queue = closing.next();
          if (layout.lastField >= 0) {
            emitUpTo(queue, finalWindow);
          } else if (queue.count > 0) {
            emitUpTo(queue, queue.lastCell + layout.size - 1);
          }
        }
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

    private void add(Row row) {
      Object[] key = new Object[layout.keyFields.length];
      for (int i = 0; i < key.length; i++) {
        key[i] = row.get(layout.keyFields[i]);
      }
      List<Object> id = Arrays.asList(key);
      Queue queue = queues.get(id);
      if (queue == null) {
        Object[] template = new Object[row.length()];
        for (int i = 0; i < template.length; i++) {
          template[i] = row.get(i);
        }
        queue = new Queue(layout, template);
        queues.put(id, queue);
        if (layout.lastField >= 0) {
          finalWindow = row.getLong(layout.lastField);
        }
      }
      long cell = row.getLong(layout.cellField);
      for (int s = 0; s < cellLongs.length; s++) {
        int field = layout.longField[s];
        cellLongs[s] = row.isNullAt(field) ? layout.longIdentity[s] : ((Number) row.get(field)).longValue();
      }
      for (int s = 0; s < cellDoubles.length; s++) {
        int field = layout.doubleField[s];
        cellDoubles[s] = row.isNullAt(field) ? layout.doubleIdentity[s] : ((Number) row.get(field)).doubleValue();
      }
      if (layout.lastField >= 0) {
        addLandmark(queue, cell);
      } else {
        if (queue.count > 0) {
          emitUpTo(queue, cell - 1);
        }
        queue.dropBefore(cell);
        queue.push(cell, cellLongs, cellDoubles);
        queue.lastCell = cell;
        queue.nextEnd = cell;
        emitUpTo(queue, cell);
      }
    }

    /** Landmark: every cell up to w is in window w; only the running combine is kept. */
    private void addLandmark(Queue queue, long cell) {
      if (!queue.seen) {
        queue.seen = true;
        queue.nextEnd = Math.max(cell, 0);
      } else {
        emitUpTo(queue, Math.min(cell - 1, finalWindow));
        queue.nextEnd = Math.max(queue.nextEnd, cell);
      }
      layout.merge(
          queue.backLongs, queue.backDoubles, 0, cellLongs, cellDoubles, 0, queue.backLongs, queue.backDoubles, 0);
    }

    /** Emits the key's windows that end from its next end up to `last`, while they hold any cell. */
    private void emitUpTo(Queue queue, long last) {
      long step = layout.step;
      long end = Math.floorDiv(queue.nextEnd + step, step) * step - 1; // the first with (end + 1) % step == 0
      for (; end <= last; end += step) {
        if (layout.lastField < 0) {
          queue.dropBefore(end);
          if (queue.count == 0) {
            break;
          }
        }
        emit(queue, end);
      }
      queue.nextEnd = Math.max(queue.nextEnd, last + 1);
    }

    private void emit(Queue queue, long end) {
      if (queue.front > 0) {
        layout.merge(
            queue.frontLongs,
            queue.frontDoubles,
            queue.head,
            queue.backLongs,
            queue.backDoubles,
            0,
            windowLongs,
            windowDoubles,
            0);
      } else {
        System.arraycopy(queue.backLongs, 0, windowLongs, 0, windowLongs.length);
        System.arraycopy(queue.backDoubles, 0, windowDoubles, 0, windowDoubles.length);
      }
      if (windowLongs[layout.keepSlot] <= 0) {
        return;
      }
      Object[] values = queue.template.clone();
      values[layout.cellField] = Math.floorDiv(end + 1, layout.step) - 1;
      for (int s = 0; s < windowLongs.length; s++) {
        values[layout.longField[s]] = layout.boxLong(s, windowLongs[s]);
      }
      for (int s = 0; s < windowDoubles.length; s++) {
        values[layout.doubleField[s]] = layout.boxDouble(s, windowDoubles[s]);
      }
      ready.add(RowFactory.create(values));
    }
  }
}
