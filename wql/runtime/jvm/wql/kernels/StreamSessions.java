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
 * A stream's sessions kept in Spark's state store: each key's open sessions (first and last value,
 * partial states) in one state of its own, every session emitted once the punctuation passes its
 * last value + GAP.
 *
 * <p>The streaming counterpart of the batch plan's session fold ({@link FrameWindows}): tuples at
 * most GAP apart join one session, so a tuple joins the session before it when it is at most GAP
 * past that one's last value, the one after it when that one starts at most GAP past it, and merges
 * the two when both hold. Tuples are merged one by one, in any order, into the key's open sessions;
 * equal values always join, so the order of a trigger's rows does not matter. Spark's {@code
 * flatMapGroupsWithState} calls {@link #call} for each key a trigger brings rows for, and again, with
 * none, once the watermark passes the key's timeout (its earliest session's last value + GAP), so a
 * trigger's cost follows the keys it touches and the sessions it closes, not the sessions every other
 * key keeps open (docs/performance.md §3.2 has the measurements that chose one row per tuple).
 *
 * <p>The watermark carries WQL's punctuation exactly, as for {@link StreamCells}: a tuple below the
 * punctuation its trigger starts with is late and in no session under CONSISTENT slack; under GENEROUS
 * it is placed as if on time when it is past its key's closing point, the last final session's last
 * value + GAP, which the state keeps (the job writes the late-rows output from the trigger's rows as
 * read, against the closing points the function gives it). A session holding no tuple inside WHERE
 * (its count, the first state, is 0) is final like any other but not emitted.
 *
 * <p>Input rows: {@code _kind} (0 a tuple; anything else, a punctuation row, only moves the
 * watermark), the keys, {@code _t} and the states' columns, the first the tuple's count (1 inside
 * WHERE, 0 outside). Output rows: {@code _kind} ("window"; under EMIT CHANGES also "held", a version
 * from before the trigger that its tuples changed or merged away, see {@link #changed}), the keys,
 * {@code wid} (the session's first value), {@code _last} (its last) and the combined states.
 */
public final class StreamSessions implements FlatMapGroupsWithStateFunction<Row, Row, byte[], Row> {
  private static final long serialVersionUID = 1L;

  private final Spec spec;

  private StreamSessions(Spec spec) {
    this.spec = spec;
  }

  /** What the request says, checked against the input's schema. */
  static final class Spec extends StoredRows.Keyed {
    private static final long serialVersionUID = 1L;
    final DataType timeType;
    final long gap;

    Spec(RequestJson request, StructType input) {
      super(request, input);
      if (!"session".equals(request.text("state"))) {
        throw new KernelRequest.Refused("only sessions are kept here");
      }
      if (generous && changes) {
        throw new KernelRequest.Refused("GENEROUS sessions are kept here only under EMIT FINAL");
      }
      timeType = input.fields()[timeField].dataType();
      if (!States.isIntegral(timeType)) {
        throw new KernelRequest.Refused("the window attribute is not integral in base units");
      }
      gap = request.number("gap");
      if (gap < 0) {
        throw new KernelRequest.Refused("GAP must not be negative");
      }
      layout =
          new StoredRows.Layout(
              input, this, DataTypes.createStructField("wid", timeType, false), DataTypes.createStructField("_last", timeType, false));
    }
  }

  /** A key's open sessions by first value: disjoint, each more than GAP before the next. */
  static final class Session extends StoredRows.Slots {
    long last;

    Session(long last, long[] longs, double[] doubles) {
      super(longs, doubles);
      this.last = last;
    }

    /** A session read from a key's state: its last value, then its slots. */
    Session(long last, StoredRows.Slots slots) {
      this(last, slots.longs, slots.doubles);
    }

    @Override
    long[] ids() {
      return new long[] {last};
    }
  }

  /** The keyed stream over `input` that the request `json` describes ({@link StoredRows#stream}). */
  public static Dataset<Row> apply(Dataset<Row> input, String json) {
    return StoredRows.stream(input, json, Spec::new, StreamSessions::new);
  }

  @Override
  public Iterator<Row> call(Row key, Iterator<Row> rows, GroupState<byte[]> state) {
    Spec s = spec;
    TreeMap<Long, Session> open = new TreeMap<>();
    long closing = state.exists() ? decode(state.get(), open) : NONE;
    long point = s.point(state); // no punctuation yet: nothing late, nothing final
    List<Row> out = new ArrayList<>();
    if (point != Long.MIN_VALUE) {
      // EMIT CHANGES: every version is out already
      closing = Math.max(closing, closed(key, open, point, s.changes ? null : out));
    }
    boolean late = false;
    // EMIT CHANGES: the open sessions as the trigger found them, each version emitted before.
    TreeMap<Long, Session> before = s.changes && rows.hasNext() ? copy(open) : null;
    long[] l = new long[s.states.longs()];
    double[] d = new double[s.states.doubles()];
    while (rows.hasNext()) {
      Row row = rows.next();
      if (row.getInt(s.kindField) != 0) { // a punctuation row: it moved the watermark, and is no tuple
        continue;
      }
      long t = ((Number) row.get(s.timeField)).longValue();
      if (point != Long.MIN_VALUE && t < point) {
        late = true;
        // CONSISTENT: in no session (it could not join one still open: they all end at or past the point).
        // GENEROUS: placed as if on time past its key's closing point (the last final session's last value
        // + GAP, which it cannot join), in no session at or before it.
        if (!s.generous || (closing != NONE && t <= closing)) {
          continue;
        }
      }
      StoredRows.read(s.states, row, l, d);
      join(open, t, l, d);
    }
    if (before != null) {
      changed(key, before, open, out);
    }
    if (s.generous && point != Long.MIN_VALUE) {
      if (late && closing != NONE) { // the point the job's late-rows output compares the key's late tuples with
        out.add(closingRow(key, closing));
      }
      // A late tuple placed past the closing point can start a session final at once: out in this trigger.
      closing = Math.max(closing, closed(key, open, point, out));
    }
    if (open.isEmpty() && closing == NONE) {
      state.remove();
    } else {
      state.update(encode(open, closing)); // GENEROUS: with the key's closing point, kept while the key lasts
    }
    if (!open.isEmpty()) {
      // Called again, with no rows, once the watermark passes the earliest session's last value + GAP.
      long earliest = Long.MAX_VALUE;
      for (Session session : open.values()) {
        earliest = Math.min(earliest, session.last);
      }
      state.setTimeoutTimestamp(earliest + s.gap + s.shift);
    }
    return out.iterator();
  }

  /**
   * Tuple t, with its states, into the open sessions: it joins the session before it if at most GAP
   * past its last value, the one after it if that one starts at most GAP past t (or past the joined
   * session's new last value), both when it bridges them, and starts a session of its own otherwise.
   */
  void join(TreeMap<Long, Session> open, long t, long[] l, double[] d) {
    States states = spec.states;
    Map.Entry<Long, Session> before = open.floorEntry(t);
    Session joined = null;
    if (before != null && t - before.getValue().last <= spec.gap) {
      joined = before.getValue();
      joined.last = Math.max(joined.last, t);
      states.merge(joined.longs, joined.doubles, 0, l, d, 0, joined.longs, joined.doubles, 0);
    }
    Map.Entry<Long, Session> after = open.higherEntry(t);
    long reach = joined != null ? joined.last : t;
    if (after != null && after.getKey() - reach <= spec.gap) {
      Session next = open.remove(after.getKey());
      if (joined != null) { // t bridges the two sessions
        joined.last = Math.max(joined.last, next.last);
        states.merge(joined.longs, joined.doubles, 0, next.longs, next.doubles, 0, joined.longs, joined.doubles, 0);
      } else { // the next session starts at t now
        states.merge(next.longs, next.doubles, 0, l, d, 0, next.longs, next.doubles, 0);
        open.put(t, next);
      }
    } else if (joined == null) {
      open.put(t, new Session(t, l.clone(), d.clone()));
    }
  }

  /** A key without a closing point (no final session yet, or not GENEROUS). */
  static final long NONE = Long.MIN_VALUE;

  /**
   * Each session final at punctuation p (its last value + GAP below p), emitted (when `out` is given) and
   * removed; the closing point the last of them leaves (its last value + GAP), NONE when none is final.
   */
  long closed(Row key, TreeMap<Long, Session> open, long p, List<Row> out) {
    long closing = NONE;
    Iterator<Map.Entry<Long, Session>> sessions = open.entrySet().iterator();
    while (sessions.hasNext()) {
      Map.Entry<Long, Session> entry = sessions.next();
      Session session = entry.getValue();
      if (session.last + spec.gap < p) {
        if (out != null) {
          emit(key, entry.getKey(), session, "window", out);
        }
        closing = Math.max(closing, session.last + spec.gap);
        sessions.remove();
      }
    }
    return closing;
  }

  /** GENEROUS: a key's closing point as a row of kind "closing" (in wid), for the job's late-rows output. */
  Row closingRow(Row key, long closing) {
    long[] l = new long[spec.states.longs()];
    double[] d = new double[spec.states.doubles()];
    spec.states.identity(l, d, 0);
    return row("closing", key, closing, closing, l, d);
  }

  /** An output row: its kind, the key, wid and _last, the states. */
  Row row(String kind, Row key, long first, long last, long[] l, double[] d) {
    return spec.layout.row(kind, key, l, d, StoredRows.boxed(spec.timeType, first), StoredRows.boxed(spec.timeType, last));
  }

  /**
   * EMIT CHANGES: each session the trigger's tuples changed (kind "window") and each version of before
   * that is not a session now (kind "held"): the job takes back the held versions whose session is gone
   * and emits the changed ones whose result differs from every held one, as the files engine does with
   * the versions its state held (a version is compared as the job's finish makes it). A session the
   * trigger left as it was is in neither.
   */
  void changed(Row key, TreeMap<Long, Session> before, TreeMap<Long, Session> now, List<Row> out) {
    for (Map.Entry<Long, Session> entry : now.entrySet()) {
      Session was = before.get(entry.getKey());
      if (was == null || !same(was, entry.getValue())) {
        emit(key, entry.getKey(), entry.getValue(), "window", out);
      }
    }
    for (Map.Entry<Long, Session> entry : before.entrySet()) {
      Session is = now.get(entry.getKey());
      if (is == null || !same(is, entry.getValue())) {
        emit(key, entry.getKey(), entry.getValue(), "held", out);
      }
    }
  }

  static boolean same(Session a, Session b) {
    return a.last == b.last && java.util.Arrays.equals(a.longs, b.longs) && java.util.Arrays.equals(a.doubles, b.doubles);
  }

  /** The open sessions as they are now, apart from the ones the trigger's tuples go on to change. */
  static TreeMap<Long, Session> copy(TreeMap<Long, Session> open) {
    TreeMap<Long, Session> copy = new TreeMap<>();
    for (Map.Entry<Long, Session> entry : open.entrySet()) {
      Session session = entry.getValue();
      copy.put(entry.getKey(), new Session(session.last, session.longs.clone(), session.doubles.clone()));
    }
    return copy;
  }

  /** A session's row of the given kind, when it holds a tuple inside WHERE (its count is positive). */
  void emit(Row key, long first, Session session, String kind, List<Row> out) {
    if (session.longs[spec.states.firstSlot] <= 0) {
      return;
    }
    out.add(row(kind, key, first, session.last, session.longs, session.doubles));
  }

  /** A key's state: under GENEROUS its closing point first, then its open sessions. */
  byte[] encode(TreeMap<Long, Session> open, long closing) {
    return spec.generous ? StoredRows.encode(spec.states, open, 1, closing) : StoredRows.encode(spec.states, open, 1);
  }

  /** A key's state as {@link #encode} wrote it: its open sessions into `open`; its closing point returned. */
  long decode(byte[] bytes, TreeMap<Long, Session> open) {
    ByteBuffer buffer = ByteBuffer.wrap(bytes);
    long closing = spec.generous ? buffer.getLong() : NONE;
    StoredRows.decode(buffer, open, session -> new Session(session.getLong(), StoredRows.Slots.get(session, spec.states)));
    return closing;
  }

  /**
   * The drain: every open session of the state's keys, from the states the state store holds: rows of
   * the key (a struct) and the state (binary), as the job selects them from Spark's state data source.
   * `input` is the schema of the rows the stream gave {@link #call}.
   */
  public static Dataset<Row> drain(Dataset<Row> stored, String json, String input) {
    return StoredRows.drain(stored, json, input, Spec::new, spec -> new StreamSessions(spec)::drained);
  }

  /** A key's open sessions, from its state. */
  void drained(Row key, byte[] state, List<Row> out) {
    TreeMap<Long, Session> open = new TreeMap<>();
    decode(state, open);
    for (Map.Entry<Long, Session> entry : open.entrySet()) {
      emit(key, entry.getKey(), entry.getValue(), "window", out);
    }
  }
}
