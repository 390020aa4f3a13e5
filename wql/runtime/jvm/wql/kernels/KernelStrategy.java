package wql.kernels;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.RepartitionByExpression;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec;
import scala.Option;
import scala.collection.immutable.Seq;

/**
 * Plans {@link KernelNode}s with their requests. A session gets one from WQL's extension ({@link
 * WqlExtensions}), or added to its extra strategies on first use ({@link Kernels}).
 *
 * <p>A kernel over a group-by that its keys begin (the pane and slice plans' cells, grouped by keys
 * and cell, then repartitioned by keys) gets one shuffle instead of two: the group-by's final step
 * asks for its rows clustered by the kernel's keys only, which also clusters every (keys, cell)
 * group, and the kernel then finds its input clustered as it needs.
 */
final class KernelStrategy extends SparkStrategy {
  private final SparkSession session;

  KernelStrategy(SparkSession session) {
    this.session = session;
  }

  @Override
  public Seq<SparkPlan> apply(LogicalPlan plan) {
    if (!(plan instanceof KernelNode)) {
      return KernelPlan.seq();
    }
    KernelNode node = (KernelNode) plan;
    return KernelPlan.seq(node.request.plan(node, this));
  }

  /** The session whose queries this plans (its SparkContext makes a kernel's metrics). */
  SparkSession session() {
    return session;
  }

  /** A logical plan, planned by the planner's strategies (this one included). */
  SparkPlan later(LogicalPlan plan) {
    return planLater(plan);
  }

  /**
   * The node's input as one shuffle, when it is a group-by repartitioned by the kernel's keys
   * `clusterBy`; else null.
   */
  SparkPlan aggregateClusteredByKeys(KernelNode node, List<String> clusterBy) {
    if (!(node.child instanceof RepartitionByExpression) || clusterBy == null || clusterBy.isEmpty()) {
      return null;
    }
    RepartitionByExpression repartition = (RepartitionByExpression) node.child;
    List<Attribute> keys = new ArrayList<>();
    for (String name : clusterBy) {
      keys.add(KernelPlan.attribute(node.child.output(), name));
    }
    if (repartition.optNumPartitions().isDefined() || !sameAttributes(repartition.partitionExpressions(), keys)) {
      return null;
    }
    SparkPlan planned = session.sessionState().planner().plan(repartition.child()).next();
    if (!(planned instanceof BaseAggregateExec)) {
      return null;
    }
    Option<Seq<Expression>> required = ((BaseAggregateExec) planned).requiredChildDistributionExpressions();
    if (required.isEmpty() || !contains(required.get(), keys)) {
      return null; // a partial aggregate, or one not grouped by the keys
    }
    Object[] arguments = new Object[planned.productArity()];
    boolean replaced = false;
    for (int i = 0; i < arguments.length; i++) {
      arguments[i] = planned.productElement(i);
      if (planned.productElementName(i).equals("requiredChildDistributionExpressions")) {
        arguments[i] = Option.apply(KernelPlan.<Expression>seq(new ArrayList<>(keys)));
        replaced = true;
      }
    }
    return replaced ? planned.makeCopy(arguments) : null;
  }

  private static boolean sameAttributes(Seq<Expression> expressions, List<Attribute> keys) {
    return expressions.size() == keys.size() && contains(expressions, keys);
  }

  private static boolean contains(Seq<Expression> expressions, List<Attribute> keys) {
    for (Attribute key : keys) {
      boolean found = false;
      for (int i = 0; i < expressions.size(); i++) {
        Expression e = expressions.apply(i);
        found |= e instanceof Attribute && ((Attribute) e).exprId().equals(key.exprId());
      }
      if (!found) {
        return false;
      }
    }
    return true;
  }
}
