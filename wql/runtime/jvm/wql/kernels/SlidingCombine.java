package wql.kernels;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StructType;

/**
 * The pane and slice plans' combine step, inside the JVM: the contract of the numpy kernel {@code
 * sliding_combine} in WQL's generated jobs, without its Arrow round trip, which costs about as much
 * as aggregating the cells.
 *
 * <p>Input: one row per (keys, cell) with partial aggregate states. Window w is the {@code size}
 * cells that end at cell (w + 1) * step - 1. The plan gives every key's cells to one partition,
 * sorted by cell only (one long, which Spark radix-sorts), and each key keeps the cells its open
 * windows hold in a {@link StateQueue}.
 *
 * <p>With {@code last} (landmark windows, size and step 1), window w is every cell up to w, and
 * windows run from a key's first cell (or 0) to the value of column {@code last}.
 *
 * <p>With {@code cumulate} (CUMULATE windows, step 1), window w is the cells of w's period ({@code
 * size} cells from a multiple of size) up to w: a running combine that starts again at each period.
 * A key's windows run from its first cell in a period to the period's end.
 *
 * <p>Output rows have the input's schema, with the cell column holding the window-id; only windows
 * whose first state (the row count) is positive are kept.
 */
public final class SlidingCombine {
  private SlidingCombine() {}

  /** The request {"keys", "cell", "operations", "columns", "size", "step", "last", "cumulate"} over cells of that schema. */
  static KernelRequest request(JsonNode request, StructType schema) {
    List<String> keys = KernelRequest.strings(request.path("keys"));
    String cell = request.path("cell").asText();
    List<String> operations = KernelRequest.strings(request.path("operations"));
    List<String> columns = KernelRequest.strings(request.path("columns"));
    String last = request.path("last").isTextual() ? request.path("last").asText() : null;
    List<String> names = List.of(schema.fieldNames());
    if (!names.contains(cell) || !(schema.apply(cell).dataType() instanceof LongType)) {
      throw new KernelRequest.Refused("the cell column " + cell + " is not a BIGINT");
    }
    if (last != null && (!names.contains(last) || !(schema.apply(last).dataType() instanceof LongType))) {
      throw new KernelRequest.Refused("the last-window column " + last + " is not a BIGINT");
    }
    States states = States.of(schema, operations, columns);
    Keys keyFields = names.containsAll(keys) ? Keys.of(schema, keys) : null;
    if (states == null || keyFields == null) {
      throw new KernelRequest.Refused("a key or state column has a type only the numpy kernel handles");
    }
    if (states.hasAbsentColumn()) { // every cell carries every state; let the numpy kernel name the missing one
      throw new KernelRequest.Refused("a state column is missing");
    }
    Spec spec = new Spec();
    spec.schema = schema;
    spec.states = states;
    spec.keys = keyFields;
    spec.cellField = schema.fieldIndex(cell);
    spec.lastField = last == null ? -1 : schema.fieldIndex(last);
    spec.size = request.path("size").asLong();
    spec.cumulate = request.path("cumulate").asBoolean(false); // CUMULATE: cells of one step, size to a period
    spec.step = spec.cumulate ? 1 : request.path("step").asLong();
    if (spec.size <= 0 || spec.step <= 0) {
      throw new KernelRequest.Refused("size and step must be positive");
    }
    if (spec.cumulate && last != null) {
      throw new KernelRequest.Refused("a CUMULATE window has no last-window column");
    }
    String name = spec.cumulate ? "CumulateCombine" : last == null ? "SlidingCombine" : "LandmarkCombine";
    return new Request(name, keys, cell, spec);
  }

  /** Cells to windows, each key's cells in one partition sorted by cell. */
  static final class Request extends KernelRequest {
    private static final long serialVersionUID = 1L;
    private final String name;
    private final List<String> keys;
    private final String cell;
    private final Spec spec;

    Request(String name, List<String> keys, String cell, Spec spec) {
      this.name = name;
      this.keys = List.copyOf(keys);
      this.cell = cell;
      this.spec = spec;
    }

    @Override
    String name() {
      return name;
    }

    @Override
    StructType output() {
      return spec.schema;
    }

