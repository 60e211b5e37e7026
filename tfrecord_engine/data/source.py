"""Random access to the records of one indexed file: local ``pread`` or a byte-range
fetcher (GZIP/ZLIB files: :mod:`tfrecord_engine.data.compressed_source`).

Every reader takes a batch of record indices *within its file* and returns the records'
bytes in the same order, with the data CRCs checked in bulk: the footers are gathered
with numpy, one ``crc32c`` call per record is the only per-record work besides slicing.
"""

from __future__ import annotations

import contextlib
import os
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
# Average record size from which a batch is read record by record (see _read_big).
_BIG_RECORD = 16 << 10


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


def _stale(index: Index, local: IntArray | None, detail: str) -> StaleIndexError:
    """The error for a file that no longer matches its index, at the record asked for."""
    first = int(local[0]) if local is not None and len(local) else 0
    offset = int(index.offsets[first]) if first < len(index) else index.data_size
    return StaleIndexError(
        f"{index.data_path}: record {first} at offset {offset}: {detail} "
        "(changed while in use? cut or rewritten by another job)"
    )


def _short(index: Index, local: IntArray, got: int, want: int, at: int) -> StaleIndexError:
    return _stale(
        index,
        local,
        f"read {got} of {want} bytes at offset {at}: the file is shorter than the "
        f"{index.data_size} bytes it had when indexed",
    )


