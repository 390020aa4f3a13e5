package wql.kernels;

import java.io.Serializable;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.execution.metric.SQLMetric;

/**
 * What the planner must know of a kernel: the columns whose rows it needs together in one
 * partition (if any), the column each partition must be sorted by (if any), the work itself, and
 * the metrics it reports (made on the driver with the plan; the work's tasks add to them).
 */
final class KernelSpec implements Serializable {
  private static final long serialVersionUID = 1L;
  final String name;
  final List<String> clusterBy; // empty: every row in one partition; null: any partitioning
  final List<String> orderBy; // empty: in any order (the kernel sorts what it needs itself)
  final PartitionKernel kernel;
  final Map<String, SQLMetric> metrics; // the operator's metrics, which the kernel's tasks add to

  KernelSpec(String name, List<String> clusterBy, List<String> orderBy, PartitionKernel kernel) {
    this(name, clusterBy, orderBy, kernel, Map.of());
  }

  KernelSpec(String name, List<String> clusterBy, List<String> orderBy, PartitionKernel kernel, Map<String, SQLMetric> metrics) {
    this.name = name;
    this.clusterBy = clusterBy == null ? null : List.copyOf(clusterBy);
    this.orderBy = orderBy == null ? List.of() : List.copyOf(orderBy);
    this.kernel = kernel;
    this.metrics = Collections.unmodifiableMap(new LinkedHashMap<>(metrics));
  }

  @Override
  public String toString() {
    String clustering = clusterBy == null ? "per input partition" : "clustered by " + clusterBy;
    return clustering + (orderBy.isEmpty() ? "" : ", sorted by " + String.join(", ", orderBy));
  }
}
