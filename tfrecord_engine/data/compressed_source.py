"""Random access to the records of a GZIP/ZLIB file.

Inflating can begin only at a *restart point*, and the index keeps two kinds:

- the start of each GZIP member (or ZLIB stream) after the first, found when the index
  is built: bgzip (BGZF) files, ``cat a.gz b.gz`` and ``gzip.open(p, "ab")`` appends
  are several members, and a fresh inflater begins at each (nothing to keep but the
  two offsets);
- full flushes written by ``TFRecordWriter(..., index=True)`` inside one deflate stream,
  where a raw inflater begins.

The decompressed bytes between two restart points form a *block*, inflated on its own
(a small LRU keeps recent ones); a record costs the blocks it lies in (a record may span
member boundaries: bgzip cuts every 64 KiB). A block up to :data:`MAX_UNINDEXED_BLOCK`
decompressed bytes is decoded whole. A larger one (a single-stream file we did not
write, or a large member) is covered, on first use, by one pass over the file that
takes in-memory snapshots of the inflater (``zlib`` ``Decompress.copy()``, ~40 KiB
each) at record starts about every :data:`SNAPSHOT_SPACING` bytes inside it, which then
act as restart points (they cannot be saved: Python's zlib cannot prime a fresh
inflater at a bit offset). Only a file that pass cannot inflate (damaged, or changed
since it was indexed) is read forward only (a backward jump restarts from the top), and
shuffled epochs over it are refused with the reason.

Damage to the compressed bytes of a block costs only the records at and after it in
that block: the block is inflated up to the damage (zlib drops the output of the call
that meets it, so the failing input is fed again in small pieces), the records before it
are returned (CRC-checked), and reading one after it raises naming that record, its
index and offset. Reading in file order, the first error is therefore at the record
:func:`~tfrecord_engine.read_records` names.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections import OrderedDict
from collections.abc import Callable
from typing import BinaryIO, Final, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from ..errors import CorruptedRecordError, DataLossError, TruncatedRecordError
from ..index.sidecar import Index
from ..records import framing
from ..records.compression import Compression, DecompressError, Decompressor
from .localfile import LocalFile
from .source import Fetcher, verify_batch

__all__ = ["MAX_UNINDEXED_BLOCK", "CompressedFileRecords"]

IntArray = npt.NDArray[np.int64]
_H = framing.HEADER_SIZE
_F = framing.FOOTER_SIZE
#: Largest block (decompressed bytes between restart points) decoded whole; a larger
#: one gets in-memory snapshots.
MAX_UNINDEXED_BLOCK = 256 << 20
#: Decompressed bytes between in-memory snapshots (at most MAX_SNAPSHOTS per file).
SNAPSHOT_SPACING = 1 << 20
MAX_SNAPSHOTS = 1024
_CHUNK = 1 << 20
#: Compressed bytes fed at a time when inflating what lies before damage.
_SALVAGE_STEP = 1 << 14
#: Opens a compressed file for reading from its start (a file object with ``read``).
StreamOpener = Callable[[], BinaryIO]


class _Block(NamedTuple):
    """A block's decompressed bytes; where the input is damaged, the bytes before the
    damage and what to raise (the error class and its reason) for a record beyond them."""

    data: bytes
    damage: tuple[type[DataLossError], str] | None


# How a block begins: a fresh inflater for the file's kind (the file's start, a member
# start), a raw inflater (a full flush), or an in-memory snapshot.
_STREAM: Final = 0
_FLUSH: Final = 1
_SNAP: Final = 2


def _wbits(kind: Compression) -> int:
    return 31 if kind is Compression.GZIP else 15


def _inflate(dec: zlib._Decompress, raw: bytes, need: int, wbits: int) -> bytes:
    """Up to ``need`` bytes inflated from ``raw`` by ``dec``, going on into the members
    (streams) that follow with fresh inflaters (``wbits``).

    Raises:
        zlib.error: damaged input.
    """
    parts: list[bytes] = []
    have = 0
    data = raw
    while have < need:
        out = dec.decompress(data, need - have)
        parts.append(out)
        have += len(out)
        if dec.eof:
            data = dec.unused_data
            if not data:
                break
            dec = zlib.decompressobj(wbits)
        else:
            data = dec.unconsumed_tail
            if not data and not out:
                break  # the input ends inside a member
    return b"".join(parts)


def _salvage(dec: zlib._Decompress, raw: bytes, wbits: int) -> bytes:
    """What ``dec`` inflates from ``raw`` (going on into the members that follow, as
    :func:`_inflate` does) before the point where the input is damaged.

    zlib drops the output of the call that meets damage, so the input is fed in pieces,
    and the piece that fails again byte by byte: every byte before the damage is kept
    (the records in it are intact, as their CRCs then say).
    """
    out: list[bytes] = []
    pos = 0
    while pos < len(raw):
        if dec.eof:
            pos -= len(dec.unused_data)  # the next member starts there
            dec = zlib.decompressobj(wbits)
        piece = raw[pos : pos + _SALVAGE_STEP]
        keep = dec.copy()
        try:
            out.append(dec.decompress(piece))
        except zlib.error:
            dec = keep
            for k in range(len(piece)):
                try:
                    out.append(dec.decompress(piece[k : k + 1]))
                except zlib.error:
                    return b"".join(out)
                if dec.eof:
                    break  # a member ends inside the piece: the next one from here
            pos += k + 1
            continue
        pos += len(piece)
    return b"".join(out)


def _snapshot_targets(index: Index, dstart: IntArray, dend: IntArray, max_block: int) -> list[int]:
    """Record starts strictly inside the blocks larger than ``max_block``, about every
    :data:`SNAPSHOT_SPACING` bytes (at most :data:`MAX_SNAPSHOTS` in all), ascending."""
    large = np.flatnonzero(dend - dstart > max_block)
    if len(large) == 0:
        return []
    total = int((dend[large] - dstart[large]).sum())
    spacing = max(SNAPSHOT_SPACING, -(-total // MAX_SNAPSHOTS))
    offsets = index.offsets.astype(np.int64)
    targets: list[npt.NDArray[np.int64]] = []
    for b in large.tolist():
        lo, hi = int(dstart[b]), int(dend[b])
        marks = np.arange(lo + spacing, hi, spacing, dtype=np.int64)
        at = np.searchsorted(offsets, marks)
        starts = offsets[at[at < len(offsets)]]
        targets.append(starts[(starts > lo) & (starts < hi)])
    found: list[int] = np.unique(np.concatenate(targets)).tolist()
    return found


def _scan_snapshots(
    open_stream: StreamOpener, kind: Compression, targets: list[int]
) -> tuple[list[int], list[zlib._Decompress]] | str:
    """One pass from the start of the file, through every member, to the last target:
    an inflater snapshot at each of ``targets`` (decompressed offsets, ascending).

    Returns:
        the compressed offsets and the snapshots, one per target; or why the file could
        not be scanned (damaged, or shorter than the index says).
    """
    wbits = _wbits(kind)
    dec = zlib.decompressobj(wbits)
    cstart: list[int] = []
    states: list[zlib._Decompress] = []
    cpos = dpos = t = 0
    data = b""
    try:
        with contextlib.closing(open_stream()) as f:
            while t < len(targets):
                if not data:
                    data = f.read(_CHUNK)
                    if not data:
                        break
                dpos += len(dec.decompress(data, targets[t] - dpos))
                if dec.eof:  # the member ends: the next one (if any) starts afresh
                    cpos += len(data) - len(dec.unused_data)
                    data = dec.unused_data
                    dec = zlib.decompressobj(wbits)
                else:
                    # Input the inflater took; the rest (the tail) is fed again next turn.
                    cpos += len(data) - len(dec.unconsumed_tail)
                    data = dec.unconsumed_tail
                if dpos == targets[t]:
                    cstart.append(cpos)
                    states.append(dec.copy())
                    t += 1
    except zlib.error as exc:
        return (
            f"its {kind.value} data does not inflate at or after compressed byte {cpos} "
            f"(zlib: {exc}; damaged?)"
        )
    if t != len(targets):
        return (
            f"it inflates to only {dpos} bytes, short of the records its index lists "
            "(changed since it was indexed?)"
        )
    return cstart, states


class _ForwardStream:
    """Decompressed bytes of a file, read forward; a backward jump starts over."""

    def __init__(self, open_stream: StreamOpener, index: Index) -> None:
        self._open_stream = open_stream
        self._index = index
        self._file: BinaryIO | None = None
        self._dec: Decompressor | None = None
        self._pos = 0  # decompressed offset of self._buf[0]
        self._buf = b""
        self._pid = os.getpid()
        self.restarts = 0

    def _rewind(self) -> Decompressor:
        # In a forked worker the parent owns the old descriptor (and its offset).
        if self._file is not None and self._pid == os.getpid():
            self.restarts += 1
            self._file.close()
        self._pid = os.getpid()
        self._file = self._open_stream()  # closed by close()/_rewind()
        self._dec = Decompressor(self._file, self._index.compression)
        self._pos, self._buf = 0, b""
        return self._dec

    def read(self, start: int, end: int) -> bytes:
        """Returns decompressed bytes ``[start, end)``."""
        dec = self._dec
        if dec is None or start < self._pos or self._pid != os.getpid():
            dec = self._rewind()
        if start > self._pos + len(self._buf):  # skip ahead without keeping bytes
            skip = start - self._pos - len(self._buf)
            self._pos += len(self._buf)
            self._buf = b""
            while skip:
                part = dec.read(min(skip, _CHUNK))
                if not part:
                    break
                skip -= len(part)
                self._pos += len(part)
        buf = self._buf[start - self._pos :]
        parts, have = [buf], len(buf)
        while have < end - start:
            part = dec.read(max(_CHUNK, end - start - have))
            if not part:
                break
            parts.append(part)
            have += len(part)
        self._buf = b"".join(parts)
        self._pos = start
        return self._buf[: end - start]

    def close(self) -> None:
        """Closes the file; a later read reopens it."""
        if self._file is not None and self._pid == os.getpid():
            self._file.close()
        self._file, self._dec, self._buf = None, None, b""

    def __del__(self) -> None:
        # A dataset dropped without close() must not leak the descriptor (or warn).
        self.close()


class CompressedFileRecords:
    """Records of a GZIP/ZLIB file, decoded one restart block at a time (small LRU).

    Args:
        index: the file's index.
        cache_blocks: decoded restart blocks kept (LRU).
        fetch: reads a byte range of the compressed file (default: the local file,
            through a descriptor in the process's budget, reopened only onto the file
            the index describes: :class:`~.localfile.LocalFile`).
        open_stream: opens the compressed file for a forward read (default: the local
            file, read through the same descriptor); remote files pass their read-ahead
            stream.
        max_block: the largest block decoded whole (default
            :data:`MAX_UNINDEXED_BLOCK`); larger ones get in-memory snapshots.
    """

    def __init__(
        self,
        index: Index,
        cache_blocks: int = 32,
        *,
        fetch: Fetcher | None = None,
        open_stream: StreamOpener | None = None,
        max_block: int | None = None,
    ) -> None:
        self.index = index
        self.path = index.data_path
        self._file: LocalFile | None = None
        self._fetch: Fetcher
        self._open_stream: StreamOpener
        if fetch is not None and open_stream is not None:
            self._fetch, self._open_stream = fetch, open_stream
        else:
            file = self._file = LocalFile(index)
            self._fetch = file.fetch if fetch is None else fetch
            # (a file object to the readers: read and close)
            self._open_stream = (
                cast("StreamOpener", file.stream) if open_stream is None else open_stream
            )
        self._wbits = _wbits(index.compression)
        r = index.restarts.astype(np.int64)
        kinds = np.where(index.member_starts, _STREAM, _FLUSH)
        self._set_blocks(
            np.concatenate([[0], r[:, 0]]),
            np.concatenate([[0], r[:, 1]]),
            np.concatenate([[_STREAM], kinds]),
        )
        self._cache: OrderedDict[int, _Block] = OrderedDict()
        self._cache_blocks = cache_blocks
        self._stream: _ForwardStream | None = None
        self._why_forward: str | None = None
        self._snaps: dict[int, zlib._Decompress] = {}
        self._max_block = MAX_UNINDEXED_BLOCK if max_block is None else max_block
        self._prepared = not bool(np.any(self._dend - self._dstart > self._max_block))

    def _set_blocks(self, cstart: object, dstart: object, kinds: object) -> None:
        self._cstart = np.asarray(cstart, dtype=np.int64)
        self._dstart = np.asarray(dstart, dtype=np.int64)
        self._kind = np.asarray(kinds, dtype=np.int8)
        self._dend = np.append(self._dstart[1:], self.index.stream_size).astype(np.int64)
        offsets = self.index.offsets.astype(np.int64)
        self._block_of = np.searchsorted(self._dstart, offsets, "right") - 1

    def _prepare(self) -> None:
        """Covers blocks too large to decode whole with in-memory snapshots (one pass
        over the file, on first use)."""
        if self._prepared:
            return
        self._prepared = True
        targets = _snapshot_targets(self.index, self._dstart, self._dend, self._max_block)
        if not targets:
            return  # large blocks of one record each: nothing to cut them at
        found = _scan_snapshots(self._open_stream, self.index.compression, targets)
        if isinstance(found, str):
            self._stream = _ForwardStream(self._open_stream, self.index)
            self._why_forward = found
            return
        cstart, states = found
        n = len(self._cstart)
        order = np.argsort(np.concatenate([self._dstart, targets]), kind="stable")
        self._set_blocks(
            np.concatenate([self._cstart, cstart])[order],
            np.concatenate([self._dstart, targets])[order],
            np.concatenate([self._kind, np.full(len(targets), _SNAP)])[order],
        )
        where = np.argsort(order)  # the new block number of each old and new point
        self._snaps = dict(zip(where[n:].tolist(), states, strict=True))

    @property
    def sequential_only(self) -> bool:
        """Whether only forward reads are efficient (a large block that could not be
        scanned for in-memory restart points; :attr:`sequential_reason` says why)."""
        self._prepare()
        return self._stream is not None

    @property
    def sequential_reason(self) -> str | None:
        """Why this file can only be read forward, or ``None`` (random access works)."""
        if not self.sequential_only:
            return None
        size = self.index.stream_size
        kind = self.index.compression.value
        if len(self.index.restarts) == 0:
            where = (
                f"it is a single {kind} deflate stream ({size} bytes decompressed) "
                "without restart points: inflating can begin only at its start, "
                "and scanning it once for in-memory restart points failed"
            )
        else:
            where = (
                "a stretch of it between restart points is too large to decode whole, "
                "and scanning it once for in-memory restart points failed"
            )
        return f"{where}: {self._why_forward}"

    def _decompressor(self, b: int) -> zlib._Decompress:
        """A fresh inflater for the start of block ``b``."""
        kind = int(self._kind[b])
        if kind == _SNAP:
            return self._snaps[b].copy()
        return zlib.decompressobj(self._wbits if kind == _STREAM else -15)

    def _block(self, b: int) -> _Block:
        """Block ``b``'s bytes; on damage, the bytes before it and why (never raises for
        damage: the records before it are intact, and only the reader of a record
        beyond it raises, naming that record)."""
        hit = self._cache.get(b)
        if hit is not None:
            self._cache.move_to_end(b)
            return hit
        need = int(self._dend[b] - self._dstart[b])
        start = int(self._cstart[b])
        stop = int(self._cstart[b + 1]) if b + 1 < len(self._cstart) else self.index.data_size
        raw = self._fetch(start, stop - start)
        name = self.index.compression.value
        damage: tuple[type[DataLossError], str] | None = None
        try:
            data = _inflate(self._decompressor(b), raw, need, self._wbits)
        except zlib.error as exc:
            data = _salvage(self._decompressor(b), raw, self._wbits)[:need]
            damage = (CorruptedRecordError, f"{name} data is damaged: {exc}")
        if len(data) != need and damage is None:
            damage = (
                TruncatedRecordError,
                f"{name} block {b} decompresses to {len(data)} bytes, the index expects {need}",
            )
        got = _Block(data, damage)
        self._cache[b] = got
        if len(self._cache) > self._cache_blocks:
            self._cache.popitem(last=False)
        return got

    def _span(self, b: int, start: int, end: int) -> _Block:
        """Decompressed bytes ``[start, end)``, beginning in block ``b`` and running on
        into the blocks after it (a record across a member boundary); short, with the
        damage, where a block is damaged before ``end``."""
        parts: list[bytes] = []
        while start < end:
            block = self._block(b)
            base = int(self._dstart[b])
            parts.append(block.data[start - base : min(end, int(self._dend[b])) - base])
            if block.damage is not None and base + len(block.data) < min(end, self._dend[b]):
                return _Block(b"".join(parts), block.damage)
            start = int(self._dend[b])
            b += 1
        return _Block(b"".join(parts), None)

    def _damaged(
        self,
        local: IntArray,
        records: list[bytes],
        stored: npt.NDArray[np.uint32],
        failed: dict[int, tuple[type[DataLossError], str]],
        verify: bool,
    ) -> DataLossError:
        """The error for the first (in the file) of the records ``failed`` could not be
        read; raised first, the CRC error of an earlier record read from damaged input,
        so that every path names the record :func:`~tfrecord_engine.read_records` names."""
        offsets = self.index.offsets[local].astype(np.int64)
        first = min(failed, key=lambda j: int(offsets[j]))
        if verify:
            before = [
                j for j in range(len(local)) if j not in failed and offsets[j] < offsets[first]
            ]
            if before:
                verify_batch(
                    [records[j] for j in before],
                    stored[before],
                    path=self.path,
                    local=local[before],
                    offsets=self.index.offsets[local[before]],
                )
        cls, why = failed[first]
        return cls(why, path=self.path, record_index=int(local[first]), offset=int(offsets[first]))

    def _read_forward(self, local: IntArray, verify: bool) -> list[bytes]:
        assert self._stream is not None
        offsets = self.index.offsets[local].astype(np.int64)
        ends = offsets + self.index.lengths[local].astype(np.int64) + _H + _F
        framed: list[bytes] = [b""] * len(local)
        failed: dict[int, tuple[type[DataLossError], str]] = {}
        for j in np.argsort(offsets, kind="stable").tolist():
            try:
                framed[j] = self._stream.read(int(offsets[j]), int(ends[j]))
            except DecompressError as exc:
                failed[j] = (CorruptedRecordError, str(exc))
                break  # nothing after damage inflates: the first record it cuts is named
            if len(framed[j]) != ends[j] - offsets[j]:
                failed[j] = (
                    TruncatedRecordError,
                    "the compressed stream ends before a record the index lists",
                )
                break
        records = [f[_H:-_F] if len(f) >= _H + _F else b"" for f in framed]
        stored = np.array(
            [framing.read_footer(f, len(f) - _F) if len(f) >= _H + _F else 0 for f in framed],
            np.uint32,
        )
        if failed:
            raise self._damaged(local, records, stored, failed, verify)
        if verify and records:
            verify_batch(
                records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
            )
        return records

    def read(self, local: IntArray, verify: bool = True) -> list[bytes]:
        """Returns the records ``local`` (indices within this file), CRC-checked.

        Raises:
            DataLossError: a record is damaged, or lies (partly) after damage to the
                compressed data in its block: the error names the first such record
                in the file, its index and offset, as the sequential reader does.
        """
        self._prepare()
        if self._stream is not None:
            return self._read_forward(local, verify)
        out: list[bytes] = [b""] * len(local)
        blocks = self._block_of[local]
        offsets = self.index.offsets[local]
        lengths = self.index.lengths[local]
        stored = np.zeros(len(local), dtype=np.uint32)
        failed: dict[int, tuple[type[DataLossError], str]] = {}
        for b in np.unique(blocks).tolist():
            block = self._block(b)
            data = block.data
            base = int(self._dstart[b])
            for j in np.flatnonzero(blocks == b).tolist():
                start = int(offsets[j]) - base + _H
                end = start + int(lengths[j])
                if end + _F <= len(data):
                    out[j] = data[start:end]
                    stored[j] = framing.read_footer(data, end)
                    continue
                # Runs on into the next block(s), or past damage in this one.
                framed = self._span(b, start - _H + base, end + _F + base)
                if framed.damage is not None:
                    failed[j] = framed.damage
                    continue
                out[j] = framed.data[_H:-_F]
                stored[j] = framing.read_footer(framed.data, len(framed.data) - _F)
        if failed:
            raise self._damaged(local, out, stored, failed, verify)
        if verify and out:
            verify_batch(out, stored, path=self.path, local=local, offsets=offsets)
        return out

    def close(self) -> None:
        """Drops the decoded blocks and closes the stream and the file, if any."""
        self._cache.clear()
        if self._stream is not None:
            self._stream.close()
        if self._file is not None:
            self._file.close()