class LocalFileRecords:
    """Records of one uncompressed local file, read with ``pread`` (opened lazily).

    Reads, not ``mmap``: touching a page of a map past the end of its file kills the
    process with SIGBUS, and a file can be cut under a reader at any moment (another job
    regenerating data, a copy replaced in place, NFS). A read that comes back short
    raises :class:`StaleIndexError` naming the record instead. A batch costs one read
    per run of records that lie back to back (a sequential chunk is one read) and the
    copy out of the page cache, which a map's page faults cost too (see
    docs/reliability.md for the measured difference).
    """

    def __init__(self, index: Index) -> None:
        self.index = index
        self.path = index.data_path
        self._fd: int | None = None
        self._lock = threading.Lock()  # loader threads may open the file together
        # Payload spans as int64, computed once: a batch then costs two gathers.
        self._start = index.offsets.astype(np.int64) + _H
        self._end = self._start + index.lengths.astype(np.int64)

    def fileno(self, local: IntArray | None = None) -> int:
        """The open file's descriptor (opened on first use, when its size is checked;
        ``local``, the records about to be read, locates the error if it changed)."""
        fd = self._fd
        if fd is None:
            with self._lock:
                fd = self._fd
                if fd is None:
                    fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                    size = os.fstat(fd).st_size
                    if size != self.index.data_size:
                        os.close(fd)
                        raise _stale(
                            self.index,
                            local,
                            f"the file has {size} bytes, it had {self.index.data_size} "
                            "when indexed",
                        )
                    self._fd = fd
        return fd

    def _framed(self, local: IntArray) -> tuple[bytes, IntArray, IntArray]:
        """One buffer with each record's data and footer: ``(buf, starts, ends)`` of the
        data within ``buf`` (its footer follows at ``ends``)."""
        fd = self.fileno(local)
        starts = self._start[local]
        ends = self._end[local]
        if len(local) == 1:
            a = int(starts[0])
            want = int(ends[0]) + _F - a
            buf = os.pread(fd, want, a)
            if len(buf) != want:
                raise _short(self.index, local, len(buf), want, a)
            return buf, np.zeros(1, np.int64), np.array([want - _F], np.int64)
        # Runs of records that lie back to back, in the batch's order: one read each.
        cut = np.flatnonzero(starts[1:] != ends[:-1] + (_F + _H)) + 1
        if len(cut) == len(local) - 1:
            return self._scattered(fd, local, starts, ends)
        run_start = starts[np.concatenate([[0], cut])].tolist()
        run_end = (ends[np.concatenate([cut - 1, [len(local) - 1]])] + _F).tolist()
        chunks = []
        for a, b in zip(run_start, run_end, strict=True):
            chunk = os.pread(fd, b - a, a)
            if len(chunk) != b - a:
                raise _short(self.index, local, len(chunk), b - a, a)
            chunks.append(chunk)
        if len(chunks) == 1:
            base = starts[0]
            return chunks[0], starts - base, ends - base
        # Record j's data sits at its offset within its run, shifted by the runs before.
        sizes = np.asarray(run_end, np.int64) - np.asarray(run_start, np.int64)
        shift = np.concatenate([[0], np.cumsum(sizes)[:-1]]) - np.asarray(run_start, np.int64)
        run_of = np.zeros(len(local), np.int64)
        run_of[cut] = 1
        run_of = np.cumsum(run_of)
        rel = shift[run_of]
        return b"".join(chunks), starts + rel, ends + rel

    def read_one(self, local: int, verify: bool = True) -> bytes:
        """Returns record ``local`` (an index within this file), CRC-checked.

        The per-call path of ``ds[i]``: one ``pread`` of the record and its footer, and
        Python integers throughout (no array set-up; errors as :meth:`read`).
        """
        fd = self._fd
        if fd is None:
            fd = self.fileno(np.array([local], np.int64))
        a = int(self._start[local])
        size = int(self._end[local]) - a
        buf = os.pread(fd, size + _F, a)
        if len(buf) != size + _F:
            raise _short(self.index, np.array([local], np.int64), len(buf), size + _F, a)
        record = buf[:size]
        if verify and framing.mask_crc(_crc32c.crc32c(record)) != int.from_bytes(
            buf[size:], "little"
        ):
            where = np.array([local], np.int64)
            verify_batch(
                [record],
                np.frombuffer(buf, "<u4", 1, size),
                path=self.path,
                local=where,
                offsets=self.index.offsets[where],
            )
        return record

    def _scattered(
        self, fd: int, local: IntArray, starts: IntArray, ends: IntArray
    ) -> tuple[bytes, IntArray, IntArray]:
        """:meth:`_framed` for records none of which follow the one before (a random
        batch): one read each, in Python integers (no per-run array work)."""
        pread = os.pread
        first = starts.tolist()
        sizes = (ends - starts + _F).tolist()
        chunks = [pread(fd, n, a) for n, a in zip(sizes, first, strict=True)]
        for j, (chunk, n) in enumerate(zip(chunks, sizes, strict=True)):
            if len(chunk) != n:
                raise _short(self.index, local[j:], len(chunk), n, first[j])
        at = np.zeros(len(sizes), np.int64)
        np.cumsum(sizes[:-1], out=at[1:])
        return b"".join(chunks), at, at + (ends - starts)

    def read(self, local: IntArray, verify: bool = True) -> list[bytes]:
        """Returns the records ``local`` (indices within this file), CRC-checked."""
        if len(local) == 0:
            return []
        if len(local) > 1 and int(self.index.lengths[local].mean()) >= _BIG_RECORD:
            return self._read_big(local, verify)
        buf, starts, ends = self._framed(local)
        if len(local) == 1:
            record = buf[: int(ends[0])]
            if verify:
                stored = np.frombuffer(buf, "<u4", 1, int(ends[0]))
                if framing.mask_crc(_crc32c.crc32c(record)) != int(stored[0]):
                    verify_batch(
                        [record],
                        stored,
                        path=self.path,
                        local=local,
                        offsets=self.index.offsets[local],
                    )
            return [record]
        end_list = ends.tolist()
        records = [buf[a:b] for a, b in zip(starts.tolist(), end_list, strict=True)]
        if verify:
            raw = np.frombuffer(buf, np.uint8)
            stored = raw[ends[:, None] + _FOOTER_AT].view("<u4").reshape(-1)
            crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
            if not np.array_equal(framing.mask_crc_array(crcs), stored):
                verify_batch(
                    records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
                )
        return records

    def _read_big(self, local: IntArray, verify: bool) -> list[bytes]:
        # Large records: each read straight into its own bytes (one copy, where slicing
        # a joined buffer would make two); the footers take a small read each.
        fd = self.fileno(local)
        pread = os.pread
        starts = self._start[local].tolist()
        ends = self._end[local].tolist()
        records = [pread(fd, b - a, a) for a, b in zip(starts, ends, strict=True)]
        footers = [pread(fd, _F, b) for b in ends]
        for j, (r, f) in enumerate(zip(records, footers, strict=True)):
            if len(r) != ends[j] - starts[j] or len(f) != _F:
                raise _short(self.index, local[j:], len(r), ends[j] - starts[j], starts[j])
        if verify:
            stored = np.frombuffer(b"".join(footers), "<u4")
            crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
            if not np.array_equal(framing.mask_crc_array(crcs), stored):
                verify_batch(
                    records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
                )
        return records

    def spans(self, local: IntArray, verify: bool = True) -> tuple[U8, IntArray, IntArray]:
        """The records ``local`` as spans of one buffer read for them, CRC-checked.

        Returns:
            ``(buf, starts, ends)``: record ``j`` is ``buf[starts[j]:ends[j]]``
            (``buf`` is ``uint8``, read-only, and the caller's to keep).
        """
        if len(local) == 0:
            return np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)
        data, starts, ends = self._framed(local)
        raw = np.frombuffer(data, np.uint8)
        if verify:
            stored = raw[ends[:, None] + _FOOTER_AT].view("<u4").reshape(-1)
            if not np.array_equal(crc_spans(raw, starts, ends), stored):
                self.read(local, verify=True)  # raises, naming the first bad record
        return raw, starts, ends

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            self.close()


