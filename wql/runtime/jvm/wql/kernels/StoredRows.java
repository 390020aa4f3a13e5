package wql.kernels;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * What the state-store functions ({@link StreamCells}, {@link StreamSessions}) share about the rows
 * Spark hands them: how a stream is keyed for {@code flatMapGroupsWithState}, how a row's partial
 * states are read, and how a long goes back into an integral column of the output.
 */
final class StoredRows {
  private StoredRows() {}

  /** The key columns as a row's schema: one constant column when the whole stream is one key. */
  static StructType keySchema(StructType input, int[] keyFields) {
    StructType schema = new StructType();
    for (int field : keyFields) {
      schema = schema.add(input.fields()[field]);
    }
    return keyFields.length == 0 ? schema.add("_whole", DataTypes.IntegerType, false) : schema;
  }

  /**
   * The rows by key (the key columns as a row; the whole stream as one key without keys), grouped by the
   * key columns themselves rather than by a function of each row, so Spark hashes the columns and never
   * builds a row object just to find its key.
   */
  static KeyValueGroupedDataset<Row, Row> grouped(Dataset<Row> input, int[] keyFields) {
    StructType read = input.schema();
    Column[] keys = new Column[Math.max(1, keyFields.length)];
    for (int i = 0; i < keyFields.length; i++) {
      keys[i] = input.col(quoted(read.fields()[keyFields[i]].name()));
    }
    if (keyFields.length == 0) {
      keys[0] = functions.lit(0).as("_whole"); // the whole stream is one key
    }
    return input.groupBy(keys).as(Encoders.row(keySchema(read, keyFields)), Encoders.row(read));
  }

  /** A column name as Spark's column parser takes it: in backquotes, any backquote doubled. */
  static String quoted(String name) {
    return "`" + name.replace("`", "``") + "`";
  }

  /** The column of a row's kind: 0 a tuple; anything else a punctuation row, which only moves the watermark. */
  static final String KIND = "_kind";

  /** The column of a tuple's value of the window attribute, in base units. */
  static final String TIME = "_t";

  /**
   * What both functions read alike from their requests: the keys, the columns {@link #KIND} and {@link
   * #TIME}, the partial states (each a column of the input), how far the watermark is from WQL's
   * punctuation, and the emit and slack modes.
   */
  static class Keyed implements Serializable {
    private static final long serialVersionUID = 1L;
    final int[] keyFields;
    final int kindField;
    final int timeField;
    final States states;
    final long shift; // the watermark (ms) minus the punctuation (base units)
    final boolean changes; // EMIT CHANGES, else EMIT FINAL
    final boolean generous; // GENEROUS slack, else CONSISTENT
    Layout layout; // the output rows, which the function lays out once it has read its own fields

    Keyed(RequestJson request, StructType input) {
      List<String> keys = request.strings("keys");
      List<String> names = List.of(input.fieldNames());
      for (String needed : List.of(KIND, TIME)) {
        if (!names.contains(needed)) {
          throw new KernelRequest.Refused("the input has no column " + needed);
        }
      }
      if (!names.containsAll(keys)) {
        throw new KernelRequest.Refused("a key column is missing");
      }
      String emit = request.text("emit");
      if (!List.of("final", "changes").contains(emit)) {
        throw new KernelRequest.Refused("only windows emitted once final or as they change are kept here");
      }
      states = request.states(input, true);
      keyFields = keys.stream().mapToInt(input::fieldIndex).toArray();
      kindField = input.fieldIndex(KIND);
      timeField = input.fieldIndex(TIME);
      shift = request.number("shift");
      changes = "changes".equals(emit);
      generous = request.flag("generous");
    }

    /** The punctuation a trigger starts with, in base units; Long.MIN_VALUE before the first (Spark's watermark is 0 then). */
    long point(GroupState<?> state) {
      long watermark = state.getCurrentWatermarkMs();
      return watermark <= 0 ? Long.MIN_VALUE : watermark - shift;
    }
  }

  /** How a function reads its request against its input's schema; it throws Refused for what it cannot run. */
  interface SpecReader<S extends Keyed> {
    S read(RequestJson request, StructType input);
  }

