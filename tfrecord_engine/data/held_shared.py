"""Whole-file copies shared by the worker processes of one loader: one per machine.

A shuffled epoch reads each local file whole into memory (:mod:`.held`). Under a
PyTorch ``DataLoader`` with ``num_workers=W``, every worker runs its share of the epoch
in its own process, so private copies would cost ``W`` times the data. Here the copy
lives in a POSIX shared-memory file instead (``/dev/shm/tfe-held-...``), named from

- the loader (:class:`SharedCopies`: the process that made it, seen from a worker as
  its parent, and a random token of the loader), and
- the file's identity as the reader sees it through its own descriptor (device, inode,
  size, modification time) plus the indexed data size and record count.

The first process that needs the file creates the segment and fills it under an
exclusive ``flock`` (the whole file read in pieces, every record's CRC checked as
today, :func:`~.held.read_whole`); it then writes what the check found and, last, a
trailer that marks the segment complete. Others wait on the lock, find the trailer and
map the segment read-only: the pages are the same for every process, so the machine
holds one copy. A segment is never served for a changed file: its name holds the
identity, which a reader takes from its own descriptor before attaching, and a filler
publishes only a copy of a file whose identity did not change while it was read and
whose last change was older than the read by more than a timestamp's granularity
(the rules of kept copies, :mod:`.held`); otherwise it removes the name and uses its
copy alone for this epoch.

Lifetime: segments outlive one epoch (the next epoch's workers, new processes when
they are not persistent, attach at once). They go when the owner is done: the loader's
:class:`SharedCopies` is collected or closed, or its process exits (``atexit``), which
removes every segment of its token. Segments of loaders whose process died without
that (``kill -9``) are removed by the next process on the machine that makes or
fills a segment. A worker killed while filling leaves an incomplete segment: the next
process that needs it fills it again, and the owner removes it like the others.

Budget: the shared copies of all loaders on the machine stay within the epoch's
budget (``IN_MEMORY_LIMIT`` by default): a segment that would exceed it is not made,
and that file is read from disk (records copied out of the file), never as a private
copy per worker. A segment that cannot be made (no ``/dev/shm``, a full one: Docker's
default is 64 MB) falls back to today's private copy. Output is the same either way.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import uuid
import weakref
from typing import Final, NamedTuple

import numpy as np

from .held import Held, Holder, current_identity, read_whole

__all__ = ["NO_COPY", "SharedCopies", "attached_copy", "remove_stale", "segments", "shared_copy"]

#: Where the segments live (a tmpfs on Linux).
SHM_DIR = "/dev/shm"
PREFIX = "tfe-held-"
_MAGIC = b"TFEHELD1"
_TRAILER = 16  # magic, verified, all intact, padding


class _NoCopy:
    """Returned by :func:`shared_copy` when the machine's budget leaves no room."""

    def __repr__(self) -> str:
        return "NO_COPY"


#: The file is read from disk this epoch (the shared copies' budget is spent).
NO_COPY: Final = _NoCopy()


