"""Reading TFRecord records from a stream: GZIP/ZLIB files, pipes, sockets, file objects.

The stream is read in bounded chunks (never seeked), so memory follows the bytes that
are really present, whatever a length field claims. Used by
:func:`~tfrecord_engine.read_records` for everything but local uncompressed files; the
damage policies behave as there, with one limit: after damage to a *deflate* stream
(GZIP/ZLIB) nothing further can be decoded, so ``"skip"`` stops there and says so.
Damage inside the decompressed framing (a bad CRC, a torn record) is stepped over like
in a plain file. Offsets are offsets in the decompressed stream, as in TensorFlow.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO

import crc32c as _crc32c

from ..errors import CorruptedRecordError, DataLossError, TruncatedRecordError
from . import framing
from .compression import Compression, DecompressError, Decompressor
from .recovery import (
    DamageCallback,
    DamagePolicy,
    DamageReport,
    find_next_record,
    header_candidates,
)

__all__ = ["read_stream"]

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")

# Chunk size for stream reads; a record's bytes are gathered in chunks this large, so a
# lying length field cannot make us allocate more than the stream really holds.
_STREAM_CHUNK = 1 << 20
# Look-ahead window (bytes) when resynchronizing a stream.
_RESYNC_WINDOW = 1 << 20
_DEFLATE_STOP = "; a damaged deflate stream cannot be resynchronized, so reading stops here"


class _ByteStream:
    """Buffered exact reads, look-ahead and skipping over a raw or decompressing stream."""

    def __init__(self, raw: BinaryIO, kind: Compression) -> None:
        self._dec = Decompressor(raw, kind) if kind is not Compression.NONE else None
        # read1 returns what one underlying read gives instead of blocking for n bytes.
        self._read_raw = getattr(raw, "read1", raw.read)
        self._buf = b""
        self._pos = 0
        self._eof = False

    def _read_some(self) -> bytes:
        if self._dec is not None:
            chunk = self._dec.read(_STREAM_CHUNK)
        else:
            chunk = bytes(self._read_raw(_STREAM_CHUNK))
        self._eof = not chunk
        return chunk

    def peek(self, n: int) -> bytes:
        """Returns the next ``n`` bytes without consuming them (fewer only at the end).

        Reads in bounded chunks, so memory follows the bytes really present, never ``n``.
        """
        end = self._pos + n
        if end > len(self._buf) and not self._eof:
            parts = [self._buf[self._pos :]]
            have = len(parts[0])
            while have < n:
                chunk = self._read_some()
                if not chunk:
                    break
                parts.append(chunk)
                have += len(chunk)
            self._buf = b"".join(parts)
            self._pos = 0
            end = n
        return self._buf[self._pos : end]

    def discard(self, n: int) -> int:
        """Consumes up to ``n`` bytes that :meth:`peek` returned; returns how many.

        Callers only discard what they have peeked, so this never reads.
        """
        n = min(n, len(self._buf) - self._pos)
        self._pos += n
        return n

    @property
    def complete(self) -> bool:
        return self._dec is None or self._dec.complete


def _resync(stream: _ByteStream, first: int) -> tuple[int, bool]:
    """Discards ``first`` bytes, then bytes until an intact record starts.

    Returns:
        ``(bytes discarded, whether a record was found)``.
    """
    skipped = stream.discard(first)
    keep = framing.HEADER_SIZE + framing.FOOTER_SIZE - 1
    while True:
        data = stream.peek(_RESYNC_WINDOW)
        at_end = len(data) < _RESYNC_WINDOW
        for offsets, lengths in header_candidates(data, 0, limit=None):
            for off, length in zip(offsets.tolist(), lengths.tolist(), strict=True):
                need = off + framing.HEADER_SIZE + length + framing.FOOTER_SIZE
                # A record longer than the window: look further (bounded by the stream).
                whole = data if need <= len(data) or at_end else stream.peek(need)
                if find_next_record(whole, off, off + 1) == off:
                    return skipped + stream.discard(off), True
        if at_end:
            return skipped + stream.discard(len(data)), False
        skipped += stream.discard(len(data) - keep)


def read_stream(
    raw: BinaryIO,
    kind: Compression,
    *,
    verify: bool,
    path: str | None,
    policy: DamagePolicy,
    report: DamageCallback,
) -> Iterator[bytes]:
    stream = _ByteStream(raw, kind)
    offset = 0
    index = 0
    header_size = framing.HEADER_SIZE
    overhead = framing.HEADER_SIZE + framing.FOOTER_SIZE
    unpack_header = _HEADER.unpack_from
    unpack_footer = _FOOTER.unpack_from
    crc = _crc32c.crc32c
    delta = framing.MASK_DELTA
    max_length = 2**64 - 1 - framing.FOOTER_SIZE
    try:
        while True:
            # Fast path: an intact record already in the buffer, checked inline. Anything
            # else (a short buffer, any mismatch) takes the careful path below, which
            # reads more, re-checks and raises or reports.
            buf, pos = stream._buf, stream._pos
            if pos + header_size <= len(buf):
                length, stored = unpack_header(buf, pos)
                c = crc(buf[pos : pos + 8])
                end = pos + overhead + length
                if (
                    (((c >> 15) | (c << 17)) + delta) & 0xFFFFFFFF == stored
                    and length < max_length
                    and end <= len(buf)
                ):
                    data = buf[pos + header_size : end - 4]
                    c = crc(data) if verify else 0
                    if not verify or (
                        (((c >> 15) | (c << 17)) + delta) & 0xFFFFFFFF
                        == unpack_footer(buf, end - 4)[0]
                    ):
                        stream._pos = end
                        yield data
                        offset += end - pos
                        index += 1
                        continue
            header = stream.peek(header_size)
            if not header:
                break
            skip_first = 1
            try:
                length = framing.parse_header(
                    header, remaining=None, path=path, record_index=index, offset=offset
                )
                record = stream.peek(length + overhead)
                if len(record) < length + overhead:
                    raise TruncatedRecordError(
                        f"truncated record: header announces {length} data bytes (+4 CRC "
                        f"bytes) but the stream ends after {len(record) - header_size}",
                        path=path,
                        record_index=index,
                        offset=offset,
                    )
                data = record[header_size : header_size + length]
                skip_first = length + overhead  # the header is intact: skip it whole
                if verify:
                    framing.check_data(
                        data,
                        framing.read_footer(record, header_size + length),
                        path=path,
                        record_index=index,
                        offset=offset,
                    )
            except DataLossError as err:
                if policy == "raise":
                    raise
                if policy == "stop":
                    report(DamageReport(path, index, offset, None, err.reason))
                    return
                skipped, found = _resync(stream, skip_first)
                report(DamageReport(path, index, offset, skipped, err.reason))
                offset += skipped
                if not found:
                    break
                continue
            stream.discard(length + overhead)
            yield data
            offset += length + overhead
            index += 1
    except DecompressError as exc:
        if policy == "raise":
            raise CorruptedRecordError(
                str(exc), path=path, record_index=index, offset=offset
            ) from exc
        report(DamageReport(path, index, offset, None, f"{exc}{_DEFLATE_STOP}"))
        return
    if not stream.complete:
        unfinished = TruncatedRecordError(
            f"the {kind.value} stream ends without its end marker (was the writer "
            "closed?); every record before this offset was read intact",
            path=path,
            record_index=index,
            offset=offset,
        )
        if policy == "raise":
            raise unfinished
        report(DamageReport(path, index, offset, None, unfinished.reason))
