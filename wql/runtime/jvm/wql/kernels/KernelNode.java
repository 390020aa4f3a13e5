package wql.kernels;

import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * A kernel in the logical plan: the optimizer sees a node that reads every column of its child and
 * produces new ones, so it neither prunes nor pushes anything through it, and {@link
 * KernelStrategy} plans it with its {@link KernelRequest}.
 */
public final class KernelNode extends LogicalPlan {
  private static final long serialVersionUID = 1L;
  final LogicalPlan child;
  final KernelRequest request;
  private final Seq<Attribute> output; // the columns it was made with
  private transient Seq<Attribute> columns; // those it has over this child (its request's choice)

  public KernelNode(LogicalPlan child, KernelRequest request, Seq<Attribute> output) {
    this.child = child;
    this.request = request;
    this.output = output;
  }

  @Override
  public Seq<Attribute> output() {
    if (columns == null) { // a node is immutable: its columns are chosen once
      columns = request.output(child, output);
    }
    return columns;
  }

  @Override
  public Seq<LogicalPlan> children() {
    return KernelPlan.seq(child);
  }

  @Override
  public LogicalPlan withNewChildrenInternal(IndexedSeq<LogicalPlan> children) {
    return new KernelNode(children.apply(0), request, output);
  }

  @Override
  public AttributeSet references() {
    return child.outputSet(); // the kernel reads every column it is given
  }

  @Override
  public AttributeSet producedAttributes() {
    return outputSet();
  }

  @Override
  public String nodeName() {
    return request.name();
  }

  @Override
  public scala.collection.Iterator<Object> stringArgs() {
    return KernelPlan.<Object>seq(request.toString()).iterator();
  }

  @Override
  public int productArity() {
    return 3;
  }

  @Override
  public Object productElement(int n) {
    return n == 0 ? child : n == 1 ? request : output;
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof KernelNode;
  }

  /**
   * Equal over the same child, request and columns. Spark clones a query's plan before it looks for
   * cached data in it (QueryExecution.withCachedData) and matches plans by equality: without this, a
   * clone equals only itself, and a cached DataFrame over a kernel is computed again by every query
   * that reads it.
   */
  @Override
  public boolean equals(Object that) {
    if (this == that) {
      return true;
    }
    if (!(that instanceof KernelNode)) {
      return false;
    }
    KernelNode other = (KernelNode) that;
    return request == other.request && child.equals(other.child) && output.equals(other.output);
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(child, System.identityHashCode(request), output);
  }
}
