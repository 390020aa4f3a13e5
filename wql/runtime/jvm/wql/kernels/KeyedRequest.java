package wql.kernels;

import java.util.List;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.types.StructType;

/**
 * A request for one operator over each key's rows in one partition, sorted by one column, whose
 * output rows have the input's schema: the combine of cells ({@link SlidingCombine}) and the passes
 * over interval events ({@link EventSlices}, {@link EventSweep}). The kernels differ only in their
 * work on a partition, which ships to the executors with its spec alone.
 */
final class KeyedRequest extends KernelRequest {
  private static final long serialVersionUID = 1L;
  private final List<String> keys;
  private final String order;
  private final PartitionKernel kernel;
  private final boolean overAggregate;
  private final String shown;

  /**
   * With `overAggregate`, a group-by below that the keys begin gives the kernel its input with one
   * shuffle ({@link KernelStrategy#aggregateClusteredByKeys}); `shown` is what the plan says of it.
   */
  KeyedRequest(
      String name, List<String> keys, String order, StructType output, PartitionKernel kernel, boolean overAggregate, String shown) {
    super(name, output);
    this.keys = List.copyOf(keys);
    this.order = order;
    this.kernel = kernel;
    this.overAggregate = overAggregate;
    this.shown = shown;
  }

  @Override
  SparkPlan plan(KernelNode node, KernelStrategy strategy) {
    SparkPlan input = overAggregate ? strategy.aggregateClusteredByKeys(node, keys) : null;
    if (input == null) {
      input = strategy.later(node.child);
    }
    return new KernelExec(input, new KernelSpec(name(), keys, List.of(order), kernel), node.output());
  }

  @Override
  public String toString() {
    return shown;
  }
}
