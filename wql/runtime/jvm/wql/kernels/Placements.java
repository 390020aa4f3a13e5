package wql.kernels;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;

/**
 * Where an interval event's share of each state goes along the windows ({@link EventDeltas}, {@link
 * EventSweep}), as the request's "placements" say: "signed" at its first window and, negated, one past
 * its last (sums and counts, so a running total over the windows holds exactly the events that overlap
 * each); "start" at its first only and "end" one past its last only (the halves of the moments, which
 * only grow); "extreme" (min and max, the sweep's) in each window it is in.
 */
final class Placements implements Serializable {
  private static final long serialVersionUID = 1L;
  static final int SIGNED = 0;
  static final int START = 1;
  static final int END = 2;
  static final int EXTREME = 3;
  private static final List<String> NAMES = List.of("signed", "start", "end", "extreme");
  final int[] longPlace;
  final int[] doublePlace;

  /**
   * The placement of each of `states`, from the request's "operations", "columns" and "placements";
   * refused where one cannot hold: moments signed, the first state (a count) not signed, and, unless
   * the kernel keeps `extremes`, an extreme; with them, min and max placed otherwise.
   */
  Placements(RequestJson request, States states, boolean extremes) {
    List<String> operations = request.strings("operations");
    List<String> columns = request.strings("columns");
    List<String> placements = request.strings("placements");
    if (placements.size() != columns.size()) {
      throw new KernelRequest.Refused("a state has no placement");
    }
    longPlace = new int[states.longs()];
    doublePlace = new int[states.doubles()];
    for (int i = 0; i < columns.size(); i++) {
      int place = NAMES.indexOf(placements.get(i));
      String operation = operations.get(i);
      boolean extreme = operation.equals("min") || operation.equals("max");
      if (place < 0 || (place == SIGNED && operation.equals("moments")) || (extremes ? extreme != (place == EXTREME) : place == EXTREME)) {
        throw new KernelRequest.Refused(
            "a state's placement is not signed, start, end (moments: not signed)" + (extremes ? " or extreme (min and max)" : ""));
      }
      int slot = Arrays.asList(states.longName).indexOf(columns.get(i));
      if (slot >= 0) {
        longPlace[slot] = place;
      } else {
        doublePlace[Arrays.asList(states.doubleName).indexOf(columns.get(i))] = place;
      }
    }
    if (longPlace[states.firstSlot] != SIGNED) {
      throw new KernelRequest.Refused("the first state must be a signed count");
    }
  }

  /**
   * An event's shares (l, d) as it enters, its first window's, into state 0 of (longs, doubles), and
   * as it leaves, one past its last window, into state 1: a signed share negated as it leaves, the
   * identity where a share has no part. An extreme enters only when the event is `lasting` (it never
   * leaves then; the sweep keeps the others' apart).
   */
  void split(States states, long[] l, double[] d, boolean lasting, long[] longs, double[] doubles) {
    int nl = l.length;
    for (int s = 0; s < nl; s++) {
      int place = longPlace[s];
      longs[s] = enters(place, lasting) ? l[s] : states.longIdentityAt(s);
      longs[nl + s] = place == SIGNED ? -l[s] : place == END ? l[s] : states.longIdentityAt(s);
    }
    int nd = d.length;
    for (int s = 0; s < nd; s++) {
      int place = doublePlace[s];
      doubles[s] = enters(place, lasting) ? d[s] : states.doubleIdentityAt(s);
      doubles[nd + s] = place == SIGNED ? -d[s] : place == END ? d[s] : states.doubleIdentityAt(s);
    }
  }

  private static boolean enters(int place, boolean lasting) {
    return place == SIGNED || place == START || (place == EXTREME && lasting);
  }
}
