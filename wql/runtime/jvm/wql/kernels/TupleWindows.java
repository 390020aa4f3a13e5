package wql.kernels;

import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * The bins plan's kernel for a window at every tuple, inside the JVM: the contract of the numpy
 * kernel {@code tuple_windows} in mode "every" without GROUP BY inside the partitions, without its
 * Arrow round trip.
 *
 * <p>Input: one row per tuple with the partition keys, {@code _t} (the range attribute in base
 * units; NULL names no window and is in none), {@code _in} (the tuple passes WHERE; absent: all
 * do) and one contribution column per state (absent: a row count). Every tuple of a partition key
 * is in the same Spark partition. Each distinct value w of a key's tuples names window (w - size,
 * w], holding the key's tuples that pass WHERE with values in it. Each Spark partition is sorted by
 * {@code _t} only; each key keeps the tuples of its open window in a {@link StateQueue}, and a window
 * is emitted when the key's next larger value (or the end) shows that its ties are all in.
 *
 * <p>Output rows: partition keys, {@code wid} (the window value), then the states, in the schema
 * the caller gives; windows holding no tuple are left out.
 */
public final class TupleWindows {
  private TupleWindows() {}

  /** The windows, or null for a case only the numpy kernel handles (other modes, groups, types). */
  public static Dataset<Row> combine(
      Dataset<Row> rows,
      List<String> partitions,
      List<String> groups,
      List<String> operations,
      List<String> columns,
      long size,
      String mode,
      String outputJson) {
    StructType input = rows.schema();
    StructType output = (StructType) DataType.fromJson(outputJson);
    States states = States.of(input, operations, columns);
    Keys keys = Keys.of(input, partitions);
    List<String> names = List.of(input.fieldNames());
    if (!mode.equals("every") || !groups.isEmpty() || states == null || keys == null) {
      return null;
    }
    if (!States.isIntegral(input.apply("_t").dataType())) {
      return null;
    }
    Spec spec = new Spec();
    spec.output = output;
    spec.states = states;
    spec.keys = keys;
    spec.size = size;
    spec.valueField = input.fieldIndex("_t");
    spec.valueWidth = States.width(input.apply("_t").dataType());
    spec.insideField = names.indexOf("_in");
    if (spec.insideField >= 0 && !(input.fields()[spec.insideField].dataType() instanceof BooleanType)) {
      return null;
    }
    spec.keyOut = new int[partitions.size()];
    for (int i = 0; i < spec.keyOut.length; i++) {
      spec.keyOut[i] = output.fieldIndex(partitions.get(i));
    }
    spec.widOut = output.fieldIndex("wid");
    DataType widType = output.fields()[spec.widOut].dataType();
    if (!States.isIntegral(widType)) {
      return null;
    }
    spec.widWidth = States.width(widType);
    spec.longOut = new int[states.longs()];
    for (int s = 0; s < spec.longOut.length; s++) {
      spec.longOut[s] = output.fieldIndex(states.longName[s]);
    }
    spec.doubleOut = new int[states.doubles()];
    for (int s = 0; s < spec.doubleOut.length; s++) {
      spec.doubleOut[s] = output.fieldIndex(states.doubleName[s]);
    }
    Dataset<Row> valued = rows.where(rows.col("_t").isNotNull());
    return KernelPlan.of(valued, new KernelSpec("TupleWindows", partitions, "_t", tuples -> new Windows(tuples, spec)), output);
  }

  static final class Spec implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    States states;
    Keys keys;
    long size;
    int valueField;
    int insideField;
    StructType output;
    int valueWidth;
    int[] keyOut;
    int widOut;
    int widWidth;
    int[] longOut;
    int[] doubleOut;
  }

  /** The windows of one partition's tuples, sorted by value, with every tuple of its keys in it. */
  static final class Windows extends KeyedWindows {
    private final Spec spec;
    private UnsafeProjection unsafe;

    Windows(Iterator<InternalRow> rows, Spec spec) {
      super(rows, spec.keys, spec.states);
      this.spec = spec;
    }

    @Override
    UnsafeRow template(InternalRow row) {
      GenericInternalRow keys = new GenericInternalRow(spec.output.size());
      for (int i = 0; i < spec.keyOut.length; i++) {
        keys.update(spec.keyOut[i], spec.keys.value(row, i));
      }
      if (unsafe == null) {
        unsafe = UnsafeProjection.create(spec.output);
      }
      return unsafe.apply(keys).copy(); // wid and states NULL until a window sets them
    }

    @Override
    void close(StateQueue queue) {
      if (queue.open) {
        emit(queue);
      }
    }

    @Override
    void add(InternalRow row) {
      StateQueue queue = queueOf(row);
      long value = States.integral(row, spec.valueField, spec.valueWidth);
      if (queue.open && value > queue.next) {
        emit(queue); // every tuple at the pending value is in: its window is complete
      }
      queue.open = true;
      queue.next = value;
      boolean inside = spec.insideField < 0 || (!row.isNullAt(spec.insideField) && row.getBoolean(spec.insideField));
      if (inside) {
        states.read(row, rowLongs, rowDoubles);
        queue.push(value, rowLongs, rowDoubles);
      }
    }

    /** The pending window (w - size, w] of a key, w its bookmark, if it holds any tuple. */
    private void emit(StateQueue queue) {
      queue.open = false;
      long window = queue.next;
      queue.dropUpTo(window - spec.size);
      if (queue.count == 0) {
        return;
      }
      queue.total(windowLongs, windowDoubles);
      UnsafeRow out = output(queue.template);
      States.setIntegral(out, spec.widOut, spec.widWidth, window);
      states.write(out, spec.longOut, spec.doubleOut, windowLongs, windowDoubles);
      ready.add(out);
    }
  }
}
