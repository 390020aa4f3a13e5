package wqlbench;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.LongAccumulator;

/**
 * PROTOTYPE (benchmarks/session_store): a stream's sessions [SESSION GAP g WATTR ts PATTR k] with
 * count, sum and max of v kept in Spark's state store through flatMapGroupsWithState, modelled on
 * wql/runtime/jvm/wql/kernels/StreamCells.java.
 *
 * <p>Per key, the state is the key's open sessions, sorted by start, as one byte[]: an int (how many)
 * then, per session, start, last (microseconds), count (long), sum and max (doubles): 40 bytes each.
 * Spark calls {@link #call} for each key a trigger brings rows for, and again, with none, once the
 * watermark passes the key's timeout (the end, last + gap, of its earliest open session).
 *
 * <p>The input is either the trigger's rows, each a point (start = last = t, count 1, sum = max = v),
 * or, with premerge, fragments: each task first chains its own rows of a key into runs whose
 * consecutive rows are within the gap (a map-side combine, like Spark's
 * spark.sql.streaming.sessionWindow.merge.sessions.in.local.partition), so that the shuffle into the
 * stateful operator carries one row per run rather than one per tuple. Premerge is not exact for
 * late rows: Spark's late-row filter then sees fragments, not rows, and keeps a late row that a task
 * chained to one on time (check.py shows it; Spark's own local merge differs from session_window
 * likewise, and more). Without late rows (as in probe.py's data) it changes nothing. Either way a key's new
 * intervals and its open sessions are merged in one sweep by start: an interval within the gap of the
 * session before it (start ≤ last + gap) joins it, which also merges two sessions that a row bridges.
 *
 * <p>A session closes once the watermark (ms, × 1000) ≥ last + gap; closed sessions are emitted as
 * (k, session_start, session_end = last + gap, n, total, top) and removed. Late rows are Spark's to
 * drop, as for session_window: {@link #apply} watermarks each row's session end t + gap (delay gap), so
 * Spark drops, before the function, the rows whose one-row session ends at or below the watermark of
 * the trigger before (Spark's watermark for late events); a row admitted yet behind this trigger's
 * watermark joins the open sessions, then closes with them, and is counted ({@link #lateRows}).
 */
public final class SessionStore<V> implements FlatMapGroupsWithStateFunction<Row, V, byte[], Row> {
  private static final long serialVersionUID = 1L;

  private final long gap; // microseconds
  private final boolean fragments; // input rows are (k, start, last, n, sum, max), not (k, t, v)
  private final LongAccumulator late;

  private static volatile LongAccumulator lastLate;

  private SessionStore(long gap, boolean fragments, LongAccumulator late) {
    this.gap = gap;
    this.fragments = fragments;
    this.late = late;
  }

  static final StructType POINTS =
      new StructType()
          .add("k", DataTypes.IntegerType, false)
          .add("t", DataTypes.LongType, false)
          .add("v", DataTypes.DoubleType, true);

  static final StructType FRAGMENTS =
      new StructType()
          .add("k", DataTypes.IntegerType, false)
          .add("start", DataTypes.LongType, false)
          .add("last", DataTypes.LongType, false)
          .add("n", DataTypes.LongType, false)
          .add("sum", DataTypes.DoubleType, false)
          .add("max", DataTypes.DoubleType, false)
          .add("wm", DataTypes.TimestampType, true);

  static final StructType KEY = new StructType().add("k", DataTypes.IntegerType, false);

  static final StructType OUTPUT =
      new StructType()
          .add("k", DataTypes.IntegerType, false)
          .add("session_start", DataTypes.LongType, false)
          .add("session_end", DataTypes.LongType, false)
          .add("n", DataTypes.LongType, false)
          .add("total", DataTypes.DoubleType, true)
          .add("top", DataTypes.DoubleType, true);

  /**
   * The sessions of the stream `input` (columns key (INT), time (TIMESTAMP), value (DOUBLE)), gap in
   * microseconds. Without premerge, `input` is watermarked on `time` already (withWatermark); with
   * premerge, each task chains its rows into fragments first and the watermark (0 s on the
   * fragments' last time: the same one) is declared here, so `input` must have none.
   */
  /** A tuple as the function reads it (a bean: Spark binds its fields to columns by name). */
  public static final class Point implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private long t;
    private double v; // NOT NULL here: a null v would fail the bean's deserializer (the probe has none)

    public long getT() {
      return t;
    }

    public void setT(long value) {
      t = value;
    }

    public double getV() {
      return v;
    }

