"""Spark schemas as Arrow schemas and back, and a schema inferred from a sample.

A read task decodes records straight into Arrow record batches of the Arrow schema that
Spark expects for the DataFrame's schema (``to_arrow_schema``, timestamps in UTC), so
the batches pass Spark's check as they are. Spark has no fixed-size lists: an inferred
``fixed_size_list<T, k>`` is an ``array<T>`` there.

Inference reads the first ``sampleRecords`` records of the first files only (never a
whole dataset: one index per file opened until the sample is full) and applies
``tfr schema``'s rules (:func:`tfrecord_engine.arrow.infer_schema`); raw records
(``ByteArray``) are one ``byteArray`` binary column, as in spark-tfrecord.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

from ...data.dataset import RecordDataset
from ...errors import InvalidArgumentError
from ..arrow.infer import infer_schema
from .files import DataFile, partition_types
from .options import SourceOptions

__all__ = ["BYTE_ARRAY_COLUMN", "arrow_of", "data_fields", "infer_spark_schema", "spark_type_of"]

#: The column of raw records (spark-tfrecord's name).
BYTE_ARRAY_COLUMN: Final = "byteArray"


def arrow_of(schema: StructType) -> Any:
    """The Arrow schema of Spark's batches for ``schema`` (as Spark converts it)."""
    return to_arrow_schema(schema, timezone="UTC")


def _listed(t: Any) -> Any:
    """``t`` with fixed-size and large lists as plain lists (Spark has only arrays)."""
    if pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_listed(t.value_type))
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    return t


def spark_type_of(t: Any) -> Any:
    """The Spark type of an Arrow type (fixed-size lists become arrays)."""
    return from_arrow_type(_listed(t))


def data_fields(schema: StructType, partitions: Sequence[str]) -> StructType:
    """``schema`` without the partition columns (those come from folder names)."""
    return StructType([f for f in schema.fields if f.name not in partitions])


def _sample(files: Sequence[DataFile], options: SourceOptions) -> tuple[list[bytes], str]:
    """The first ``options.sample`` records, opening one file after another."""
    head: list[bytes] = []
    for f in files:
        ds = RecordDataset(
            f.path,
            on_damage=options.on_damage,  # type: ignore[arg-type]
            storage_options=options.storage_options,
        )
        take = min(options.sample - len(head), len(ds))
        head += ds.read_raw(np.arange(take, dtype=np.int64))
        if len(head) >= options.sample:
            break
    return head, files[0].path if files else "sample"


def infer_spark_schema(files: Sequence[DataFile], options: SourceOptions) -> StructType:
    """The schema of the files' records, plus their partition columns (see the module).

    Raises:
        InvalidArgumentError: a key whose type the sample cannot tell (conflicting types,
            only empty Features): pass a schema with ``.schema(...)``.
    """
    columns = [
        StructField(key, LongType() if kind == "long" else StringType(), True)
        for key, kind in partition_types(files).items()
    ]
    if options.record_type == "ByteArray":
        return StructType([StructField(BYTE_ARRAY_COLUMN, BinaryType(), False), *columns])
    head, where = _sample(files, options)
    kind = "sequence" if options.record_type == "SequenceExample" else "example"
    inferred = infer_schema(head, kind, where=where)
    if inferred.unknown:
        key, why = next(iter(sorted(inferred.unknown.items())))
        raise InvalidArgumentError(
            f"feature {key!r}: {why}: give the DataFrame a schema with "
            "spark.read.format('tfrecord').schema(...)"
        )
    taken = {c.name for c in columns}
    fields = [
        StructField(f.name, spark_type_of(f.type), True)
        for f in inferred.schema
        if f.name not in taken
    ]
    return StructType(fields + columns)
