package wql.kernels;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.StructType;

/**
 * The fold plan's kernel for sessions and frames inside the JVM: the contract of the numpy kernel
 * {@code frame_states} (semantics.md §2.16, §2.17, §7.9) without its Arrow round trip, for sessions
 * (GAP, MAX, KAFKA), threshold frames (MIN rows or span), delta and aggregate frames, without GROUP
 * BY inside the partitions and without a stream's {@code _close} (a stream's frames run in numpy).
 *
 * <p>Input: one row per tuple with the partition keys, {@code _t} (the window attribute in base
 * units, integral; NULL is in no window and ends none), {@code _pos} (arrival, which orders tuples of
 * equal {@code _t} for frames), {@code _in} (WHERE; absent: all pass), what the rule reads ({@code
 * _p} THRESHOLD's predicate, {@code _x} DELTA's x, both computed by Spark before the shuffle) and one
 * contribution column per state (absent: a row count).
 *
 * <p>As for the bins kernel ({@link TupleWindows}), tuples cross the shuffle as columnar batches of
 * one key ({@link TupleBatches}, the rule's columns as extras), each key's batches are copied into
 * arrays ({@link KeyTuples}), put in ({@code _t}, {@code _pos}) order by a merge of the runs they
 * arrived in ({@link ValueOrder}), not by Spark's sort of every row, and walked once: each window's
 * bounds found and its states folded as its tuples go by ({@link States}).
 *
 * <p>Memory: a Spark partition's tuples are held in those arrays, accounted with Spark's task memory
 * manager ({@link TaskMemory}). When Spark cannot grant them (one hot key of tens of millions of
 * tuples), the partition's tuples go through Spark's spilling sorter instead and are walked in chunks
 * of a fixed size ({@link SortedFrames}), a window still open at a chunk's end carried into the next:
 * then the kernel holds one chunk and the window in flight, never a key's tuples.
 *
 * <p>Output rows: partition keys, {@code wid} (the first tuple's {@code _t}), {@code _last} (the
 * last's), then the states; a window with no tuple inside WHERE, or shorter than MIN, is left out.
 */
public final class FrameWindows {
  private FrameWindows() {}

  static final int SESSION = 0;
  static final int THRESHOLD = 1;
  static final int DELTA = 2;
  static final int AGGREGATE = 3;

  /**
   * The request {"partitions", "operations", "columns", "rule", "minimum", "minimum_rows", "output"}
   * over tuples of that schema; refused for what only the numpy kernel computes (a stream's closing
   * tuples, GROUP BY, a DOUBLE attribute, fractional bounds on an integral one).
   */
  static KernelRequest request(RequestJson request, StructType input) {
    if ((request.has("groups") && !request.strings("groups").isEmpty()) || request.flag("closes")) {
      throw new KernelRequest.Refused("the JVM folds frames without GROUP BY and without a stream's closing tuples");
    }
    Request parsed = new Request(request, Rule.of(request.object("rule"), request.value("minimum"), request.flag("minimum_rows")));
    parsed.spec(input); // refuses what it cannot compute
    return parsed;
  }

  /** A window rule's constants, in the attribute's base units (integral: the attribute is). */
  static final class Rule implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    int cut;
    long gap;
    boolean bounded; // a session's MAX
    long longest;
    long delta; // an integral x's δ (its floor: the job sends it so)
    double realDelta; // a DOUBLE x's δ
    boolean hasMinimum;
    boolean minimumRows;
    double minimum;
    Running[] running; // an aggregate frame's running aggregates
    Test test; // and its condition over them

