"""Scanning TFRecord files without reading payloads: fingerprints and header walks.

Used by :class:`~tfrecord_engine.index.sidecar.Index` to build and check indexes. Damage is
reported exactly as the reader reports it (:func:`framing.parse_header` raises).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from collections.abc import Iterator, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from ..errors import DataLossError, StaleIndexError
from ..records import framing
from ..records.compression import Compression
from ..records.reader import read_records, read_records_noting_members
from ..storage import remote
from ..storage.options import StorageOptionsArg
from ..storage.ranges import coalesce

__all__ = [
    "FileStat",
    "as_u64",
    "check_headers",
    "file_identity",
    "file_stat",
    "fingerprint",
    "fingerprint_of",
    "fingerprint_ranges",
    "local_identity",
    "mapped",
    "refuse_larger",
    "walk_headers",
    "walk_stream",
]

U64Array = npt.NDArray[np.uint64]

# Fingerprint windows: the head and tail catch appends and truncations, evenly spaced
# probes catch most same-size replacements, for 64 KiB of reading per file at most.
_EDGE: Final = 16 << 10
_PROBE: Final = 4 << 10
_PROBES: Final = 8


def fingerprint_ranges(size: int) -> list[tuple[int, int]]:
    """The half-open byte ranges :func:`fingerprint` reads: head, tail, then probes.

    >>> fingerprint_ranges(100)
    [(0, 100), (0, 100)]
    """
    ranges = [(0, min(size, _EDGE)), (max(0, size - _EDGE), size)]
    if size > 2 * _EDGE:
        step = (size - 2 * _EDGE) // _PROBES
        ranges += [(_EDGE + i * step, min(size, _EDGE + i * step + _PROBE)) for i in range(_PROBES)]
    return ranges


def fingerprint_of(size: int, windows: Sequence[bytes]) -> int:
    """Combines the bytes of :func:`fingerprint_ranges` (in order) into the fingerprint."""
    head = framing.crc32c(windows[0])
    tail = framing.crc32c(b"".join(windows[1:]) + size.to_bytes(8, "little"))
    return (head << 32) | tail


def fingerprint(buf: bytes | mmap.mmap) -> int:
    """Returns a cheap 64-bit fingerprint of a file's bytes (sampled, not a full hash).

    >>> fingerprint(b"abc") == fingerprint(b"abc") != fingerprint(b"abd")
    True
    """
    size = len(buf)
    return fingerprint_of(size, [buf[a:b] for a, b in fingerprint_ranges(size)])


def file_identity(path: str, storage_options: StorageOptionsArg = None) -> tuple[int, int]:
    """Returns the size and :func:`fingerprint` of a local file or a URL.

    A URL costs a size query and one request for the fingerprint's windows (ten
    windows of at most 16 KiB, sent together).
    """
    if not remote.is_url(path):
        with mapped(path) as buf:
            return len(buf), fingerprint(buf)
    f = remote.RemoteFile(path, storage_options=storage_options)
    size = f.size
    if size == 0:
        return 0, fingerprint(b"")
    ranges = fingerprint_ranges(size)
    plan = coalesce(np.array([a for a, _ in ranges]), np.array([b for _, b in ranges]), 0)
    got = f.fetch_ranges(plan.starts.tolist(), plan.ends.tolist())
    windows = [
        got[g][a - s : b - s]
        for (a, b), g, s in zip(
            ranges, plan.request_of.tolist(), plan.starts[plan.request_of].tolist(), strict=True
        )
    ]
    return size, fingerprint_of(size, windows)


#: ``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)`` of a local file: what tells
#: one open file (or the file a path names) from another without reading it.
FileStat = tuple[int, int, int, int, int]


def file_stat(st: os.stat_result) -> FileStat:
    """The :data:`FileStat` of a ``stat``/``fstat`` result."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def local_identity(path: str) -> tuple[int, int, FileStat]:
    """:func:`file_identity` of a local file with the :data:`FileStat` of the very
    descriptor its bytes were read through (so the two describe one file)."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        if st.st_size == 0:
            return 0, fingerprint(b""), file_stat(st)
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            return len(buf), fingerprint(buf), file_stat(st)
        finally:
            with contextlib.suppress(BufferError):
                buf.close()


@contextlib.contextmanager
def mapped(path: str) -> Iterator[bytes | mmap.mmap]:
    """Maps a file read-only for the duration of a ``with`` block (``b""`` if empty)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            yield b""
            return
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            yield buf
        finally:
            # A numpy view held by an exception's traceback can still pin the map;
            # it is then unmapped when collected instead of masking that exception.
            with contextlib.suppress(BufferError):
                buf.close()