    public void setV(double value) {
      v = value;
    }
  }

  /** A fragment (a task's run of a key's rows) as the function reads it. */
  public static final class Run implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private long start;
    private long last;
    private long n;
    private double sum;
    private double max;

    public long getStart() {
      return start;
    }

    public void setStart(long value) {
      start = value;
    }

    public long getLast() {
      return last;
    }

    public void setLast(long value) {
      last = value;
    }

    public long getN() {
      return n;
    }

    public void setN(long value) {
      n = value;
    }

    public double getSum() {
      return sum;
    }

    public void setSum(double value) {
      sum = value;
    }

    public double getMax() {
      return max;
    }

    public void setMax(double value) {
      max = value;
    }
  }

  /**
   * The sessions of the stream `input` (columns key (INT), time (TIMESTAMP), value (DOUBLE); no
   * watermark of its own), gap in microseconds, as withWatermark(time, delay) would close them.
   *
   * <p>The watermark is declared here, on the end of each row's one-row session (t + gap; for a
   * fragment, last + gap) with the delay gap + delay: Spark's watermark is then max(t) − delay, the
   * one withWatermark(time, delay) gives, and the rows Spark itself drops before the stateful
   * operator (those whose watermarked column is at or below the watermark) are exactly those whose
   * session [t, t + gap) ends there: session_window's rule. (withWatermark on `time` itself would make
   * Spark drop every row with t ≤ watermark, such as a row at the epoch in the first trigger, whose
   * watermark is 0.) With premerge, each task first chains its rows into fragments.
   */
  public static Dataset<Row> apply(
      Dataset<Row> input,
      String key,
      String time,
      String value,
      long gapMicros,
      long delayMs,
      boolean premerge) {
    LongAccumulator late = SparkContext.getOrCreate().longAccumulator("wql-bench session late rows");
    lastLate = late;
    String delay = (Math.floorDiv(gapMicros, 1000) + delayMs) + " milliseconds";
    org.apache.spark.sql.Column k = functions.col(key).cast("int").alias("k");
    org.apache.spark.sql.Column t = functions.expr("unix_micros(`" + time + "`)").alias("t");
    org.apache.spark.sql.Column v = functions.col(value).cast("double").alias("v");
    Dataset<Row> rows;
    if (premerge) {
      final long g = gapMicros;
      MapPartitionsFunction<Row, Row> chain = part -> chained(part, g);
      rows = input.select(k, t, v).mapPartitions(chain, Encoders.row(FRAGMENTS)).withWatermark("wm", delay);
    } else {
      org.apache.spark.sql.Column end =
          functions.expr("timestamp_micros(unix_micros(`" + time + "`) + " + gapMicros + "L)").alias("wm");
      rows = input.select(k, t, v, end).withWatermark("wm", delay);
    }
    // The values as beans: a bean's fields bind to columns by name, so the watermarked column "wm" that
    // the analyzer wants among the operator's input (for event-time timeouts) is never turned into a
    // java.sql.Timestamp per row (a Row encoder binds by position and must take every column).
    if (premerge) {
      return rows.groupBy(functions.col("k"))
          .as(Encoders.row(KEY), Encoders.bean(Run.class))
          .flatMapGroupsWithState(
              new SessionStore<Run>(gapMicros, true, late),
              OutputMode.Append(),
              Encoders.BINARY(),
              Encoders.row(OUTPUT),
              GroupStateTimeout.EventTimeTimeout());
    }
    return rows.groupBy(functions.col("k"))
        .as(Encoders.row(KEY), Encoders.bean(Point.class))
        .flatMapGroupsWithState(
            new SessionStore<Point>(gapMicros, false, late),
            OutputMode.Append(),
            Encoders.BINARY(),
            Encoders.row(OUTPUT),
            GroupStateTimeout.EventTimeTimeout());
  }

  /**
   * A floor, not a contender: the same rows (k, t, v, and t + gap as a timestamp) through the same
   * shuffle into flatMapGroupsWithState, deserialized into the same beans, by a function that only
   * reads them (no state, no output, no timeout, no watermark): what store_rows pays before any
   * session logic or state.
   */
  public static Dataset<Row> shuffleOnly(
      Dataset<Row> input, String key, String time, String value, long gapMicros) {
    Dataset<Row> rows =
        input.select(
            functions.col(key).cast("int").alias("k"),
            functions.expr("unix_micros(`" + time + "`)").alias("t"),
            functions.col(value).cast("double").alias("v"),
            functions
                .expr("timestamp_micros(unix_micros(`" + time + "`) + " + gapMicros + "L)")
                .alias("wm"));
    FlatMapGroupsWithStateFunction<Row, Point, byte[], Row> read =
        (k, values, state) -> {
          while (values.hasNext()) {
            values.next();
          }
          return java.util.Collections.<Row>emptyIterator();
        };
    return rows.groupBy(functions.col("k"))
        .as(Encoders.row(KEY), Encoders.bean(Point.class))
        .flatMapGroupsWithState(
            read,
            OutputMode.Append(),
            Encoders.BINARY(),
            Encoders.row(OUTPUT),
            GroupStateTimeout.NoTimeout());
  }

  /** The rows (fragments: their rows) admitted behind their trigger's watermark, so far, by the last query. */
  public static long lateRows() {
    LongAccumulator late = lastLate;
    return late == null ? 0 : late.value();
  }

  /** A run of one key's rows, consecutive rows (by t) at most the gap apart. */
  static final class Fragment {
    long start;
    long last;
    long n;
    double sum;
    double max;

    Fragment(long t, double v) {
      start = t;
      last = t;
      n = 1;
      sum = v;
      max = v;
    }

    Row row(int k, long gap) {
      long end = last + gap; // the watermarked column: the end of the fragment's session
      java.sql.Timestamp wm = new java.sql.Timestamp(Math.floorDiv(end, 1000));
      wm.setNanos(Math.toIntExact(Math.floorMod(end, 1_000_000L) * 1000));
      return RowFactory.create(k, start, last, n, sum, max, wm);
    }
  }

  /**
   * A task's rows chained per key: a row within the gap of its key's current run (t ≥ start − gap and
   * t ≤ last + gap, which keeps every consecutive gap of the run within the gap, in any order) joins
   * it; any other row ends the run (emitted) and starts the next.
   */
  static Iterator<Row> chained(Iterator<Row> part, long gap) {
    Map<Integer, Fragment> open = new HashMap<>();
    List<Row> out = new ArrayList<>();
    while (part.hasNext()) {
      Row row = part.next();
      int k = row.getInt(0);
      long t = row.getLong(1);
      double v = row.isNullAt(2) ? Double.NaN : row.getDouble(2);
      Fragment f = open.get(k);
      if (f != null && t >= f.start - gap && t <= f.last + gap) {
        if (t < f.start) {
          f.start = t;
        }
        if (t > f.last) {
          f.last = t;
        }
        f.n++;
        f.sum += v;
        f.max = Math.max(f.max, v);
        continue;
      }
      if (f != null) {
        out.add(f.row(k, gap));
      }
      open.put(k, new Fragment(t, v));
    }
    for (Map.Entry<Integer, Fragment> entry : open.entrySet()) {
      out.add(entry.getValue().row(entry.getKey(), gap));
    }
    return out.iterator();
  }

  /** A list of intervals with their aggregates, in parallel primitive arrays. */
  static final class Sessions {
    int size;
    long[] start;
    long[] last;
    long[] n;
    double[] sum;
    double[] max;

    Sessions(int capacity) {
      capacity = Math.max(capacity, 4);
      start = new long[capacity];
      last = new long[capacity];
      n = new long[capacity];
      sum = new double[capacity];
      max = new double[capacity];
    }

    void add(long s, long l, long count, double total, double top) {
      if (size == start.length) {
        int c = size * 2;
        start = Arrays.copyOf(start, c);
        last = Arrays.copyOf(last, c);
        n = Arrays.copyOf(n, c);
        sum = Arrays.copyOf(sum, c);
        max = Arrays.copyOf(max, c);
      }
      start[size] = s;
      last[size] = l;
      n[size] = count;
      sum[size] = total;
      max[size] = top;
      size++;
    }

    boolean sortedByStart() {
      for (int i = 1; i < size; i++) {
        if (start[i] < start[i - 1]) {
          return false;
        }
      }
      return true;
    }

    /** The same intervals sorted by start (stable). */
    Sessions sorted() {
      Integer[] order = new Integer[size];
      for (int i = 0; i < size; i++) {
        order[i] = i;
      }
      Arrays.sort(order, (a, b) -> Long.compare(start[a], start[b]));
      Sessions s = new Sessions(size);
      for (int i : order) {
        s.add(start[i], last[i], n[i], sum[i], max[i]);
      }
      return s;
    }
  }

  @Override
  public Iterator<Row> call(Row key, Iterator<V> rows, GroupState<byte[]> state) {
    long watermarkMs = state.getCurrentWatermarkMs();
    // Spark's watermark is 0 before any trigger has moved it: nothing late, nothing closed.
    long watermark = watermarkMs > 0 ? watermarkMs * 1000 : Long.MIN_VALUE;
    Sessions open = state.exists() ? decode(state.get()) : new Sessions(4);
    Sessions in = new Sessions(1024);
    long behind = 0; // rows admitted behind this trigger's watermark
    while (rows.hasNext()) {
      V row = rows.next();
      long s;
      long l;
      long count;
      double total;
      double top;
      if (fragments) {
        Run run = (Run) row;
        s = run.start;
        l = run.last;
        count = run.n;
        total = run.sum;
        top = run.max;
      } else {
        Point point = (Point) row;
        s = point.t;
        l = s;
        count = 1;
        total = point.v;
        top = total;
      }
      if (watermark != Long.MIN_VALUE && l + gap <= watermark) {
        // Behind this trigger's watermark, yet not dropped by Spark: Spark drops late rows against the
        // trigger before's watermark (its watermark for late events), as session_window does, and such a
        // row still joins the open sessions before they close below. Only counted.
        behind += count;
      }
      in.add(s, l, count, total, top);
    }
    if (behind > 0) {
      late.add(behind);
    }
    if (!in.sortedByStart()) {
      in = in.sorted();
    }
    Sessions merged = merge(open, in);
    List<Row> out = new ArrayList<>();
    Sessions kept = new Sessions(4);
    Object k = key.get(0);
    for (int i = 0; i < merged.size; i++) {
      long end = merged.last[i] + gap;
      if (watermark != Long.MIN_VALUE && end <= watermark) {
        out.add(
            RowFactory.create(
                k, merged.start[i], end, merged.n[i], merged.sum[i], merged.max[i]));
      } else {
        kept.add(merged.start[i], merged.last[i], merged.n[i], merged.sum[i], merged.max[i]);
      }
    }
    if (kept.size == 0) {
      state.remove();
    } else {
      state.update(encode(kept));
      // Spark times a key out once the watermark is strictly greater than this: the first kept
      // session closes at watermark (ms) ≥ ceil(end / 1000), so one less.
      long end = kept.last[0] + gap; // kept sessions are disjoint and sorted: the first ends first
      state.setTimeoutTimestamp(Math.floorDiv(end + 999, 1000) - 1);
    }
    return out.iterator();
  }

  /**
   * The open sessions (sorted by start, disjoint, more than the gap apart) with the new intervals
   * (sorted by start), swept in order of start: an interval whose start is within the gap of the
   * current session's last joins it.
   */
  Sessions merge(Sessions a, Sessions b) {
    if (b.size == 0) {
      return a;
    }
    Sessions out = new Sessions(a.size + 4);
    int i = 0;
    int j = 0;
    boolean have = false;
    long cs = 0;
    long cl = 0;
    long cn = 0;
    double csum = 0;
    double cmax = 0;
    while (i < a.size || j < b.size) {
      boolean fromA = j >= b.size || (i < a.size && a.start[i] <= b.start[j]);
      Sessions src = fromA ? a : b;
      int x = fromA ? i++ : j++;
      long s = src.start[x];
      if (have && s <= cl + gap) {
        cl = Math.max(cl, src.last[x]);
        cn += src.n[x];
        csum += src.sum[x];
        cmax = Math.max(cmax, src.max[x]);
        continue;
      }
      if (have) {
        out.add(cs, cl, cn, csum, cmax);
      }
      have = true;
      cs = s;
      cl = src.last[x];
      cn = src.n[x];
      csum = src.sum[x];
      cmax = src.max[x];
    }
    if (have) {
      out.add(cs, cl, cn, csum, cmax);
    }
    return out;
  }

  static byte[] encode(Sessions s) {
    ByteBuffer buffer = ByteBuffer.allocate(4 + s.size * 40);
    buffer.putInt(s.size);
    for (int i = 0; i < s.size; i++) {
      buffer.putLong(s.start[i]);
      buffer.putLong(s.last[i]);
      buffer.putLong(s.n[i]);
      buffer.putDouble(s.sum[i]);
      buffer.putDouble(s.max[i]);
    }
    return buffer.array();
  }

  static Sessions decode(byte[] bytes) {
    ByteBuffer buffer = ByteBuffer.wrap(bytes);
    int n = buffer.getInt();
    Sessions s = new Sessions(n + 4);
    for (int i = 0; i < n; i++) {
      s.add(buffer.getLong(), buffer.getLong(), buffer.getLong(), buffer.getDouble(), buffer.getDouble());
    }
    return s;
  }
}