  /** The request `json` read against `input`, or null when it is malformed or refused. */
  private static <S extends Keyed> S spec(String json, StructType input, SpecReader<S> reader) {
    try {
      return reader.read(RequestJson.parse(json), input);
    } catch (KernelRequest.Refused e) {
      return null;
    }
  }

  /**
   * The keyed stream over `input` that the request `json` describes, or null when the request is
   * refused (a state of a type only the job's other engine handles): the function `function` makes
   * over each key's rows, each key's state one binary value, called again with no rows once the
   * watermark passes the timeout it sets (event time).
   */
  static <S extends Keyed> Dataset<Row> stream(
      Dataset<Row> input, String json, SpecReader<S> reader, Function<S, FlatMapGroupsWithStateFunction<Row, Row, byte[], Row>> function) {
    S spec = spec(json, input.schema(), reader);
    if (spec == null) {
      return null;
    }
    return grouped(input, spec.keyFields)
        .flatMapGroupsWithState(
            function.apply(spec), OutputMode.Append(), Encoders.BINARY(), Encoders.row(spec.layout.output), GroupStateTimeout.EventTimeTimeout());
  }

  /** What the drain makes of one key's state: the rows it emits. */
  interface Opener extends Serializable {
    void open(Row key, byte[] state, List<Row> out);
  }

  /**
   * The drain: the rows `opener` makes of each key's state, from the states the state store holds:
   * rows of the key (a struct) and the state (binary), as the job selects them from Spark's state data
   * source. `input` is the schema of the rows the stream gave the function; null when the request is
   * refused.
   */
  static <S extends Keyed> Dataset<Row> drain(
      Dataset<Row> stored, String json, String input, SpecReader<S> reader, Function<S, Opener> opener) {
    S spec = spec(json, (StructType) DataType.fromJson(input), reader);
    if (spec == null) {
      return null;
    }
    Opener open = opener.apply(spec);
    FlatMapFunction<Row, Row> rows =
        row -> {
          List<Row> out = new ArrayList<>();
          open.open(row.getStruct(0), (byte[]) row.get(1), out);
          return out.iterator();
        };
    return stored.flatMap(rows, Encoders.row(spec.layout.output));
  }

  /**
   * A function's output rows: the row's kind ("window", ...), the key columns, the window's ids, then
   * each state slot's column with the type the input gives it, longs first.
   */
  static final class Layout implements Serializable {
    private static final long serialVersionUID = 1L;
    final StructType output;
    final int[] longOut;
    final int[] doubleOut;
    private final int keys;

    Layout(StructType input, Keyed spec, StructField... ids) {
      StructType output = new StructType().add(KIND, DataTypes.StringType, false);
      for (int field : spec.keyFields) {
        output = output.add(input.fields()[field]);
      }
      for (StructField id : ids) {
        output = output.add(id);
      }
      keys = spec.keyFields.length;
      States states = spec.states;
      longOut = new int[states.longs()];
      doubleOut = new int[states.doubles()];
      for (int s = 0; s < longOut.length; s++) {
        StructField field = input.fields()[states.longField[s]];
        longOut[s] = output.size();
        output = output.add(field.name(), field.dataType(), true);
      }
      for (int s = 0; s < doubleOut.length; s++) {
        StructField field = input.fields()[states.doubleField[s]];
        doubleOut[s] = output.size();
        output = output.add(field.name(), field.dataType(), true);
      }
      this.output = output;
    }

    /** An output row: its kind, the key's columns, the window's `ids` (as their columns hold them), the states. */
    Row row(String kind, Row key, long[] l, double[] d, Object... ids) {
      Object[] values = new Object[output.size()];
      values[0] = kind;
      for (int i = 0; i < keys; i++) {
        values[1 + i] = key.get(i);
      }
      System.arraycopy(ids, 0, values, 1 + keys, ids.length);
      for (int s = 0; s < l.length; s++) {
        values[longOut[s]] = boxed(output.fields()[longOut[s]].dataType(), l[s]);
      }
      for (int s = 0; s < d.length; s++) {
        values[doubleOut[s]] = boxed(output.fields()[doubleOut[s]].dataType(), d[s]);
      }
      return RowFactory.create(values);
    }
  }

