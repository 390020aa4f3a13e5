package wql.kernels;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.metric.SQLMetrics$;

/**
 * The plan's metrics of a batched kernel's path past memory ({@link SpillingTuples}), shown on its
 * operator in Spark's UI: the tuples that went through Spark's sorter and the memory it freed by
 * spilling; both 0 while every partition fits in memory.
 */
final class SorterMetrics implements Serializable {
  private static final long serialVersionUID = 1L;
  final SQLMetric tuples;
  final SQLMetric spillSize;

  private SorterMetrics(SQLMetric tuples, SQLMetric spillSize) {
    this.tuples = tuples;
    this.spillSize = spillSize;
  }

  /** The two metrics, made on the driver with the plan of a query run in `context`. */
  static SorterMetrics of(SparkContext context) {
    SQLMetrics$ metrics = SQLMetrics$.MODULE$;
    return new SorterMetrics(
        metrics.createMetric(context, "tuples through the spilling sorter"),
        metrics.createSizeMetric(context, "sorter spill size", metrics.createSizeMetric$default$3()));
  }

  /** The metrics as the operator shows them, by the names the tests read them by. */
  Map<String, SQLMetric> shown() {
    Map<String, SQLMetric> shown = new LinkedHashMap<>();
    shown.put("sortedTuples", tuples);
    shown.put("spillSize", spillSize);
    return shown;
  }
}
