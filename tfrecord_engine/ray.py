"""Ray Data over TFRecord files: an index-split reader and an atomic, indexed writer.

Needs the ``ray`` extra (``pip install -e '.[ray]'`` in a clone); importing this module
without Ray raises :class:`~tfrecord_engine.MissingDependencyError` at once. TensorFlow is
never needed.

Reading (:func:`read_tfrecords`, :class:`TFRecordDatasource`): the driver opens every
file's sidecar index (built and saved when missing, see :meth:`tfrecord_engine.Index.open`)
and cuts each file into read tasks at record boundaries, by bytes. A big file is spread
over many tasks; a GZIP/ZLIB file is cut at its restart points (our writer's, or the
member starts of a multi-member GZIP file; a foreign single stream stays one task).
Every task knows its exact row count before anything runs, so ``ds.count()`` reads no
data. Each task reads its records with every CRC
checked and yields Arrow blocks: one ``record`` column of bytes, or one column per
feature of ``features=`` (parsed as :func:`tfrecord_engine.parse_example` parses them).

Writing (:func:`write_tfrecords`, :class:`TFRecordDatasink`): each write task writes its
shards with :class:`tfrecord_engine.TFRecordWriter` (and their indexes) into a hidden
staging folder inside the destination; when every task has succeeded the driver renames
them to their final, deterministic names ``<prefix>-00000-of-00012<suffix>``. A failed
write publishes nothing and removes the staging folder.

At cluster scale: :func:`verify` checks every CRC of every file in Ray tasks and returns
the damage as data; :func:`build_indexes` builds missing sidecars in Ray tasks;
:func:`count` adds up the indexes. docs/frameworks.md ("Ray Data") has the details.
"""

from __future__ import annotations

import importlib.util

from .errors import MissingDependencyError, install_hint


def _installed(name: str) -> bool:
    # find_spec, not an import: the check must stay cheap and must not half-import Ray.
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


if not (_installed("ray") and _installed("pyarrow")):
    raise MissingDependencyError(f"tfrecord_engine.ray needs Ray Data: {install_hint('ray')}")

import contextlib  # noqa: E402 - only once Ray is known to be there
import dataclasses  # noqa: E402
import functools  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Iterable, Iterator, Mapping, Sequence  # noqa: E402
from typing import Any, Final  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
import pyarrow as pa  # noqa: E402
import ray  # noqa: E402
from ray.data import Dataset  # noqa: E402
from ray.data.block import BlockAccessor, BlockMetadata  # noqa: E402
from ray.data.datasource import Datasink, Datasource, ReadTask  # noqa: E402

from .data.dataset import open_records  # noqa: E402
from .errors import DataLossError, InvalidArgumentError  # noqa: E402
from .example.encode import encode_example  # noqa: E402
from .hosts.arrow import records_to_table  # noqa: E402
from .hosts.splits import (  # noqa: E402
    CompressionArg,
    PathArg,
    Piece,
    ReadPolicy,
    blocks_of,
    check_policy,
    compression_of,
    expand_paths,
    open_indexes,
    plan_pieces,
)
from .index.damage import reporter  # noqa: E402
from .index.sidecar import Index, index_path_for  # noqa: E402
from .records import framing  # noqa: E402
from .records.compression import Compression, normalize_compression  # noqa: E402
from .records.reader import read_records  # noqa: E402
from .records.recovery import DamageCallback, DamageReport  # noqa: E402
from .storage import remote  # noqa: E402
from .writing.writer import TFRecordWriter  # noqa: E402

__all__ = [
    "FileCheck",
    "TFRecordDatasink",
    "TFRecordDatasource",
    "build_indexes",
    "count",
    "read_tfrecords",
    "verify",
    "write_tfrecords",
]

#: Rows per block a read task yields at most (blocks also stay under about 64 MiB).
DEFAULT_RECORDS_PER_BLOCK: Final = 4096
# Indexes with more records than this travel to the read tasks through the object store
# (once per node) instead of inside every task of the file.
_INLINE_INDEX_RECORDS: Final = 4096


# ---- reading one piece -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _ReadOptions:
    features: Mapping[str, Any] | None
    on_damage: ReadPolicy
    on_damage_report: DamageCallback | None
    records_per_block: int


