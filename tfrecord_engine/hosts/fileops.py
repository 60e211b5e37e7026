"""Whole-file operations that the Beam transforms run on workers, one file per call.

Beam-free (``tfrecord_engine.beam`` wraps them in transforms): index a file where the
caller's placement says, verify every CRC of a file, count a file's records from its
index, and the seeded global permutation of a reshard. Each returns a small frozen
value that pickles, so it travels between workers as data.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from ..data.dataset import RecordDataset
from ..data.sampler import epoch_order
from ..errors import DataLossError, IndexFormatError, InvalidArgumentError
from ..index.placement import (
    IndexPlacement,
    cache_index_path,
    index_candidates,
    normalize_placement,
)
from ..index.sidecar import Index
from ..records import framing
from ..records.compression import Compression
from ..records.detect import CompressionArg
from ..records.reader import read_records
from ..records.recovery import DamageReport, normalize_policy
from ..storage.options import StorageOptionsArg
from ..writing.writer import TFRecordWriter

__all__ = [
    "FileCount",
    "IndexSummary",
    "PositionTable",
    "ReshardLayout",
    "ShardReport",
    "SortedSpill",
    "check_span",
    "contiguous",
    "count_file",
    "index_file",
    "merge_damage",
    "verify_file",
]

#: ``BuildIndexes``' default: the writer's hidden ``.tfeidx/`` folder beside the data.
DATASET_PLACEMENT: Final[IndexPlacement] = "hidden"


@dataclasses.dataclass(frozen=True, slots=True)
class IndexSummary:
    """One file's index, as :func:`index_file` left it.

    Attributes:
        path: the data file.
        compression: its compression.
        records: records in the index (the intact ones, under ``on_damage="skip"``).
        bytes: the data file's size.
        index: where the index is (the hidden ``.tfeidx/`` folder, an old sidecar, or
            the user's cache entry).
        built: ``True`` when it was built now, ``False`` when a valid one was kept.
        damage: the damaged regions the index leaves out (``on_damage="skip"`` only).
    """

    path: str
    compression: Compression
    records: int
    bytes: int
    index: str
    built: bool
    damage: tuple[DamageReport, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class ShardReport:
    """What reading every record of one file, every CRC checked, found.

    Attributes:
        path: the file.
        compression: its compression.
        records: the intact records read.
        bytes: the file's size on storage.
        damage: each damaged region, as a reader under ``on_damage="skip"`` reports it.
    """

    path: str
    compression: Compression
    records: int
    bytes: int
    damage: tuple[DamageReport, ...] = ()

    @property
    def ok(self) -> bool:
        """No damage found."""
        return not self.damage


@dataclasses.dataclass(frozen=True, slots=True)
class FileCount:
    """The records of one file and where the count came from.

    Attributes:
        path: the file.
        records: its record count.
        from_index: ``True`` when a fresh index gave it (no data read), ``False`` when the
            record headers were walked (no index, or a stale or damaged one).
    """

    path: str
    records: int
    from_index: bool


def _kept(
    path: str,
    kind: Compression,
    placement: IndexPlacement,
    policy: str,
    reports: list[DamageReport],
    *,
    storage_options: StorageOptionsArg,
) -> tuple[str, Index] | None:
    """A valid index of ``path`` at the places ``placement`` covers, and where it is."""
    places = [cache_index_path(path)] if placement == "cache" else index_candidates(path)
    for place in places:
        found: list[DamageReport] = []
        try:
            idx = Index.load(
                path,
                place,
                on_damage=normalize_policy(policy),
                on_damage_report=found.append,
                storage_options=storage_options,
            )
        except (FileNotFoundError, IndexFormatError):
            continue  # none, damaged, stale or not answering the policy: the next place
        if idx.compression is kind:
            reports += found
            return place, idx
    return None


def index_file(
    path: str,
    kind: Compression,
    *,
    placement: str = DATASET_PLACEMENT,
    on_damage: str = "raise",
    force: bool = False,
    storage_options: StorageOptionsArg = None,
) -> IndexSummary:
    """Makes sure ``path`` has a valid index at ``placement``; builds and saves it when not.

    A valid index already there (for ``"hidden"``: the hidden folder or an old sidecar
    beside the data, as ``tfr index`` keeps them) is kept unless ``force``: the writer's
    index holds a GZIP/ZLIB file's restart points, which a rebuild cannot recover. A URL
    is read, and its index saved, with ``storage_options``.

    Raises:
        DataLossError: damage under ``on_damage="raise"``.
    """
    where = normalize_placement(placement)
    policy = normalize_policy(on_damage)
    if policy == "stop":
        raise InvalidArgumentError('BuildIndexes takes on_damage="raise" or "skip", not "stop"')
    reports: list[DamageReport] = []
    found = (
        None
        if force
        else _kept(path, kind, where, policy, reports, storage_options=storage_options)
    )
    if found is not None:
        place, idx = found
        return IndexSummary(path, kind, len(idx), idx.data_size, place, False, tuple(reports))
    idx = Index.build(
        path,
        kind,
        on_damage=policy,
        on_damage_report=reports.append,
        storage_options=storage_options,
    )
    place = idx.save(placement=where)
    return IndexSummary(path, kind, len(idx), idx.data_size, place, True, tuple(reports))


def verify_file(
    path: str, kind: Compression, size: int, storage_options: StorageOptionsArg = None
) -> ShardReport:
    """Reads every record of ``path`` with both CRCs checked; damage is returned, not
    raised (the reader steps over each damaged region to the next intact record)."""
    reports: list[DamageReport] = []
    records = read_records(
        path,
        kind,
        on_damage="skip",
        on_damage_report=reports.append,
        storage_options=storage_options,
    )
    n = sum(1 for _ in records)
    return ShardReport(path, kind, n, size, tuple(reports))


def count_file(
    path: str, kind: CompressionArg, storage_options: StorageOptionsArg = None
) -> FileCount:
    """The records of ``path``: from a fresh index (at any place, the user's cache
    included) without reading data, else by walking the record headers (no index saved:
    a count never writes)."""
    try:
        return FileCount(path, len(Index.load(path, storage_options=storage_options)), True)
    except (FileNotFoundError, IndexFormatError):
        pass  # no index, or a stale or damaged one: count from the data itself
    return FileCount(path, len(Index.build(path, kind, storage_options=storage_options)), False)


@dataclasses.dataclass(frozen=True)
class ReshardLayout:
    """Where each input record goes in a reshard: a pure function of the inputs' record
    counts, the seed and the shard count, so every worker computes the same.

    Inputs are taken in ``paths`` order (sorted by the caller); record ``r`` of input
    ``f`` has the global number ``starts[f] + r``. With ``shuffle`` its output position
    is that number's place in ``epoch_order(total, shuffle=True, seed=seed)``, the
    permutation ``RecordDataset.batches(shuffle=True, seed=seed)`` and ``tfr reshard
    --shuffle`` use; otherwise the number itself. Output shard ``i`` holds positions
    ``[i * total // shards, (i + 1) * total // shards)``: sizes within one record.
    """

    paths: tuple[str, ...]
    counts: tuple[int, ...]
    shards: int
    shuffle: bool
    seed: int

    def __post_init__(self) -> None:
        if len(self.paths) != len(self.counts) or len(set(self.paths)) != len(self.paths):
            raise InvalidArgumentError("a reshard layout needs one count per distinct input")
        if self.shards < 1 or self.seed < 0:
            raise InvalidArgumentError(
                f"need shards >= 1 and seed >= 0, got {self.shards} and {self.seed}"
            )

    @property
    def total(self) -> int:
        """Records of all inputs."""
        return sum(self.counts)

    def start_of(self, path: str) -> int:
        """The global number of the first record of ``path``."""
        i = self.paths.index(path)
        return sum(self.counts[:i])

    def shard_sizes(self) -> list[int]:
        """Records in each output shard (they differ by at most one)."""
        t, n = self.total, self.shards
        return [(i + 1) * t // n - i * t // n for i in range(n)]


class PositionTable:
    """The output positions of a :class:`ReshardLayout`, computed once per worker.

    The inverse of the seeded permutation is held as ``int64``: 8 bytes per input record
    on every worker that reads (16 while it is built).
    """

    def __init__(self, layout: ReshardLayout) -> None:
        total = layout.total
        self._shuffle = layout.shuffle
        self._inverse: npt.NDArray[np.int64] | None = None
        if layout.shuffle:
            order = epoch_order(total, shuffle=True, seed=layout.seed)
            inverse = np.empty(total, dtype=np.int64)
            inverse[order] = np.arange(total, dtype=np.int64)
            self._inverse = inverse
        sizes = layout.shard_sizes()
        self._bounds = np.cumsum([0, *sizes[:-1]], dtype=np.int64)

    def positions(self, first: int, count: int) -> npt.NDArray[np.int64]:
        """Output positions of the global records ``[first, first + count)``."""
        if self._inverse is None:
            return np.arange(first, first + count, dtype=np.int64)
        return self._inverse[first : first + count]

    def shards_of(self, positions: Sequence[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The output shard of each position (an empty shard never gets one)."""
        at = np.searchsorted(self._bounds, np.asarray(positions, dtype=np.int64), side="right")
        return (at - 1).astype(np.int64)


def contiguous(idx: Index) -> bool:
    """Whether ``idx`` describes a clean uncompressed file whose records follow each other
    from byte 0 to the end: then any record boundary it lists is a place a check of the
    file can start at."""
    n = len(idx)
    if idx.compression is not Compression.NONE or idx.damage:
        return False
    if n == 0:
        return idx.data_size == 0
    offsets = idx.offsets.astype(np.int64)
    ends = offsets + idx.lengths.astype(np.int64) + framing.FRAME_OVERHEAD
    return bool(offsets[0] == 0 and np.all(offsets[1:] == ends[:-1]) and ends[-1] == idx.data_size)


def check_span(
    buf: bytes,
    *,
    path: str,
    first: int,
    start: int,
    resync: Callable[[int], tuple[int, int]],
) -> tuple[int, list[DamageReport]]:
    """Checks both CRCs of every record in ``buf``, the bytes ``[start, start + len(buf))``
    of an uncompressed file that begin with record number ``first``.

    Where a header is damaged (its length cannot be trusted), ``resync(offset)`` gives
    the ``(record number, offset)`` of the next record the file's index lists after
    ``offset``. Adjacent damaged records make one region.

    Returns:
        the intact records and the damaged regions (``record_index`` is the number of
        the first damaged record in the file, ``offset`` and ``bytes_skipped`` in bytes).
    """
    view = memoryview(buf)
    end = len(buf)
    pos, i, intact = 0, first, 0
    reports: list[DamageReport] = []

    def damaged(at: int, upto: int, index: int, reason: str) -> None:
        last = reports[-1] if reports else None
        if last is not None and last.offset + (last.bytes_skipped or 0) == start + at:
            reports[-1] = dataclasses.replace(last, bytes_skipped=upto - last.offset)
        else:
            reports.append(DamageReport(path, index, start + at, upto - start - at, reason))

    while pos < end:
        try:
            length = framing.parse_header(
                view[pos : pos + framing.HEADER_SIZE],
                remaining=end - pos - framing.HEADER_SIZE,
                path=path,
                record_index=i,
                offset=start + pos,
            )
        except DataLossError as exc:
            number, offset = resync(start + pos)
            stop = min(offset - start, end)
            damaged(pos, start + stop, i, exc.reason)
            pos, i = stop, number
            continue
        data = view[pos + framing.HEADER_SIZE : pos + framing.HEADER_SIZE + length]
        step = length + framing.FRAME_OVERHEAD
        try:
            framing.check_data(
                data,
                framing.read_footer(view, pos + framing.HEADER_SIZE + length),
                path=path,
                record_index=i,
                offset=start + pos,
            )
        except DataLossError as exc:
            damaged(pos, start + pos + step, i, exc.reason)
        else:
            intact += 1
        pos += step
        i += 1
    return intact, reports


def merge_damage(reports: Sequence[DamageReport]) -> tuple[DamageReport, ...]:
    """Reports sorted by offset, each run of adjacent regions merged into its first."""
    out: list[DamageReport] = []
    for r in sorted(reports, key=lambda r: (r.offset, r.record_index)):
        last = out[-1] if out else None
        if (
            last is not None
            and last.bytes_skipped is not None
            and r.bytes_skipped is not None
            and last.offset + last.bytes_skipped == r.offset
        ):
            out[-1] = dataclasses.replace(last, bytes_skipped=last.bytes_skipped + r.bytes_skipped)
        else:
            out.append(r)
    return tuple(out)


#: Bytes of records a :class:`SortedSpill` holds in memory before it spills to disk.
DEFAULT_SORT_MEMORY: Final = 256 << 20
#: Records read back from a spill file at a time.
_SPILL_BATCH: Final = 4096


class SortedSpill:
    """Records added with their positions in any order, given back sorted by position.

    Up to ``memory_bytes`` of records are held in memory; past that, they (and every
    later one) go to a TFRecord file in a private temporary folder, read back by random
    access in position order. Memory then stays at 8 bytes per record (the positions)
    plus one batch. Use it as a context manager: the folder is removed on exit.
    """

    def __init__(self, memory_bytes: int = DEFAULT_SORT_MEMORY) -> None:
        if memory_bytes < 0:
            raise InvalidArgumentError(f"memory_bytes must be >= 0, got {memory_bytes}")
        self._limit = memory_bytes
        self._positions: list[int] = []
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._folder: str | None = None
        self._spill: TFRecordWriter | None = None

    @property
    def spilled(self) -> bool:
        """Whether the records went to disk."""
        return self._folder is not None

    def add(self, positions: Sequence[int], records: Sequence[bytes]) -> None:
        """Adds ``records[k]`` at ``positions[k]``."""
        if len(positions) != len(records):
            raise InvalidArgumentError(f"{len(positions)} positions for {len(records)} records")
        self._positions += positions
        if self._spill is not None:
            self._spill.write_many(records)
            return
        self._held += records
        self._held_bytes += sum(len(r) for r in records)
        if self._held_bytes > self._limit:
            self._folder = tempfile.mkdtemp(prefix="tfe-sort-")
            self._spill = TFRecordWriter(os.path.join(self._folder, "spill"), index=True)
            self._spill.write_many(self._held)
            self._held, self._held_bytes = [], 0

    def __iter__(self) -> Iterator[bytes]:
        """The records in position order (ties: in the order they were added)."""
        order = np.argsort(np.asarray(self._positions, dtype=np.int64), kind="stable")
        if self._spill is None:
            for i in order.tolist():
                yield self._held[i]
            return
        self._spill.close()
        ds = RecordDataset(self._spill.path, compression=None, save_index=False)
        try:
            for a in range(0, len(order), _SPILL_BATCH):
                yield from ds.__getitems__(order[a : a + _SPILL_BATCH])
        finally:
            ds.close()

    def close(self) -> None:
        """Drops the records and removes the spill folder."""
        spill, self._spill = self._spill, None
        if spill is not None and not spill.closed:
            spill.abort()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
        self._held, self._positions = [], []

    def __enter__(self) -> SortedSpill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
