"""Spark schemas (of DataFrames handed to the API, and of tables in Spark's catalog) as compiler streams."""

from __future__ import annotations

from typing import Any

from wql.compiler.schema import Column, Stream
from wql.grammar.errors import WQLRuntimeError, WQLTypeError

_SIMPLE = {
    "string": "STRING",
    "int": "INT",
    "bigint": "BIGINT",
    "smallint": "SMALLINT",
    "tinyint": "TINYINT",
    "double": "DOUBLE",
    "float": "FLOAT",
    "boolean": "BOOLEAN",
    "timestamp": "TIMESTAMP",
    "date": "DATE",
}


def stream_from_spark(name: str, schema: Any) -> Stream:
    """A stream named `name` from a pyspark StructType or DataFrame."""
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DecimalType, StructType

    if isinstance(schema, DataFrame):
        schema = schema.schema
    if not isinstance(schema, StructType):
        raise WQLTypeError(
            f"stream '{name}': expected a DataFrame, a StructType or {{column: TYPE}}, got {type(schema).__name__}"
        )
    columns = []
    for field in schema.fields:
        data_type = field.dataType
        if isinstance(data_type, DecimalType):
            type_name = f"DECIMAL({data_type.precision},{data_type.scale})"
        else:
            simple = data_type.simpleString()
            type_name = _SIMPLE.get(simple, simple.upper())
        columns.append(Column(field.name, type_name))
    return Stream(name=name, columns=tuple(columns))


class SparkTables:
    """Spark's catalog as the compiler asks it (wql.compiler.schema.Tables), for the streams declared FROM TABLE
    without a column list: a temp view's or a catalog table's columns, from `spark.table(name).schema` (Spark
    resolves the name; nothing is read). `spark` is a session, or a function that gives one when first asked,
    so that a program without such a stream never starts Spark."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark

    def session(self) -> Any:
        if callable(self._spark):
            self._spark = self._spark()
        return self._spark

    def columns(self, identifier: str) -> tuple[Column, ...] | None:
        from pyspark.errors import AnalysisException

        session = self.session()
        try:
            schema = session.table(identifier).schema
        except AnalysisException as error:
            condition = getattr(error, "getCondition", error.getErrorClass)()
            if condition in ("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND", "CATALOG_NOT_FOUND"):
                return None
            first = (str(error).strip().splitlines() or [""])[0]
            raise WQLRuntimeError(f"cannot read table {identifier} from Spark's catalog: {first}") from None
        return stream_from_spark(identifier, schema).columns

    def names(self) -> list[str]:
        try:
            return sorted({table.name for table in self.session().catalog.listTables()})
        except Exception:  # a hint only: a catalog that cannot list its tables gives none
            return []


def is_dataframe(value: Any) -> bool:
    """A PySpark DataFrame, classic or Spark Connect's (which is not a subclass of the classic one)."""
    from pyspark.sql import DataFrame

    if isinstance(value, DataFrame):
        return True
    try:
        from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame
    except ImportError:  # Spark Connect's client packages are not installed
        return False
    return isinstance(value, ConnectFrame)
