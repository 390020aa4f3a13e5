package wql.kernels;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
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

  /** How a function reads its request against its input's schema; it throws Refused for what it cannot run. */
  interface SpecReader<S> {
    S read(JsonNode request, StructType input);
  }

  /** The request `json` read against `input`, or null when it is malformed or refused. */
  static <S> S spec(String json, StructType input, SpecReader<S> reader) {
    try {
      return reader.read(new ObjectMapper().readTree(json), input);
    } catch (java.io.IOException | KernelRequest.Refused e) {
      return null;
    }
  }

  /**
   * The stateful stream: `function` over the rows of each key, each key's state one binary value, called
   * again with no rows once the watermark passes the timeout it sets (event time).
   */
  static Dataset<Row> stateful(
      Dataset<Row> input, int[] keyFields, FlatMapGroupsWithStateFunction<Row, Row, byte[], Row> function, StructType output) {
    return grouped(input, keyFields)
        .flatMapGroupsWithState(
            function, OutputMode.Append(), Encoders.BINARY(), Encoders.row(output), GroupStateTimeout.EventTimeTimeout());
  }

  /** What the drain makes of one key's state: the rows it emits. */
  interface Opener extends Serializable {
    void open(Row key, byte[] state, List<Row> out);
  }

  /**
   * The drain's rows from the states the state store holds: rows of the key (a struct) and the state
   * (binary), as the job selects them from Spark's state data source.
   */
  static Dataset<Row> drained(Dataset<Row> stored, StructType output, Opener opener) {
    FlatMapFunction<Row, Row> open =
        row -> {
          List<Row> out = new ArrayList<>();
          opener.open(row.getStruct(0), (byte[]) row.get(1), out);
          return out.iterator();
        };
    return stored.flatMap(open, Encoders.row(output));
  }

  /**
   * Where a function's output rows hold the partial states: after the leading columns, each state
   * slot's column with the type the input gives it, longs first.
   */
  static final class Layout implements Serializable {
    private static final long serialVersionUID = 1L;
    final StructType output;
    final int[] longOut;
    final int[] doubleOut;

    Layout(StructType leading, StructType input, States states) {
      StructType output = leading;
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

    /** An output row's values, the states written in; the caller fills the leading columns. */
    Object[] values(long[] l, double[] d) {
      Object[] values = new Object[output.size()];
      for (int s = 0; s < l.length; s++) {
        values[longOut[s]] = boxed(output.fields()[longOut[s]].dataType(), l[s]);
      }
      for (int s = 0; s < d.length; s++) {
        values[doubleOut[s]] = boxed(output.fields()[doubleOut[s]].dataType(), d[s]);
      }
      return values;
    }
  }

  /** A state's slots into its binary form. */
  static void put(ByteBuffer buffer, long[] l, double[] d) {
    for (long value : l) {
      buffer.putLong(value);
    }
    for (double value : d) {
      buffer.putDouble(value);
    }
  }

  /** A state's slots from its binary form, as {@link #put} wrote them. */
  static void get(ByteBuffer buffer, long[] l, double[] d) {
    for (int s = 0; s < l.length; s++) {
      l[s] = buffer.getLong();
    }
    for (int s = 0; s < d.length; s++) {
      d[s] = buffer.getDouble();
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
