"""GZIP and ZLIB stream compression with TensorFlow's exact zlib parameters.

TensorFlow compresses a whole TFRecord file as one deflate stream (``deflateInit2`` once
per writer) with level -1, method DEFLATED, window bits 15 (ZLIB) or 31 (GZIP),
**memLevel 9** (zlib's own default is 8) and the default strategy. Using the same
parameters on stock zlib reproduces TensorFlow's files byte for byte; Python's ``gzip``
module would not (it writes an mtime, XFL and OS byte of its own).
"""

from __future__ import annotations

import enum
import zlib
from typing import BinaryIO, Final, NamedTuple, Protocol

from ..errors import InvalidArgumentError

__all__ = [
    "Compression",
    "CompressionLike",
    "Decompressor",
    "HasCompressionType",
    "make_compressor",
    "normalize_compression",
]

_LEVEL: Final = -1
_MEM_LEVEL: Final = 9
_GZIP_WBITS: Final = 31
_ZLIB_WBITS: Final = 15
# TensorFlow's ZlibInputStream reads 256 KiB of compressed input at a time.
READ_CHUNK: Final = 256 << 10


class Compression(enum.Enum):
    """The compression of a TFRecord file."""

    NONE = ""
    GZIP = "GZIP"
    ZLIB = "ZLIB"


class HasCompressionType(Protocol):
    """An options object: :class:`~tfrecord_engine.TFRecordOptions` or TensorFlow's own."""

    @property
    def compression_type(self) -> object:
        """``None``/``""``, ``"GZIP"``, ``"ZLIB"`` or a ``TFRecordCompressionType`` int."""


#: What writers and readers accept as a compression: ``None``/``""``, ``"GZIP"``,
#: ``"ZLIB"`` (any case), a :class:`Compression`, TensorFlow's ``TFRecordCompressionType``
#: ints (NONE=0, ZLIB=1, GZIP=2) or an options object with a ``compression_type``.
CompressionLike = str | Compression | int | HasCompressionType | None

# tf.io.TFRecordCompressionType: NONE=0, ZLIB=1, GZIP=2.
_TF_ENUM: Final = {0: Compression.NONE, 1: Compression.ZLIB, 2: Compression.GZIP}


def normalize_compression(compression: CompressionLike) -> Compression:
    """Maps a compression argument to a :class:`Compression`.

    Accepts ``None``/``""``/``"GZIP"``/``"ZLIB"`` (any case), a :class:`Compression`,
    TensorFlow's ``TFRecordCompressionType`` values (``0``/``1``/``2`` for
    NONE/ZLIB/GZIP) and any options object with a ``compression_type`` attribute
    (:class:`~tfrecord_engine.TFRecordOptions`, or ``tf.io.TFRecordOptions`` read by
    duck typing, as ``tf_record_iterator(path, options)`` accepts).

    >>> normalize_compression("gzip"), normalize_compression(1)
    (<Compression.GZIP: 'GZIP'>, <Compression.ZLIB: 'ZLIB'>)

    Raises:
        InvalidArgumentError: any other value (TensorFlow's Python writer rejects these
            too; its C++ reader would silently read the file uncompressed).
    """
    if compression is None:
        return Compression.NONE
    if isinstance(compression, Compression):
        return compression
    if isinstance(compression, str):
        try:
            return Compression(compression.upper())
        except ValueError:
            pass
    elif isinstance(compression, int) and not isinstance(compression, bool):
        if compression in _TF_ENUM:
            return _TF_ENUM[compression]
    elif hasattr(compression, "compression_type"):
        inner = compression.compression_type
        if not hasattr(inner, "compression_type"):  # no endless nesting
            return normalize_compression(inner)  # type: ignore[arg-type]
    auto = isinstance(compression, str) and compression.lower() == "auto"
    raise InvalidArgumentError(
        f"not a valid compression type: {compression!r} (expected None, '', 'GZIP' or "
        "'ZLIB', TFRecordCompressionType 0/1/2 or a TFRecordOptions)"
        + ("; 'auto' recognises a file's compression when reading it" if auto else "")
    )


def _wbits(kind: Compression) -> int:
    return _GZIP_WBITS if kind is Compression.GZIP else _ZLIB_WBITS


def make_compressor(kind: Compression) -> zlib._Compress:
    """Returns a deflate compressor configured exactly like TensorFlow's writer."""
    if kind is Compression.NONE:
        raise InvalidArgumentError("make_compressor needs GZIP or ZLIB")
    return zlib.compressobj(
        _LEVEL, zlib.DEFLATED, _wbits(kind), _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY
    )


class DecompressError(Exception):
    """Raised by :class:`Decompressor` for damaged compressed input (wrapped by the reader)."""


#: Decompressed bytes produced (and dropped) at a time by :meth:`Decompressor.member_intact`.
_AHEAD_CHUNK = 1 << 20


class _Snapshot(NamedTuple):
    raw_pos: int
    raw_read: int
    produced: int
    dec: zlib._Decompress
    pending: bytes
    raw_eof: bool
    started_member: bool
    complete: bool
    failed: DecompressError | None
    member: int