def _read_or_salvage(
    reader: Any, local: npt.NDArray[np.int64], options: _ReadOptions
) -> list[bytes]:
    """The records at ``local``, CRC-checked; under ``"skip"`` damaged ones are dropped
    and reported (only a file changed after indexing has any: the index lists intact
    records only)."""
    try:
        records: list[bytes] = reader.read(local, True)
        return records
    except DataLossError:
        if options.on_damage == "raise":
            raise
    report = reporter(options.on_damage_report)
    kept: list[bytes] = []
    for i in local.tolist():
        got = _read_one(reader, i)
        if isinstance(got, DamageReport):
            report(got)
        else:
            kept.append(got)
    return kept


def _read_one(reader: Any, i: int) -> bytes | DamageReport:
    try:
        record: bytes = reader.read(np.array([i], dtype=np.int64), True)[0]
    except DataLossError as err:
        skipped = int(reader.index.lengths[i]) + framing.FRAME_OVERHEAD
        return DamageReport(err.path, err.record_index, err.offset, skipped, err.reason)
    return record


def _read_piece(index: Any, piece: Piece, options: _ReadOptions) -> Iterator[pa.Table]:
    """A read task's body: the piece's records as Arrow tables, block by block."""
    if isinstance(index, ray.ObjectRef):
        index = ray.get(index)
    reader = open_records(index)
    try:
        for a, b in blocks_of(index, piece, options.records_per_block):
            records = _read_or_salvage(reader, np.arange(a, b, dtype=np.int64), options)
            yield records_to_table(records, options.features)
    finally:
        reader.close()


# ---- the datasource ----------------------------------------------------------------------


class TFRecordDatasource(Datasource):  # type: ignore[misc]  # Ray's class is untyped here
    """A Ray Data source over indexed TFRecord files (see the module docstring).

    The indexes are opened when the source is created (on the driver), so
    :attr:`num_rows` and every read task's row count are exact before anything runs.

    Args:
        paths_or_globs: paths, globs or folders (see :func:`expand_paths`).
        features: a feature spec mapping (as for :func:`tfrecord_engine.parse_example`):
            rows are then parsed columns; ``None`` gives one ``record`` column of bytes.
        compression: ``"auto"`` (recognised from each file's first bytes), ``None``/``""``,
            ``"GZIP"`` or ``"ZLIB"``.
        on_damage: ``"raise"`` (default) fails the read at the first damaged record;
            ``"skip"`` leaves damaged records out, reports each (driver-side, while
            indexing: ``on_damage_report`` or a :class:`~tfrecord_engine.DamageWarning`)
            and keeps every intact record.
        on_damage_report: receives each :class:`~tfrecord_engine.DamageReport`; it must
            pickle, as damage found by a read task (a file changed after indexing) is
            reported there.
        records_per_block: at most this many rows per block (default 4,096; blocks also
            stay under about 64 MiB of record bytes).

    Attributes:
        paths: the data files, in order.
        indexes: their indexes.
        damage: the damage found while indexing (``"skip"`` only).
    """

    def __init__(
        self,
        paths_or_globs: PathArg | Sequence[PathArg],
        *,
        features: Mapping[str, Any] | None = None,
        compression: CompressionArg = "auto",
        on_damage: str = "raise",
        on_damage_report: DamageCallback | None = None,
        records_per_block: int | None = None,
    ) -> None:
        super().__init__()
        if records_per_block is not None and (
            isinstance(records_per_block, bool) or records_per_block < 1
        ):
            raise InvalidArgumentError(
                f"records_per_block must be an int >= 1 or None, got {records_per_block!r}"
            )
        if features is not None and not features:
            raise InvalidArgumentError("features must name at least one feature, or be None")
        policy = check_policy(on_damage)
        self.paths = expand_paths(paths_or_globs)
        self.damage: list[DamageReport] = []
        user = reporter(on_damage_report)

        def note(report: DamageReport) -> None:
            self.damage.append(report)
            user(report)

        self.indexes = open_indexes(
            self.paths, compression, on_damage=policy, on_damage_report=note
        )
        self._refs: dict[int, Any] = {}
        self._projection_map: dict[str, str] | None = None  # Ray's projection pushdown
        self._options = _ReadOptions(
            features=None if features is None else dict(features),
            on_damage=policy,
            on_damage_report=on_damage_report,
            records_per_block=records_per_block or DEFAULT_RECORDS_PER_BLOCK,
        )

    @property
    def num_rows(self) -> int:
        """The rows the dataset has (records, or under ``"skip"`` the intact records)."""
        return sum(len(idx) for idx in self.indexes)

    def get_name(self) -> str:
        """The name of the read tasks in Ray's progress and stats."""
        return "TFRecordEngine"

    def supports_projection_pushdown(self) -> bool:
        """With ``features``, ``select_columns`` reaches the read: only the columns
        asked for are decoded."""
        return self._options.features is not None

    def _read_options(self) -> _ReadOptions:
        """The options of the read tasks, with the features the projection keeps."""
        features = self._options.features
        keep = self._projection_map
        if features is None or keep is None:
            return self._options
        return dataclasses.replace(
            self._options, features={k: v for k, v in features.items() if k in keep}
        )

    def estimate_inmemory_data_size(self) -> int:
        """The records' bytes (parsed columns are about as big)."""
        return sum(int(idx.lengths.sum()) for idx in self.indexes)

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: int | None = None,
        data_context: Any = None,
    ) -> list[Any]:
        """About ``parallelism`` read tasks, cut at record boundaries by bytes."""
        del data_context
        pieces = plan_pieces(self.indexes, parallelism)
        per_file = np.bincount([p.file for p in pieces], minlength=len(self.indexes))
        tasks = []
        options = self._read_options()
        schema = pa.schema([("record", pa.binary())]) if options.features is None else None
        for piece in pieces:
            idx = self.indexes[piece.file]
            meta = BlockMetadata(
                num_rows=piece.stop - piece.start,
                size_bytes=int(idx.lengths[piece.start : piece.stop].sum()),
                input_files=[idx.data_path],
                exec_stats=None,
            )
            shipped = self._shipped(piece.file, int(per_file[piece.file]))
            read = functools.partial(_read_piece, shipped, piece, options)
            tasks.append(ReadTask(read, meta, schema=schema, per_task_row_limit=per_task_row_limit))
        return tasks

    def _shipped(self, f: int, pieces: int) -> Any:
        """File ``f``'s index as its read tasks get it: inline when small or read by
        one task, else a reference into Ray's object store (put once per source)."""
        idx = self.indexes[f]
        if pieces < 2 or len(idx) <= _INLINE_INDEX_RECORDS:
            return idx
        if f not in self._refs:
            self._refs[f] = ray.put(idx)
        return self._refs[f]


