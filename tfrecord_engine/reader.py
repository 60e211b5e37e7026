"""Sequential reading of TFRecord files: ``read_records``.

Local uncompressed files are read through ``mmap`` (no read calls, no buffering copies);
GZIP/ZLIB files and file objects (pipes, sockets) are read as a stream in bounded chunks.

Where we differ from TensorFlow on purpose (all stricter, none loses data):

- 1-11 stray bytes after the last record (a torn header) raise
  :class:`TruncatedRecordError`; TensorFlow treats them as a clean end of file.
- A length field larger than the bytes that remain raises at once, before anything is
  allocated; TensorFlow 2.21 allocates first and can crash on a lying length.
- A GZIP/ZLIB stream that ends without its end marker (an unclosed writer) raises
  after the last complete record; TensorFlow stops silently.
- Concatenated ZLIB streams are all read; TensorFlow reads the first and silently drops
  the rest.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from typing import BinaryIO

from . import framing
from .compression import Compression, Decompressor, DecompressError, normalize_compression
from .errors import CorruptedRecordError, TruncatedRecordError

__all__ = ["read_records"]

PathLike = str | os.PathLike[str]

# Chunk size for stream reads; a record's bytes are gathered in chunks this large, so a
# lying length field cannot make us allocate more than the stream really holds.
_STREAM_CHUNK = 1 << 20


def read_records(
    source: PathLike | BinaryIO,
    compression: str | Compression | None = None,
    verify: bool = True,
) -> Iterator[bytes]:
    """Yields the data of every record of a TFRecord file, in order.

    Args:
        source: a path, or a binary file object (read sequentially, never seeked).
        compression: ``None``/``""``, ``"GZIP"`` or ``"ZLIB"`` (any case).
        verify: check every data CRC. Header (length) CRCs are always checked: they
            guard the length field that decides how much is read.

    Raises:
        CorruptedRecordError: a length or data CRC does not match.
        TruncatedRecordError: the file ends inside a record or header, or a length
            field exceeds the bytes that remain.
        InvalidArgumentError: an unknown compression type.

    Example:
        >>> import tempfile, os, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
        >>> with tfe.TFRecordWriter(path) as w:
        ...     w.write(b"hello")
        >>> list(tfe.read_records(path))
        [b'hello']
    """
    kind = normalize_compression(compression)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if kind is Compression.NONE:
            return _read_mapped(path, verify)
        return _read_stream_path(path, kind, verify)
    name = getattr(source, "name", None)
    return _read_stream(source, kind, verify, name if isinstance(name, str) else None)


def _read_mapped(path: str, verify: bool) -> Iterator[bytes]:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            yield from _iter_buffer(buf, path, verify)


def _iter_buffer(buf: mmap.mmap, path: str, verify: bool) -> Iterator[bytes]:
    size = len(buf)
    pos = 0
    index = 0
    header_size = framing.HEADER_SIZE
    parse_header = framing.parse_header
    read_footer = framing.read_footer
    check_data = framing.check_data
    crc = framing.crc32c
    mask = framing.mask_crc
    while pos < size:
        length = parse_header(
            buf[pos : pos + header_size],
            remaining=size - pos - header_size,
            path=path,
            record_index=index,
            offset=pos,
        )
        start = pos + header_size
        end = start + length
        data = buf[start:end]
        if verify:
            stored = read_footer(buf, end)
            if mask(crc(data)) != stored:
                check_data(data, stored, path=path, record_index=index, offset=pos)
        yield data
        pos = end + framing.FOOTER_SIZE
        index += 1


def _read_stream_path(path: str, kind: Compression, verify: bool) -> Iterator[bytes]:
    with open(path, "rb") as f:
        yield from _read_stream(f, kind, verify, path)


class _ByteStream:
    """A read-exactly helper over a raw or decompressing stream."""

    def __init__(self, raw: BinaryIO, kind: Compression) -> None:
        self._dec = Decompressor(raw, kind) if kind is not Compression.NONE else None
        # read1 returns what one underlying read gives instead of blocking for n bytes.
        self._read_raw = getattr(raw, "read1", raw.read)
        self._buf = b""
        self._pos = 0

    def _read_some(self) -> bytes:
        if self._dec is not None:
            return self._dec.read(_STREAM_CHUNK)
        return bytes(self._read_raw(_STREAM_CHUNK))

    def read_exact(self, n: int) -> bytes:
        """Returns ``n`` bytes, or fewer only at the end of the stream.

        Reads in bounded chunks, so memory follows the bytes really present, never ``n``.
        """
        end = self._pos + n
        if end <= len(self._buf):
            out = self._buf[self._pos : end]
            self._pos = end
            return out
        parts = [self._buf[self._pos :]]
        have = len(parts[0])
        chunk = b""
        while have < n:
            chunk = self._read_some()
            if not chunk:
                break
            parts.append(chunk)
            have += len(chunk)
        data = b"".join(parts)
        self._buf = data[n:]
        self._pos = 0
        return data[:n]

    @property
    def complete(self) -> bool:
        return self._dec is None or self._dec.complete


def _read_stream(
    raw: BinaryIO, kind: Compression, verify: bool, path: str | None
) -> Iterator[bytes]:
    stream = _ByteStream(raw, kind)
    offset = 0
    index = 0
    try:
        while True:
            header = stream.read_exact(framing.HEADER_SIZE)
            if not header:
                break
            length = framing.parse_header(
                header, remaining=None, path=path, record_index=index, offset=offset
            )
            body = stream.read_exact(length + framing.FOOTER_SIZE)
            if len(body) < length + framing.FOOTER_SIZE:
                raise TruncatedRecordError(
                    f"truncated record: header announces {length} data bytes (+4 CRC "
                    f"bytes) but the stream ends after {len(body)}",
                    path=path,
                    record_index=index,
                    offset=offset,
                )
            data = body[:length]
            if verify:
                framing.check_data(
                    data,
                    framing.read_footer(body, length),
                    path=path,
                    record_index=index,
                    offset=offset,
                )
            yield data
            offset += framing.HEADER_SIZE + length + framing.FOOTER_SIZE
            index += 1
    except DecompressError as exc:
        raise CorruptedRecordError(
            str(exc), path=path, record_index=index, offset=offset
        ) from exc
    if not stream.complete:
        raise TruncatedRecordError(
            f"the {kind.value} stream ends without its end marker (was the writer "
            "closed?); every record before this offset was read intact",
            path=path,
            record_index=index,
            offset=offset,
        )
