"""The read side: partitions cut at record boundaries, tasks yielding Arrow batches.

Planning (on the driver): the files are found (:mod:`.files`), each one's index is
opened (loaded, or built and kept in the index cache), and the files are cut into
pieces of about equal bytes at record boundaries (a GZIP/ZLIB file at its restart
points), at least ``numPartitions`` of them and at most ``maxPartitionBytes`` of record
bytes each: one large file is read by many tasks. Each piece is one Spark partition.

Reading (in a task): the piece's records are read with every CRC checked and decoded
straight into Arrow record batches of the DataFrame's schema
(:mod:`tfrecord_engine.hosts.arrow`); partition columns are constants of the piece.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ...data.dataset import RecordDataset
from ..arrow.reader import ArrowBatches, RangeOrder, make_decoder
from ..splits import open_indexes, plan_pieces
from .files import NULL_VALUE, find_files
from .options import SourceOptions
from .schema import arrow_of, data_fields

__all__ = ["TFRecordPartition", "TFRecordReader"]


@dataclass
class TFRecordPartition(InputPartition):  # type: ignore[misc]  # Spark's class is untyped
    """Records ``[start, stop)`` (half-open) of one file, and its partition values."""

    path: str
    start: int
    stop: int
    partition: tuple[tuple[str, str], ...] = ()


class TFRecordReader(DataSourceReader):  # type: ignore[misc]  # Spark's class is untyped
    """Reads TFRecord files as the DataFrame ``schema`` (see the module)."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def partitions(self) -> list[TFRecordPartition]:
        """The pieces of every file, in file order (driver)."""
        files = find_files(self.options.paths, self.options.storage_options)
        indexes = open_indexes(
            [f.path for f in files],
            "auto" if self.options.codec is None else self.options.codec,
            on_damage="skip" if self.options.on_damage == "skip" else "raise",
            storage_options=self.options.storage_options,
        )
        total = sum(idx.stream_size for idx in indexes)
        wanted = max(
            self.options.num_partitions, math.ceil(total / self.options.max_partition_bytes)
        )
        pieces = plan_pieces(indexes, wanted)
        return [
            TFRecordPartition(indexes[p.file].data_path, p.start, p.stop, files[p.file].partition)
            for p in pieces
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """A task: the piece's rows as Arrow record batches (executor)."""
        if not isinstance(partition, TFRecordPartition):
            return iter(())  # Spark's one empty partition of a read with no records
        return self._read(partition)

    def _read(self, part: TFRecordPartition) -> Iterator[pa.RecordBatch]:
        values = dict(part.partition)
        data = data_fields(self.schema, list(values))
        target = arrow_of(self.schema)
        ds = RecordDataset(
            part.path,
            compression="auto" if self.options.codec is None else self.options.codec,
            on_damage=self.options.on_damage,  # type: ignore[arg-type]
            storage_options=self.options.storage_options,
        )
        raw = self.options.record_type == "ByteArray"
        decoder = make_decoder(
            ds,
            None if raw else arrow_of(data),
            record_type=self.options.record_type,
            record_column=data.fields[0].name if raw else "record",
        )
        batches = ArrowBatches(
            ds, decoder, RangeOrder(part.start, part.stop, self.options.batch_size)
        )
        for batch in batches:
            yield _with_partitions(batch, values, target)


def _with_partitions(batch: pa.RecordBatch, values: dict[str, str], target: Any) -> pa.RecordBatch:
    """``batch`` in ``target``'s column order, with each partition column a constant."""
    columns = []
    for field in target:
        if field.name in values:
            text = values[field.name]
            value: Any = None if text == NULL_VALUE else text
            if value is not None and pa.types.is_integer(field.type):
                value = int(value)
            columns.append(pa.array([value] * batch.num_rows, field.type))
        else:
            column = batch.column(batch.schema.get_field_index(field.name))
            columns.append(column if column.type == field.type else column.cast(field.type))
    return pa.RecordBatch.from_arrays(columns, schema=target)
