"""What ties an index to the bytes it describes: size, fingerprint and a content check.

An index is stamped with the identity of the bytes it was built from, read through the
descriptor (or URL) those bytes came from: never with whatever the path names later (a
file replaced between building and stamping would otherwise lend its identity to an
index of the other file). The identity has three parts:

- the size;
- the sampled :func:`~.scan.fingerprint` (head, tail and 8 probes: 64 KiB at most),
  which every index format has;
- a :class:`ContentCheck` (index formats with the content flag, see :mod:`.format`),
  which catches the same-size replacements that the fingerprint's windows miss:

  - ``FULL``: the CRC-32C of every byte, for files of at most :data:`FULL_CHECK_MAX`
    bytes. Exact: any change is seen.
  - ``RECORDS`` (larger uncompressed files): the CRC-32C of the header and footer of
    :data:`RECORD_SAMPLES` records spread evenly over the index (first and last
    included), read at the offsets the index gives. A record's footer is the CRC of
    its data, so this checks those records' content and, through the headers, that
    the file's record layout is the index's at each of them: another layout, which
    would turn reads into wrong records, fails unless it agrees at every sample.
  - ``WINDOWS`` (larger compressed files): the CRC-32C of :data:`WINDOW_SAMPLES`
    windows of 4 KiB spread evenly over the file.

  Only ``FULL`` is exact. The sampled kinds read, without read-ahead, at most two pages
  per sampled record (``RECORDS``: 2 MiB at worst, one page per record where records
  are small) or 256 KiB (``WINDOWS``), besides the fingerprint's 64 KiB.

Measured (local disk, 856-byte records, median of 30): validating an
unchanged 1 MB file costs 0.11 ms from the page cache (0.05 ms with the fingerprint
alone), a 4 MiB one 0.8 ms (0.2 ms), a 100 MB one 0.34 ms (0.07 ms); with its pages
evicted, about what the fingerprint alone costs (disk-bound: 2-10 ms for 1 to 5 MB,
~100 ms for 100 MB). Remembered (below): 0.02 ms whatever the size.

Repeated checks of an unchanged local file cost one ``fstat``: a check that passed is
remembered (in this process) for the file's ``(st_dev, st_ino, st_size, st_mtime_ns,
st_ctime_ns)``, which no ``touch``/``os.utime`` can forge (they set the change time to
now). Only a file whose last change is more than :data:`SETTLED_NS` old is remembered:
file-system timestamps are coarse, and a file written again within one tick of the
check could otherwise keep its old times.
"""

from __future__ import annotations

import collections
import contextlib
import mmap
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from ..records import framing
from ..storage import remote
from ..storage.options import StorageOptionsArg, normalize_storage_options
from ..storage.ranges import coalesce
from .scan import FileStat, file_stat, fingerprint_of, fingerprint_ranges

__all__ = [
    "FULL_CHECK_MAX",
    "KIND_FULL",
    "KIND_RECORDS",
    "KIND_WINDOWS",
    "RECORD_SAMPLES",
    "SETTLED_NS",
    "WINDOW_SAMPLES",
    "ContentCheck",
    "DataBytes",
    "Identity",
    "checked_before",
    "content_crc",
    "header_samples_match",
    "identify",
    "opened",
    "remember_checked",
    "sample_indices",
]

U64Array = npt.NDArray[np.uint64]

KIND_FULL: Final = 1
KIND_RECORDS: Final = 2
KIND_WINDOWS: Final = 3
KINDS: Final = (KIND_FULL, KIND_RECORDS, KIND_WINDOWS)
#: Files up to this size get a full-content check (CRC-32C runs at 7-20 GB/s: 0.8 ms
#: for a 4 MiB file from the page cache, its read from disk when not); larger ones a
#: sampled one.
FULL_CHECK_MAX: Final = 4 << 20
#: Records whose header and footer a ``RECORDS`` check reads.
RECORD_SAMPLES: Final = 256
#: Windows of :data:`WINDOW_SIZE` bytes a ``WINDOWS`` check reads.
WINDOW_SAMPLES: Final = 64
WINDOW_SIZE: Final = 4 << 10
#: A local file is remembered as checked only if its last change is older than this.
SETTLED_NS: Final = 3_000_000_000
_MEMORY: Final = 4096  # checks remembered at most (least recently used forgotten)


class ContentCheck(NamedTuple):
    """A content check of a data file: its kind, its sample count (0 for ``FULL``) and
    the CRC-32C (unmasked) of the bytes it covers."""

    kind: int
    samples: int
    crc: int


