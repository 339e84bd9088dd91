"""The checkpoint's Arrow types (:mod:`~delta_downgrade.log.format.checkpoint_schema`) as Spark SQL types,
so that the Spark path reads and writes checkpoints in the one schema the Arrow path uses.

Every field is nullable, as in the Arrow schema (PROTOCOL.md "Checkpoint Schema"); map keys are
not (Spark's ``MapType`` has no null keys, and a parquet map's key is required anyway). PySpark is
imported when a type is converted, not with this module: the package does not depend on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql.types import DataType, StructType


def spark_type(typ: pa.DataType) -> "DataType":
    """The Spark type of an Arrow type of the checkpoint schemas (string, int32/int64, bool,
    struct, map, list). Raises ``TypeError`` for any other type: the checkpoint schema has none,
    and a silent guess would write a column no reader expects."""
    from pyspark.sql import types as T

    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return T.StringType()
    if pa.types.is_int64(typ):
        return T.LongType()
    if pa.types.is_int32(typ):
        return T.IntegerType()
    if pa.types.is_boolean(typ):
        return T.BooleanType()
    if pa.types.is_struct(typ):
        return spark_struct(typ)
    if pa.types.is_map(typ):
        return T.MapType(spark_type(typ.key_type), spark_type(typ.item_type), valueContainsNull=True)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return T.ArrayType(spark_type(typ.value_type), containsNull=True)
    raise TypeError(f"no Spark type for the Arrow type {typ} in a checkpoint schema")


def spark_struct(fields: pa.StructType | pa.Schema | Any) -> "StructType":
    """A Spark ``StructType`` of an Arrow struct type or schema, field order kept, every field
    nullable."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f.name, spark_type(f.type), nullable=True) for f in fields])