def read_tfrecords(
    paths_or_globs: PathArg | Sequence[PathArg],
    *,
    features: Mapping[str, Any] | None = None,
    compression: CompressionArg = "auto",
    on_damage: str = "raise",
    on_damage_report: DamageCallback | None = None,
    records_per_block: int | None = None,
    override_num_blocks: int | None = None,
    concurrency: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
) -> Dataset:
    """Reads TFRecord files into a :class:`ray.data.Dataset`, every CRC checked.

    Arguments as :class:`TFRecordDatasource`; ``override_num_blocks`` sets the number of
    read tasks (about: a file with fewer records or restart points gets fewer), and
    ``concurrency``/``ray_remote_args`` go to :func:`ray.data.read_datasource`.

    Returns:
        a dataset whose ``count()`` is known without reading: the rows are the records
        (a ``record`` column of bytes) or their parsed features.

    Example:
        >>> import os, tempfile, tfrecord_engine as tfe
        >>> from tfrecord_engine.ray import read_tfrecords
        >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True) as w:
        ...     w.write_many(tfe.encode_example({"x": i}) for i in range(5))
        5
        >>> ds = read_tfrecords(path, features={"x": tfe.FixedLenFeature([], "int64")})
        >>> ds.count(), sorted(int(row["x"]) for row in ds.take_all())
        (5, [0, 1, 2, 3, 4])
    """
    source = TFRecordDatasource(
        paths_or_globs,
        features=features,
        compression=compression,
        on_damage=on_damage,
        on_damage_report=on_damage_report,
        records_per_block=records_per_block,
    )
    dataset: Dataset = ray.data.read_datasource(
        source,
        override_num_blocks=override_num_blocks,
        concurrency=concurrency,
        ray_remote_args=ray_remote_args or {},
    )
    return dataset