class Decompressor:
    """Incremental reader of a GZIP/ZLIB file's decompressed bytes.

    GZIP: concatenated members are read one after another (records may span members),
    like TensorFlow. ZLIB: concatenated streams are read too, where TensorFlow silently
    ignores everything after the first stream; we never drop data.

    ``read(n)`` returns at most ``n`` bytes and ``b""`` only at the end. Memory use is
    bounded by ``n`` plus one decompressed chunk, whatever a length field claims.

    ``members``, when given, receives ``(compressed offset, decompressed offset)`` of
    every member (stream) start after the first, as reading reaches it: a fresh inflater
    can begin there, which makes it a restart point for random access. Offsets count
    from where ``raw`` was when the reader was made.
    """

    def __init__(
        self, raw: BinaryIO, kind: Compression, *, members: list[tuple[int, int]] | None = None
    ) -> None:
        if kind is Compression.NONE:
            raise InvalidArgumentError("Decompressor needs GZIP or ZLIB")
        self._raw = raw
        self._kind = kind
        self._dec = zlib.decompressobj(_wbits(kind))
        self._pending = b""  # compressed input not yet fed to the decompressor
        self._raw_eof = False
        self._started_member = False  # any input consumed by the current member
        self.complete = True  # False when the input ended inside a member
        self._failed: DecompressError | None = None  # raised by every read after damage
        self._members = members
        self._raw_read = 0  # compressed bytes taken from raw
        self._produced = 0  # decompressed bytes returned
        self._member = 0  # members (streams) begun before the current one
        self._intact = -1  # the last member member_intact found intact to its end

    def _next_input(self) -> bytes:
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        if self._raw_eof:
            return b""
        data = self._raw.read(READ_CHUNK)
        if not data:
            self._raw_eof = True
        self._raw_read += len(data)
        return data

    def snapshot(self) -> _Snapshot | None:
        """The reader's state, to :meth:`restore` after reading ahead; ``None`` when the
        underlying file cannot seek back (a pipe or socket)."""
        seekable = getattr(self._raw, "seekable", None)
        if seekable is None or not seekable():
            return None
        return _Snapshot(
            self._raw.tell(),
            self._raw_read,
            self._produced,
            self._dec.copy(),
            self._pending,
            self._raw_eof,
            self._started_member,
            self.complete,
            self._failed,
            self._member,
        )

    def restore(self, snap: _Snapshot) -> None:
        """Returns to the state of :meth:`snapshot` (the file is seeked back)."""
        self._raw.seek(snap.raw_pos)
        self._raw_read = snap.raw_read
        self._produced = snap.produced
        self._dec = snap.dec
        self._pending = snap.pending
        self._raw_eof = snap.raw_eof
        self._started_member = snap.started_member
        self.complete = snap.complete
        self._failed = snap.failed
        self._member = snap.member

    def member_intact(self) -> bool | None:
        """Whether the member (stream) being read inflates from here to its end marker,
        its checksum included, found by reading ahead without keeping the bytes (then
        back where it was); ``None`` where that cannot be known (a pipe).

        Records found after damage in a member's decompressed bytes are only trusted
        where the member is intact: a damaged deflate stream may inflate to garbage for
        a while before zlib notices, and that garbage may copy whole earlier frames,
        CRCs and all, through back-references.
        """
        if self._intact == self._member:
            return True  # (found so at an earlier damage: read ahead once a member)
        snap = self.snapshot()
        if snap is None:
            return None
        member = self._dec
        try:
            while self._dec is member and not member.eof:
                if not self.read(_AHEAD_CHUNK):
                    # The input ended: intact unless a member was left open (the bytes
                    # already read belong to members that ended, their checksums checked).
                    intact = self.complete
                    break
            else:
                intact = True  # (read went on into the next member: this one ended intact)
        except DecompressError:
            intact = False
        finally:
            self.restore(snap)
        if intact:
            self._intact = self._member
        return intact

    @property
    def failed(self) -> DecompressError | None:
        """The damage met ahead (the bytes before it were returned), or ``None``."""
        return self._failed

    def read(self, n: int) -> bytes:
        """Returns up to ``n`` decompressed bytes (``b""`` at the end of the input).

        Raises:
            DecompressError: the compressed data is damaged.
        """
        if self._failed is not None:
            raise self._failed
        while True:
            if self._dec.eof:
                rest = self._dec.unused_data
                self._dec = zlib.decompressobj(_wbits(self._kind))
                self._started_member = False
                self._member += 1
                if rest:
                    self._pending = rest + self._pending
            if self._dec.unconsumed_tail:
                data = self._dec.unconsumed_tail
            else:
                data = self._next_input()
                if not data:
                    # Input exhausted: anything the member still holds is lost.
                    self.complete = not self._started_member
                    return b""
                if not self._started_member and self._members is not None:
                    self._note_member(self._raw_read - len(self._pending) - len(data))
            self._started_member = True
            try:
                out = self._dec.decompress(data, n)
            except zlib.error as exc:
                failed = DecompressError(f"{self._kind.value} data is damaged: {exc}")
                failed.__cause__ = exc
                self._failed = failed
                # What the failing call inflated is dropped, though some of it came
                # before zlib noticed: bytes inflated after the damaged bit and before
                # the error are garbage that may copy whole earlier frames through
                # back-references, CRCs and all (a record of 8 bytes came back as an
                # earlier record's header): never handed on as records.
                raise failed from exc
            if out:
                self._produced += len(out)
                return out

    def _note_member(self, at: int) -> None:
        """Records a member starting at compressed offset ``at`` (not the first; once,
        though a :meth:`restore` reads the same bytes again)."""
        assert self._members is not None
        if at > 0 and (not self._members or at > self._members[-1][0]):
            self._members.append((at, self._produced))
