package wql.kernels;

import java.io.Serializable;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;

/**
 * A calendar grid's cells in the JVM (docs/semantics.md §2.21): months from January 1970, or a zone's
 * local days from 1970-01-01, over a TIMESTAMP's microseconds read in the zone or a DATE's days.
 *
 * <p>Why here: a stream of a calendar grid keeps its cells in Spark's state store like any grid's, and
 * only when a window is final meets the calendar, since its end is the instant a cell begins. The job's
 * own Spark functions (calendar_cells.py) number the cells the same way, with the same zone rules: Spark
 * and this class both read them from the JVM's java.time.
 */
final class CalendarCells implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final long MICROS = 1_000_000L;
  private static final LocalDate EPOCH = LocalDate.of(1970, 1, 1);

  private final boolean months;
  private final String zoneName; // null: a DATE, whose values are days
  private transient ZoneId zone;

  private CalendarCells(boolean months, String zoneName) {
    this.months = months;
    this.zoneName = zoneName;
  }

  /** The request's "calendar" ({"cell": "day" | "month", "zone": name or null}), or null for a uniform grid. */
  static CalendarCells of(RequestJson request) {
    if (!request.has("calendar")) {
      return null;
    }
    RequestJson calendar = request.object("calendar");
    String cell = calendar.text("cell");
    if (!cell.equals("day") && !cell.equals("month")) {
      throw new KernelRequest.Refused("no calendar cells of " + cell);
    }
    String name = calendar.optionalText("zone");
    if (name != null && !ZoneId.getAvailableZoneIds().contains(name) && !name.equals("UTC")) {
      throw new KernelRequest.Refused("no time zone " + name + " in this JVM");
    }
    return new CalendarCells(cell.equals("month"), name);
  }

  private ZoneId zone() {
    if (zone == null) {
      zone = ZoneId.of(zoneName);
    }
    return zone;
  }

  /** The cell value p (base units: µs, or a DATE's days) falls in: the c with start(c) ≤ p < start(c + 1). */
  long cellOf(long p) {
    LocalDate day =
        zoneName == null
            ? LocalDate.ofEpochDay(p)
            : LocalDate.ofInstant(
                Instant.ofEpochSecond(Math.floorDiv(p, MICROS), Math.floorMod(p, MICROS) * 1000), zone());
    return months ? (day.getYear() - 1970L) * 12 + day.getMonthValue() - 1 : day.toEpochDay();
  }

  /** Where cell c begins, in base units: local midnight of its first day (or, where the zone skips it, the jump). */
  long start(long c) {
    LocalDate day = months ? EPOCH.plusMonths(c) : LocalDate.ofEpochDay(c);
    if (zoneName == null) {
      return day.toEpochDay();
    }
    Instant begins = day.atStartOfDay(zone()).toInstant();
    return Math.addExact(Math.multiplyExact(begins.getEpochSecond(), MICROS), begins.getNano() / 1000);
  }
}