class Identity(NamedTuple):
    """What identifies a data file's bytes (see the module docstring); ``stat`` is the
    ``fstat`` of the descriptor they were read through (``None`` for a URL)."""

    size: int
    fingerprint: int
    content: ContentCheck
    stat: FileStat | None


class DataBytes:
    """The bytes of one data file, read through one descriptor (or one URL).

    A local file is mapped once; its :attr:`stat` is the descriptor's, so everything
    read here describes one file whatever its path names meanwhile. A URL is reached
    with ``storage_options`` (fsspec keyword arguments; see
    :mod:`tfrecord_engine.storage.options`), kept in :attr:`storage_options` for
    whatever reads the file again by its path.
    """

    def __init__(self, path: str, storage_options: StorageOptionsArg = None) -> None:
        self.path = path
        self.storage_options = normalize_storage_options(storage_options)
        self.stat: FileStat | None = None
        self._remote: remote.RemoteFile | None = None
        self._map: mmap.mmap | None = None
        self.buf: bytes | mmap.mmap = b""
        if remote.is_url(path):
            self._remote = remote.RemoteFile(path, storage_options=self.storage_options)
            return
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            self.stat = file_stat(st)
            if st.st_size:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                self.buf = self._map

    @property
    def size(self) -> int:
        """The file's size (a URL's is queried once, on first use)."""
        return len(self.buf) if self._remote is None else self._remote.size

    def sparse(self) -> None:
        """Reads ahead nothing from here on: what follows reads a few bytes here and
        there, and read-ahead around each would read most of a cold file."""
        if self._map is not None and hasattr(mmap, "MADV_RANDOM"):
            with contextlib.suppress(OSError):
                self._map.madvise(mmap.MADV_RANDOM)

    def ranges(self, spans: Sequence[tuple[int, int]]) -> list[bytes]:
        """The bytes of each half-open ``(start, end)`` span (a URL's in one batch)."""
        if self._remote is None:
            return [bytes(self.buf[a:b]) for a, b in spans]
        if not spans:
            return []
        plan = coalesce(np.array([a for a, _ in spans]), np.array([b for _, b in spans]), 0)
        got = self._remote.fetch_ranges(plan.starts.tolist(), plan.ends.tolist())
        return [
            got[g][a - s : b - s]
            for (a, b), g, s in zip(
                spans, plan.request_of.tolist(), plan.starts[plan.request_of].tolist(), strict=True
            )
        ]

    def joined(self, spans: Sequence[tuple[int, int]]) -> bytes:
        """The bytes of the spans, one after another (a local file's in one gather:
        hundreds of small spans cost one numpy call, not one slice each)."""
        if self._remote is not None or not spans:
            return b"".join(self.ranges(spans))
        table = np.array(spans, dtype=np.int64).reshape(-1, 2)
        widths = table[:, 1] - table[:, 0]
        starts = np.repeat(table[:, 0] - np.cumsum(widths) + widths, widths)
        at = starts + np.arange(int(widths.sum()), dtype=np.int64)
        return np.frombuffer(self.buf, dtype=np.uint8)[at].tobytes()

    def crc_all(self) -> int:
        """The CRC-32C of every byte (a URL's in one request)."""
        if self._remote is None:
            return framing.crc32c(memoryview(self.buf))
        return framing.crc32c(self._remote.read_all() if self.size else b"")

    def close(self) -> None:
        """Unmaps the file (a view still held elsewhere keeps the map until collected)."""
        if self._map is not None:
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None
        self.buf = b""


@contextlib.contextmanager
def opened(path: str, storage_options: StorageOptionsArg = None) -> Iterator[DataBytes]:
    """:class:`DataBytes` of ``path`` for the duration of a ``with`` block."""
    data = DataBytes(path, storage_options)
    try:
        yield data
    finally:
        data.close()


def plan(size: int, plain: bool, count: int) -> tuple[int, int]:
    """The ``(kind, samples)`` of the content check of a file of ``size`` bytes
    (``plain``: uncompressed) and ``count`` indexed records."""
    if size <= FULL_CHECK_MAX:
        return KIND_FULL, 0
    if plain and count:
        return KIND_RECORDS, min(count, RECORD_SAMPLES)
    return KIND_WINDOWS, WINDOW_SAMPLES


def sample_indices(count: int, samples: int) -> npt.NDArray[np.int64]:
    """``samples`` record indices spread evenly over ``count`` records, first and last
    included (integer arithmetic: the same on every machine).

    >>> sample_indices(10, 4).tolist()
    [0, 3, 6, 9]
    """
    if samples >= count:
        return np.arange(count, dtype=np.int64)
    if samples <= 1:
        return np.zeros(min(samples, count), dtype=np.int64)
    return (np.arange(samples, dtype=np.int64) * (count - 1)) // (samples - 1)


