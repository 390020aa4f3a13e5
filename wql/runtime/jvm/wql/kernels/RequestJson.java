package wql.kernels;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StructType;

/**
 * A kernel request's JSON as every kernel reads it (the job's `jvm_kernel`, or the state store's
 * request): each field by its name and type. A field a kernel needs that is absent or of another type
 * refuses the request ({@link KernelRequest.Refused}) with a message that names the field, so the
 * job runs its other engine and whoever reads the message knows which field the JVM could not read.
 * Only a flag has a default (false, where the job leaves it out): no kernel computes from a value it
 * made up for a field the job left out.
 */
final class RequestJson implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private final ObjectNode node; // a request that reads its fields again over each schema Spark plans it on keeps it

  private RequestJson(ObjectNode node) {
    this.node = node;
  }

  /** The request `json`, or refused when it is not a JSON object. */
  static RequestJson parse(String json) {
    JsonNode node;
    try {
      node = MAPPER.readTree(json);
    } catch (IOException e) {
      throw new KernelRequest.Refused("the request is not JSON: " + e.getMessage());
    }
    if (node == null || !node.isObject()) {
      throw new KernelRequest.Refused("the request is not a JSON object");
    }
    return new RequestJson((ObjectNode) node);
  }

  private static KernelRequest.Refused refused(String field, String what) {
    return new KernelRequest.Refused("the request's \"" + field + "\" is not " + what);
  }

  /** Whether the request holds `field` with a value (JSON null is none). */
  boolean has(String field) {
    return !node.path(field).isMissingNode() && !node.path(field).isNull();
  }

  /** The field's value as it stands, for the structured ones a kernel reads itself (a rule, a condition). */
  JsonNode value(String field) {
    return node.path(field);
  }

  /** The fields of the object `field` holds, read as a request's. */
  RequestJson object(String field) {
    if (!node.path(field).isObject()) {
      throw refused(field, "an object");
    }
    return new RequestJson((ObjectNode) node.path(field));
  }

  String text(String field) {
    if (!node.path(field).isTextual()) {
      throw refused(field, "a string");
    }
    return node.path(field).asText();
  }

  /** The string `field` holds, or null where it holds none (absent, or JSON null). */
  String optionalText(String field) {
    return has(field) ? text(field) : null;
  }

  /** A number, as a long (a fraction is dropped, as Jackson's asLong drops it). */
  long number(String field) {
    if (!node.path(field).isNumber()) {
      throw refused(field, "a number");
    }
    return node.path(field).asLong();
  }

  /** A whole number; `what` names it in the refusal, in the query's words (GAP, RANGE). */
  long whole(String field, String what) {
    if (!node.path(field).isIntegralNumber()) {
      throw new KernelRequest.Refused(what + " is not a whole number of the attribute's base units");
    }
    return node.path(field).asLong();
  }

  /** A flag: false where the job leaves it out. */
  boolean flag(String field) {
    if (!has(field)) {
      return false;
    }
    if (!node.path(field).isBoolean()) {
      throw refused(field, "true or false");
    }
    return node.path(field).asBoolean();
  }

  /** A list of strings (column names, operations). */
  List<String> strings(String field) {
    List<String> out = new ArrayList<>();
    if (!node.path(field).isArray()) {
      throw refused(field, "a list of strings");
    }
    for (JsonNode item : node.path(field)) {
      if (!item.isTextual()) {
        throw refused(field, "a list of strings");
      }
      out.add(item.asText());
    }
    return out;
  }

  /** A schema, written as Spark's StructType.json() writes it. */
  StructType schema(String field) {
    DataType type;
    try {
      type = DataType.fromJson(text(field));
    } catch (RuntimeException e) {
      throw refused(field, "a struct's JSON");
    }
    if (!(type instanceof StructType)) {
      throw refused(field, "a struct's JSON");
    }
    return (StructType) type;
  }

  /**
   * The partial states that "operations" and "columns" name over `input` ({@link States#of});
   * refused where one has a type or an operation only the job's other engine handles and, with
   * `everyColumn`, where a column is absent (a count the kernel would otherwise take as a row count).
   */
  States states(StructType input, boolean everyColumn) {
    States states = States.of(input, strings("operations"), strings("columns"));
    if (states == null) {
      throw new KernelRequest.Refused("a state column has a type or an operation only the job's other engine handles");
    }
    if (everyColumn && states.hasAbsentColumn()) {
      throw new KernelRequest.Refused("a state column is missing");
    }
    return states;
  }

  /** The key columns `field` names in `input`; refused where one is absent or not a key Java compares as Spark does. */
  Keys keys(String field, StructType input) {
    List<String> names = strings(field);
    Keys keys = List.of(input.fieldNames()).containsAll(names) ? Keys.of(input, names) : null;
    if (keys == null) {
      throw new KernelRequest.Refused("a key column of \"" + field + "\" is missing or has a type only the job's other engine handles");
    }
    return keys;
  }

  /** Where `input` holds the BIGINT column that `field` names; `what` names it in the refusal. */
  int bigint(String field, StructType input, String what) {
    String column = text(field);
    if (!List.of(input.fieldNames()).contains(column) || !(input.apply(column).dataType() instanceof LongType)) {
      throw new KernelRequest.Refused("the " + what + " column " + column + " is not a BIGINT");
    }
    return input.fieldIndex(column);
  }
}
