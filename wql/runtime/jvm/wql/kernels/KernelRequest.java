package wql.kernels;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
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

  /** The node's name in Spark's plans. */
  abstract String name();

  /** The schema of the kernel's output rows. */
  abstract StructType output();

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

  /** The request `json` (see the job's `jvm_kernel`) over a plan of that schema, or {@link Refused}. */
  static KernelRequest parse(String json, StructType input) {
    JsonNode request;
    try {
      request = new com.fasterxml.jackson.databind.ObjectMapper().readTree(json);
    } catch (java.io.IOException e) {
      throw new Refused("the request is not JSON: " + e.getMessage());
    }
    String protocol = request.path("protocol").asText();
    if (!PROTOCOL.equals(protocol)) {
      throw new Refused("the job speaks protocol " + protocol + ", this wql-kernels.jar " + PROTOCOL);
    }
    String kernel = request.path("kernel").asText();
    switch (kernel) {
      case "SlidingCombine":
        return SlidingCombine.request(request, input);
      case "TupleWindows":
        return TupleWindows.request(request, input);
      case "FrameWindows":
        return FrameWindows.request(request, input);
      case "EventSlices":
        return EventSlices.request(request, input);
      case "EventDeltas":
        return EventDeltas.request(request, input);
      case "EventSweep":
        return EventSweep.request(request, input);
      default:
        throw new Refused("no kernel named '" + kernel + "'");
    }
  }

  static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    for (JsonNode item : array) {
      out.add(item.asText());
    }
    return out;
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
