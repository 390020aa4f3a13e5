package wql.kernels;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.AtomicType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/** A row's key as a hash map key: the value itself for one column, a list of values for several. */
final class Keys implements Serializable {
  private static final long serialVersionUID = 1L;
  final int[] fields;

  private Keys(int[] fields) {
    this.fields = fields;
  }

  /** The key columns, or null when one has values whose Java equality is not Spark's (binary, nested). */
  static Keys of(StructType schema, List<String> names) {
    int[] fields = new int[names.size()];
    for (int i = 0; i < fields.length; i++) {
      fields[i] = schema.fieldIndex(names.get(i));
      DataType type = schema.fields()[fields[i]].dataType();
      if (!(type instanceof AtomicType) || type instanceof BinaryType) {
        return null;
      }
    }
    return new Keys(fields);
  }

  Object of(Row row) {
    if (fields.length == 1) {
      Object value = row.get(fields[0]);
      return value == null ? Keys.class : value; // NULL is a key too
    }
    Object[] values = new Object[fields.length];
    for (int i = 0; i < values.length; i++) {
      values[i] = row.get(fields[i]);
    }
    return Arrays.asList(values);
  }
}
