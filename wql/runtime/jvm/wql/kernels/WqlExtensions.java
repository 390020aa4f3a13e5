package wql.kernels;

import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.SparkSessionExtensionsProvider;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.classic.SparkSession;
import scala.Option;
import scala.Tuple3;
import scala.runtime.BoxedUnit;

/**
 * WQL's JVM kernels as a Spark session extension: any Spark started with {@code --jars
 * wql-kernels.jar --conf spark.sql.extensions=wql.kernels.WqlExtensions} (a Spark Connect server, a
 * cluster, {@code spark-submit} of a generated job) plans WQL's operators, and a Python client with
 * no JVM reaches them.
 *
 * <ul>
 *   <li>the function {@code wql_kernels()}: the request protocol this jar reads, which tells a job
 *       that the server has the kernels (it is absent otherwise);
 *   <li>a resolution rule ({@link KernelHints}) that turns the hint {@code wql_kernel(json)} into the
 *       kernel's logical node;
 *   <li>the planner strategy ({@link KernelStrategy}) that plans those nodes as Spark operators.
 * </ul>
 */
public final class WqlExtensions implements SparkSessionExtensionsProvider {
  static final String FUNCTION = "wql_kernels";
  // The protocol in the function's description too, which Spark's catalog gives without a Spark job: a
  // job reads it there, rather than running wql_kernels() (a Spark job, seconds in a new JVM).
  static final String PROTOCOL_MARK = "[wql-protocol=";

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectResolutionRule(session -> new KernelHints());
    extensions.injectPlannerStrategy(session -> new KernelStrategy((SparkSession) session));
    ExpressionInfo info =
        new ExpressionInfo(
            WqlExtensions.class.getName(),
            null,
            FUNCTION,
            "_FUNC_() - The request protocol of WQL's JVM kernels on this Spark. "
                + PROTOCOL_MARK
                + KernelRequest.PROTOCOL
                + "]",
            "",
            "",
            "",
            "",
            "",
            "",
            "");
    FunctionIdentifier name = new FunctionIdentifier(FUNCTION, Option.empty(), Option.empty());
    scala.Function1<scala.collection.immutable.Seq<Expression>, Expression> builder =
        arguments -> Literal.create(KernelRequest.PROTOCOL, org.apache.spark.sql.types.DataTypes.StringType);
    extensions.injectFunction(new Tuple3<>(name, info, builder));
    return BoxedUnit.UNIT;
  }
}
