"""TensorFlow's ``ZlibOutputBuffer``, call for call, on the zlib library itself (ctypes).

Used for ``compression_level=0`` only: zlib sizes stored blocks by the input and output
space of each ``deflate`` call, which Python's ``zlib`` module does not let a caller set.
This module makes TensorFlow's calls (``xla/tsl/lib/io/zlib_outputbuffer.cc``) with
TensorFlow's buffers: an input buffer of ``input_buffer_size`` bytes that each record's
three pieces (header, data, footer) are appended to, deflated with ``flush_mode`` when a
piece does not fit (a piece larger than the buffer is deflated on its own), and an
output buffer of ``output_buffer_size`` bytes written out whenever it is full.

It needs the system's zlib shared library (stock zlib; TensorFlow bundles zlib 1.3.1,
whose stored blocks are those of every zlib since 1.2.12); :func:`load` returns ``None``
where there is none (the caller then falls back to Python's ``zlib``, whose level-0
bytes may differ from TensorFlow's).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import weakref
import zlib
from typing import Any, Final

__all__ = ["TFZlibOutputBuffer", "load"]

_HEADER: Final = 12
_FOOTER: Final = 4
# zlib.h return codes (Python's zlib module does not export them).
_Z_OK: Final = 0
_Z_STREAM_END: Final = 1
_Z_BUF_ERROR: Final = -5


class _ZStream(ctypes.Structure):
    _fields_ = [
        ("next_in", ctypes.c_void_p),
        ("avail_in", ctypes.c_uint),
        ("total_in", ctypes.c_ulong),
        ("next_out", ctypes.c_void_p),
        ("avail_out", ctypes.c_uint),
        ("total_out", ctypes.c_ulong),
        ("msg", ctypes.c_char_p),
        ("state", ctypes.c_void_p),
        ("zalloc", ctypes.c_void_p),
        ("zfree", ctypes.c_void_p),
        ("opaque", ctypes.c_void_p),
        ("data_type", ctypes.c_int),
        ("adler", ctypes.c_ulong),
        ("reserved", ctypes.c_ulong),
    ]


_LIB: list[Any] = []


def load() -> Any:
    """The zlib shared library of Python's ``zlib`` module, or ``None``."""
    if _LIB:
        return _LIB[0]
    lib = None
    name = ctypes.util.find_library("z")
    if name is not None:
        try:
            candidate = ctypes.CDLL(name)
            candidate.zlibVersion.restype = ctypes.c_char_p
            version = candidate.zlibVersion().decode()
            # Stock zlib (not zlib-ng and the like, which deflate otherwise); its stored
            # blocks have not changed since 1.2.12 (TensorFlow 2.21 bundles 1.3.1).
            if version.startswith("1.") and version[:1].isdigit() and "ng" not in version:
                candidate.deflateInit2_.argtypes = [
                    ctypes.POINTER(_ZStream),
                    *([ctypes.c_int] * 5),
                    ctypes.c_char_p,
                    ctypes.c_int,
                ]
                candidate.deflate.argtypes = [ctypes.POINTER(_ZStream), ctypes.c_int]
                candidate.deflateEnd.argtypes = [ctypes.POINTER(_ZStream)]
                lib = candidate
        except (OSError, AttributeError):
            lib = None
    _LIB.append(lib)
    return lib


def _end(lib: Any, stream: _ZStream) -> None:
    lib.deflateEnd(ctypes.byref(stream))


