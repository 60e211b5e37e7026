"""Recognising a TFRecord file's compression from its first bytes (``compression="auto"``).

Readers take ``compression="auto"`` by default and decide from the bytes, in this order:

1. **A valid uncompressed record header**: the first 12 bytes are a length and the masked
   CRC32C of that length. A 32-bit check matches by chance once in four billion, so it
   wins over everything below, even when the length's first bytes happen to be the GZIP
   magic ``1f 8b`` (a first record of 35,615 bytes starts exactly so).
2. **The GZIP magic** ``1f 8b`` with method 8 (deflate), confirmed by inflating what was
   peeked (a damaged or foreign file that merely starts so is only a weak match).
3. **A zlib header**: ``CMF FLG`` with method 8 (``CMF & 0x0f``), a window of at most
   32 KiB (``CMF >> 4 <= 7``) and ``(CMF * 256 + FLG) % 31 == 0``, confirmed the same
   way. Beam's ``.deflate`` files are zlib streams and land here.

The file name's extension (``.gz``/``.gzip``; ``.zz``/``.zlib``/``.deflate``) is only a
hint: it decides when the bytes do not (an empty file, a damaged start), and it is
preferred over a weak match. An explicit ``compression`` still wins over everything; when
reading then fails at the start, the error says what the bytes look like
(:func:`mismatch_note`).

A stream (pipe, socket, file object) is peeked, not seeked: :func:`peek_stream` reads
the few bytes the decision needs and returns a stream that hands them back first, so
nothing is lost.
"""

from __future__ import annotations

import dataclasses
import os
import zlib
from collections.abc import Callable
from typing import BinaryIO, Final

from ..errors import DamageReport, DataLossError, InvalidArgumentError
from ..storage import remote
from ..storage.options import StorageOptionsArg
from . import framing
from .compression import Compression, CompressionLike, normalize_compression
from .recovery import DamageCallback

__all__ = [
    "AUTO",
    "HEAD_SIZE",
    "CompressionArg",
    "PeekedStream",
    "describe",
    "detect",
    "detect_file",
    "extension_hint",
    "mismatch_note",
    "noted",
    "noting",
    "peek_stream",
    "reading_compression",
    "requested",
    "sniff",
]

#: The ``compression`` value that asks readers to recognise the compression.
AUTO: Final = "auto"
#: What readers accept as ``compression``: ``"auto"``, ``None``/``""``, ``"GZIP"``,
#: ``"ZLIB"`` (any case), a :class:`Compression`, TensorFlow's ``TFRecordCompressionType``
#: ints or an options object (only its ``compression_type`` is used, as
#: ``tf_record_iterator(path, options)`` does).
CompressionArg = CompressionLike
#: Bytes looked at when they are at hand (a mapped file, one small read); a stream is
#: peeked only as far as the decision needs (:func:`peek_stream`).
HEAD_SIZE: Final = 4096

_EXTENSIONS: Final = {
    ".gz": Compression.GZIP,
    ".gzip": Compression.GZIP,
    ".zz": Compression.ZLIB,
    ".zlib": Compression.ZLIB,
    ".deflate": Compression.ZLIB,
}
_GZIP_WBITS: Final = 31
_ZLIB_WBITS: Final = 15


def requested(compression: CompressionArg) -> Compression | None:
    """The compression a caller asked for, or ``None`` for ``"auto"`` (any case).

    >>> requested("auto"), requested(None), requested("gzip")
    (None, <Compression.NONE: ''>, <Compression.GZIP: 'GZIP'>)

    Raises:
        InvalidArgumentError: any other value.
    """
    if isinstance(compression, str) and compression.lower() == AUTO:
        return None
    try:
        return normalize_compression(compression)
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"not a valid compression type: {compression!r} (expected 'auto', None, '', "
            "'GZIP' or 'ZLIB')"
        ) from None


def reading_compression(
    compression: CompressionArg, compression_type: CompressionArg = None
) -> CompressionArg:
    """A reader's ``compression``, given also as ``compression_type`` (TensorFlow's name).

    ``compression_type`` wins over the default ``"auto"``; given both, they must agree.

    >>> reading_compression("auto", "GZIP")
    'GZIP'
    """
    if compression_type is None:
        return compression
    if isinstance(compression, str) and compression.lower() == AUTO:
        return compression_type
    if requested(compression) != requested(compression_type):
        raise InvalidArgumentError(
            f"conflicting compression types: compression={compression!r}, "
            f"compression_type={compression_type!r}"
        )
    return compression


