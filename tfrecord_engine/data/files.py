"""A dataset's files, opened: their indexes, their readers, and reads by record number.

Records are numbered across the files, one file after the other (file ``f`` holds the
numbers ``[starts[f], starts[f + 1])``). :class:`DatasetFiles` maps those numbers to
(file, record in the file) and reads them through each file's reader
(:func:`open_records`: :class:`~.local_source.LocalFileRecords`,
:class:`~.fetcher_source.FetcherRecords` or
:class:`~.compressed_source.CompressedFileRecords`); a batch over many uncompressed local
files goes through :class:`~.gather.LocalFilesGather` in one pass. Batches come back as
:class:`~.spans.Spans` where they can (what the decoder takes), else as ``bytes``.
A :class:`~tfrecord_engine.RecordDataset` opens them on first use
(:func:`open_indexes`, then :class:`DatasetFiles`); a view's positions and negative
indices are the dataset's business: here every number is a record of the files.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, cast

import numpy as np

from ..errors import DataLossError, OutOfRangeError, StaleIndexError, TFRecordError
from ..index.sidecar import Index
from ..records import framing
from ..records.compression import Compression
from ..records.recovery import DamageCallback, DamagePolicy, DamageReport
from ..storage import remote
from ..storage.options import StorageOptionsArg
from ..storage.remote import DEFAULT_MAX_GAP
from ..storage.sequential import SequentialRanges
from ..storage.sequential import link as link_sequential
from . import held
from .compressed_source import CompressedFileRecords
from .fetcher_source import FetcherRecords
from .gather import LocalFilesGather
from .held import HeldSpan
from .local_source import LocalFileRecords
from .random_holds import RandomHolds
from .remote_cache import DatasetCache
from .spans import HeldSpans, IntArray, Spans

__all__ = ["DatasetFiles", "FileRecords", "open_indexes", "open_records"]

FileRecords = LocalFileRecords | FetcherRecords | CompressedFileRecords


def open_records(
    index: Index, *, max_gap: int | None = DEFAULT_MAX_GAP, mapped: bool = False
) -> FileRecords:
    """Returns the right random-access reader for an indexed file (local or URL).

    ``mapped`` reads an uncompressed local file straight out of its map (unguarded
    against a file cut meanwhile: ``RecordDataset(..., mapped_reads=True)``).

    ``max_gap`` applies to uncompressed remote files: records of a batch at most that
    many bytes apart are fetched in one request (``None``: one request per record).
    A URL is read with the index's own ``storage_options`` (so a decode worker, which
    gets its parent's indexes, reaches the same store).
    """
    if remote.is_url(index.data_path):
        f = remote.RemoteFile(
            index.data_path,
            identity=index.remote_identity,
            storage_options=index.storage_options,
        )
        if index.remote_identity is None:
            # Pin the object's version now, right after its index was checked, in the
            # process that checked it: every later answer, here and in decode workers
            # (which get this index), must come from it (else RemoteChangedError).
            if f.size != index.data_size:
                raise StaleIndexError(
                    f"{index.data_path}: the object has {f.size} bytes, its index was "
                    f"checked for {index.data_size}: it was replaced since; open the "
                    "dataset again"
                )
            index.remote_identity = f.identity
        if index.compression is Compression.NONE:
            return FetcherRecords(
                index,
                f.fetch,
                max_gap=max_gap,
                max_request=remote.DEFAULT_MAX_REQUEST,
                # Read in order (a sequential epoch), the next spans are already in flight.
                fetch_ranges=SequentialRanges(f.fetch_ranges, index.data_size),
            )
        # The read-ahead stream has file semantics (read, close); it is not an io class.
        return CompressedFileRecords(
            index, fetch=f.fetch, open_stream=lambda: cast("BinaryIO", f.open_stream())
        )
    if index.compression is Compression.NONE:
        if not os.path.exists(index.data_path):
            raise FileNotFoundError(index.data_path)
        return LocalFileRecords(index, mapped=mapped)
    return CompressedFileRecords(index)


def open_indexes(
    paths: Sequence[str],
    *,
    compression: Compression | str,
    on_damage: DamagePolicy,
    on_damage_report: DamageCallback | None,
    save: Any,
    max_record_bytes: int | None,
    cache: DatasetCache | None,
    storage_options: StorageOptionsArg = None,
) -> list[Index]:
    """Every file's index (loaded, or built and saved: :meth:`Index.open`); with a
    ``cache``, cached URLs' indexes name their local copies. A file with records over
    ``max_record_bytes`` is indexed again under ``on_damage`` (a sidecar built without
    the limit still holds them). URLs are reached with ``storage_options``, which every
    index keeps (:attr:`Index.storage_options`)."""

    def open_index(path: str) -> Index:
        return Index.open(
            path,
            compression,
            on_damage=on_damage,
            on_damage_report=on_damage_report,
            save=save,
            storage_options=storage_options,
        )

    opened: Callable[[str], Index] = open_index
    if cache is None:
        indexes = [opened(p) for p in paths]
    else:
        indexes = cache.open_indexes(
            list(paths),
            opened,
            compression=compression,
            on_damage=on_damage,
            on_damage_report=on_damage_report,
        )
    limit = max_record_bytes
    return [
        idx
        if limit is None or len(idx) == 0 or int(idx.lengths.max()) <= limit
        else Index.build(
            idx.data_path,
            idx.compression,
            on_damage=on_damage,
            on_damage_report=on_damage_report,
            max_record_bytes=limit,
            storage_options=idx.storage_options,
        )
        for idx in indexes
    ]


class DatasetFiles:
    """The opened files of a dataset, read by record number across the files.

    Args:
        indexes: every file's index, in file order (a decode worker gets its parent's).
        max_gap: for uncompressed remote files (see :func:`open_records`).
        mapped: uncompressed local files read straight out of their maps (see
            :func:`open_records`).
        holds: the dataset's random holds (:mod:`.random_holds`): used where every file
            is local and uncompressed and the files' data fit in
            :data:`~.held.IN_MEMORY_LIMIT` together.
    """

    def __init__(
        self,
        indexes: Sequence[Index],
        *,
        max_gap: int | None,
        mapped: bool = False,
        holds: RandomHolds | None = None,
    ) -> None:
        readers = [open_records(index, max_gap=max_gap, mapped=mapped) for index in indexes]
        # A sequential epoch reads each remote file ahead into the next one.
        link_sequential([getattr(r, "fetch_ranges", None) for r in readers])
        counts = [len(r.index) for r in readers]
        #: Each file's reader, in file order.
        self.readers: list[FileRecords] = readers
        #: The number of each file's first record, and the total last.
        self.starts: IntArray = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.starts_list: list[int] = self.starts.tolist()  # for ds[i]: bisect on ints
        data_bytes = sum(int(r.index.lengths.sum()) for r in readers)
        #: The mean record's size in bytes.
        self.record_bytes = data_bytes / max(1, sum(counts))
        local = [r for r in readers if isinstance(r, LocalFileRecords)]
        all_local = len(local) == len(readers)
        fits = data_bytes <= held.IN_MEMORY_LIMIT
        #: Random reads slice whole-file copies once they took enough of a file.
        self.random_holds = holds is not None and holds.enabled and all_local and fits
        if holds is not None and self.random_holds:
            for r in local:
                r.enable_random_holds(holds)
        self.gather = (
            LocalFilesGather(local, mapped=mapped) if len(local) == len(readers) > 1 else None
        )

    @property
    def count(self) -> int:
        """The number of records of all the files."""
        return self.starts_list[-1]

    @property
    def indexes(self) -> list[Index]:
        """The index of every file, in file order."""
        return [r.index for r in self.readers]

    def file_of(self, record: int) -> tuple[int, int]:
        """``(file, record within it)`` of ``record`` (a valid number)."""
        f = bisect.bisect_right(self.starts_list, record) - 1
        return f, record - self.starts_list[f]

    def read_one(self, i: int, verify: bool) -> bytes:
        """Record ``i`` (negatives allowed): the per-call path of ``ds[i]``, in Python
        integers (no array set-up), one ``pread`` for a local uncompressed file."""
        readers = self.readers
        starts = self.starts_list
        n = starts[-1]
        if not -n <= i < n:
            raise OutOfRangeError(f"record index {i} out of range for a dataset of {n} records")
        if i < 0:
            i += n
        f = 0 if len(readers) == 1 else bisect.bisect_right(starts, i) - 1
        reader = readers[f]
        local = i - starts[f]
        if isinstance(reader, LocalFileRecords):
            return reader.read_one(local, verify)
        return reader.read(np.array([local], np.int64), verify)[0]

    def held_one(self, i: int, verify: bool) -> HeldSpan | None:
        """Record ``i`` (negatives allowed) as a span of its file's copy in memory
        (``LocalFileRecords.held_one``): ``ds[i]`` decodes it there. ``None``: out of
        range, no such copy, another kind of file (:meth:`read_one` decides)."""
        starts = self.starts_list
        n = starts[-1]
        if not -n <= i < n:
            return None
        if i < 0:
            i += n
        readers = self.readers
        f = 0 if len(readers) == 1 else bisect.bisect_right(starts, i) - 1
        reader = readers[f]
        if not isinstance(reader, LocalFileRecords):
            return None
        return reader.held_one(i - starts[f], verify)

    def read(self, idx: IntArray, verify: bool) -> list[bytes]:
        """The records ``idx`` (valid numbers), in order, CRC-checked."""
        readers = self.readers
        if len(readers) == 1:
            return readers[0].read(idx, verify)
        if len(idx) == 0:
            return []
        file_of = np.searchsorted(self.starts, idx, "right") - 1
        if self.gather is not None:
            return self.gather.read(idx, file_of, verify)
        # Group the batch by file with one sort (datasets often have ~1,000 shards).
        order = np.argsort(file_of, kind="stable")
        files, first = np.unique(file_of[order], return_index=True)
        out: list[bytes] = [b""] * len(idx)
        for f, a, b in zip(
            files.tolist(), first.tolist(), [*first[1:].tolist(), len(idx)], strict=True
        ):
            where = order[a:b]
            got = readers[f].read(idx[where] - self.starts[f], verify)
            for j, rec in zip(where.tolist(), got, strict=True):
                out[j] = rec
        return out

    def spans(self, idx: IntArray, verify: bool) -> Spans | None:
        """The records ``idx`` (valid numbers) as CRC-checked :class:`~.spans.Spans` of
        one buffer, when they lie in uncompressed local files (one file, or many read
        through :class:`~.gather.LocalFilesGather`), else ``None`` (use :meth:`read`)."""
        if len(idx) == 0:
            return None
        readers = self.readers
        if len(readers) == 1:
            f = 0
        else:
            lo = np.searchsorted(self.starts, idx.min(), "right") - 1
            hi = np.searchsorted(self.starts, idx.max(), "right") - 1
            if lo != hi:
                if self.gather is None:
                    return None
                return self.gather.spans(
                    idx, np.searchsorted(self.starts, idx, "right") - 1, verify
                )
            f = int(lo)
        reader = readers[f]
        if not isinstance(reader, LocalFileRecords):
            return None
        return reader.spans(idx - self.starts[f], verify)

    def _few_numbers(self, key: Sequence[int] | IntArray) -> list[int] | None:
        """``key`` (a few numbers, negatives allowed) as valid record numbers in Python
        integers, or ``None``: another key type, an index out of range, files that are
        not local and uncompressed (the batch path decides, and raises)."""
        if not isinstance(self.readers[0], LocalFileRecords):
            return None
        n = self.starts_list[-1]
        local = key.tolist() if isinstance(key, np.ndarray) else list(key)
        # The common case in three quick passes, else index by index.
        common = all(type(i) is int for i in local) and min(local) >= 0 and max(local) < n
        for j, value in enumerate([] if common else local):
            i = value
            if type(i) is not int:
                if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
                    return None
                i = local[j] = int(i)
            if not 0 <= i < n:
                if not -n <= i < 0:
                    return None
                local[j] = i + n
        return local

    def _by_file(self, local: list[int]) -> dict[int, tuple[list[int], list[int]]]:
        """Valid record numbers grouped by file, in the order first met: file ->
        ``(places in local, numbers within the file)``."""
        starts = self.starts_list
        single = len(self.readers) == 1
        by_file: dict[int, tuple[list[int], list[int]]] = {}
        for k, i in enumerate(local):
            f = 0 if single else bisect.bisect_right(starts, i) - 1
            places, mine = by_file.setdefault(f, ([], []))
            places.append(k)
            mine.append(i - starts[f])
        return by_file

    def few_spans(
        self, key: Sequence[int] | IntArray, verify: bool
    ) -> list[tuple[list[int], HeldSpans]] | None:
        """The records ``key`` (a few numbers, negatives allowed) as spans of their files'
        copies in memory, one group a file: ``(places in key, spans)``. ``None`` where a
        file they lie in has no such copy, or as :meth:`read_few` (which then reads them).
        """
        local = self._few_numbers(key)
        if local is None:
            return None
        out = []
        for f, (places, mine) in self._by_file(local).items():
            reader = self.readers[f]
            got = reader.held_spans(mine, verify) if isinstance(reader, LocalFileRecords) else None
            if got is None:
                return None
            out.append((places, got))
        return _joined(out)

    def read_few(self, key: Sequence[int] | IntArray, verify: bool) -> list[bytes] | None:
        """The records ``key`` (a few numbers, negatives allowed) of uncompressed local
        files, read record by record in Python integers, or ``None`` where the batch path
        must decide (another key type, an index out of range, any error: it raises)."""
        readers = self.readers
        local = self._few_numbers(key)
        if local is None:
            return None
        try:
            first = readers[0]
            if len(readers) == 1 and isinstance(first, LocalFileRecords):
                return first.read_few(local, verify)
            # Shards: one read_few per file touched (its CRCs checked together), then
            # the records back in the order asked.
            out: list[bytes] = [b""] * len(local)
            for f, (places, mine) in self._by_file(local).items():
                reader = readers[f]
                if not isinstance(reader, LocalFileRecords):
                    return None
                got = reader.read_few(mine, verify)
                if got is None:
                    return None
                for k, record in zip(places, got, strict=True):
                    out[k] = record
        except TFRecordError:
            return None
        return out

    def salvage(self, idx: IntArray, verify: bool) -> tuple[list[bytes | None], list[DamageReport]]:
        """Reads ``idx`` (valid numbers) one by one: ``None`` and a report for each
        damaged record (the slow path after a batch failed its CRC check under
        ``"stop"``/``"skip"``)."""
        got = [self._read_or_report(i, verify) for i in idx.tolist()]
        reports = [r for r in got if isinstance(r, DamageReport)]
        return [r if isinstance(r, bytes) else None for r in got], reports

    def _read_or_report(self, i: int, verify: bool) -> bytes | DamageReport:
        try:
            return self.read(np.array([i], np.int64), verify)[0]
        except DataLossError as err:
            f, local = self.file_of(i)
            length = int(self.readers[f].index.lengths[local])
            return DamageReport(
                err.path, err.record_index, err.offset, length + framing.FRAME_OVERHEAD, err.reason
            )

    def close(self) -> None:
        """Closes every file (maps, descriptors, held copies)."""
        if self.gather is not None:
            self.gather.close()
        for r in self.readers:
            r.close()


def _joined(groups: list[tuple[list[int], HeldSpans]]) -> list[tuple[list[int], HeldSpans]]:
    """``groups`` (records of several files) as one group where they are all spans of
    one buffer (the region an epoch read its files into, see
    :meth:`LocalFileRecords.held_spans`): one decode call for all of them instead of
    one a file."""
    if len(groups) < 2:
        return groups
    first = groups[0][1]
    if any(spans.array is not first.array for _, spans in groups):
        return groups
    places = [k for p, _ in groups for k in p]
    starts = np.concatenate([spans.starts for _, spans in groups])
    ends = np.concatenate([spans.ends for _, spans in groups])
    return [(places, HeldSpans(first.data, first.array, starts, ends))]