def _spans(
    kind: int, samples: int, size: int, offsets: U64Array, lengths: U64Array
) -> list[tuple[int, int]] | None:
    """The spans a sampled check reads, or ``None`` when a sampled record does not fit
    in the file (so the file is not the one the index describes)."""
    if kind == KIND_WINDOWS:
        if size <= WINDOW_SIZE or samples <= 1:
            return [(0, size)]
        starts = (np.arange(samples, dtype=np.int64) * (size - WINDOW_SIZE)) // (samples - 1)
        return [(a, a + WINDOW_SIZE) for a in starts.tolist()]
    at = sample_indices(len(offsets), samples)
    if len(at) != samples:
        return None
    heads = offsets[at]
    feet = heads + np.uint64(framing.HEADER_SIZE) + lengths[at]
    if len(at) and int(feet.max()) + framing.FOOTER_SIZE > size:
        return None
    spans: list[tuple[int, int]] = []
    for h, f in zip(heads.tolist(), feet.tolist(), strict=True):
        spans += [(h, h + framing.HEADER_SIZE), (f, f + framing.FOOTER_SIZE)]
    return spans


def content_crc(
    data: DataBytes, kind: int, samples: int, offsets: U64Array, lengths: U64Array
) -> int | None:
    """The CRC of what a ``kind`` check with ``samples`` reads of ``data`` (given the
    index's ``offsets`` and ``lengths``); ``None`` when the layout cannot be the file's."""
    if kind == KIND_FULL:
        return data.crc_all()
    spans = _spans(kind, samples, data.size, offsets, lengths)
    if spans is None:
        return None
    data.sparse()
    return framing.crc32c(data.joined(spans))


def identify(data: DataBytes, plain: bool, offsets: U64Array, lengths: U64Array) -> Identity:
    """The :class:`Identity` of ``data`` as an index with these records describes it.

    Raises:
        ValueError: the records do not fit in the file (a caller's bug: it indexed
            these very bytes).
    """
    size = data.size
    fp = fingerprint_of(size, data.ranges(fingerprint_ranges(size)))
    kind, samples = plan(size, plain, len(offsets))
    crc = content_crc(data, kind, samples, offsets, lengths)
    if crc is None:
        raise ValueError(f"{data.path}: the indexed records do not fit in its {size} bytes")
    return Identity(size, fp, ContentCheck(kind, samples, crc), data.stat)


def header_samples_match(data: DataBytes, offsets: U64Array, lengths: U64Array) -> bool:
    """Whether the headers of :data:`RECORD_SAMPLES` records spread over the index
    announce the indexed lengths with valid length CRCs (the layout check of an index
    without a content check: an older format's)."""
    at = sample_indices(len(offsets), RECORD_SAMPLES)
    if not len(at):
        return True
    heads = offsets[at]
    if int(heads.max()) + framing.HEADER_SIZE > data.size:
        return False
    data.sparse()
    raw = data.joined([(h, h + framing.HEADER_SIZE) for h in heads.tolist()])
    table = np.frombuffer(raw, dtype=np.uint8).reshape(-1, framing.HEADER_SIZE)
    stored_len = table[:, :8].copy().view("<u8").reshape(-1)
    stored_crc = table[:, 8:].copy().view("<u4").reshape(-1)
    if not bool(np.array_equal(stored_len, lengths[at])):
        return False
    want = [framing.mask_crc(framing.crc32c(int(n).to_bytes(8, "little"))) for n in stored_len]
    return bool(np.array_equal(stored_crc, np.array(want, dtype=np.uint32)))


# ---- checks remembered for unchanged files ------------------------------------------

#: The clock that dates checks (a seam: tests move it instead of waiting).
clock: Callable[[], int] = time.time_ns
_checked: collections.OrderedDict[Hashable, None] = collections.OrderedDict()
_lock = threading.Lock()


def checked_before(key: Hashable) -> bool:
    """Whether the check ``key`` (an index's identity and a file's :data:`FileStat`)
    passed before in this process."""
    with _lock:
        if key in _checked:
            _checked.move_to_end(key)
            return True
    return False


def remember_checked(key: Hashable, stat: FileStat, started_ns: int) -> None:
    """Remembers that the check ``key`` passed, if the file (``stat``) had settled: its
    last change (modification or status change) is more than :data:`SETTLED_NS` before
    ``started_ns``, when the check began reading."""
    if max(stat[3], stat[4]) >= started_ns - SETTLED_NS:
        return
    with _lock:
        _checked[key] = None
        _checked.move_to_end(key)
        while len(_checked) > _MEMORY:
            _checked.popitem(last=False)
