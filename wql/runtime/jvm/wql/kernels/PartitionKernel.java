package wql.kernels;

import java.io.Serializable;
import java.util.Iterator;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * A kernel's work on one Spark partition: the partition's rows, clustered by the kernel's keys and
 * sorted by its order column, in; its output rows, as UnsafeRows in the kernel's output schema, out.
 * Shipped to executors, so it carries only serializable settings.
 */
interface PartitionKernel extends Serializable {
  Iterator<InternalRow> apply(Iterator<InternalRow> rows);
}
