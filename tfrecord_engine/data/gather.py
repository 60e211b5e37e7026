"""Batched reads across many uncompressed local files (a dataset of shards), in one pass.

Datasets often come as ~1,000 shards, so a random batch touches hundreds of files with
one or two records each: grouping by file would pay numpy's per-call overhead per file.
:class:`LocalFilesGather` keeps record spans in dataset-wide arrays and copies a batch
out of the files' maps with one system call, through each file's
:class:`~tfrecord_engine.data.local_source.LocalFileRecords` (which opens, maps, checks and,
for the descriptor budget, closes it).
"""

from __future__ import annotations

import itertools
import mmap
import os
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..records import framing
from ..storage import descriptors, safecopy
from .local_source import LocalFileRecords
from .random_holds import RECHECK_READS
from .random_reads import scattered
from .spans import U8, IntArray, Spans, bad_records, bad_spans, short, unpacked_spans

__all__ = ["LocalFilesGather"]

_F = framing.FOOTER_SIZE
_H = framing.HEADER_SIZE
#: The largest gather buffer kept for the next batch (a larger one is let go).
_SCRATCH_MAX = 64 << 20
#: Held files: a batch is gathered file by file (one compiled call each) when they hold
#: at least this many of its records on average.
_MIN_PER_FILE = 16
#: Mapped reads (``mapped``) of records smaller than this on average are gathered by
#: the kernels first (their cache misses overlapped); larger ones are sliced out.
_SMALL = 2048
#: Files read into one region (held.Joint): a batch of records this large on average is
#: a view of the region. Smaller ones are still gathered: the decoder's later passes
#: over their lists then run on one buffer in cache, which measured faster than on
#: scattered views (ragged records of ~330 bytes: 37 against 41-45 ms an epoch;
#: images of ~6.6 KB: the view 63 against 81 ms).
_VIEW_BYTES = 1024


