"""Epochs of a dataset: the batches of one epoch's shard, prepared ahead.

:class:`RecordBatchIterator` is what ``RecordDataset.batches`` returns (and a mix's
``batches``): the sampler's batches (:mod:`.sampler`), grouped into chunks of about
:data:`DEFAULT_CHUNK_RECORDS` records (of at most :data:`CHUNK_BYTES`, in file order or
shuffled), each chunk prepared by :func:`~.prepare.prepare_chunk` on the consumer's
thread, a read-ahead thread (:mod:`.pipeline`) or decode worker processes (:mod:`.procpool`,
whose pools a dataset keeps between epochs: :mod:`.pools`).
A shuffled epoch over local files may first read them whole into memory
(:func:`files_to_hold`, :mod:`.held`). The functions here decide an epoch's settings
from ``batches``' arguments (:func:`take_epoch`, :func:`check_epoch`,
:func:`chunk_records`); the dataset's own methods stay the entry points.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol, cast

import numpy as np

from ..errors import DataLossError, InvalidArgumentError, StaleIndexError, WorkerError
from ..example.dense import on_calling_thread, pool_threads, usable_cores
from ..example.specs import FixedLenFeature
from ..index.damage import reporter
from ..records.recovery import DamageCallback
from .compressed_source import CompressedFileRecords
from .fetcher_source import FetcherRecords
from .held import IN_MEMORY_LIMIT, Joint
from .held_shared import SharedCopies
from .local_source import LocalFileRecords
from .located import LocatingSource, locate
from .padding import Padded, pad_batch
from .pipeline import ReadAhead
from .prepare import MASK_KEY, ChunkSource, Ready, chunks_of, prepare_chunk
from .procpool import DecodePool, PoolSource, PoolStream
from .sampler import IndexBatch, IndexBatchIterator, IntArray, Shuffle

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_CHUNK_RECORDS",
    "IN_MEMORY_LIMIT",
    "MANY_KEYS",
    "MANY_KEYS_CHUNK_BYTES",
    "EpochSource",
    "RecordBatchIterator",
    "check_epoch",
    "chunk_records",
    "decodes_lists",
    "decodes_strings",
    "files_to_hold",
    "in_file_order",
    "read_ahead_threads",
    "start_epoch",
    "strings_dominate",
    "take_epoch",
]

#: Records read, checked and decoded together ahead of the consumer.
DEFAULT_CHUNK_RECORDS = 4096
#: Chunks of big records are cut to about this many bytes (at least one batch): a
#: chunk is read, CRC-checked and decoded while it is still in the CPU's cache, into
#: a buffer the allocator reuses (a fresh mapping of tens of MB pays a page fault
#: every 4 KB). 4,096 wide records of 21 KB were 88 MB. Shuffled epochs took 4,096
#: records a chunk whatever their size until 2026-11-29 (a chunk is a run of the
#: epoch's batches: its size changes no batch): 4,096 audio clips of ~34 KB (float32
#: samples, a ``VarLenFeature``) were 140 MB of values and 560 MB of sparse indices,
#: in fresh memory each chunk. With the byte cap, a new dataset's first shuffled
#: epoch of 20,000 such clips 619 / 1,522 -> 321 / 373 ms (best / median of 7,
#: alternating), later ones 350 / 405 -> 314 / 362 ms; images of 2-12 KiB 36.9 ->
#: 33.7 ms, detection records 88 -> 84 ms; records of under 2 KB keep 4,096. With
#: decode processes (``workers=2``), whose 16 MB shared-memory slots the big chunks
#: outgrew (they crossed the pipe instead), shuffled epochs of images 195 -> 93 ms and
#: of detection records 666 -> 200 ms (best of 6, alternating).
CHUNK_BYTES = 8 << 20
#: ... but a spec of at least :data:`MANY_KEYS` feature keys takes chunks of
#: :data:`DEFAULT_CHUNK_RECORDS` (in file order or shuffled), up to
#: :data:`MANY_KEYS_CHUNK_BYTES` of records (4,096 wide records are 15.5 MB; records
#: of 16 KB get 2,048 a chunk, not 67 MB of them): a chunk builds each key's
#: column once (~6 us a key for wide records), which the byte cap would make such a
#: spec pay every ~2,000 records where its records are large. In order, batches of 256,
#: alternating (``python -m benchmarks.bench_chunks --rounds 9``, 2026-11-29), best /
#: median epoch, the byte cap alone -> whole chunks: wide records (201 scalar keys, 3.8
#: KB; 2,214 records a chunk by bytes) 159.6 / 164.0 -> 136.0 / 147.4 ms; 120
#: float32[8] keys (5.5 KB; 1,518 records) 29.9 / 32.5 -> 24.7 / 28.5 ms. (The rule of
#: before, at least 20 records a key, gave wide records 4,020-record chunks, 15
#: batches where shuffled epochs take 16: medians of 11 epochs 152 and 145 ms against
#: 141 and 133 with 4,096, and the matrix read them in order at 0.91x of shuffled,
#: whose chunks were then 4,096 records whatever their size.)
#: Specs of few keys keep the byte cap (their per-key cost is small next to a chunk's
#: decode).
MANY_KEYS = 32
#: The byte cap of the chunks of a spec of :data:`MANY_KEYS` keys or more.
MANY_KEYS_CHUNK_BYTES = 32 << 20


#: The most threads that prepare (read, check, decode) an epoch's chunks at once. Their
#: compiled kernels, gathers and CRCs release the GIL, so two chunks decode on two
#: cores, as TensorFlow's ``map(parse, AUTOTUNE)`` parses on all of them. On 2 cores,
#: parsed batches of 256, one thread against two in alternation: token lists, ragged
#: words, mixed records and SequenceExamples 1.26-1.56x, tabular and wide records
#: 0.95-1.10x (see read_ahead_threads for large strings).
READ_AHEAD_THREADS = 2
#: Records of at least this many bytes on average whose spec keeps a string feature
#: and has nothing else but scalars are prepared on one thread: their values become
#: ``bytes`` objects, copied while the GIL is held, and no list decode (without the
#: GIL) is left to run beside it, so a second thread only contends (images of 2-12 KiB
#: and a label: 0.88-1.02x with two, seven runs). A spec with lists beside it keeps two:
#: captioned images of 3-6 KiB with token ids 1.14-1.30x, audio clips of float32
#: samples with a speaker name 1.20-1.62x (``python -m benchmarks.bench_thresholds``).
STRING_HEAVY_BYTES = 4096
#: Records of at least this many bytes on average whose spec keeps a string feature are
#: prepared on one thread whatever else they hold: their strings' copies outweigh the
#: lists decoded beside them (detection records, 8-24 KiB images with box lists, two
#: threads against one in three runs: in order 0.85-1.02x, shuffled 0.74-1.06x). Set
#: between the shapes measured (audio clips of ~5.7 KB gain with two), not checked on
#: another shape.
STRINGS_DOMINATE_BYTES = 8192


def _string_or_scalar(spec: Any) -> bool:
    """Whether ``spec`` decodes a string or one number a record (no list of numbers)."""
    if getattr(spec, "dtype", None) == "string":
        return True
    return isinstance(spec, FixedLenFeature) and tuple(spec.shape) == ()


def decodes_strings(specs: Iterable[Any]) -> bool:
    """Whether some of ``specs`` decodes strings (``bytes`` objects, made under the GIL)."""
    return any(getattr(spec, "dtype", None) == "string" for spec in specs)


def strings_dominate(features: Mapping[str, Any], record_bytes: float) -> bool:
    """Whether records of ``record_bytes`` on average are dominated by the strings
    ``features`` decode: :data:`STRINGS_DOMINATE_BYTES` or more, and some string kept
    (their copies under the GIL outweigh any list decoded beside them)."""
    return record_bytes >= STRINGS_DOMINATE_BYTES and decodes_strings(features.values())


def decodes_lists(features: Mapping[str, Any]) -> bool:
    """Whether ``features`` decode some list of numbers (``VarLenFeature``, a shaped
    ``FixedLenFeature``, numeric ragged and sequence features): a compiled decode that
    runs without the GIL, beside the strings and scalars that need it."""
    return not all(map(_string_or_scalar, features.values()))


def read_ahead_threads(
    readahead: int,
    features: Mapping[str, Any] | None,
    record_bytes: float,
    dropped: frozenset[str] = frozenset(),
) -> int:
    """The threads an epoch reading ``readahead`` chunks ahead prepares them on: up to
    :data:`READ_AHEAD_THREADS`, no more than the chunks ahead or the machine's cores;
    one for raw records (``features`` None: a list of ``bytes``) and for records of
    :data:`STRING_HEAVY_BYTES` or more whose spec decodes strings and nothing else but
    scalars, or of :data:`STRINGS_DOMINATE_BYTES` or more whose spec decodes strings
    (``dropped``: the string features ``strings="drop"`` leaves out)."""
    if features is None:
        return 1
    kept = [spec for name, spec in features.items() if name not in dropped]
    strings = decodes_strings(kept)
    heavy = record_bytes >= STRINGS_DOMINATE_BYTES or (
        record_bytes >= STRING_HEAVY_BYTES and all(map(_string_or_scalar, kept))
    )
    if strings and heavy:
        return 1
    return max(1, min(readahead, READ_AHEAD_THREADS, os.cpu_count() or 1))


FileRecords = LocalFileRecords | FetcherRecords | CompressedFileRecords


class EpochSource(ChunkSource, LocatingSource, PoolSource, Protocol):
    """What an epoch needs of its dataset (a ``RecordDataset``, or a mix's sources):
    its reads and decoder, its damage reports, its output format and its pools."""

    @property
    def verify(self) -> bool:
        """Whether records' data CRCs are checked."""

    @property
    def on_damage_report(self) -> DamageCallback | None:
        """Where damage reports go (``None``: warnings)."""

    def _take_pool(self, workers: int, slots: int) -> DecodePool:
        """An idle pool of this shape, or a new one."""

    def _return_pool(self, pool: DecodePool) -> None:
        """Keeps a pool for the next epoch, or stops it."""

    def _out_batch(self, batch: Any) -> Any:
        """A batch in the dataset's output format."""


def take_epoch(
    counts: dict[tuple[int, int], int],
    lock: threading.Lock,
    *,
    epoch: int | None,
    shuffle: Shuffle,
    state: Mapping[str, Any] | None,
    layout: tuple[int, int],
) -> tuple[int, int | None]:
    """The epoch a ``batches`` call runs, and the count before it took one (``None``
    when the count did not move). ``counts``: the next shuffled epoch per shard layout,
    changed under ``lock``."""
    if epoch is not None:
        return epoch, None
    resumed = None if state is None else state.get("epoch")
    if state is not None and (
        isinstance(resumed, bool) or not isinstance(resumed, int) or resumed < 0
    ):
        raise InvalidArgumentError(f"cannot resume: state has epoch={resumed!r}")
    with lock:
        # Under the lock: threads starting epochs at once each get their own.
        before = counts.get(layout, 0)
        used: int = resumed if isinstance(resumed, int) else before if shuffle else 0
        if not shuffle:
            return used, None
        counts[layout] = used + 1
    return used, before


def check_epoch(
    readers: Sequence[FileRecords],
    features: Mapping[str, Any] | None,
    *,
    random_access: bool,
    pad_remainder: bool,
    readahead: int,
    workers: int,
    strings: Literal["keep", "drop"],
) -> frozenset[str]:
    """Checks an epoch's arguments against the files and features; returns the keys
    that ``strings="drop"`` leaves out of the batches.

    Raises:
        InvalidArgumentError: naming the argument (or the file) and what to do.
    """
    slow = [
        (r.path, r.sequential_reason)
        for r in readers
        if random_access and isinstance(r, CompressedFileRecords) and r.sequential_only
    ]
    if slow:
        path, why = slow[0]
        raise InvalidArgumentError(
            f"a shuffled epoch needs random access, but {path} can only be read "
            f"forward: {why}. Read it with shuffle=False, or rewrite it with "
            "`tfr convert` or TFRecordWriter(..., index=True), which saves restart "
            "points with the data"
        )
    if pad_remainder and features is not None and MASK_KEY in features:
        raise InvalidArgumentError(
            f"pad_remainder adds a {MASK_KEY!r} entry, which is also a feature name"
        )
    if readahead < 0:
        raise InvalidArgumentError(f"readahead must be >= 0, got {readahead}")
    if workers < 0:
        raise InvalidArgumentError(f"workers must be >= 0, got {workers}")
    if strings not in ("keep", "drop"):
        raise InvalidArgumentError(f"strings must be 'keep' or 'drop', got {strings!r}")
    if strings == "keep":
        return frozenset()
    if features is None:
        raise InvalidArgumentError("strings='drop' needs a dataset with features")
    return frozenset(k for k, f in features.items() if getattr(f, "dtype", None) == "string")


def chunk_records(record_bytes: float, keys: int = 0) -> int:
    """Records per read-ahead chunk, in file order or shuffled alike: no more than
    :data:`CHUNK_BYTES` of records of the mean size ``record_bytes``
    (:data:`MANY_KEYS_CHUNK_BYTES` where the spec's ``keys`` are :data:`MANY_KEYS` or
    more), and no more than :data:`DEFAULT_CHUNK_RECORDS`."""
    cap = MANY_KEYS_CHUNK_BYTES if keys >= MANY_KEYS else CHUNK_BYTES
    chunk = int(cap // max(record_bytes, 1))
    return max(1, min(DEFAULT_CHUNK_RECORDS, chunk))


def files_to_hold(
    readers: Sequence[FileRecords],
    shuffle: Shuffle,
    workers: int,
    in_memory: bool | None,
    *,
    in_order: bool = False,
) -> list[LocalFileRecords]:
    """The files an epoch reads whole into memory (see ``batches``' ``in_memory``): all
    of them when all are local and uncompressed and, unless ``in_memory=True``, they
    total at most :data:`IN_MEMORY_LIMIT` bytes; for a shuffled epoch, or one in file
    order that holds each file as it reaches it (``in_order``, see
    :class:`RecordBatchIterator`'s ``hold_of``).

    Otherwise an epoch in file order reads none whole, but takes the copies that
    earlier epochs kept (:meth:`~.local_source.LocalFileRecords.hold`, each checked
    unchanged): its chunks are then views of them, where reading the files would copy
    every byte.
    """
    if workers > 0 or in_memory is False:
        return []
    if not shuffle and not in_order:
        return [r for r in readers if isinstance(r, LocalFileRecords) and r._kept is not None]
    if not all(isinstance(r, LocalFileRecords) for r in readers):
        return []
    local = cast("list[LocalFileRecords]", list(readers))
    total = sum(r.index.data_size for r in local)
    if in_memory is None and total > IN_MEMORY_LIMIT:
        return []
    return local


def files_reached(
    readers: Sequence[FileRecords], numbers: Callable[[IntArray], IntArray]
) -> Callable[[IntArray], list[FileRecords]]:
    """For an epoch in file order: the files that the records at a chunk's dataset
    indices lie in (``numbers``: those indices to record numbers across the files)."""
    first = np.cumsum([0] + [len(r.index) for r in readers[:-1]])

    def reached(indices: IntArray) -> list[FileRecords]:
        found = np.unique(np.searchsorted(first, numbers(indices), "right") - 1)
        return [readers[k] for k in found.tolist()]

    return reached


def start_epoch(
    ds: EpochSource,
    sampler: IndexBatchIterator,
    readers: Sequence[FileRecords],
    *,
    shuffle: Shuffle,
    random_access: bool,
    record_bytes: float,
    pad_remainder: bool,
    readahead: int,
    workers: int,
    strings: Literal["keep", "drop"],
    in_memory: bool | None,
    padded: Padded = False,
    pad_value: Any = 0,
    share: SharedCopies | None = None,
    reached: Callable[[IntArray], list[FileRecords]] | None = None,
    make: Callable[..., RecordBatchIterator] | None = None,
) -> RecordBatchIterator:
    """The iterator of one epoch of ``ds`` (files ``readers``, records of
    ``record_bytes`` on average) over ``sampler``'s batches, its arguments checked
    (:func:`check_epoch`; ``random_access``: a shuffled or balanced order).

    The one place where an epoch's settings are decided, for a dataset's epochs
    (``batches`` and a host's ``epoch``, batches of samples too) and a mix's alike:
    chunk sizes (:func:`chunk_records`), read-ahead threads (:func:`read_ahead_threads`)
    and the files read whole (:func:`files_to_hold`). ``make``: the iterator class
    given them (default :class:`RecordBatchIterator`; a host's batches of transformed
    samples: :class:`~.sample_batches.SampleBatchIterator`).

    ``reached``: the files that the records at a chunk's sampler indices lie in (a
    dataset's :func:`files_reached`, a mix's ``LeafSource.files_reached``); given, an
    epoch in file order reads each file whole as it reaches it and keeps the copy for
    later epochs, as shuffled ones do (within the same budget).
    ``share``: the files held are the copies shared by a loader's processes
    (:mod:`.held_shared`), within :data:`IN_MEMORY_LIMIT` for the machine unless
    ``in_memory=True``."""
    drop = check_epoch(
        readers,
        ds.features,
        random_access=random_access,
        pad_remainder=pad_remainder,
        readahead=readahead,
        workers=workers,
        strings=strings,
    )
    in_order = reached is not None and not random_access
    return (RecordBatchIterator if make is None else make)(
        ds,
        sampler,
        chunk_records=chunk_records(record_bytes, len(ds.features or ())),
        readahead=readahead,
        threads=read_ahead_threads(readahead, ds.features, record_bytes, drop),
        workers=workers,
        drop_keys=drop,
        hold=files_to_hold(readers, shuffle, workers, in_memory, in_order=in_order),
        hold_of=reached if in_order else None,
        keep=IN_MEMORY_LIMIT,
        padded=padded,
        pad_value=pad_value,
        share=share,
        share_budget=None if in_memory else IN_MEMORY_LIMIT,
        # (Local uncompressed files: a remote file's chunk is one request, and a
        # compressed one's a run of its stream.)
        ramp_up=all(isinstance(r, LocalFileRecords) for r in readers),
    )


def in_file_order(
    ds: EpochSource, one: Callable[[bytes, int], Any] | None, chunk: int = 1024
) -> Iterator[Any]:
    """Every record of ``ds`` in file order, read ``chunk`` at a time: ``one(record, i)``
    for record ``i`` (``None``: the records themselves). Damage follows ``on_damage``:
    ``"raise"`` raises (located), ``"stop"`` ends before the first damaged record,
    ``"skip"`` leaves it out; both report it."""
    n = len(ds)
    for start in range(0, n, chunk):
        indices = np.arange(start, min(start + chunk, n))
        kept = indices.tolist()
        stop = False
        try:
            records = ds.read_raw(indices)
        except DataLossError as exc:
            if ds.on_damage == "raise":
                locate(exc, ds)
                raise
            salvaged, reports = ds.read_salvaged(indices)
            stop = ds.on_damage == "stop" and bool(reports)
            if stop:
                salvaged = salvaged[: salvaged.index(None)]
                del reports[1:]
            report = reporter(ds.on_damage_report)
            for r in reports:
                report(r)
            records = [r for r in salvaged if r is not None]
            kept = [i for i, r in zip(kept, salvaged, strict=False) if r is not None]
        if one is None:
            yield from records
        else:
            # Per record, so an error surfaces at its record, after the ones before it.
            for i, record in zip(kept, records, strict=True):
                yield one(record, i)
        if stop:
            return


class RecordBatchIterator(Iterator[Any]):
    """Batches of one epoch's shard; ``get_state()`` returns a small plain dict.

    Batches are prepared ahead on ``threads`` worker threads (delivered in order), a
    chunk of about ``chunk_records`` records at a time (read with one gather,
    CRC-checked, decoded with one lockstep pass, then sliced into batches). A chunk that
    holds damage or a parse error is redone batch by batch, so every batch before the
    bad one is delivered and the error surfaces at the batch that holds it, exactly as
    without read-ahead. A batch counts
    as delivered only when returned, so ``get_state()`` never runs ahead of the caller.
    """

    def __init__(
        self,
        dataset: EpochSource,
        sampler: IndexBatchIterator,
        *,
        chunk_records: int = DEFAULT_CHUNK_RECORDS,
        readahead: int = 2,
        threads: int = 1,
        workers: int = 0,
        drop_keys: frozenset[str] = frozenset(),
        hold: Sequence[LocalFileRecords] = (),
        hold_of: Callable[[IntArray], list[FileRecords]] | None = None,
        keep: int = 0,
        padded: Padded = False,
        pad_value: Any = 0,
        share: SharedCopies | None = None,
        share_budget: int | None = None,
        ramp_up: bool = True,
    ) -> None:
        self._dataset = dataset
        self._drop_keys = drop_keys
        self._padded = padded
        self._pad_value = pad_value
        # Files to read whole before the first chunk (a shuffled epoch; see batches'
        # in_memory), held until the epoch ends or closes; their copies are then kept
        # for the next epoch within ``keep`` bytes for all files (LocalFileRecords.release).
        self._to_hold = list(hold)
        self._region: Joint | Literal[False] | None = None  # (see _joint)
        # (An epoch in file order: only the files a chunk reaches, as it reaches them.)
        self._hold_of = hold_of
        self._keep = keep
        # (A loader's worker: the copies are its processes' shared ones, .held_shared.)
        self._share = share
        self._share_budget = share_budget
        self._held: list[LocalFileRecords] = []
        self._hold_lock = threading.Lock()
        self._closed = False
        #: Why the epoch cannot go on (an error or interrupt that stopped its work).
        self._stopped: str | None = None
        self.sampler = sampler
        self._pending: collections.deque[Ready] = collections.deque()
        per_chunk = max(1, chunk_records // max(1, sampler.batch_size))
        # An independent cursor over the same (deterministic) batch sequence plans the
        # chunks; the real sampler advances only as batches are returned.
        plan = copy.deepcopy(sampler)
        chunks = chunks_of(plan, per_chunk, ramp_up)
        self._work: Iterator[list[Ready]] | None
        # Chunks prepared on several threads at once decode each on its own thread
        # where the threads' dense pools together would outnumber the cores (2 cores:
        # tabular epochs 1.02-1.40x faster, wide 1.01-1.14x, benchmarks.bench_dense_pool).
        self._serial = (
            threads > 1
            and workers == 0
            and readahead > 0
            and threads * pool_threads() > usable_cores()
        )
        if workers > 0:
            pool = dataset._take_pool(workers, workers + max(1, readahead))
            self._work = PoolStream(pool, chunks, dataset._return_pool)
        elif readahead > 0:
            self._work = ReadAhead(chunks, self._prepare, workers=threads, depth=readahead)
        else:
            self._work = ReadAhead(chunks, self._prepare, workers=0)

    def _prepare(self, batches: list[IndexBatch]) -> list[Ready]:
        if self._to_hold:
            self._hold_for(batches)
        if self._serial:
            with on_calling_thread():
                return prepare_chunk(self._dataset, batches)
        return prepare_chunk(self._dataset, batches)

    def _hold_for(self, batches: list[IndexBatch]) -> None:
        """Holds the files to hold before ``batches`` are read: all of them, or in file
        order those the batches reach."""
        if self._hold_of is None:
            self._hold(self._to_hold)
        else:
            self._hold(self._hold_of(np.concatenate([b.indices for b in batches])))

    def _hold(self, readers: Sequence[FileRecords]) -> None:
        """Holds those of ``readers`` still to hold, the epoch releasing them."""
        with self._hold_lock:
            joint = self._joint()
            wanted = {id(r) for r in readers}
            take = [r for r in self._to_hold if id(r) in wanted]
            self._to_hold = [r for r in self._to_hold if id(r) not in wanted]
            for reader in take:
                if self._closed:
                    break  # (on the read-ahead thread: close() may have come first)
                try:
                    reader.hold(self._dataset.verify, self._share, self._share_budget, joint)
                except (StaleIndexError, OSError):
                    if self._hold_of is None:
                        raise
                    # In file order, the chunks read the file as without a copy: the
                    # batches before the damage are delivered, the error comes where
                    # it lies.
                    continue
                self._held.append(reader)

    def _joint(self) -> Joint | None:
        """The region that the copies this epoch reads share (made at its first hold,
        for every file still to hold that has no copy and none kept), or ``None``:
        fewer than two such files, or copies shared between processes."""
        if self._region is None:
            self._region = False
            fresh = [r for r in self._to_hold if r._copy is None and r._kept is None]
            if self._share is None and len(fresh) > 1:
                self._region = Joint(list(fresh))
        return self._region or None

    def _release(self) -> None:
        with self._hold_lock:
            self._region = False  # (the copies in it hold it while they live)
            self._closed = True
            self._to_hold.clear()
            held, self._held = self._held, []
        for reader in held:
            reader.release(self._keep)

    def __iter__(self) -> RecordBatchIterator:
        return self

    def start(self) -> RecordBatchIterator:
        """Starts preparing batches now (on the read-ahead thread or the worker processes)
        instead of at the first ``next``, e.g. while the caller sets up the next epoch's
        loop. Without ``readahead`` or ``workers`` there is nothing to start. Returns
        ``self``.
        """
        if self._work is not None:
            cast("ReadAhead[Any, Any] | PoolStream", self._work).start()
        return self

    def __len__(self) -> int:
        return len(self.sampler)

    def __next__(self) -> Any:
        while True:
            if not self._pending:
                if self._work is None:
                    if self._stopped is not None:
                        raise WorkerError(self._stopped)
                    raise StopIteration
                try:
                    self._pending.extend(next(self._work))
                except StopIteration:
                    self._work = None
                    self._release()
                    raise
                except BaseException as exc:
                    self._stop(exc)
                    raise
            ready = self._pending[0]
            if ready.damage:
                report = reporter(self._dataset.on_damage_report)
                for d in ready.damage:
                    report(d)
            if ready.error is not None:
                # Not delivered: the state stays at this batch, so a resume retries it
                # (and reports its damage again). Named here, for every path: the
                # batch's indices give a parse error its file, record and offset.
                locate(ready.error, self._dataset, ready.batch.indices)
                raise ready.error
            if ready.stop:
                # "stop": the epoch ends before this batch; the state stays there.
                self.close()
                raise StopIteration
            output = ready.output
            if output is not None:
                if self._drop_keys:
                    output = {k: v for k, v in output.items() if k not in self._drop_keys}
                if self._padded is not False:
                    # (Before the commit: a record over its padded size raises with the
                    # state still at this batch.)
                    output = pad_batch(
                        output, self._padded, self._pad_value, indices=ready.batch.indices
                    )
            self._pending.popleft()
            self.sampler.commit(ready.batch)
            if output is not None:
                return self._dataset._out_batch(output)

    def _stop(self, exc: BaseException) -> None:
        """Ends the epoch after ``exc`` (an interrupt too) stopped its read-ahead or its
        workers: the chunk being prepared is lost, so going on would skip batches."""
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        self._stopped = (
            f"this epoch was stopped by {what} (while preparing its batches); going on "
            "would skip batches: resume it exactly with ds.batches(..., "
            "state=it.get_state()), or start a new epoch"
        )
        self.close()

    def close(self) -> None:
        """Stops the read-ahead (also done when the epoch ends)."""
        work, self._work = self._work, None
        try:
            if work is not None:
                cast("ReadAhead[Any, Any] | PoolStream", work).close()
        finally:
            # (Also when an interrupt stops the close: the held copies are let go.)
            self._pending.clear()
            self._release()

    def __del__(self) -> None:
        # An epoch abandoned without close(): its hold on its files' copies ends (they
        # are kept for the next epoch as at its end; the registry's lock is reentrant,
        # as the collector may run this inside a registry call).
        with contextlib.suppress(AttributeError):
            self._release()

    def get_state(self) -> dict[str, Any]:
        """State after the last batch returned; pass it to ``batches(..., state=...)``."""
        return self.sampler.get_state()
