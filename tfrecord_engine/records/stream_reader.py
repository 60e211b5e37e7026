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

from ..errors import (
    CorruptedRecordError,
    DataLossError,
    RecordTooLargeError,
    TruncatedRecordError,
)
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
# A compressed record claiming more than this is first checked to be all there by
# decompressing ahead without keeping the bytes (then reading again from a snapshot), so
# a lying length over a decompression bomb costs time, linear, never memory.
_PROBE_ABOVE = 64 << 20
_DEFLATE_STOP = "; a damaged deflate stream cannot be resynchronized, so reading stops here"


class _ByteStream:
    """Buffered exact reads, look-ahead and skipping over a raw or decompressing stream."""

    def __init__(
        self, raw: BinaryIO, kind: Compression, members: list[tuple[int, int]] | None = None
    ) -> None:
        self._dec = (
            Decompressor(raw, kind, members=members) if kind is not Compression.NONE else None
        )
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

    def holds(self, n: int) -> int | None:
        """How many of the next ``n`` bytes exist, found without keeping them.

        Decompresses ahead, counting, then returns to where it was: memory stays flat
        whatever ``n`` is. ``None`` when that cannot be known without reading them for
        good (an uncompressed stream, whose bytes are real, or a compressed one over a
        pipe, which cannot seek back).
        """
        have = len(self._buf) - self._pos
        if have >= n or self._eof:
            return min(have, n)
        if self._dec is None:
            return None
        snap = self._dec.snapshot()
        if snap is None:
            return None
        try:
            while have < n:
                chunk = self._dec.read(_STREAM_CHUNK)
                if not chunk:
                    break
                have += len(chunk)
        except DecompressError:
            return None  # reading for good meets the damage and reports it
        finally:
            self._dec.restore(snap)
        return min(have, n)

    def skip(self, n: int) -> int:
        """Consumes up to ``n`` bytes, reading and dropping them; returns how many."""
        done = self.discard(n)
        while done < n and not self._eof:
            chunk = self._read_some()
            take = min(len(chunk), n - done)
            done += take
            if take < len(chunk):
                self._buf, self._pos = chunk, take
        return done

    @property
    def deflate_damage(self) -> DecompressError | None:
        """Damage the decompressor met ahead of what it returned, if any."""
        return None if self._dec is None else self._dec.failed

    @property
    def complete(self) -> bool:
        return self._dec is None or self._dec.complete

    def resync_trusted(self) -> bool:
        """Whether records found by resynchronizing from here can be trusted: always in
        an uncompressed stream; in a compressed one only where the member being read is
        intact to its end (see :meth:`Decompressor.member_intact`)."""
        return self._dec is None or self._dec.member_intact() is True


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
    max_record_bytes: int | None = None,
    members: list[tuple[int, int]] | None = None,
) -> Iterator[bytes]:
    """Yields the records of ``raw`` (see the module docstring); ``members`` receives
    the member starts of a compressed stream (see :class:`Decompressor`)."""
    stream = _ByteStream(raw, kind, members)
    offset = 0
    index = 0
    header_size = framing.HEADER_SIZE
    overhead = framing.HEADER_SIZE + framing.FOOTER_SIZE
    unpack_header = _HEADER.unpack_from
    unpack_footer = _FOOTER.unpack_from
    crc = _crc32c.crc32c
    delta = framing.MASK_DELTA
    max_length = 2**64 - 1 - framing.FOOTER_SIZE
    if max_record_bytes is not None:
        max_length = min(max_length, max_record_bytes + 1)
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
                    header,
                    remaining=None,
                    path=path,
                    record_index=index,
                    offset=offset,
                    max_length=max_record_bytes,
                )
                need = length + overhead
                there = stream.holds(need) if need > _PROBE_ABOVE else None
                record = stream.peek(need) if there is None or there == need else b""
                if len(record) < need:
                    got = (there if there is not None else len(record)) - header_size
                    raise TruncatedRecordError(
                        f"truncated record: header announces {length} data bytes (+4 CRC "
                        f"bytes) but the stream ends after {got}",
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
                ahead = stream.deflate_damage
                if ahead is not None:
                    # Past the last intact record the stream holds what zlib inflated
                    # from damaged input before it noticed: the damage is the deflate
                    # stream's, and nothing after it can be read.
                    raise ahead from err
                if policy == "raise":
                    raise
                if policy == "stop":
                    report(DamageReport(path, index, offset, None, err.reason))
                    return
                if isinstance(err, RecordTooLargeError):
                    # Its header is intact: step over the whole record, reading it away.
                    claimed = _HEADER.unpack_from(header)[0] + overhead
                    skipped = stream.skip(claimed)
                    report(DamageReport(path, index, offset, skipped, err.reason))
                    offset += skipped
                    if skipped < claimed:
                        break
                    continue
                if not stream.resync_trusted():
                    # The framing damage is the deflate stream's (or, over a pipe, may
                    # be): what follows it may hold copies of earlier records.
                    report(DamageReport(path, index, offset, None, f"{err.reason}{_DEFLATE_STOP}"))
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
