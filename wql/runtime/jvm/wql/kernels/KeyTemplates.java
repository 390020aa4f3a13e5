package wql.kernels;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.StructType;

/**
 * The output rows a key's windows start from: the key's columns, read from a row of another schema
 * that holds them (a batch, a shipped row), where the output has them, and every other column NULL,
 * for each window to fill in.
 */
final class KeyTemplates {
  private final Keys keys;
  private final StructType output;
  private final int[] keyOut;
  private UnsafeProjection unsafe; // made on the first key

  /** Key column i of `keys` goes to field keyOut[i] of `output`. */
  KeyTemplates(Keys keys, StructType output, int[] keyOut) {
    this.keys = keys;
    this.output = output;
    this.keyOut = keyOut;
  }

  /** The template of the key `row` holds, a row of its own (the row's memory is Spark's to reuse). */
  UnsafeRow of(InternalRow row) {
    GenericInternalRow values = new GenericInternalRow(output.size());
    for (int i = 0; i < keyOut.length; i++) {
      values.update(keyOut[i], keys.value(row, i));
    }
    if (unsafe == null) {
      unsafe = UnsafeProjection.create(output);
    }
    return unsafe.apply(values).copy();
  }
}