class TFZlibOutputBuffer:
    """A compressor (``compress``/``flush``) making ``ZlibOutputBuffer``'s zlib calls.

    ``compress`` takes the framed record stream in any chunks; ``flush(Z_PARTIAL_FLUSH)``
    is TensorFlow's ``Flush()``, ``flush(Z_FINISH)`` its ``Close()``. Returns the bytes
    TensorFlow writes to the file at that point.
    """

    def __init__(
        self,
        lib: Any,
        *,
        level: int,
        method: int,
        wbits: int,
        mem_level: int,
        strategy: int,
        flush_mode: int,
        input_buffer_size: int,
        output_buffer_size: int,
    ) -> None:
        self._lib = lib
        self._mode = flush_mode
        self._in_cap = input_buffer_size
        self._out_cap = output_buffer_size
        self._in = ctypes.create_string_buffer(input_buffer_size)
        self._out = ctypes.create_string_buffer(output_buffer_size)
        self._z = _ZStream()
        version = lib.zlibVersion()
        err = lib.deflateInit2_(
            ctypes.byref(self._z),
            level,
            method,
            wbits,
            mem_level,
            strategy,
            version,
            ctypes.sizeof(_ZStream),
        )
        if err != _Z_OK:
            raise zlib.error(f"deflateInit2 failed ({err})")
        self._finalizer = weakref.finalize(self, _end, lib, self._z)
        self._z.next_in = ctypes.addressof(self._in)
        self._z.avail_in = 0
        self._z.next_out = ctypes.addressof(self._out)
        self._z.avail_out = output_buffer_size
        self._written: list[bytes] = []
        # The record piece in progress (see TFZlibStream, which follows pieces alike).
        self._piece = 0  # 0 header, 1 data, 2 footer
        self._size = _HEADER
        self._left = 0
        self._active = False
        self._direct: list[bytes] | None = None  # a piece deflated on its own
        self._head = bytearray()

    # -- ZlibOutputBuffer ------------------------------------------------------------

    def _flush_output(self) -> None:
        n = self._out_cap - self._z.avail_out
        if n > 0:
            self._written.append(self._out.raw[:n])
            self._z.next_out = ctypes.addressof(self._out)
            self._z.avail_out = self._out_cap

    def _deflate(self, flush: int) -> None:
        err = self._lib.deflate(ctypes.byref(self._z), flush)
        if err not in (_Z_OK, _Z_BUF_ERROR) and not (
            err == _Z_STREAM_END and flush == zlib.Z_FINISH
        ):
            raise zlib.error(f"deflate failed ({err})")

    def _deflate_buffered(self, flush: int) -> None:
        while True:
            if self._z.avail_out == 0 or (
                flush in (zlib.Z_SYNC_FLUSH, zlib.Z_FULL_FLUSH) and self._z.avail_out < 6
            ):
                self._flush_output()
            self._deflate(flush)
            if self._z.avail_out != 0:
                break
        self._z.next_in = ctypes.addressof(self._in)

    def _append_to_input(self, data: bytes) -> None:
        # Unread input is always at the buffer's start here (every deflate loop ends
        # with the input consumed), so appending is a copy at the end.
        at = self._z.avail_in
        ctypes.memmove(ctypes.addressof(self._in) + at, data, len(data))
        self._z.next_in = ctypes.addressof(self._in)
        self._z.avail_in = at + len(data)

    def _deflate_directly(self, data: bytes) -> None:
        keep = ctypes.c_char_p(data)  # alive for the calls below
        self._z.next_in = ctypes.cast(keep, ctypes.c_void_p).value
        self._z.avail_in = len(data)
        while True:
            if self._z.avail_out == 0:
                self._flush_output()
            self._deflate(self._mode)
            if self._z.avail_out != 0:
                break
        self._z.next_in = ctypes.addressof(self._in)

    # -- record pieces ---------------------------------------------------------------

    def _start_piece(self) -> None:
        size = self._size
        self._direct = None
        if size > self._in_cap - self._z.avail_in:
            self._deflate_buffered(self._mode)
            if size > self._in_cap:
                self._direct = []

    def _feed(self, data: bytes) -> None:
        if self._direct is not None:
            self._direct.append(data)
        else:
            self._append_to_input(data)

    def _end_piece(self) -> None:
        if self._direct is not None:
            self._deflate_directly(b"".join(self._direct))
            self._direct = None
        self._active = False
        if self._piece == 0:
            self._piece, self._size = 1, int.from_bytes(self._head[:8], "little")
            self._head.clear()
        elif self._piece == 1:
            self._piece, self._size = 2, _FOOTER
        else:
            self._piece, self._size = 0, _HEADER

    def _take(self) -> bytes:
        out = b"".join(self._written)
        self._written.clear()
        return out

    def compress(self, data: bytes | bytearray | memoryview) -> bytes:
        """Appends the next framed bytes (whole records or any part of them)."""
        view = memoryview(data).cast("B")
        pos, n = 0, len(view)
        while pos < n:
            if not self._active:
                if self._size == 0:  # an empty record's data piece changes nothing
                    self._end_piece()
                    continue
                self._start_piece()
                self._active, self._left = True, self._size
            take = bytes(view[pos : pos + self._left])
            if self._piece == 0:
                self._head += take
            self._feed(take)
            pos += len(take)
            self._left -= len(take)
            if self._left == 0:
                self._end_piece()
        return self._take()

    def flush(self, mode: int = zlib.Z_FINISH) -> bytes:
        """``Flush()`` (a partial flush), ``Close()`` (``Z_FINISH``) or another flush."""
        if mode == zlib.Z_NO_FLUSH:
            return b""
        self._deflate_buffered(mode)
        self._flush_output()
        if mode == zlib.Z_FINISH:
            self._finalizer()
        return self._take()
