package wql.kernels;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.AtomicType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/** A row's key as a hash map key: the value itself for one column, a list of values for several. */
final class Keys implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final int STRING = -1; // a kind; a positive kind is an integral column's byte width
  private static final int OTHER = 0; // read with InternalRow.get, slower than the direct getters
  final int[] fields;
  final DataType[] types;
  private final int[] kinds;

  private Keys(int[] fields, DataType[] types) {
    this.fields = fields;
    this.types = types;
    kinds = new int[types.length];
    for (int i = 0; i < types.length; i++) {
      kinds[i] = kind(types[i]);
    }
  }

  private static int kind(DataType type) {
    if (type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType) {
      return 8;
    }
    if (type instanceof IntegerType || type instanceof DateType) {
      return 4;
    }
    if (type instanceof ShortType) {
      return 2;
    }
    if (type instanceof ByteType) {
      return 1;
    }
    return type instanceof StringType ? STRING : OTHER;
  }

  /**
   * The key columns, or null when one has values whose Java equality is not Spark's: binary,
   * nested, or strings under a collation other than byte-wise.
   */
  static Keys of(StructType schema, List<String> names) {
    int[] fields = new int[names.size()];
    DataType[] types = new DataType[fields.length];
    for (int i = 0; i < fields.length; i++) {
      fields[i] = schema.fieldIndex(names.get(i));
      DataType type = schema.fields()[fields[i]].dataType();
      if (!(type instanceof AtomicType) || type instanceof BinaryType) {
        return null;
      }
      if (type instanceof StringType && !((StringType) type).supportsBinaryEquality()) {
        return null;
      }
      types[i] = type;
    }
    return new Keys(fields, types);
  }

  /** One key column of an integral type (dates and timestamps included): a key is then one long. */
  boolean isIntegral() {
    return kinds.length == 1 && kinds[0] > 0;
  }

  /** Whether the only key column is NULL in the row. */
  boolean isNull(InternalRow row) {
    return row.isNullAt(fields[0]);
  }

  /** The only key column, non-NULL and integral, as a long. */
  long integral(InternalRow row) {
    return States.integral(row, fields[0], kinds[0]);
  }

  /** The row's key, for a lookup: it may still point into the row's memory. */
  Object of(InternalRow row) {
    if (fields.length == 1) {
      Object value = value(row, 0);
      return value == null ? Keys.class : value; // NULL is a key too
    }
    Object[] values = new Object[fields.length];
    for (int i = 0; i < values.length; i++) {
      values[i] = value(row, i);
    }
    return Arrays.asList(values);
  }

  /** The row's key columns' values, each copied to outlive the row (Spark reuses a row's memory). */
  Object[] values(InternalRow row) {
    Object[] values = new Object[fields.length];
    for (int i = 0; i < values.length; i++) {
      values[i] = copy(value(row, i));
    }
    return values;
  }

  /** Key column i's value, boxed as InternalRow.get boxes it. */
  Object value(InternalRow row, int i) {
    int field = fields[i];
    if (row.isNullAt(field)) {
      return null;
    }
    int kind = kinds[i];
    if (kind == STRING) {
      return row.getUTF8String(field);
    }
    if (kind == OTHER) {
      return normalized(row.get(field, types[i]));
    }
    long value = States.integral(row, field, kind);
    switch (kind) { // boxed as the column's own type: a conditional expression would promote all to Long
      case 8:
        return value;
      case 4:
        return (int) value;
      case 2:
        return (short) value;
      default:
        return (byte) value;
    }
  }

  /**
   * A floating-point key as Spark groups it: -0.0 is 0.0 (Java's equals tells them apart; every NaN is
   * one value to both).
   */
  private static Object normalized(Object value) {
    if (value instanceof Double && (Double) value == 0.0d) {
      return 0.0d;
    }
    if (value instanceof Float && (Float) value == 0.0f) {
      return 0.0f;
    }
    return value;
  }

  /** A key to keep, once the row it came from is gone. */
  Object copy(Object key) {
    if (key instanceof UTF8String) {
      return ((UTF8String) key).copy();
    }
    if (key instanceof List) {
      Object[] values = ((List<?>) key).toArray();
      for (int i = 0; i < values.length; i++) {
        if (values[i] instanceof UTF8String) {
          values[i] = ((UTF8String) values[i]).copy();
        }
      }
      return Arrays.asList(values);
    }
    return key;
  }
}
