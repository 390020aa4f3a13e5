package wql.kernels;

import java.io.Serializable;
import java.util.List;

/**
 * What the planner must know of a kernel: the columns whose rows it needs together in one
 * partition (if any), the column each partition must be sorted by (if any), and the work itself.
 */
final class KernelSpec implements Serializable {
  private static final long serialVersionUID = 1L;
  final String name;
  final List<String> clusterBy; // empty: every row in one partition; null: any partitioning
  final String orderBy; // null: in any order (the kernel sorts what it needs itself)
  final PartitionKernel kernel;

  KernelSpec(String name, List<String> clusterBy, String orderBy, PartitionKernel kernel) {
    this.name = name;
    this.clusterBy = clusterBy == null ? null : List.copyOf(clusterBy);
    this.orderBy = orderBy;
    this.kernel = kernel;
  }

  @Override
  public String toString() {
    String clustering = clusterBy == null ? "per input partition" : "clustered by " + clusterBy;
    return clustering + (orderBy == null ? "" : ", sorted by " + orderBy);
  }
}
