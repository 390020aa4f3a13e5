package wql.kernels;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;

/**
 * The bins plan's kernel for a window at every tuple, inside the JVM: the contract of the numpy
 * kernel {@code tuple_windows} in mode "every" without GROUP BY inside the partitions, without its
 * Arrow round trip.
 *
 * <p>Input: one row per tuple with the partition keys, {@code _t} (the range attribute in base
 * units; NULL names no window and is in none), {@code _in} (the tuple passes WHERE; absent: all
 * do) and one contribution column per state (absent: a row count). Each distinct value w of a
 * key's tuples names window (w - size, w], holding the key's tuples that pass WHERE with values in
 * it.
 *
 * <p>Two nodes of Spark's logical plan, each planned as one operator ({@link BatchedRequest}).
 * Before the shuffle, {@link TupleBatches} turns each partition's tuples into batches of one key in
 * columns, so the shuffle moves a row per batch rather than per tuple. After it, each Spark
 * partition holds every batch of its keys, in any order: each key's batches are copied into
 * primitive columns ({@link KeyTuples}), sorted by value only where they did not arrive in order
 * ({@link ValueOrder}: a pass per ordered run), and the key's windows are computed column by column
 * with two stacks over the arrays ({@link RangeColumn}). A partition's tuples are held in memory,
 * accounted with Spark's task memory manager ({@link TaskMemory}), or past it go through Spark's
 * spilling sorter ({@link SortedTuples}).
 *
 * <p>Output rows: partition keys, {@code wid} (the window value), then the states, in the schema
 * the caller gives; windows holding no tuple are left out.
 */
public final class TupleWindows {
  private TupleWindows() {}

  /**
   * The request {"partitions", "groups", "operations", "columns", "size", "mode", "output"} over
   * tuples of that schema; refused for a case only the numpy kernel handles (other modes, groups,
   * types).
   */
  static KernelRequest request(RequestJson request, StructType input) {
    long size = request.whole("size", "RANGE");
    if (!request.text("mode").equals("every") || !request.strings("groups").isEmpty() || size <= 0) {
      throw new KernelRequest.Refused("the JVM computes a window at every tuple, without GROUP BY, of a positive RANGE");
    }
    Request parsed = new Request(request, size);
    parsed.batches(input); // refuses what it cannot compute
    return parsed;
  }

  /** Tuples to windows: batches per key before the shuffle, then each key's windows. */
  static final class Request extends BatchedRequest {
    private static final long serialVersionUID = 1L;
    private final long size;

    Request(RequestJson request, long size) {
      super(request, "TupleWindows");
      this.size = size;
    }

    @Override
    Spec batches(StructType tuples) {
      return spec("bins", tuples, this, size);
    }

    @Override
    PartitionKernel windows(StructType tuples, SQLConf conf, SorterMetrics metrics) {
      Spec spec = batches(tuples);
      settle(spec, conf);
      return batched -> new Windows(batched, spec, metrics);
    }

    /**
     * The columns of the optimized tuples `valued` that the batches carry: all but the counts Spark
     * proved to be 1, which are row counts, neither shuffled nor held.
     */
    @Override
    List<Attribute> kept(LogicalPlan valued) {
      List<String> ones = KernelPlan.constantOnes(valued, integralSums(valued.schema(), operations, columns));
      List<Attribute> kept = new ArrayList<>();
      for (int i = 0; i < valued.output().size(); i++) {
        Attribute attribute = valued.output().apply(i);
        if (!ones.contains(attribute.name())) {
          kept.add(attribute);
        }
      }
      return kept;
    }

    /**
     * The batches' node is made with a column for every state that can be stored; over the optimized
     * tuples it keeps those of its columns the kept tuples give.
     */
    @Override
    Seq<Attribute> batchColumns(LogicalPlan valued, Seq<Attribute> columns) {
      List<Attribute> out = new ArrayList<>();
      for (StructField field : batches(schema(kept(valued))).batches.fields()) {
        out.add(KernelPlan.attribute(columns, field.name()).withNullability(field.nullable()));
      }
      return KernelPlan.seq(out);
    }

    @Override
    public String toString() {
      return "partitions " + partitions + ", RANGE " + size + ", a window at every tuple";
    }
  }

  /** The integral sums among the states: counts, which Spark may prove to be 1 on every row. */
  private static List<String> integralSums(StructType input, List<String> operations, List<String> columns) {
    List<String> present = List.of(input.fieldNames());
    List<String> sums = new ArrayList<>();
    for (int i = 0; i < columns.size(); i++) {
      String column = columns.get(i);
      if (operations.get(i).equals("sum") && present.contains(column) && States.isIntegral(input.apply(column).dataType())) {
        sums.add(column);
      }
    }
    return sums;
  }

