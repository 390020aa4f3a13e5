package wql.kernels;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.LogicalQueryStage;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A kernel whose tuples cross the shuffle as batches of one key ({@link TupleBatches}) and come out
 * as each key's windows ({@link BatchedWindows}): the bins' ({@link TupleWindows}) and the frames'
 * ({@link FrameWindows}). Two nodes of Spark's logical plan, each planned as one operator: the
 * batches ({@link Batches}) and the windows (this request). The request's JSON names the partition
 * keys ("partitions"), the states ("operations", "columns") and the output's schema ("output").
 *
 * <p>Each kernel `kind` ("bins", "frames") has two settings: spark.wql.KIND.memoryLimit, the most it
 * holds in arrays per task (bytes) before its tuples stream through Spark's sorter (unset, whatever
 * Spark's execution memory grants), and spark.wql.KIND.spillThreshold, the records that sorter holds
 * before it spills a sorted run (unset, Spark's spark.shuffle.spill.numElementsForceSpillThreshold;
 * Spark then spills when memory runs short).
 */
abstract class BatchedRequest extends KernelRequest {
  private static final long serialVersionUID = 1L;
  final List<String> partitions;
  final List<String> operations;
  final List<String> columns;

  /** The windows' node and operator are called `name` in Spark's plans. */
  BatchedRequest(RequestJson request, String name) {
    super(name, request.schema("output"));
    partitions = List.copyOf(request.strings("partitions"));
    operations = List.copyOf(request.strings("operations"));
    columns = List.copyOf(request.strings("columns"));
  }

  /** What both operators know of tuples of that schema; refused where the JVM cannot compute them. */
  abstract TupleWindows.Spec batches(StructType tuples);

  /** The windows' work on each partition's batches of tuples of that schema, under the session's `conf`. */
  abstract PartitionKernel windows(StructType tuples, SQLConf conf, SorterMetrics metrics);

  /** The columns of the optimized tuples `valued` that the batches carry: all, unless the kernel drops some. */
  List<Attribute> kept(LogicalPlan valued) {
    return new ArrayList<>(CollectionConverters.asJava(valued.output()));
  }

  /** The batches' node's columns over the optimized tuples: those it was made with, unless the kernel drops some. */
  Seq<Attribute> batchColumns(LogicalPlan valued, Seq<Attribute> columns) {
    return columns;
  }

  /** The spec's settings of `conf`: the memory limit and the sorter's spill threshold of the spec's kind. */
  static void settle(TupleWindows.Spec spec, SQLConf conf) {
    spec.memoryLimit = Long.parseLong(conf.getConfString("spark.wql." + spec.kind + ".memoryLimit", "-1"));
    spec.spillThreshold = Integer.parseInt(conf.getConfString("spark.wql." + spec.kind + ".spillThreshold", "-1"));
  }

  static StructType schema(List<Attribute> columns) {
    return DataTypeUtils.fromAttributes(KernelPlan.seq(columns));
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
    StructType most = batches(child.schema()).batches;
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
    StructType tuples = schema(kept(KernelPlan.inputNode(node, Batches.class).child));
    SorterMetrics metrics = SorterMetrics.of(strategy.session().sparkContext());
    KernelSpec windowing = new KernelSpec(name(), partitions, null, windows(tuples, SQLConf.get(), metrics), metrics.shown());
    return new KernelExec(strategy.later(node.child), windowing, node.output());
  }

  /**
   * The batches of the tuples below the windows ({@link TupleBatches}), as the logical plan carries
   * them. Where the kernel drops columns of the optimized tuples ({@link #kept}), the node is made
   * with a column for each that can be stored, and each of its outputs keeps those of the columns its
   * tuples give (the same attributes, so the windows' node and adaptive execution see a stable plan).
   */
  static final class Batches extends KernelRequest {
    private static final long serialVersionUID = 1L;
    private final BatchedRequest windows;

    /** Batches of the columns `most` (every column the kernel can store). */
    Batches(BatchedRequest windows, StructType most) {
      super("TupleBatches", most);
      this.windows = windows;
    }

    @Override
    Seq<Attribute> output(LogicalPlan child, Seq<Attribute> columns) {
      return windows.batchColumns(child, columns);
    }

    /** Columns the kernel drops are dropped by a physical projection. */
    @Override
    SparkPlan plan(KernelNode node, KernelStrategy strategy) {
      List<Attribute> kept = windows.kept(node.child);
      SparkPlan input = strategy.later(node.child);
      if (kept.size() < node.child.output().size()) {
        input = new ProjectExec(KernelPlan.seq(new ArrayList<NamedExpression>(kept)), input);
      }
      TupleWindows.Spec spec = windows.batches(schema(kept));
      KernelSpec batching = new KernelSpec("TupleBatches", null, null, tuples -> new TupleBatches.Batcher(tuples, spec));
      return new KernelExec(input, batching, node.output());
    }

    @Override
    public String toString() {
      return "batches of up to " + TupleBatches.BATCH + " tuples of one key, for " + windows;
    }
  }
}
