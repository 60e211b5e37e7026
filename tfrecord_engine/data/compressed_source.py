"""Random access to the records of a GZIP/ZLIB file.

Files written with ``TFRecordWriter(..., index=True)`` carry full-flush restart points:
each block between two of them inflates on its own, so a record costs at most one
block's decompression (a small LRU keeps recent blocks). A compressed file we did not
write has no restart point: up to :data:`MAX_UNINDEXED_BLOCK` decompressed bytes it is
decoded whole once. Beyond that, one pass over the file takes in-memory snapshots of
the inflater (``zlib`` ``Decompress.copy()``, ~40 KiB each) at record starts about
every :data:`SNAPSHOT_SPACING` bytes, which then act as restart points (they cannot be
saved: Python's zlib cannot prime a fresh inflater at a bit offset). A stream of
several concatenated members gets no snapshots: it is read forward only (a backward
jump restarts from the top) and shuffled epochs are refused with a clear message.
"""

from __future__ import annotations

import contextlib
import io
import os
import zlib
from collections import OrderedDict
from collections.abc import Callable
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from ..errors import CorruptedRecordError, TruncatedRecordError
from ..index.sidecar import Index
from ..records import framing
from ..records.compression import Compression, DecompressError, Decompressor
from .source import Fetcher, verify_batch

__all__ = ["MAX_UNINDEXED_BLOCK", "CompressedFileRecords"]

IntArray = npt.NDArray[np.int64]
_H = framing.HEADER_SIZE
_F = framing.FOOTER_SIZE
#: Largest compressed file without restart points that random access decodes whole.
MAX_UNINDEXED_BLOCK = 256 << 20
#: Decompressed bytes between in-memory snapshots (at most MAX_SNAPSHOTS per file).
SNAPSHOT_SPACING = 1 << 20
MAX_SNAPSHOTS = 1024
_CHUNK = 1 << 20
#: Opens a compressed file for reading from its start (a file object with ``read``).
StreamOpener = Callable[[], BinaryIO]