class LocalFilesGather:
    """Batched reads across many uncompressed local files, in one pass over the batch.

    Datasets often come as ~1,000 shards, so a random batch touches hundreds of files
    with one or two records each: grouping by file would pay numpy's per-call overhead
    per file. Here record spans live in dataset-wide arrays and each record is read
    straight from its file (one ``pread`` of its data and footer).

    With ``mapped`` (``RecordDataset(..., mapped_reads=True)``) each record is sliced
    straight out of its file's map instead: unguarded against a file cut meanwhile
    (SIGBUS, see :class:`~.local_source.LocalFileRecords`).
    """

    def __init__(self, readers: Sequence[LocalFileRecords], *, mapped: bool = False) -> None:
        self._readers = list(readers)
        self._mapped = mapped
        self._first = np.concatenate([[0], np.cumsum([len(r.index) for r in readers])]).astype(
            np.int64
        )
        self._start = np.concatenate([r._start for r in readers]).astype(np.int64)
        self._end = np.concatenate([r._end for r in readers]).astype(np.int64)
        self._bases: npt.NDArray[np.uint64] | None = None  # each file's map, for gather()
        #: Buffers that ``read`` gathers batches into, reused; one per thread at once.
        self._scratch: list[U8] = []
        self._seen = 0  # the budget's evictions when _bases was last valid
        # Random holds (.random_holds): records each file gave to scattered batches since
        # its last hold, and where each file is read whole (the readers' thresholds).
        self._random = np.zeros(len(readers), np.int64)
        self._auto_at = np.array([r._auto_at for r in readers], np.int64)
        self._counting = any(r.random_holds is not None for r in readers)
        self._ticks = RECHECK_READS  # batches left before the copies' next recheck
        holds = readers[0].random_holds if readers else None
        if holds is not None:
            holds.add_user(self)

    def share_started(self) -> None:
        """The next scattered batch looks for its files' shared copies first (their
        readers' :meth:`~.local_source.LocalFileRecords.share_started`)."""
        self._random[:] = 0
        self._auto_at[:] = [1 if r._copy is None else r._auto_at for r in self._readers]

    def read(self, idx: IntArray, file_of: IntArray, verify: bool = True) -> list[bytes]:
        """Returns the records at dataset-wide indices ``idx`` (files ``file_of``)."""
        self._count_random(idx, file_of, verify)
        held = self._held_records(idx, file_of, verify)
        if held is not None:
            return held
        if self._mapped:
            return self._mapped_records(idx, file_of, verify)
        # Gathered into a reused buffer (a new one would pay a page fault per 4 KiB),
        # then each record made straight from it (one unpack; no copy of the batch).
        try:
            scratch = self._scratch.pop()  # (atomic: threads never share one)
        except IndexError:
            scratch = None
        spans = self._framed(idx, file_of, verify, scratch)
        records = unpacked_spans(*spans)
        used = spans.buf.base  # (the scratch buffer, when the maps were gathered)
        if isinstance(used, np.ndarray) and used.base is None and used.shape[0] <= _SCRATCH_MAX:
            self._scratch.append(used)
        return records

    def _count_random(self, idx: IntArray, file_of: IntArray, verify: bool) -> None:
        """Counts a scattered batch against its files' random holds: a file that gave a
        quarter of its records is read whole for the reads that follow
        (:meth:`~.local_source.LocalFileRecords.random_read`); every
        :data:`~.random_holds.RECHECK_READS` batches the copies are rechecked."""
        if not self._counting:
            return
        self._ticks -= 1
        if self._ticks <= 0:
            self._ticks = RECHECK_READS
            for reader in self._readers:
                if reader._auto:
                    reader.auto_recheck()
        if not scattered(idx):
            return
        self._random += np.bincount(file_of, minlength=len(self._readers))
        hit = np.flatnonzero(self._random >= self._auto_at)
        if len(hit):
            self._random[hit] = 0
            for f in hit.tolist():
                reader = self._readers[f]
                if reader._copy is None:
                    reader.random_reached(verify)
                self._auto_at[f] = reader._auto_at

    def _maps(
        self, idx: IntArray, file_of: IntArray
    ) -> tuple[dict[int, mmap.mmap], list[U8]] | None:
        """The maps of the batch's files by file (``mapped``), and their views, which
        pin them while the caller keeps them; ``None`` if a file has none (empty)."""
        maps: dict[int, mmap.mmap] = {}
        views: list[U8] = []
        for f in np.unique(file_of).tolist():
            reader = self._readers[f]
            pair = reader._pair
            if pair is None:
                first = idx[np.argmax(file_of == f)] - self._first[f : f + 1]
                pair = reader.mapping(first)
                if pair is None:
                    return None
            reader.recently_used = True  # (the descriptor budget's second chance)
            maps[f], view = pair
            views.append(view)
        return maps, views

    def _mapped_records(self, idx: IntArray, file_of: IntArray, verify: bool) -> list[bytes]:
        """Each record sliced straight out of its file's map (one copy), CRC-checked."""
        got = self._maps(idx, file_of)
        if got is None:
            return self._preads(idx, file_of)  # (an empty file: the reader says what)
        maps, views = got  # (the views pin the maps until we return)
        if int(self._end[idx].sum() - self._start[idx].sum()) < _SMALL * len(idx):
            # Small records: the misses of records scattered over the files cost more
            # than the copy; a compiled gather keeps several in flight.
            spans = self._spans_by_file(idx, file_of, dict(zip(maps, views, strict=True)))
            if spans is not None:
                if verify:
                    self._raise_first(bad_spans(spans), idx, file_of)
                # The buffer holds them file by file: made in its order, then put back.
                order = np.argsort(file_of, kind="stable")
                made = unpacked_spans(spans.buf, spans.starts[order], spans.ends[order])
                back = np.empty(len(order), np.int64)
                back[order] = np.arange(len(order))
                return [made[k] for k in back.tolist()]
        files = file_of.tolist()
        ends = self._end[idx].tolist()
        records = [
            maps[f][a:b] for f, a, b in zip(files, self._start[idx].tolist(), ends, strict=True)
        ]
        if verify:
            footers = b"".join([maps[f][b : b + _F] for f, b in zip(files, ends, strict=True)])
            self._raise_first(bad_records(records, np.frombuffer(footers, "<u4")), idx, file_of)
        return records

    def _mapped_spans(self, idx: IntArray, file_of: IntArray, verify: bool) -> Spans | None:
        """The batch copied out of its files' maps into one new buffer: one compiled
        gather per file where the files hold a few records of it each, else sliced and
        joined; CRC-checked there."""
        got = self._maps(idx, file_of)
        if got is None:
            return None
        maps, views = got
        arrays = dict(zip(maps, views, strict=True))
        spans = self._spans_by_file(idx, file_of, arrays)
        if spans is None:
            files = file_of.tolist()
            starts = self._start[idx]
            framed = self._end[idx] + _F
            pieces = [
                maps[f][a:b]
                for f, a, b in zip(files, starts.tolist(), framed.tolist(), strict=True)
            ]
            spans = Spans.back_to_back(np.frombuffer(b"".join(pieces), np.uint8), framed - starts)
        if verify:
            self._raise_first(bad_spans(spans), idx, file_of)
        return spans

    def _framed(
        self, idx: IntArray, file_of: IntArray, verify: bool, scratch: U8 | None = None
    ) -> Spans:
        """The records read from the files (their maps in one call, else each file
        held open in turn) into one buffer with their footers, CRC-checked there
        (``scratch``: a buffer to reuse for it, when large enough)."""
        got = self._gathered(idx, file_of, scratch)
        if isinstance(got, tuple):
            spans = Spans(*got)
        else:
            framed = got if got is not None else self._preads(idx, file_of)
            sizes = np.fromiter(map(len, framed), np.int64, len(framed))
            spans = Spans.back_to_back(np.frombuffer(b"".join(framed), np.uint8), sizes)
        if verify:
            self._raise_first(bad_spans(spans), idx, file_of)
        return spans

    def _raise_first(self, bad: npt.NDArray[np.intp], idx: IntArray, file_of: IntArray) -> None:
        """Raises for the first of the ``bad`` positions of the batch, if any: the
        file's own reader raises the error naming file, record, offset."""
        if len(bad):
            j = int(bad[0])
            f = int(file_of[j])
            self._readers[f].read(idx[j : j + 1] - self._first[f], verify=True)

    def _held_records(self, idx: IntArray, file_of: IntArray, verify: bool) -> list[bytes] | None:
        """Each record sliced from its file's held copy, when every file of the batch
        is held (a shuffled epoch; see LocalFileRecords.hold), else ``None``.

        When a file of the batch holds a record the hold did not find intact, every
        record of the batch is checked here (raising for the first damaged one).
        """
        copies = [r._copy for r in self._readers]
        files = file_of.tolist()
        used = [copies[f] for f in set(files)]
        if any(c is None for c in used):
            return None
        data = [c.data if c is not None else b"" for c in copies]
        starts = self._start[idx].tolist()
        ends = self._end[idx].tolist()
        records = [data[f][a:b] for f, a, b in zip(files, starts, ends, strict=True)]
        if verify and not all(c is not None and c.all_ok for c in used):
            stored = np.frombuffer(
                b"".join([data[f][b : b + _F] for f, b in zip(files, ends, strict=True)]),
                dtype="<u4",
            )
            self._raise_first(bad_records(records, stored), idx, file_of)
        return records

    def _gathered(
        self, idx: IntArray, file_of: IntArray, scratch: U8 | None = None
    ) -> list[bytes] | tuple[U8, IntArray, IntArray] | None:
        """Each record's data and footer, copied out of the files' maps in one call:
        ``(buffer, starts, ends)`` of the records' data in the buffer (each footer
        after its data), or the framed records as ``bytes`` (:meth:`_pinned`).

        The maps' addresses are kept between batches and used without holding the
        readers: valid while the descriptor budget closed nothing (its count of
        evictions did not change from before the addresses were taken to after the
        copy). Else the batch is read again with each file's map held
        (:meth:`_pinned`), a group of files at a time.
        """
        if not safecopy.available():
            return None
        seen = descriptors.CACHE.evictions
        bases = self._bases
        if bases is None or self._seen != seen:
            bases = self._bases = np.zeros(len(self._readers), np.uint64)  # 0: not mapped
            self._seen = seen
        for f in np.unique(file_of[bases[file_of] == 0]).tolist():
            first = idx[np.argmax(file_of == f)] - self._first[f]
            base = self._readers[f].base_address(np.array([first]))
            if base is None:
                return None
            bases[f] = base
        if descriptors.CACHE.evictions != seen:
            return self._pinned(idx, file_of, True)  # mapping closed others: hold them
        starts = self._start[idx]
        ends = self._end[idx]
        # Records that follow each other in a file (an in-order chunk, across files or
        # not) are copied as one run with the headers between them: one span each run.
        joined = np.zeros(len(idx), np.bool_)
        joined[1:] = (file_of[1:] == file_of[:-1]) & (starts[1:] == ends[:-1] + (_F + _H))
        first = np.flatnonzero(~joined)
        run_start = starts[first]
        run_size = ends[np.append(first[1:] - 1, len(idx) - 1)] + _F - run_start
        spans = np.empty((len(first), 2), np.uint64)
        spans[:, 0] = bases[file_of[first]] + run_start.astype(np.uint64)
        spans[:, 1] = run_size
        total = int(run_size.sum())
        if scratch is None or scratch.shape[0] < total:
            scratch = np.empty(max(total, 1 << 16), np.uint8)
        out = scratch[:total]
        copied = safecopy.gather(out, spans)
        if descriptors.CACHE.evictions != seen:
            return self._pinned(idx, file_of, True)  # a map may have closed meanwhile
        if copied is None:
            return None
        # Record j's data within ``out``: its run's place there, plus its offset in the run.
        shift = (np.cumsum(run_size) - run_size - run_start)[np.cumsum(~joined) - 1]
        at, to = starts + shift, ends + shift
        if copied != total:  # the file was cut: the first record not wholly copied
            j = int(np.argmax(to + _F > copied))
            f = int(file_of[j])
            local = idx[j : j + 1] - self._first[f]
            have = max(0, copied - int(at[j]))
            raise short(
                self._readers[f].index, local, have, int(ends[j] + _F - starts[j]), int(starts[j])
            )
        return out, at, to

    def spans(self, idx: IntArray, file_of: IntArray, verify: bool = True) -> Spans | None:
        """The records at dataset-wide indices ``idx`` (files ``file_of``) as
        CRC-checked :class:`~.spans.Spans` of one buffer: copied out of the files' maps
        with one call, each record's data and footer back to back, and checked there
        (no ``bytes`` per record). ``None`` where the batch is read otherwise (files
        held in memory, no gather here, a map closed meanwhile): use :meth:`read`."""
        if not len(idx):
            return None
        self._count_random(idx, file_of, verify)
        if any(self._readers[f]._copy is not None for f in np.unique(file_of).tolist()):
            return self._held_spans(idx, file_of, verify)
        if self._mapped:
            return self._mapped_spans(idx, file_of, verify)
        return self._framed(idx, file_of, verify)

    def _held_spans(self, idx: IntArray, file_of: IntArray, verify: bool) -> Spans | None:
        """The batch gathered out of its files' held copies (a shuffled epoch; see
        LocalFileRecords.hold), one compiled gather per file, when every file of the
        batch is held and holds a few records of it at least; else ``None``."""
        files = np.unique(file_of).tolist()
        found = [self._readers[f]._copy for f in files]
        copies = [c for c in found if c is not None]
        if len(copies) < len(files):
            return None
        spans: Spans | None
        region = copies[0].region
        starts = self._start[idx]
        if (
            region is not None
            and int((self._end[idx] - starts).sum()) >= _VIEW_BYTES * len(idx)
            and all(c.region is region for c in copies)
        ):
            # Copies read into one region: the batch is a view of it, nothing copied.
            at = np.zeros(len(self._readers), np.int64)
            at[files] = [c.at for c in copies]
            shift = at[file_of]
            spans = Spans(region, starts + shift, self._end[idx] + shift)
        else:
            arrays = {f: c.array for f, c in zip(files, copies, strict=True)}
            spans = self._spans_by_file(idx, file_of, arrays)
        if spans is not None and verify and not all(c.all_ok for c in copies):
            self._raise_first(bad_spans(spans), idx, file_of)
        return spans

    def _spans_by_file(
        self, idx: IntArray, file_of: IntArray, arrays: Mapping[int, U8]
    ) -> Spans | None:
        """The batch gathered out of ``arrays`` (each file's bytes: a held copy, or a
        view of its map), one compiled gather per file, each record followed by its
        footer; ``None`` where the files hold a record or two of it each, or the
        kernels are not loaded (the caller slices)."""
        order = np.argsort(file_of, kind="stable")
        files, first = np.unique(file_of[order], return_index=True)
        if len(files) * _MIN_PER_FILE > len(idx):
            return None  # a record or two per file: slicing each (read) costs less
        starts = self._start[idx]
        framed = self._end[idx] + _F
        sizes = framed - starts
        pos = np.cumsum(sizes[order]) - sizes[order]  # where each goes, in file order
        out = np.empty(int(sizes.sum()), np.uint8)
        bounds = [*first.tolist(), len(idx)]
        for f, a, b in zip(files.tolist(), bounds[:-1], bounds[1:], strict=True):
            where = order[a:b]
            at = int(pos[a])
            got = kernels.gather_spans(arrays[f], starts[where], framed[where], out[at:])
            if got is None:
                return None
        rel = np.empty(len(idx), np.int64)
        rel[order] = pos
        return Spans(out, rel, rel + framed - _F - starts)

    def _cut(
        self,
        out: U8,
        copied: int,
        sizes: IntArray,
        *,
        starts: IntArray,
        idx: IntArray,
        file_of: IntArray,
    ) -> list[bytes]:
        """The framed records gathered back to back into ``out``; raises for the record
        a short copy stopped in (its file was cut)."""
        ends = np.cumsum(sizes)
        if copied != int(ends[-1]):
            j = int(np.searchsorted(ends, copied, "right"))
            f = int(file_of[j])
            local = idx[j : j + 1] - self._first[f]
            have = copied - int(ends[j] - sizes[j])
            raise short(self._readers[f].index, local, have, int(sizes[j]), int(starts[j]))
        buf = out.tobytes()
        return [buf[a:b] for a, b in zip((ends - sizes).tolist(), ends.tolist(), strict=True)]

    def _groups(self, file_of: IntArray) -> list[tuple[IntArray, list[int]]]:
        """The batch's positions grouped by file, each group's files (at most a quarter
        of the descriptor budget, so that holding them all open leaves room): a list
        of (positions in the batch, files)."""
        order = np.argsort(file_of, kind="stable")
        files, first = np.unique(file_of[order], return_index=True)
        per = max(1, descriptors.CACHE.budget // 4)
        bounds = [*first[::per].tolist(), len(order)]
        return [
            (order[a:b], files[g * per : (g + 1) * per].tolist())
            for g, (a, b) in enumerate(itertools.pairwise(bounds))
        ]

    def _pinned(self, idx: IntArray, file_of: IntArray, mapped: bool) -> list[bytes] | None:
        """The batch read a group of files at a time, each file held open (its map, or
        ``mapped=False``, its descriptor) while its records are read; ``None`` where a
        file cannot be mapped (read with ``mapped=False`` then)."""
        out: list[bytes] = [b""] * len(idx)
        for where, files in self._groups(file_of):
            got = self._read_group(idx[where], file_of[where], files, mapped)
            if got is None:
                return None
            for j, chunk in zip(where.tolist(), got, strict=True):
                out[j] = chunk
        return out

    def _read_group(
        self, idx: IntArray, file_of: IntArray, files: list[int], mapped: bool
    ) -> list[bytes] | None:
        held: list[int] = []
        at: dict[int, int] = {}  # each file's map address or descriptor
        try:
            for f in files:
                where = idx[np.argmax(file_of == f)] - self._first[f : f + 1]
                reader = self._readers[f]
                got = reader.pin_map(where) if mapped else reader.acquire(where)
                if got is None:
                    return None
                held.append(f)
                at[f] = got
            starts = self._start[idx]
            if mapped:
                bases = np.zeros(len(self._readers), np.uint64)
                bases[files] = [at[f] for f in files]
                sizes = self._end[idx] + _F - starts
                spans = np.empty((len(idx), 2), np.uint64)
                spans[:, 0] = bases[file_of] + starts.astype(np.uint64)
                spans[:, 1] = sizes
                out = np.empty(int(sizes.sum()), np.uint8)
                copied = safecopy.gather(out, spans)
                if copied is None:
                    return None
                return self._cut(out, copied, sizes, starts=starts, idx=idx, file_of=file_of)
            fds = [at[f] for f in file_of.tolist()]
            ends = self._end[idx].tolist()
            pread = os.pread
            framed = [
                pread(fd, b + _F - a, a)
                for fd, a, b in zip(fds, starts.tolist(), ends, strict=True)
            ]
        finally:
            for f in held:
                self._readers[f].unacquire()
        for j, (c, a, b) in enumerate(zip(framed, starts.tolist(), ends, strict=True)):
            if len(c) != b + _F - a:
                f = int(file_of[j])
                local = idx[j : j + 1] - self._first[f]
                raise short(self._readers[f].index, local, len(c), b + _F - a, a)
        return framed

    def _preads(self, idx: IntArray, file_of: IntArray) -> list[bytes]:
        # Each file's descriptor from its reader, which opens it (checked) on first use
        # and again after a map or the budget closed it, held open while in use.
        framed = self._pinned(idx, file_of, False)
        assert framed is not None  # (only a map can be refused)
        return framed

    def close(self) -> None:
        """Forgets the maps' addresses (their readers own and close the maps)."""
        self._bases = None
