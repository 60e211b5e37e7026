"""Fault injection for tests: file operations and streams that fail on cue.

- :class:`FaultyOps`: a :class:`~tfrecord_engine.storage.fileops.FileOps` whose Nth call of one
  operation (``write``, ``flush``, ``fsync``, ``replace``, ...) raises an ``OSError``.
- :class:`FlakyStream`: a readable stream that raises ``OSError(EIO)`` once, on its Nth
  read, then behaves (a transient I/O error).
- :func:`writer_with_ops`: a :class:`~tfrecord_engine.TFRecordWriter` whose file-system
  calls all go through the given operations (a :class:`FaultyOps`, say).
- :class:`PipeStream`: a non-seekable stream that hands out at most ``chunk`` bytes per
  read, like a pipe or a socket.
"""

from __future__ import annotations

import collections
import errno
import io
import os
from typing import Any, BinaryIO

from ..storage.fileops import FileOps
from ..writing.writer import TFRecordWriter, use_file_ops

__all__ = ["OPERATIONS", "FaultyOps", "FlakyStream", "PipeStream", "writer_with_ops"]

#: Every operation of :class:`FileOps` a writer may call.
OPERATIONS = (
    "open_new",
    "open_truncate",
    "open_append",
    "write",
    "flush",
    "fsync",
    "truncate",
    "close",
    "replace",
    "remove",
    "fsync_dir",
)


def writer_with_ops(ops: FileOps, *args: Any, **kwargs: Any) -> TFRecordWriter:
    """``TFRecordWriter(*args, **kwargs)`` making every file-system call through ``ops``."""
    with use_file_ops(ops):
        return TFRecordWriter(*args, **kwargs)


class FaultyOps(FileOps):
    """Counts every call and fails the ``nth`` (1-based) call of ``op``.

    Args:
        op: the operation to fail (one of :data:`OPERATIONS`), or ``None`` to only count.
        nth: which call fails.
        error: the errno of the raised ``OSError`` (default ``ENOSPC``).
    """

    def __init__(self, op: str | None = None, nth: int = 1, error: int = errno.ENOSPC) -> None:
        self.op = op
        self.nth = nth
        self.error = error
        self.calls: collections.Counter[str] = collections.Counter()
        self.fired = False

    def _tick(self, op: str) -> None:
        self.calls[op] += 1
        if op == self.op and self.calls[op] == self.nth:
            self.fired = True
            raise OSError(self.error, f"injected failure of {op} call #{self.nth}")

    def open_new(self, path: str, buffering: int = -1) -> BinaryIO:
        self._tick("open_new")
        return super().open_new(path, buffering)

    def open_truncate(self, path: str, buffering: int = -1) -> BinaryIO:
        self._tick("open_truncate")
        return super().open_truncate(path, buffering)

    def open_append(self, path: str, buffering: int = -1) -> BinaryIO:
        self._tick("open_append")
        return super().open_append(path, buffering)

    def write(self, f: BinaryIO, data: bytes | bytearray | memoryview) -> None:
        self._tick("write")
        super().write(f, data)

    def flush(self, f: BinaryIO) -> None:
        self._tick("flush")
        super().flush(f)

    def fsync(self, f: BinaryIO) -> None:
        self._tick("fsync")
        super().fsync(f)

    def truncate(self, f: BinaryIO, size: int) -> None:
        self._tick("truncate")
        super().truncate(f, size)

    def close(self, f: BinaryIO) -> None:
        self._tick("close")
        super().close(f)

    def replace(self, src: str, dst: str) -> None:
        self._tick("replace")
        super().replace(src, dst)

    def remove(self, path: str) -> None:
        self._tick("remove")
        super().remove(path)

    def fsync_dir(self, path: str) -> None:
        self._tick("fsync_dir")
        super().fsync_dir(path)


class PipeStream(io.RawIOBase):
    """A readable, non-seekable stream over ``data`` giving at most ``chunk`` bytes a read."""

    def __init__(self, data: bytes, chunk: int = 4096) -> None:
        self._data = memoryview(data)
        self._pos = 0
        self._chunk = chunk

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self._chunk, len(self._data) - self._pos)
        buffer[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


class FlakyStream(PipeStream):
    """A :class:`PipeStream` whose ``fail_at``-th read (1-based) raises ``OSError(EIO)``."""

    def __init__(self, data: bytes, fail_at: int, chunk: int = 4096) -> None:
        super().__init__(data, chunk)
        self.fail_at = fail_at
        self.reads = 0

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        self.reads += 1
        if self.reads == self.fail_at:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return super().readinto(buffer)
