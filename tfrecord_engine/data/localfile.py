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
closed for the budget and reopened (checked) on the next read. :class:`MappedFile` is
the same for uncompressed files, with a map of the file to gather batches out of (and
a spare descriptor beside it for single records); the records are read from it by
:class:`~tfrecord_engine.data.local_source.LocalFileRecords`.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ..errors import StaleIndexError
from ..index.scan import FileStat, file_stat
from ..index.sidecar import Index
from ..storage import descriptors, safecopy
from .spans import IntArray, stale

__all__ = ["SPARE_DESCRIPTORS", "LocalFile", "MappedFile", "PositionalReader", "check_opened"]

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


#: Descriptors opened beside a file's map for ``ds[i]``'s ``pread`` (see
#: ``MappedFile._spare``), at most this many in the process: a map holds one
#: descriptor per file already, and datasets of 1,000 shards meet the usual limit of
#: 1,024. Beyond it ``ds[i]`` copies out of the map (~3-5 µs against ~0.8 µs).
SPARE_DESCRIPTORS = 64
_SPARE_LOCK = threading.Lock()
_spares = [0]  # how many are open


class MappedFile:
    """An uncompressed local data file opened lazily: its descriptor, its map for
    :func:`~tfrecord_engine.storage.safecopy.gather`, and a spare descriptor beside the
    map, all within the process's descriptor budget
    (:data:`~tfrecord_engine.storage.descriptors.CACHE`).

    The budget closes them while no read uses them when other files need room; the next
    read opens the file again, and only if it is still the file the index describes
    (:func:`check_opened`). A read through the descriptor or the map holds it
    (:meth:`acquire`, :meth:`pin_map`); reads that do not note ``_gen`` before and check
    it after, and read again when it changed.
    :class:`~tfrecord_engine.data.local_source.LocalFileRecords` reads records from it.
    """

    def __init__(self, index: Index) -> None:
        self.index = index
        self.path = index.data_path
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        # A view of the map (it pins the map while in use).
        self._raw: npt.NDArray[np.uint8] | None = None
        self._base: int | None = None  # the map's address, which gather() takes
        # The map and its view together (one attribute: read without the lock), for
        # reads straight out of the map (``mapped_reads=True``, see :meth:`mapping`).
        self._pair: tuple[mmap.mmap, npt.NDArray[np.uint8]] | None = None
        self._lock = threading.Lock()  # loader threads may open the file together
        # Reads under way through ``_fd`` (acquire/release): a map taking the
        # descriptor's place closes it only when none is (``_retired`` until then), so a
        # thread never reads through a closed or reused descriptor number.
        self._users = 0
        self._retired: int | None = None
        # Counts descriptors retired by a map or closed for the budget, and maps closed
        # for it (see read_one): bumped before the close.
        self._gen = 0
        self._spare_open = False  # ``_fd`` was opened beside the map (counted in _spares)
        # What the first open found, for an index never checked against the file.
        self._seen: FileStat | None = None
        self.recently_used = False  # (for the descriptor budget's second chance)

    def fileno(self, local: IntArray | None = None) -> int:
        """The open file's descriptor (opened on first use, when its size is checked;
        ``local``, the records about to be read, locates the error if it changed).

        A thread that reads through it while others may map the file (which closes the
        descriptor) takes it with :meth:`acquire` instead.
        """
        fd = self._fd
        if fd is None:
            with self._lock:
                fd = self._open_locked(local)
        return fd

    def _open_locked(self, local: IntArray | None) -> int:
        fd = self._fd
        if fd is None:
            # Room is made by closing other readers' files, never this one's (its lock,
            # held here, is only tried): no lock is waited for under another.
            fd = descriptors.open_file(self.path)
            try:
                self._seen = check_opened(
                    self.index, self._seen, fd, lambda why: stale(self.index, local, why, "")
                )
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
            self._recount()
        return fd

    def _recount(self) -> None:
        """Reports the descriptors kept now to the budget (the lock held)."""
        held = (self._fd is not None) + (self._map is not None) + (self._retired is not None)
        descriptors.CACHE.holds(self, held)

    def close_descriptors(self) -> bool:
        """For the descriptor budget: closes the file's descriptor and map, unless a read
        is using them or the lock is taken (never waits); a later read opens it again.
        Copies held or kept in memory stay. Returns whether it closed them."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._users or (self._fd is None and self._map is None):
                return False
            self._close_files(evicting=True)
            self._recount()
            return True
        finally:
            self._lock.release()

    def _close_files(self, *, evicting: bool = False) -> None:
        """Closes the map and the descriptors (no read may be using them)."""
        # In this order: the paths that read without holding the reader take the count
        # (_gen, or the budget's evictions for LocalFilesGather) *before* the descriptor
        # or the address, so one that took the old address saw the old count, and finds
        # it changed after its copy whenever the close came before the copy ended.
        fd, self._fd = self._fd, None
        self._base = None
        self._gen += 1
        if evicting:
            descriptors.CACHE.evicting()
        self._pair = None
        self._raw = None  # the numpy view pins the map; drop it first
        mapping, self._map = self._map, None
        if mapping is not None:
            # Arrays viewing the map may still be alive (a traceback's frames): then it
            # is released with the last of them.
            with contextlib.suppress(BufferError):
                mapping.close()
        if fd is not None:
            with contextlib.suppress(OSError):  # (the number is free whatever it says)
                os.close(fd)
        if self._spare_open:
            self._spare_open = False
            with _SPARE_LOCK:
                _spares[0] -= 1
        retired, self._retired = self._retired, None
        if retired is not None:
            with contextlib.suppress(OSError):
                os.close(retired)

    def acquire(self, local: IntArray | None = None) -> int:
        """:meth:`fileno`, kept open until the matching :meth:`unacquire`."""
        with self._lock:
            fd = self._open_locked(local)
            self._users += 1
            self.recently_used = True
            return fd

    def unacquire(self) -> None:
        """Ends one :meth:`acquire` or :meth:`pin_map` (closing a descriptor a map
        retired meanwhile)."""
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._retired is not None:
                os.close(self._retired)
                self._retired = None
                self._recount()

    def base_address(self, local: IntArray | None = None) -> int | None:
        """The address of the file's map for :func:`safecopy.gather` (mapped on first
        use), or ``None`` when gathering is unavailable or the file is empty.

        The map may be closed for the descriptor budget at any time after: a caller
        that does not :meth:`pin_map` it checks ``descriptors.CACHE.evictions`` (or
        ``_gen``) before and after its copy, and discards a copy that overlapped one.
        """
        base = self._base
        if base is None:
            if not safecopy.available() or self.index.data_size == 0:
                return None
            with self._lock:
                base = self._map_locked(local)
        return base

    def pin_map(self, local: IntArray | None = None) -> int | None:
        """:meth:`base_address`, kept mapped until the matching :meth:`unacquire`
        (``None``, and nothing to end, where gathering is unavailable or the file is
        empty)."""
        if not safecopy.available() or self.index.data_size == 0:
            return None
        with self._lock:
            base = self._map_locked(local)
            self._users += 1
            self.recently_used = True
            return base

    def mapping(
        self, local: IntArray | None = None
    ) -> tuple[mmap.mmap, npt.NDArray[np.uint8]] | None:
        """The file's map and a numpy view of it (mapped on first use, checked as
        :meth:`fileno`), for reads straight out of the map (``mapped_reads=True``);
        ``None`` for an empty file.

        A caller keeps the view while it reads: the view pins the map, so a close for
        the descriptor budget meanwhile leaves it mapped until the view is let go.
        Not guarded: a page past the end of a file cut meanwhile kills the process
        with SIGBUS (docs/reliability.md).
        """
        pair = self._pair
        if pair is None:
            if self.index.data_size == 0:
                return None
            with self._lock:
                self._map_locked(local)
                pair = self._pair
        self.recently_used = True
        return pair

    def _map_locked(self, local: IntArray | None) -> int:
        base = self._base
        if base is None:
            fd = self._open_locked(local)
            self._map = descriptors.with_room(
                self.path, 1, lambda: mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            )
            self._raw = np.frombuffer(self._map, np.uint8)
            self._pair = (self._map, self._raw)
            base = self._base = int(self._raw.ctypes.data)
            # The map holds a descriptor of its own: one per file is enough. Reads
            # under way through this one keep it open until they end.
            self._fd = None
            self._gen += 1  # before the close: read_one's check sees it after
            if self._users:
                self._retired = fd
            else:
                os.close(fd)
            self._recount()
        return base

    def _spare(self) -> bool:
        """Opens a descriptor beside the file's map for ``pread`` (``ds[i]``: ~0.8 µs a
        call where a copy out of the map costs ~3-5 µs), while fewer than
        :data:`SPARE_DESCRIPTORS` are open in the process; whether one is open now."""
        with _SPARE_LOCK:
            if _spares[0] >= SPARE_DESCRIPTORS:
                return False
            _spares[0] += 1
        opened = False
        try:
            with self._lock:
                if self._fd is None and not self._spare_open and self._map is not None:
                    self._open_locked(None)
                    self._spare_open = opened = True
                return self._fd is not None
        except (OSError, StaleIndexError):
            return False  # the copy out of the map reports what changed, located
        finally:
            if not opened:
                with _SPARE_LOCK:
                    _spares[0] -= 1
