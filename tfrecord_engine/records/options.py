"""TensorFlow's writer options: ``TFRecordOptions`` and the zlib stream it describes.

:class:`TFRecordOptions` mirrors ``tf.io.TFRecordOptions`` field for field;
:class:`ZlibSettings` is the resolved zlib configuration with TensorFlow's defaults
(``ZlibCompressionOptions`` in ``xla/tsl/lib/io/zlib_compression_options.h``):

==========================  ==========================================================
``compression_level``       -1 (``Z_DEFAULT_COMPRESSION``, i.e. 6); 0 ... 9
``compression_method``      8 (``Z_DEFLATED``, the only method zlib has)
``window_bits``             15 for ZLIB, 31 (15 + 16) for GZIP; a given value is used
                            as is, like TensorFlow: 8 ... 15 for ZLIB, 25 ... 31 for GZIP
``mem_level``               **9** (zlib's own default is 8); 1 ... 9
``compression_strategy``    0 (``Z_DEFAULT_STRATEGY``); 1 filtered, 2 Huffman only,
                            3 RLE, 4 fixed
``flush_mode``              0 (``Z_NO_FLUSH``); 1 partial, 2 sync, 3 full, 5 block
``input_buffer_size``       262144 (256 KiB)
``output_buffer_size``      262144 (256 KiB)
==========================  ==========================================================

With the default ``flush_mode`` the output does not depend on the buffer sizes. With
another flush mode TensorFlow's ``ZlibOutputBuffer`` deflates with that mode each time
its input buffer fills (and for every record piece larger than the buffer), and repeats
a flush marker when its output buffer ends exactly inside one; :class:`TFZlibStream`
reproduces both, so the bytes are TensorFlow's for every combination on stock zlib.
``compression_level=0`` (stored blocks, sized by each ``deflate`` call's input and output
space, which Python's ``zlib`` API cannot set) goes through
:class:`~tfrecord_engine.records.zlib_buffer.TFZlibOutputBuffer`, which makes
TensorFlow's very zlib calls through ctypes; without a loadable zlib library it falls
back to Python's ``zlib`` (the same stream, other blocks).

``flush_mode`` 4 (``Z_FINISH``) is refused: TensorFlow's writer then ends the stream at
the first flush and silently drops every later record. ``window_bits`` 8 (a 256-byte
window) is taken for ZLIB as TensorFlow takes it: zlib's deflate has no such window and
writes with 512 bytes (9), header included, so the file is the one 9 gives, byte for
byte; for GZIP (24) zlib refuses it, and TensorFlow's writer then aborts the process,
so it is refused here. A ZLIB window with GZIP (or the reverse) is refused too:
TensorFlow writes such a file, but its reader then fails on it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol

from ..errors import InvalidArgumentError
from . import zlib_buffer
from .compression import Compression, CompressionLike, normalize_compression

__all__ = [
    "Compressor",
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFZlibStream",
    "ZlibSettings",
    "flush_like_tf",
    "make_writer_compressor",
    "resolve_writer_options",
]

_BUFFER: Final = 256 << 10
_FLUSH_NAMES: Final = {
    0: "Z_NO_FLUSH",
    1: "Z_PARTIAL_FLUSH",
    2: "Z_SYNC_FLUSH",
    3: "Z_FULL_FLUSH",
    4: "Z_FINISH",
    5: "Z_BLOCK",
}
# A sync/full flush marker is 5 bytes (6 with bits left before it): with an output buffer
# shorter than that, zlib repeats it forever (TensorFlow's writer hangs).
_SYNCING: Final = (zlib.Z_SYNC_FLUSH, zlib.Z_FULL_FLUSH)
_MIN_SYNC_OUTPUT: Final = 6
# The fields of tf.io.TFRecordOptions after compression_type, in its order.
_ZLIB_FIELDS: Final = (
    "flush_mode",
    "input_buffer_size",
    "output_buffer_size",
    "window_bits",
    "compression_level",
    "compression_method",
    "mem_level",
    "compression_strategy",
)


class TFRecordCompressionType:
    """TensorFlow's ``tf.compat.v1.io.TFRecordCompressionType`` values."""

    NONE: ClassVar[int] = 0
    ZLIB: ClassVar[int] = 1
    GZIP: ClassVar[int] = 2


