"""Opening a local data file: only the file its index describes, within the descriptor budget.

A reader opens its file on first use, and again whenever the process's descriptor
budget (:mod:`tfrecord_engine.storage.descriptors`) had it closed. Each time, the file
behind the new descriptor must be the one the index describes: another file renamed
(or moved) over its path would otherwise be read through the old index, which with
``verify=False`` means wrong records without an error, and a reader would mix records
of two files. :func:`check_opened` compares the new descriptor's ``fstat`` with the index's
:attr:`~tfrecord_engine.index.sidecar.Index.file_stat` (taken when the index was checked
against the file), or, for an index never checked (built in memory), with what the
reader saw at its first open.

:class:`LocalFile` is such a descriptor for GZIP/ZLIB readers: ``pread`` through it,
closed for the budget and reopened (checked) on the next read.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable

from ..errors import StaleIndexError
from ..index.scan import FileStat, file_stat
from ..index.sidecar import Index
from ..storage import descriptors

__all__ = ["LocalFile", "PositionalReader", "check_opened"]

_ADVICE = (
    "this dataset's index describes the file it first read. Open the dataset again "
    "(a new RecordDataset reads or rebuilds the index of the file as it is now), or run "
    "`tfr index {path}` first"
)


#: Makes the error for what is wrong with the file (a detail without the path): the
#: reader's own, which names the record it was about to read.
Located = Callable[[str], StaleIndexError]


def check_opened(
    index: Index,
    seen: FileStat | None,
    fd: int,
    located: Located | None = None,
    *,
    sized: bool = True,
) -> FileStat:
    """Checks that ``fd``, just opened on ``index.data_path``, is the file the index
    describes; returns what to compare the next open with.

    The reference is ``index.file_stat`` (set when the index was validated against the
    file), else ``seen`` (what this reader's first open found), else nothing: a first
    open of an unchecked index is taken as it is (only its size is compared with the
    index's, with ``sized``). Device, inode and size must be equal (the same file, not
    another one renamed or moved over its path, nor this one cut or grown). Times are
    not compared: the status-change time also moves when an untouched file is renamed,
    linked or ``chmod``-ed, and a write in place (which moves the modification time) is
    what the data CRCs answer, as they do for a file that stayed open
    (docs/reliability.md), whether or not the reader had to reopen it.

    Raises:
        StaleIndexError: another file, or one of another size, naming the file (through
            ``located``, which may name the record too) and what to do.
    """
    path = index.data_path
    now = file_stat(os.fstat(fd))
    want = index.file_stat if index.file_stat is not None else seen
    if want is not None and now[:2] != want[:2]:
        detail = (
            f"the file was replaced since this dataset opened it (device {want[0]} inode "
            f"{want[1]} then, device {now[0]} inode {now[1]} now): " + _ADVICE.format(path=path)
        )
    elif (want is not None and now[2] != want[2]) or (sized and now[2] != index.data_size):
        detail = (
            f"the file has {now[2]} bytes, it had {index.data_size} when indexed "
            "(changed while in use? cut or rewritten by another job): " + _ADVICE.format(path=path)
        )
    else:
        return now
    raise located(detail) if located is not None else StaleIndexError(f"{path}: {detail}")


class LocalFile:
    """A local data file read with ``pread`` through a descriptor the process's budget
    may close between reads (it is reopened, and checked with :func:`check_opened`,
    on the next one). Thread-safe; the descriptor is never closed during a read."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.path = index.data_path
        self.recently_used = False
        self._fd: int | None = None
        self._users = 0  # reads under way through _fd
        self._seen: FileStat | None = None
        self._lock = threading.Lock()

    def _acquire(self) -> int:
        with self._lock:
            fd = self._fd
            if fd is None:
                fd = descriptors.open_file(self.path)
                try:
                    # (Unchecked at a first open, as before: a damaged file that no
                    # longer holds its records says so as it is inflated, located.)
                    self._seen = check_opened(self.index, self._seen, fd, sized=False)
                except BaseException:
                    os.close(fd)
                    raise
                self._fd = fd
                descriptors.CACHE.holds(self, 1)
            self._users += 1
            self.recently_used = True
            return fd

    def _release(self) -> None:
        with self._lock:
            self._users -= 1

    def fetch(self, offset: int, size: int) -> bytes:
        """The bytes ``[offset, offset + size)`` (fewer at the end of the file)."""
        fd = self._acquire()
        try:
            parts = []
            while size > 0:
                part = os.pread(fd, size, offset)
                if not part:
                    break
                parts.append(part)
                offset += len(part)
                size -= len(part)
            return parts[0] if len(parts) == 1 else b"".join(parts)
        finally:
            self._release()

    def stream(self) -> PositionalReader:
        """A file object reading the file forward from its start, through :meth:`fetch`."""
        return PositionalReader(self)

    def close_descriptors(self) -> bool:
        """For the budget: closes the descriptor unless a read is using it (never waits)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            fd = self._fd
            if self._users or fd is None:
                return False
            descriptors.CACHE.evicting()
            self._fd = None
            with contextlib.suppress(OSError):  # (the number is free whatever it says)
                os.close(fd)
            descriptors.CACHE.holds(self, 0)
            return True
        finally:
            self._lock.release()

    def close(self) -> None:
        """Closes the descriptor; a later read opens the file again (checked)."""
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                descriptors.CACHE.holds(self, 0)
                os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            self.close()


class PositionalReader:
    """``read``/``close`` over a :class:`LocalFile` from its start: a forward stream
    that keeps no descriptor of its own (the budget may close the file between reads)."""

    def __init__(self, file: LocalFile) -> None:
        self._file = file
        self._pos = 0

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes from the current position (``-1``: to the end)."""
        if size < 0:
            size = max(0, self._file.index.data_size - self._pos)
        data = self._file.fetch(self._pos, size)
        self._pos += len(data)
        return data

    def close(self) -> None:
        """Nothing to close: the descriptor is the :class:`LocalFile`'s."""
