"""Random access to the records of one indexed file: local ``pread`` or a byte-range
fetcher (GZIP/ZLIB files: :mod:`tfrecord_engine.data.compressed_source`).

Every reader takes a batch of record indices *within its file* and returns the records'
bytes in the same order, with the data CRCs checked in bulk: the footers are gathered
with numpy, one ``crc32c`` call per record is the only per-record work besides slicing.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import mmap
import os
import struct
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol, runtime_checkable

import crc32c as _crc32c
import numpy as np
import numpy.typing as npt

from .. import kernels
from ..errors import StaleIndexError
from ..index.scan import FileStat
from ..index.sidecar import Index
from ..records import framing
from ..records.framing import crc_spans
from ..storage import descriptors, safecopy
from ..storage.ranges import coalesce
from .localfile import check_opened

__all__ = [
    "Fetcher",
    "FetcherRecords",
    "LocalFileRecords",
    "RandomAccessSource",
    "RangesFetcher",
    "crc_spans",
    "verify_batch",
]

#: Reads the half-open byte range ``[offset, offset + size)`` of one file.
Fetcher = Callable[[int, int], bytes]
#: Reads the half-open byte ranges ``[starts[i], ends[i])`` of one file, together.
RangesFetcher = Callable[[list[int], list[int]], list[bytes]]
IntArray = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
_H = framing.HEADER_SIZE
_F = framing.FOOTER_SIZE
_FOOTER_AT = np.arange(_F, dtype=np.int64)
_DELTA = framing.MASK_DELTA
_FOOTER = struct.Struct("<I")
#: Descriptors opened beside a file's map for ``ds[i]``'s ``pread`` (see
#: ``LocalFileRecords._spare``), at most this many in the process: a map holds one
#: descriptor per file already, and datasets of 1,000 shards meet the usual limit of
#: 1,024. Beyond it ``ds[i]`` copies out of the map (~3-5 µs against ~0.8 µs).
SPARE_DESCRIPTORS = 64
_SPARE_LOCK = threading.Lock()
_spares = [0]  # how many are open
# Average record size from which a batch is read record by record (see _read_big).
_BIG_RECORD = 16 << 10
# A held file is read (and its records' CRCs checked) this many bytes at a time: small
# enough that the check finds the bytes just read still in the CPU's cache.
_HOLD_STEP = 8 << 20


#: Files whose copy is kept between shuffled epochs (``release(keep=...)``), least
#: recently used first, by ``id``, with the size of each copy; together they stay
#: within the budget of the last release that kept one (``_KEPT_TOTAL`` bytes now).
#: The lock is reentrant and never held while a reader's lock is taken: a finalizer
#: (a dataset or an epoch garbage-collected inside a registry call, on any thread) may
#: call in again, and must neither deadlock nor find the registry half-changed.
_KEPT: OrderedDict[int, tuple[weakref.ref[LocalFileRecords], int]] = OrderedDict()
_KEPT_TOTAL = [0]
_KEPT_LOCK = threading.RLock()


def _forget(key: int) -> None:
    """Takes ``key`` out of the registry (the lock held)."""
    entry = _KEPT.pop(key, None)
    if entry is not None:
        _KEPT_TOTAL[0] -= entry[1]


def _keep(reader: LocalFileRecords, size: int, budget: int) -> None:
    """Registers ``reader``'s kept copy of ``size`` bytes as the most recent, then drops
    the least recently used others' until all fit in ``budget`` (a copy larger than
    ``budget`` is dropped alone)."""
    if size > budget:
        reader.drop_kept()
        return
    victims: list[LocalFileRecords] = []
    with _KEPT_LOCK:
        _forget(id(reader))
        _KEPT[id(reader)] = (weakref.ref(reader, _died(id(reader))), size)
        _KEPT_TOTAL[0] += size
        while _KEPT_TOTAL[0] > budget and _KEPT:
            key, (ref, _) = next(iter(_KEPT.items()))
            _forget(key)
            victim = ref()
            if victim is not None:
                victims.append(victim)
    for victim in victims:  # outside the registry's lock: each takes its own
        victim.drop_kept()


def _died(key: int) -> Callable[[object], None]:
    """A weakref callback: a reader gone with its copy leaves the registry."""

    def forget(_ref: object) -> None:
        with _KEPT_LOCK:
            entry = _KEPT.get(key)
            if entry is not None and entry[0]() is None:
                _forget(key)

    return forget


def _unkeep(reader: LocalFileRecords) -> None:
    with _KEPT_LOCK:
        _forget(id(reader))


def _renew_kept_lock() -> None:
    """In a forked child: the lock may have been held by a thread the child lacks."""
    global _KEPT_LOCK  # noqa: PLW0603 - one module-wide lock, replaced after fork
    _KEPT_LOCK = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_kept_lock)


#: How long before a whole-file read the file's last change must lie for the copy to
#: be kept between epochs: more than the coarsest timestamps in use (FAT's 2 s).
_SETTLED_NS = 3_000_000_000


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells a file apart from itself changed: device, inode, size, mtime."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _stored_crcs(buf: U8, ends: IntArray) -> npt.NDArray[np.uint32]:
    """The masked data CRCs stored in ``buf`` after the records ending at ``ends``."""
    stored: npt.NDArray[np.uint32] = buf[ends[:, None] + _FOOTER_AT].view("<u4").reshape(-1)
    return stored


class _Held(NamedTuple):
    """A file read whole into memory (:meth:`LocalFileRecords.hold`)."""

    data: mmap.mmap | bytes  # slicing it gives ``bytes``
    array: U8  # a read-only view of ``data``
    #: Whether each record's data matched its CRC when read (``None``: not checked).
    ok: npt.NDArray[np.bool_] | None
    all_ok: bool  # every record checked and matched
    #: Buffers that batches are gathered into, reused (a new one per batch would cost
    #: its page faults every time); one per thread gathering at once.
    scratch: list[U8]
    #: The file's (device, inode, size, mtime) before and after it was read, when both
    #: were equal (``None``: it changed meanwhile, or was not read: never kept).
    identity: tuple[int, int, int, int] | None = None

    def intact(self, local: IntArray) -> bool:
        """Whether the records ``local`` were all found intact as the file was read."""
        return self.all_ok or (self.ok is not None and bool(self.ok[local].all()))


#: Unpackers of chunks of equal-sized records, by (size, count): an epoch's full chunks
#: all have the same format.
_UNPACKERS: dict[tuple[int, int], struct.Struct] = {}
_UNPACKERS_MAX = 16
#: "000" to "999" as ASCII rows: sizes become decimal text three digits per lookup.
_DIGITS3 = np.frombuffer(b"".join(b"%03d" % i for i in range(1000)), np.uint8).reshape(1000, 3)


def _unpacked(buf: U8, sizes: IntArray) -> list[bytes]:
    """The consecutive pieces of ``sizes[j]`` bytes of ``buf`` as ``bytes``.

    One ``struct`` unpack (format ``<{size}s`` per piece) makes every object in C,
    about three times as fast as slicing them one by one in Python.
    """
    n = len(sizes)
    size = int(sizes[0])
    if bool(np.all(sizes == size)):
        unpacker = _UNPACKERS.get((size, n))
        if unpacker is None:
            unpacker = struct.Struct("<" + f"{size}s" * n)
            if len(_UNPACKERS) >= _UNPACKERS_MAX:
                _UNPACKERS.clear()
            _UNPACKERS[size, n] = unpacker
    else:
        # Each size as decimal digits (zero-padded to one width), then "s".
        groups = (len(str(int(sizes.max()))) + 2) // 3
        text = np.empty((n, 3 * groups + 1), np.uint8)
        rest = sizes
        for g in range(groups - 1, -1, -1):
            text[:, 3 * g : 3 * g + 3] = _DIGITS3[rest % 1000]
            rest = rest // 1000
        text[:, -1] = ord("s")
        unpacker = struct.Struct("<" + text.tobytes().decode("ascii"))
    return list(unpacker.unpack_from(buf))  # type: ignore[arg-type]  # numpy arrays are buffers


def _anonymous(size: int) -> mmap.mmap:
    """``size`` bytes of private memory (zeros), in huge pages where the system has them.

    A file held whole is read into such a buffer rather than into ``bytes``: with 2 MiB
    pages instead of 4 KiB ones, the copy in takes far fewer page faults (measured: 60 MB
    read in 16 ms against 39 ms) and gathering records scattered over it far fewer TLB
    misses. Slicing it gives ``bytes``, as slicing ``bytes`` does.
    """
    private = getattr(mmap, "MAP_PRIVATE", None)
    anonymous = getattr(mmap, "MAP_ANONYMOUS", None)
    if private is None or anonymous is None:
        memory = mmap.mmap(-1, size)  # (Windows: backed by the paging file)
    else:
        memory = mmap.mmap(-1, size, flags=private | anonymous)
    huge = getattr(mmap, "MADV_HUGEPAGE", None)
    if huge is not None:
        with contextlib.suppress(OSError):  # only advice: a kernel may not take it
            memory.madvise(huge)
    return memory


@runtime_checkable
class RandomAccessSource(Protocol):
    """What map-style loaders (PyTorch ``Dataset``, Grain sources) need."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> object: ...

    def __getitems__(self, indices: Sequence[int]) -> object: ...