def _scan_snapshots(
    open_stream: StreamOpener, index: Index
) -> tuple[list[int], list[int], list[zlib._Decompress]] | None:
    """One pass over a single-stream file: inflater snapshots at record starts.

    Returns:
        compressed offsets, decompressed offsets and inflater copies (the first at 0),
        or ``None`` when the file holds several streams or does not inflate cleanly
        (the forward-only reader then reports what is wrong, record by record).
    """
    size = index.stream_size
    offsets = index.offsets.astype(np.int64)
    spacing = max(SNAPSHOT_SPACING, -(-size // MAX_SNAPSHOTS))
    marks = np.arange(spacing, size, spacing, dtype=np.int64)
    at = np.searchsorted(offsets, marks)
    targets = np.unique(offsets[at[at < len(offsets)]]).tolist()
    dec = zlib.decompressobj(31 if index.compression is Compression.GZIP else 15)
    cstart, dstart, states = [0], [0], [dec.copy()]
    cpos = dpos = t = 0
    data = b""
    try:
        with contextlib.closing(open_stream()) as f:
            while True:
                if not data:
                    data = f.read(_CHUNK)
                    if not data:
                        break
                want = targets[t] - dpos if t < len(targets) else 8 * _CHUNK
                dpos += len(dec.decompress(data, want))
                if dec.eof:
                    if dec.unused_data or f.read(1):
                        return None  # concatenated streams
                    break
                # Input the inflater took; the rest (the tail) is fed again next turn.
                cpos += len(data) - len(dec.unconsumed_tail)
                data = dec.unconsumed_tail
                if t < len(targets) and dpos == targets[t]:
                    cstart.append(cpos)
                    dstart.append(dpos)
                    states.append(dec.copy())
                    t += 1
    except zlib.error:
        return None
    if dpos != size or t != len(targets):
        return None
    return cstart, dstart, states


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


def _local_fetch(path: str) -> Fetcher:
    def fetch(offset: int, size: int) -> bytes:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(size)

    return fetch


class CompressedFileRecords:
    """Records of a GZIP/ZLIB file, decoded one restart block at a time (small LRU).

    Args:
        index: the file's index.
        cache_blocks: decoded restart blocks kept (LRU).
        fetch: reads a byte range of the compressed file (default: the local file).
        open_stream: opens the compressed file for a forward read (default: ``open``);
            remote files pass their read-ahead stream.
    """

    def __init__(
        self,
        index: Index,
        cache_blocks: int = 32,
        *,
        fetch: Fetcher | None = None,
        open_stream: StreamOpener | None = None,
    ) -> None:
        self.index = index
        self.path = index.data_path
        path = self.path
        self._fetch = _local_fetch(path) if fetch is None else fetch
        self._open_stream: StreamOpener = (
            (lambda: open(path, "rb")) if open_stream is None else open_stream  # noqa: SIM115
        )
        r = index.restarts.astype(np.int64)
        self._cstart = np.concatenate([[0], r[:, 0]]).astype(np.int64)
        self._dstart = np.concatenate([[0], r[:, 1]]).astype(np.int64)
        self._dend = np.append(self._dstart[1:], index.stream_size)
        self._block_of = np.searchsorted(self._dstart, index.offsets.astype(np.int64), "right") - 1
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cache_blocks = cache_blocks
        self._stream: _ForwardStream | None = None
        self._snaps: list[zlib._Decompress] | None = None
        self._prepared = not (len(self._cstart) == 1 and index.stream_size > MAX_UNINDEXED_BLOCK)

    def _prepare(self) -> None:
        """Scans a large file without restart points once, on first use."""
        if self._prepared:
            return
        self._prepared = True
        found = _scan_snapshots(self._open_stream, self.index)
        if found is None:
            self._stream = _ForwardStream(self._open_stream, self.index)
            return
        cstart, dstart, self._snaps = found
        self._cstart = np.array(cstart, dtype=np.int64)
        self._dstart = np.array(dstart, dtype=np.int64)
        self._dend = np.append(self._dstart[1:], self.index.stream_size)
        offsets = self.index.offsets.astype(np.int64)
        self._block_of = np.searchsorted(self._dstart, offsets, "right") - 1

    @property
    def sequential_only(self) -> bool:
        """Whether only forward reads are efficient (no restart points, too large)."""
        self._prepare()
        return self._stream is not None

    def _block(self, b: int) -> bytes:
        hit = self._cache.get(b)
        if hit is not None:
            self._cache.move_to_end(b)
            return hit
        need = int(self._dend[b] - self._dstart[b])
        start = int(self._cstart[b])
        stop = int(self._cstart[b + 1]) if b + 1 < len(self._cstart) else self.index.data_size
        raw = self._fetch(start, stop - start)
        try:
            if self._snaps is not None:
                data = self._snaps[b].copy().decompress(raw, need)
            elif b == 0:
                dec = Decompressor(io.BytesIO(raw), self.index.compression)
                parts, have = [], 0
                while have < need:
                    part = dec.read(need - have)
                    if not part:
                        break
                    parts.append(part)
                    have += len(part)
                data = b"".join(parts)
            else:
                data = zlib.decompressobj(-15).decompress(raw, need)
        except (DecompressError, zlib.error) as exc:
            raise CorruptedRecordError(
                f"damaged {self.index.compression.value} block {b}: {exc}",
                path=self.path,
                record_index=int(np.argmax(self._block_of == b)),
                offset=int(self._dstart[b]),
            ) from exc
        if len(data) != need:
            raise TruncatedRecordError(
                f"{self.index.compression.value} block {b} decompresses to {len(data)} "
                f"bytes, the index expects {need}",
                path=self.path,
                record_index=int(np.argmax(self._block_of == b)),
                offset=int(self._dstart[b]),
            )
        self._cache[b] = data
        if len(self._cache) > self._cache_blocks:
            self._cache.popitem(last=False)
        return data

    def _read_forward(self, local: IntArray, verify: bool) -> list[bytes]:
        assert self._stream is not None
        offsets = self.index.offsets[local].astype(np.int64)
        ends = offsets + self.index.lengths[local].astype(np.int64) + _H + _F
        framed: list[bytes] = [b""] * len(local)
        try:
            for j in np.argsort(offsets, kind="stable").tolist():
                framed[j] = self._stream.read(int(offsets[j]), int(ends[j]))
        except DecompressError as exc:
            raise CorruptedRecordError(
                str(exc), path=self.path, record_index=int(local[0]), offset=int(offsets[0])
            ) from exc
        if any(len(f) != e - o for f, o, e in zip(framed, offsets, ends, strict=True)):
            raise TruncatedRecordError(
                "the compressed stream ends before a record the index lists",
                path=self.path,
                record_index=int(local[0]),
                offset=int(offsets[0]),
            )
        records = [f[_H:-_F] for f in framed]
        if verify and records:
            stored = np.array([framing.read_footer(f, len(f) - _F) for f in framed], np.uint32)
            verify_batch(
                records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
            )
        return records

    def read(self, local: IntArray, verify: bool = True) -> list[bytes]:
        """Returns the records ``local`` (indices within this file), CRC-checked."""
        self._prepare()
        if self._stream is not None:
            return self._read_forward(local, verify)
        out: list[bytes] = [b""] * len(local)
        blocks = self._block_of[local]
        offsets = self.index.offsets[local]
        stored = np.zeros(len(local), dtype=np.uint32)
        for b in np.unique(blocks).tolist():
            data = self._block(b)
            base = int(self._dstart[b])
            for j in np.flatnonzero(blocks == b).tolist():
                start = int(offsets[j]) - base + _H
                end = start + int(self.index.lengths[local[j]])
                out[j] = data[start:end]
                stored[j] = framing.read_footer(data, end)
        if verify and out:
            verify_batch(out, stored, path=self.path, local=local, offsets=offsets)
        return out

    def close(self) -> None:
        """Drops the decoded blocks and closes the stream, if any."""
        self._cache.clear()
        if self._stream is not None:
            self._stream.close()