def extension_hint(name: str | None) -> Compression | None:
    """The compression a file name suggests, if any.

    >>> extension_hint("a.tfrecord.GZ"), extension_hint("b.deflate"), extension_hint("c")
    (<Compression.GZIP: 'GZIP'>, <Compression.ZLIB: 'ZLIB'>, None)
    """
    if not name:
        return None
    return _EXTENSIONS.get(os.path.splitext(name)[1].lower())


def _valid_header(head: bytes) -> bool:
    if len(head) < framing.HEADER_SIZE:
        return False
    stored = int.from_bytes(head[8:12], "little")
    return framing.mask_crc(framing.crc32c(head[:8])) == stored


def _gzip_magic(head: bytes) -> bool:
    return (
        len(head) >= 2 and head[0] == 0x1F and head[1] == 0x8B and (len(head) < 3 or head[2] == 8)
    )


def _zlib_header(head: bytes) -> bool:
    if len(head) < 2:
        return False
    cmf, flg = head[0], head[1]
    return cmf & 0x0F == 8 and cmf >> 4 <= 7 and (cmf * 256 + flg) % 31 == 0


def _inflates(head: bytes, wbits: int) -> bool:
    """Whether ``head`` is a valid prefix of a deflate stream (nothing contradicts it)."""
    try:
        zlib.decompressobj(wbits).decompress(head, 1 << 16)
    except zlib.error:
        return False
    return True


def sniff(head: bytes) -> tuple[Compression, bool] | None:
    """What the first bytes of a file look like: ``(compression, strong)`` or ``None``.

    ``strong`` is false for a GZIP magic or zlib header whose following bytes do not
    inflate (a damaged start, or a foreign file that merely begins so).

    >>> import gzip, zlib
    >>> sniff(framing.frame(b"x"))
    (<Compression.NONE: ''>, True)
    >>> sniff(gzip.compress(framing.frame(b"x")))
    (<Compression.GZIP: 'GZIP'>, True)
    >>> sniff(zlib.compress(framing.frame(b"x")))
    (<Compression.ZLIB: 'ZLIB'>, True)
    >>> sniff(b"\\x1f\\x8b\\x08\\xff\\xff\\xff"), sniff(b"hello world!")
    ((<Compression.GZIP: 'GZIP'>, False), None)
    """
    if _valid_header(head):
        return Compression.NONE, True
    if _gzip_magic(head):
        return Compression.GZIP, _inflates(head, _GZIP_WBITS)
    if _zlib_header(head):
        return Compression.ZLIB, _inflates(head, _ZLIB_WBITS)
    return None


def detect(head: bytes, name: str | None = None) -> Compression:
    """The compression of a file that starts with ``head`` (see the module docstring).

    A strong match from the bytes wins; else the extension of ``name``; else a weak
    GZIP match; else uncompressed (whose reader then reports what is wrong with the
    start, and what the bytes look like).

    >>> detect(b"", "x.tfrecord.gz"), detect(b"")
    (<Compression.GZIP: 'GZIP'>, <Compression.NONE: ''>)
    """
    seen = sniff(head)
    if seen is not None and seen[1]:
        return seen[0]
    hint = extension_hint(name)
    if hint is not None:
        return hint
    # A weak GZIP match still rests on 24 bits (magic and method); a zlib header on
    # about 12, which a damaged plain header meets by chance: not enough alone.
    if seen is not None and seen[0] is Compression.GZIP:
        return Compression.GZIP
    return Compression.NONE


def describe(head: bytes) -> str:
    """Says what the first bytes of a file look like, for error messages.

    >>> describe(b"\\x1f\\x8b\\x08\\x00")
    'the file starts with the GZIP magic (1f 8b)'
    """
    if not head:
        return "the file is empty"
    seen = sniff(head)
    shown = head[:2].hex(" ")
    if seen is None:
        return (
            f"the file starts with {head[:12].hex(' ')}: no valid record header, GZIP "
            "magic or zlib header"
        )
    kind, strong = seen
    damaged = "" if strong else ", but what follows does not inflate"
    if kind is Compression.NONE:
        return "the file starts with a valid uncompressed TFRecord header"
    if kind is Compression.GZIP:
        return f"the file starts with the GZIP magic ({shown}){damaged}"
    return f"the file starts with a zlib header ({shown}){damaged}"


def _spelled(kind: Compression) -> str:
    return "None" if kind is Compression.NONE else repr(kind.value)


def mismatch_note(head: bytes, given: Compression, *, auto: bool = False) -> str | None:
    """What to add to a read error under ``given`` when the bytes say otherwise (or are
    none of the three: then the first bytes are shown).

    ``auto``: ``given`` was chosen by :func:`detect` (which passed over a weak match),
    not by the caller.

    >>> mismatch_note(b"\\x1f\\x8b\\x08\\x00\\x00\\x00\\x00\\x00\\x00\\x03", Compression.NONE)
    "the file starts with the GZIP magic (1f 8b); pass compression='GZIP' or 'auto'"
    """
    seen = sniff(head)
    if seen is None:
        return describe(head) if head else None
    if seen[0] is given:
        return None
    if auto:
        return f"{describe(head)}; pass compression={_spelled(seen[0])} to read it as one"
    return f"{describe(head)}; pass compression={_spelled(seen[0])} or 'auto'"