def as_u64(values: object) -> U64Array:
    """Returns ``values`` as a contiguous ``uint64`` array (no copy when already one)."""
    return np.ascontiguousarray(np.asarray(values, dtype=np.uint64))


def walk_headers(buf: bytes | mmap.mmap, path: str) -> tuple[U64Array, U64Array]:
    """Finds every record of an uncompressed file by hopping from header to header."""
    size = len(buf)
    unpack = struct.Struct("<Q").unpack_from
    overhead = framing.HEADER_SIZE + framing.FOOTER_SIZE
    if size >= overhead:
        fast = _uniform_offsets(buf, int(unpack(buf, 0)[0]) + overhead)
        if fast is not None:
            return fast, check_headers(buf, fast, None, path)
    offsets: list[int] = []
    pos = 0
    bad = -1
    # The hot loop only follows length fields; CRCs are checked afterwards in bulk.
    while pos < size:
        if size - pos < overhead:
            bad = pos
            break
        (length,) = unpack(buf, pos)
        if length > size - pos - overhead:
            bad = pos
            break
        offsets.append(pos)
        pos += length + overhead
    offs = np.array(offsets, dtype=np.uint64)
    lens = check_headers(buf, offs, None, path)
    if bad >= 0:
        # Raises the reader's own error (length CRC first, then truncation).
        framing.parse_header(
            buf[bad : bad + framing.HEADER_SIZE],
            remaining=size - bad - framing.HEADER_SIZE,
            path=path,
            record_index=len(offsets),
            offset=bad,
        )
        raise AssertionError(  # pragma: no cover
            "unreachable: parse_header accepted a bad header"
        )
    return offs, lens


def _uniform_offsets(buf: bytes | mmap.mmap, stride: int) -> U64Array | None:
    """Offsets of a file of equal-size records, if it is one (else ``None``).

    Fixed-size records (images, fixed-length features) are common; when the file size is
    a multiple of the first record's framed size, every header is read in one vectorized
    gather instead of one hop at a time. Any mismatch falls back to the walk.
    """
    size = len(buf)
    if size % stride:
        return None
    offsets = np.arange(0, size, stride, dtype=np.uint64)
    raw = np.frombuffer(buf, dtype=np.uint8)
    at = offsets.astype(np.int64)[:, None] + np.arange(8, dtype=np.int64)
    lengths = np.ascontiguousarray(raw[at]).view("<u8").reshape(-1)
    if not bool(np.all(lengths == stride - framing.HEADER_SIZE - framing.FOOTER_SIZE)):
        return None
    return offsets


