"""Random access to the records of one indexed file: local ``mmap`` or a byte-range
fetcher (GZIP/ZLIB files: :mod:`tfrecord_engine.data.compressed_source`).

Every reader takes a batch of record indices *within its file* and returns the records'
bytes in the same order, with the data CRCs checked in bulk: the footers are gathered
with numpy, one ``crc32c`` call per record is the only per-record work besides slicing.
"""

from __future__ import annotations

import contextlib
import mmap
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol, cast, runtime_checkable

import crc32c as _crc32c
import numpy as np
import numpy.typing as npt

from ..errors import StaleIndexError
from ..index.sidecar import Index
from ..records import framing
from ..records.framing import crc_spans
from ..storage.ranges import coalesce

__all__ = [
    "Fetcher",
    "FetcherRecords",
    "LocalFileRecords",
    "LocalFilesGather",
    "RandomAccessSource",
    "RangesFetcher",
    "crc_spans",
    "verify_batch",
]

#: Reads the half-open byte range ``[offset, offset + size)`` of one file.
Fetcher = Callable[[int, int], bytes]
#: Reads the half-open byte ranges ``[starts[i], ends[i])`` of one file, together.
RangesFetcher = Callable[[list[int], list[int]], list[bytes]]
IntArray = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
_H = framing.HEADER_SIZE
_F = framing.FOOTER_SIZE
_FOOTER_AT = np.arange(_F, dtype=np.int64)


@runtime_checkable
class RandomAccessSource(Protocol):
    """What map-style loaders (PyTorch ``Dataset``, Grain sources) need."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> object: ...

    def __getitems__(self, indices: Sequence[int]) -> object: ...


def verify_batch(
    records: list[bytes],
    stored: npt.NDArray[np.uint32],
    *,
    path: str,
    local: IntArray,
    offsets: npt.NDArray[np.uint64],
) -> None:
    """Raises :class:`CorruptedRecordError` for the first record whose CRC mismatches."""
    crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
    bad = np.flatnonzero(framing.mask_crc_array(crcs) != stored)
    if len(bad):
        j = int(bad[0])
        framing.check_data(
            records[j],
            int(stored[j]),
            path=path,
            record_index=int(local[j]),
            offset=int(offsets[j]),
        )


class LocalFileRecords:
    """Records of one uncompressed local file, read through ``mmap`` (opened lazily)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.path = index.data_path
        self._map: mmap.mmap | None = None
        self._raw: npt.NDArray[np.uint8] | None = None
        self._lock = threading.Lock()  # loader threads may open the file together
        # Payload spans as int64, computed once: a batch then costs two gathers.
        self._start = index.offsets.astype(np.int64) + _H
        self._end = self._start + index.lengths.astype(np.int64)

    def _open(self) -> tuple[mmap.mmap, npt.NDArray[np.uint8]]:
        with self._lock:
            return self._open_locked()

    def _open_locked(self) -> tuple[mmap.mmap, npt.NDArray[np.uint8]]:
        if self._map is None or self._raw is None:
            with open(self.path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self._raw = np.frombuffer(self._map, dtype=np.uint8)
            if len(self._map) != self.index.data_size:
                size = len(self._map)
                self.close()
                raise StaleIndexError(
                    f"{self.path}: the file has {size} bytes, it had {self.index.data_size} "
                    "when indexed (changed while in use?)"
                )
        return self._map, self._raw

    def read(self, local: IntArray, verify: bool = True) -> list[bytes]:
        """Returns the records ``local`` (indices within this file), CRC-checked."""
        if len(local) == 0:
            return []  # also spares mapping an empty file, which mmap refuses
        buf, raw = self._open()
        ends = self._end[local]
        records = [
            buf[a:b] for a, b in zip(self._start[local].tolist(), ends.tolist(), strict=True)
        ]
        if verify:
            stored = raw[ends[:, None] + _FOOTER_AT].view("<u4").reshape(-1)
            crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
            if not np.array_equal(framing.mask_crc_array(crcs), stored):
                verify_batch(
                    records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
                )
        return records

    def spans(self, local: IntArray, verify: bool = True) -> tuple[U8, IntArray, IntArray]:
        """The records ``local`` as spans of the mapped file, CRC-checked, without copies.

        Returns:
            ``(buf, starts, ends)``: record ``j`` is ``buf[starts[j]:ends[j]]``, where
            ``buf`` is the whole file as ``uint8`` (valid until :meth:`close`).
        """
        if len(local) == 0:
            return np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)
        _, raw = self._open()
        starts = self._start[local]
        ends = self._end[local]
        if verify:
            stored = raw[ends[:, None] + _FOOTER_AT].view("<u4").reshape(-1)
            if not np.array_equal(crc_spans(raw, starts, ends), stored):
                self.read(local, verify=True)  # raises, naming the first bad record
        return raw, starts, ends

    def close(self) -> None:
        self._raw = None  # the numpy view pins the mapping; drop it first
        if self._map is not None:
            mapping, self._map = self._map, None
            # Arrays viewing the file may still be alive (held by the caller, or by the
            # traceback of an error raised through ``close``): then the mapping is
            # released when the last of them goes.
            with contextlib.suppress(BufferError):
                mapping.close()


