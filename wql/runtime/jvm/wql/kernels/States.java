package wql.kernels;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructType;

/**
 * Partial aggregate states as the kernels keep them: integral states in long slots, floating ones
 * in double slots, so a state is a pair of primitive arrays and combining two is a loop. Operations
 * are those of WQL's decomposition: sum, min, max, and moments (count, mean, M2) combined with
 * Chan's parallel formula; a NULL state is the operation's identity, as in the numpy kernels. The
 * identities and combines are {@link StateAlgebra}'s, generated from the Python table
 * (wql/compiler/algebra.py); this class lays the states out in slots and applies them.
 */
final class States implements Serializable {
  private static final long serialVersionUID = 1L;
  static final int SUM = StateAlgebra.SUM;
  static final int MIN = StateAlgebra.MIN;
  static final int MAX = StateAlgebra.MAX;
  static final int MOMENTS = StateAlgebra.MOMENTS;

  final String[] longName;
  final String[] doubleName;
  final int[] longField; // where the input row holds each state; -1: absent, a row count (1 per row)
  final int[] doubleField;
  private final int[] longOp;
  private final int[] doubleOp;
  private final long[] longIdentity;
  private final double[] doubleIdentity;
  private final int[] longWidth; // bytes of each integral state's column: how to read and write it
  private final boolean[] doubleIsFloat;
  private final int[][] moments; // {count long slot, mean double slot, M2 double slot}
  final int firstSlot; // the long slot of the first state, a count

  private States(int longs, int doubles, int[][] moments, int firstSlot) {
    longName = new String[longs];
    doubleName = new String[doubles];
    longField = new int[longs];
    doubleField = new int[doubles];
    longOp = new int[longs];
    doubleOp = new int[doubles];
    longIdentity = new long[longs];
    doubleIdentity = new double[doubles];
    longWidth = new int[longs];
    doubleIsFloat = new boolean[doubles];
    this.moments = moments;
    this.firstSlot = firstSlot;
  }

  int longs() {
    return longOp.length;
  }

  int doubles() {
    return doubleOp.length;
  }

  boolean hasAbsentColumn() {
    for (int field : longField) {
      if (field < 0) {
        return true;
      }
    }
    return false; // only counts may be absent, and counts are long slots
  }

