"""Reading with Ray Data: ``TFRecordDatasource`` and ``read_tfrecords``.

The driver opens every file's index and cuts the files into read tasks at record
boundaries (restart points for GZIP/ZLIB), each with its exact row count; a task reads
its records with every CRC checked and yields Arrow blocks.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import ray
from ray.data import Dataset
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasource, ReadTask

from ...data.dataset import open_records
from ...errors import DataLossError, InvalidArgumentError
from ...index.damage import reporter
from ...records import framing
from ...records.recovery import DamageCallback, DamageReport
from ...storage.options import StorageOptionsArg
from ..arrow import records_to_table
from ..splits import (
    CompressionArg,
    PathArg,
    Piece,
    ReadPolicy,
    blocks_of,
    check_policy,
    expand_paths,
    open_indexes,
    plan_pieces,
)

__all__ = ["DEFAULT_RECORDS_PER_BLOCK", "TFRecordDatasource", "read_tfrecords"]


#: Rows per block a read task yields at most (blocks also stay under about 64 MiB).
DEFAULT_RECORDS_PER_BLOCK: Final = 4096
# Indexes with more records than this travel to the read tasks through the object store
# (once per node) instead of inside every task of the file.
_INLINE_INDEX_RECORDS: Final = 4096


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
        storage_options: for URLs, fsspec keyword arguments for their filesystem (see
            :mod:`tfrecord_engine.storage.options`): used for globs and indexes on the
            driver, and kept by each index, so read tasks in Ray's workers reach the
            same store (nothing needs to be set in their environment).

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
        storage_options: StorageOptionsArg = None,
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
        self.paths = expand_paths(paths_or_globs, storage_options)
        self.damage: list[DamageReport] = []
        user = reporter(on_damage_report)

        def note(report: DamageReport) -> None:
            self.damage.append(report)
            user(report)

        self.indexes = open_indexes(
            self.paths,
            compression,
            on_damage=policy,
            on_damage_report=note,
            storage_options=storage_options,
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
    storage_options: StorageOptionsArg = None,
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
        storage_options=storage_options,
    )
    dataset: Dataset = ray.data.read_datasource(
        source,
        override_num_blocks=override_num_blocks,
        concurrency=concurrency,
        ray_remote_args=ray_remote_args or {},
    )
    return dataset
