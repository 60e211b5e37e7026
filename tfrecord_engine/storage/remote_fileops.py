"""The writer's file-system operations on an fsspec URL (``TFRecordWriter("s3://...")``).

Object stores have no rename and no partially visible files; what a remote writer
guarantees, by filesystem:

- **Every writable fsspec filesystem** (atomic mode, the default): records go to a
  hidden temporary object next to the final one (``.<name>.tmp-<random>``, which a
  ``*.tfrecord`` glob does not match, and which :func:`tfrecord_engine.storage.remote.glob`
  skips); ``close()`` finishes that upload and moves it onto the final URL with
  ``fs.mv``. An exception inside ``with``, :meth:`~tfrecord_engine.TFRecordWriter.abort`
  or a failed write deletes the temporary object and publishes nothing. Every error of
  the store is raised by the call that hit it.
- **memory://**: the move is one dictionary assignment: the final name holds the old
  content or the complete new file, never a partial one (tested).
- **S3, GCS, Azure** (object stores): an object becomes visible only when its upload
  completes, and ``fs.mv`` is a server-side copy (which creates the final object whole
  or not at all) followed by a delete of the temporary object. So the final URL never
  shows a partial file; a process killed between the copy and the delete leaves the
  hidden temporary object behind (a bucket lifecycle rule on ``.*.tmp-*`` cleans up).
  The data is written twice server side (the copy), not twice over the network.
- **atomic=False**: the final URL is written directly; on an object store it still
  appears only when ``close()`` completes the upload, but an exception inside ``with``
  closes (publishes) what was written so far. Prefer the default.
- **HTTP(S)**: read-only; a writer raises :class:`~tfrecord_engine.ReadOnlyStorageError`.

``fsync`` has no remote equivalent: durability is the store's once ``close()`` returns.
Appending to a URL is not supported (object stores cannot append in place).
"""

from __future__ import annotations

from typing import Any, BinaryIO, cast

from ..errors import InvalidArgumentError
from . import remote
from .fileops import FileOps
from .options import StorageOptionsArg, normalize_storage_options

__all__ = ["RemoteFileOps"]


class RemoteFileOps(FileOps):
    """:class:`~tfrecord_engine.storage.fileops.FileOps` on fsspec URLs (paths are full URLs).

    Args:
        url: the file to write (its temporary object lives next to it).
        storage_options: fsspec keyword arguments for the URL's filesystem.

    Raises:
        ReadOnlyStorageError: ``url`` is an HTTP(S) URL.
        MissingDependencyError: fsspec is not installed.
    """

    def __init__(self, url: str, storage_options: StorageOptionsArg = None) -> None:
        remote.check_writable(url)
        self.storage_options = normalize_storage_options(storage_options)
        self.fs: Any = remote.filesystem(url, self.storage_options)[0]

    def _path(self, url: str) -> str:
        return str(remote.filesystem(url, self.storage_options)[1])

    def open_new(self, path: str, buffering: int = -1) -> BinaryIO:
        """Creates the (temporary) object ``path`` for writing."""
        del buffering  # fsspec buffers uploads in its own blocks
        return cast("BinaryIO", self.fs.open(self._path(path), "wb"))

    def open_truncate(self, path: str, buffering: int = -1) -> BinaryIO:
        """Opens ``path`` for writing, replacing it (``atomic=False``)."""
        del buffering
        return cast("BinaryIO", self.fs.open(self._path(path), "wb"))

    def open_append(self, path: str, buffering: int = -1) -> BinaryIO:
        """Refused: object stores cannot append in place."""
        raise InvalidArgumentError(f"{path}: appending to a URL is not supported")

    def fsync(self, f: BinaryIO) -> None:
        """Nothing to do: the upload is durable once ``close`` returns."""

    def truncate(self, f: BinaryIO, size: int) -> None:
        """Refused: remote files are never cut in place."""
        raise InvalidArgumentError("truncating a remote file is not supported")

    def replace(self, src: str, dst: str) -> None:
        """Moves the finished temporary object onto the final URL."""
        self.fs.mv(self._path(src), self._path(dst))

    def remove(self, path: str) -> None:
        """Deletes the temporary object."""
        self.fs.rm(self._path(path))

    def fsync_dir(self, path: str) -> None:
        """Nothing to do: object stores have no directory entries to sync."""