class PeekedStream:
    """A binary stream whose first bytes were already read: they come back first.

    Has ``read``, ``read1`` and ``name`` (when the wrapped stream has one), which is
    what the stream readers use, and ``seekable``, ``tell`` and ``seek`` where the
    wrapped stream seeks (a compressed stream's reader reads ahead and comes back).
    """

    def __init__(self, raw: BinaryIO, head: bytes) -> None:
        self._raw = raw
        self._head = head
        self._read1 = getattr(raw, "read1", raw.read)
        name = getattr(raw, "name", None)
        if isinstance(name, str):
            self.name = name

    def _take(self, n: int) -> bytes:
        if n < 0 or n >= len(self._head):
            out, self._head = self._head, b""
        else:
            out, self._head = self._head[:n], self._head[n:]
        return out

    def read(self, n: int = -1) -> bytes:
        """Returns up to ``n`` bytes (the peeked ones first; ``b""`` only at the end)."""
        if self._head:
            return self._take(n)
        return bytes(self._raw.read(n))

    def read1(self, n: int = -1) -> bytes:
        """Like :meth:`read`, with at most one read of the wrapped stream."""
        if self._head:
            return self._take(n)
        return bytes(self._read1(n))

    def seekable(self) -> bool:
        """Whether the wrapped stream can seek (a file or ``BytesIO``, not a pipe)."""
        seekable = getattr(self._raw, "seekable", None)
        return bool(seekable is not None and seekable())

    def tell(self) -> int:
        """The position of the next byte :meth:`read` returns."""
        return int(self._raw.tell()) - len(self._head)

    def seek(self, pos: int) -> int:
        """Moves to ``pos`` (from the start); the peeked bytes are read again from there."""
        self._head = b""
        return int(self._raw.seek(pos))


def peek_stream(raw: BinaryIO, need: int = framing.HEADER_SIZE) -> tuple[bytes, PeekedStream]:
    """Reads the first bytes of ``raw`` without losing them.

    Reads until ``need`` bytes (enough for a record header, the GZIP magic or a zlib
    header) or the end, one underlying read at a time where the stream allows it, so a
    slow pipe is not waited on for more than the decision needs. Returns the bytes read
    and a stream that yields them again, then the rest.
    """
    read1 = getattr(raw, "read1", raw.read)
    parts: list[bytes] = []
    have = 0
    while have < need:
        chunk = bytes(read1(max(need - have, HEAD_SIZE) if hasattr(raw, "read1") else need - have))
        if not chunk:
            break
        parts.append(chunk)
        have += len(chunk)
    head = b"".join(parts)
    return head, PeekedStream(raw, head)


def noted(
    exc: DataLossError, head: bytes, given: Compression, *, auto: bool = False
) -> DataLossError | None:
    """``exc`` with :func:`mismatch_note` added, when it is about the file's first record
    and the bytes contradict ``given``; ``None`` otherwise."""
    if exc.record_index != 0:
        return None
    note = mismatch_note(head, given, auto=auto)
    if note is None:
        return None
    return type(exc)(f"{exc.reason}; {note}", path=exc.path, record_index=0, offset=exc.offset)


def noting(
    report: DamageCallback, head: Callable[[], bytes], given: Compression, *, auto: bool = False
) -> DamageCallback:
    """Wraps a damage callback: a report about the first record gets :func:`mismatch_note`
    (``head`` is called for the file's first bytes only then)."""

    def wrapped(damage: DamageReport) -> object:
        if damage.record_index == 0:
            note = mismatch_note(head(), given, auto=auto)
            if note is not None:
                damage = dataclasses.replace(damage, reason=f"{damage.reason}; {note}")
        return report(damage)

    return wrapped


def detect_file(path: str, storage_options: StorageOptionsArg = None) -> Compression:
    """The compression of a local regular file or a URL, from its first bytes (one small
    read) and its name. Not for pipes: reading their first bytes would consume them
    (:func:`~tfrecord_engine.read_records` peeks those itself)."""
    if remote.is_url(path):
        f = remote.RemoteFile(path, storage_options=storage_options)
        size = f.size
        return detect(f.fetch(0, min(size, HEAD_SIZE)) if size else b"", path)
    with open(path, "rb") as fh:
        return detect(fh.read(HEAD_SIZE), path)
