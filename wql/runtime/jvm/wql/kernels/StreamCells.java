package wql.kernels;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * A stream's grid windows kept in Spark's state store: each key's open cells (panes or slices of
 * partial states) in one state of its own, the windows each trigger closes emitted from them.
 *
 * <p>The streaming counterpart of {@link SlidingCombine}: window w is the {@code size} cells that end
 * at cell (w + 1) · step − 1 and is final once the punctuation reaches its end, origin + (w + 1) ·
 * slide. Spark's {@code flatMapGroupsWithState} calls {@link #call} for each key a trigger brings
 * rows for, and again, with none, once the watermark passes the key's timeout (the end of its next
 * window), so a trigger's cost follows the keys it touches and the windows it closes, not the state
 * every other key keeps; the state store keeps the states between triggers and writes only the ones
 * that changed.
 *
 * <p>Spark's watermark carries WQL's punctuation exactly, on the window attribute's base units: the
 * job gives each row the event time {@code t + shift + hidden} (in milliseconds; see the job's
 * {@code start_stored} in store.py) with a delay of {@code slack + hidden}, so the watermark is {@code max(t)
 * − slack + shift} and Spark's own dropping of rows below it never applies ({@code hidden} puts every
 * row far above it): a row is late here, against the punctuation its trigger starts with, and joins
 * its cell under GENEROUS slack, none under CONSISTENT (the job writes the late-rows output from the
 * trigger's rows as read). A window's result is the combined states of its cells; the job's own
 * stages turn them into aggregates.
 *
 * <p>Input rows: {@code _kind} (0 a tuple; anything else, a punctuation row, only moves the watermark),
 * the keys, {@code _t}, the cell column and the states' columns. Output rows: {@code _kind} ("window"),
 * the keys, the cell column (the window's id) and the states.
 */
public final class StreamCells implements FlatMapGroupsWithStateFunction<Row, Row, byte[], Row> {
  private static final long serialVersionUID = 1L;

  private final Spec spec;

  private StreamCells(Spec spec) {
    this.spec = spec;
  }

  /** What the request says, checked against the input's schema. */
  static final class Spec extends StoredRows.Keyed {
    private static final long serialVersionUID = 1L;
    final int cellField;
    final long size;
    final long step;
    final long origin;
    final long slide;
    final CalendarCells calendar; // origin and slide count its cells; null: base units of the attribute

    Spec(RequestJson request, StructType input) {
      super(request, input);
      String cell = request.text("cell");
      if (!List.of(input.fieldNames()).contains(cell)) {
        throw new KernelRequest.Refused("the input has no column " + cell);
      }
      cellField = input.fieldIndex(cell);
      size = request.number("size");
      step = request.number("step");
      origin = request.number("origin");
      slide = request.number("slide");
      calendar = CalendarCells.of(request);
      if (size <= 0 || step <= 0 || slide <= 0) {
        throw new KernelRequest.Refused("size, step and slide must be positive");
      }
      layout = new StoredRows.Layout(input, this, DataTypes.createStructField(cell, DataTypes.LongType, true));
    }
  }

  /** The keyed stream over `input` that the request `json` describes ({@link StoredRows#stream}). */
  public static Dataset<Row> apply(Dataset<Row> input, String json) {
    return StoredRows.stream(input, json, Spec::new, StreamCells::new);
  }

  /** A key's open cells, by index, and the last window emitted (or final before the key had one). */
  static final class Cells {
    long done = Long.MIN_VALUE;
    final TreeMap<Long, StoredRows.Slots> open = new TreeMap<>();
  }

  @Override
  public Iterator<Row> call(Row key, Iterator<Row> rows, GroupState<byte[]> state) {
    Spec s = spec;
    Cells cells = state.exists() ? decode(state.get()) : new Cells();
    long point = s.point(state); // no punctuation yet: nothing late, nothing final
    long lastFinal = point == Long.MIN_VALUE ? Long.MIN_VALUE : lastFinal(point);
    List<Row> out = new ArrayList<>();
    if (!s.changes) {
      // The windows final at the punctuation this trigger starts with were final before its rows came
      // (Spark only moves its watermark between triggers, so they are emitted now): close them first,
      // or a late row GENEROUS slack lets into a cell they share would join them.
      closed(key, cells, lastFinal, out);
    }
    TreeMap<Long, Boolean> touched = s.changes ? new TreeMap<>() : null;
    long[] rowLongs = new long[s.states.longs()];
    double[] rowDoubles = new double[s.states.doubles()];
    long lastCell = 0;
    StoredRows.Slots last = null; // the cell of the last row
    while (rows.hasNext()) {
      Row row = rows.next();
      if (row.getInt(s.kindField) != 0) { // a punctuation row: it moved the watermark, and is no tuple
        continue;
      }
      long t = row.getLong(s.timeField);
      if (point != Long.MIN_VALUE && t < point && !s.generous) {
        continue; // late under CONSISTENT slack: in no window
      }
      long cell = row.getLong(s.cellField);
      StoredRows.read(s.states, row, rowLongs, rowDoubles);
      if (cell != lastCell || last == null) { // rows mostly come in time order: runs share a cell
        lastCell = cell;
        last = cells.open.get(cell);
        if (touched != null) {
          touched.put(cell, Boolean.TRUE);
        }
        if (last == null) {
          last = new StoredRows.Slots(rowLongs.clone(), rowDoubles.clone());
          cells.open.put(cell, last);
          continue;
        }
      }
      s.states.merge(last.longs, last.doubles, 0, rowLongs, rowDoubles, 0, last.longs, last.doubles, 0);
    }
    if (s.changes) {
      changed(key, cells, touched, lastFinal, out);
    }
    if (lastFinal != Long.MIN_VALUE) {
      cells.done = Math.max(cells.done, lastFinal);
      // The cells no window after the last final one holds.
      long keep = Math.addExact(Math.multiplyExact(cells.done + 2, s.step), -s.size);
      cells.open.headMap(keep, false).clear();
    }
    if (cells.open.isEmpty()) {
      state.remove();
    } else {
      state.update(encode(cells));
      // Called again, with no rows, once the watermark passes the end of the next window to close.
      long next = Math.max(cells.done + 1, firstWindow(cells.open.firstKey()));
      state.setTimeoutTimestamp(end(next) + s.shift - 1);
    }
    return out.iterator();
  }

  /**
   * The last window final at punctuation p: the greatest w with origin + (w + 1) · slide ≤ p. On a
   * calendar grid origin and slide count cells, and window w ends where cell origin + (w + 1) · slide
   * begins, which is at or before p exactly when that cell is at most p's own.
   */
  long lastFinal(long p) {
    long at = spec.calendar == null ? p : spec.calendar.cellOf(p);
    return Math.floorDiv(at - spec.origin, spec.slide) - 1;
  }

  /** Where window w ends, in the attribute's base units. */
  long end(long w) {
    long end = spec.origin + (w + 1) * spec.slide;
    return spec.calendar == null ? end : spec.calendar.start(end);
  }

  /** The first cell of window w. */
  long firstCell(long w) {
    return (w + 1) * spec.step - spec.size;
  }

  /** The first window holding cell c: the least w with (w + 1) · step − 1 ≥ c. */
  long firstWindow(long c) {
    return Math.floorDiv(c + 1 + spec.step - 1, spec.step) - 1;
  }

  /** The last window holding cell c: the greatest w with (w + 1) · step − size ≤ c. */
  long lastWindow(long c) {
    return Math.floorDiv(c + spec.size, spec.step) - 1;
  }

  /**
   * EMIT FINAL: each window final at the punctuation and not emitted before, with its cells. The
   * windows slide over the cells in order through a {@link StateQueue}, so each window costs a
   * constant number of merges however many cells it spans (as in the batch plan's combine).
   */
  void closed(Row key, Cells cells, long lastFinal, List<Row> out) {
    if (cells.open.isEmpty() || lastFinal == Long.MIN_VALUE) {
      return;
    }
    long from = Math.max(cells.done == Long.MIN_VALUE ? Long.MIN_VALUE : cells.done + 1, firstWindow(cells.open.firstKey()));
    long to = Math.min(lastFinal, lastWindow(cells.open.lastKey()));
    if (from > to) {
      return;
    }
    States states = spec.states;
    StateQueue queue = new StateQueue(states, null);
    long[] l = new long[states.longs()];
    double[] d = new double[states.doubles()];
    long start = firstCell(from);
    Iterator<Map.Entry<Long, StoredRows.Slots>> entries = cells.open.tailMap(start, true).entrySet().iterator();
    Map.Entry<Long, StoredRows.Slots> pending = entries.hasNext() ? entries.next() : null;
    long w = from;
    while (w <= to) {
      long end = (w + 1) * spec.step - 1;
      while (pending != null && pending.getKey() <= end) {
        queue.push(pending.getKey(), pending.getValue().longs, pending.getValue().doubles);
        pending = entries.hasNext() ? entries.next() : null;
      }
      queue.dropUpTo(end - spec.size);
      if (queue.count == 0) { // skip the windows with no cell
        if (pending == null) {
          break;
        }
        w = Math.max(w + 1, firstWindow(pending.getKey()));
        continue;
      }
      queue.total(l, d);
      emit(key, w, l, d, out);
      w++;
    }
  }

  /** EMIT CHANGES: each open window holding a cell this trigger's rows changed, as it is now. */
  void changed(Row key, Cells cells, TreeMap<Long, Boolean> touched, long lastFinal, List<Row> out) {
    long previous = Long.MIN_VALUE;
    for (long cell : touched.keySet()) {
      long from = Math.max(firstWindow(cell), previous + 1);
      if (lastFinal != Long.MIN_VALUE) {
        from = Math.max(from, lastFinal + 1);
      }
      for (long w = from; w <= lastWindow(cell); w++) {
        window(key, cells, w, out);
        previous = w;
      }
    }
  }

  /** Window w's combined states, when it holds a row. */
  void window(Row key, Cells cells, long w, List<Row> out) {
    States states = spec.states;
    long[] l = new long[states.longs()];
    double[] d = new double[states.doubles()];
    states.identity(l, d, 0);
    long first = firstCell(w);
    long last = (w + 1) * spec.step - 1;
    boolean any = false;
    for (StoredRows.Slots cell : cells.open.subMap(first, true, last, true).values()) {
      states.merge(l, d, 0, cell.longs, cell.doubles, 0, l, d, 0);
      any = true;
    }
    if (any) {
      emit(key, w, l, d, out);
    }
  }

  /** Window w's row from its combined states, when it holds a row (its count is positive). */
  void emit(Row key, long w, long[] l, double[] d, List<Row> out) {
    if (l[spec.states.firstSlot] <= 0) {
      return; // only windows that hold a row
    }
    out.add(spec.layout.row("window", key, l, d, w));
  }

  /** A key's state: the last window emitted, then each open cell's index and slots. */
  byte[] encode(Cells cells) {
    return StoredRows.encode(spec.states, cells.open, 0, cells.done);
  }

  /** A key's state as {@link #encode} wrote it. */
  Cells decode(byte[] bytes) {
    ByteBuffer buffer = ByteBuffer.wrap(bytes);
    Cells cells = new Cells();
    cells.done = buffer.getLong();
    StoredRows.decode(buffer, cells.open, cell -> StoredRows.Slots.get(cell, spec.states));
    return cells;
  }

  /**
   * The drain: every window of the state's keys after the last one emitted, from the states the
   * state store holds: rows of the key (a struct) and the state (binary), as the job selects them from
   * Spark's state data source. `input` is the schema of the rows the stream gave {@link #call}. EMIT
   * CHANGES drains nothing: every version is out already.
   */
  public static Dataset<Row> drain(Dataset<Row> stored, String json, String input) {
    return StoredRows.drain(stored, json, input, Spec::new, spec -> new StreamCells(spec)::drained);
  }

  /** A key's windows after the last one emitted, from its state. */
  void drained(Row key, byte[] state, List<Row> out) {
    if (!spec.changes) { // EMIT CHANGES drains nothing: every version is out already
      closed(key, decode(state), Long.MAX_VALUE / 4, out);
    }
  }
}
