"""The write side: tasks stage shards and their indexes, the job's commit publishes them.

Each write task encodes its rows (Arrow batches, as Spark hands them) a column at a
time (:mod:`tfrecord_engine.hosts.arrow.writer`) into one shard per partition folder,
written with :class:`~tfrecord_engine.TFRecordWriter` (and its index) into the hidden
staging folder of the job (:mod:`tfrecord_engine.hosts.staging`). The driver's commit
then, for ``mode("overwrite")``, removes the folder's data files, and renames every
staged shard to ``part-<task>-<job>.tfrecord[.gz|.zz]`` (in its ``key=value`` folders
with ``partitionBy``). A failed job (abort) removes the staging folder: it publishes
nothing, and an overwrite removes nothing.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from ...errors import InvalidArgumentError
from ...records.compression import Compression
from ...storage import remote
from ...storage.options import StorageOptionsArg
from ...writing.writer import TFRecordWriter
from ..arrow.writer import check_schema, encode_batch, record_views
from ..staging import Staging
from .files import folder_value
from .options import SourceOptions
from .schema import arrow_of

__all__ = ["StagedShards", "TFRecordWriteJob"]

_EXTENSIONS: Final = {Compression.NONE: "", Compression.GZIP: ".gz", Compression.ZLIB: ".zz"}


@dataclass
class StagedShards(WriterCommitMessage):  # type: ignore[misc]  # Spark's class is untyped
    """What one task staged: per shard its staged name, its folder (relative: the
    partition folders) and its records."""

    task: int
    shards: list[tuple[str, str, int]] = field(default_factory=list)


def _data_files(folder: str, storage_options: StorageOptionsArg = None) -> list[str]:
    """The visible files under ``folder`` (what a read of it would take); a URL is
    listed with ``storage_options``."""
    if remote.is_url(folder):
        fs, inner = remote.filesystem(folder, storage_options)
        found = fs.find(inner) if fs.exists(inner) else []
        base = folder[: len(folder) - len(inner)] if folder.endswith(inner) else ""
        return [
            base + p
            for p in found
            if not any(part.startswith((".", "_")) for part in p[len(inner) :].split("/"))
        ]
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        out += [os.path.join(root, f) for f in files if not f.startswith((".", "_"))]
    return out


class TFRecordWriteJob(DataSourceArrowWriter):  # type: ignore[misc]  # Spark's class is untyped
    """One ``df.write.format("tfrecord")`` job (see the module)."""

    def __init__(self, options: SourceOptions, schema: StructType, overwrite: bool) -> None:
        if len(options.paths) != 1:
            raise InvalidArgumentError(
                f"a write goes to one folder: df.write.format('tfrecord').save(PATH), "
                f"got {list(options.paths)}"
            )
        self.options = options
        self.overwrite = overwrite
        self.token = uuid.uuid4().hex
        self.staging = Staging(options.paths[0], self.token, options.storage_options)
        self.compression = options.codec or Compression.NONE
        names = [f.name for f in schema.fields]
        missing = [c for c in options.partition_by if c not in names]
        if missing:
            raise InvalidArgumentError(f"partitionBy columns {missing} are not in {names}")
        self.arrow = arrow_of(schema)
        self.data_schema = pa.schema([f for f in self.arrow if f.name not in options.partition_by])
        check_schema(self.data_schema, options.record_type)
        self.skip = False
        if not overwrite and options.save_mode != "append" and self._has_data():
            if options.save_mode == "errorifexists":
                raise FileExistsError(
                    f"{self.staging.folder} already holds data (saveMode errorifexists): "
                    "write elsewhere, or use mode('overwrite') or mode('append')"
                )
            self.skip = True  # saveMode ignore: the data there stays, nothing is written

    def _has_data(self) -> bool:
        return bool(_data_files(self.staging.folder, self.staging.storage_options))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedShards:
        """A task: its rows into staged shards, one per partition folder (executor)."""
        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        message = StagedShards(task)
        if self.skip:
            for _ in iterator:
                pass
            return message
        self.staging.create()
        writers: dict[str, tuple[TFRecordWriter, str, list[int]]] = {}
        try:
            for batch in iterator:
                for folder, part in self._split(batch):
                    if folder not in writers:
                        name = f"{task:05d}-{uuid.uuid4().hex[:12]}"
                        path = self.staging.staged(name)
                        w = TFRecordWriter(
                            path,
                            self.compression,
                            index=True,
                            storage_options=self.staging.storage_options,
                        )
                        writers[folder] = (w, name, [0])
                    w, _, count = writers[folder]
                    w.write_many(record_views(encode_batch(part, self.options.record_type)))
                    count[0] += part.num_rows
            for folder, (w, name, count) in writers.items():
                w.close()
                message.shards.append((name, folder, count[0]))
        except BaseException:
            for w, _, _ in writers.values():
                w.abort()
            raise
        return message

    def _split(self, batch: pa.RecordBatch) -> Iterator[tuple[str, pa.RecordBatch]]:
        """The batch's rows per partition folder (``""``: no partitionBy), without the
        partition columns."""
        keys = self.options.partition_by
        data = pa.RecordBatch.from_arrays(
            [batch.column(batch.schema.get_field_index(f.name)) for f in self.data_schema],
            schema=self.data_schema,
        )
        if not keys:
            yield "", data
            return
        table = pa.Table.from_batches([batch]).select(list(keys))
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, row in enumerate(zip(*(table.column(k).to_pylist() for k in keys), strict=True)):
            groups.setdefault(tuple(folder_value(v) for v in row), []).append(i)
        for values, rows in groups.items():
            folder = "/".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))
            yield folder, data.take(pa.array(np.asarray(rows, np.int64)))

    def commit(self, messages: list[StagedShards | None]) -> None:
        """Publishes every staged shard (driver): the job's data appears together."""
        if self.skip:
            self.staging.abort()
            return
        staged = sorted(
            ((m.task, s) for m in messages if m is not None for s in m.shards),
            key=lambda item: (item[0], item[1][1], item[1][0]),
        )
        if self.overwrite:
            for path in _data_files(self.staging.folder, self.staging.storage_options):
                self.staging.remove(path)
        ext = ".tfrecord" + _EXTENSIONS[self.compression]
        moves = []
        for task, (name, folder, _) in staged:
            where = (
                self.staging.join(self.staging.folder, folder) if folder else self.staging.folder
            )
            final = self.staging.join(where, f"part-{task:05d}-{self.token[:12]}-{name[-6:]}{ext}")
            moves.append((name, final))
        self.staging.publish(moves, index=True)

    def abort(self, messages: list[StagedShards | None]) -> None:
        """Removes everything the job staged (driver): nothing is published."""
        del messages
        self.staging.abort()
