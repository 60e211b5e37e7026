"""Whole files in memory for shuffled epochs, and the copies kept between epochs.

A globally shuffled epoch reads records scattered over whole files: copying them one by
one out of a map costs ~1.4 µs each for small records, while reading each file in one
pass (:func:`read_whole`, its records' CRCs checked as the pieces come in) and slicing
the copy (:func:`read_held`) costs what a sequential epoch does. A reader holds such a
copy (:class:`Held`) while epochs use it
(:meth:`~tfrecord_engine.data.local_source.LocalFileRecords.hold`); when the last ends,
the copy may be kept for the next epoch: the registry here (:func:`keep`) keeps the
copies of all files of the process within one budget, least recently used dropped first.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import struct
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple, Protocol, cast

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..errors import StaleIndexError
from ..index.sidecar import Index
from ..records import framing
from .spans import U8, IntArray, crc_spans, short, stored_crcs, verify_batch

__all__ = [
    "IN_MEMORY_LIMIT",
    "Held",
    "HeldSpan",
    "Holder",
    "Joint",
    "anonymous",
    "current_identity",
    "identity",
    "keep",
    "read_held",
    "read_whole",
    "unkeep",
    "unpacked",
]

_H = framing.HEADER_SIZE
_F = framing.FOOTER_SIZE


def _in_memory_limit() -> int:
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not on every platform
        return 1 << 30
    return min(1 << 30, max(physical, 0) // 8)


#: The most bytes of files that a shuffled epoch reads whole into memory by default
#: (``batches(..., in_memory=None)``), and that random reads copy (:mod:`.random_holds`):
#: 1 GiB, or an eighth of the machine's memory.
IN_MEMORY_LIMIT: int = _in_memory_limit()

# Average record size from which a batch is read record by record (see read_held).
BIG_RECORD = 16 << 10
# A held file is read (and its records' CRCs checked) this many bytes at a time: small
# enough that the check finds the bytes just read still in the CPU's cache.
_HOLD_STEP = 8 << 20


class Holder(Protocol):
    """What holding a file needs of its reader (a
    :class:`~tfrecord_engine.data.local_source.LocalFileRecords`)."""

    index: Index
    path: str
    #: Each record's data span in the file, ``[_start[j], _end[j])`` (footer after it).
    _start: IntArray
    _end: IntArray

    def acquire(self, local: IntArray | None = None) -> int:
        """The file's descriptor, kept open until :meth:`unacquire`."""

    def unacquire(self) -> None:
        """Ends one :meth:`acquire`."""

    def drop_kept(self) -> None:
        """Drops the copy kept between holds."""


#: Files whose copy is kept between shuffled epochs (``release(keep=...)``), least
#: recently used first, by ``id``, with the size of each copy; together they stay
#: within the budget of the last release that kept one (``_KEPT_TOTAL`` bytes now).
#: The lock is reentrant and never held while a reader's lock is taken: a finalizer
#: (a dataset or an epoch garbage-collected inside a registry call, on any thread) may
#: call in again, and must neither deadlock nor find the registry half-changed.
_KEPT: OrderedDict[int, tuple[weakref.ref[Holder], int]] = OrderedDict()
_KEPT_TOTAL = [0]
_KEPT_LOCK = threading.RLock()


def _forget(key: int) -> None:
    """Takes ``key`` out of the registry (the lock held)."""
    entry = _KEPT.pop(key, None)
    if entry is not None:
        _KEPT_TOTAL[0] -= entry[1]


def keep(reader: Holder, size: int, budget: int) -> None:
    """Registers ``reader``'s kept copy of ``size`` bytes as the most recent, then drops
    the least recently used others' until all fit in ``budget`` (a copy larger than
    ``budget`` is dropped alone)."""
    if size > budget:
        reader.drop_kept()
        return
    victims: list[Holder] = []
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


def unkeep(reader: Holder) -> None:
    """Takes ``reader``'s kept copy out of the registry (it dropped or took it)."""
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


def identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells a file apart from itself changed: device, inode, size, mtime."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


#: One record of a file's copy in memory, not copied out: ``(data, array, start, end)``,
#: the record being ``data[start:end]`` (``array``: ``data`` as ``uint8``).
HeldSpan = tuple[mmap.mmap | bytes, U8, int, int]


class Held(NamedTuple):
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
    #: Copies read together into one region (:class:`Joint`): that region, and where
    #: this copy starts in it (batches across such files are views of it, not copies).
    region: U8 | None = None
    at: int = 0
    #: ``region`` as a buffer that slices to ``bytes`` (:attr:`Joint.data`).
    region_data: mmap.mmap | None = None

    def intact(self, local: IntArray) -> bool:
        """Whether the records ``local`` were all found intact as the file was read."""
        return self.all_ok or (self.ok is not None and bool(self.ok[local].all()))


#: Unpackers of chunks of equal-sized records, by (size, count): an epoch's full chunks
#: all have the same format.
_UNPACKERS: dict[tuple[int, int], struct.Struct] = {}
_UNPACKERS_MAX = 16
#: "000" to "999" as ASCII rows: sizes become decimal text three digits per lookup.
_DIGITS3 = np.frombuffer(b"".join(b"%03d" % i for i in range(1000)), np.uint8).reshape(1000, 3)


