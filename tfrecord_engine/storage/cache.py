"""A node-local cache of whole remote files: each object copied once, read locally after.

``ShardCache(directory, limit)`` keeps complete copies of remote objects (a dataset's
shards) and their indexes in one local folder, shared by every process of the node
(``DataLoader`` workers, several jobs). What it promises:

- **Never a torn copy**: a copy is filled under a hidden temporary name and renamed when
  complete (after ``fsync``); a process killed while filling leaves only a temporary
  file, which is never served and is removed by the next process that needs room.
- **Never a stale copy**: an entry's name holds the object's size and version (ETag,
  GCS generation, else Last-Modified: :class:`~.remote_identity.RemoteIdentity`), asked
  of the store when a dataset opens the file; a replaced object has another name and is
  fetched again. A copy whose object changed while it was being filled is dropped
  (:class:`~tfrecord_engine.errors.RemoteChangedError`). Objects whose store names no
  version are not cached (they are read from the store).
- **Bounded**: the bytes of all copies, indexes and fills in progress never exceed
  ``limit``: room is made by removing the least recently used entries that no open
  dataset uses (pinned, see :mod:`.cache_files`); an object that does not fit even so is
  not cached (read from the store: :attr:`CacheStats.uncached`).
- **Shared**: decisions are taken under one ``flock`` on the folder; one process fills an
  entry while others wait for it instead of downloading it again.

A fill reads the object in :data:`PIECE`-byte ranges, :data:`PARALLEL` at a time
(concurrent on S3/GCS/HTTP), the next group in flight while one is written: memory
stays under ``2 * PARALLEL * PIECE`` per fill.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import secrets
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from ..errors import InvalidArgumentError, RemoteChangedError
from . import cache_files as cf
from .options import StorageOptions, StorageOptionsArg, normalize_storage_options
from .remote import RemoteFile
from .remote_identity import RemoteIdentity

__all__ = ["PARALLEL", "PIECE", "CacheStats", "CachedCopy", "Claim", "ShardCache"]

#: Bytes per range request of a fill (4 MiB: the fastest raw GET size measured against
#: SeaweedFS, see benchmarks/bench_remote.py).
PIECE: Final = 4 << 20
#: Range requests of a fill in flight together.
PARALLEL: Final = 8
#: How far before its fill a copy's modification time is set: more than the coarsest
#: file timestamps (FAT's 2 s) and than the settling time of ``data/held.py`` (3 s).
DATED_BACK_NS: Final = 4_000_000_000


@dataclasses.dataclass(frozen=True)
class CachedCopy:
    """A complete local copy of one version of a remote object, pinned while in use.

    Attributes:
        url: the object's URL.
        data_path: the local copy.
        index_path: where its index is kept (it may not exist yet).
        size: the object's size in bytes.
        identity: the object's version.
        storage_options: the fsspec keyword arguments the object is read with (never
            shown).
    """

    url: str
    data_path: str
    index_path: str
    size: int
    identity: RemoteIdentity
    storage_options: StorageOptions | None = dataclasses.field(
        default=None, repr=False, compare=False
    )


@dataclasses.dataclass
class Claim:
    """What :meth:`ShardCache.claim` found: a pinned copy (``hit``), room reserved for a
    fill (``fd``, ``tmp``), another process's fill to wait for (``filler``), or nothing
    (``copy`` is ``None``: not cached)."""

    copy: CachedCopy | None
    hit: bool = False
    fd: int = -1
    tmp: str = ""
    filler: str = ""


@dataclasses.dataclass
class CacheStats:
    """What one :class:`ShardCache` did (this process only).

    Attributes:
        hits: objects found in the cache.
        fills: objects copied into it.
        uncached: objects read from the store instead (no version label, or no room).
        evictions: entries removed to make room (or superseded by a newer version).
        bytes_filled: bytes copied from the store.
        requests: data requests the fills sent (retries included).
        version_queries: size-and-version queries sent to the store.
    """

    hits: int = 0
    fills: int = 0
    uncached: int = 0
    evictions: int = 0
    bytes_filled: int = 0
    requests: int = 0
    version_queries: int = 0


def version_of(
    url: str, storage_options: StorageOptionsArg = None
) -> tuple[int, RemoteIdentity | None]:
    """The object's size and version label, asked of the store (not of a listing cache)."""
    f = RemoteFile(url, storage_options=storage_options)
    # s3fs and others answer info() from a directory listing when they have one, which
    # another process's write does not update: ask the store itself.
    with contextlib.suppress(Exception):
        f.fs.invalidate_cache(f.fs_path)
    return f.size, f.identity