    @Override
    SparkPlan plan(KernelNode node, KernelStrategy strategy) {
      SparkPlan input = strategy.aggregateClusteredByKeys(node, keys);
      if (input == null) {
        input = strategy.later(node.child);
      }
      Spec work = spec; // the closure must hold the spec alone
      return new KernelExec(input, new KernelSpec(name, keys, List.of(cell), rows -> new Windows(rows, work)), node.output());
    }

    @Override
    public String toString() {
      return "keys " + keys + ", " + spec.size + " cells of " + cell + " a window, every " + spec.step;
    }
  }

  static final class Spec implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    StructType schema;
    States states;
    Keys keys;
    int cellField;
    int lastField;
    long size;
    long step;
    boolean cumulate;
  }

  /** The windows of one partition's cells, sorted by cell, with every key's cells in it. */
  static final class Windows extends KeyedWindows {
    private final Spec spec;
    private long finalWindow;

    Windows(Iterator<InternalRow> rows, Spec spec) {
      super(rows, spec.keys, spec.states);
      this.spec = spec;
    }

    @Override
    UnsafeRow template(InternalRow row) {
      return copied(row, spec.schema);
    }

    @Override
    void close(StateQueue queue) {
      if (spec.cumulate) {
        emitCumulative(queue, periodEnd(queue.last));
      } else if (spec.lastField >= 0) {
        emitUpTo(queue, finalWindow);
      } else if (queue.count > 0) {
        emitUpTo(queue, queue.last + spec.size - 1);
      }
    }

    @Override
    void add(InternalRow row) {
      StateQueue queue = queueOf(row);
      long cell = row.getLong(spec.cellField);
      states.read(row, rowLongs, rowDoubles);
      if (spec.cumulate) { // CUMULATE: the running combine of the period so far is every window's
        if (queue.open) {
          emitCumulative(queue, Math.min(cell - 1, periodEnd(queue.last)));
          if (Math.floorDiv(cell, spec.size) != Math.floorDiv(queue.last, spec.size)) {
            queue.restart(); // a new period: its windows hold none of the earlier cells
          }
        }
        queue.open = true;
        queue.last = cell;
        queue.next = cell;
        queue.accumulate(rowLongs, rowDoubles);
        return;
      }
      if (spec.lastField >= 0) { // landmark: only the running combine is kept
        finalWindow = row.getLong(spec.lastField);
        if (!queue.open) {
          queue.open = true;
          queue.next = Math.max(cell, 0);
        } else {
          emitUpTo(queue, Math.min(cell - 1, finalWindow));
          queue.next = Math.max(queue.next, cell);
        }
        queue.accumulate(rowLongs, rowDoubles);
        return;
      }
      if (queue.count > 0) {
        emitUpTo(queue, cell - 1);
      }
      queue.dropUpTo(cell - spec.size);
      queue.push(cell, rowLongs, rowDoubles);
      queue.next = cell;
      emitUpTo(queue, cell);
    }

    /** Emits the key's windows that end from its bookmark up to `last`, while they hold any cell. */
    private void emitUpTo(StateQueue queue, long last) {
      long step = spec.step;
      long end = step == 1 ? queue.next : Math.floorDiv(queue.next + step, step) * step - 1; // first: (end + 1) % step == 0
      for (; end <= last; end += step) {
        if (spec.lastField < 0) {
          queue.dropUpTo(end - spec.size);
          if (queue.count == 0) {
            break;
          }
        }
        emit(queue, end);
      }
      queue.next = Math.max(queue.next, last + 1);
    }

    /** The last cell of the period that holds `cell`. */
    private long periodEnd(long cell) {
      return (Math.floorDiv(cell, spec.size) + 1) * spec.size - 1;
    }

    /** CUMULATE: the windows ending at the key's bookmark up to `last`, all holding its running combine. */
    private void emitCumulative(StateQueue queue, long last) {
      for (long end = queue.next; end <= last; end++) {
        emit(queue, end);
      }
      queue.next = Math.max(queue.next, last + 1);
    }

    private void emit(StateQueue queue, long end) {
      queue.total(windowLongs, windowDoubles);
      if (windowLongs[states.firstSlot] <= 0) {
        return;
      }
      UnsafeRow out = output(queue.template);
      out.setLong(spec.cellField, spec.step == 1 ? end : Math.floorDiv(end + 1, spec.step) - 1);
      states.write(out, states.longField, states.doubleField, windowLongs, windowDoubles);
      ready.add(out);
    }
  }
}
