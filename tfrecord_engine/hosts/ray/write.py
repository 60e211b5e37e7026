"""Writing with Ray Data: ``TFRecordDatasink`` and ``write_tfrecords`` (shards staged
by the write tasks, published under their final names by the driver only on success).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import uuid
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
from ray.data import Dataset
from ray.data.block import BlockAccessor
from ray.data.datasource import Datasink

from ...errors import InvalidArgumentError
from ...example.encode import encode_example
from ...index.sidecar import index_path_for
from ...records.compression import Compression, normalize_compression
from ...storage import remote
from ...storage.options import StorageOptions, StorageOptionsArg, normalize_storage_options
from ...writing.writer import TFRecordWriter
from ..splits import CompressionArg, PathArg

__all__ = ["TFRecordDatasink", "write_tfrecords"]


@dataclasses.dataclass(frozen=True, slots=True)
class _Staged:
    """A shard a write task published in the staging folder."""

    task: int
    part: int
    name: str
    records: int


def _records_of(block: Any) -> list[bytes]:
    """A block's rows as records: its ``record`` column when that is all it has, else
    each row encoded as an Example (keys sorted; nulls left out)."""
    table = BlockAccessor.for_block(block).to_arrow()
    if table.column_names == ["record"]:
        column = table.column("record")
        if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
            raise InvalidArgumentError(
                f"a 'record' column must hold bytes to be written as records, not {column.type}"
            )
        if column.null_count:
            raise InvalidArgumentError("the 'record' column holds nulls: a record needs bytes")
        records: list[bytes] = column.to_pylist()
        return records
    batch = BlockAccessor.for_block(table).to_batch_format("numpy")
    columns: dict[str, Any] = {}
    for k in sorted(batch):
        # numpy turns an int column with nulls into floats (NaN): keep Arrow's values.
        nulls = table.column(k).null_count
        columns[k] = table.column(k).to_pylist() if nulls else batch[k]
    return [
        encode_example({k: v[i] for k, v in columns.items() if v[i] is not None})
        for i in range(table.num_rows)
    ]


class TFRecordDatasink(Datasink):  # type: ignore[misc]  # Ray's class is untyped here
    """A Ray Data sink writing indexed TFRecord shards, published only on success.

    Args:
        path: the destination folder (created if missing), or a writable fsspec URL
            (``s3://``, ``gs://``, ``memory://``, ...; HTTP(S) is refused here). Tasks
            write into a hidden staging folder beneath it (``.tfe-staging-<id>``); on a
            store the publish is one ``fs.mv`` per shard and per index (a server-side
            copy on S3/GCS/Azure: each object appears whole). Shards already there
            under the same names make the publish fail before anything is moved.
        compression: ``None``/``""``, ``"GZIP"`` or ``"ZLIB"``.
        index: write each shard's sidecar index beside it.
        num_rows_per_file: at most this many records per shard (Ray hands each write
            task at least that many rows, so shards are full but the last of a task);
            ``None``: one shard per write task.
        file_prefix: shard names are ``<prefix>-<i:05d>-of-<n:05d><suffix>``.
        suffix: ``.tfrecord`` by default (``.tfrecord.gz`` for GZIP,
            ``.tfrecord.zz`` for ZLIB).
        storage_options: for a URL, fsspec keyword arguments for its filesystem (see
            :mod:`tfrecord_engine.storage.options`): the sink pickles them to its write
            tasks, whose writers use them, as do the driver's moves.

    Attributes:
        paths: the published shards, in order (after the write).
    """

    def __init__(
        self,
        path: PathArg,
        *,
        compression: CompressionArg = None,
        index: bool = True,
        num_rows_per_file: int | None = None,
        file_prefix: str = "part",
        suffix: str | None = None,
        storage_options: StorageOptionsArg = None,
    ) -> None:
        self.storage_options: StorageOptions | None = normalize_storage_options(storage_options)
        where = os.fspath(path)
        self._url = remote.is_url(where)
        if self._url:
            remote.check_writable(where)  # HTTP(S): refused here, not in every task
            self.path = where.rstrip("/")
        else:
            self.path = os.path.abspath(remote.local_path(where))
        if num_rows_per_file is not None and (
            isinstance(num_rows_per_file, bool) or num_rows_per_file < 1
        ):
            raise InvalidArgumentError(
                f"num_rows_per_file must be an int >= 1 or None, got {num_rows_per_file!r}"
            )
        if not file_prefix or os.sep in file_prefix or file_prefix.startswith((".", "_")):
            raise InvalidArgumentError(
                f"file_prefix must be a plain visible name, got {file_prefix!r}"
            )
        self.compression = normalize_compression(compression)
        default = {Compression.NONE: ".tfrecord", Compression.GZIP: ".tfrecord.gz"}
        self.suffix = default.get(self.compression, ".tfrecord.zz") if suffix is None else suffix
        self.index = index
        self.num_rows_per_file = num_rows_per_file
        self.file_prefix = file_prefix
        # Hidden: no glob of TensorFlow, Beam, Ray or a shell picks up a staged shard.
        self.staging = self._join(self.path, f".tfe-staging-{uuid.uuid4().hex}")
        self.paths: list[str] = []

    def get_name(self) -> str:
        """The name of the write tasks in Ray's progress and stats."""
        return "TFRecordEngine"

    @property
    def min_rows_per_write(self) -> int | None:
        """Rows Ray bundles into each write task (``num_rows_per_file``)."""
        return self.num_rows_per_file

    def _join(self, folder: str, name: str) -> str:
        return f"{folder}/{name}" if self._url else os.path.join(folder, name)

    def _exists(self, path: str) -> bool:
        if self._url:
            fs, inner = remote.filesystem(path, self.storage_options)
            return bool(fs.exists(inner))
        return os.path.lexists(path)

    def _move(self, src: str, dst: str) -> None:
        """Renames a local file, or moves an object on the store (``fs.mv``: a server-side
        copy and a delete on S3/GCS/Azure, the object appearing whole)."""
        if self._url:
            fs, inner = remote.filesystem(src, self.storage_options)
            fs.mv(inner, remote.filesystem(dst, self.storage_options)[1])
        else:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.replace(src, dst)

    def _remove_staging(self) -> None:
        if self._url:
            fs, inner = remote.filesystem(self.staging, self.storage_options)
            with contextlib.suppress(FileNotFoundError):  # nothing was staged
                fs.rm(inner, recursive=True)
        else:
            shutil.rmtree(self.staging, ignore_errors=True)

    def on_write_start(self, schema: Any = None) -> None:
        """Creates the destination and its staging folder (driver); on a store, where
        folders need not exist, asks fsspec to make them (a no-op on object stores)."""
        del schema
        if self._url:
            fs, inner = remote.filesystem(self.staging, self.storage_options)
            fs.makedirs(inner, exist_ok=True)
        else:
            os.makedirs(self.staging, exist_ok=True)

    def write(self, blocks: Iterable[Any], ctx: Any) -> list[_Staged]:
        """One write task: its rows into staged shards ``<task>-<part>`` (worker)."""
        task = int(ctx.task_idx)
        limit = self.num_rows_per_file
        staged: list[_Staged] = []
        writer: TFRecordWriter | None = None
        in_file = 0

        def close() -> None:
            nonlocal writer
            if writer is not None:
                writer.close()
                name = (
                    writer.path.rsplit("/", 1)[-1] if self._url else os.path.basename(writer.path)
                )
                staged.append(_Staged(task, len(staged), name, in_file))
                writer = None

        try:
            for block in blocks:
                records = _records_of(block)
                while records:
                    if writer is None:
                        name = f"{task:06d}-{len(staged):06d}.tfrecord"
                        writer = TFRecordWriter(
                            self._join(self.staging, name),
                            self.compression,
                            index=self.index,
                            storage_options=self.storage_options,
                        )
                        in_file = 0
                    room = len(records) if limit is None else limit - in_file
                    writer.write_many(records[:room])
                    in_file += min(room, len(records))
                    records = records[room:]
                    if limit is not None and in_file == limit:
                        close()
            close()
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        return staged

    def on_write_complete(self, write_result: Any) -> None:
        """Renames every staged shard (and index) to its final name (driver).

        Raises:
            FileExistsError: a final name is taken; nothing is renamed.
        """
        staged = sorted(
            (s for task in write_result.write_returns for s in task),
            key=lambda s: (s.task, s.part),
        )
        n = len(staged)
        finals = [
            self._join(self.path, f"{self.file_prefix}-{i:05d}-of-{n:05d}{self.suffix}")
            for i in range(n)
        ]
        try:
            taken = [p for p in finals if self._exists(p)]
            if taken:
                raise FileExistsError(
                    f"{taken[0]} already exists ({len(taken)} of the {n} shard names are "
                    "taken): write to an empty folder"
                )
            for s, final in zip(staged, finals, strict=True):
                src = self._join(self.staging, s.name)
                self._move(src, final)
                if self.index:
                    # The index holds no path: moved to its data's hidden .tfeidx/
                    # folder it stays valid (data first: an index never names a
                    # missing file).
                    self._move(index_path_for(src), index_path_for(final))
            if not self._url:
                _fsync_dir(self.path)
        finally:
            self._remove_staging()
        self.paths = finals

    def on_write_failed(self, error: Exception) -> None:
        """Removes the staging folder: nothing of a failed write is published (driver)."""
        del error
        self._remove_staging()


def _fsync_dir(path: str) -> None:
    with contextlib.suppress(OSError):  # not every file system syncs folders
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_tfrecords(
    ds: Dataset,
    path: PathArg,
    *,
    compression: CompressionArg = None,
    index: bool = True,
    num_rows_per_file: int | None = None,
    file_prefix: str = "part",
    concurrency: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
    storage_options: StorageOptionsArg = None,
) -> list[str]:
    """Writes a dataset as TFRecord shards (with indexes) into the folder ``path``.

    A dataset whose only column is ``record`` (bytes) is written record for record;
    any other row is encoded as an Example (:func:`tfrecord_engine.encode_example`,
    keys sorted, nulls left out). Arguments as :class:`TFRecordDatasink`.

    Returns:
        the published shards, in order. Nothing is published unless every write task
        succeeded.
    """
    sink = TFRecordDatasink(
        path,
        compression=compression,
        index=index,
        num_rows_per_file=num_rows_per_file,
        file_prefix=file_prefix,
        storage_options=storage_options,
    )
    ds.write_datasink(sink, concurrency=concurrency, ray_remote_args=ray_remote_args or {})
    return list(sink.paths)
