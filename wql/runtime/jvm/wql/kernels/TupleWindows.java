package wql.kernels;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.LogicalQueryStage;
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
 * <p>Two nodes of Spark's logical plan, each planned as one operator ({@link Batches}, {@link
 * Request}). Before the shuffle, {@link TupleBatches} turns each partition's tuples into batches of
 * one key in columns, so the shuffle moves a row per batch rather than per tuple. After it, each
 * Spark partition holds every batch of its keys, in any order: each key's
 * batches are copied into primitive columns ({@link KeyTuples}), sorted by value only where they
 * did not arrive in order ({@link ValueOrder}: a pass per ordered run), and the key's windows are
 * computed column by column with two stacks over the arrays ({@link RangeColumn}). A partition's
 * tuples are held in memory, accounted with Spark's task memory manager ({@link TaskMemory}).
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
    List<String> partitions = request.strings("partitions");
    List<String> operations = request.strings("operations");
    List<String> columns = request.strings("columns");
    long size = request.whole("size", "RANGE");
    if (!request.text("mode").equals("every") || !request.strings("groups").isEmpty() || size <= 0) {
      throw new KernelRequest.Refused("the JVM computes a window at every tuple, without GROUP BY, of a positive RANGE");
    }
    StructType output = request.schema("output");
    spec(input, partitions, operations, columns, size, output); // refuses what it cannot compute
    return new Request(partitions, operations, columns, size, output);
  }

  /** Tuples to windows: batches per key before the shuffle, then each key's windows. */
  static final class Request extends KernelRequest {
    private static final long serialVersionUID = 1L;
    private final List<String> partitions;
    private final List<String> operations;
    private final List<String> columns;
    private final long size;
    private final StructType output;

    Request(List<String> partitions, List<String> operations, List<String> columns, long size, StructType output) {
      this.partitions = List.copyOf(partitions);
      this.operations = List.copyOf(operations);
      this.columns = List.copyOf(columns);
      this.size = size;
      this.output = output;
    }

    @Override
    String name() {
      return "TupleWindows";
    }

    @Override
    StructType output() {
      return output;
    }

    /**
     * The windows read their batches, a logical node of their own ({@link Batches}) over the tuples
     * whose value is not NULL (those name no window and are in none: they never reach the kernel).
     *
     * <p>The batches need a node of their own because adaptive execution replaces the logical node of
     * a materialized shuffle stage (the node the stage's operators were planned from) by a {@link
     * LogicalQueryStage} whose maximum row count is the stage's row count. Planned from one node, the
     * batches, the shuffle and the windows were all replaced, so the windows claimed to be as few as
     * the batches, and Spark's EliminateLimits dropped a LIMIT above that number and returned every
     * row. Now only the batches' node is replaced, and the windows' node above it states no maximum.
     */
    @Override
    LogicalPlan input(LogicalPlan child) {
      LogicalPlan valued = new Filter(new IsNotNull(KernelPlan.attribute(child.output(), "_t")), child);
      StructType most = TupleWindows.spec(child.schema(), partitions, operations, columns, size, output).batches;
      return new KernelNode(valued, new Batches(this, most), KernelPlan.attributes(most));
    }

    /**
     * The input is planned from the batches' node, which the query's logical plan holds: adaptive
     * execution finds the logical node of a query stage inside it by the stage's logical link (here the
     * batches' shuffle; below them a cached table's scan), and a logical node made here, absent from
     * the query's plan, made it plan that stage afresh on every round, forever. Once their shuffle
     * has run, the batches' node is that stage's {@link LogicalQueryStage}, which still names it.
     */
    @Override
    SparkPlan plan(KernelNode node, KernelStrategy strategy) {
      Spec spec = spec(kept(batchesBelow(node, Batches.class).child));
      SQLConf conf = SQLConf.get();
      spec.memoryLimit = Long.parseLong(conf.getConfString(MEMORY_LIMIT, "-1"));
      spec.spillThreshold = Integer.parseInt(conf.getConfString(SPILL_THRESHOLD, "-1"));
      FrameWindows.Sorted sorted = FrameWindows.Sorted.of(strategy.session().sparkContext());
      KernelSpec windowing =
          new KernelSpec("TupleWindows", partitions, null, batched -> new Windows(batched, spec, sorted), sorted.shown());
      return new KernelExec(strategy.later(node.child), windowing, node.output());
    }

    /**
     * The columns of the optimized tuples `valued` that the batches carry: all but the counts Spark
     * proved to be 1, which are row counts, neither shuffled nor held.
     */
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

    /** Both sides' knowledge of the tuples with those columns; the same wherever it is computed. */
    Spec spec(List<Attribute> kept) {
      return TupleWindows.spec(DataTypeUtils.fromAttributes(KernelPlan.seq(kept)), partitions, operations, columns, size, output);
    }

    @Override
    public String toString() {
      return "partitions " + partitions + ", RANGE " + size + ", a window at every tuple";
    }
  }

  /**
   * The batches of the tuples below the windows ({@link TupleBatches}), as the logical plan carries
   * them. Their columns depend on the optimized tuples: a count Spark proved to be 1 is no column of
   * theirs. The node is made with a column for every state that can be stored, and each of its
   * outputs keeps those of the columns its tuples give (the same attributes, so the windows' node
   * and adaptive execution see a stable plan).
   */
  static final class Batches extends KernelRequest {
    private static final long serialVersionUID = 1L;
    private final Request windows;
    private final StructType most;

    Batches(Request windows, StructType most) {
      this.windows = windows;
      this.most = most;
    }

    @Override
    String name() {
      return "TupleBatches";
    }

    /** The most a batch holds: every count stored. */
    @Override
    StructType output() {
      return most;
    }

    @Override
    Seq<Attribute> output(LogicalPlan child, Seq<Attribute> columns) {
      StructType batches = windows.spec(windows.kept(child)).batches;
      List<Attribute> out = new ArrayList<>();
      for (StructField field : batches.fields()) {
        out.add(KernelPlan.attribute(columns, field.name()).withNullability(field.nullable()));
      }
      return KernelPlan.seq(out);
    }

    /** Counts Spark proved to be 1 are dropped by a physical projection. */
    @Override
    SparkPlan plan(KernelNode node, KernelStrategy strategy) {
      List<Attribute> kept = windows.kept(node.child);
      SparkPlan input = strategy.later(node.child);
      if (kept.size() < node.child.output().size()) {
        input = new ProjectExec(KernelPlan.seq(new ArrayList<NamedExpression>(kept)), input);
      }
      Spec spec = windows.spec(kept);
      KernelSpec batching = new KernelSpec("TupleBatches", null, null, tuples -> new TupleBatches.Batcher(tuples, spec));
      return new KernelExec(input, batching, node.output());
    }

    @Override
    public String toString() {
      return "batches of up to " + TupleBatches.BATCH + " tuples of one key, for " + windows;
    }
  }

  /**
   * The batches' node below the windows' `node`, of request type `kind`: the node itself, or once its
   * shuffle has run the {@link LogicalQueryStage} that names it.
   */
  static KernelNode batchesBelow(KernelNode node, Class<? extends KernelRequest> kind) {
    LogicalPlan batches = node.child instanceof LogicalQueryStage ? ((LogicalQueryStage) node.child).logicalPlan() : node.child;
    if (!(batches instanceof KernelNode) || !kind.isInstance(((KernelNode) batches).request)) {
      throw new IllegalStateException("the windows' input is not their batches: " + node.child.nodeName());
    }
    return (KernelNode) batches;
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
  static Spec spec(
      StructType input, List<String> partitions, List<String> operations, List<String> columns, long size, StructType output) {
    States states = States.of(input, operations, columns); // a dropped count is absent: a row count
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
    spec.batches = TupleBatches.schema(input, partitions, spec.storedLongs, states.doubles());
    spec.batchKeys = Keys.of(spec.batches, partitions);
    spec.batchValues = spec.batches.fieldIndex(TupleBatches.VALUES);
    spec.batchLongs = TupleBatches.longFields(spec.batches, spec.storedLongs);
    spec.batchDoubles = TupleBatches.doubleFields(spec.batches, states.doubles());
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

  /**
   * The most the kernel holds in arrays per task (bytes) before its tuples stream through Spark's
   * sorter ({@link SortedTuples}); unset, whatever Spark's execution memory grants.
   */
  static final String MEMORY_LIMIT = "spark.wql.bins.memoryLimit";

  /**
   * Records the sorter holds in memory before it spills a sorted run ({@link SortedTuples}); unset,
   * Spark's spark.shuffle.spill.numElementsForceSpillThreshold (Spark then spills when memory runs short).
   */
  static final String SPILL_THRESHOLD = "spark.wql.bins.spillThreshold";

  static final class Spec implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
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
    // The batches.
    StructType batches;
    Keys batchKeys;
    int batchValues;
    int[] batchLongs;
    int[] batchDoubles;
    // The windows.
    StructType output;
    int[] keyOut;
    int widOut;
    int widWidth;
    int[] longOut;
    int[] doubleOut;
  }

  /**
   * The windows of one partition's batches, every batch of its keys in it, in any order: each key's
   * tuples are copied into columns, sorted by value where they did not arrive in order, and its
   * windows computed column by column and emitted one key after another.
   */
  static final class Windows implements Iterator<InternalRow> {
    private final Iterator<InternalRow> batches;
    private final Spec spec;
    private final FrameWindows.Sorted metrics; // of the path past memory
    private final States states;
    private final TaskMemory memory;
    private KeyIndex<KeyTuples> keys; // while the batches are read
    private List<KeyTuples> pending; // then each key, until its windows are computed
    private final Function<InternalRow, KeyTuples> newKey = this::newKey;
    private final List<RangeColumn> columns;
    private final WindowStates windows;
    private UnsafeProjection unsafe;
    private long tuples;
    private boolean loaded;
    private int nextKey; // the next key whose windows to compute
    private int count; // the current key's windows
    private int at; // the next of them to look at
    private UnsafeRow out; // one row, refilled for each window: Spark's consumers copy what they keep
    private Iterator<InternalRow> streamed; // the windows, when the partition's tuples did not fit in memory

    Windows(Iterator<InternalRow> batches, Spec spec, FrameWindows.Sorted metrics) {
      this.batches = batches;
      this.spec = spec;
      this.metrics = metrics;
      states = spec.states;
      TaskMemory task = TaskMemory.ofTask("bins");
      memory = task == null ? null : task.limitedTo(spec.memoryLimit);
      keys = new KeyIndex<>(spec.batchKeys);
      columns = RangeColumn.of(states, spec.storedLongs);
      windows = new WindowStates(states.longs(), states.doubles(), memory);
    }

    @Override
    public boolean hasNext() {
      if (!loaded) {
        load();
      }
      while (true) {
        if (streamed != null) {
          return streamed.hasNext() || finish();
        }
        for (; at < count; at++) {
          if (windows.longs[states.firstSlot][at] > 0) {
            return true; // a window holding no tuple (all outside WHERE) is left out
          }
        }
        if (nextKey == pending.size()) {
          return finish();
        }
        KeyTuples key = pending.get(nextKey);
        try {
          computeWindows(key);
        } catch (TaskMemory.Refused e) { // its windows' arrays do not fit: this key and the rest stream
          count = 0;
          stream(pending.subList(nextKey, pending.size()), null, null);
          continue;
        }
        pending.set(nextKey++, null); // its columns are not needed once its windows are
        release(key.drop());
      }
    }

    private boolean finish() {
      if (memory != null) {
        if (streamed == null) {
          memory.reportPeak(0);
        }
        memory.releaseAll();
      }
      return false;
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      if (streamed != null) {
        return streamed.next();
      }
      States.setIntegral(out, spec.widOut, spec.widWidth, windows.wids[at]);
      for (int s = 0; s < spec.longOut.length; s++) {
        states.writeLong(out, spec.longOut[s], s, windows.longs[s][at]);
      }
      for (int s = 0; s < spec.doubleOut.length; s++) {
        states.writeDouble(out, spec.doubleOut[s], s, windows.doubles[s][at]);
      }
      at++;
      return out;
    }

    private void load() {
      loaded = true;
      while (batches.hasNext()) {
        InternalRow batch = batches.next();
        KeyTuples key = keys.of(batch, newKey);
        int n = batch.getArray(spec.batchValues).numElements();
        if (memory != null && !memory.tryReserve((long) key.growthFor(n) * key.tupleBytes)) {
          stream(keys.values(), key, batch); // the partition does not fit: every tuple streams
          return;
        }
        tuples += n;
        key.append(batch, spec.batchValues, spec.batchLongs, spec.batchDoubles);
      }
      pending = keys.values();
      keys = null;
    }

    /**
     * From here on the partition's windows come from {@link SortedTuples}: the tuples `held` in
     * columns, then `batch` (of `key`) and every batch still to come, sorted through Spark's
     * spilling sorter; the columns' memory is released as they are copied out.
     */
    private void stream(List<KeyTuples> held, KeyTuples key, InternalRow batch) {
      SortedTuples sorted = new SortedTuples(spec);
      for (KeyTuples k : held) {
        sorted.addColumns(k);
        release(k.drop());
      }
      if (batch != null) {
        sorted.addBatch(key, batch);
      }
      while (batches.hasNext()) {
        InternalRow next = batches.next();
        sorted.addBatch(keys.of(next, newKey), next);
      }
      pending = List.of();
      keys = null;
      metrics.tuples.add(sorted.tuples());
      streamed = sorted.windows(memory, metrics);
    }

    private KeyTuples newKey(InternalRow batch) {
      GenericInternalRow values = new GenericInternalRow(spec.output.size());
      for (int i = 0; i < spec.keyOut.length; i++) {
        values.update(spec.keyOut[i], spec.batchKeys.value(batch, i));
      }
      if (unsafe == null) {
        unsafe = UnsafeProjection.create(spec.output);
      }
      int id = keys.values().size(); // the key's number: KeyIndex adds it next
      KeyTuples key = new KeyTuples(unsafe.apply(values).copy(), spec.storedLongs, states.doubles(), id);
      if (memory != null) {
        memory.tryReserve((long) key.values.length * key.tupleBytes); // a few bytes: kept even if refused
      }
      return key;
    }

    /** The key's windows: one at each distinct value w, holding the tuples in (w - size, w]. */
    private void computeWindows(KeyTuples key) {
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
      if (out == null) {
        out = key.template.copy();
      } else {
        out.copyFrom(key.template);
      }
    }

    private void account(long bytes) {
      if (memory != null) {
        memory.reserve(bytes, tuples);
      }
    }

    private void release(long bytes) {
      if (memory != null) {
        memory.release(bytes);
      }
    }
  }
}
