package wql.kernels;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.types.StructType;

/**
 * What the interval-event kernels ({@link EventSlices}, {@link EventDeltas}, {@link EventSweep}) read
 * alike from a request over the events' schema: the key columns, each event's first and last slice
 * or window and the data's last window (BIGINT columns "first", "last", "horizon" name), and the
 * events' shares of the partial states, each state a column of the events. Their windows' rows have
 * the events' schema, the window-id in the first and last columns.
 */
class EventColumns implements Serializable {
  private static final long serialVersionUID = 1L;
  final StructType schema;
  final List<String> keyNames;
  final String first;
  final States states;
  final Keys keys;
  final int firstField;
  final int lastField;
  final int horizonField;

  /** `unit`: what the first and last columns count ("slice", "window"), as a refusal names them. */
  EventColumns(RequestJson request, StructType schema, String unit) {
    this.schema = schema;
    keyNames = List.copyOf(request.strings("keys"));
    first = request.text("first");
    firstField = request.bigint("first", schema, unit);
    lastField = request.bigint("last", schema, unit);
    horizonField = request.bigint("horizon", schema, unit);
    states = request.states(schema, true);
    keys = request.keys("keys", schema);
  }
}
