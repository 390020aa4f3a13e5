package wql.kernels;

import java.io.Serializable;
import java.util.List;

/**
 * What the planner must know of a kernel: the columns whose rows it needs together in one
 * partition, the column each partition must be sorted by, and the work itself.
 */
final class KernelSpec implements Serializable {
  private static final long serialVersionUID = 1L;
  final String name;
  final List<String> clusterBy; // empty: every row in one partition
  final String orderBy;
  final PartitionKernel kernel;

  KernelSpec(String name, List<String> clusterBy, String orderBy, PartitionKernel kernel) {
    this.name = name;
    this.clusterBy = List.copyOf(clusterBy);
    this.orderBy = orderBy;
    this.kernel = kernel;
  }

  @Override
  public String toString() {
    return "clustered by " + clusterBy + ", sorted by " + orderBy;
  }
}
