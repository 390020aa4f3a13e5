package wql.kernels;

import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
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
 * A key's windows run from its first cell in a period to the period's end. With {@code months}
 * (month to date on a calendar), the cells are days from 1970-01-01 and the periods {@code months}
 * calendar months from month {@code month_origin} (months from January 1970): a period's first cell is
 * the first day of its first month, whatever its length.
 *
 * <p>Output rows have the input's schema, with the cell column holding the window-id; only windows
 * whose first state (the row count) is positive are kept.
 */
public final class SlidingCombine {
  private SlidingCombine() {}

  /**
   * The request {"keys", "cell", "operations", "columns", "size", "step", "last", "cumulate", "months",
   * "month_origin"} over cells of that schema.
   */
  static KernelRequest request(RequestJson request, StructType schema) {
    List<String> keys = request.strings("keys");
    String cell = request.text("cell");
    String last = request.optionalText("last");
    Spec spec = new Spec();
    spec.schema = schema;
    spec.states = request.states(schema, true); // every cell carries every state
    spec.keys = request.keys("keys", schema);
    spec.cellField = request.bigint("cell", schema, "cell");
    spec.lastField = last == null ? -1 : request.bigint("last", schema, "last-window");
    spec.size = request.number("size");
    spec.cumulate = request.flag("cumulate"); // CUMULATE: cells of one step, size to a period
    spec.step = spec.cumulate ? 1 : request.number("step");
    spec.months = request.has("months") ? request.number("months") : 0; // month to date: day cells
    spec.monthOrigin = request.has("month_origin") ? request.number("month_origin") : 0;
    if (spec.months < 0 || (spec.months > 0 && !spec.cumulate)) {
      throw new KernelRequest.Refused("months are periods of a CUMULATE window");
    }
    if (spec.size <= 0 || spec.step <= 0) {
      throw new KernelRequest.Refused("size and step must be positive");
    }
    if (spec.cumulate && last != null) {
      throw new KernelRequest.Refused("a CUMULATE window has no last-window column");
    }
    String name = spec.cumulate ? "CumulateCombine" : last == null ? "SlidingCombine" : "LandmarkCombine";
    String shown = "keys " + keys + ", " + spec.size + " cells of " + cell + " a window, every " + spec.step;
    return new KeyedRequest(name, keys, cell, schema, rows -> new Windows(rows, spec), true, shown);
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
    long months; // month to date: periods of this many months over cells of days (0: periods of size cells)
    long monthOrigin;

    /** The period a cell falls in: `size` cells from 0, or `months` calendar months from monthOrigin. */
    long period(long cell) {
      if (months == 0) {
        return Math.floorDiv(cell, size);
      }
      java.time.LocalDate day = java.time.LocalDate.ofEpochDay(cell);
      long month = (day.getYear() - 1970L) * 12 + day.getMonthValue() - 1;
      return Math.floorDiv(month - monthOrigin, months);
    }

    /** The last cell of a period. */
    long periodEnd(long period) {
      if (months == 0) {
        return (period + 1) * size - 1;
      }
      long month = monthOrigin + (period + 1) * months;
      return java.time.LocalDate.of(1970, 1, 1).plusMonths(month).toEpochDay() - 1;
    }
  }

  /** The windows of one partition's cells, sorted by cell, with every key's cells in it. */
  static final class Windows extends KeyedWindows {
    private final Spec spec;
    private long finalWindow;

    Windows(Iterator<InternalRow> rows, Spec spec) {
      super(rows, spec.keys, spec.states, Output.sameAs(spec.schema, spec.states, spec.cellField));
      this.spec = spec;
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
          if (spec.period(cell) != spec.period(queue.last)) {
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
      return spec.periodEnd(spec.period(cell));
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
      emit(queue.template, spec.step == 1 ? end : Math.floorDiv(end + 1, spec.step) - 1);
    }
  }
}
