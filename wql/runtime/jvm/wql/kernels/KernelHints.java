package wql.kernels;

import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.UnresolvedHint;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreePattern;
import org.apache.spark.sql.types.StringType;
import scala.collection.immutable.Seq;

/**
 * Resolves the hint {@code wql_kernel(request)} into the kernel it requests: how a client without a
 * JVM (Spark Connect) asks the server for a kernel, with {@code DataFrame.hint("wql_kernel", json)}.
 * Spark drops a hint it does not know, so a job first checks that the server has WQL's extension
 * (the function {@code wql_kernels()}); a request no kernel computes fails analysis with a message
 * starting "WQL kernel refused", and the job then runs its numpy kernel.
 *
 * <p>An analyzer resolution rule: it runs once the hint's input is resolved, before Spark's rule
 * that removes unknown hints.
 */
final class KernelHints extends Rule<LogicalPlan> {
  static final String HINT = "wql_kernel";

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!plan.containsPattern(TreePattern.UNRESOLVED_HINT())) {
      return plan;
    }
    return resolve(plan);
  }

  private LogicalPlan resolve(LogicalPlan plan) {
    LogicalPlan resolved = plan.mapChildren(this::resolve);
    if (!(resolved instanceof UnresolvedHint)) {
      return resolved;
    }
    UnresolvedHint hint = (UnresolvedHint) resolved;
    if (!hint.name().equalsIgnoreCase(HINT) || !hint.child().resolved()) {
      return resolved;
    }
    return KernelPlan.of(hint.child(), request(hint.parameters()), false);
  }

  private static String request(Seq<Expression> parameters) {
    if (parameters.size() == 1 && parameters.apply(0) instanceof Literal) {
      Literal literal = (Literal) parameters.apply(0);
      if (literal.dataType() instanceof StringType && literal.value() != null) {
        return literal.value().toString();
      }
    }
    throw new KernelRequest.Refused("the hint " + HINT + " takes one string, the request's JSON; got " + parameters);
  }
}