def check_headers(
    buf: bytes | mmap.mmap, offsets: U64Array, lengths: U64Array | None, path: str
) -> U64Array:
    """Checks in bulk each header's length CRC (and ``lengths``); returns the lengths."""
    if len(offsets) == 0:
        return np.zeros(0, dtype=np.uint64)
    raw = np.frombuffer(buf, dtype=np.uint8)
    at = offsets.astype(np.int64)[:, None] + np.arange(framing.HEADER_SIZE, dtype=np.int64)
    headers = np.ascontiguousarray(raw[at])
    stored_len = headers[:, :8].copy().view("<u8").reshape(-1)
    stored_crc = headers[:, 8:].copy().view("<u4").reshape(-1)
    # Lengths repeat a lot (fixed-size records): one CRC per distinct length.
    uniq, inverse = np.unique(stored_len, return_inverse=True)
    crcs = np.array([framing.crc32c(int(u).to_bytes(8, "little")) for u in uniq], np.uint32)
    expected = framing.mask_crc_array(crcs)[inverse.reshape(-1)]
    mismatch = expected != stored_crc
    if lengths is not None:
        mismatch |= stored_len != lengths
    bad = np.flatnonzero(mismatch)
    if len(bad):
        i = int(bad[0])
        pos = int(offsets[i])
        _check_header_at(buf, offsets, i, path)
        raise StaleIndexError(
            f"{path}: record {i} at offset {pos}: header announces {int(stored_len[i])} "
            f"bytes, the index says {int(lengths[i]) if lengths is not None else '?'}"
        )
    return as_u64(stored_len)


def refuse_larger(
    buf: bytes | mmap.mmap, offsets: U64Array, lengths: U64Array, path: str, limit: int
) -> None:
    """Raises :class:`RecordTooLargeError` for the first record longer than ``limit``."""
    big = np.flatnonzero(lengths > np.uint64(limit))
    if len(big):
        _check_header_at(buf, offsets, int(big[0]), path, limit)


def _check_header_at(
    buf: bytes | mmap.mmap, offsets: U64Array, i: int, path: str, limit: int | None = None
) -> None:
    """Record ``i``'s header through :func:`framing.parse_header`, which raises the
    precise, located error for it (a length CRC, ``limit``)."""
    pos = int(offsets[i])
    framing.parse_header(
        buf[pos : pos + framing.HEADER_SIZE],
        remaining=None,
        path=path,
        record_index=i,
        offset=pos,
        max_length=limit,
    )


def walk_stream(
    path: str,
    kind: Compression,
    max_record_bytes: int | None = None,
    members: list[tuple[int, int]] | None = None,
    storage_options: StorageOptionsArg = None,
) -> tuple[U64Array, U64Array]:
    """Indexes a compressed file by decompressing it once (payloads are skipped over).

    ``members`` (GZIP/ZLIB only) receives ``(compressed, decompressed)`` offsets of each
    member start after the first (see
    :func:`~tfrecord_engine.records.reader.read_records_noting_members`).
    """
    records = (
        read_records(
            path,
            kind,
            verify=False,
            max_record_bytes=max_record_bytes,
            storage_options=storage_options,
        )
        if members is None or kind is Compression.NONE
        else read_records_noting_members(
            path,
            kind,
            members,
            verify=False,
            max_record_bytes=max_record_bytes,
            storage_options=storage_options,
        )
    )
    try:
        lengths = np.fromiter((len(r) for r in records), dtype=np.uint64)
    except DataLossError:
        if kind is Compression.NONE:
            raise
        _raise_first_damage(path, kind, max_record_bytes, storage_options)
        raise
    framed = lengths + np.uint64(framing.HEADER_SIZE + framing.FOOTER_SIZE)
    offsets = np.concatenate([[0], np.cumsum(framed)[:-1]]).astype(np.uint64)
    return offsets[: len(lengths)], lengths


def _raise_first_damage(
    path: str,
    kind: Compression,
    max_record_bytes: int | None,
    storage_options: StorageOptionsArg = None,
) -> None:
    """Raises the error :func:`read_records` raises for a damaged compressed file.

    The walk above skips data CRCs, so the records inflated from damaged input pass it
    until the stream itself fails, records later: read again with every CRC checked,
    the error names the first damaged record, as every other path does.
    """
    try:
        for _ in read_records(
            path, kind, max_record_bytes=max_record_bytes, storage_options=storage_options
        ):
            pass
    except DataLossError as exact:
        # One error: not chained to the later one it replaces, nor to a cause that
        # only repeats its text.
        if exact.__cause__ is not None and str(exact.__cause__) in exact.reason:
            exact.__cause__ = None
        raise exact from None
