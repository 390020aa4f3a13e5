package wql.kernels;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.SparkSession;

/**
 * A kernel request from Python that shares Spark's JVM (py4j), for a session started without WQL's
 * extension but with its jar on the classpath ({@code spark-submit --jars wql-kernels.jar}). With the
 * extension ({@link WqlExtensions}) a job sends the same request as a hint instead, which also
 * reaches a Spark Connect server.
 */
public final class Kernels {
  private Kernels() {}

  /** The kernel's rows that `json` requests over `input`, or null when no kernel computes them here. */
  public static Dataset<Row> apply(Dataset<Row> input, String json) {
    try {
      org.apache.spark.sql.classic.Dataset<Row> classic = (org.apache.spark.sql.classic.Dataset<Row>) input;
      SparkSession session = classic.sparkSession();
      KernelPlan.register(session);
      return org.apache.spark.sql.classic.Dataset$.MODULE$.ofRows(session, KernelPlan.of(classic.logicalPlan(), json, true));
    } catch (KernelRequest.Refused | ClassCastException | LinkageError e) {
      return null; // a request only numpy computes, or a Spark whose planner API is not this one
    }
  }
}