# ---- the datasink ------------------------------------------------------------------------


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
    ) -> None:
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
            fs, inner = remote.filesystem(path)
            return bool(fs.exists(inner))
        return os.path.lexists(path)

    def _move(self, src: str, dst: str) -> None:
        """Renames a local file, or moves an object on the store (``fs.mv``: a server-side
        copy and a delete on S3/GCS/Azure, the object appearing whole)."""
        if self._url:
            fs, inner = remote.filesystem(src)
            fs.mv(inner, remote.filesystem(dst)[1])
        else:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.replace(src, dst)

    def _remove_staging(self) -> None:
        if self._url:
            fs, inner = remote.filesystem(self.staging)
            with contextlib.suppress(FileNotFoundError):  # nothing was staged
                fs.rm(inner, recursive=True)
        else:
            shutil.rmtree(self.staging, ignore_errors=True)

    def on_write_start(self, schema: Any = None) -> None:
        """Creates the destination and its staging folder (driver); on a store, where
        folders need not exist, asks fsspec to make them (a no-op on object stores)."""
        del schema
        if self._url:
            fs, inner = remote.filesystem(self.staging)
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
                            self._join(self.staging, name), self.compression, index=self.index
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
    )
    ds.write_datasink(sink, concurrency=concurrency, ray_remote_args=ray_remote_args or {})
    return list(sink.paths)


# ---- cluster-scale checks ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class FileCheck:
    """What :func:`verify` (or :func:`build_indexes`) found in one file.

    Attributes:
        path: the file.
        compression: its compression.
        records: the intact records (every CRC checked).
        damage: each damaged region, as a reader under ``"skip"`` reports it.
    """

    path: str
    compression: Compression
    records: int
    damage: tuple[DamageReport, ...]

    @property
    def ok(self) -> bool:
        """No damage."""
        return not self.damage


def _check_file(path: str, compression: CompressionArg) -> FileCheck:
    kind = compression_of(path, compression)
    reports: list[DamageReport] = []
    n = 0
    for _ in read_records(path, kind, on_damage="skip", on_damage_report=reports.append):
        n += 1
    return FileCheck(path, kind, n, tuple(reports))


def verify(
    paths_or_globs: PathArg | Sequence[PathArg],
    compression: CompressionArg = "auto",
    *,
    num_cpus: float = 1,
) -> list[FileCheck]:
    """Reads every record of every file in Ray tasks (one per file), every CRC checked.

    Damage is data here, not an error: each file's :class:`FileCheck` lists it.

    Returns:
        one report per file, in file order.
    """
    paths = expand_paths(paths_or_globs)
    check: Any = ray.remote(num_cpus=num_cpus)(_check_file)
    got: list[FileCheck] = ray.get([check.remote(p, compression) for p in paths])
    return got


def _index_file(path: str, compression: CompressionArg, on_damage: ReadPolicy) -> FileCheck:
    kind = compression_of(path, compression)
    reports: list[DamageReport] = []
    # Saved in the hidden .tfeidx/ folder beside the data, where every node (and the
    # driver's read_tfrecords) finds it; not in the worker's own user cache.
    idx = Index.open(
        path, kind, on_damage=on_damage, on_damage_report=reports.append, save="hidden"
    )
    return FileCheck(path, kind, len(idx), tuple(reports))


def build_indexes(
    paths_or_globs: PathArg | Sequence[PathArg],
    compression: CompressionArg = "auto",
    *,
    on_damage: str = "raise",
    num_cpus: float = 1,
) -> list[FileCheck]:
    """Opens every file's index in Ray tasks (one per file), building and saving each
    missing or stale sidecar there.

    Run it once over many unindexed shards: :func:`read_tfrecords` then only loads the
    sidecars on the driver instead of indexing every file itself. Under ``"skip"``
    each index is built with every CRC checked, and the damage it leaves out is
    returned, not raised.

    Returns:
        one :class:`FileCheck` per file, in file order: its (intact) record count and
        the damage indexing found.
    """
    policy = check_policy(on_damage)
    paths = expand_paths(paths_or_globs)
    task: Any = ray.remote(num_cpus=num_cpus)(_index_file)
    got: list[FileCheck] = ray.get([task.remote(p, compression, policy) for p in paths])
    return got


def count(
    paths_or_globs: PathArg | Sequence[PathArg],
    compression: CompressionArg = "auto",
) -> int:
    """The number of records of the files, from their indexes (built when missing).

    A fresh sidecar index answers without reading any data.
    """
    return sum(len(idx) for idx in open_indexes(expand_paths(paths_or_globs), compression))