  private static final long[] NO_IDS = new long[0];

  /** Reads an entry of a key's state after its key: its ids, then its slots ({@link Slots#get}). */
  interface EntryReader<S extends Slots> {
    S read(ByteBuffer buffer);
  }

  /**
   * A key's state as the state store keeps it (one binary value): the `leading` longs, the count of
   * its entries, then each entry's key (a cell's index, a session's first value), its ids and its
   * slots. `ids`: the longs each entry holds between its key and its slots.
   */
  static byte[] encode(States states, TreeMap<Long, ? extends Slots> entries, int ids, long... leading) {
    int entry = 8 * (1 + ids + states.longs() + states.doubles());
    ByteBuffer buffer = ByteBuffer.allocate(8 * leading.length + 4 + entries.size() * entry);
    for (long value : leading) {
      buffer.putLong(value);
    }
    buffer.putInt(entries.size());
    for (Map.Entry<Long, ? extends Slots> item : entries.entrySet()) {
      buffer.putLong(item.getKey());
      for (long id : item.getValue().ids()) {
        buffer.putLong(id);
      }
      item.getValue().put(buffer);
    }
    return buffer.array();
  }

  /** The entries of a key's state as {@link #encode} wrote them, into `entries`; `buffer` is past the leading longs. */
  static <S extends Slots> void decode(ByteBuffer buffer, TreeMap<Long, S> entries, EntryReader<S> reader) {
    for (int n = buffer.getInt(); n > 0; n--) {
      long key = buffer.getLong();
      entries.put(key, reader.read(buffer));
    }
  }

  /**
   * A partial state's slots as a key's state keeps them between triggers (a cell's, a session's),
   * and their binary form in the state store's value: the longs, then the doubles.
   */
  static class Slots {
    final long[] longs;
    final double[] doubles;

    Slots(long[] longs, double[] doubles) {
      this.longs = longs;
      this.doubles = doubles;
    }

    /** The longs an entry holds between its key and its slots (a session's last value). */
    long[] ids() {
      return NO_IDS;
    }

    void put(ByteBuffer buffer) {
      for (long value : longs) {
        buffer.putLong(value);
      }
      for (double value : doubles) {
        buffer.putDouble(value);
      }
    }

    /** Slots of `states` as {@link #put} wrote them. */
    static Slots get(ByteBuffer buffer, States states) {
      Slots slots = new Slots(new long[states.longs()], new double[states.doubles()]);
      for (int s = 0; s < slots.longs.length; s++) {
        slots.longs[s] = buffer.getLong();
      }
      for (int s = 0; s < slots.doubles.length; s++) {
        slots.doubles[s] = buffer.getDouble();
      }
      return slots;
    }
  }

  /** One row's states (its share of each partial state): NULL is the identity. */
  static void read(States states, Row row, long[] l, double[] d) {
    for (int s = 0; s < l.length; s++) {
      int field = states.longField[s];
      l[s] = row.isNullAt(field) ? states.longIdentityAt(s) : ((Number) row.get(field)).longValue();
    }
    for (int s = 0; s < d.length; s++) {
      int field = states.doubleField[s];
      d[s] = row.isNullAt(field) ? states.doubleIdentityAt(s) : ((Number) row.get(field)).doubleValue();
    }
  }

  /** A long as the integral column of `type` holds it. */
  static Object boxed(DataType type, long value) {
    if (type.equals(DataTypes.IntegerType)) {
      return (int) value;
    }
    if (type.equals(DataTypes.ShortType)) {
      return (short) value;
    }
    if (type.equals(DataTypes.ByteType)) {
      return (byte) value;
    }
    return value;
  }

  /** A double as the floating column of `type` holds it. */
  static Object boxed(DataType type, double value) {
    return type.equals(DataTypes.FloatType) ? (Object) (float) value : (Object) value;
  }
}
