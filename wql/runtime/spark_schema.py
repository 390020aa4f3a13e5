"""Spark schemas (of DataFrames handed to the API) as compiler streams."""

from __future__ import annotations

from typing import Any

from wql.compiler.schema import Column, Stream
from wql.grammar.errors import WQLTypeError

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