class ShardCache:
    """A cache folder of whole remote objects; see the module doc.

    Args:
        directory: the folder (created if missing); give every process of a node the same.
        limit: the most bytes its entries may take; ``None``: no limit but the disk.

    Example:
        >>> import pathlib, tempfile
        >>> from tfrecord_engine.testing.http_server import serve_directory
        >>> served = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (served / "a.bin").write_bytes(b"0123456789")
        >>> cache = ShardCache(tempfile.mkdtemp(), limit=1 << 20)
        >>> with serve_directory(served) as server:
        ...     first = cache.get(server.url + "/a.bin")
        ...     again = cache.get(server.url + "/a.bin")
        >>> pathlib.Path(again.data_path).read_bytes(), cache.stats.fills, cache.stats.hits
        (b'0123456789', 1, 1)
        >>> cache.close()
    """

    def __init__(self, directory: str | os.PathLike[str], limit: int | None = None) -> None:
        if limit is not None and limit < 0:
            raise InvalidArgumentError(f"cache_limit must be >= 0 or None, got {limit}")
        self.directory = os.path.abspath(os.fspath(directory))
        self.limit = limit
        self.stats = CacheStats()
        os.makedirs(os.path.join(self.directory, cf.PIN_DIR), exist_ok=True)
        self._pin_fd: int | None = None
        self._pin_path = ""
        self._pin_pid = 0
        self._lock = threading.Lock()  # the pin file and stats, across fill threads

    def __repr__(self) -> str:
        return f"ShardCache({self.directory!r}, limit={self.limit})"

    # ---- the folder lock, pins ---------------------------------------------------------

    @contextlib.contextmanager
    def _folder(self) -> Iterator[None]:
        with self._lock, cf.exclusive(os.path.join(self.directory, ".lock")):
            yield

    def _pin(self, name: str) -> None:
        """Marks ``name`` in use by this cache object (held until :meth:`close`)."""
        if self._pin_fd is None or self._pin_pid != os.getpid():
            # A forked child has its parent's descriptor (and lock): it pins on its own.
            path = os.path.join(self.directory, cf.PIN_DIR, f"{os.getpid()}-{secrets.token_hex(6)}")
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._pin_fd, self._pin_path, self._pin_pid = fd, path, os.getpid()
        os.write(self._pin_fd, f"{name}\n".encode())

    def _pinned(self) -> set[str]:
        """Every entry some live dataset uses (stale pin files are removed)."""
        names: set[str] = set()
        folder = os.path.join(self.directory, cf.PIN_DIR)
        for pin in os.listdir(folder):
            path = os.path.join(folder, pin)
            if cf.locked_elsewhere(path):
                with contextlib.suppress(FileNotFoundError), open(path, encoding="utf-8") as f:
                    names.update(line.strip() for line in f if line.strip())
        return names

    def close(self) -> None:
        """Unpins every entry this object pinned (they may be evicted from now on)."""
        fd, self._pin_fd = self._pin_fd, None
        if fd is None:
            return
        if self._pin_pid == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                os.remove(self._pin_path)
        os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # ---- lookups and fills -------------------------------------------------------------

    def _copy(
        self,
        url: str,
        name: str,
        size: int,
        identity: RemoteIdentity,
        storage_options: StorageOptions | None,
    ) -> CachedCopy:
        data = os.path.join(self.directory, name)
        return CachedCopy(url, data, data + cf.INDEX_SUFFIX, size, identity, storage_options)

    def get(
        self,
        url: str,
        *,
        size: int | None = None,
        identity: RemoteIdentity | None = None,
        storage_options: StorageOptionsArg = None,
    ) -> CachedCopy | None:
        """The local copy of ``url``, pinned; filled from the store when missing.

        Args:
            url: the object.
            size, identity: its size and version when the caller knows them (a dataset
                hands its decode workers the ones it saw); else asked of the store.
            storage_options: fsspec keyword arguments for the object's store (see
                :mod:`~tfrecord_engine.storage.options`). Entries are named by URL, size
                and version, whichever options reached them.

        Returns:
            The copy, or ``None`` when the object is not cached (its store names no
            version, or it does not fit under the limit beside the entries in use).

        Raises:
            RemoteChangedError: the object changed while it was being copied.
            RemoteReadError, RemoteNotFoundError: the store failed (after retries).
        """
        return self.finish(
            self.claim(url, size=size, identity=identity, storage_options=storage_options)
        )

    def claim(
        self,
        url: str,
        *,
        size: int | None = None,
        identity: RemoteIdentity | None = None,
        storage_options: StorageOptionsArg = None,
    ) -> Claim:
        """:meth:`get`'s first, quick half: a hit is pinned, a miss gets its room
        reserved (so claims taken in order fill the cache in that order); the copying is
        :meth:`finish`'s."""
        options = normalize_storage_options(storage_options)
        if size is None or identity is None:
            size, identity = version_of(url, options)
            with self._lock:
                self.stats.version_queries += 1
        if identity is None or (self.limit is not None and size > self.limit):
            return Claim(None)
        name = cf.entry_name(url, size, identity)
        copy = self._copy(url, name, size, identity, options)
        with self._folder():
            if _complete(copy.data_path, size):
                self._pin(name)
                _touch(copy)
                self.stats.hits += 1
                return Claim(copy, hit=True)
            filler = self._live_fill(name)
            if filler is not None:
                return Claim(copy, filler=filler)
            fill = self._reserve(name, size)
        return Claim(None) if fill is None else Claim(copy, fd=fill[0], tmp=fill[1])

    def finish(self, claim: Claim) -> CachedCopy | None:
        """The copy of a :meth:`claim`: filled from the store, or waited for when another
        process fills it (``None``: not cached)."""
        copy = claim.copy
        if copy is None:
            with self._lock:
                self.stats.uncached += 1
            return None
        if claim.hit:
            return copy
        if claim.fd < 0:
            _wait_for(claim.filler)  # another process (or thread) copies it: look again
            return self.get(
                copy.url,
                size=copy.size,
                identity=copy.identity,
                storage_options=copy.storage_options,
            )
        fd, claim.fd = claim.fd, -1
        try:
            self._fill(copy, fd)
            # Dated back (the copy is never written again once in place, only removed):
            # readers that keep a file's contents between epochs keep only files whose
            # last change lies further behind than a timestamp's granularity
            # (data/held.py), else a copy used in its first seconds would be read whole
            # again by every epoch, and by every DataLoader worker on its own.
            dated = time.time_ns() - DATED_BACK_NS
            os.utime(fd, ns=(dated, dated))
            with self._folder():
                os.replace(claim.tmp, copy.data_path)
                self._pin(os.path.basename(copy.data_path))
                self.stats.fills += 1
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.remove(claim.tmp)
            raise
        finally:
            os.close(fd)
        return copy

    def abandon(self, claim: Claim) -> None:
        """Gives up a claim not finished (its reserved room is freed)."""
        fd, claim.fd = claim.fd, -1
        if fd >= 0:
            with contextlib.suppress(FileNotFoundError):
                os.remove(claim.tmp)
            os.close(fd)

    def _live_fill(self, name: str) -> str | None:
        """The temporary file of a live fill of ``name``, if any (stale ones removed)."""
        for temp, _ in cf.scan(self.directory)[1]:
            if temp.split("-", 2)[-1] == name:
                path = os.path.join(self.directory, temp)
                if cf.locked_elsewhere(path):
                    return path
        return None

    def _make_room(self, need: int, keep: str) -> bool:
        """Evicts least recently used unpinned entries until ``need`` more bytes fit
        (folder lock held). Older versions of ``keep``'s object go first."""
        entries, temps = cf.scan(self.directory)
        used = 0
        for temp, nbytes in temps:
            if cf.locked_elsewhere(os.path.join(self.directory, temp)):
                used += nbytes
        used += sum(e.nbytes for e in entries.values())
        pinned = self._pinned()
        free = [e for n, e in entries.items() if n not in pinned and n != keep]
        same_object = keep.rsplit(".", 1)[0]
        # Other versions of the same object are of no use any more: they go first.
        for e in [e for e in free if e.name.rsplit(".", 1)[0] == same_object]:
            used -= self._evict(e)
            free.remove(e)
        # Then orphaned indexes (a fill that died after its index), then the least
        # recently used.
        for e in sorted(free, key=lambda e: (e.complete, e.used_ns)):
            if self.limit is None or used + need <= self.limit:
                break
            used -= self._evict(e)
        return self.limit is None or used + need <= self.limit

    def _evict(self, e: cf.Entry) -> int:
        path = os.path.join(self.directory, e.name)
        for p in (path, path + cf.INDEX_SUFFIX):
            with contextlib.suppress(FileNotFoundError):
                os.remove(p)
        self.stats.evictions += 1
        return e.nbytes

    def _reserve(self, name: str, size: int) -> tuple[int, str] | None:
        """A locked temporary file of ``size`` bytes for a fill of ``name``, room made
        for it (folder lock held); ``None`` when it does not fit."""
        if not self._make_room(size, name):
            return None
        tmp = os.path.join(self.directory, f"{cf.TMP_PREFIX}{secrets.token_hex(6)}-{name}")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        # Its size counts against the limit from now on, for every process.
        os.ftruncate(fd, size)
        return fd, tmp

    def _fill(self, copy: CachedCopy, fd: int) -> None:
        """Copies the object into ``fd``; checks it is still the same version after."""
        f = RemoteFile(
            copy.url,
            identity=copy.identity,
            size=copy.size,
            storage_options=copy.storage_options,
        )
        groups = [
            list(range(a, min(a + PARALLEL * PIECE, copy.size), PIECE))
            for a in range(0, copy.size, PARALLEL * PIECE)
        ]

        def fetch(starts: list[int]) -> list[bytes]:
            return f.fetch_ranges(starts, [min(a + PIECE, copy.size) for a in starts])

        with ThreadPoolExecutor(1, thread_name_prefix="tfe-cache-fill") as ahead:
            pending = ahead.submit(fetch, groups[0]) if groups else None
            for i, starts in enumerate(groups):
                assert pending is not None
                pieces = pending.result()
                pending = ahead.submit(fetch, groups[i + 1]) if i + 1 < len(groups) else None
                for a, data in zip(starts, pieces, strict=True):
                    _pwrite_all(fd, data, a)
        os.fsync(fd)
        size, identity = version_of(copy.url, copy.storage_options)
        with self._lock:
            self.stats.version_queries += 1
            self.stats.requests += f.requests
            self.stats.bytes_filled += f.bytes_fetched
        diff = None if identity is None else copy.identity.mismatch(identity)
        if size != copy.size or identity is None or diff is not None:
            before, after = diff or (f"{copy.size} bytes", f"{size} bytes")
            raise RemoteChangedError(url=copy.url, start=None, end=None, before=before, after=after)

    def store_index(self, copy: CachedCopy, blob: bytes) -> bool:
        """Keeps ``blob`` as the index of ``copy`` (a pinned entry), replacing an older
        one; ``False`` (nothing kept) when it does not fit under the limit."""
        with self._folder():
            try:
                old = os.path.getsize(copy.index_path)
            except FileNotFoundError:
                old = 0
            name = os.path.basename(copy.data_path)
            if not self._make_room(max(0, len(blob) - old), name):
                return False
            tmp = os.path.join(self.directory, f"{cf.TMP_PREFIX}{secrets.token_hex(6)}-{name}.idx")
            try:
                with open(tmp, "wb") as out:
                    out.write(blob)
                os.replace(tmp, copy.index_path)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(tmp)
                raise
        return True

    def touch(self, copy: CachedCopy) -> None:
        """Marks ``copy`` used now (eviction takes the least recently used first)."""
        _touch(copy)

    def used_bytes(self) -> int:
        """Bytes the folder's entries and fills in progress take now."""
        entries, temps = cf.scan(self.directory)
        return sum(e.nbytes for e in entries.values()) + sum(n for _, n in temps)


def _complete(path: str, size: int) -> bool:
    try:
        return os.stat(path).st_size == size
    except FileNotFoundError:
        return False


_CLOCK = threading.Lock()
_LAST_NS = [0]


def _touch(copy: CachedCopy) -> None:
    """Marks the entry used now (the index's modification time: the data file's stays
    what its index was checked against). Explicit nanoseconds, increasing within the
    process: the kernel's own file times tick in milliseconds, and two entries used one
    after the other must not tie."""
    with _CLOCK:
        now = _LAST_NS[0] = max(time.time_ns(), _LAST_NS[0] + 1)
    for path in (copy.index_path, copy.data_path):
        with contextlib.suppress(FileNotFoundError):
            os.utime(path, ns=(now, now))
            return


def _wait_for(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return  # finished (or given up) meanwhile
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # granted when the filler closes its copy
    finally:
        os.close(fd)


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n
