package wql.kernels;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * A value per key of a partition's rows (each key's queue), found from a row's key columns. The
 * kernels look a key up for every row, so one integral key column (the common PATTR of ids, dates
 * and times) goes through a primitive open-addressing table: no boxing, no equals calls. Other keys
 * go through a HashMap of {@link Keys#of} values.
 */
final class KeyIndex<V> {
  private final Keys keys;
  private final HashMap<Object, V> byObject;
  private long[] codes;
  private Object[] slots;
  private int filled;
  private V nullKey; // NULL is a key too
  private final ArrayList<V> values = new ArrayList<>();

  KeyIndex(Keys keys) {
    this.keys = keys;
    if (keys.isIntegral()) {
      byObject = null;
      codes = new long[64];
      slots = new Object[64];
    } else {
      byObject = new HashMap<>();
    }
  }

  /** The value of the row's key; `create` makes it from the row the first time the key is seen. */
  @SuppressWarnings("unchecked")
  V of(InternalRow row, Function<InternalRow, V> create) {
    if (byObject != null) {
      Object key = keys.of(row);
      V value = byObject.get(key);
      if (value == null) {
        value = added(create.apply(row));
        byObject.put(keys.copy(key), value); // the lookup key may point into the row's memory
      }
      return value;
    }
    if (keys.isNull(row)) {
      if (nullKey == null) {
        nullKey = added(create.apply(row));
      }
      return nullKey;
    }
    long code = keys.integral(row);
    int mask = slots.length - 1;
    int i = slot(code, mask);
    while (slots[i] != null) {
      if (codes[i] == code) {
        return (V) slots[i];
      }
      i = (i + 1) & mask;
    }
    V value = added(create.apply(row));
    codes[i] = code;
    slots[i] = value;
    if (++filled * 2 > slots.length) {
      grow();
    }
    return value;
  }

  /** Every key's value, in the order the keys were first seen. */
  ArrayList<V> values() {
    return values;
  }

  private V added(V value) {
    values.add(value);
    return value;
  }

  private static int slot(long code, int mask) {
    long mixed = code * 0x9E3779B97F4A7C15L; // Fibonacci hashing: consecutive ids spread over the table
    return (int) (mixed >>> 32) & mask;
  }

  private void grow() {
    long[] oldCodes = codes;
    Object[] oldSlots = slots;
    codes = new long[oldCodes.length * 2];
    slots = new Object[oldSlots.length * 2];
    int mask = slots.length - 1;
    for (int j = 0; j < oldSlots.length; j++) {
      if (oldSlots[j] != null) {
        int i = slot(oldCodes[j], mask);
        while (slots[i] != null) {
          i = (i + 1) & mask;
        }
        codes[i] = oldCodes[j];
        slots[i] = oldSlots[j];
      }
    }
  }
}