class SharedCopies:
    """The owner of one loader's shared copies (made in the process that creates the
    loader, passed to its workers with the dataset).

    Collecting or closing it, or the exit of the process that made it, removes every
    segment of its token, whichever process filled it.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.token = uuid.uuid4().hex[:16]
        self._finalizer: weakref.finalize[[str, int], SharedCopies] | None
        self._finalizer = weakref.finalize(self, remove_copies, self.token, self.pid)
        remove_stale()

    def __getstate__(self) -> dict[str, object]:
        # A copy (a worker's) owns nothing: only the creator removes the segments.
        return {"pid": self.pid, "token": self.token}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.pid = int(state["pid"])  # type: ignore[call-overload]
        self.token = str(state["token"])
        self._finalizer = None

    def scope(self) -> str:
        """The segments' name prefix here: the loader's process (a worker's parent)
        and the token."""
        here = os.getpid()
        return f"{self.pid if here == self.pid else os.getppid()}-{self.token}"

    def names(self) -> list[str]:
        """The names of this owner's segments now in the shared-memory folder."""
        return [n for n in segments() if n.split("-")[3:4] == [self.token]]

    def close(self) -> None:
        """Removes this owner's segments now (processes that mapped one keep it)."""
        if self._finalizer is not None:
            self._finalizer()


def segments() -> list[str]:
    """The names of every loader's segments on this machine."""
    try:
        return sorted(n for n in os.listdir(SHM_DIR) if n.startswith(PREFIX))
    except OSError:
        return []


def remove_copies(token: str, pid: int) -> None:
    """Removes the segments of ``token`` (only in the process ``pid`` that owns them:
    a forked child's copy of the owner must not)."""
    if os.getpid() != pid:
        return
    for name in segments():
        if name.split("-")[3:4] == [token]:
            _unlink(name)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's
    return True


def remove_stale() -> None:
    """Removes the segments of loaders whose process is gone."""
    for name in segments():
        pid = name.split("-")[2]
        if pid.isdigit() and not _alive(int(pid)):
            _unlink(name)


def _unlink(name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(SHM_DIR, name))


def _used(but: str) -> int:
    """Bytes of every segment on the machine except ``but``."""
    total = 0
    for name in segments():
        if name != but:
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(os.path.join(SHM_DIR, name)).st_size
    return total


def shared_copy(
    reader: Holder, verify: bool, owner: SharedCopies, budget: int | None
) -> Held | _NoCopy | None:
    """The shared copy of ``reader``'s file for ``owner``'s processes: attached if
    another process filled it, else filled here (see the module's notes).

    Returns ``None`` when no segment can be used (no shared-memory folder, a full
    one, the file changed since the name was taken): the caller reads a private
    copy. :data:`NO_COPY` when ``budget`` bytes for all segments on the machine leave
    no room for it: the caller reads records from the file.

    Raises:
        StaleIndexError, OSError: reading the file failed (as a private copy's read).
    """
    seg = _segment(reader, owner)
    if seg is None:
        return None
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(os.path.join(SHM_DIR, seg.name), flags, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        st = os.fstat(fd)
        if st.st_nlink == 0:
            return None  # removed while this process waited (not shareable, or budget)
        if st.st_size == seg.total and os.pread(fd, 8, seg.total - _TRAILER) == _MAGIC:
            return _attach(fd, seg)
        return _fill(
            reader, verify, fd, name=seg.name, total=seg.total, ident=seg.ident, budget=budget
        )
    finally:
        # Unlocked explicitly: a map holds the open file (and Python's map a duplicate
        # of the descriptor), so closing this descriptor would not release the lock.
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def attached_copy(reader: Holder, owner: SharedCopies) -> Held | None:
    """``owner``'s shared copy of ``reader``'s file if one is complete now (made by
    another of its processes, e.g. a loader's worker of an earlier epoch), else
    ``None``: nothing is made or waited for (a segment being filled is locked)."""
    seg = _segment(reader, owner)
    if seg is None:
        return None
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(os.path.join(SHM_DIR, seg.name), flags)
    except OSError:
        return None  # (none made yet)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return None  # being filled: the reads go on, and look again later
        st = os.fstat(fd)
        if st.st_nlink == 0 or st.st_size != seg.total:
            return None
        if os.pread(fd, 8, seg.total - _TRAILER) != _MAGIC:
            return None
        return _attach(fd, seg)
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class _Segment(NamedTuple):
    """``owner``'s segment for a file as it is now (:func:`_segment`)."""

    name: str
    ident: tuple[int, int, int, int]  # the file's identity, in the name
    size: int  # the file's data
    records: int  # its records (one "found intact" byte each after the data)
    total: int  # the segment's size: data, flags, trailer


def _segment(reader: Holder, owner: SharedCopies) -> _Segment | None:
    """``owner``'s segment for ``reader``'s file as it is now; ``None`` where no
    segment can serve it (an empty file, no shared-memory folder, no identity)."""
    size = reader.index.data_size
    if size == 0 or not os.path.isdir(SHM_DIR):
        return None
    ident = current_identity(reader)
    if ident is None:
        return None
    count = len(reader.index)
    dev, ino, st_size, mtime = ident
    # (Every field a plain decimal: a timestamp before 1970 must not add a "-".)
    name = f"{PREFIX}{owner.scope()}-{dev}-{ino}-{st_size}-{mtime % (1 << 64)}-{size}-{count}"
    return _Segment(name, ident, size, count, size + count + _TRAILER)


def _attach(fd: int, seg: _Segment) -> Held:
    """A complete segment mapped read-only."""
    size, count, total = seg.size, seg.records, seg.total
    # Populated at once: an epoch gathers from every page (one fault per 4 KiB page
    # otherwise, as tmpfs seldom has huge pages).
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    data = mmap.mmap(fd, total, flags, mmap.PROT_READ)
    array = np.frombuffer(data, np.uint8, size)
    verified, all_ok = os.pread(fd, 2, total - _TRAILER + 8)
    ok = np.frombuffer(data, np.bool_, count, size) if verified else None
    return Held(data, array, ok, bool(verified and all_ok), [], seg.ident)


def _fill(
    reader: Holder,
    verify: bool,
    fd: int,
    *,
    name: str,
    total: int,
    ident: tuple[int, int, int, int],
    budget: int | None,
) -> Held | _NoCopy | None:
    """Fills the segment ``fd`` (this process holds its lock) with the file."""
    remove_stale()
    # An older copy of this file for this loader (the file changed since): dropped.
    same_file = name.rsplit("-", 4)[0] + "-"  # (up to the inode)
    for other in segments():
        if other.startswith(same_file) and other != name:
            _unlink(other)
    if budget is not None and _used(name) + total > budget:
        _unlink(name)
        return NO_COPY
    try:
        os.ftruncate(fd, 0)  # (an incomplete fill by a killed worker: start afresh)
        os.ftruncate(fd, total)
        # Reserved now, so that a full tmpfs fails here, never as a SIGBUS in a read.
        os.posix_fallocate(fd, 0, total)
        data = mmap.mmap(fd, total, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    except OSError:  # (ENOSPC: a full tmpfs; any other: no segment either)
        _unlink(name)
        return None
    try:
        copy = read_whole(reader, verify, into=data)
    except BaseException:
        _unlink(name)
        data.close()
        raise
    if copy.identity != ident:
        # The file changed (or had just changed) around the read: this process uses
        # its copy for this epoch alone; the others read their own.
        _unlink(name)
        return copy
    size = copy.array.shape[0]
    if copy.ok is not None:
        np.frombuffer(data, np.bool_, len(copy.ok), size)[:] = copy.ok
    data[total - _TRAILER + 8 : total] = bytes([copy.ok is not None, copy.all_ok]) + bytes(6)
    data[total - _TRAILER : total - _TRAILER + 8] = _MAGIC  # last: the segment is complete
    return copy
