package wql.kernels;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * The map side of the bins kernel: each Spark partition's tuples, before the shuffle, as batches of
 * up to {@link #BATCH} tuples of one key in columns: the values of the range attribute, then each
 * stored state's contributions, WHERE already applied (a tuple outside it contributes identities).
 *
 * <p>Spark's shuffle costs about as much per row as per byte: shuffling a batch as one row of a few
 * arrays costs a fraction of shuffling its tuples as rows, and the reduce side ({@link
 * TupleWindows}) copies the arrays into its columns instead of reading rows one at a time. Each
 * key's batch grows as its tuples come; when the batches of all keys hold more than {@link
 * #STAGED} tuples, every batch goes, so memory stays bounded however many keys there are.
 *
 * <p>The frames kernel ({@link FrameWindows}) also ships side columns, "extras", as long arrays read
 * whatever WHERE says: arrival, a predicate, a delta's x ({@link #extra}).
 */
final class TupleBatches {
  static final int BATCH = 1024;
  static final int STAGED = 1 << 18;
  static final String VALUES = "__wql_values";
  private static final String LONG = "__wql_long";
  private static final String DOUBLE = "__wql_double";
  private static final String EXTRA = "__wql_extra";
  /** Extras' kinds (a positive kind is an integral column's byte width, NULL read as 0). */
  static final int BOOLEAN = -1; // 1 for true, 0 for false or NULL
  static final int FLOATING = -2; // a double's bits, NULL read as NaN
  static final int PRESENT = -3; // 1 where the column is not NULL, else 0

  private TupleBatches() {}

  /** The batches' schema: the key columns as the input has them, then one array column per column. */
  static StructType schema(StructType input, List<String> keys, boolean[] storedLongs, int doubleSlots) {
    return schema(input, keys, storedLongs, doubleSlots, 0);
  }

  /** The same with `extras` side columns after the values. */
  static StructType schema(StructType input, List<String> keys, boolean[] storedLongs, int doubleSlots, int extras) {
    StructType schema = new StructType();
    for (String key : keys) {
      schema = schema.add(input.apply(key));
    }
    schema = schema.add(column(VALUES, DataTypes.LongType));
    for (int e = 0; e < extras; e++) {
      schema = schema.add(column(EXTRA + e, DataTypes.LongType));
    }
    for (int s = 0; s < storedLongs.length; s++) {
      if (storedLongs[s]) {
        schema = schema.add(column(LONG + s, DataTypes.LongType));
      }
    }
    for (int s = 0; s < doubleSlots; s++) {
      schema = schema.add(column(DOUBLE + s, DataTypes.DoubleType));
    }
    return schema;
  }

  private static StructField column(String name, DataType element) {
    return DataTypes.createStructField(name, DataTypes.createArrayType(element, false), false);
  }

  /** Where each stored integral state's array is in a batch row, -1 for a state not stored. */
  static int[] longFields(StructType batches, boolean[] storedLongs) {
    int[] fields = new int[storedLongs.length];
    for (int s = 0; s < fields.length; s++) {
      fields[s] = storedLongs[s] ? batches.fieldIndex(LONG + s) : -1;
    }
    return fields;
  }

  /** Where each extra's array is in a batch row. */
  static int[] extraFields(StructType batches, int extras) {
    int[] fields = new int[extras];
    for (int e = 0; e < extras; e++) {
      fields[e] = batches.fieldIndex(EXTRA + e);
    }
    return fields;
  }

  /** A side column of a row as a long, by its kind (see {@link #BOOLEAN}). */
  static long extra(InternalRow row, int field, int kind) {
    boolean isNull = row.isNullAt(field);
    switch (kind) {
      case BOOLEAN:
        return !isNull && row.getBoolean(field) ? 1 : 0;
      case FLOATING:
        return Double.doubleToRawLongBits(isNull ? Double.NaN : row.getDouble(field));
      case PRESENT:
        return isNull ? 0 : 1;
      default:
        return isNull ? 0 : States.integral(row, field, kind);
    }
  }

  static int[] doubleFields(StructType batches, int doubleSlots) {
    int[] fields = new int[doubleSlots];
    for (int s = 0; s < doubleSlots; s++) {
      fields[s] = batches.fieldIndex(DOUBLE + s);
    }
    return fields;
  }

  /** One key's tuples waiting to go, tuple-major as {@link States#read} writes them. */
  private static final class Stage {
    final Object[] key;
    long[] values = new long[16];
    long[] longs;
    double[] doubles;
    long[] extras;
    int count;

    Stage(Object[] key, int longSlots, int doubleSlots, int extraColumns) {
      this.key = key;
      longs = new long[values.length * longSlots];
      doubles = new double[values.length * doubleSlots];
      extras = new long[values.length * extraColumns];
    }

    /** How many tuples' room one more tuple needs: none, or as many as there are (doubling). */
    int growth() {
      return count < values.length ? 0 : values.length;
    }

    void grow() {
      values = Arrays.copyOf(values, 2 * values.length);
      longs = Arrays.copyOf(longs, 2 * longs.length);
      doubles = Arrays.copyOf(doubles, 2 * doubles.length);
      extras = Arrays.copyOf(extras, 2 * extras.length);
    }
  }

  /** A partition's rows in, its batches out. */
  static final class Batcher implements Iterator<InternalRow> {
    private final Iterator<InternalRow> rows;
    private final TupleWindows.Spec spec;
    private final States states;
    private final TaskMemory memory;
    private final Function<InternalRow, Stage> newStage = this::newStage;
    private final ArrayDeque<Stage> leaving = new ArrayDeque<>();
    private final GenericInternalRow batch;
    private final UnsafeProjection unsafe;
    private final long[] longScratch = new long[BATCH];
    private final double[] doubleScratch = new double[BATCH];
    private final int tupleBytes;
    private KeyIndex<Stage> stages;
    private long staged; // tuples' room in every stage
    private InternalRow ready;

    Batcher(Iterator<InternalRow> rows, TupleWindows.Spec spec) {
      this.rows = rows;
      this.spec = spec;
      states = spec.states;
      memory = TaskMemory.ofTask("bins");
      stages = new KeyIndex<>(spec.keys);
      batch = new GenericInternalRow(spec.batches.size());
      unsafe = UnsafeProjection.create(spec.batches);
      tupleBytes = 8 * (1 + states.longs() + states.doubles() + spec.extraFields.length);
    }

    @Override
    public boolean hasNext() {
      while (ready == null) {
        if (!leaving.isEmpty()) {
          ready = batchOf(leaving.poll());
        } else if (rows.hasNext()) {
          add(rows.next());
        } else if (stages != null) {
          leaveAll(); // the partition's last batches
          stages = null;
        } else {
          if (memory != null) {
            memory.releaseAll();
          }
          return false;
        }
      }
      return true;
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      InternalRow out = ready;
      ready = null;
      return out;
    }

    private void add(InternalRow row) {
      Stage stage = stages.of(row, newStage);
      int growth = stage.growth();
      if (growth > 0) {
        account(growth); // before the stage grows
        stage.grow();
      }
      int i = stage.count++;
      stage.values[i] = States.integral(row, spec.valueField, spec.valueWidth);
      int ne = spec.extraFields.length;
      for (int e = 0; e < ne; e++) {
        stage.extras[i * ne + e] = extra(row, spec.extraFields[e], spec.extraKinds[e]);
      }
      int inside = spec.insideField;
      if (inside < 0 || (!row.isNullAt(inside) && row.getBoolean(inside))) {
        states.read(row, stage.longs, stage.doubles, i);
      } else {
        states.identity(stage.longs, stage.doubles, i); // names windows, holds nothing
      }
      if (stage.count == BATCH) {
        ready = batchOf(stage);
      } else if (staged > STAGED) {
        leaveAll();
        stages = new KeyIndex<>(spec.keys); // every stage's memory goes with its batch
      }
    }

    private void leaveAll() {
      for (Stage stage : stages.values()) {
        if (stage.count > 0) {
          leaving.add(stage);
        }
      }
      if (memory != null) {
        memory.releaseAll();
      }
      staged = 0;
    }

    private Stage newStage(InternalRow row) {
      Object[] key = new Object[spec.keys.fields.length];
      for (int i = 0; i < key.length; i++) {
        key[i] = spec.keys.copy(spec.keys.value(row, i)); // the row's memory is reused
      }
      Stage stage = new Stage(key, states.longs(), states.doubles(), spec.extraFields.length);
      account(stage.values.length);
      return stage;
    }

    /** The stage's tuples as one batch row (Spark's shuffle copies it before the next), the stage emptied. */
    private InternalRow batchOf(Stage stage) {
      int n = stage.count;
      int field = 0;
      for (Object value : stage.key) {
        batch.update(field++, value);
      }
      batch.update(field++, UnsafeArrayData.fromPrimitiveArray(stage.values, Platform.LONG_ARRAY_OFFSET, n, 8));
      int ne = spec.extraFields.length;
      for (int e = 0; e < ne; e++) {
        for (int i = 0; i < n; i++) {
          longScratch[i] = stage.extras[i * ne + e];
        }
        batch.update(field++, UnsafeArrayData.fromPrimitiveArray(longScratch, Platform.LONG_ARRAY_OFFSET, n, 8));
      }
      int nl = states.longs();
      for (int s = 0; s < nl; s++) {
        if (spec.storedLongs[s]) {
          for (int i = 0; i < n; i++) {
            longScratch[i] = stage.longs[i * nl + s];
          }
          batch.update(field++, UnsafeArrayData.fromPrimitiveArray(longScratch, Platform.LONG_ARRAY_OFFSET, n, 8));
        }
      }
      int nd = states.doubles();
      for (int s = 0; s < nd; s++) {
        for (int i = 0; i < n; i++) {
          doubleScratch[i] = stage.doubles[i * nd + s];
        }
        batch.update(field++, UnsafeArrayData.fromPrimitiveArray(doubleScratch, Platform.DOUBLE_ARRAY_OFFSET, n, 8));
      }
      stage.count = 0;
      return unsafe.apply(batch);
    }

    private void account(int tuples) {
      staged += tuples;
      if (memory != null) {
        memory.reserve((long) tuples * tupleBytes, staged);
      }
    }
  }
}