  /** What the operators need to know of the input and output rows; refused where the JVM cannot compute them. */
  static Spec spec(String kind, StructType input, BatchedRequest request, long size) {
    List<String> partitions = request.partitions;
    StructType output = request.output();
    States states = States.of(input, request.operations, request.columns); // a dropped count is absent: a row count
    List<String> names = List.of(input.fieldNames());
    Keys keys = names.containsAll(partitions) ? Keys.of(input, partitions) : null;
    if (states == null || keys == null || !names.contains("_t")) {
      throw new KernelRequest.Refused("a key or state column has a type only the numpy kernel handles");
    }
    List<String> outNames = List.of(output.fieldNames());
    if (!outNames.contains("wid") || !outNames.containsAll(partitions)) {
      throw new KernelRequest.Refused("the output schema has no wid or key column");
    }
    DataType widType = output.apply("wid").dataType();
    if (!States.isIntegral(input.apply("_t").dataType()) || !States.isIntegral(widType)) {
      throw new KernelRequest.Refused("the window attribute is not integral");
    }
    Spec spec = new Spec();
    spec.kind = kind;
    spec.states = states;
    spec.size = size;
    spec.keys = keys;
    spec.valueField = input.fieldIndex("_t");
    spec.valueWidth = States.width(input.apply("_t").dataType());
    spec.insideField = names.indexOf("_in");
    if (spec.insideField >= 0 && !(input.fields()[spec.insideField].dataType() instanceof BooleanType)) {
      throw new KernelRequest.Refused("_in is not a boolean");
    }
    spec.storedLongs = new boolean[states.longs()];
    for (int s = 0; s < spec.storedLongs.length; s++) {
      spec.storedLongs[s] = states.longField[s] >= 0 || spec.insideField >= 0; // else positions give the count
    }
    spec.layBatches(input, partitions);
    spec.output = output;
    spec.keyOut = new int[partitions.size()];
    for (int i = 0; i < spec.keyOut.length; i++) {
      spec.keyOut[i] = output.fieldIndex(partitions.get(i));
    }
    spec.widOut = output.fieldIndex("wid");
    spec.widWidth = States.width(widType);
    spec.longOut = new int[states.longs()];
    spec.doubleOut = new int[states.doubles()];
    try {
      for (int s = 0; s < spec.longOut.length; s++) {
        spec.longOut[s] = output.fieldIndex(states.longName[s]);
      }
      for (int s = 0; s < spec.doubleOut.length; s++) {
        spec.doubleOut[s] = output.fieldIndex(states.doubleName[s]);
      }
    } catch (IllegalArgumentException e) {
      throw new KernelRequest.Refused("the output schema lacks a state column");
    }
    return spec;
  }

  /** What a batched kernel's operators know of the tuples, the batches and the windows' rows. */
  static final class Spec implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    String kind; // "bins" or "frames": the kernel's settings ({@link BatchedRequest}) and its memory's name
    States states;
    long size;
    long memoryLimit = -1;
    int spillThreshold = -1; // past memory: records the sorter holds before it spills (-1: Spark's default)
    // Before the shuffle: the input rows.
    Keys keys;
    int valueField;
    int valueWidth;
    int insideField;
    boolean[] storedLongs; // false: a row count that positions give (no WHERE)
    int[] extraFields = new int[0]; // side columns the batches carry ({@link TupleBatches#extra}): frames only
    int[] extraKinds = new int[0];
    int ties = -1; // the extra that orders tuples of equal value (frames: arrival, _pos); -1: arrival in the batches
    // The batches.
    StructType batches;
    Keys batchKeys;
    int batchValues;
    int[] batchLongs;
    int[] batchDoubles;
    int[] batchExtras = new int[0];
    // The windows.
    StructType output;
    int[] keyOut;
    int widOut;
    int widWidth;
    int[] longOut;
    int[] doubleOut;
  
    /** The batches' schema over tuples of `input`, the extras' columns included, and where each of its columns is. */
    void layBatches(StructType input, List<String> partitions) {
      batches = TupleBatches.schema(input, partitions, storedLongs, states.doubles(), extraFields.length);
      batchKeys = Keys.of(batches, partitions);
      batchValues = batches.fieldIndex(TupleBatches.VALUES);
      batchLongs = TupleBatches.longFields(batches, storedLongs);
      batchDoubles = TupleBatches.doubleFields(batches, states.doubles());
      batchExtras = TupleBatches.extraFields(batches, extraFields.length);
    }
  }

  /**
   * The windows of one partition's batches: each key's windows, one at each distinct value w holding
   * the tuples in (w - size, w], computed column by column with two stacks over the key's arrays
   * ({@link RangeColumn}); past memory they come from {@link SortedTuples}.
   */
  static final class Windows extends BatchedWindows {
    private final Spec spec;
    private final List<RangeColumn> columns;
    private Iterator<InternalRow> streamed; // the windows, when the partition's tuples did not fit in memory

    Windows(Iterator<InternalRow> batches, Spec spec, SorterMetrics metrics) {
      super(batches, spec, metrics);
      this.spec = spec;
      columns = RangeColumn.of(states, spec.storedLongs);
    }

    @Override
    boolean ready() {
      return streamed != null ? streamed.hasNext() : super.ready();
    }

    @Override
    boolean more() {
      return false; // the sorted tuples' windows are all out
    }

    @Override
    InternalRow window() {
      if (streamed != null) {
        return streamed.next();
      }
      InternalRow row = row();
      at++;
      return row;
    }

    @Override
    SpillingTuples sorter() {
      return new SortedTuples(spec);
    }

    @Override
    void sorted() {
      streamed = ((SortedTuples) sorted).windows();
    }

    /** The key's windows: one at each distinct value w, holding the tuples in (w - size, w]. */
    @Override
    void compute(KeyTuples key) {
      if (!key.isSorted()) {
        long sorting = 20L * key.size; // the permutation, its scratch, and a column being permuted
        account(sorting);
        key.sortByValue();
        release(sorting);
      }
      windows.ensure(key.size);
      long[] values = key.values;
      int[] from = windows.from;
      int[] to = windows.to;
      long[] wids = windows.wids;
      int n = key.size;
      int lo = 0;
      count = 0;
      for (int i = 0; i < n; i++) {
        if (i + 1 < n && values[i + 1] == values[i]) {
          continue; // the window of a tied value is complete at its last tuple
        }
        long wid = values[i];
        while (values[lo] <= wid - spec.size) {
          lo++;
        }
        from[count] = lo;
        to[count] = i + 1;
        wids[count++] = wid;
      }
      for (RangeColumn column : columns) {
        column.bind(key, windows);
      }
      RangeColumn.scan(columns, from, to, count, windows.restarts);
      at = 0;
    }
  }
}
