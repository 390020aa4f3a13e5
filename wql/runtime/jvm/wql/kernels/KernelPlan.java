package wql.kernels;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.execution.adaptive.LogicalQueryStage;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Puts a kernel into a logical plan as a node of its own ({@link KernelNode}, planned as {@link
 * KernelExec} by {@link KernelStrategy}), so that the plan stays lazy and rows never leave Spark's
 * internal format. This leans on Spark's internal planner API: where it differs from the Spark the
 * jar was built against, the job's numpy kernel runs instead.
 */
final class KernelPlan {
  private KernelPlan() {}

  /**
   * The kernel that `json` requests over `child` (a resolved plan), as a logical plan; {@link
   * KernelRequest.Refused} when no kernel computes it.
   *
   * <p>An output column with the name and type of an input column (a key, a state, the cell) keeps
   * that column's attribute: Spark's analyzer may resolve the columns a plan reads above the hint
   * through the hint's input before this rule replaces it, and those references then stay valid.
   * With `aliased`, every column is returned again under an alias, so that Spark's analyzer can tell
   * two uses of the same result apart (a self-join) by renaming the aliases, which it cannot do to a
   * node it does not know (the py4j path, whose plan is analyzed on its own).
   */
  static LogicalPlan of(LogicalPlan child, String json, boolean aliased) {
    KernelRequest request = KernelRequest.parse(json, child.schema());
    List<Attribute> attributes = new ArrayList<>();
    Seq<Attribute> inputs = child.output();
    for (StructField field : request.output().fields()) {
      Attribute same = null;
      for (int i = 0; i < inputs.size(); i++) {
        Attribute input = inputs.apply(i);
        if (input.name().equals(field.name()) && input.dataType().sameType(field.dataType())) {
          same = input.withNullability(field.nullable());
        }
      }
      attributes.add(same != null ? same : DataTypeUtils.toAttribute(field)); // else a new column
    }
    LogicalPlan node = new KernelNode(request.input(child), request, seq(attributes));
    if (!aliased) {
      return node;
    }
    List<NamedExpression> renamed = new ArrayList<>();
    for (Attribute attribute : attributes) {
      renamed.add(
          new Alias(
              attribute,
              attribute.name(),
              NamedExpression.newExprId(),
              seq(),
              Option.<Metadata>empty(),
              seq()));
    }
    return new Project(seq(renamed), node);
  }

  /** Adds the kernels' strategy to a session without the extension (WQL's jar on the classpath alone). */
  static synchronized void register(SparkSession session) {
    ExperimentalMethods experimental = session.experimental();
    Seq<SparkStrategy> strategies = experimental.extraStrategies();
    for (int i = 0; i < strategies.size(); i++) {
      if (strategies.apply(i) instanceof KernelStrategy) {
        return;
      }
    }
    List<SparkStrategy> added = new ArrayList<>(CollectionConverters.asJava(strategies));
    added.add(new KernelStrategy(session));
    experimental.extraStrategies_$eq(seq(added));
  }

  /**
   * Which of `candidates` Spark's optimizer has folded to the constant 1 at the top of an optimized
   * plan: a count of a column that cannot be NULL (declared so, or filtered so by WHERE). Such a
   * count is a row count, so a kernel needs it in neither the shuffle nor its memory.
   */
  static List<String> constantOnes(LogicalPlan plan, List<String> candidates) {
    List<String> ones = new ArrayList<>();
    if (!(plan instanceof Project)) {
      return ones;
    }
    Seq<NamedExpression> items = ((Project) plan).projectList();
    for (int i = 0; i < items.size(); i++) {
      NamedExpression item = items.apply(i);
      if (item instanceof Alias && candidates.contains(item.name())) {
        Expression value = ((Alias) item).child();
        if (value.foldable() && Long.valueOf(1L).equals(value.eval(null))) {
          ones.add(item.name());
        }
      }
    }
    return ones;
  }

  /**
   * The node below `node`, of request type `kind`, that the node's request put there as its input
   * ({@link KernelRequest#input}): the node itself, or once the shuffle above it has run the {@link
   * LogicalQueryStage} that names it.
   */
  static KernelNode inputNode(KernelNode node, Class<? extends KernelRequest> kind) {
    LogicalPlan input = node.child instanceof LogicalQueryStage ? ((LogicalQueryStage) node.child).logicalPlan() : node.child;
    if (!(input instanceof KernelNode) || !kind.isInstance(((KernelNode) input).request)) {
      throw new IllegalStateException("the input of " + node.request.name() + " is not its " + kind.getSimpleName() + ": " + node.child.nodeName());
    }
    return (KernelNode) input;
  }

  /** The attribute of that name among a plan's output. */
  static Attribute attribute(Seq<Attribute> attributes, String name) {
    for (int i = 0; i < attributes.size(); i++) {
      if (attributes.apply(i).name().equals(name)) {
        return attributes.apply(i);
      }
    }
    throw new IllegalStateException("kernel input has no column " + name);
  }

  /** New attributes for a schema's fields: the columns an operator makes. */
  static Seq<Attribute> attributes(StructType schema) {
    List<Attribute> attributes = new ArrayList<>();
    for (StructField field : schema.fields()) {
      attributes.add(DataTypeUtils.toAttribute(field));
    }
    return seq(attributes);
  }

  static <T> Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toList();
  }

  @SafeVarargs
  static <T> Seq<T> seq(T... items) {
    List<T> list = new ArrayList<>(items.length);
    for (T item : items) {
      list.add(item);
    }
    return seq(list);
  }
}