def verify_batch(
    records: list[bytes],
    stored: npt.NDArray[np.uint32],
    *,
    path: str,
    local: IntArray,
    offsets: npt.NDArray[np.uint64],
) -> None:
    """Raises :class:`CorruptedRecordError` for the first record whose CRC mismatches."""
    crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
    bad = np.flatnonzero(framing.mask_crc_array(crcs) != stored)
    if len(bad):
        j = int(bad[0])
        framing.check_data(
            records[j],
            int(stored[j]),
            path=path,
            record_index=int(local[j]),
            offset=int(offsets[j]),
        )


_WHY = " (changed while in use? cut or rewritten by another job)"


def _stale(index: Index, local: IntArray | None, detail: str, why: str = _WHY) -> StaleIndexError:
    """The error for a file that no longer matches its index, at the record asked for."""
    first = int(local[0]) if local is not None and len(local) else 0
    offset = int(index.offsets[first]) if first < len(index) else index.data_size
    return StaleIndexError(f"{index.data_path}: record {first} at offset {offset}: {detail}{why}")


def _short(index: Index, local: IntArray, got: int, want: int, at: int) -> StaleIndexError:
    return _stale(
        index,
        local,
        f"read {got} of {want} bytes at offset {at}: the file is shorter than the "
        f"{index.data_size} bytes it had when indexed",
    )


