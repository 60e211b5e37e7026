"""Reading the record that starts at a byte offset, as TensorFlow's
``tf_record_random_reader`` does (``tensorflow.python.lib.io.tf_record``): ``read(offset)``
returns the record and the offset of the next one. For uncompressed files, local or URLs.

TensorFlow's behaviour, kept: an offset at or past the end of the file is out of range
(``OutOfRangeError``, an ``IndexError``: "Out of range at reading offset N"), and so is
one with less than a record header (12 bytes) left after it; an offset that
is not a record's start fails its length CRC (a ``DataLossError``); a closed reader
refuses to read. The record's data CRC is checked too (TensorFlow does), and a length that
reaches past the end of the file is refused before anything is read for it.
"""

from __future__ import annotations

import os
from types import TracebackType

from ..errors import InvalidArgumentError, InvalidArgumentTypeError, OutOfRangeError
from ..storage import remote
from ..storage.options import StorageOptionsArg
from . import framing

__all__ = ["RandomRecordReader"]


class RandomRecordReader:
    """The records of one uncompressed TFRecord file, read by byte offset.

    >>> import tempfile, tfrecord_engine as tfe
    >>> path = tempfile.mkdtemp() + "/r.tfrecord"
    >>> with tfe.TFRecordWriter(path) as w:
    ...     w.write_many([b"", b"x", b"xx"])
    3
    >>> with tfe.RandomRecordReader(path) as r:
    ...     r.read(0), r.read(16), r.read(33)
    ((b'', 16), (b'x', 33), (b'xx', 51))

    Args:
        path: a local path or a URL (fsspec).
        verify: check each record's data CRC (the length CRC is always checked).
        storage_options: for a URL, fsspec keyword arguments for its filesystem (see
            :mod:`tfrecord_engine.storage.options`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        verify: bool = True,
        storage_options: StorageOptionsArg = None,
    ) -> None:
        self.path = remote.local_path(os.fspath(path))
        self.verify = verify
        self._fd: int | None = None
        self._remote: remote.RemoteFile | None = None
        if remote.is_url(self.path):
            self._remote = remote.RemoteFile(self.path, storage_options=storage_options)
            self._size = self._remote.size
        else:
            self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            self._size = os.fstat(self._fd).st_size
        self._closed = False

    def _get(self, offset: int, size: int) -> bytes:
        if self._remote is not None:
            return self._remote.fetch(offset, size)
        assert self._fd is not None
        return os.pread(self._fd, size, offset)

    def read(self, offset: int) -> tuple[bytes, int]:
        """The record starting at byte ``offset``, and the offset of the next record.

        Raises:
            OutOfRangeError: less than a record header is left at ``offset`` (at or past
                the end of the file too).
            CorruptedRecordError: ``offset`` is no record's start (its length CRC fails),
                or the record's data CRC fails.
            TruncatedRecordError: the file ends inside the record.
            InvalidArgumentError: a negative or non-integer offset, or a closed reader.
        """
        if self._closed:
            raise InvalidArgumentError(f"{self.path}: the random reader is closed")
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise InvalidArgumentTypeError(
                f"offset must be an int (a record's byte offset), got {type(offset).__name__}"
            )
        if offset < 0:
            raise InvalidArgumentError(f"offset must be >= 0, got {offset}")
        if offset + framing.HEADER_SIZE > self._size:
            # TensorFlow: less than a whole header left is the end of the file, not damage.
            raise OutOfRangeError(f"{self.path}: Out of range at reading offset {offset}")
        header = self._get(offset, framing.HEADER_SIZE)
        remaining = self._size - offset - framing.HEADER_SIZE
        length = framing.parse_header(
            header, remaining=remaining, path=self.path, record_index=-1, offset=offset
        )
        body = self._get(offset + framing.HEADER_SIZE, length + framing.FOOTER_SIZE)
        data = body[:length]
        if self.verify:
            framing.check_data(
                data,
                framing.read_footer(body, length),
                path=self.path,
                record_index=-1,
                offset=offset,
            )
        return data, offset + framing.HEADER_SIZE + length + framing.FOOTER_SIZE

    def close(self) -> None:
        """Closes the file; later reads raise. Idempotent."""
        self._closed = True
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> RandomRecordReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)
