"""The files of a node-local shard cache folder, and the ``flock`` locks that guard them.

One folder, shared by every process of a node that opens it:

- ``<name>.<url-hash>.<version-hash>``: a complete copy of one version of a remote
  object (the version: its size and ETag/generation/Last-Modified, so a changed object
  has another name and is fetched again); only ever created by a rename;
- ``<that>.tfeidx``: its index; its modification time is the entry's last use (LRU);
- ``.tmp-<token>-<that>``: a copy being filled, locked (``LOCK_EX``) by its filler for as
  long as it lives: a temporary file whose lock can be taken belongs to a dead process;
- ``.pins/<pid>-<token>``: the entries one open dataset uses, one name a line, locked
  by that dataset: eviction skips them; a pin file whose lock can be taken is stale;
- ``.lock``: taken (``LOCK_EX``) around every decision: pinning, reserving, publishing,
  evicting.

``flock`` locks belong to an open file description: two datasets in one process lock
independently, a forked decode worker shares its parent's, and the kernel drops a lock
when its last descriptor closes (a killed process's included).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import os
import re
from collections.abc import Iterator

from .remote_identity import RemoteIdentity

__all__ = [
    "INDEX_SUFFIX",
    "PIN_DIR",
    "TMP_PREFIX",
    "Entry",
    "entry_name",
    "exclusive",
    "locked_elsewhere",
    "scan",
    "try_lock",
]

TMP_PREFIX = ".tmp-"
PIN_DIR = ".pins"
INDEX_SUFFIX = ".tfeidx"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def entry_name(url: str, size: int, identity: RemoteIdentity) -> str:
    """The file name of the copy of ``url`` at this version: readable (the object's own
    name first) and unique (hashes of the URL and of the version).

    >>> a = entry_name("s3://b/train-0.tfrecord", 10, RemoteIdentity('"e1"'))
    >>> b = entry_name("s3://b/train-0.tfrecord", 10, RemoteIdentity('"e2"'))
    >>> a.startswith("train-0.tfrecord."), a == b
    (True, False)
    """
    base = _SAFE.sub("_", url.rstrip("/").rsplit("/", 1)[-1])[:80].lstrip(".") or "object"
    where = hashlib.sha256(url.encode()).hexdigest()[:14]
    version = f"{size}\0{identity.etag}\0{identity.last_modified}".encode()
    return f"{base}.{where}.{hashlib.sha256(version).hexdigest()[:14]}"


@dataclasses.dataclass(slots=True)
class Entry:
    """One cached copy as found on disk: its name, bytes (data and index) and last use."""

    name: str
    data_bytes: int = 0
    index_bytes: int = 0
    used_ns: int = 0
    complete: bool = False

    @property
    def nbytes(self) -> int:
        return self.data_bytes + self.index_bytes


def scan(directory: str) -> tuple[dict[str, Entry], list[tuple[str, int]]]:
    """The folder's entries by name, and its temporary files with their sizes."""
    entries: dict[str, Entry] = {}
    temps: list[tuple[str, int]] = []
    with os.scandir(directory) as it:
        for item in it:
            try:
                st = item.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed meanwhile (by a process not holding the folder lock)
            if item.name.startswith(TMP_PREFIX):
                temps.append((item.name, st.st_size))
                continue
            if item.name.startswith(".") or not item.is_file(follow_symlinks=False):
                continue
            if item.name.endswith(INDEX_SUFFIX):
                name = item.name[: -len(INDEX_SUFFIX)]
                e = entries.setdefault(name, Entry(name))
                e.index_bytes = st.st_size
                e.used_ns = max(e.used_ns, st.st_mtime_ns)
            else:
                e = entries.setdefault(item.name, Entry(item.name))
                e.data_bytes = st.st_size
                e.complete = True
                e.used_ns = max(e.used_ns, st.st_mtime_ns)
    return entries, temps


def try_lock(fd: int, kind: int = fcntl.LOCK_EX) -> bool:
    """Takes ``kind`` on ``fd`` without waiting; whether it was taken."""
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def locked_elsewhere(path: str) -> bool | None:
    """Whether a live process holds ``path``'s lock (``None``: no such file). A stale
    file (its lock free) is removed on the way."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        if not try_lock(fd):
            return True
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        return False
    finally:
        os.close(fd)


@contextlib.contextmanager
def exclusive(path: str) -> Iterator[None]:
    """Holds ``LOCK_EX`` on ``path`` (created if missing) for the ``with`` block."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
