package wql.kernels;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Puts a kernel into a DataFrame's plan as an operator of its own ({@link KernelNode}, planned as
 * {@link KernelExec}), so that the plan stays lazy and rows never leave Spark's internal format.
 * This leans on Spark's internal planner API: where it differs from the Spark the jar was built
 * against, {@link #of} returns null and the job's numpy kernel runs instead.
 */
final class KernelPlan {
  private KernelPlan() {}

  /** The kernel's rows as a DataFrame of schema `output`, or null when this Spark cannot plan it. */
  static Dataset<Row> of(Dataset<Row> input, KernelSpec spec, StructType output) {
    try {
      org.apache.spark.sql.classic.Dataset<Row> classic = (org.apache.spark.sql.classic.Dataset<Row>) input;
      SparkSession session = classic.sparkSession();
      register(session);
      List<Attribute> attributes = new ArrayList<>();
      for (StructField field : output.fields()) {
        attributes.add(DataTypeUtils.toAttribute(field)); // a new attribute: the kernel makes its values
      }
      LogicalPlan node = new KernelNode(classic.logicalPlan(), spec, seq(attributes));
      Dataset<Row> windows = org.apache.spark.sql.classic.Dataset$.MODULE$.ofRows(session, node);
      // Every column again under an alias: Spark's analyzer can then tell two uses of the same
      // result apart (a self-join) by renaming the aliases, which it cannot do to a node it does
      // not know.
      Column[] renamed = new Column[output.size()];
      for (int i = 0; i < renamed.length; i++) {
        String name = output.fields()[i].name();
        renamed[i] = functions.col("`" + name.replace("`", "``") + "`").alias(name);
      }
      return windows.select(renamed);
    } catch (ClassCastException | LinkageError e) {
      return null; // Spark Connect, or a Spark whose planner API is not this one
    }
  }

  private static synchronized void register(SparkSession session) {
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
   * Which of `candidates` Spark's optimizer has folded to the constant 1 at the top of the input's
   * plan: a count of a column that cannot be NULL (declared so, or filtered so by WHERE). Such a
   * count is a row count, so a kernel needs it in neither the shuffle nor its memory. Empty when
   * the plan is not a classic Dataset's.
   */
  static List<String> constantOnes(Dataset<Row> input, List<String> candidates) {
    List<String> ones = new ArrayList<>();
    try {
      LogicalPlan plan = ((org.apache.spark.sql.classic.Dataset<Row>) input).queryExecution().optimizedPlan();
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
    } catch (ClassCastException | LinkageError e) {
      ones.clear(); // Spark Connect, or a Spark whose plan classes are not these
    }
    return ones;
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