    static Rule of(RequestJson rule, JsonNode minimum, boolean minimumRows) {
      Rule out = new Rule();
      String cut = rule.text("cut");
      switch (cut) {
        case "session":
          out.cut = SESSION;
          out.gap = rule.whole("gap", "GAP");
          if (rule.has("longest")) {
            out.bounded = true;
            out.longest = rule.whole("longest", "MAX");
          }
          break;
        case "threshold":
          out.cut = THRESHOLD;
          break;
        case "delta":
          out.cut = DELTA;
          JsonNode delta = rule.value("delta");
          if (!delta.isNumber()) {
            throw new KernelRequest.Refused("DELTA is not a number");
          }
          out.realDelta = delta.asDouble();
          out.delta = delta.isIntegralNumber() ? delta.asLong() : (long) Math.floor(out.realDelta);
          break;
        case "aggregate":
          out.cut = AGGREGATE;
          out.running = Running.of(rule.value("running"));
          out.test = Test.of(rule.value("test"), out.running.length);
          break;
        default:
          throw new KernelRequest.Refused("no " + cut + " frames in the JVM");
      }
      if (minimum.isNumber()) {
        out.hasMinimum = true;
        out.minimumRows = minimumRows;
        out.minimum = minimum.asDouble();
      }
      return out;
    }

