"""``RecordDataset``: many TFRecord files as one indexed, randomly accessible sequence.

Indexes are loaded (or built and saved, see :mod:`tfrecord_engine.index.sidecar`) on first
use. A dataset pickles as its arguments and reopens its files lazily in the new
process, so it works as a PyTorch map-style dataset or a Grain random-access source
(``__len__``, ``__getitem__``, ``__getitems__``) without importing either:
``__getitems__`` returns a list of per-record samples (see :mod:`.samples`).

The class holds the arguments, the reads and the public methods; random access and
decoding (``ds[i]``, ``__getitems__``, ``decoder``) are its methods in
:mod:`.access_methods`, epochs in :mod:`.epoch_methods`, views in :mod:`.view_methods`,
output in :mod:`.output_methods`. The opened files and reads by record number live in
:mod:`.files` (:class:`~.files.DatasetFiles`), epochs (:class:`~.epochs.RecordBatchIterator`,
decode pools) in :mod:`.epochs`.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DataLossError, InvalidArgumentError, OutOfRangeError, TFRecordError
from ..example.single import SingleDecoder
from ..index.placement import normalize_placement
from ..index.sidecar import Index
from ..records.compression import Compression
from ..records.detect import AUTO, CompressionArg, reading_compression, requested
from ..records.reader import normalize_limit
from ..records.recovery import DamageCallback, DamagePolicy, DamageReport, normalize_policy
from ..storage.options import StorageOptions, StorageOptionsArg, normalize_storage_options
from ..storage.remote import DEFAULT_MAX_GAP
from . import views
from .access_methods import AccessMethods, _is_sequence, _sequences
from .arguments import (
    check_local_files,
    expand_paths,
)
from .epoch_methods import EpochMethods
from .epochs import (
    DEFAULT_CHUNK_RECORDS,
    IN_MEMORY_LIMIT,
    RecordBatchIterator,
    in_file_order,
)
from .files import DatasetFiles, FileRecords, open_indexes, open_records
from .located import locate
from .output import SampleOutput, check_transform, sample_output
from .output_methods import OutputMethods
from .pools import close_pools
from .prepare import MASK_KEY, PaddedBatch
from .procpool import DecodePool, WorkerInit
from .random_holds import RandomHolds
from .remote_cache import DatasetCache
from .source import Fetcher, RandomAccessSource
from .spans import HeldSpans, Spans
from .view_methods import ViewMethods

# (Names kept importable from here for callers of earlier versions.)
__all__ = [
    "DEFAULT_CHUNK_RECORDS",
    "IN_MEMORY_LIMIT",
    "MASK_KEY",
    "Fetcher",
    "PaddedBatch",
    "RandomAccessSource",
    "RecordBatchIterator",
    "RecordDataset",
    "open_records",
]

IntArray = npt.NDArray[np.int64]
#: Parsed batches of at most this many records are read and decoded record by record
#: (see ``RecordDataset._few``: ``ds[list]`` for specs of scalars only, ``__getitems__``
#: for any spec the per-record decoder plans); larger ones in one batch.
SMALL_BATCH = 128
PathArg = str | os.PathLike[str]
#: A data file's path or glob: bytes are decoded as os.fsdecode does (as TensorFlow).
FileArg = str | bytes | os.PathLike[str]


def _expand(
    paths_or_globs: FileArg | Sequence[FileArg], storage_options: StorageOptionsArg = None
) -> list[str]:
    """The files of paths and globs (see :func:`.arguments.expand_paths`; the CLI's too)."""
    return expand_paths(paths_or_globs, storage_options)


class RecordDataset(ViewMethods, EpochMethods, OutputMethods, AccessMethods):
    """Indexed TFRecord files with ``len()``, random access and exact epochs.

    Each file's index is loaded on first use (from the ``.tfeidx/`` sub-folder the writer
    fills, an old ``<file>.tfeidx``, or the user's index cache), or built when missing,
    damaged or stale and saved in the index cache: never into the data's folder unless
    ``save_index`` asks (see :meth:`Index.open` and :mod:`tfrecord_engine.index.placement`).

    Args:
        paths_or_globs: a path or glob, or a sequence of them (globs expand sorted;
            ``bytes`` are decoded, as TensorFlow does). A local file that is missing,
            a folder (pass a glob such as ``data/*.tfrecord``), or an open file object
            is refused here (:mod:`.arguments`).
        features: a feature spec mapping (as for ``tfe.parse_example``; ``tf.io``'s own
            spec objects work too): records are then returned parsed; ``None`` returns
            raw ``bytes``. For files of SequenceExamples pass ``context_features``
            and ``sequence_features`` instead.
        compression: the files' compression: ``"auto"`` (default: each file's own,
            recognised from its bytes, see :mod:`tfrecord_engine.records.detect`), or
            ``None``/``""``, ``"GZIP"``, ``"ZLIB"`` for all of them (an index that says
            otherwise is refused); TensorFlow's ``TFRecordCompressionType`` ints and
            options objects are accepted too.
        context_features, sequence_features: the specs of a file of SequenceExamples
            (as for ``tfe.parse_sequence_example``; ``tf.io``'s spec objects work too;
            either may be left out, and a ``FixedLenSequenceFeature`` needs no
            ``allow_missing``): every record is then returned parsed as one flat dict,
            the context and sequence features by name, each ``FixedLenSequenceFeature``'s
            step counts under ``"<name>_lengths"`` (see ``docs/sequence-examples.md``).
            Not together with ``features``.
        verify: check every record's data CRC (in bulk per batch).
        max_gap: for uncompressed files given as fsspec URLs (``s3://``, ``http://``
            ...): records of one batch at most this many bytes apart are fetched in
            one request (see :mod:`tfrecord_engine.storage.remote`); ``None`` fetches every
            record on its own. Local files ignore it.
        on_damage: what damage does (see ``docs/reliability.md``). When indexing:
            ``"raise"`` (default) fails on a damaged file; ``"stop"`` keeps the records
            before the first damage; ``"skip"`` keeps every intact record. In an epoch
            (:meth:`batches`, iteration), for a record whose CRC fails when it is read
            (the file changed after indexing): ``"raise"`` raises at that batch;
            ``"stop"`` ends the epoch before that batch; ``"skip"`` drops the record
            from its batch. Random access (``ds[i]``) raises under every policy: a
            requested record cannot be dropped.
        max_record_bytes: refuse records announcing more data bytes than this, as
            damage under ``on_damage`` (see :func:`~tfrecord_engine.read_records`).
        compression_type: the same as ``compression``, under ``tf.data``'s name.
        on_damage_report: receives every :class:`~tfrecord_engine.DamageReport` (index
            time and read time); without it each is a
            :class:`~tfrecord_engine.DamageWarning`. It must pickle for the dataset to
            reach worker processes.
        save_index: where an index built here is kept: ``True``/``"cache"`` (default)
            the user's index cache (``$TFE_INDEX_CACHE``, else
            ``$XDG_CACHE_HOME/tfrecord-engine/index``); ``"hidden"`` the ``.tfeidx/``
            sub-folder beside the data; ``"beside"`` the old ``<file>.tfeidx`` (matched
            by ``train-*`` globs: other readers then fail); ``False`` nowhere.
        transform: a function applied to every record's sample as it is handed out
            (``ds[i]``, ``__getitems__``, so in DataLoader workers, and iteration),
            as a ``torchvision`` dataset's ``transform``: it gets the sample (a dict of
            numpy values and ``bytes``, or the record's ``bytes`` without
            ``features``) and returns anything; columnar batches (``ds[list]``,
            :meth:`batches`) are not transformed. It must pickle for worker processes.
            See :mod:`tfrecord_engine.data.output`.
        cache_dir: a node-local folder where remote files (URLs) are copied whole, with
            their indexes, when the dataset opens them, and read from after: a second
            epoch reads nothing from the store (see :mod:`.remote_cache`). Shared safely
            by worker processes and other jobs of the node; every copy is checked
            against the object's size and ETag/generation, so a changed object is
            fetched again. ``None`` (default): read from the store.
        cache_limit: the most bytes the cache folder holds (least recently used copies
            not in use are removed to make room; an object that does not fit is read
            from the store); ``None``: no limit but the disk.
        storage_options: for URLs, fsspec keyword arguments for their filesystem
            (``s3fs.S3FileSystem``'s ``key``, ``secret``, ``endpoint_url`` ...; see
            :mod:`tfrecord_engine.storage.options`): used for globs, indexes, reads and
            the cache, kept by every index, and pickled with the dataset, so decode
            workers and ``DataLoader`` workers reach the same store. Keys given win over
            fsspec's global configuration; nothing is written to it. Never shown in a
            ``repr``. Local paths ignore them.
        mapped_reads: slice the records of uncompressed local files straight out of
            their memory maps (CRCs still checked) instead of having the kernel copy
            them out (default ``False``): random batches read ~1.3-1.6x faster. The
            risk: a file truncated while it is mapped (or rewritten through a
            truncation, as ``open(path, "wb")`` does) kills the process with SIGBUS,
            which no Python code can catch. Use it only for files nothing rewrites
            while they are read (see ``docs/reliability.md``). Kept by views, copies
            and pickling (``DataLoader`` and decode workers).
        random_holds: random reads (``ds[i]``, ``ds[list]``, a map-style
            ``DataLoader``) read a local uncompressed file whole into memory once they
            took a quarter of its records, then slice that copy, its CRCs checked once
            (default ``True``; only where the files' data total at most
            ``IN_MEMORY_LIMIT``, 1 GiB or an eighth of the machine's memory; one copy
            per machine shared by a loader's worker processes; a file that changes is
            noticed within a second and read from disk again). ``False``: random reads
            always go to the files. See ``docs/reliability.md``.

    ``with tfe.RecordDataset(...) as ds:`` closes it (:meth:`close`) when the block ends.

    Example:
        >>> import tempfile, os, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True) as w:
        ...     w.write_many([b"r0", b"r1", b"r2"])
        3
        >>> ds = tfe.RecordDataset(path)
        >>> len(ds), ds[-1], ds[[2, 0]]
        (3, b'r2', [b'r2', b'r0'])
        >>> [batch for batch in ds.batches(2)]
        [[b'r0', b'r1'], [b'r2']]
    """

    def __init__(
        self,
        paths_or_globs: FileArg | Sequence[FileArg],
        features: Mapping[str, Any] | None = None,
        compression: CompressionArg = "auto",
        *,
        context_features: Mapping[str, Any] | None = None,
        sequence_features: Mapping[str, Any] | None = None,
        verify: bool = True,
        max_gap: int | None = DEFAULT_MAX_GAP,
        on_damage: DamagePolicy = "raise",
        on_damage_report: DamageCallback | None = None,
        save_index: bool | str = True,
        max_record_bytes: int | None = None,
        compression_type: CompressionArg = None,
        transform: Callable[[Any], Any] | None = None,
        cache_dir: PathArg | None = None,
        cache_limit: int | None = None,
        storage_options: StorageOptionsArg = None,
        mapped_reads: bool = False,
        random_holds: bool = True,
    ) -> None:
        if max_gap is not None and max_gap < 0:
            raise InvalidArgumentError(f"max_gap must be >= 0 or None, got {max_gap}")
        #: The URLs' fsspec keyword arguments (``None``: fsspec's configuration only).
        self.storage_options: StorageOptions | None = normalize_storage_options(storage_options)
        self.paths = expand_paths(paths_or_globs, self.storage_options)
        check_local_files(self.paths)  # a missing file or a folder fails here, not at first use
        self.max_gap = max_gap
        if features is not None and not isinstance(features, Mapping):
            # TFRecordDataset(filenames, compression_type) ported as it is.
            raise InvalidArgumentError(
                f"features must be a mapping of feature specs, not {features!r}; the "
                "compression is compression= (or compression_type=), not the second argument "
                "as in tf.data.TFRecordDataset"
            )
        # tf.io spec objects become ours once, here (duck typing, no TensorFlow import).
        self.features: Mapping[str, Any] | None = None
        if features is not None or context_features is not None or sequence_features is not None:
            self.features = _sequences().dataset_features(
                features, context_features, sequence_features
            )
        want = requested(reading_compression(compression, compression_type))
        #: ``"auto"`` (each file's own, from its index or its bytes) or a Compression.
        self.compression: Compression | str = AUTO if want is None else want
        self.verify = verify
        self.on_damage = normalize_policy(on_damage)
        self.on_damage_report = on_damage_report
        self.save_index = (
            save_index if isinstance(save_index, bool) else normalize_placement(save_index)
        )
        self.max_record_bytes = normalize_limit(max_record_bytes)
        #: Local files read straight out of their maps (unguarded: see the docstring).
        self.mapped_reads = bool(mapped_reads)
        #: Random reads' whole-file copies (see the docstring), shared by views and copies.
        self._holds = RandomHolds(bool(random_holds))
        #: The files once opened (:meth:`_opened`), ``None`` until then.
        self._files: DatasetFiles | None = None
        self._decoder: Any = None
        self._single: SingleDecoder | None = None
        self._pools: list[DecodePool] = []
        #: Per shard layout ``(shard_index, shard_count)``: the epoch that the next
        #: shuffled ``batches`` call without ``epoch=`` runs.
        self._next_epoch: dict[tuple[int, int], int] = {}
        self._epoch_lock = threading.Lock()
        #: The records of a view (:mod:`.views`), ``None`` for all records of the files.
        self._view: views.Selection | None = None
        #: The transform and output format (``None``: samples and batches as decoded).
        self._output: SampleOutput | None = sample_output(check_transform(transform), "numpy")
        #: The node-local copies of remote files (``None``: read from the store).
        self._cache = DatasetCache.create(cache_dir, cache_limit, self.storage_options)

    # ---- lazy opening and pickling -----------------------------------------------------

    def _opened(self) -> DatasetFiles:
        """The files, opened on first use (their indexes loaded or built)."""
        files = self._files
        if files is None:
            try:
                indexes = open_indexes(
                    self.paths,
                    compression=self.compression,
                    on_damage=self.on_damage,
                    on_damage_report=self.on_damage_report,
                    save=self.save_index,
                    max_record_bytes=self.max_record_bytes,
                    cache=self._cache,
                    storage_options=self.storage_options,
                )
            except DataLossError as exc:
                locate(exc, self)  # what to do: on_damage="skip", `tfr repair`
                raise
            files = self._use(indexes)
        return files

    def _open(self) -> list[FileRecords]:
        """Each file's reader, in file order (the files opened on first use)."""
        return self._opened().readers

    @property
    def _readers(self) -> list[FileRecords] | None:
        """Each file's reader, or ``None`` while the files are not open."""
        return None if self._files is None else self._files.readers

    def _use(self, indexes: list[Index]) -> DatasetFiles:
        """Opens the files through these indexes (a decode worker gets its parent's)."""
        files = self._files = DatasetFiles(
            indexes, max_gap=self.max_gap, mapped=self.mapped_reads, holds=self._holds
        )
        return files

    @property
    def indexes(self) -> list[Index]:
        """The index of every file, in file order."""
        return self._opened().indexes

    def close(self) -> None:
        """Releases mapped files and stops decode workers; the dataset reopens on next use."""
        close_pools(self)
        files, self._files = self._files, None
        if files is not None:
            files.close()
        if self._cache is not None:
            self._cache.close()  # unpins the cached copies

    def __enter__(self) -> RecordDataset:
        """``with RecordDataset(...) as ds:`` closes the dataset (:meth:`close`) at the end."""
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- output: transform and format (see .output_methods) ----------------------------

    def _copy(self, **changes: Any) -> RecordDataset:
        copied = RecordDataset.__new__(RecordDataset)
        copied.__setstate__({**self.__getstate__(), **changes})
        if self._files is not None:
            copied._use(self._files.indexes)  # (indexes checked already)
        return copied

    def __getstate__(self) -> dict[str, Any]:
        return {
            "paths": self.paths,
            "features": self.features,
            "compression": self.compression,
            "verify": self.verify,
            "max_gap": self.max_gap,
            "on_damage": self.on_damage,
            "on_damage_report": self.on_damage_report,
            "save_index": self.save_index,
            "max_record_bytes": self.max_record_bytes,
            "next_epoch": dict(self._next_epoch),
            "transform": self.transform,
            "format": self.format,
            "view": self._view,
            "cache": None if self._cache is None else self._cache.state(),
            "storage_options": self.storage_options,
            "mapped_reads": self.mapped_reads,
            "random_holds": self._holds,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.paths = state["paths"]
        self.features = state["features"]
        self.compression = state["compression"]
        self.verify = state["verify"]
        self.max_gap = state.get("max_gap", DEFAULT_MAX_GAP)
        self.on_damage = state.get("on_damage", "raise")
        self.on_damage_report = state.get("on_damage_report")
        self.save_index = state.get("save_index", True)
        self.max_record_bytes = state.get("max_record_bytes")
        self._files = None
        self._decoder = None
        self._single = None
        self._pools = []
        # A copy goes on from its original's epoch count (it does not start over at 0).
        self._next_epoch = dict(state.get("next_epoch", {}))
        self._epoch_lock = threading.Lock()
        self._output = sample_output(state.get("transform"), state.get("format", "numpy"))
        self._view = state.get("view")
        self._cache = DatasetCache.from_state(state.get("cache"))
        self.storage_options = state.get("storage_options")
        self.mapped_reads = state.get("mapped_reads", False)
        holds = state.get("random_holds")
        self._holds = holds if isinstance(holds, RandomHolds) else RandomHolds()

    def worker_init(self) -> WorkerInit:
        """What a decode worker needs to open this dataset (see :class:`DecodePool`)."""
        state = self.__getstate__()
        del state["on_damage_report"]  # damage found while indexing was reported here
        del state["transform"], state["format"]  # applied here, to what workers decode
        return WorkerInit(_open_in_worker, state, self.indexes)

    def __repr__(self) -> str:
        """Names the files by a digest of their paths and indexes (Grain checks it).

        Grain refuses to restore a checkpoint whose ``repr(data_source)`` differs, so the
        repr changes when a file is added, removed, renamed or rewritten (its index's
        size, content fingerprint or record count differ). It opens the indexes (building
        missing ones) like any first use.
        """
        features = "yes" if self.features is not None else "no"
        kind = self.compression
        name = kind.value if isinstance(kind, Compression) else kind
        try:
            ident = self._files_id()
        except (OSError, TFRecordError) as exc:  # a repr must not raise (tracebacks, logs)
            ident = f"unreadable ({type(exc).__name__})"
        return (
            f"RecordDataset({len(self.paths)} files, id={ident}, "
            f"compression={name!r}, features={features})"
        )

    def _files_id(self) -> str:
        """A digest of every file's path and index (size, fingerprint, record count).

        Two datasets over the same unchanged files have the same id; a file added,
        removed, renamed or rewritten changes it. Opens the indexes on first use.
        """
        digest = hashlib.sha256()
        for path, index in zip(self.paths, self.indexes, strict=True):
            key = f"{path}\0{index.data_size}\0{index.fingerprint}\0{len(index)}\n"
            digest.update(key.encode("utf-8", "surrogateescape"))
        if self._view is not None:
            digest.update(f"view\0{self._view.digest}".encode())  # (which records, in order)
        return digest.hexdigest()[:16]

    # ---- random access -----------------------------------------------------------------

    def __len__(self) -> int:
        files = self._opened()
        return files.count if self._view is None else len(self._view)

    def _normalize(self, indices: IntArray) -> IntArray:
        n = self._opened().count if self._view is None else len(self._view)
        if len(indices) == 0 or (indices.min() >= 0 and indices.max() < n):
            return indices  # the common case: one pass each for min and max
        bad = (indices < -n) | (indices >= n)
        if bool(np.any(bad)):
            raise OutOfRangeError(
                f"record index {int(indices[np.argmax(bad)])} out of range for a dataset "
                f"of {n} records"
            )
        return np.where(indices < 0, indices + n, indices)

    def _read_one(self, i: int) -> bytes:
        """Record ``i`` (negatives allowed): the per-call path of ``ds[i]``."""
        files = self._files if self._files is not None else self._opened()
        if self._view is not None:
            i = self._view.record(i)  # (a view's record i: its number in the files)
        return files.read_one(i, self.verify)

    def _records(self, indices: IntArray) -> IntArray:
        """The numbers in the files (across them) of the records at (normalized)
        ``indices``: themselves, except in a view (:mod:`.views`)."""
        return indices if self._view is None else self._view.records[indices]

    def _numbers(self, indices: Sequence[int] | IntArray) -> IntArray:
        """The numbers in the files of the records at ``indices`` (negatives allowed)."""
        return self._records(self._normalize(np.asarray(indices, dtype=np.int64).reshape(-1)))

    def read_raw(self, indices: Sequence[int] | IntArray) -> list[bytes]:
        """Returns the raw records at ``indices`` (global, negatives allowed), in order."""
        files = self._opened()
        return files.read(self._numbers(indices), self.verify)

    def read_spans(self, indices: Sequence[int] | IntArray) -> Spans | None:
        """The records at ``indices`` as CRC-checked :class:`~.spans.Spans` of one buffer.

        Returns ``(buf, starts, ends)`` (record ``j`` is ``buf[starts[j]:ends[j]]``) when
        all the records lie in uncompressed local files, else ``None`` (use
        :meth:`read_raw`). The buffer is read for the call and is the caller's to keep.
        """
        files = self._opened()
        return files.spans(self._numbers(indices), self.verify)

    def read_salvaged(self, indices: IntArray) -> tuple[list[bytes | None], list[DamageReport]]:
        """Reads ``indices`` one by one: ``None`` and a report for each damaged record.

        The slow path after a batch read failed a CRC check under ``"stop"``/``"skip"``.
        """
        files = self._opened()
        return files.salvage(self._numbers(indices), self.verify)

    def _few(self, key: Sequence[int] | IntArray, *, scalars: bool = True) -> list[bytes] | None:
        """The records of a small parsed batch, read to be decoded record by record
        (cheaper than a batch decode's set-up for a few records), or ``None`` for the
        batch path (larger batches, other specs, files not local and uncompressed, any
        error: the batch path raises it). ``scalars``: only for specs of scalars only
        (the columnar ``ds[list]``); else for any spec the per-record decoder plans
        (the samples of ``__getitems__``).
        """
        got = self._few_numbers(key, scalars)
        if got is None:
            return None
        files, numbers = got
        return files.read_few(numbers, self.verify)

    def _few_held(self, key: Sequence[int] | IntArray) -> list[tuple[list[int], HeldSpans]] | None:
        """The records of a small batch of samples (as :meth:`_few` with ``scalars=False``)
        as spans of their files' copies in memory, one group a file
        (``DatasetFiles.few_spans``), or ``None``: :meth:`_few` reads them."""
        got = self._few_numbers(key, False)
        if got is None or not self._single_decoder().slices_only:
            return None  # (a reader's walk indexes the record: only bytes or maps do)
        files, numbers = got
        return files.few_spans(numbers, self.verify)

    def _few_numbers(
        self, key: Sequence[int] | IntArray, scalars: bool
    ) -> tuple[DatasetFiles, Sequence[int] | IntArray] | None:
        """The files and the numbers in them of a small batch decoded record by record
        (see :meth:`_few`), or ``None`` for the batch path."""
        if (isinstance(key, np.ndarray) and key.ndim != 1) or _is_sequence(self.features):
            return None  # (SequenceExamples: always the batch decoder)
        single = self._single_decoder()
        if not 0 < len(key) <= SMALL_BATCH or not (single.scalars if scalars else single.enabled):
            return None
        files = self._files if self._files is not None else self._opened()
        if self._view is not None:
            mapped = self._view.lookup(key)  # (their numbers in the files; None: slow path)
            if mapped is None:
                return None
            key = mapped
        return files, key

    def _with_view(self, view: views.Selection) -> RecordDataset:
        """A copy over the same files holding the records of ``view`` (a fresh epoch
        count: a view's epochs are its own)."""
        return self._copy(view=view, next_epoch={})

    def __iter__(self) -> Iterator[Any]:
        """Yields every record in file order (read in chunks of 1,024).

        Follows ``on_damage`` for records whose CRC fails (see the class docstring).
        """
        return in_file_order(
            self, None if self.features is None and self._output is None else self._one
        )


def _open_in_worker(state: dict[str, Any], indexes: list[Index]) -> RecordDataset:
    """A decode worker's copy of a dataset, opened through its parent's indexes."""
    ds = RecordDataset.__new__(RecordDataset)
    ds.__setstate__({**state, "on_damage_report": _ignore_report})
    ds._use(indexes)
    if ds.features is not None:
        ds.decoder.defer_bytes = True
    return ds


def _ignore_report(report: DamageReport) -> None:
    del report