class LocalFilesGather:
    """Batched reads across many uncompressed local files, in one pass over the batch.

    Datasets often come as ~1,000 shards, so a random batch touches hundreds of files
    with one or two records each: grouping by file would pay numpy's per-call overhead
    per file. Here record spans live in dataset-wide arrays and each record is read
    straight from its file (one ``pread`` of its data and footer).
    """

    def __init__(self, readers: Sequence[LocalFileRecords]) -> None:
        self._readers = list(readers)
        self._first = np.concatenate([[0], np.cumsum([len(r.index) for r in readers])]).astype(
            np.int64
        )
        self._start = np.concatenate([r._start for r in readers]).astype(np.int64)
        self._end = np.concatenate([r._end for r in readers]).astype(np.int64)
        self._fds: list[int | None] = [None] * len(self._readers)
        self._missing = len(self._readers)  # files not opened yet

    def read(self, idx: IntArray, file_of: IntArray, verify: bool = True) -> list[bytes]:
        """Returns the records at dataset-wide indices ``idx`` (files ``file_of``)."""
        if self._missing:
            for f in np.unique(file_of).tolist():
                if self._fds[f] is None and len(self._readers[f].index):
                    first = idx[np.argmax(file_of == f)] - self._first[f]
                    self._fds[f] = self._readers[f].fileno(np.array([first]))
            self._missing = sum(
                fd is None and len(r.index) > 0
                for fd, r in zip(self._fds, self._readers, strict=True)
            )
        # Every file a record of this batch lives in is open now.
        fds = cast("list[int]", self._fds)
        files = file_of.tolist()
        starts = self._start[idx].tolist()
        ends = self._end[idx].tolist()
        pread = os.pread
        framed = [pread(fds[f], b + _F - a, a) for f, a, b in zip(files, starts, ends, strict=True)]
        records = [c[:-_F] for c in framed]
        for j, (c, a, b) in enumerate(zip(framed, starts, ends, strict=True)):
            if len(c) != b + _F - a:
                f = files[j]
                local = idx[j : j + 1] - self._first[f]
                raise _short(self._readers[f].index, local, len(c), b + _F - a, a)
        if verify and records:
            stored = np.frombuffer(b"".join([c[-_F:] for c in framed]), dtype="<u4")
            crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
            bad = np.flatnonzero(framing.mask_crc_array(crcs) != stored)
            if len(bad):
                j = int(bad[0])
                f = files[j]
                # The file's own reader raises the error naming file, record, offset.
                self._readers[f].read(idx[j : j + 1] - self._first[f], verify=True)
        return records

    def close(self) -> None:
        """Forgets the descriptors (their readers own and close them)."""
        self._fds = [None] * len(self._readers)
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
