"""Remote storage through ``fsspec``: which paths are URLs, and one remote file's bytes.

A path of the form ``protocol://...`` (or a chained ``cache::protocol://...``) whose
protocol is not ``file``/``local`` is a URL: ``memory://``, ``http(s)://``, ``s3://``,
``gs://``, ``az://`` ... anything fsspec knows. ``file://`` URLs are plain local paths
(read through ``mmap``). fsspec is an optional extra (``remote``: ``pip install -e
'.[remote]'`` in a clone) imported on the first URL only; without it a URL raises
:class:`~tfrecord_engine.errors.MissingDependencyError` naming the extra. Credentials
and options come from the call's ``storage_options`` (see
:mod:`~tfrecord_engine.storage.options`), then fsspec's own configuration
(``fsspec.config.conf``, the ``FSSPEC_<PROTOCOL>_<OPTION>`` environment variables) and
the backend's usual sources (``AWS_*``, ``GOOGLE_APPLICATION_CREDENTIALS`` ...).

The I/O plans, every request counted in :attr:`RemoteFile.requests`:

- **Sequential reads** (``read_records``, ``Index.build``, compressed files) go through a
  :class:`~tfrecord_engine.storage.readahead.ReadAheadStream`: blocks of
  :data:`DEFAULT_BLOCK_SIZE` (8 MiB), the next one fetched in the background while the
  current one is parsed. A file costs one size query plus ``ceil(size / 8 MiB)`` reads.
- **Random access** (``RecordDataset`` on an uncompressed file) sorts a batch's records
  by offset and merges those at most ``max_gap`` bytes apart into one range
  (:func:`~tfrecord_engine.data.source.coalesce`); the ranges of a batch go out
  together, concurrently on async backends (HTTP: our own range requests on fsspec's
  aiohttp session, :mod:`~tfrecord_engine.storage.remote_http`; S3, GCS ...: one
  ``fs.cat_ranges`` call, :mod:`~tfrecord_engine.storage.remote_fsspec`).
  :data:`DEFAULT_MAX_GAP` is 64 KiB: at the tens of MB/s one object-store connection
  streams, 64 KiB take about 1 ms, an order of magnitude less than a request's time to
  first byte (10-50 ms on S3/GCS), so reading a gap that small is always cheaper than
  another request (and requests are what object stores bill and throttle), while a
  batch never reads more than 64 KiB of unwanted bytes per record it asked for.
  A merged request stops growing at :data:`DEFAULT_MAX_REQUEST` (32 MiB; a single larger
  record is fetched whole): a long run of records (a sequential epoch's chunk of 4,096)
  becomes several requests sent concurrently, and no request is unbounded.

When a request fails:

- transiently (HTTP 408/429/5xx, a connection refused, reset or cut mid-body, a
  timeout): it is sent again, with exponential backoff and jitter, at most
  ``RetryPolicy.attempts`` times in all (:mod:`~tfrecord_engine.storage.retry`; per file
  with ``RemoteFile(url, retry=...)``, process-wide with
  :func:`~tfrecord_engine.storage.retry.set_default_retry_policy`); then a
  :class:`~tfrecord_engine.errors.RemoteReadError` names the URL, the byte range, the
  status and the attempts. A transient failure never becomes ``FileNotFoundError``.
- for good: 404/410 raise :class:`~tfrecord_engine.errors.RemoteNotFoundError` (a
  ``FileNotFoundError``), 401/403 :class:`~tfrecord_engine.errors.RemoteAccessDeniedError`
  (a ``PermissionError``), both naming the URL and range, without a retry.
- the file changed: the first answer pins the file's version (ETag, else
  Last-Modified) and size; an HTTP answer from another version raises
  :class:`~tfrecord_engine.errors.RemoteChangedError` (a ``StaleIndexError``) at once,
  so an epoch never mixes records of two versions.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Sequence
from random import Random
from types import ModuleType
from typing import Any, Final

from ..errors import MissingDependencyError, ReadOnlyStorageError, install_hint
from .options import StorageOptions, StorageOptionsArg, as_kwargs, normalize_storage_options
from .readahead import DEFAULT_BLOCK_SIZE, ReadAheadStream
from .remote_fsspec import FsspecRanges
from .remote_http import HttpRanges, is_http_filesystem
from .remote_identity import RemoteIdentity, VersionPin
from .retry import RetryPolicy, default_retry_policy, set_default_retry_policy

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_MAX_GAP",
    "DEFAULT_MAX_REQUEST",
    "READ_ONLY_PROTOCOLS",
    "RemoteFile",
    "RemoteIdentity",
    "RetryPolicy",
    "default_retry_policy",
    "filesystem",
    "glob",
    "is_url",
    "local_path",
    "protocol",
    "same_file",
    "set_default_retry_policy",
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
_EXTRA = install_hint("remote")


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


def filesystem(url: str, storage_options: StorageOptionsArg = None) -> tuple[Any, str]:
    """Returns fsspec's filesystem for ``url`` and the path within it.

    ``storage_options`` go to the filesystem's constructor (``url_to_fs(url, **options)``,
    as pandas passes them); keys they leave out come from fsspec's configuration.

    Raises:
        MissingDependencyError: fsspec is not installed.
    """
    fs, path = _fsspec(url).core.url_to_fs(url, **as_kwargs(storage_options))
    return fs, str(path)


def check_writable(url: str) -> None:
    """Raises :class:`ReadOnlyStorageError` for a URL that cannot be written (HTTP)."""
    if protocol(url) in READ_ONLY_PROTOCOLS:
        raise ReadOnlyStorageError(f"{url}: {protocol(url)} URLs are read-only")


def write_bytes(url: str, data: bytes, storage_options: StorageOptionsArg = None) -> None:
    """Stores ``data`` at ``url`` in one put (an object appears whole or not at all).

    Raises:
        ReadOnlyStorageError: an HTTP(S) URL.
    """
    check_writable(url)
    fs, path = filesystem(url, storage_options)
    fs.pipe_file(path, data)


def glob(pattern: str, storage_options: StorageOptionsArg = None) -> list[str]:
    """Expands a URL pattern to sorted URLs, without hidden names (as ``glob.glob``).

    A pattern like ``train-*`` must not pick up a writer's hidden ``.name.tmp-*``
    objects, which ``fnmatch``-style matching would.
    """
    fs, path = filesystem(pattern, storage_options)
    found = [fs.unstrip_protocol(p) for p in fs.glob(path)]
    return sorted(u for u in found if not u.rstrip("/").rsplit("/", 1)[-1].startswith("."))


class RemoteFile:
    """One remote file: its size, counted byte-range reads, a read-ahead stream.

    Every request is retried on transient failures (HTTP 408/429/5xx, connections
    refused, reset or cut mid-body, timeouts) under ``retry``; a read that still fails
    raises :class:`~tfrecord_engine.errors.RemoteReadError` naming the URL and byte range
    (a missing file: :class:`~tfrecord_engine.errors.RemoteNotFoundError`, a
    ``FileNotFoundError``; a transient failure never becomes one). See
    :mod:`tfrecord_engine.storage.retry`.

    The file's version is pinned by the first answer that names one (the size query,
    normally: ``ETag``, else ``Last-Modified``; S3's ETag, GCS's generation through
    ``fs.info``) or by ``identity``. Over HTTP(S) every later answer's label, size
    (``Content-Range``) and length are checked against it, so a file replaced while in
    use raises :class:`~tfrecord_engine.errors.RemoteChangedError` at the first answer
    from the new version instead of mixing records of both (other backends check the
    size and each answer's length; see :mod:`tfrecord_engine.storage.remote_fsspec`).

    Args:
        url: the file's URL.
        retry: the retry policy (default: the process-wide one when constructed,
            :func:`~tfrecord_engine.storage.retry.default_retry_policy`).
        identity: the version the caller expects (e.g. the one its index was validated
            against); default: the first one seen.
        size: the size the caller expects; default: asked on first use.
        storage_options: fsspec keyword arguments for the URL's filesystem (see
            :mod:`~tfrecord_engine.storage.options`); never shown in a ``repr``.

    Attributes:
        requests: data requests sent so far, retries included (size queries are not
            counted).
        retries: how many of them were retries.
        bytes_fetched: bytes those requests returned.

    Example:
        >>> import fsspec
        >>> fsspec.filesystem("memory").pipe_file("/doc/remote.bin", b"0123456789")
        >>> f = RemoteFile("memory://doc/remote.bin")
        >>> f.size, f.fetch(2, 3), f.fetch_ranges([0, 8], [2, 10]), f.requests
        (10, b'234', [b'01', b'89'], 3)
    """

    def __init__(
        self,
        url: str,
        *,
        retry: RetryPolicy | None = None,
        identity: RemoteIdentity | None = None,
        size: int | None = None,
        storage_options: StorageOptionsArg = None,
    ) -> None:
        self.url = url
        self.storage_options: StorageOptions | None = normalize_storage_options(storage_options)
        self.fs, self.fs_path = filesystem(url, self.storage_options)
        self.retry = default_retry_policy() if retry is None else retry
        self.pin = VersionPin(url, identity, size)
        # The jitter's own generator, seeded from the OS: never the global one, and not
        # seeded from the URL, or every reader of one file would back off in lockstep.
        rng = Random()
        self._io: HttpRanges | FsspecRanges
        if protocol(url) in {"http", "https"} and is_http_filesystem(self.fs):
            self._io = HttpRanges(self.fs, self.fs_path, self.retry, rng, self.pin)
        else:
            self._io = FsspecRanges(self.fs, self.fs_path, url, self.retry, rng, self.pin)

    @property
    def requests(self) -> int:
        """Data requests sent so far, retries included."""
        return self._io.sent

    @property
    def retries(self) -> int:
        """Data requests that were retries of a failed one."""
        return self._io.retried

    @property
    def bytes_fetched(self) -> int:
        """Bytes the data requests returned."""
        return self._io.received

    @property
    def identity(self) -> RemoteIdentity | None:
        """The version pinned so far (``None``: none seen, or the backend names none)."""
        return self.pin.identity

    @property
    def size(self) -> int:
        """The file's size in bytes (queried once).

        Raises:
            RemoteNotFoundError: no such file (a ``FileNotFoundError``).
            RemoteReadError: the query failed, after the retries.
        """
        if self.pin.size is None:
            self._io.size()
        assert self.pin.size is not None
        return self.pin.size

    def fetch(self, offset: int, size: int) -> bytes:
        """Returns the half-open byte range ``[offset, offset + size)`` (a ``Fetcher``)."""
        if size == 0:
            return b""
        return self._io.fetch_ranges([offset], [offset + size])[0]

    def fetch_ranges(self, starts: Sequence[int], ends: Sequence[int]) -> list[bytes]:
        """Returns the half-open ranges ``[starts[i], ends[i])``, fetched together.

        Async backends (HTTP, S3, GCS) send the requests concurrently; a failed range is
        retried on its own.
        """
        if not starts:
            return []
        return self._io.fetch_ranges(starts, ends)

    def read_all(self) -> bytes:
        """Returns the whole file in one request (small files: sidecar indexes)."""
        return self._io.read_all()

    def open_stream(self, block_size: int = DEFAULT_BLOCK_SIZE) -> ReadAheadStream:
        """Returns a forward-only stream of the file, read ahead in ``block_size`` blocks."""
        return ReadAheadStream(self.fetch, self.size, block_size)