def unpacked(buf: U8, sizes: IntArray) -> list[bytes]:
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


#: The size of a huge page (x86-64, arm64 with 4 KiB base pages): copies from
#: ``_HUGE_FROM`` bytes on start on such a boundary.
_HUGE = 2 << 20
_HUGE_FROM = 1 << 20


def anonymous(size: int) -> mmap.mmap:
    """``size`` bytes of private memory (zeros), in huge pages where the system has them.

    A file held whole is read into such a buffer rather than into ``bytes``: with 2 MiB
    pages instead of 4 KiB ones, the copy in takes far fewer page faults and gathering
    records scattered over it far fewer TLB misses. The kernel backs only aligned 2 MiB
    ranges with huge pages, so from ``_HUGE_FROM`` bytes on the buffer starts on a
    2 MiB boundary of a slightly larger map (measured, a 2.4 MB file read into fresh
    memory: 0.20 ms aligned against 0.93 ms at the map's own start). Slicing it gives
    ``bytes``, as slicing ``bytes`` does; the map lives as long as the buffer.
    """
    private = getattr(mmap, "MAP_PRIVATE", None)
    anonymous = getattr(mmap, "MAP_ANONYMOUS", None)
    huge = getattr(mmap, "MADV_HUGEPAGE", None)
    if private is None or anonymous is None:
        return mmap.mmap(-1, size)  # (Windows: backed by the paging file)
    if huge is None or size < _HUGE_FROM:
        memory = mmap.mmap(-1, size, flags=private | anonymous)
        if huge is not None:
            with contextlib.suppress(OSError):  # only advice: a kernel may not take it
                memory.madvise(huge)
        return memory
    # Huge pages for every whole 2 MiB, and for the tail where rounding it up to one
    # more costs at most a third of the size in memory nobody reads.
    whole = -(-size // _HUGE) * _HUGE
    cover = whole if whole - size <= size // 3 else size // _HUGE * _HUGE
    memory = mmap.mmap(-1, max(size, cover) + _HUGE, flags=private | anonymous)
    start = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    skip = -start % _HUGE
    with contextlib.suppress(OSError):
        memory.madvise(huge, skip, cover)
    # A ctypes array over the aligned part keeps the map alive. Typed as the map: both
    # slice to ``bytes`` and export a writable buffer, all a copy is used for (typing
    # has no way to say that a char array's slices are bytes).
    return cast(mmap.mmap, (ctypes.c_char * size).from_buffer(memory, skip))


class Joint:
    """One region of memory for the copies of several files read for one epoch, each
    at its own place (:meth:`part`): a batch of records from several of them is then a
    view of the region, where separate copies would be gathered into a new buffer.

    The region lives while any copy in it (or any view of it) does; the copies are
    still kept or dropped one by one (:func:`keep`), each counted at its own size.

    Args:
        readers: the files, in the order their parts are laid out.
    """

    def __init__(self, readers: list[Holder]) -> None:
        sizes = [r.index.data_size for r in readers]
        self._at = {
            id(r): int(a) for r, a in zip(readers, np.cumsum([0, *sizes[:-1]]), strict=True)
        }
        self._sizes = {id(r): int(n) for r, n in zip(readers, sizes, strict=True)}
        total = max(1, sum(sizes))
        self._memory = anonymous(total)
        #: The whole region, read-only (as each copy's array is): batches are views of it.
        self.region: U8 = np.frombuffer(self._memory, np.uint8, total)
        self.region.flags.writeable = False
        #: The whole region as a buffer whose slices are ``bytes`` (as a map's are): a
        #: few records of several of its files are decoded from it in one call.
        self.data = cast(mmap.mmap, (ctypes.c_char * total).from_buffer(self._memory))

    def part(self, reader: Holder) -> tuple[mmap.mmap, int] | None:
        """Where ``reader``'s copy goes: a buffer of its size and its offset in the
        region (``None``: not one of this region's files)."""
        at = self._at.get(id(reader))
        if at is None:
            return None
        size = self._sizes[id(reader)]
        # (Typed as a map, as anonymous() does: it slices to bytes, as a map does.)
        return cast(mmap.mmap, (ctypes.c_char * size).from_buffer(self._memory, at)), at


def read_whole(
    reader: Holder, verify: bool, into: mmap.mmap | None = None, joint: Joint | None = None
) -> Held:
    """The whole file, read :data:`_HOLD_STEP` bytes at a time into huge pages, with
    each record's CRC checked (``verify``) as soon as its piece is in.

    ``into``: a writable map of at least the file's size to read it into (a shared
    copy, :mod:`.held_shared`) instead of new private memory; or ``joint``: the region
    this file's copy shares with others read for the same epoch (:class:`Joint`).

    Two threads share the pieces (this one and a helper, where the machine has more
    than one core): the copy and the check both run without the GIL, so the hold
    that stands before an epoch's first batch takes about half as long.
    """
    size = reader.index.data_size
    count = len(reader.index)
    ok = np.zeros(count, np.bool_) if verify else None
    if size == 0:
        return Held(b"", np.zeros(0, np.uint8), ok, verify, [])
    region: U8 | None = None
    region_data: mmap.mmap | None = None
    region_at = 0
    part = joint.part(reader) if joint is not None and into is None else None
    if part is not None and joint is not None:
        into, region_at = part
        region, region_data = joint.region, joint.data
    data = anonymous(size) if into is None else into
    buf = np.frombuffer(data, np.uint8, size)
    pieces = list(range(0, size, _HOLD_STEP))
    footer_end = reader._end + _F
    # Records in file order (as indexes are): each piece checks the records that lie
    # wholly inside it, while they are still in the cache; the few that straddle
    # two pieces are checked at the end.
    ordered = bool(np.all(footer_end[:-1] <= reader._start[1:]))
    first = np.searchsorted(reader._start - _H, pieces, "left")
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
                    raise short(reader.index, where, got, want, at)
                if ok is not None and ordered:
                    _check_held(reader, buf, ok, int(first[k]), int(stop[k]))
            except BaseException as exc:  # noqa: BLE001 - raised where the threads join
                with lock:
                    failed[k] = exc
                    taken[0] = len(pieces)  # no more pieces for anyone
                return

    fd = reader.acquire(where)  # (kept open for this long read if a map retires it)
    helper = None
    try:
        # The copy may be kept between epochs only if nothing changed the file while
        # it was read: its identity before and after must agree, and its last change
        # must be older than the read by more than a timestamp's granularity (else a
        # write in the same tick would leave the identity as it was).
        started = time.time_ns()
        before = identity(os.fstat(fd))
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
            after = identity(os.fstat(fd))
        finally:
            reader.unacquire()
    if failed:
        raise failed[min(failed)]  # the first piece that failed, whichever thread
    if ok is not None:
        if not ordered:
            _check_held(reader, buf, ok, 0, count)
        else:
            # Straddling records: after piece k's last, before piece k + 1's first.
            for a, b in zip(stop[:-1].tolist(), first[1:].tolist(), strict=True):
                _check_held(reader, buf, ok, a, b)
    buf.flags.writeable = False
    settled = before[3] < started - _SETTLED_NS
    same = before if after == before and settled else None
    all_ok = ok is not None and bool(ok.all())
    return Held(data, buf, ok, all_ok, [], same, region, region_at, region_data)


def _check_held(reader: Holder, buf: U8, ok: npt.NDArray[np.bool_], first: int, stop: int) -> None:
    """Sets ``ok[first:stop]``: whether those records' data match their CRCs in ``buf``."""
    if stop <= first:
        return
    starts = reader._start[first:stop]
    ends = reader._end[first:stop]
    inside = ends + _F <= buf.shape[0]  # (an index that does not fit: never ok)
    if not bool(inside.all()):
        starts, ends = starts[inside], ends[inside]
    stored = stored_crcs(buf, ends)
    good = crc_spans(buf, starts, ends) == stored
    if len(good) == stop - first:
        ok[first:stop] = good
    else:
        ok[first:stop][inside] = good


def read_held(reader: Holder, copy: Held, local: IntArray, verify: bool) -> list[bytes]:
    """The records ``local`` sliced from a shuffled epoch's copy of the file.

    Records whose CRC the hold found intact are delivered as they are; a batch with
    any other (damaged, or not checked) has every record checked here, raising for
    the first damaged one in batch order, as a read without the copy does.
    """
    starts = reader._start[local]
    ends = reader._end[local]
    sizes = ends - starts
    # Small records: gathered into one buffer by a compiled pass (the cache misses
    # of scattered records overlap there), then made into objects by one unpack.
    total = int(sizes.sum())
    gathered = None
    if total < BIG_RECORD * len(local):
        try:
            scratch = copy.scratch.pop()  # (atomic: threads never share one)
        except IndexError:
            scratch = np.empty(0, np.uint8)
        if scratch.shape[0] < total:
            scratch = np.empty(total, np.uint8)
        gathered = kernels.gather_spans(copy.array, starts, ends, scratch)
        if gathered is not None:
            records = unpacked(gathered, sizes)
        copy.scratch.append(scratch)
    if gathered is None:
        records = list(map(copy.data.__getitem__, map(slice, starts.tolist(), ends.tolist())))
    if verify and not copy.intact(local):
        stored = stored_crcs(copy.array, ends)
        verify_batch(
            records, stored, path=reader.path, local=local, offsets=reader.index.offsets[local]
        )
    return records


def current_identity(reader: Holder) -> tuple[int, int, int, int] | None:
    """The identity of the file as this reader would read it now (through its own
    descriptor: a file replaced under the path is not what an open dataset reads),
    or ``None`` when it cannot be had."""
    try:
        fd = reader.acquire()
    except (OSError, StaleIndexError):
        return None  # reading it again reports how
    try:
        return identity(os.fstat(fd))
    except OSError:
        return None
    finally:
        reader.unacquire()