  /**
   * The states named by `columns` (with `operations` in parallel; a moments group is three
   * consecutive columns), or null when one has a type or operation only the numpy kernels know. The
   * first state must be a count. A column absent from `input` is a row count.
   */
  static States of(StructType input, List<String> operations, List<String> columns) {
    int n = columns.size();
    int[] op = new int[n];
    DataType[] type = new DataType[n];
    int[] field = new int[n];
    boolean[] integral = new boolean[n];
    int[] slot = new int[n];
    int longs = 0;
    int doubles = 0;
    List<String> names = List.of(input.fieldNames());
    for (int i = 0; i < n; i++) {
      op[i] = StateAlgebra.operation(operations.get(i));
      field[i] = names.indexOf(columns.get(i));
      type[i] = field[i] < 0 ? DataTypes.LongType : input.fields()[field[i]].dataType();
      if (op[i] < 0 || (field[i] < 0 && op[i] != SUM)) {
        return null;
      }
      if (isIntegral(type[i])) {
        integral[i] = true;
        slot[i] = longs++;
      } else if (type[i] instanceof DoubleType || type[i] instanceof FloatType) {
        slot[i] = doubles++;
      } else {
        return null;
      }
    }
    List<int[]> groups = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      if (op[i] == MOMENTS && i == groupStart(op, i)) {
        if (i + 2 >= n || !integral[i] || integral[i + 1] || integral[i + 2]) {
          return null;
        }
        groups.add(new int[] {slot[i], slot[i + 1], slot[i + 2]});
      }
    }
    if (n == 0 || !integral[0] || op[0] != SUM) {
      return null;
    }
    States states = new States(longs, doubles, groups.toArray(new int[0][]), slot[0]);
    for (int i = 0; i < n; i++) {
      int s = slot[i];
      if (integral[i]) {
        states.longName[s] = columns.get(i);
        states.longField[s] = field[i];
        states.longOp[s] = op[i];
        states.longWidth[s] = width(type[i]);
        states.longIdentity[s] = longIdentity(op[i], type[i]);
      } else {
        states.doubleName[s] = columns.get(i);
        states.doubleField[s] = field[i];
        states.doubleOp[s] = op[i];
        states.doubleIsFloat[s] = type[i] instanceof FloatType;
        states.doubleIdentity[s] = StateAlgebra.doubleIdentity(op[i]);
      }
    }
    return states;
  }

  static boolean isIntegral(DataType type) {
    return type instanceof LongType || type instanceof IntegerType || type instanceof ShortType || type instanceof ByteType;
  }

  /** Where the moments group holding column i starts: groups are consecutive runs of three. */
  private static int groupStart(int[] op, int i) {
    int start = i;
    while (start > 0 && op[start - 1] == MOMENTS) {
      start--;
    }
    return start + (i - start) / 3 * 3;
  }

  private static long longIdentity(int op, DataType type) {
    long high =
        type instanceof ByteType
            ? Byte.MAX_VALUE
            : type instanceof ShortType ? Short.MAX_VALUE : type instanceof IntegerType ? Integer.MAX_VALUE : Long.MAX_VALUE;
    return StateAlgebra.longIdentity(op, high);
  }

  /** One input row's states: NULL as the identity, an absent column as 1. */
  void read(InternalRow row, long[] l, double[] d) {
    read(row, l, d, 0);
  }

  /** The same into the i-th states of arrays that hold consecutive states of this layout. */
  void read(InternalRow row, long[] l, double[] d, int i) {
    int nl = longOp.length;
    for (int s = 0; s < nl; s++) {
      int field = longField[s];
      if (field < 0) {
        l[i * nl + s] = 1;
      } else {
        l[i * nl + s] = row.isNullAt(field) ? longIdentity[s] : integral(row, field, longWidth[s]);
      }
    }
    int nd = doubleOp.length;
    for (int s = 0; s < nd; s++) {
      int field = doubleField[s];
      if (row.isNullAt(field)) {
        d[i * nd + s] = doubleIdentity[s];
      } else {
        d[i * nd + s] = doubleIsFloat[s] ? row.getFloat(field) : row.getDouble(field);
      }
    }
  }

  /** The byte width of an integral type, the code {@link #integral} and {@link #setIntegral} take. */
  static int width(DataType type) {
    if (type instanceof LongType) {
      return 8;
    }
    if (type instanceof IntegerType) {
      return 4;
    }
    return type instanceof ShortType ? 2 : 1;
  }

  /** A non-NULL integral field of that width, widened to long. */
  static long integral(InternalRow row, int field, int width) {
    switch (width) {
      case 8:
        return row.getLong(field);
      case 4:
        return row.getInt(field);
      case 2:
        return row.getShort(field);
      default:
        return row.getByte(field);
    }
  }

  /** out[oi] = a[ai] ⊕ b[bi], state by state; the arrays hold consecutive states of this layout. */
  void merge(long[] al, double[] ad, int ai, long[] bl, double[] bd, int bi, long[] ol, double[] od, int oi) {
    int nl = longOp.length;
    int nd = doubleOp.length;
    for (int[] group : moments) { // first: it reads the counts before they are added up below
      long n1 = al[ai * nl + group[0]];
      long n2 = bl[bi * nl + group[0]];
      double mean1 = ad[ai * nd + group[1]];
      double mean2 = bd[bi * nd + group[1]];
      double m2a = ad[ai * nd + group[2]];
      double m2b = bd[bi * nd + group[2]];
      od[oi * nd + group[1]] = StateAlgebra.momentsMean(n1, mean1, n2, mean2);
      od[oi * nd + group[2]] = StateAlgebra.momentsM2(n1, mean1, m2a, n2, mean2, m2b);
    }
    for (int s = 0; s < nl; s++) { // a moments count adds up: StateAlgebra.combine knows it too
      ol[oi * nl + s] = StateAlgebra.combine(longOp[s], al[ai * nl + s], bl[bi * nl + s]);
    }
    for (int s = 0; s < nd; s++) {
      if (doubleOp[s] != MOMENTS) {
        od[oi * nd + s] = StateAlgebra.combine(doubleOp[s], ad[ai * nd + s], bd[bi * nd + s]);
      }
    }
  }

  /** The operation of each integral slot and each floating slot, and the moments groups' slots. */
  int longOp(int s) {
    return longOp[s];
  }

  int doubleOp(int s) {
    return doubleOp[s];
  }

  int[][] momentGroups() {
    return moments;
  }

  long longIdentityAt(int s) {
    return longIdentity[s];
  }

  double doubleIdentityAt(int s) {
    return doubleIdentity[s];
  }

  void identity(long[] l, double[] d, int i) {
    System.arraycopy(longIdentity, 0, l, i * longIdentity.length, longIdentity.length);
    System.arraycopy(doubleIdentity, 0, d, i * doubleIdentity.length, doubleIdentity.length);
  }

  /** Writes the states into an output row, as their columns' types (never NULL). */
  void write(InternalRow out, int[] longOut, int[] doubleOut, long[] l, double[] d) {
    for (int s = 0; s < l.length; s++) {
      writeLong(out, longOut[s], s, l[s]);
    }
    for (int s = 0; s < d.length; s++) {
      writeDouble(out, doubleOut[s], s, d[s]);
    }
  }

  /** Integral state s into an output row's field, as its column's type. */
  void writeLong(InternalRow out, int field, int s, long value) {
    setIntegral(out, field, longWidth[s], value);
  }

  /** Floating state s into an output row's field, as its column's type. */
  void writeDouble(InternalRow out, int field, int s, double value) {
    if (doubleIsFloat[s]) {
      out.setFloat(field, (float) value);
    } else {
      out.setDouble(field, value);
    }
  }

  static void setIntegral(InternalRow out, int field, int width, long value) {
    switch (width) {
      case 8:
        out.setLong(field, value);
        break;
      case 4:
        out.setInt(field, (int) value);
        break;
      case 2:
        out.setShort(field, (short) value);
        break;
      default:
        out.setByte(field, (byte) value);
    }
  }
}