    /** Whether a window of `rows` tuples, from value `first` to `last`, is long enough for MIN. */
    boolean longEnough(long rows, long first, long last) {
      if (!hasMinimum) {
        return true;
      }
      return minimumRows ? rows >= minimum : (double) (last - first) >= minimum;
    }
  }

  /** What the batches and the windows know of the tuples; the same wherever it is computed. */
  static final class Spec implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    TupleWindows.Spec base; // keys, states, batches' layout, output columns
    Rule rule;
    int ruled = -1; // the extra holding _p or _x
    int present = -1; // an integral _x's presence; -1: a DOUBLE _x is NaN where absent
    int[] argument; // an aggregate frame's: each running aggregate's argument's extra (-1: count(*) or a count)
    int[] argumentPresent; // and where it is not NULL (-1: count(*))
    int lastOut;
    int chunkTuples = CHUNK_TUPLES; // past memory: tuples per chunk walked ({@link SortedFrames})
  }

  /** Tuples per chunk of the sorted tuples, each walked as one array; a window may span many. */
  static final String CHUNK = "spark.wql.frames.chunkTuples";

  static final int CHUNK_TUPLES = 8192;

  /** Tuples to windows: batches per key before the shuffle, then each key's windows. */
  static final class Request extends BatchedRequest {
    private static final long serialVersionUID = 1L;
    private final Rule rule;

    Request(RequestJson request, Rule rule) {
      super(request, "FrameWindows");
      this.rule = rule;
    }

    @Override
    TupleWindows.Spec batches(StructType tuples) {
      return spec(tuples).base;
    }

    @Override
    PartitionKernel windows(StructType tuples, SQLConf conf, SorterMetrics metrics) {
      Spec spec = spec(tuples);
      settle(spec.base, conf);
      spec.chunkTuples = Math.max(1, Integer.parseInt(conf.getConfString(CHUNK, String.valueOf(CHUNK_TUPLES))));
      return batched -> new Windows(batched, spec, metrics);
    }

    /** The spec over tuples of schema `input`; refused where the JVM cannot compute them. */
    Spec spec(StructType input) {
      Spec spec = new Spec();
      spec.rule = rule;
      spec.base = TupleWindows.spec("frames", input, this, 1);
      List<String> names = List.of(input.fieldNames());
      List<Integer> fields = new ArrayList<>();
      List<Integer> kinds = new ArrayList<>();
      if (rule.cut != SESSION && names.contains("_pos")) {
        DataType type = input.apply("_pos").dataType();
        if (!States.isIntegral(type)) {
          throw new KernelRequest.Refused("_pos is not integral");
        }
        spec.base.ties = fields.size();
        fields.add(input.fieldIndex("_pos"));
        kinds.add(States.width(type));
      }
      if (rule.cut == THRESHOLD) {
        if (!names.contains("_p") || !(input.apply("_p").dataType() instanceof BooleanType)) {
          throw new KernelRequest.Refused("a threshold frame needs its predicate _p as a boolean");
        }
        spec.ruled = fields.size();
        fields.add(input.fieldIndex("_p"));
        kinds.add(TupleBatches.BOOLEAN);
      } else if (rule.cut == DELTA) {
        DataType type = names.contains("_x") ? input.apply("_x").dataType() : null;
        if (type != null && States.isIntegral(type)) {
          spec.ruled = fields.size();
          fields.add(input.fieldIndex("_x"));
          kinds.add(States.width(type));
          spec.present = fields.size();
          fields.add(input.fieldIndex("_x"));
          kinds.add(TupleBatches.PRESENT);
        } else if (type instanceof DoubleType) {
          spec.ruled = fields.size();
          fields.add(input.fieldIndex("_x"));
          kinds.add(TupleBatches.FLOATING);
        } else {
          throw new KernelRequest.Refused("a delta frame needs its x, _x, as a bigint or a double");
        }
      } else if (rule.cut == AGGREGATE) {
        spec.argument = new int[rule.running.length];
        spec.argumentPresent = new int[rule.running.length];
        for (int r = 0; r < rule.running.length; r++) {
          Running running = rule.running[r];
          spec.argument[r] = -1;
          spec.argumentPresent[r] = -1;
          if (running.column == null) {
            continue; // count(*): the tuples counted
          }
          DataType type = names.contains(running.column) ? input.apply(running.column).dataType() : null;
          boolean integral = type != null && States.isIntegral(type);
          if (type == null || !(integral || type instanceof DoubleType) || (running.integral && !integral)) {
            throw new KernelRequest.Refused("a running aggregate's argument " + running.column + " is neither bigint nor double");
          }
          if (running.function != Running.COUNT) {
            spec.argument[r] = fields.size();
            fields.add(input.fieldIndex(running.column));
            kinds.add(integral ? States.width(type) : TupleBatches.FLOATING);
          }
          spec.argumentPresent[r] = fields.size();
          fields.add(input.fieldIndex(running.column));
          kinds.add(TupleBatches.PRESENT);
        }
      }
      TupleWindows.Spec base = spec.base;
      base.extraFields = fields.stream().mapToInt(Integer::intValue).toArray();
      base.extraKinds = kinds.stream().mapToInt(Integer::intValue).toArray();
      base.layBatches(input, partitions);
      if (!List.of(output().fieldNames()).contains("_last")) {
        throw new KernelRequest.Refused("the output schema has no _last column");
      }
      spec.lastOut = output().fieldIndex("_last");
      return spec;
    }

    @Override
    public String toString() {
      String[] cuts = {"sessions", "threshold frames", "delta frames", "aggregate frames"};
      return "partitions " + partitions + ", " + cuts[rule.cut] + " folded in one pass per key";
    }
  }

  /**
   * The windows of one partition's batches ({@link BatchedWindows}): each key's tuples put in (_t,
   * _pos) order where they did not arrive in it and walked once, each window's bounds found and its
   * states folded as its tuples go by.
   *
   * <p>Past memory the partition's tuples come back from {@link SortedFrames} in chunks of one key,
   * each walked as a key's columns are: the window still open at a chunk's end is carried into the
   * next chunk (its first and last values, its length, a delta frame's first x, its folded states, an
   * aggregate frame's running values) and goes on folding there, so each window's states are folded
   * from the same tuples in the same order as in memory.
   */
  static final class Windows extends BatchedWindows {
    private final Spec spec;
    private long[] lasts = new long[0]; // each window's last value
    private final long[] tupleLongs;
    private final double[] tupleDoubles;
    private final long[] foldLongs;
    private final double[] foldDoubles;
    private final RunningValues running;
    // Past memory: the sorted tuples, the chunk of them being walked, and the window carried across chunks.
    private SortedFrames frames;
    private KeyTuples chunk;
    private boolean carried;
    private long carriedFirst; // its first tuple's _t
    private long carriedLast; // its last one's so far
    private long carriedRows;
    private long carriedAnchor; // a delta frame's first x
    private final long[] carriedLongs;
    private final double[] carriedDoubles;

    Windows(Iterator<InternalRow> batches, Spec spec, SorterMetrics metrics) {
      super(batches, spec.base, metrics);
      this.spec = spec;
      tupleLongs = new long[states.longs()];
      tupleDoubles = new double[states.doubles()];
      foldLongs = new long[states.longs()];
      foldDoubles = new double[states.doubles()];
      carriedLongs = new long[states.longs()];
      carriedDoubles = new double[states.doubles()];
      running = spec.rule.cut == AGGREGATE ? new RunningValues(spec.rule.running) : null;
    }

    @Override
    InternalRow window() {
      UnsafeRow row = row();
      States.setIntegral(row, spec.lastOut, base.widWidth, lasts[at]);
      at++;
      return row;
    }

    @Override
    SpillingTuples sorter() {
      frames = new SortedFrames(base);
      return frames;
    }

    /**
     * The chunk's arrays are Spark's to grant from here on (its sorter spills to make room): the
     * memory limit chose this path.
     */
    @Override
    void sorted() {
      frames.sort();
      if (memory != null) {
        memory.limitedTo(-1);
      }
      chunk = new KeyTuples(null, base.storedLongs, states.doubles(), base.batchExtras.length, -1, 0);
      account((long) spec.chunkTuples * chunk.tupleBytes);
      chunk.ensureCapacity(spec.chunkTuples);
    }

    @Override
    boolean more() {
      if (!frames.next(chunk, spec.chunkTuples)) {
        return false;
      }
      template = frames.template();
      walk(chunk, chunk.size, frames.complete());
      return true;
    }

    /** The key's windows, in (_t, _pos) order: bounds and folded states of those that are kept. */
    @Override
    void compute(KeyTuples key) {
      if (!key.isSorted()) {
        long sorting = (long) key.size * (12 + key.tupleBytes); // the permutation, its scratch, a column
        account(sorting);
        key.sortByValue();
        release(sorting);
      }
      walk(key, key.size, true);
    }

    /**
     * The windows of tuples 0..n−1 of `key`'s columns, in (_t, _pos) order: a key's tuples in memory,
     * or a chunk of them ({@link SortedFrames}). A chunk's first tuples go on with the window carried
     * from the one before, if any; unless the chunk ends its key (`complete`), the window still open at
     * its end is carried into the next.
     */
    private void walk(KeyTuples key, int n, boolean complete) {
      count = 0;
      at = 0;
      windows.ensure(n + 1); // at most a window per tuple, and the carried one
      if (lasts.length < windows.wids.length) {
        account(8L * (windows.wids.length - lasts.length));
        lasts = new long[windows.wids.length];
      }
      long[] t = key.values;
      Rule rule = spec.rule;
      int i = carried ? resume(key, n, complete) : 0;
      while (i < n) {
        int from = i;
        boolean closed = false; // an aggregate frame ended by its condition, not by the tuples running out
        if (rule.cut == SESSION) {
          i++;
          while (i < n && t[i] - t[i - 1] <= rule.gap && !(rule.bounded && t[i] >= t[from] + rule.longest)) {
            i++;
          }
        } else if (rule.cut == THRESHOLD) {
          long[] holds = key.extras[spec.ruled];
          if (holds[i] == 0) {
            i++; // false or NULL: in no frame
            continue;
          }
          while (i < n && holds[i] != 0) {
            i++;
          }
        } else if (rule.cut == AGGREGATE) {
          running.reset();
          while (i < n) {
            running.add(key, spec, i++);
            if (rule.test.holds(running)) {
              closed = true; // the tuple where the condition first holds is the frame's last
              break;
            }
          }
        } else if (!present(key, i)) {
          i++; // a NULL x: in no frame
          continue;
        } else {
          long[] xs = key.extras[spec.ruled];
          i++;
          while (i < n && present(key, i) && within(xs[i], xs[from])) {
            i++;
          }
        }
        if (i == n && !complete && !closed) {
          carry(key, from, n); // a later chunk's tuples may still join it
          return;
        }
        if (rule.longEnough(i - from, t[from], t[i - 1])) {
          fold(key, from, i);
        }
      }
    }

    /**
     * The carried window takes the chunk's first tuples that join it, as the walk over one key's
     * columns would; returns where it ends, or n when it is still open and carried on.
     */
    private int resume(KeyTuples key, int n, boolean complete) {
      long[] t = key.values;
      Rule rule = spec.rule;
      int i = 0;
      boolean closed = false;
      if (rule.cut == SESSION) {
        long previous = carriedLast;
        while (i < n && t[i] - previous <= rule.gap && !(rule.bounded && t[i] >= carriedFirst + rule.longest)) {
          previous = t[i++];
        }
      } else if (rule.cut == THRESHOLD) {
        long[] holds = key.extras[spec.ruled];
        while (i < n && holds[i] != 0) {
          i++;
        }
      } else if (rule.cut == AGGREGATE) {
        while (i < n) {
          running.add(key, spec, i++); // the frame's running values so far, carried
          if (rule.test.holds(running)) {
            closed = true;
            break;
          }
        }
      } else {
        long[] xs = key.extras[spec.ruled];
        while (i < n && present(key, i) && within(xs[i], carriedAnchor)) {
          i++;
        }
      }
      foldInto(key, 0, i, carriedLongs, carriedDoubles);
      carriedRows += i;
      if (i > 0) {
        carriedLast = t[i - 1];
      }
      if (i == n && !complete && !closed) {
        return n;
      }
      carried = false;
      if (rule.longEnough(carriedRows, carriedFirst, carriedLast)) {
        emit(carriedFirst, carriedLast, carriedLongs, carriedDoubles);
      }
      return i;
    }

    /** Tuples from..n−1 open a window that the chunk's end does not close: their bounds and states go on. */
    private void carry(KeyTuples key, int from, int n) {
      carried = true;
      carriedFirst = key.values[from];
      carriedLast = key.values[n - 1];
      carriedRows = n - from;
      if (spec.rule.cut == DELTA) {
        carriedAnchor = key.extras[spec.ruled][from];
      }
      identity(carriedLongs, carriedDoubles);
      foldInto(key, from, n, carriedLongs, carriedDoubles);
    }

    private boolean present(KeyTuples key, int i) {
      if (spec.present >= 0) {
        return key.extras[spec.present][i] != 0;
      }
      return !Double.isNaN(Double.longBitsToDouble(key.extras[spec.ruled][i]));
    }

    /** Whether x is within δ of the frame's first x, `first` (both present; a DOUBLE x as its bits). */
    private boolean within(long x, long first) {
      if (spec.present < 0) {
        double real = Double.longBitsToDouble(x);
        double anchor = Double.longBitsToDouble(first);
        return real == anchor || Math.abs(real - anchor) <= spec.rule.realDelta;
      }
      long difference = x - first;
      if (((x ^ first) & (x ^ difference)) < 0 || difference == Long.MIN_VALUE) {
        return false; // beyond any long: farther than any δ
      }
      return Math.abs(difference) <= spec.rule.delta;
    }

    /** Folds tuples from..to−1 into one window's states; a window with nothing inside WHERE is left out. */
    private void fold(KeyTuples key, int from, int to) {
      identity(foldLongs, foldDoubles);
      foldInto(key, from, to, foldLongs, foldDoubles);
      emit(key.values[from], key.values[to - 1], foldLongs, foldDoubles);
    }

    private void identity(long[] longs, double[] doubles) {
      for (int s = 0; s < longs.length; s++) {
        longs[s] = states.longIdentityAt(s);
      }
      for (int s = 0; s < doubles.length; s++) {
        doubles[s] = states.doubleIdentityAt(s);
      }
    }

    /** Merges tuples from..to−1 into the states `longs` and `doubles`, one after another. */
    private void foldInto(KeyTuples key, int from, int to, long[] longs, double[] doubles) {
      int nl = longs.length;
      int nd = doubles.length;
      for (int i = from; i < to; i++) {
        for (int s = 0; s < nl; s++) {
          tupleLongs[s] = key.longs[s] == null ? 1 : key.longs[s][i]; // not stored: a row count
        }
        for (int s = 0; s < nd; s++) {
          tupleDoubles[s] = key.doubles[s][i];
        }
        states.merge(longs, doubles, 0, tupleLongs, tupleDoubles, 0, longs, doubles, 0);
      }
    }

    /** A window from `first` to `last` with those states, unless every tuple of it is outside WHERE. */
    private void emit(long first, long last, long[] longs, double[] doubles) {
      if (longs[states.firstSlot] <= 0) {
        return; // every tuple outside WHERE
      }
      windows.wids[count] = first;
      lasts[count] = last;
      for (int s = 0; s < longs.length; s++) {
        windows.longs[s][count] = longs[s];
      }
      for (int s = 0; s < doubles.length; s++) {
        windows.doubles[s][count] = doubles[s];
      }
      count++;
    }
  }

  /** One running aggregate of an aggregate frame's condition: count, sum, avg, min or max of a column. */
  static final class Running implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    static final int COUNT = 0;
    static final int SUM = 1;
    static final int AVG = 2;
    static final int MIN = 3;
    static final int MAX = 4;
    int function;
    String column; // null: count(*)
    boolean integral; // sum, min and max of integers stay exact longs

    static Running[] of(JsonNode items) {
      List<Running> out = new ArrayList<>();
      for (JsonNode item : items) {
        Running running = new Running();
        List<String> functions = List.of("count", "sum", "avg", "min", "max");
        running.function = functions.indexOf(item.path(0).asText());
        if (running.function < 0) {
          throw new KernelRequest.Refused("no running " + item.path(0).asText() + " in the JVM");
        }
        running.column = item.path(1).isTextual() ? item.path(1).asText() : null;
        running.integral = item.path(2).asBoolean(false) && running.function != AVG;
        out.add(running);
      }
      return out.toArray(new Running[0]);
    }
  }

  /**
   * The running aggregates of the frame so far: as numpy's running_test computes them, sums in order
   * of the tuples, NULL (unknown) for an aggregate of no value.
   */
  static final class RunningValues {
    private final Running[] running;
    final long[] seen; // values present (count(*): tuples)
    final long[] longs; // integral sums, minimums, maximums
    final double[] doubles; // the others

    RunningValues(Running[] running) {
      this.running = running;
      seen = new long[running.length];
      longs = new long[running.length];
      doubles = new double[running.length];
    }

    void reset() {
      for (int r = 0; r < running.length; r++) {
        seen[r] = 0;
        int op = operation(running[r].function);
        longs[r] = StateAlgebra.longIdentity(op, Long.MAX_VALUE);
        doubles[r] = StateAlgebra.doubleIdentity(op);
      }
    }

    /** The state operation a running aggregate keeps: its extreme, else a sum (of values, or avg's). */
    private static int operation(int function) {
      return function == Running.MIN ? StateAlgebra.MIN : function == Running.MAX ? StateAlgebra.MAX : StateAlgebra.SUM;
    }

    void add(KeyTuples key, Spec spec, int i) {
      for (int r = 0; r < running.length; r++) {
        int present = spec.argumentPresent[r];
        if (present >= 0 && key.extras[present][i] == 0) {
          continue; // a NULL argument: nothing changes
        }
        seen[r]++;
        int function = running[r].function;
        if (function == Running.COUNT) {
          continue;
        }
        long raw = key.extras[spec.argument[r]][i];
        if (running[r].integral) {
          longs[r] = StateAlgebra.combine(operation(function), longs[r], raw);
        } else {
          boolean isLong = spec.base.extraKinds[spec.argument[r]] > 0;
          double x = isLong ? (double) raw : Double.longBitsToDouble(raw);
          doubles[r] = StateAlgebra.combine(operation(function), doubles[r], x);
        }
      }
    }

    boolean known(int r) {
      return running[r].function == Running.COUNT || seen[r] > 0;
    }

    boolean isLong(int r) {
      return running[r].function == Running.COUNT || running[r].integral;
    }

    long longValue(int r) {
      return running[r].function == Running.COUNT ? seen[r] : longs[r];
    }

    double doubleValue(int r) {
      return running[r].function == Running.AVG ? doubles[r] / Math.max(seen[r], 1) : doubles[r];
    }
  }

  /** An aggregate frame's condition: comparisons of running aggregates with numbers, AND, OR, NOT. */
  static final class Test implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private static final List<String> OPERATORS = List.of("<", "<=", ">", ">=", "=", "<>");
    static final int TRUE = 1;
    static final int FALSE = 0;
    static final int UNKNOWN = -1;
    String node; // compare, and, or, not
    Test left;
    Test right;
    int operator;
    int index;
    boolean integralConstant;
    long longConstant;
    double doubleConstant;

    static Test of(JsonNode json, int aggregates) {
      Test test = new Test();
      test.node = json.path(0).asText();
      switch (test.node) {
        case "and":
        case "or":
          test.left = of(json.path(1), aggregates);
          test.right = of(json.path(2), aggregates);
          break;
        case "not":
          test.left = of(json.path(1), aggregates);
          break;
        case "compare":
          test.operator = OPERATORS.indexOf(json.path(1).asText());
          test.index = json.path(2).asInt(-1);
          JsonNode constant = json.path(3);
          if (test.operator < 0 || test.index < 0 || test.index >= aggregates || !constant.isNumber()) {
            throw new KernelRequest.Refused("a condition the JVM does not read: " + json);
          }
          test.integralConstant = constant.canConvertToLong() && constant.isIntegralNumber();
          test.longConstant = constant.asLong();
          test.doubleConstant = constant.asDouble();
          break;
        default:
          throw new KernelRequest.Refused("a condition the JVM does not read: " + json);
      }
      return test;
    }

    boolean holds(RunningValues values) {
      return truth(values) == TRUE;
    }

    /** SQL's three values: an aggregate of no value is NULL, so is a comparison with it; NaN is above every number. */
    int truth(RunningValues values) {
      switch (node) {
        case "and": {
          int a = left.truth(values);
          int b = right.truth(values);
          return a == FALSE || b == FALSE ? FALSE : a == TRUE && b == TRUE ? TRUE : UNKNOWN;
        }
        case "or": {
          int a = left.truth(values);
          int b = right.truth(values);
          return a == TRUE || b == TRUE ? TRUE : a == FALSE && b == FALSE ? FALSE : UNKNOWN;
        }
        case "not": {
          int a = left.truth(values);
          return a == UNKNOWN ? UNKNOWN : TRUE - a;
        }
        default:
          if (!values.known(index)) {
            return UNKNOWN;
          }
          return compared(values) ? TRUE : FALSE;
      }
    }

    private boolean compared(RunningValues values) {
      int order;
      if (values.isLong(index) && integralConstant) {
        order = Long.compare(values.longValue(index), longConstant);
      } else {
        double value = values.isLong(index) ? (double) values.longValue(index) : values.doubleValue(index);
        if (Double.isNaN(value)) {
          return operator == 2 || operator == 3 || operator == 5; // NaN: above every number
        }
        order = value < doubleConstant ? -1 : value > doubleConstant ? 1 : value == doubleConstant ? 0 : 2;
      }
      switch (operator) {
        case 0:
          return order == -1;
        case 1:
          return order == -1 || order == 0;
        case 2:
          return order == 1;
        case 3:
          return order == 1 || order == 0;
        case 4:
          return order == 0;
        default:
          return order != 0;
      }
    }
  }
}
