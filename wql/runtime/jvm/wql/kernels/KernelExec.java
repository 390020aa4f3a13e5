package wql.kernels;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Ascending$;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.expressions.SortOrder$;
import org.apache.spark.sql.catalyst.plans.physical.AllTuples$;
import org.apache.spark.sql.catalyst.plans.physical.ClusteredDistribution$;
import org.apache.spark.sql.catalyst.plans.physical.Distribution;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.catalyst.plans.physical.UnknownPartitioning;
import org.apache.spark.sql.catalyst.plans.physical.UnspecifiedDistribution$;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import scala.Tuple2;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * A kernel in the physical plan. It states what it needs of its input, each key's rows in one
 * partition and each partition sorted by some columns, and Spark's planner adds the shuffle and the
 * sort (or none, when the input already has them). Rows stay Spark's own (InternalRow) on the way
 * in and out: no conversion to Row objects.
 */
public final class KernelExec extends SparkPlan {
  private static final long serialVersionUID = 1L;
  private final SparkPlan child;
  private final KernelSpec spec;
  private final Seq<Attribute> output;

  public KernelExec(SparkPlan child, KernelSpec spec, Seq<Attribute> output) {
    this.child = child;
    this.spec = spec;
    this.output = output;
  }

  private Attribute input(String name) {
    return KernelPlan.attribute(child.output(), name);
  }

  @Override
  public Seq<Attribute> output() {
    return output;
  }

  @Override
  public Seq<SparkPlan> children() {
    return KernelPlan.seq(child);
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
    return new KernelExec(children.apply(0), spec, output);
  }

  @Override
  public Seq<Distribution> requiredChildDistribution() {
    if (spec.clusterBy == null) {
      return KernelPlan.seq(UnspecifiedDistribution$.MODULE$);
    }
    if (spec.clusterBy.isEmpty()) {
      return KernelPlan.seq(AllTuples$.MODULE$);
    }
    List<Expression> keys = new ArrayList<>();
    for (String name : spec.clusterBy) {
      keys.add(input(name));
    }
    ClusteredDistribution$ clustered = ClusteredDistribution$.MODULE$;
    Distribution distribution =
        clustered.apply(
            KernelPlan.seq(keys), clustered.apply$default$2(), clustered.apply$default$3(), clustered.apply$default$4());
    return KernelPlan.seq(distribution);
  }

  @Override
  public Seq<Seq<SortOrder>> requiredChildOrdering() {
    List<SortOrder> order = new ArrayList<>();
    for (String name : spec.orderBy) {
      order.add(SortOrder$.MODULE$.apply(input(name), Ascending$.MODULE$, KernelPlan.<Expression>seq()));
    }
    return KernelPlan.seq(KernelPlan.seq(order));
  }

  @Override
  public AttributeSet references() {
    return child.outputSet();
  }

  @Override
  public AttributeSet producedAttributes() {
    return outputSet();
  }

  @Override
  public Partitioning outputPartitioning() {
    return new UnknownPartitioning(child.outputPartitioning().numPartitions());
  }

  @Override
  public RDD<InternalRow> doExecute() {
    PartitionKernel kernel = spec.kernel; // the closure must not hold this plan
    FlatMapFunction<java.util.Iterator<InternalRow>, InternalRow> work = kernel::apply;
    return child.execute().toJavaRDD().mapPartitions(work, false).rdd();
  }

  /** The kernel's own metrics, shown on its operator in Spark's UI and read from the executed plan. */
  @Override
  public scala.collection.immutable.Map<String, SQLMetric> metrics() {
    List<Tuple2<String, SQLMetric>> pairs = new ArrayList<>();
    for (java.util.Map.Entry<String, SQLMetric> metric : spec.metrics.entrySet()) {
      pairs.add(new Tuple2<>(metric.getKey(), metric.getValue()));
    }
    return scala.collection.immutable.Map$.MODULE$.<String, SQLMetric>from(KernelPlan.seq(pairs));
  }

  @Override
  public String nodeName() {
    return spec.name;
  }

  @Override
  public scala.collection.Iterator<Object> stringArgs() {
    return KernelPlan.<Object>seq(spec.toString()).iterator();
  }

  @Override
  public int productArity() {
    return 3;
  }

  @Override
  public Object productElement(int n) {
    return n == 0 ? child : n == 1 ? spec : output;
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof KernelExec;
  }
}
