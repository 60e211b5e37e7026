"""The file-system operations a writer performs, behind one injectable seam.

:class:`TFRecordWriter <tfrecord_engine.TFRecordWriter>` calls the file system only
through a :class:`FileOps` object, so tests can make the Nth ``write``, ``flush``,
``fsync``, ``replace`` ... fail (fault injection) and check that every failure surfaces
and leaves no torn file behind.
"""

from __future__ import annotations

import os
from typing import BinaryIO

__all__ = ["FileOps", "naming_final"]


def naming_final(exc: OSError, temp: str, final: str) -> OSError:
    """``exc`` as an error naming ``final`` wherever it named our hidden temporary file.

    A user asked for ``final``; an error about ``.x.tfrecord.tmp-b76301c4680aa703``
    (which no longer exists once the error surfaces) names nothing they know. A rename
    of ``temp`` onto ``final`` then reads as an error about ``final`` alone. The result
    has the same type, errno and traceback; ``exc`` itself when it names no ``temp``.

    >>> e = naming_final(FileNotFoundError(2, "No such file or directory", "d/.a.tmp-1"),
    ...                  "d/.a.tmp-1", "d/a")
    >>> type(e).__name__, str(e)
    ('FileNotFoundError', "[Errno 2] No such file or directory: 'd/a'")
    """
    if exc.filename == temp:
        names: tuple[object, ...] = (final,)
        if exc.filename2 not in (None, final):
            names = (final, None, exc.filename2)
    elif exc.filename2 == temp:
        names = (exc.filename, None, final)
    else:
        return exc
    try:
        named = type(exc)(exc.errno, exc.strerror, *names)
    except TypeError:  # a subclass with its own signature: left as it is
        return exc
    return named.with_traceback(exc.__traceback__)


class FileOps:
    """Plain, synchronous file-system calls (the production implementation)."""

    def open_new(self, path: str, buffering: int = -1) -> BinaryIO:
        """Creates ``path``, which must not exist yet (``O_EXCL``), for writing."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags, 0o666)  # the umask applies, as for open(path, "wb")
        try:
            return os.fdopen(fd, "wb", buffering=buffering)
        except BaseException:
            os.close(fd)
            raise

    def open_truncate(self, path: str, buffering: int = -1) -> BinaryIO:
        """Opens ``path`` for writing, truncating it (or creating it)."""
        return open(path, "wb", buffering=buffering)  # the caller owns (and closes) the file

    def open_append(self, path: str, buffering: int = -1) -> BinaryIO:
        """Opens ``path`` for appending (creating it if missing)."""
        return open(path, "ab", buffering=buffering)  # the caller owns (and closes) the file

    def write(self, f: BinaryIO, data: bytes | bytearray | memoryview) -> None:
        """Writes all of ``data`` (a buffered file retries short writes itself)."""
        f.write(data)

    def flush(self, f: BinaryIO) -> None:
        """Pushes Python's buffer to the operating system."""
        f.flush()

    def fsync(self, f: BinaryIO) -> None:
        """Asks the operating system to put the file's bytes on stable storage."""
        os.fsync(f.fileno())

    def truncate(self, f: BinaryIO, size: int) -> None:
        """Cuts the file to ``size`` bytes."""
        f.truncate(size)

    def close(self, f: BinaryIO) -> None:
        """Closes the file (which flushes what is still buffered)."""
        f.close()

    def replace(self, src: str, dst: str) -> None:
        """Atomically renames ``src`` onto ``dst`` (same file system)."""
        os.replace(src, dst)

    def remove(self, path: str) -> None:
        """Deletes ``path``."""
        os.remove(path)

    def fsync_dir(self, path: str) -> None:
        """Makes a rename inside directory ``path`` durable (no-op where unsupported)."""
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
        try:
            fd = os.open(path, flags)
        except (IsADirectoryError, PermissionError):  # pragma: no cover - e.g. Windows
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
