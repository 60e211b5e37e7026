"""Writing TFRecord files: ``TFRecordWriter``.

Uncompressed output is byte-identical to ``tf.io.TFRecordWriter``. GZIP/ZLIB output
uses TensorFlow's zlib parameters (see :mod:`tfrecord_engine.compression`), so it is
byte-identical on stock zlib and always decompresses to the identical framed stream.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable
from types import TracebackType
from typing import BinaryIO

from . import framing
from .compression import Compression, make_compressor, normalize_compression
from .errors import InvalidArgumentError, WriterClosedError

__all__ = ["TFRecordWriter"]

Record = bytes | bytearray | memoryview | str


def _as_bytes(record: Record) -> bytes | bytearray | memoryview:
    if isinstance(record, str):
        # tf.io.TFRecordWriter.write accepts str and writes it as UTF-8.
        return record.encode("utf-8")
    if isinstance(record, (bytes, bytearray)):
        return record
    if isinstance(record, memoryview):
        return record if record.contiguous and record.itemsize == 1 else record.tobytes()
    raise InvalidArgumentError(
        f"a record must be bytes-like or str, not {type(record).__name__}"
    )


class TFRecordWriter:
    """Writes records to a TFRecord file.

    Args:
        path: the file to create (truncated if it exists).
        compression: ``None``/``""``, ``"GZIP"`` or ``"ZLIB"`` (any case).

    ``close()`` is idempotent; ``write``/``flush`` after ``close`` raise
    :class:`WriterClosedError` (TensorFlow's writer silently accepts them).
    ``flush()`` on a compressed writer emits a zlib partial flush, like TensorFlow.

    Example:
        >>> import tempfile, os, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "data.tfrecord")
        >>> with tfe.TFRecordWriter(path) as w:
        ...     w.write(b"first")
        ...     w.write_many([b"second", b"third"])
        >>> os.path.getsize(path)
        64
    """

    def __init__(
        self, path: str | os.PathLike[str], compression: str | Compression | None = None
    ) -> None:
        self._kind = normalize_compression(compression)
        self.path = os.fspath(path)
        self._compressor: zlib._Compress | None = (
            make_compressor(self._kind) if self._kind is not Compression.NONE else None
        )
        self._file: BinaryIO | None = open(self.path, "wb")  # noqa: SIM115 - owned by self
        self.records_written = 0

    @property
    def compression(self) -> Compression:
        """The compression this writer applies."""
        return self._kind

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._file is None

    def _open_file(self, op: str) -> BinaryIO:
        if self._file is None:
            raise WriterClosedError(f"{op} on a closed TFRecordWriter ({self.path})")
        return self._file

    def _emit(self, f: BinaryIO, data: bytes) -> None:
        if self._compressor is not None:
            data = self._compressor.compress(data)
            if not data:
                return
        f.write(data)

    def write(self, record: Record) -> None:
        """Appends one record (bytes-like, or ``str`` written as UTF-8)."""
        f = self._open_file("write")
        self._emit(f, framing.frame(_as_bytes(record)))
        self.records_written += 1

    def write_many(self, records: Iterable[Record]) -> int:
        """Appends a batch of records, framed and checksummed together.

        Returns:
            the number of records written.
        """
        f = self._open_file("write_many")
        batch = [_as_bytes(r) for r in records]
        self._emit(f, framing.frame_many(batch))
        self.records_written += len(batch)
        return len(batch)

    def flush(self) -> None:
        """Pushes buffered bytes to the operating system."""
        f = self._open_file("flush")
        if self._compressor is not None:
            f.write(self._compressor.flush(zlib.Z_PARTIAL_FLUSH))
        f.flush()

    def close(self) -> None:
        """Finishes the stream and closes the file. Calling it again does nothing."""
        f = self._file
        if f is None:
            return
        self._file = None
        try:
            if self._compressor is not None:
                f.write(self._compressor.flush(zlib.Z_FINISH))
            f.flush()
        finally:
            f.close()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (
            f"TFRecordWriter({self.path!r}, compression={self._kind.value!r}, {state}, "
            f"{self.records_written} records)"
        )