class LocalFileRecords:
    """Records of one uncompressed local file, opened lazily, never touched through a map.

    Touching a page of a map past the end of its file kills the process with SIGBUS,
    and a file can be cut under a reader at any moment (another job regenerating data,
    a copy replaced in place, NFS). So every byte is copied by the kernel: one record
    with one ``pread``; a batch gathered out of a map of the file by
    :func:`~tfrecord_engine.storage.safecopy.gather` (one system call for the whole
    batch, however scattered), or, where that is unavailable, one ``pread`` per run of
    records that lie back to back. A short copy raises :class:`StaleIndexError` naming
    the record. See docs/reliability.md for what this costs against reading the map.

    The descriptor and the map count in the process's descriptor budget
    (:data:`~tfrecord_engine.storage.descriptors.CACHE`), which closes them while no read
    uses them when other files need room; the next read opens the file again, and only
    if it is still the file the index describes (:func:`~.localfile.check_opened`).
    A read through the descriptor or the map holds it (:meth:`acquire`,
    :meth:`pin_map`); the per-call paths that do not (``read_one``, ``read_few``) note
    ``_gen`` before and check it after, and read again when it changed.
    """

    def __init__(self, index: Index) -> None:
        self.index = index
        self.path = index.data_path
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        self._raw: U8 | None = None  # a view of the map (it pins the map while in use)
        self._base: int | None = None  # the map's address, which gather() takes
        self._lock = threading.Lock()  # loader threads may open the file together
        # The whole file in memory while a shuffled epoch holds it (see hold()):
        # ``_copy``, and its data also as ``_held`` (what read_one slices).
        self._copy: _Held | None = None
        self._held: mmap.mmap | bytes | None = None
        self._holders = 0
        # The copy kept after the last hold ended (release(keep=...)): the next hold
        # takes it if the file is unchanged since it was read (its identity).
        self._kept: _Held | None = None
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
        # Payload spans as int64, computed once: a batch then costs two gathers.
        self._start = index.offsets.astype(np.int64) + _H
        self._end = self._start + index.lengths.astype(np.int64)
        # The same as Python ints, one at a time, for the per-call paths (no numpy scalar).
        self._start_at = memoryview(self._start.data).cast("B").cast("q")
        self._end_at = memoryview(self._end.data).cast("B").cast("q")

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
                    self.index, self._seen, fd, lambda why: _stale(self.index, local, why, "")
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

    def _map_locked(self, local: IntArray | None) -> int:
        base = self._base
        if base is None:
            fd = self._open_locked(local)
            self._map = descriptors.with_room(
                self.path, 1, lambda: mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            )
            self._raw = np.frombuffer(self._map, np.uint8)
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

    def hold(self, verify: bool = True) -> None:
        """Reads the whole file into memory (sequentially) for the reads that follow,
        until as many :meth:`release` calls; a file already held is not read again, nor
        one whose copy was kept (``release(keep=...)``) if the file is unchanged since
        (same device, inode, size and modification time).

        A globally shuffled epoch reads records scattered over the whole file: copying
        them one by one out of the map costs ~1.4 µs each for small records, while
        reading the file in one pass and slicing it costs what a sequential epoch does.
        The copy is a snapshot of the file as indexed (a short read raises
        :class:`StaleIndexError`): a file changed afterwards is not seen until release.

        With ``verify`` the data CRC of every record is computed as the file is read,
        piece by piece, in one compiled pass where the kernels are loaded; reads from
        the copy then deliver records found intact without computing it again, and
        check the others themselves (raising for a damaged one exactly as without
        the copy). Nothing is raised here for damage: only reads of a damaged record do.
        """
        with self._lock:
            self._holders += 1
            if self._copy is not None:
                return
            kept, self._kept = self._kept, None
        if kept is not None:
            _unkeep(self)
            if kept.identity is not None and self._file_identity() == kept.identity:
                with self._lock:
                    if self._holders > 0 and self._copy is None:
                        self._copy = kept
                        self._held = kept.data
                return
        try:
            copy = self._read_all(verify)
        except BaseException:
            with self._lock:
                self._holders -= 1
            raise
        with self._lock:
            if self._holders > 0 and self._copy is None:
                self._copy = copy
                self._held = copy.data

    def _file_identity(self) -> tuple[int, int, int, int] | None:
        """The identity of the file as this reader would read it now (through its own
        descriptor: a file replaced under the path is not what an open dataset reads),
        or ``None`` when it cannot be had."""
        try:
            fd = self.acquire()
        except (OSError, StaleIndexError):
            return None  # reading it again reports how
        try:
            return _identity(os.fstat(fd))
        except OSError:
            return None
        finally:
            self.unacquire()

    def release(self, keep: int = 0) -> None:
        """Ends one :meth:`hold`. With the last, the copy is dropped, or with ``keep``
        (a budget in bytes) kept for the next hold: the copies kept for all files of
        the process then stay within ``keep`` bytes, the least recently used dropped
        first. :meth:`close` drops it too."""
        with self._lock:
            self._holders = max(0, self._holders - 1)
            if self._holders:
                return
            copy, self._copy = self._copy, None
            self._held = None
            if not keep or copy is None or copy.identity is None:
                return
            self._kept = copy
        _keep(self, len(copy.data), keep)

    def drop_kept(self) -> None:
        """Drops the copy kept between holds, if any."""
        with self._lock:
            self._kept = None

    def _read_all(self, verify: bool) -> _Held:
        """The whole file, read :data:`_HOLD_STEP` bytes at a time into huge pages, with
        each record's CRC checked (``verify``) as soon as its piece is in.

        Two threads share the pieces (this one and a helper, where the machine has more
        than one core): the copy and the check both run without the GIL, so the hold
        that stands before an epoch's first batch takes about half as long.
        """
        size = self.index.data_size
        count = len(self.index)
        ok = np.zeros(count, np.bool_) if verify else None
        if size == 0:
            return _Held(b"", np.zeros(0, np.uint8), ok, verify, [])
        data = _anonymous(size)
        buf = np.frombuffer(data, np.uint8)
        pieces = list(range(0, size, _HOLD_STEP))
        footer_end = self._end + _F
        # Records in file order (as indexes are): each piece checks the records that lie
        # wholly inside it, while they are still in the cache; the few that straddle
        # two pieces are checked at the end.
        ordered = bool(np.all(footer_end[:-1] <= self._start[1:]))
        first = np.searchsorted(self._start - _H, pieces, "left")
        stop = np.searchsorted(footer_end, [*pieces[1:], size], "right")
        where = np.zeros(1, np.int64)
        taken = [0]  # the next piece to read
        lock = threading.Lock()
        failed: dict[int, BaseException] = {}

        def work() -> None:
            while True:
                with lock:
                    k = taken[0]
                    taken[0] += 1
                if k >= len(pieces):
                    return
                at = pieces[k]
                want = min(_HOLD_STEP, size - at)
                try:
                    got = os.preadv(fd, [buf[at : at + want]], at)  # type: ignore[list-item]  # (a buffer)
                    if got != want:
                        raise _short(self.index, where, got, want, at)
                    if ok is not None and ordered:
                        self._check_held(buf, ok, int(first[k]), int(stop[k]))
                except BaseException as exc:  # noqa: BLE001 - raised where the threads join
                    with lock:
                        failed[k] = exc
                        taken[0] = len(pieces)  # no more pieces for anyone
                    return

        fd = self.acquire(where)  # (kept open for this long read if a map retires it)
        helper = None
        try:
            # The copy may be kept between epochs only if nothing changed the file while
            # it was read: its identity before and after must agree, and its last change
            # must be older than the read by more than a timestamp's granularity (else a
            # write in the same tick would leave the identity as it was).
            started = time.time_ns()
            before = _identity(os.fstat(fd))
            if len(pieces) > 1 and (os.cpu_count() or 1) > 1:
                helper = threading.Thread(target=work, name="tfe-hold", daemon=True)
                helper.start()
            work()
        finally:
            if helper is not None:
                with lock:
                    taken[0] = len(pieces)
                helper.join()
            try:
                after = _identity(os.fstat(fd))
            finally:
                self.unacquire()
        if failed:
            raise failed[min(failed)]  # the first piece that failed, whichever thread
        if ok is not None:
            if not ordered:
                self._check_held(buf, ok, 0, count)
            else:
                # Straddling records: after piece k's last, before piece k + 1's first.
                for a, b in zip(stop[:-1].tolist(), first[1:].tolist(), strict=True):
                    self._check_held(buf, ok, a, b)
        buf.flags.writeable = False
        settled = before[3] < started - _SETTLED_NS
        same = before if after == before and settled else None
        return _Held(data, buf, ok, ok is not None and bool(ok.all()), [], same)

    def _check_held(self, buf: U8, ok: npt.NDArray[np.bool_], first: int, stop: int) -> None:
        """Sets ``ok[first:stop]``: whether those records' data match their CRCs in ``buf``."""
        if stop <= first:
            return
        starts = self._start[first:stop]
        ends = self._end[first:stop]
        inside = ends + _F <= buf.shape[0]  # (an index that does not fit: never ok)
        if not bool(inside.all()):
            starts, ends = starts[inside], ends[inside]
        stored = _stored_crcs(buf, ends)
        good = crc_spans(buf, starts, ends) == stored
        if len(good) == stop - first:
            ok[first:stop] = good
        else:
            ok[first:stop][inside] = good

    def _pread(self, fd: int, want: int, at: int, local: IntArray) -> bytes:
        """Exactly ``want`` bytes at ``at``; a short read is the file cut under us."""
        buf = os.pread(fd, want, at)
        if len(buf) != want:
            raise _short(self.index, local, len(buf), want, at)
        return buf

    def _framed_array(self, local: IntArray) -> tuple[U8, IntArray, IntArray]:
        """The records' data and footers in one new buffer: ``(buf, starts, ends)`` of
        each record's data within it (its footer follows at its end)."""
        starts = self._start[local]
        ends = self._end[local]
        cut = np.flatnonzero(starts[1:] != ends[:-1] + (_F + _H)) + 1
        first = np.concatenate([[0], cut])
        run_start = starts[first]
        run_size = ends[np.concatenate([cut - 1, [len(local) - 1]])] + _F - run_start
        total = int(run_size.sum())
        out = np.empty(total, np.uint8)
        # One run (a sequential chunk) of a file not mapped: a plain read is cheapest.
        base = self.pin_map(local) if len(run_start) > 1 or self._raw is not None else None
        copied = None
        if base is not None:
            try:
                spans = np.empty((len(run_start), 2), np.uint64)
                spans[:, 0] = run_start + base
                spans[:, 1] = run_size
                copied = safecopy.gather(out, spans)
            finally:
                self.unacquire()
        if copied is None:
            fd = self.acquire(local)
            try:
                view = memoryview(out.data)
                copied = 0
                for a, n in zip(run_start.tolist(), run_size.tolist(), strict=True):
                    got = os.preadv(fd, [view[copied : copied + n]], a)
                    copied += got
                    if got != n:
                        break
            finally:
                self.unacquire()
        if copied != total:
            # The run the copy stopped in: its records are no longer all in the file.
            r = int(np.searchsorted(np.cumsum(run_size), copied, "right"))
            a, n = int(run_start[r]), int(run_size[r])
            raise _short(self.index, local[first[r] :], copied - int(run_size[:r].sum()), n, a)
        # Record j's data sits at its offset within its run, shifted by the runs before.
        run_at = np.cumsum(run_size) - run_size - run_start
        run_of = np.zeros(len(local), np.int64)
        run_of[cut] = 1
        rel = run_at[np.cumsum(run_of)]
        return out, starts + rel, ends + rel

    def read_one(self, local: int, verify: bool = True) -> bytes:
        """Returns record ``local`` (an index within this file), CRC-checked.

        The per-call path of ``ds[i]``: one ``pread`` of the record and its footer, and
        Python integers throughout (no array set-up; errors as :meth:`read`).
        """
        a = self._start_at[local]
        size = self._end_at[local] - a
        # Optimistic and lock-free (the per-call path): a map retiring the descriptor, or
        # the budget closing it or the map, bumps _gen first, so a read through a closed
        # or reused number or address is noticed and done again through acquire().
        gen = self._gen
        base = self._base
        buf = None
        held = self._held
        self.recently_used = True
        if held is not None:
            buf = held[a : a + size + _F]
        elif base is not None and self._fd is None and not self._spare():
            # Mapped for gathers, its one descriptor the map's, and no spare one.
            buf = safecopy.copy_span(base + a, size + _F)
            if self._gen != gen:
                buf = None
        if buf is None:
            fd = self._fd
            if fd is not None:
                try:
                    buf = os.pread(fd, size + _F, a)
                except OSError as exc:
                    if exc.errno != errno.EBADF:
                        raise
                    buf = None
                if self._gen != gen:
                    buf = None
            if buf is None:
                where = np.array([local], np.int64)
                fd = self.acquire(where)
                try:
                    buf = self._pread(fd, size + _F, a, where)
                finally:
                    self.unacquire()
        if len(buf) != size + _F:  # a short copy out of the map
            raise _short(self.index, np.array([local], np.int64), len(buf), size + _F, a)
        record = buf[:size]
        crc = _crc32c.crc32c(record) if verify else 0
        # (framing.mask_crc, inline: this is the per-call path)
        if (
            verify
            and (((crc >> 15) | (crc << 17)) + _DELTA) & 0xFFFFFFFF
            != _FOOTER.unpack_from(buf, size)[0]
        ):
            where = np.array([local], np.int64)
            verify_batch(
                [record],
                np.frombuffer(buf, "<u4", 1, size),
                path=self.path,
                local=where,
                offsets=self.index.offsets[where],
            )
        return record

    def read_few(self, local: list[int], verify: bool = True) -> list[bytes] | None:
        """The records ``local`` (a few valid indices within this file), CRC-checked, or
        ``None`` where :meth:`read` must decide (a short read, a CRC mismatch: it raises
        the located error).

        The per-call path of a small ``ds[list]``: Python integers throughout; one
        ``pread`` per record, or one gather out of the file's map once it is mapped.
        """
        start_at = self._start_at
        end_at = self._end_at
        held = self._held
        chunks: list[bytes] | None = None
        if held is None and self._base is not None:
            chunks = self._gather_few(local)
            if chunks is None:
                return None
        fd = None if chunks is not None or held is not None else self.acquire()
        pread = os.pread
        footer = _FOOTER.unpack_from
        out = []
        stored = []
        try:
            for k, j in enumerate(local):
                a = start_at[j]
                size = end_at[j] - a
                if chunks is not None:
                    chunk = chunks[k]
                elif held is not None:
                    chunk = held[a : a + size + _F]
                else:
                    chunk = pread(fd, size + _F, a)  # type: ignore[arg-type]  # fd set here
                if len(chunk) != size + _F:
                    return None
                out.append(chunk[:size])
                stored.append(footer(chunk, size)[0])
        finally:
            if fd is not None:
                self.unacquire()
        if verify:
            # The CRCs checked together: one C loop and three array operations.
            crcs = np.fromiter(map(_crc32c.crc32c, out), np.uint32, len(out))
            if not np.array_equal(framing.mask_crc_array(crcs), np.array(stored, np.uint32)):
                return None
        return out

    def _gather_few(self, local: list[int]) -> list[bytes] | None:
        gen = self._gen  # (as in read_one: a map closed meanwhile voids the copy)
        base = self._base
        if base is None:
            return None
        self.recently_used = True
        where = np.array(local, np.int64)
        starts = self._start[where]
        sizes = self._end[where] + _F - starts
        spans = np.empty((len(local), 2), np.uint64)
        spans[:, 0] = starts + base
        spans[:, 1] = sizes
        total = int(sizes.sum())
        buf = np.empty(total, np.uint8)
        if safecopy.gather(buf, spans) != total or self._gen != gen:
            return None
        blob = buf.tobytes()
        cut = [0, *np.cumsum(sizes).tolist()]
        return [blob[a:b] for a, b in itertools.pairwise(cut)]

    def read(self, local: IntArray, verify: bool = True) -> list[bytes]:
        """Returns the records ``local`` (indices within this file), CRC-checked."""
        if len(local) == 0:
            return []
        copy = self._copy
        if copy is not None:
            return self._read_held(copy, local, verify)
        # (Once the file is mapped for gathers, its one descriptor is the map's.)
        big = int(self.index.lengths[local].mean()) >= _BIG_RECORD
        if len(local) > 1 and big and self._raw is None:
            return self._read_big(local, verify)
        starts = self._start[local]
        ends = self._end[local]
        if self._raw is None and bool(np.all(starts[1:] == ends[:-1] + (_F + _H))):
            # Back to back (a sequential chunk, or one record), file not mapped: one
            # read straight into bytes.
            a = int(starts[0])
            fd = self.acquire(local)
            try:
                buf = self._pread(fd, int(ends[-1]) + _F - a, a, local)
            finally:
                self.unacquire()
            starts = starts - a
            ends = ends - a
        else:
            arr, starts, ends = self._framed_array(local)
            buf = arr.tobytes()  # one copy of the batch; slicing bytes is the cheapest
        if len(local) == 1:
            record = buf[int(starts[0]) : int(ends[0])]
            if verify:
                stored = np.frombuffer(buf, "<u4", 1, int(ends[0]))
                if framing.mask_crc(_crc32c.crc32c(record)) != int(stored[0]):
                    verify_batch(
                        [record],
                        stored,
                        path=self.path,
                        local=local,
                        offsets=self.index.offsets[local],
                    )
            return [record]
        end_list = ends.tolist()
        records = [buf[a:b] for a, b in zip(starts.tolist(), end_list, strict=True)]
        if verify:
            raw = np.frombuffer(buf, np.uint8)
            stored = _stored_crcs(raw, ends)
            crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
            if not np.array_equal(framing.mask_crc_array(crcs), stored):
                verify_batch(
                    records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
                )
        return records

    def _read_held(self, copy: _Held, local: IntArray, verify: bool) -> list[bytes]:
        """The records ``local`` sliced from a shuffled epoch's copy of the file.

        Records whose CRC the hold found intact are delivered as they are; a batch with
        any other (damaged, or not checked) has every record checked here, raising for
        the first damaged one in batch order, as a read without the copy does.
        """
        starts = self._start[local]
        ends = self._end[local]
        sizes = ends - starts
        # Small records: gathered into one buffer by a compiled pass (the cache misses
        # of scattered records overlap there), then made into objects by one unpack.
        total = int(sizes.sum())
        gathered = None
        if total < _BIG_RECORD * len(local):
            try:
                scratch = copy.scratch.pop()  # (atomic: threads never share one)
            except IndexError:
                scratch = np.empty(0, np.uint8)
            if scratch.shape[0] < total:
                scratch = np.empty(total, np.uint8)
            gathered = kernels.gather_spans(copy.array, starts, ends, scratch)
            if gathered is not None:
                records = _unpacked(gathered, sizes)
            copy.scratch.append(scratch)
        if gathered is None:
            records = list(map(copy.data.__getitem__, map(slice, starts.tolist(), ends.tolist())))
        if verify and not copy.intact(local):
            stored = _stored_crcs(copy.array, ends)
            verify_batch(
                records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
            )
        return records

    def _read_big(self, local: IntArray, verify: bool) -> list[bytes]:
        # Large records: each read straight into its own bytes (one copy, where slicing
        # a joined buffer would make two); the footers take a small read each.
        pread = os.pread
        starts = self._start[local].tolist()
        ends = self._end[local].tolist()
        fd = self.acquire(local)
        try:
            records = [pread(fd, b - a, a) for a, b in zip(starts, ends, strict=True)]
            footers = [pread(fd, _F, b) for b in ends]
        finally:
            self.unacquire()
        for j, (r, f) in enumerate(zip(records, footers, strict=True)):
            if len(r) != ends[j] - starts[j] or len(f) != _F:
                raise _short(self.index, local[j:], len(r), ends[j] - starts[j], starts[j])
        if verify:
            stored = np.frombuffer(b"".join(footers), "<u4")
            crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
            if not np.array_equal(framing.mask_crc_array(crcs), stored):
                verify_batch(
                    records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
                )
        return records

    def spans(self, local: IntArray, verify: bool = True) -> tuple[U8, IntArray, IntArray]:
        """The records ``local`` as spans of one buffer read for them, CRC-checked.

        Returns:
            ``(buf, starts, ends)``: record ``j`` is ``buf[starts[j]:ends[j]]``
            (``buf`` is ``uint8`` and the caller's to keep).
        """
        if len(local) == 0:
            return np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)
        copy = self._copy
        if copy is not None:  # read-only, and immutable: the caller may keep it
            raw, starts, ends = copy.array, self._start[local], self._end[local]
            if copy.intact(local):
                verify = False  # checked as the file was read
        else:
            raw, starts, ends = self._framed_array(local)
        if verify:
            stored = _stored_crcs(raw, ends)
            if not np.array_equal(crc_spans(raw, starts, ends), stored):
                self.read(local, verify=True)  # raises, naming the first bad record
        return raw, starts, ends

    def close(self) -> None:
        self._copy = None
        self._held = None
        self._holders = 0
        self._kept = None
        _unkeep(self)
        self._close_files()
        descriptors.CACHE.holds(self, 0)

    def __del__(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            self.close()


class FetcherRecords:
    """Records of one uncompressed file read through a byte-range :data:`Fetcher`.

    Two request plans, both counted in ``requests`` and ``bytes_fetched``:

    - default: the records of a batch that lie back to back (or within ``max_gap``
      bytes) are coalesced into one request (:func:`~tfrecord_engine.storage.ranges.coalesce`;
      ``max_gap=None``: one request per record; a request grows past ``max_request``
      bytes only for a single larger record). With ``fetch_ranges`` the requests of
      a batch are handed over together (fsspec's ``cat_ranges`` sends them
      concurrently);
    - ``block_records=B``: whole aligned blocks of ``B`` records are fetched and the
      last ``cache_blocks`` are kept, the I/O model of
      :class:`~tfrecord_engine.data.sampler.BlockShuffle` (with ``cache_blocks`` at least its
      window, each block is fetched once per epoch).
    """

    def __init__(
        self,
        index: Index,
        fetch: Fetcher,
        *,
        max_gap: int | None = 0,
        max_request: int | None = None,
        fetch_ranges: RangesFetcher | None = None,
        block_records: int | None = None,
        cache_blocks: int = 32,
    ) -> None:
        self.index = index
        self.path = index.data_path
        self.fetch = fetch
        self.fetch_ranges = fetch_ranges
        self.max_gap = max_gap
        self.max_request = max_request
        self.block_records = block_records
        self.requests = 0
        self.bytes_fetched = 0
        self._start = index.offsets.astype(np.int64)
        self._end = self._start + index.lengths.astype(np.int64) + _H + _F
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cache_blocks = cache_blocks

    def _get(self, start: int, stop: int) -> bytes:
        self.requests += 1
        self.bytes_fetched += stop - start
        return self.fetch(start, stop - start)

    def _framed_coalesced(self, local: IntArray) -> list[bytes]:
        offsets, ends = self._start[local], self._end[local]
        plan = coalesce(offsets, ends, self.max_gap, self.max_request)
        if self.fetch_ranges is not None:
            self.requests += len(plan.starts)
            self.bytes_fetched += int(np.sum(plan.ends - plan.starts))
            chunks = self.fetch_ranges(plan.starts.tolist(), plan.ends.tolist())
        else:
            chunks = [
                self._get(a, b)
                for a, b in zip(plan.starts.tolist(), plan.ends.tolist(), strict=True)
            ]
        rel = (offsets - plan.starts[plan.request_of]).tolist()
        size = (ends - offsets).tolist()
        return [
            chunks[g][r : r + k]
            for g, r, k in zip(plan.request_of.tolist(), rel, size, strict=True)
        ]

    def _framed_blocks(self, local: IntArray, size: int) -> list[bytes]:
        blocks = local // size
        held: dict[int, bytes] = {}
        for b in np.unique(blocks).tolist():
            data = self._cache.get(b)
            if data is None:
                last = min((b + 1) * size, len(self._start)) - 1
                data = self._get(int(self._start[b * size]), int(self._end[last]))
                self._cache[b] = data
                if len(self._cache) > self._cache_blocks:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(b)
            held[b] = data
        base = self._start[blocks * size]
        rel = (self._start[local] - base).tolist()
        end = (self._end[local] - base).tolist()
        return [held[b][r:e] for b, r, e in zip(blocks.tolist(), rel, end, strict=True)]

    def read(self, local: IntArray, verify: bool = True) -> list[bytes]:
        """Returns the records ``local`` (indices within this file), CRC-checked."""
        if len(local) == 0:
            return []
        if self.block_records is None:
            framed = self._framed_coalesced(local)
        else:
            framed = self._framed_blocks(local, self.block_records)
        records = [f[_H:-_F] for f in framed]
        if verify:
            stored = np.array([framing.read_footer(f, len(f) - _F) for f in framed], np.uint32)
            verify_batch(
                records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
            )
        return records

    def close(self) -> None:
        """Drops cached blocks (the fetcher owns its connections)."""
        self._cache.clear()
