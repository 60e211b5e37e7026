"""Random access to the records of one uncompressed local file (see :class:`LocalFileRecords`)."""

from __future__ import annotations

import contextlib
import errno
import itertools
import mmap
import os
import struct

import crc32c as _crc32c
import numpy as np

from .. import kernels
from ..index.sidecar import Index
from ..records import framing
from ..storage import descriptors, safecopy
from . import held as _held
from .held import BIG_RECORD, Held, HeldSpan, Joint, read_held, read_whole, unkeep
from .held_shared import NO_COPY, SharedCopies, shared_copy
from .localfile import MappedFile
from .random_holds import RandomHolds
from .random_reads import NEVER, RandomReads
from .spans import (
    U8,
    HeldSpans,
    IntArray,
    Spans,
    bad_spans,
    check_spans,
    short,
    stored_crcs,
    unpacked_spans,
    verify_batch,
)

__all__ = ["LocalFileRecords"]

_H = framing.HEADER_SIZE
_F = framing.FOOTER_SIZE
_DELTA = framing.MASK_DELTA
_FOOTER = struct.Struct("<I")


class LocalFileRecords(RandomReads, MappedFile):
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

    With ``mapped`` (``RecordDataset(..., mapped_reads=True)``) records are sliced
    straight out of the file's map instead (no copy by the kernel; CRCs checked as
    always): faster, and unguarded, a file cut meanwhile kills the process with
    SIGBUS (docs/reliability.md, "Reading straight from the map").
    """

    def __init__(self, index: Index, *, mapped: bool = False) -> None:
        super().__init__(index)
        #: Records are sliced straight out of the map (unguarded: see the class).
        self.mapped = mapped
        # The whole file in memory while a shuffled epoch holds it (see hold()):
        # ``_copy``, and its data also as ``_held`` (what read_one slices).
        self._copy: Held | None = None
        self._held: mmap.mmap | bytes | None = None
        # ``_held`` again when every record of it was found intact as it was read (its
        # reads skip the CRC check), else None.
        self._held_checked: mmap.mmap | bytes | None = None
        self._holders = 0
        # Random reads (ds[i], ds[list]) counted until the file is read whole for them
        # at ``_auto_at`` records (see .random_holds; off until a dataset enables it).
        self.random_holds: RandomHolds | None = None
        self._random = 0
        self._auto_at = NEVER
        self._auto = False  # one of the holds is the random reads' (see hold_for_random)
        self._auto_busy = False
        # The next count reached first looks for a copy shared by other processes.
        self._attach_first = False
        self._auto_reads = 0  # held reads left before the next look at the clock
        self._auto_seen = 0.0  # when the file's identity was last checked
        # The copy kept after the last hold ended (release(keep=...)): the next hold
        # takes it if the file is unchanged since it was read (its identity).
        self._kept: Held | None = None
        # Payload spans as int64, computed once: a batch then costs two gathers.
        self._start = index.offsets.astype(np.int64) + _H
        self._end = self._start + index.lengths.astype(np.int64)
        # The same as Python ints, one at a time, for the per-call paths (no numpy scalar).
        self._start_at = memoryview(self._start.data).cast("B").cast("q")
        self._end_at = memoryview(self._end.data).cast("B").cast("q")
        # Where the last-ending record ends (what a copy must hold for every record).
        self._end_max = int(self._end.max()) if len(self._end) else 0

    def hold(
        self,
        verify: bool = True,
        share: SharedCopies | None = None,
        budget: int | None = None,
        joint: Joint | None = None,
        *,
        shared_only: bool = False,
    ) -> None:
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

        With ``share`` (a loader's worker processes), the copy is the one shared by
        its processes on this machine (:mod:`.held_shared`), filled by the first that
        needs it; ``budget`` bytes for all shared copies of the machine (``None``: no
        limit). Where the budget leaves no room the file is not copied (reads go to
        the file); where no segment can be made, the copy is private as without it
        (none with ``shared_only``: the random reads of a loader's workers, which
        must not take one copy each). Otherwise ``joint``: the region this file's
        copy shares with the other files of the epoch (:class:`~.held.Joint`), where
        it is one of them.
        """
        with self._lock:
            self._holders += 1
            if self._copy is not None:
                return
            kept, self._kept = self._kept, None
        if kept is not None:
            unkeep(self)
            if kept.identity is not None and _held.current_identity(self) == kept.identity:
                with self._lock:
                    if self._holders > 0 and self._copy is None:
                        self._copy = kept
                        self._set_held(kept)
                return
        try:
            got = None if share is None else shared_copy(self, verify, share, budget)
            if got is NO_COPY or (got is None and share is not None and shared_only):
                return  # held without a copy: reads go to the file
            copy = got if isinstance(got, Held) else self._read_all(verify, joint)
        except BaseException:
            with self._lock:
                self._holders -= 1
            raise
        with self._lock:
            if self._holders > 0 and self._copy is None:
                self._copy = copy
                self._set_held(copy)

    def _set_held(self, copy: Held) -> None:
        """Reads slice ``copy`` from now on (the lock held)."""
        self._held_checked = copy.data if copy.all_ok else None
        self._held = copy.data

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
            self._held_checked = None
            if not keep or copy is None or copy.identity is None:
                return
            self._kept = copy
        _held.keep(self, len(copy.data), keep)

    def drop_kept(self) -> None:
        """Drops the copy kept between holds, if any, and the random reads' copy (the
        budget of kept copies, :func:`~.held.keep`, counts both)."""
        with self._lock:
            self._kept = None
            auto, self._auto = self._auto, False
        if auto:
            self.release()

    def _read_all(self, verify: bool, joint: Joint | None = None) -> Held:
        """The whole file read into memory, each record's CRC checked (``verify``), into
        its part of ``joint`` if given: see :func:`~.held.read_whole`."""
        return read_whole(self, verify, joint=joint)

    def _pread(self, fd: int, want: int, at: int, local: IntArray) -> bytes:
        """Exactly ``want`` bytes at ``at``; a short read is the file cut under us."""
        buf = os.pread(fd, want, at)
        if len(buf) != want:
            raise short(self.index, local, len(buf), want, at)
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
            raise short(self.index, local[first[r] :], copied - int(run_size[:r].sum()), n, a)
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
        if held is None:
            self._random += 1
            if self._random >= self._auto_at:
                self.random_read(0, verify)
                held = self._held
        elif self._auto:
            self.auto_tick()
            held = self._held  # (None if the file changed: read it, and report that)
        if held is not None:
            if a + size + _F <= len(held):
                # (One copy, the record's; its footer read in place where checked.)
                record = held[a : a + size]
                if verify and held is not self._held_checked:
                    self._check_one(local, record, _FOOTER.unpack_from(held, a + size)[0])
                return record
            buf = held[a : a + size + _F]  # (a copy shorter than the index says: raised below)
        elif self.mapped:
            return self._mapped_one(local, a, size, verify)
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
            raise short(self.index, np.array([local], np.int64), len(buf), size + _F, a)
        record = buf[:size]
        if verify:
            self._check_one(local, record, _FOOTER.unpack_from(buf, size)[0])
        return record

    def _check_one(self, local: int, record: bytes, stored: int) -> None:
        """Raises the located CRC error if ``record`` (record ``local``) does not match
        its ``stored`` masked CRC."""
        crc = _crc32c.crc32c(record)
        # (framing.mask_crc, inline: this is the per-call path)
        if (((crc >> 15) | (crc << 17)) + _DELTA) & 0xFFFFFFFF != stored:
            where = np.array([local], np.int64)
            verify_batch(
                [record],
                np.array([stored], np.uint32),
                path=self.path,
                local=where,
                offsets=self.index.offsets[where],
            )

    def _mapped_one(self, local: int, a: int, size: int, verify: bool) -> bytes:
        """Record ``local`` (data at ``a``, ``size`` bytes) sliced out of the map."""
        pair = self._pair
        if pair is None:
            pair = self.mapping(np.array([local], np.int64))
            if pair is None:  # (an empty file has no record to ask for)
                raise short(self.index, np.array([local], np.int64), 0, size + _F, a)
        m = pair[0]  # (the tuple, alive until we return, pins the map)
        record = m[a : a + size]
        if verify:
            self._check_one(local, record, _FOOTER.unpack_from(m, a + size)[0])
        return record

    def _mapped_read(self, local: IntArray, verify: bool) -> list[bytes]:
        """The records ``local`` sliced out of the map, CRC-checked (``mapped``)."""
        pair = self.mapping(local)
        if pair is None:
            raise short(self.index, local, 0, int(self._end[local[0]]) + _F, 0)
        m, raw = pair
        ends = self._end[local]
        records = [m[a:b] for a, b in zip(self._start[local].tolist(), ends.tolist(), strict=True)]
        if verify:
            stored = stored_crcs(raw, ends)
            verify_batch(
                records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
            )
        return records

    def _mapped_spans(self, local: IntArray) -> Spans:
        """The records ``local`` and their footers copied out of the map into one new
        buffer (one compiled gather; one slice for records back to back)."""
        pair = self.mapping(local)
        if pair is None:
            raise short(self.index, local, 0, int(self._end[local[0]]) + _F, 0)
        m, raw = pair
        starts = self._start[local]
        ends = self._end[local]
        framed = ends + _F
        if bool(np.all(starts[1:] == framed[:-1] + _H)):
            a = int(starts[0])
            out = np.frombuffer(m[a : int(framed[-1])], np.uint8)
            return Spans(out, starts - a, ends - a)
        got = kernels.gather_spans(raw, starts, framed)
        if got is None:  # (kernels not loaded): sliced and joined
            pieces = [m[a:b] for a, b in zip(starts.tolist(), framed.tolist(), strict=True)]
            got = np.frombuffer(b"".join(pieces), np.uint8)
        return Spans.back_to_back(got, framed - starts)

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
        if held is None:
            self.random_read(len(local), verify)
            held = self._held
        elif self._auto:
            self.auto_tick()
            held = self._held
        if held is not None and held is self._held_checked:
            verify = False  # (found intact as the file was read)
        if held is None and self.mapped:
            return self._mapped_read(np.array(local, np.int64), verify)
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
                if held is not None and a + size + _F <= len(held):
                    out.append(held[a : a + size])  # (one copy; the footer read in place)
                    stored.append(footer(held, a + size)[0])
                    continue
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

    def held_one(self, local: int, verify: bool = True) -> HeldSpan | None:
        """Record ``local`` (a valid index within this file) as a span of the file's
        copy in memory, CRC-checked, without a copy of it: ``(data, array, start,
        end)``, the record being ``data[start:end]`` (``array`` is ``data`` as
        ``uint8``). What ``ds[i]`` decodes where the file is held. ``None`` where there
        is no such copy, it was not checked whole when read, or it is shorter than the
        index says: :meth:`read_one` then reads the record (and raises the located
        error)."""
        held = self._held
        if held is None:
            return None  # (read_one counts the random reads that decide a hold)
        if self._auto:
            self.auto_tick()  # (as read_one: the copy is rechecked now and then)
            held = self._held
        copy = self._copy
        if held is None or copy is None or copy.data is not held:
            return None
        if verify and held is not self._held_checked:
            return None
        a = self._start_at[local]
        e = self._end_at[local]
        if e + _F > len(held):
            return None
        self.recently_used = True
        return held, copy.array, a, e

    def held_spans(self, local: list[int], verify: bool = True) -> HeldSpans | None:
        """The records ``local`` (a few valid indices within this file) as spans of the
        file's copy in memory, CRC-checked, without a copy of any record: what a small
        ``__getitems__`` decodes where its files are held (random reads' copies, an
        epoch's, or the copies shared by a loader's workers). ``None`` where there is no
        such copy, it is shorter than the index says, or a record fails its check:
        :meth:`read_few` then decides (and raises the located error)."""
        if self._held is not None and self._auto:
            self.auto_tick()  # (as read_few: the copy is rechecked now and then)
        held, copy = self._held, self._copy
        if held is None or copy is None or copy.data is not held:
            return None
        buf = copy.array
        if self._end_max + _F > buf.shape[0]:
            return None  # (a copy shorter than the index says: read_few raises)
        where = np.array(local, np.int64)
        starts = self._start[where]
        ends = self._end[where]
        if verify and held is not self._held_checked and len(bad_spans(Spans(buf, starts, ends))):
            return None
        if copy.region is not None and copy.region_data is not None:
            # Spans of the region the epoch read its files into: records of several of
            # them are then decoded in one call (DatasetFiles.few_spans joins them).
            at = copy.at
            return HeldSpans(copy.region_data, copy.region, starts + at, ends + at)
        return HeldSpans(held, buf, starts, ends)

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
        copy = self._batch_copy(local, verify)
        if copy is not None:
            return read_held(self, copy, local, verify)
        if self.mapped:
            return self._mapped_read(local, verify)
        # (Once the file is mapped for gathers, its one descriptor is the map's.)
        big = int(self.index.lengths[local].mean()) >= BIG_RECORD
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
            arr = np.frombuffer(buf, np.uint8)
        else:
            arr, starts, ends = self._framed_array(local)
            buf = arr.tobytes() if len(local) == 1 else b""
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
        if verify:  # (checked in the buffer, before any record is made)
            spans = Spans(arr, starts, ends)
            check_spans(spans, path=self.path, local=local, offsets=self.index.offsets[local])
        # Each record made straight from the buffer (one unpack; no copy of the batch).
        return unpacked_spans(arr, starts, ends)

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
                raise short(self.index, local[j:], len(r), ends[j] - starts[j], starts[j])
        if verify:
            stored = np.frombuffer(b"".join(footers), "<u4")
            crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
            if not np.array_equal(framing.mask_crc_array(crcs), stored):
                verify_batch(
                    records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
                )
        return records

    def spans(self, local: IntArray, verify: bool = True) -> Spans:
        """The records ``local`` as :class:`~.spans.Spans` of one buffer read for them,
        CRC-checked (``buf`` is the caller's to keep)."""
        if len(local) == 0:
            return Spans.empty()
        copy = self._batch_copy(local, verify)
        if copy is not None:  # read-only, and immutable: the caller may keep it
            if copy.region is not None:
                # A view of the region the epoch read its files into: records of
                # several files' reads (a mix's chunk) then join without a copy.
                at = copy.at
                spans = Spans(copy.region, self._start[local] + at, self._end[local] + at)
            else:
                spans = Spans(copy.array, self._start[local], self._end[local])
            if copy.intact(local):
                verify = False  # checked as the file was read
        elif self.mapped:
            spans = self._mapped_spans(local)
        else:
            spans = Spans(*self._framed_array(local))
        if verify:
            check_spans(spans, path=self.path, local=local, offsets=self.index.offsets[local])
        return spans

    def close(self) -> None:
        self._copy = None
        self._held = None
        self._held_checked = None
        self._holders = 0
        self._kept = None
        self._auto = False
        self._random = 0
        unkeep(self)
        self._close_files()
        descriptors.CACHE.holds(self, 0)

    def __del__(self) -> None:
        # (TypeError: at interpreter exit, module globals such as locks may be None.)
        with contextlib.suppress(OSError, AttributeError, TypeError):
            self.close()
