package wql.kernels;

import java.io.Serializable;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;

/**
 * A kernel as the logical plan carries it ({@link KernelNode}): checked against its input's schema
 * when the plan is analyzed, planned into operators ({@link KernelExec}) when Spark plans the query,
 * once the optimizer has seen its input.
 *
 * <p>A request reaches the JVM as JSON, from a generated job's Python (through a hint that {@link
 * KernelHints} resolves, so a Spark Connect client with no JVM reaches it too, or through {@link
 * Kernels#apply} where Python shares the JVM). A kernel that cannot compute a request refuses it
 * with {@link Refused}; the job then runs its numpy kernel.
 */
abstract class KernelRequest implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The version of the requests' JSON this jar reads; a job sends the one it was generated for. */
  static final String PROTOCOL = "1";

  private final String name;
  private final StructType output;

  /** A kernel whose node is called `name` in Spark's plans and whose rows have the schema `output`. */
  KernelRequest(String name, StructType output) {
    this.name = name;
    this.output = output;
  }

  /** The node's name in Spark's plans. */
  final String name() {
    return name;
  }

  /** The schema of the kernel's output rows. */
  final StructType output() {
    return output;
  }

  /**
   * The input the kernel reads: `child`, or a plan over it (a filter, a kernel node of the kernel's
   * first step) that the optimizer then sees.
   */
  LogicalPlan input(LogicalPlan child) {
    return child;
  }

  /**
   * The node's columns over its (optimized) `child`: `columns`, the ones it was made with, unless the
   * kernel's columns depend on what the optimizer made of its input; then those of `columns` it has.
   */
  Seq<Attribute> output(LogicalPlan child, Seq<Attribute> columns) {
    return columns;
  }

  /** The operators computing `node`, whose input Spark has optimized. */
  abstract SparkPlan plan(KernelNode node, KernelStrategy strategy);

  /** How a kernel reads its request over a plan of the given schema; it throws {@link Refused} for what it cannot compute. */
  interface Reader {
    KernelRequest read(RequestJson request, StructType input);
  }

  /** Each kernel a request can name ("kernel"), by that name. */
  private static final Map<String, Reader> KERNELS =
      Map.of(
          "SlidingCombine", SlidingCombine::request,
          "TupleWindows", TupleWindows::request,
          "FrameWindows", FrameWindows::request,
          "EventSlices", EventSlices::request,
          "EventDeltas", EventDeltas::request,
          "EventSweep", EventSweep::request);

  /** The request `json` (see the job's `jvm_kernel`) over a plan of that schema, or {@link Refused}. */
  static KernelRequest parse(String json, StructType input) {
    RequestJson request = RequestJson.parse(json);
    String protocol = request.text("protocol");
    if (!PROTOCOL.equals(protocol)) {
      throw new Refused("the job speaks protocol " + protocol + ", this wql-kernels.jar " + PROTOCOL);
    }
    String kernel = request.text("kernel");
    Reader reader = KERNELS.get(kernel);
    if (reader == null) {
      throw new Refused("no kernel named '" + kernel + "'");
    }
    return reader.read(request, input);
  }

  /** A request the kernels do not compute; the job computes it in numpy instead. */
  static final class Refused extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;
    static final String PREFIX = "WQL kernel refused: ";

    Refused(String why) {
      super(PREFIX + why);
    }
  }
}