class LocalFilesGather:
    """Batched reads across many uncompressed local files, in one pass over the batch.

    Datasets often come as ~1,000 shards, so a random batch touches hundreds of files
    with one or two records each: grouping by file would pay numpy's per-call overhead
    per file. Here record spans live in dataset-wide arrays and each record is sliced
    straight from its file's map.
    """

    def __init__(self, readers: Sequence[LocalFileRecords]) -> None:
        self._readers = list(readers)
        self._first = np.concatenate([[0], np.cumsum([len(r.index) for r in readers])]).astype(
            np.int64
        )
        self._start = np.concatenate([r._start for r in readers]).astype(np.int64)
        self._end = np.concatenate([r._end for r in readers]).astype(np.int64)
        self._maps: list[mmap.mmap | None] = [None] * len(self._readers)
        self._missing = len(self._readers)  # files not mapped yet

    def read(self, idx: IntArray, file_of: IntArray, verify: bool = True) -> list[bytes]:
        """Returns the records at dataset-wide indices ``idx`` (files ``file_of``)."""
        if self._missing:
            for f in np.unique(file_of).tolist():
                if self._maps[f] is None and len(self._readers[f].index):
                    self._maps[f] = self._readers[f]._open()[0]
            self._missing = sum(
                m is None and len(r.index) > 0
                for m, r in zip(self._maps, self._readers, strict=True)
            )
        # Every file a record of this batch lives in is mapped now.
        maps = cast("list[mmap.mmap]", self._maps)
        files = file_of.tolist()
        ends = self._end[idx].tolist()
        starts = self._start[idx].tolist()
        records = [maps[f][a:b] for f, a, b in zip(files, starts, ends, strict=True)]
        if verify and records:
            footers = b"".join([maps[f][e : e + _F] for f, e in zip(files, ends, strict=True)])
            stored = np.frombuffer(footers, dtype="<u4")
            crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
            bad = np.flatnonzero(framing.mask_crc_array(crcs) != stored)
            if len(bad):
                j = int(bad[0])
                f = files[j]
                # The file's own reader raises the error naming file, record, offset.
                self._readers[f].read(idx[j : j + 1] - self._first[f], verify=True)
        return records

    def close(self) -> None:
        """Forgets the maps (their readers own and close them)."""
        self._maps = [None] * len(self._readers)
        self._missing = len(self._readers)


class FetcherRecords:
    """Records of one uncompressed file read through a byte-range :data:`Fetcher`.

    Two request plans, both counted in ``requests`` and ``bytes_fetched``:

    - default: the records of a batch that lie back to back (or within ``max_gap``
      bytes) are coalesced into one request (:func:`~tfrecord_engine.storage.ranges.coalesce`;
      ``max_gap=None``: one request per record; a request grows past ``max_request``
      bytes only for a single larger record). With ``fetch_ranges`` the requests of
      a batch are handed over together (fsspec's ``cat_ranges`` sends them
      concurrently);
    - ``block_records=B``: whole aligned blocks of ``B`` records are fetched and the
      last ``cache_blocks`` are kept, the I/O model of
      :class:`~tfrecord_engine.data.sampler.BlockShuffle` (with ``cache_blocks`` at least its
      window, each block is fetched once per epoch).
    """

    def __init__(
        self,
        index: Index,
        fetch: Fetcher,
        *,
        max_gap: int | None = 0,
        max_request: int | None = None,
        fetch_ranges: RangesFetcher | None = None,
        block_records: int | None = None,
        cache_blocks: int = 32,
    ) -> None:
        self.index = index
        self.path = index.data_path
        self.fetch = fetch
        self.fetch_ranges = fetch_ranges
        self.max_gap = max_gap
        self.max_request = max_request
        self.block_records = block_records
        self.requests = 0
        self.bytes_fetched = 0
        self._start = index.offsets.astype(np.int64)
        self._end = self._start + index.lengths.astype(np.int64) + _H + _F
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cache_blocks = cache_blocks

    def _get(self, start: int, stop: int) -> bytes:
        self.requests += 1
        self.bytes_fetched += stop - start
        return self.fetch(start, stop - start)

    def _framed_coalesced(self, local: IntArray) -> list[bytes]:
        offsets, ends = self._start[local], self._end[local]
        plan = coalesce(offsets, ends, self.max_gap, self.max_request)
        if self.fetch_ranges is not None:
            self.requests += len(plan.starts)
            self.bytes_fetched += int(np.sum(plan.ends - plan.starts))
            chunks = self.fetch_ranges(plan.starts.tolist(), plan.ends.tolist())
        else:
            chunks = [
                self._get(a, b)
                for a, b in zip(plan.starts.tolist(), plan.ends.tolist(), strict=True)
            ]
        rel = (offsets - plan.starts[plan.request_of]).tolist()
        size = (ends - offsets).tolist()
        return [
            chunks[g][r : r + k]
            for g, r, k in zip(plan.request_of.tolist(), rel, size, strict=True)
        ]

    def _framed_blocks(self, local: IntArray, size: int) -> list[bytes]:
        blocks = local // size
        held: dict[int, bytes] = {}
        for b in np.unique(blocks).tolist():
            data = self._cache.get(b)
            if data is None:
                last = min((b + 1) * size, len(self._start)) - 1
                data = self._get(int(self._start[b * size]), int(self._end[last]))
                self._cache[b] = data
                if len(self._cache) > self._cache_blocks:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(b)
            held[b] = data
        base = self._start[blocks * size]
        rel = (self._start[local] - base).tolist()
        end = (self._end[local] - base).tolist()
        return [held[b][r:e] for b, r, e in zip(blocks.tolist(), rel, end, strict=True)]

    def read(self, local: IntArray, verify: bool = True) -> list[bytes]:
        """Returns the records ``local`` (indices within this file), CRC-checked."""
        if len(local) == 0:
            return []
        if self.block_records is None:
            framed = self._framed_coalesced(local)
        else:
            framed = self._framed_blocks(local, self.block_records)
        records = [f[_H:-_F] for f in framed]
        if verify:
            stored = np.array([framing.read_footer(f, len(f) - _F) for f in framed], np.uint32)
            verify_batch(
                records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
            )
        return records

    def close(self) -> None:
        """Drops cached blocks (the fetcher owns its connections)."""
        self._cache.clear()
