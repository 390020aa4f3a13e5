package wql.kernels;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.AtomicType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/** A row's key as a hash map key: the value itself for one column, a list of values for several. */
final class Keys implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final int INT = 1; // kinds with a direct getter, faster than InternalRow.get
  private static final int LONG = 2;
  private static final int STRING = 3;
  final int[] fields;
  final DataType[] types;
  private final int[] kinds;

  private Keys(int[] fields, DataType[] types) {
    this.fields = fields;
    this.types = types;
    kinds = new int[types.length];
    for (int i = 0; i < types.length; i++) {
      DataType type = types[i];
      kinds[i] =
          type instanceof IntegerType || type instanceof DateType
              ? INT
              : type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType
                  ? LONG
                  : type instanceof StringType ? STRING : 0;
    }
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

  /** Key column i's value, boxed as InternalRow.get boxes it. */
  Object value(InternalRow row, int i) {
    int field = fields[i];
    if (row.isNullAt(field)) {
      return null;
    }
    switch (kinds[i]) {
      case INT:
        return row.getInt(field);
      case LONG:
        return row.getLong(field);
      case STRING:
        return row.getUTF8String(field);
      default:
        return row.get(field, types[i]);
    }
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