def _int(name: str, value: object, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidArgumentError(f"{name} must be an int in [{low}, {high}], got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class ZlibSettings:
    """A resolved zlib configuration (TensorFlow's defaults; see the module docstring).

    ``window_bits`` ``None`` means TensorFlow's default for the compression: 15 (ZLIB)
    or 31 (GZIP).
    """

    compression_level: int = -1
    compression_method: int = zlib.DEFLATED
    window_bits: int | None = None
    mem_level: int = 9
    compression_strategy: int = zlib.Z_DEFAULT_STRATEGY
    flush_mode: int = zlib.Z_NO_FLUSH
    input_buffer_size: int = _BUFFER
    output_buffer_size: int = _BUFFER

    def __post_init__(self) -> None:
        _int("compression_level", self.compression_level, -1, 9)
        if self.compression_method != zlib.DEFLATED or isinstance(self.compression_method, bool):
            raise InvalidArgumentError(
                f"compression_method must be {zlib.DEFLATED} (Z_DEFLATED, the only zlib "
                f"method), got {self.compression_method!r}"
            )
        if self.window_bits is not None:
            _int("window_bits", self.window_bits, 8, 31)
            if 16 <= self.window_bits <= 24:
                raise InvalidArgumentError(
                    f"window_bits must be 8..15 (ZLIB) or 25..31 (GZIP: 16 + 9..15; zlib "
                    f"has no 256-byte window with a gzip header), got {self.window_bits}"
                )
        _int("mem_level", self.mem_level, 1, 9)
        _int("compression_strategy", self.compression_strategy, 0, 4)
        _int("flush_mode", self.flush_mode, 0, 5)
        if self.flush_mode == zlib.Z_FINISH:
            raise InvalidArgumentError(
                "flush_mode Z_FINISH (4) is not supported: TensorFlow's writer then ends "
                "the stream at the first flush and silently drops every later record"
            )
        _int("input_buffer_size", self.input_buffer_size, 1, (1 << 31) - 1)
        # TensorFlow's ZlibOutputBuffer refuses 1 (its writer then aborts the process).
        _int("output_buffer_size", self.output_buffer_size, 2, (1 << 31) - 1)
        if self.flush_mode in _SYNCING and self.output_buffer_size < _MIN_SYNC_OUTPUT:
            raise InvalidArgumentError(
                f"output_buffer_size must be at least {_MIN_SYNC_OUTPUT} with flush_mode "
                f"{_FLUSH_NAMES[self.flush_mode]}, got {self.output_buffer_size}: with a "
                "buffer shorter than a flush marker TensorFlow's writer writes markers forever"
            )

    def wbits(self, kind: Compression) -> int:
        """The ``wbits`` handed to ``deflateInit2`` for ``kind``.

        Raises:
            InvalidArgumentError: ``window_bits`` is of the other format (a zlib window
                for GZIP or a gzip window for ZLIB).
        """
        gzip = kind is Compression.GZIP
        if self.window_bits is None:
            return 31 if gzip else 15
        if gzip != (self.window_bits > 15):
            want = "25..31 (16 + 9..15)" if gzip else "8..15"
            raise InvalidArgumentError(
                f"window_bits={self.window_bits} does not write {kind.value}: use {want} "
                f"for {kind.value} (TensorFlow would write the other format under this "
                "name, which its own reader then refuses)"
            )
        return self.window_bits

    @property
    def is_default_flush(self) -> bool:
        """Whether records are deflated without flushes (the output then does not
        depend on the buffer sizes)."""
        return self.flush_mode == zlib.Z_NO_FLUSH


@dataclass(frozen=True, slots=True)
class TFRecordOptions:
    """Writer options with ``tf.io.TFRecordOptions``'s names, values and defaults.

    Each zlib field left ``None`` takes TensorFlow's default (:class:`ZlibSettings`).
    Like TensorFlow's, the zlib fields only matter for a compressed file. Pass it as
    ``TFRecordWriter(path, options)`` (or ``options=``); ``tf.io.TFRecordOptions``
    itself is accepted the same way (read by its attributes, without importing
    TensorFlow), and so are readers' ``compression`` arguments (only the type is used,
    as ``tf_record_iterator`` does).

    Args:
        compression_type: ``None``/``""``, ``"ZLIB"``, ``"GZIP"`` (any case), a
            :class:`~tfrecord_engine.Compression` or a ``TFRecordCompressionType`` int.
        flush_mode: 0 (``Z_NO_FLUSH``, default), 1 partial, 2 sync, 3 full, 5 block.
        input_buffer_size, output_buffer_size: TensorFlow's zlib buffers (bytes); with a
            flush mode they decide where flushes land, and are honoured exactly.
        window_bits: 8..15 for ZLIB (8 writes what 9 writes, as in TensorFlow), 25..31
            for GZIP (default 15 / 31).
        compression_level: -1 (default, i.e. 6) or 0..9.
        compression_method: 8 (``Z_DEFLATED``).
        mem_level: 1..9 (default 9).
        compression_strategy: 0 (default) ... 4.

    Raises:
        InvalidArgumentError: an invalid value (also a ``ValueError``, as TensorFlow's).

    Example:
        >>> opts = TFRecordOptions("GZIP", compression_level=9)
        >>> opts.compression, opts.zlib_settings().mem_level
        (<Compression.GZIP: 'GZIP'>, 9)
    """

    compression_type: CompressionLike = None
    flush_mode: int | None = None
    input_buffer_size: int | None = None
    output_buffer_size: int | None = None
    window_bits: int | None = None
    compression_level: int | None = None
    compression_method: int | None = None
    mem_level: int | None = None
    compression_strategy: int | None = None

    def __post_init__(self) -> None:
        kind = normalize_compression(self.compression_type)
        settings = self.zlib_settings()
        if kind is not Compression.NONE:
            settings.wbits(kind)

    @property
    def compression(self) -> Compression:
        """The compression these options select."""
        return normalize_compression(self.compression_type)

    def zlib_settings(self) -> ZlibSettings:
        """The zlib configuration: the given fields over TensorFlow's defaults."""
        return ZlibSettings(
            **{f: getattr(self, f) for f in _ZLIB_FIELDS if getattr(self, f) is not None}
        )

    @staticmethod
    def get_compression_type_string(options: object) -> str:
        """``"ZLIB"``, ``"GZIP"`` or ``""`` for options, a type string or an int (TF's API)."""
        return normalize_compression(options).value  # type: ignore[arg-type]


def resolve_writer_options(
    compression: object, options: object = None, compression_type: object = None
) -> tuple[Compression, ZlibSettings]:
    """The compression and zlib settings a writer was given, however spelled.

    Each of ``compression`` (the positional argument, TensorFlow's ``options``),
    ``options`` and ``compression_type`` may be a compression type or an options object
    (ours or ``tf.io.TFRecordOptions``, read by duck typing); at most one of them may be
    an options object, and the compression types given must agree.

    >>> resolve_writer_options("gzip", compression_type="GZIP")[0]
    <Compression.GZIP: 'GZIP'>
    """
    given = [v for v in (compression, options, compression_type) if v is not None]
    objects = [v for v in given if _is_options(v)]
    if len(objects) > 1:
        raise InvalidArgumentError("pass one options object, not several")
    kinds = {normalize_compression(v) for v in given}  # type: ignore[arg-type]
    if len(kinds) > 1:
        raise InvalidArgumentError(
            "conflicting compression types: "
            + ", ".join(repr(normalize_compression(v).value) for v in given)  # type: ignore[arg-type]
        )
    kind = kinds.pop() if kinds else Compression.NONE
    if not objects:
        return kind, ZlibSettings()
    obj = objects[0]
    fields: dict[str, Any] = {}
    for name in _ZLIB_FIELDS:
        value = getattr(obj, name, None)
        if value is not None:
            fields[name] = int(value) if _is_int_like(value) else value
    settings = ZlibSettings(**fields)
    if kind is not Compression.NONE:
        settings.wbits(kind)
    return kind, settings


def _is_options(value: object) -> bool:
    return not isinstance(value, (str, int, Compression)) and hasattr(value, "compression_type")


def _is_int_like(value: object) -> bool:
    # numpy ints and the like (not bool, not floats): TensorFlow's pybind takes them.
    return (
        not isinstance(value, (bool, float))
        and hasattr(value, "__index__")
        and not isinstance(value, int)
    )


class Compressor(Protocol):
    """What a writer deflates through: ``zlib``'s compressor or one of TensorFlow's calls."""

    def compress(self, data: bytes | bytearray | memoryview, /) -> bytes:
        """Deflates the next framed bytes."""

    def flush(self, mode: int = ..., /) -> bytes:
        """Flushes with ``mode``."""


def make_writer_compressor(kind: Compression, settings: ZlibSettings) -> Compressor:
    """A compressor whose output is TensorFlow's for ``settings``.

    The default flush mode gets a plain ``zlib`` compressor (nothing added per
    record); another flush mode a :class:`TFZlibStream`. Both have ``compress(data)``
    and ``flush(mode)``.
    """
    if settings.compression_level == 0:
        # Stored blocks: only TensorFlow's own zlib calls give its bytes.
        lib = zlib_buffer.load()
        if lib is not None:
            return zlib_buffer.TFZlibOutputBuffer(
                lib,
                level=0,
                method=settings.compression_method,
                wbits=settings.wbits(kind),
                mem_level=settings.mem_level,
                strategy=settings.compression_strategy,
                flush_mode=settings.flush_mode,
                input_buffer_size=settings.input_buffer_size,
                output_buffer_size=settings.output_buffer_size,
            )
    co = zlib.compressobj(
        settings.compression_level,
        settings.compression_method,
        settings.wbits(kind),
        settings.mem_level,
        settings.compression_strategy,
    )
    if settings.is_default_flush:
        return co
    return TFZlibStream(co, settings)


def flush_like_tf(
    co: Any, mode: int, *, fed: bool, fill: int, produced: int, cap: int
) -> tuple[list[bytes], int]:
    """The bytes of one ``ZlibOutputBuffer`` deflate loop with a marking flush ``mode``.

    Args:
        co: the compressor, fed with everything TensorFlow would now deflate.
        fed: whether ``co`` was given input since its last flush, or has written
            nothing yet (otherwise a repeated flush does nothing).
        fill: bytes in TensorFlow's output buffer before the bytes ``produced``.
        produced: bytes ``co`` returned since its last flush.
        cap: TensorFlow's ``output_buffer_size``.

    Returns:
        the bytes to write and the output buffer's fill after them. When a marker
        reaches the buffer's end, zlib is called again and writes it once more; this
        reproduces that.
    """
    # The block first, then the marker alone: a marker must not land on the end of
    # Python's own output buffer (zlib would repeat it where TensorFlow does not).
    block = co.flush(zlib.Z_BLOCK) if fed else b""
    marker = co.flush(mode)
    out = [block, marker]
    end = fill + produced + len(block)
    if not marker:
        return out, end % cap
    if produced + len(block) and end % cap == 0:
        # The block ended exactly at the buffer's end: zlib returned before the marker,
        # which the next call writes into the emptied buffer.
        end = 0
    end = end % cap + len(marker)
    while marker and end >= cap:
        # The marker reached the buffer's end: zlib is called again and, its flush state
        # reset by the full buffer, writes another marker where the first one's bytes
        # end (this ends: a repeated marker is shorter than the buffer).
        marker = co.compress(b"") + co.flush(mode)
        out.append(marker)
        end = end % cap + len(marker)
    return out, end


_HEADER: Final = 12
_FOOTER: Final = 4
_HEADER_PIECE, _DATA_PIECE, _FOOTER_PIECE = 0, 1, 2


class TFZlibStream:
    """Deflates a framed record stream exactly as TensorFlow's ``ZlibOutputBuffer``.

    TensorFlow appends each record as three pieces (the 12-byte header, the data, the
    4-byte footer) to an input buffer of ``input_buffer_size`` bytes. A piece that does
    not fit first deflates the buffer with ``flush_mode``; a piece larger than the
    whole buffer is then deflated directly, with ``flush_mode`` too. The deflated bytes
    go to an output buffer of ``output_buffer_size`` bytes; when a flush marker ends
    exactly at (or runs past) its end, zlib is called again with the same flush mode
    and writes the marker a second time. This class follows the pieces in the framed
    bytes it is given (they may arrive in any chunks) and makes the same zlib calls.
    """

    def __init__(self, co: Any, settings: ZlibSettings) -> None:
        self._co = co
        self._mode = settings.flush_mode
        self._in_cap = settings.input_buffer_size
        self._out_cap = settings.output_buffer_size
        self._buffered = 0  # bytes in TensorFlow's input buffer
        # Input handed to zlib since the last flush call (or the stream not started:
        # zlib's first call writes the stream header, whatever the input).
        self._fed = True
        self._fill = 0  # bytes in TensorFlow's output buffer
        self._since = 0  # bytes produced since the last flush call
        self._piece = _HEADER_PIECE  # the piece in progress or next
        self._size = _HEADER  # its size
        self._left = 0  # its bytes still to come; 0: not started
        self._active = False
        self._direct = False  # it is deflated directly
        self._head = bytearray()  # the header piece so far

    def _feed(self, data: memoryview, out: list[bytes]) -> None:
        chunk = self._co.compress(data)
        self._since += len(chunk)
        out.append(chunk)
        self._fed = True

    def _start_piece(self, out: list[bytes]) -> None:
        # ZlibOutputBuffer::Append: buffer the piece, or deflate the buffer and then
        # buffer it, or deflate it directly.
        size = self._size
        self._direct = False
        if size > self._in_cap - self._buffered:
            self._deflate(self._mode, out, buffered=True)
            self._direct = size > self._in_cap
        if not self._direct:
            self._buffered += size

    def _end_piece(self, out: list[bytes]) -> None:
        if self._direct:
            self._deflate(self._mode, out, buffered=False)
            self._direct = False
        self._active = False
        if self._piece == _HEADER_PIECE:
            self._piece, self._size = _DATA_PIECE, int.from_bytes(self._head[:8], "little")
            self._head.clear()
        elif self._piece == _DATA_PIECE:
            self._piece, self._size = _FOOTER_PIECE, _FOOTER
        else:
            self._piece, self._size = _HEADER_PIECE, _HEADER

    def _deflate(self, mode: int, out: list[bytes], *, buffered: bool) -> None:
        """One deflate loop of ZlibOutputBuffer with ``mode`` over what was fed."""
        self._buffered = 0
        cap = self._out_cap
        if buffered and mode in (zlib.Z_SYNC_FLUSH, zlib.Z_FULL_FLUSH) and cap - self._fill < 6:
            self._fill = 0  # DeflateBuffered writes its output buffer out first
        if mode == zlib.Z_FINISH:
            out.append(self._co.flush(zlib.Z_FINISH))
            return
        out_bytes, self._fill = flush_like_tf(
            self._co, mode, fed=self._fed, fill=self._fill, produced=self._since, cap=cap
        )
        out += out_bytes
        self._since = 0
        self._fed = False

    def compress(self, data: bytes | bytearray | memoryview) -> bytes:
        """Deflates the next framed bytes (whole records or any part of them)."""
        out: list[bytes] = []
        view = memoryview(data).cast("B")
        pos, n = 0, len(view)
        while pos < n:
            if not self._active:
                if self._size == 0:  # an empty record: its data piece changes nothing
                    self._end_piece(out)
                    continue
                self._start_piece(out)
                self._active, self._left = True, self._size
            take = view[pos : pos + self._left]
            if self._piece == _HEADER_PIECE:
                self._head += take
            self._feed(take, out)
            pos += len(take)
            self._left -= len(take)
            if self._left == 0:
                self._end_piece(out)
        return b"".join(out)

    def flush(self, mode: int = zlib.Z_FINISH) -> bytes:
        """Deflates what is buffered with ``mode`` (``ZlibOutputBuffer::DeflateBuffered``).

        ``Z_PARTIAL_FLUSH`` is ``TFRecordWriter.flush()``: TensorFlow then also writes its
        output buffer out.
        """
        if mode == zlib.Z_NO_FLUSH:
            return b""
        out: list[bytes] = []
        self._deflate(mode, out, buffered=True)
        if mode == zlib.Z_PARTIAL_FLUSH:
            self._fill = 0  # ZlibOutputBuffer::Flush writes its output buffer out
        return b"".join(out)
