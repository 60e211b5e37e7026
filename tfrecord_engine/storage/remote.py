"""Remote storage through ``fsspec``: which paths are URLs, and one remote file's bytes.

A path of the form ``protocol://...`` (or a chained ``cache::protocol://...``) whose
protocol is not ``file``/``local`` is a URL: ``memory://``, ``http(s)://``, ``s3://``,
``gs://``, ``az://`` ... anything fsspec knows. ``file://`` URLs are plain local paths
(read through ``mmap``). fsspec is an optional extra (``pip install
tfrecord-engine[remote]``) imported on the first URL only; without it a URL raises
:class:`~tfrecord_engine.errors.MissingDependencyError` naming the extra. Credentials
and options come from fsspec's own configuration (``fsspec.config.conf``, the
``FSSPEC_<PROTOCOL>_<OPTION>`` environment variables) and the backend's usual sources
(``AWS_*``, ``GOOGLE_APPLICATION_CREDENTIALS`` ...).

The I/O plans, every request counted in :attr:`RemoteFile.requests`:

- **Sequential reads** (``read_records``, ``Index.build``, compressed files) go through a
  :class:`~tfrecord_engine.storage.readahead.ReadAheadStream`: blocks of
  :data:`DEFAULT_BLOCK_SIZE` (8 MiB), the next one fetched in the background while the
  current one is parsed. A file costs one size query plus ``ceil(size / 8 MiB)`` reads.
- **Random access** (``RecordDataset`` on an uncompressed file) sorts a batch's records
  by offset and merges those at most ``max_gap`` bytes apart into one range
  (:func:`~tfrecord_engine.data.source.coalesce`); the ranges of a batch go out in one
  ``fs.cat_ranges`` call, concurrently on async backends (HTTP, S3, GCS).
  :data:`DEFAULT_MAX_GAP` is 64 KiB: at the tens of MB/s one object-store connection
  streams, 64 KiB take about 1 ms, an order of magnitude less than a request's time to
  first byte (10-50 ms on S3/GCS), so reading a gap that small is always cheaper than
  another request (and requests are what object stores bill and throttle), while a
  batch never reads more than 64 KiB of unwanted bytes per record it asked for.
  A merged request stops growing at :data:`DEFAULT_MAX_REQUEST` (32 MiB; a single larger
  record is fetched whole): a long run of records (a sequential epoch's chunk of 4,096)
  becomes several requests sent concurrently, and no request is unbounded.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Final

from ..errors import MissingDependencyError, ReadOnlyStorageError, StaleIndexError
from .readahead import DEFAULT_BLOCK_SIZE, ReadAheadStream

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_MAX_GAP",
    "DEFAULT_MAX_REQUEST",
    "READ_ONLY_PROTOCOLS",
    "RemoteFile",
    "filesystem",
    "glob",
    "is_url",
    "local_path",
    "protocol",
    "same_file",
    "write_bytes",
]

#: Records of a random batch at most this many bytes apart are fetched together.
DEFAULT_MAX_GAP: Final = 64 << 10
#: A coalesced request stops growing at this many bytes.
DEFAULT_MAX_REQUEST: Final = 32 << 20
#: Protocols that cannot be written through fsspec (sidecar indexes stay in memory).
READ_ONLY_PROTOCOLS: Final = frozenset({"http", "https"})
_LOCAL: Final = frozenset({"file", "local"})
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)(?:://|::)")
_EXTRA = "pip install 'tfrecord-engine[remote]'"


def protocol(path: str) -> str | None:
    """Returns the (first) protocol of a URL, or ``None`` for a plain path.

    >>> protocol("s3://bucket/a.tfrecord"), protocol("/data/a.tfrecord")
    ('s3', None)
    """
    m = _URL.match(path)
    return m.group(1).lower() if m else None


def is_url(path: object) -> bool:
    """Whether ``path`` is a URL read through fsspec (``file://`` paths are local).

    >>> is_url("memory://x/a.tfrecord"), is_url("file:///tmp/a"), is_url("a.tfrecord")
    (True, False, False)
    """
    if not isinstance(path, str):
        return False
    p = protocol(path)
    return p is not None and p not in _LOCAL


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: URLs compared as given, local paths (``file://``
    ones included) once resolved.

    >>> same_file("file:///tmp/../tmp/a", "/tmp/a"), same_file("s3://b/a", "s3://b/./a")
    (True, False)
    """
    if is_url(a) or is_url(b):
        return a == b
    return os.path.realpath(local_path(a)) == os.path.realpath(local_path(b))


def local_path(path: str) -> str:
    """Strips a ``file://``/``local://`` scheme; any other path is returned unchanged.

    >>> local_path("file:///data/a.tfrecord"), local_path("data/a.tfrecord")
    ('/data/a.tfrecord', 'data/a.tfrecord')
    """
    for scheme in ("file://", "local://"):
        if path[: len(scheme)].lower() == scheme:
            return path[len(scheme) :]
    return path


def _fsspec(url: str) -> ModuleType:
    try:
        return importlib.import_module("fsspec")
    except ImportError as exc:
        raise MissingDependencyError(
            f"{url}: URLs are read and written through fsspec, which is not installed: {_EXTRA}"
        ) from exc


def filesystem(url: str) -> tuple[Any, str]:
    """Returns fsspec's filesystem for ``url`` and the path within it.

    Raises:
        MissingDependencyError: fsspec is not installed.
    """
    fs, path = _fsspec(url).core.url_to_fs(url)
    return fs, str(path)


def check_writable(url: str) -> None:
    """Raises :class:`ReadOnlyStorageError` for a URL that cannot be written (HTTP)."""
    if protocol(url) in READ_ONLY_PROTOCOLS:
        raise ReadOnlyStorageError(f"{url}: {protocol(url)} URLs are read-only")


def write_bytes(url: str, data: bytes) -> None:
    """Stores ``data`` at ``url`` in one put (an object appears whole or not at all).

    Raises:
        ReadOnlyStorageError: an HTTP(S) URL.
    """
    check_writable(url)
    fs, path = filesystem(url)
    fs.pipe_file(path, data)


def glob(pattern: str) -> list[str]:
    """Expands a URL pattern to sorted URLs, without hidden names (as ``glob.glob``).

    A pattern like ``train-*`` must not pick up a writer's hidden ``.name.tmp-*``
    objects, which ``fnmatch``-style matching would.
    """
    fs, path = filesystem(pattern)
    found = [fs.unstrip_protocol(p) for p in fs.glob(path)]
    return sorted(u for u in found if not u.rstrip("/").rsplit("/", 1)[-1].startswith("."))


class RemoteFile:
    """One remote file: its size, counted byte-range reads, a read-ahead stream.

    Args:
        url: the file's URL.

    Attributes:
        requests: data requests made so far (size queries are not counted).
        bytes_fetched: bytes those requests returned.

    Example:
        >>> import fsspec
        >>> fsspec.filesystem("memory").pipe_file("/doc/remote.bin", b"0123456789")
        >>> f = RemoteFile("memory://doc/remote.bin")
        >>> f.size, f.fetch(2, 3), f.fetch_ranges([0, 8], [2, 10]), f.requests
        (10, b'234', [b'01', b'89'], 3)
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.fs, self.fs_path = filesystem(url)
        self.requests = 0
        self.bytes_fetched = 0
        self._size: int | None = None
        self._lock = threading.Lock()  # counters are updated from loader threads

    @property
    def size(self) -> int:
        """The file's size in bytes (queried once).

        Raises:
            FileNotFoundError: no such file.
        """
        if self._size is None:
            size = self.fs.size(self.fs_path)
            if size is None:
                raise OSError(f"{self.url}: the server does not report the file's size")
            self._size = int(size)
        return self._size

    def _count(self, requests: int, nbytes: int) -> None:
        with self._lock:
            self.requests += requests
            self.bytes_fetched += nbytes

    def _check(self, data: bytes, start: int, end: int) -> bytes:
        if len(data) != end - start:
            raise StaleIndexError(
                f"{self.url}: asked for bytes [{start}, {end}), got {len(data)}: the file "
                "is shorter than expected (changed while in use, or a server that ignores "
                "Range requests?)"
            )
        return data

    def fetch(self, offset: int, size: int) -> bytes:
        """Returns the half-open byte range ``[offset, offset + size)`` (a ``Fetcher``)."""
        if size == 0:
            return b""
        data = bytes(self.fs.cat_file(self.fs_path, start=offset, end=offset + size))
        self._count(1, len(data))
        return self._check(data, offset, offset + size)

    def fetch_ranges(self, starts: Sequence[int], ends: Sequence[int]) -> list[bytes]:
        """Returns the half-open ranges ``[starts[i], ends[i])``, fetched together.

        Async backends (HTTP, S3, GCS) send the requests concurrently.
        """
        if not starts:
            return []
        got = self.fs.cat_ranges(
            [self.fs_path] * len(starts), list(starts), list(ends), on_error="raise"
        )
        out = [bytes(d) for d in got]
        self._count(len(out), sum(map(len, out)))
        return [self._check(d, a, b) for d, a, b in zip(out, starts, ends, strict=True)]

    def read_all(self) -> bytes:
        """Returns the whole file in one request (small files: sidecar indexes)."""
        data = bytes(self.fs.cat_file(self.fs_path))
        self._count(1, len(data))
        return data

    def open_stream(self, block_size: int = DEFAULT_BLOCK_SIZE) -> ReadAheadStream:
        """Returns a forward-only stream of the file, read ahead in ``block_size`` blocks."""
        return ReadAheadStream(self.fetch, self.size, block_size)
