"""``RecordDataset``: many TFRecord files as one indexed, randomly accessible sequence.

Indexes are loaded (or built and saved, see :mod:`tfrecord_engine.index.sidecar`) on first
use. A dataset pickles as its arguments and reopens its files lazily in the new
process, so it works as a PyTorch map-style dataset or a Grain random-access source
(``__len__``, ``__getitem__``, ``__getitems__``) without importing either:
``__getitems__`` returns a list of per-record samples (see :mod:`.samples`).
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import copy
import hashlib
import importlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO, Literal, cast

import numpy as np
import numpy.typing as npt

from ..errors import (
    DataLossError,
    InvalidArgumentError,
    OutOfRangeError,
    ParseError,
    StaleIndexError,
    TFRecordError,
    WorkerError,
)
from ..index.damage import reporter
from ..index.placement import normalize_placement
from ..index.sidecar import Index
from ..records import framing
from ..records.compression import Compression
from ..records.detect import AUTO, CompressionArg, reading_compression, requested
from ..records.reader import normalize_limit
from ..records.recovery import DamageCallback, DamagePolicy, DamageReport, normalize_policy
from ..storage import remote
from ..storage.remote import DEFAULT_MAX_GAP
from ..storage.sequential import SequentialRanges
from ..storage.sequential import link as link_sequential
from . import views
from .arguments import (
    check_batch_arguments,
    check_local_files,
    expand_paths,
    record_indices,
    refuse_record_key,
)
from .balance import Balance, BalancedOrder, as_balance, balanced_positions
from .collate import teach_default_collate
from .compressed_source import CompressedFileRecords
from .gather import LocalFilesGather
from .located import locate
from .output import SampleOutput, check_transform, sample_output
from .pipeline import ReadAhead
from .prepare import MASK_KEY, PaddedBatch, Ready, prepare_chunk
from .procpool import DecodePool, PoolStream, WorkerInit
from .remote_cache import DatasetCache
from .sampler import IndexBatch, IndexBatchIterator, Shuffle
from .samples import sample_of, samples_of
from .single import SingleDecoder
from .source import Fetcher, FetcherRecords, LocalFileRecords, RandomAccessSource

__all__ = [
    "MASK_KEY",
    "Fetcher",
    "PaddedBatch",
    "RandomAccessSource",
    "RecordBatchIterator",
    "RecordDataset",
]

FileRecords = LocalFileRecords | FetcherRecords | CompressedFileRecords
IntArray = npt.NDArray[np.int64]
#: Records read, checked and decoded together ahead of the consumer.
DEFAULT_CHUNK_RECORDS = 4096
#: Parsed batches of at most this many records are read and decoded record by record
#: (see ``RecordDataset._few``: ``ds[list]`` for specs of scalars only, ``__getitems__``
#: for any spec the per-record decoder plans); larger ones in one batch.
SMALL_BATCH = 128
#: In file order, chunks of big records are cut to about this many bytes (at least one
#: batch): a chunk is read, CRC-checked and decoded while it is still in the CPU's
#: cache, into a buffer the allocator reuses (a fresh mapping of tens of MB pays a page
#: fault every 4 KB). 4,096 wide records of 21 KB were 88 MB.
CHUNK_BYTES = 8 << 20


def _in_memory_limit() -> int:
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not on every platform
        return 1 << 30
    return min(1 << 30, max(physical, 0) // 8)


#: The most bytes of files that a shuffled epoch reads whole into memory by default
#: (``batches(..., in_memory=None)``): 1 GiB, or an eighth of the machine's memory.
IN_MEMORY_LIMIT: int = _in_memory_limit()
PathArg = str | os.PathLike[str]
#: A data file's path or glob: bytes are decoded as os.fsdecode does (as TensorFlow).
FileArg = str | bytes | os.PathLike[str]
#: Guards every dataset's decode pools (epochs may start on several threads). Reentrant:
#: the collector may hand back an abandoned epoch's pool (PoolStream.__del__) inside it.
_POOLS_LOCK = threading.RLock()


def open_records(index: Index, *, max_gap: int | None = DEFAULT_MAX_GAP) -> FileRecords:
    """Returns the right random-access reader for an indexed file (local or URL).

    ``max_gap`` applies to uncompressed remote files: records of a batch at most that
    many bytes apart are fetched in one request (``None``: one request per record).
    """
    if remote.is_url(index.data_path):
        f = remote.RemoteFile(index.data_path, identity=index.remote_identity)
        if index.remote_identity is None:
            # Pin the object's version now, right after its index was checked, in the
            # process that checked it: every later answer, here and in decode workers
            # (which get this index), must come from it (else RemoteChangedError).
            if f.size != index.data_size:
                raise StaleIndexError(
                    f"{index.data_path}: the object has {f.size} bytes, its index was "
                    f"checked for {index.data_size}: it was replaced since; open the "
                    "dataset again"
                )
            index.remote_identity = f.identity
        if index.compression is Compression.NONE:
            return FetcherRecords(
                index,
                f.fetch,
                max_gap=max_gap,
                max_request=remote.DEFAULT_MAX_REQUEST,
                # Read in order (a sequential epoch), the next spans are already in flight.
                fetch_ranges=SequentialRanges(f.fetch_ranges, index.data_size),
            )
        # The read-ahead stream has file semantics (read, close); it is not an io class.
        return CompressedFileRecords(
            index, fetch=f.fetch, open_stream=lambda: cast("BinaryIO", f.open_stream())
        )
    if index.compression is Compression.NONE:
        if not os.path.exists(index.data_path):
            raise FileNotFoundError(index.data_path)
        return LocalFileRecords(index)
    return CompressedFileRecords(index)


_MODULES: dict[str, Any] = {}


def _example() -> Any:
    # Imported on first use: Example parsing is only needed with ``features=``, and the
    # rest of this module must work without it. Kept: import_module costs ~15 µs a call.
    module = _MODULES.get("example")
    if module is None:
        module = _MODULES["example"] = importlib.import_module("..example", __package__)
    return module


def _example_batch() -> Any:
    module = _MODULES.get("batch")
    if module is None:
        module = _MODULES["batch"] = importlib.import_module("..example.batch", __package__)
    return module


def _expand(paths_or_globs: FileArg | Sequence[FileArg]) -> list[str]:
    """The files of paths and globs (see :func:`.arguments.expand_paths`; the CLI's too)."""
    return expand_paths(paths_or_globs)


class RecordDataset:
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
            raw ``bytes``.
        compression: the files' compression: ``"auto"`` (default: each file's own,
            recognised from its bytes, see :mod:`tfrecord_engine.records.detect`), or
            ``None``/``""``, ``"GZIP"``, ``"ZLIB"`` for all of them (an index that says
            otherwise is refused); TensorFlow's ``TFRecordCompressionType`` ints and
            options objects are accepted too.
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
    ) -> None:
        if max_gap is not None and max_gap < 0:
            raise InvalidArgumentError(f"max_gap must be >= 0 or None, got {max_gap}")
        self.paths = expand_paths(paths_or_globs)
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
        self.features = None if features is None else _example().specs.as_feature_specs(features)
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
        self._readers: list[FileRecords] | None = None
        self._gather: LocalFilesGather | None = None
        self._starts: IntArray = np.zeros(1, dtype=np.int64)
        self._starts_list: list[int] = [0]
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
        self._cache = DatasetCache.create(cache_dir, cache_limit)

    # ---- lazy opening and pickling -----------------------------------------------------

    def _open(self) -> list[FileRecords]:
        if self._readers is None:
            try:
                indexes = [self._within_limit(idx) for idx in self._open_indexes()]
            except DataLossError as exc:
                locate(exc, self)  # what to do: on_damage="skip", `tfr repair`
                raise
            self._use(indexes)
            assert self._readers is not None
        return self._readers

    def _open_index(self, path: str) -> Index:
        return Index.open(
            path,
            self.compression,
            on_damage=self.on_damage,
            on_damage_report=self.on_damage_report,
            save=self.save_index,
        )

    def _open_indexes(self) -> list[Index]:
        """Every file's index; with a cache, cached URLs' name their local copies."""
        if self._cache is None:
            return [self._open_index(p) for p in self.paths]
        return self._cache.open_indexes(
            self.paths,
            self._open_index,
            compression=self.compression,
            on_damage=self.on_damage,
            on_damage_report=self.on_damage_report,
        )

    def _within_limit(self, idx: Index) -> Index:
        """``idx``, or the file indexed again under the policy when records exceed
        ``max_record_bytes`` (a sidecar built without the limit still holds them)."""
        limit = self.max_record_bytes
        if limit is None or len(idx) == 0 or int(idx.lengths.max()) <= limit:
            return idx
        return Index.build(
            idx.data_path,
            idx.compression,
            on_damage=self.on_damage,
            on_damage_report=self.on_damage_report,
            max_record_bytes=limit,
        )

    def _use(self, indexes: list[Index]) -> None:
        """Opens the files through these indexes (a decode worker gets its parent's)."""
        readers = [open_records(index, max_gap=self.max_gap) for index in indexes]
        # A sequential epoch reads each remote file ahead into the next one.
        link_sequential([getattr(r, "fetch_ranges", None) for r in readers])
        counts = [len(r.index) for r in readers]
        self._starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        data_bytes = sum(int(r.index.lengths.sum()) for r in readers)
        self._record_bytes = data_bytes / max(1, sum(counts))  # the mean record's size
        self._starts_list = self._starts.tolist()  # for ds[i]: bisect on Python ints
        local = [r for r in readers if isinstance(r, LocalFileRecords)]
        self._gather = LocalFilesGather(local) if len(local) == len(readers) > 1 else None
        self._readers = readers

    @property
    def indexes(self) -> list[Index]:
        """The index of every file, in file order."""
        return [r.index for r in self._open()]

    def close(self) -> None:
        """Releases mapped files and stops decode workers; the dataset reopens on next use."""
        with _POOLS_LOCK:
            pools, self._pools = self._pools, []
        for pool in pools:
            if pool.owner == os.getpid():
                pool.close()
        if self._gather is not None:
            self._gather.close()
        for r in self._readers or []:
            r.close()
        self._readers = None
        self._gather = None
        if self._cache is not None:
            self._cache.close()  # unpins the cached copies

    def __enter__(self) -> RecordDataset:
        """``with RecordDataset(...) as ds:`` closes the dataset (:meth:`close`) at the end."""
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- output: transform and format (see .output) ------------------------------------

    @property
    def transform(self) -> Callable[[Any], Any] | None:
        """The function applied to every sample handed out (``None``: none)."""
        return None if self._output is None else self._output.transform

    @property
    def format(self) -> str:
        """The output format: ``"numpy"`` (as decoded), ``"torch"`` or ``"jax"``."""
        return "numpy" if self._output is None else self._output.format

    def with_format(self, format: str | None) -> RecordDataset:
        """A copy of this dataset whose samples and batches are ``format``'s arrays.

        ``"torch"`` (tensors), ``"jax"`` (``jax.numpy`` arrays) or ``"numpy"``/``None``
        (as decoded), as Hugging Face's ``with_format``: ``ds[i]``, ``ds[list]``,
        iteration, ``__getitems__`` and :meth:`batches` convert every numeric array;
        strings stay ``bytes``. The variable-length values of a sample stay typed numpy
        arrays, which every collate (PyTorch's default one too) pads into a
        :class:`~tfrecord_engine.PaddedValue` of the loader's tensors. The copy shares
        the files, indexes, ``transform`` and epoch count; this dataset is unchanged.

        Example:
            >>> import os, tempfile, tfrecord_engine as tfe
            >>> path = os.path.join(tempfile.mkdtemp(), "f.tfrecord")
            >>> with tfe.TFRecordWriter(path, index=True) as w:
            ...     w.write_many([tfe.encode_example({"x": [i]}) for i in range(3)])
            3
            >>> ds = tfe.RecordDataset(path, {"x": tfe.FixedLenFeature([], "int64")})
            >>> ds.with_format("torch")[[0, 2]]["x"]
            tensor([0, 2])
        """
        return self._copy(format=format)

    def with_transform(self, transform: Callable[[Any], Any] | None) -> RecordDataset:
        """A copy of this dataset with ``transform`` (see the class's ``transform=``)."""
        return self._copy(transform=check_transform(transform))

    def _copy(self, **changes: Any) -> RecordDataset:
        copied = RecordDataset.__new__(RecordDataset)
        copied.__setstate__({**self.__getstate__(), **changes})
        if self._readers is not None:
            copied._use([r.index for r in self._readers])  # (indexes checked already)
        return copied

    def _out_one(self, sample: Any, index: int) -> Any:
        if self._output is not None:
            return self._output.one(sample, index if index >= 0 else index + len(self))
        teach_default_collate()  # (a ConcatDataset's loader collates ds[i] samples)
        return sample

    def _out_batch(self, batch: Any) -> Any:
        return batch if self._output is None else self._output.batch(batch)

    def _out_many(self, samples: list[Any], indices: IntArray) -> list[Any]:
        if self._output is None:
            teach_default_collate()  # (the loader's default_collate pads our VarLen kinds)
            return samples
        n = len(self)
        return self._output.many(samples, [i + n if i < 0 else i for i in indices.tolist()])

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
        self._readers = None
        self._gather = None
        self._starts = np.zeros(1, dtype=np.int64)
        self._starts_list = [0]
        self._decoder = None
        self._single = None
        self._pools = []
        # A copy goes on from its original's epoch count (it does not start over at 0).
        self._next_epoch = dict(state.get("next_epoch", {}))
        self._epoch_lock = threading.Lock()
        self._output = sample_output(state.get("transform"), state.get("format", "numpy"))
        self._view = state.get("view")
        self._cache = DatasetCache.from_state(state.get("cache"))

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
        self._open()
        return int(self._starts[-1]) if self._view is None else len(self._view)

    def _normalize(self, indices: IntArray) -> IntArray:
        n = int(self._starts[-1]) if self._view is None else len(self._view)
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
        """Record ``i`` (negatives allowed): the per-call path of ``ds[i]``, in Python
        integers (no array set-up), one ``pread`` for a local uncompressed file."""
        readers = self._readers if self._readers is not None else self._open()
        if self._view is not None:
            i = self._view.record(i)  # (a view's record i: its number in the files)
        starts = self._starts_list
        n = starts[-1]
        if not -n <= i < n:
            raise OutOfRangeError(f"record index {i} out of range for a dataset of {n} records")
        if i < 0:
            i += n
        f = 0 if len(readers) == 1 else bisect.bisect_right(starts, i) - 1
        reader = readers[f]
        local = i - starts[f]
        if isinstance(reader, LocalFileRecords):
            return reader.read_one(local, self.verify)
        return reader.read(np.array([local], np.int64), self.verify)[0]

    def _records(self, indices: IntArray) -> IntArray:
        """The numbers in the files (across them) of the records at (normalized)
        ``indices``: themselves, except in a view (:mod:`.views`)."""
        return indices if self._view is None else self._view.records[indices]

    def read_raw(self, indices: Sequence[int] | IntArray) -> list[bytes]:
        """Returns the raw records at ``indices`` (global, negatives allowed), in order."""
        readers = self._open()
        idx = self._records(self._normalize(np.asarray(indices, dtype=np.int64).reshape(-1)))
        if len(readers) == 1:
            return readers[0].read(idx, self.verify)
        if len(idx) == 0:
            return []
        file_of = np.searchsorted(self._starts, idx, "right") - 1
        if self._gather is not None:
            return self._gather.read(idx, file_of, self.verify)
        # Group the batch by file with one sort (datasets often have ~1,000 shards).
        order = np.argsort(file_of, kind="stable")
        files, first = np.unique(file_of[order], return_index=True)
        out: list[bytes] = [b""] * len(idx)
        for f, a, b in zip(
            files.tolist(), first.tolist(), [*first[1:].tolist(), len(idx)], strict=True
        ):
            where = order[a:b]
            got = readers[f].read(idx[where] - self._starts[f], self.verify)
            for j, rec in zip(where.tolist(), got, strict=True):
                out[j] = rec
        return out

    def read_spans(
        self, indices: Sequence[int] | IntArray
    ) -> tuple[npt.NDArray[np.uint8], IntArray, IntArray] | None:
        """The records at ``indices`` as CRC-checked spans of one buffer (one read per run).

        Returns ``(buf, starts, ends)`` (record ``j`` is ``buf[starts[j]:ends[j]]``) when
        all the records lie in one uncompressed local file, else ``None`` (use
        :meth:`read_raw`). The buffer is read for the call and is the caller's to keep.
        """
        readers = self._open()
        idx = self._records(self._normalize(np.asarray(indices, dtype=np.int64).reshape(-1)))
        if len(idx) == 0:
            return None
        if len(readers) == 1:
            f = 0
        else:
            lo = np.searchsorted(self._starts, idx.min(), "right") - 1
            hi = np.searchsorted(self._starts, idx.max(), "right") - 1
            if lo != hi:
                return None
            f = int(lo)
        reader = readers[f]
        if not isinstance(reader, LocalFileRecords):
            return None
        return reader.spans(idx - self._starts[f], self.verify)

    @property
    def decoder(self) -> Any:
        """The :class:`~tfrecord_engine.example.batch.BatchDecoder` of ``features``.

        Its ``stats`` count the records decoded and how many took the exact path.
        """
        if self.features is None:
            raise InvalidArgumentError("this dataset has no features to decode")
        if self._decoder is None:
            self._decoder = _example_batch().BatchDecoder(self.features)
        return self._decoder

    def _parse(self, records: list[bytes]) -> dict[str, Any]:
        return dict(self.decoder.decode_records(records))

    def _single_decoder(self) -> SingleDecoder:
        assert self.features is not None
        single = self._single
        if single is None:
            single = self._single = SingleDecoder(self.features)
        return single

    def _few(self, key: Sequence[int] | IntArray, *, scalars: bool = True) -> list[bytes] | None:
        """The records of a small parsed batch, read to be decoded record by record
        (cheaper than a batch decode's set-up for a few records), or ``None`` for the
        batch path (larger batches, other specs, files not local and uncompressed, any
        error: the batch path raises it). ``scalars``: only for specs of scalars only
        (the columnar ``ds[list]``); else for any spec the per-record decoder plans
        (the samples of ``__getitems__``).
        """
        if isinstance(key, np.ndarray) and key.ndim != 1:
            return None
        single = self._single_decoder()
        if not 0 < len(key) <= SMALL_BATCH or not (single.scalars if scalars else single.enabled):
            return None
        readers = self._readers if self._readers is not None else self._open()
        if not isinstance(readers[0], LocalFileRecords):
            return None
        n = self._starts_list[-1]
        if self._view is not None:
            mapped = self._view.lookup(key)  # (their numbers in the files; None: slow path)
            if mapped is None:
                return None
            key = mapped
        local = key.tolist() if isinstance(key, np.ndarray) else list(key)
        # The common case in three quick passes, else index by index.
        common = all(type(i) is int for i in local) and min(local) >= 0 and max(local) < n
        for j, value in enumerate([] if common else local):
            i = value
            if type(i) is not int:
                if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
                    return None
                i = local[j] = int(i)
            if not 0 <= i < n:
                if not -n <= i < 0:
                    return None
                local[j] = i + n
        try:
            if len(readers) == 1:
                return readers[0].read_few(local, self.verify)
            # Shards: each record from its file (a batch of a few touches a few files).
            starts = self._starts_list
            records: list[bytes] = []
            for i in local:
                f = bisect.bisect_right(starts, i) - 1
                reader = readers[f]
                if not isinstance(reader, LocalFileRecords):
                    return None
                got = reader.read_few([i - starts[f]], self.verify)
                if got is None:
                    return None
                records += got
        except TFRecordError:
            return None
        return records

    def _sample(self, record: bytes) -> dict[str, Any]:
        single = self._single_decoder()
        out = single.sample(record)
        if out is not None:
            return out
        # Defaults, unusual specs or encodings, errors: the exact path decides.
        assert self.features is not None
        return sample_of(self.features, _example().parse_single_example(record, self.features))

    def _samples(self, indices: IntArray) -> list[dict[str, Any]]:
        """One sample per record, cut from one batch decode (no per-record parsing)."""
        assert self.features is not None
        if len(indices) == 0:
            return []
        spans = self.read_spans(indices)
        if spans is None:
            records: list[bytes] | None = self.read_raw(indices)
            spans = _example_batch().join_records(records)
        else:
            records = None
        buf, starts, ends = spans
        decoder = self.decoder
        columns = decoder.columns(buf, starts, ends)
        if columns is None:
            # The batch holds an error: the exact path raises it (index within the batch).
            if records is None:
                records = self.read_raw(indices)
            decoder.decode_exact(records)
            return [self._sample(r) for r in records]  # not reached while exact agrees
        n = len(indices)
        return samples_of(self.features, decoder.assemble(columns, 0, n), columns, n)

    def __getitem__(self, key: int | str | slice | Sequence[int] | IntArray) -> Any:
        """``ds[i]`` -> one record; ``ds[list | slice | ndarray]`` -> a batch.

        With ``features``, one record is a *sample* (see :mod:`tfrecord_engine.data.samples`):
        a dict of numpy values and ``bytes`` that PyTorch's ``default_collate`` batches
        (a scalar string is ``bytes``, a number a numpy scalar, a ``VarLenFeature`` a 1-D
        array), the same as ``ds.__getitems__([i])[0]``. A batch (list, slice or array
        of indices) is a dict of columns exactly as ``tfe.parse_example`` returns it.

        Raises:
            OutOfRangeError: an index outside ``[-len, len)`` (an ``IndexError``).
            InvalidArgumentTypeError: a key that is no int, slice or list of ints
                (``ds[1.0]``; a ``TypeError``).
            ParseError: a record does not match ``features``; it names the file, the
                record and its offset (as damage errors do) and what to do.
        """
        if type(key) is int or isinstance(key, (int, np.integer)):
            try:
                record = self._read_one(int(key))
                if self.features is None and self._output is None:
                    return record
                out = record if self.features is None else self._sample(record)
                return self._out_one(out, int(key))
            except (ParseError, DataLossError) as exc:
                locate(exc, self, int(key))  # the file, record and offset; a hint
                raise
        if isinstance(key, str):
            return self._column_by_name(key)
        if isinstance(key, slice):
            key = np.arange(len(self), dtype=np.int64)[key]
        elif not isinstance(key, (Sequence, np.ndarray)) or isinstance(key, (bytes, bytearray)):
            raise refuse_record_key(key)
        try:
            if self.features is None:
                return self.read_raw(record_indices(key))
            few = self._few(cast("Sequence[int] | IntArray", key))
            if few is not None:
                columns = self._single_decoder().columns(few)
                if columns is not None:
                    return self._out_batch(columns)
            key = record_indices(key)  # (floats refused, never truncated)
            # Decoded from the buffer the records were read into (no bytes per record).
            spans = self.read_spans(key)
            if spans is None:
                return self._out_batch(self._parse(self.read_raw(key)))
            return self._out_batch(dict(self.decoder.decode(*spans)))
        except (ParseError, DataLossError) as exc:
            locate(exc, self, key)
            raise

    def _column_by_name(self, key: str) -> Any:
        """``ds["label"]``: one feature's values for every record, in order (Hugging
        Face's column access): from the index column when every file's index has it
        (no record is read), else from one read of the feature (see
        :func:`.views.column_by_name`).
        """
        return views.column_by_name(self, key)

    # ---- index columns and views (see .views, .balance) --------------------------------

    def index_column(self, name: str, missing: Any = views.RAISE) -> npt.NDArray[Any]:
        """The values of index column ``name`` for every record, in dataset order, read
        from the files' indexes (no record is read).

        Index columns are written with the data (``TFRecordWriter(..., index=True,
        index_columns=["label"])``) or built (``tfr index --columns label``,
        ``Index.build(path, columns=[...])``): see ``docs/index-columns.md``.

        Args:
            name: the column (a scalar int64 or bytes feature).
            missing: the value for records without exactly one value of the column;
                by default such a record raises.

        Returns:
            ``int64`` array, or an object array of ``bytes``.

        Raises:
            ExampleParseError: a record has no single value (missing, a list of
                another length, another kind, not an Example) and ``missing`` is not
                given: it names the file, the record and its offset.
            InvalidArgumentError: a file's index has no such column (the message says
                how to add it).

        Example:
            >>> import os, tempfile, tfrecord_engine as tfe
            >>> path = os.path.join(tempfile.mkdtemp(), "c.tfrecord")
            >>> with tfe.TFRecordWriter(path, index=True, index_columns=["label"]) as w:
            ...     w.write_many(tfe.encode_example({"label": [i % 3]}) for i in range(5))
            5
            >>> tfe.RecordDataset(path).index_column("label")
            array([0, 1, 2, 0, 1])
        """
        return views.index_column(self, name, missing)

    def _with_view(self, view: views.Selection) -> RecordDataset:
        """A copy over the same files holding the records of ``view`` (a fresh epoch
        count: a view's epochs are its own)."""
        return self._copy(view=view, next_epoch={})

    def select(self, indices: Sequence[int] | npt.NDArray[Any] | slice) -> RecordDataset:
        """A view of the records at ``indices`` (ints, a boolean mask or a slice), in
        that order: a dataset of its own (see :mod:`.views`).

        >>> import os, tempfile, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "v.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True) as w:
        ...     w.write_many([b"a", b"b", b"c", b"d"])
        4
        >>> view = tfe.RecordDataset(path).select([3, 1])
        >>> len(view), view[0], list(view.batches(2))
        (2, b'd', [[b'd', b'b']])
        """
        return views.select(self, indices)

    def filter(
        self,
        predicate: Callable[[Any], Any],
        columns: str | Sequence[str],
        *,
        missing: Any = views.RAISE,
    ) -> RecordDataset:
        """A view of the records whose ``columns`` ``predicate`` accepts (vectorized:
        it gets the column array, or a dict of them, and returns a boolean array).
        From the index columns when every file's index has them (no record is read),
        else from one read of the records. ``missing`` as for :meth:`index_column`.

        >>> import os, tempfile, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "f.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True, index_columns=["y"]) as w:
        ...     w.write_many(tfe.encode_example({"y": [i]}) for i in range(6))
        6
        >>> len(tfe.RecordDataset(path).filter(lambda y: y % 2 == 0, "y"))
        3
        """
        return views.filter_records(self, predicate, columns, missing)

    def where(self, **conditions: Any) -> RecordDataset:
        """A view of the records whose columns equal the given values (a list, tuple,
        set or array: any of them): ``ds.where(label=3)``, ``ds.where(label=[1, 2])``.
        A record without a value of a column never matches. Columns as for
        :meth:`filter`."""
        return views.where(self, conditions)

    def take(self, n: int) -> RecordDataset:
        """A view of the first ``n`` records (``-1``: all), as ``tf.data``'s ``take``."""
        return views.take(self, n)

    def skip(self, n: int) -> RecordDataset:
        """A view of the records after the first ``n`` (``-1``: none), as
        ``tf.data``'s ``skip``."""
        return views.skip(self, n)

    def train_test_split(
        self,
        test_size: float | None = None,
        train_size: float | None = None,
        *,
        seed: int = 0,
        shuffle: bool = True,
        stratify_by_column: str | None = None,
    ) -> tuple[RecordDataset, RecordDataset]:
        """``(train, test)`` views, disjoint and of exact sizes, as Hugging Face's
        ``train_test_split`` (see :func:`.views.train_test_split`).

        >>> import os, tempfile, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "s.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True) as w:
        ...     w.write_many([bytes([i]) for i in range(10)])
        10
        >>> train, test = tfe.RecordDataset(path).train_test_split(test_size=0.2, seed=0)
        >>> len(train), len(test)
        (8, 2)
        """
        return views.train_test_split(
            self,
            test_size,
            train_size,
            seed=seed,
            shuffle=shuffle,
            stratify_by_column=stratify_by_column,
        )

    def read_salvaged(self, indices: IntArray) -> tuple[list[bytes | None], list[DamageReport]]:
        """Reads ``indices`` one by one: ``None`` and a report for each damaged record.

        The slow path after a batch read failed a CRC check under ``"stop"``/``"skip"``.
        """
        got = [self._read_or_report(i) for i in indices.tolist()]
        reports = [r for r in got if isinstance(r, DamageReport)]
        return [r if isinstance(r, bytes) else None for r in got], reports

    def _read_or_report(self, i: int) -> bytes | DamageReport:
        try:
            return self.read_raw([i])[0]
        except DataLossError as err:
            i = int(self._records(np.array([i], np.int64))[0])  # (its number in the files)
            f = int(np.searchsorted(self._starts, i, "right")) - 1
            length = int(self._open()[f].index.lengths[i - int(self._starts[f])])
            return DamageReport(
                err.path, err.record_index, err.offset, length + framing.FRAME_OVERHEAD, err.reason
            )

    def __iter__(self) -> Iterator[Any]:
        """Yields every record in file order (read in chunks of 1,024).

        Follows ``on_damage`` for records whose CRC fails (see the class docstring).
        """
        n = len(self)
        for start in range(0, n, 1024):
            indices = np.arange(start, min(start + 1024, n))
            kept = indices.tolist()
            try:
                chunk = self.read_raw(indices)
            except DataLossError as exc:
                if self.on_damage == "raise":
                    locate(exc, self)
                    raise
                salvaged, reports = self.read_salvaged(indices)
                stop = self.on_damage == "stop" and bool(reports)
                if stop:
                    salvaged = salvaged[: salvaged.index(None)]
                    del reports[1:]
                report = reporter(self.on_damage_report)
                for r in reports:
                    report(r)
                chunk = [r for r in salvaged if r is not None]
                kept = [i for i, r in zip(kept, salvaged, strict=False) if r is not None]
                if stop:
                    yield from self._one_by_one(chunk, kept)
                    return
            yield from self._one_by_one(chunk, kept)

    def _one_by_one(self, chunk: list[bytes], indices: list[int]) -> Iterator[Any]:
        if self.features is None and self._output is None:
            yield from chunk
            return
        # Per record, so an error surfaces at its record, after the ones before it.
        for i, record in zip(indices, chunk, strict=True):
            try:
                sample = record if self.features is None else self._sample(record)
            except ParseError as exc:
                locate(exc, self, i)
                raise
            yield self._out_one(sample, i)

    def __getitems__(self, indices: Sequence[int] | IntArray) -> list[Any]:
        """The records at ``indices`` as a list, one item per record (PyTorch's contract).

        ``torch.utils.data.DataLoader`` calls this with each batch of sampler indices and
        hands the list straight to ``collate_fn``; ``Subset`` and ``random_split``
        forward to it. Raw datasets give ``bytes``; with ``features`` each item is a
        sample as ``ds[i]`` returns it (``default_collate`` batches the fixed-size
        kinds, :func:`tfrecord_engine.collate` every kind). Up to ``SMALL_BATCH`` records
        are read and decoded record by record (``ds[i]``'s decoder; a batch decode's
        set-up costs more for a few records); more are cut from one batch decode, as fast
        as ``ds[indices]``, which returns the columnar batch dict.

        Raises:
            OutOfRangeError: an index outside ``[-len, len)`` (an ``IndexError``).
            ParseError: a record does not match ``features`` (it names the file, the
                record and its offset).
        """
        idx = record_indices(indices)  # (floats refused, never truncated)
        try:
            if self.features is None:
                return self._out_many(self.read_raw(idx), idx)
            few = self._few(idx, scalars=False)
            if few is not None:
                single = self._single_decoder()
                samples = single.samples(few) if single.scalars else single.sample_list(few)
                if samples is not None:
                    return self._out_many(samples, idx)
            self._open()
            return self._out_many(self._samples(self._normalize(idx)), idx)
        except (ParseError, DataLossError) as exc:
            locate(exc, self, idx)
            raise

    def _getitems(self, indices: Sequence[int] | IntArray) -> list[Any]:
        """Grain's batched read hook: the same list of records as :meth:`__getitems__`."""
        return self.__getitems__(indices)

    # ---- epochs ------------------------------------------------------------------------

    def batches(  # noqa: PLR0917 - the public contract takes these positionally
        self,
        batch_size: int,
        shuffle: Shuffle = False,
        seed: int = 0,
        epoch: int | None = None,
        shard_index: int = 0,
        shard_count: int = 1,
        drop_remainder: bool = False,
        state: Mapping[str, Any] | None = None,
        *,
        pad_remainder: bool = False,
        readahead: int = 2,
        workers: int = 0,
        strings: Literal["keep", "drop"] = "keep",
        in_memory: bool | None = None,
        balance: str | Balance | None = None,
    ) -> RecordBatchIterator:
        """Iterates one epoch of this shard in batches (see :mod:`tfrecord_engine.data.sampler`).

        Args:
            batch_size: records per batch.
            shuffle: ``False``; ``True`` for a uniform permutation of all records of all
                files; or a :class:`~tfrecord_engine.data.sampler.BlockShuffle`.
            seed, epoch: the order is a pure function of these, the dataset length and
                the shard layout. ``epoch=None`` (default) resumes the epoch of
                ``state`` when one is given; otherwise a shuffled call runs the next
                epoch (``0``, then ``1``, ... for each shuffled call without ``epoch=``,
                as ``tf.data``'s ``reshuffle_each_iteration``), so a plain ``for`` loop
                over epochs sees a new order each time, and an unshuffled call runs
                epoch ``0`` (its order does not depend on it). Epochs are counted per
                shard layout ``(shard_index, shard_count)``, so one process iterating
                every shard of an epoch gives each shard the same epoch. An explicit
                ``epoch=N`` pins that order and leaves the count alone; the iterator's
                ``get_state()`` records the epoch used, and resuming from it without
                ``epoch=`` makes the next shuffled call of that layout run the epoch
                after it. A pickled copy of the dataset goes on from its original's
                count (each copy then counts on its own).
            shard_index, shard_count: this worker's share; every record lands in exactly
                one shard and shard sizes differ by at most one.
            drop_remainder: drop this shard's last partial batch.
            state: resume from ``get_state()`` (or ``sampler.merge_states``).
            pad_remainder: yield full-size batches with a mask, and the same number of
                batches on every shard: raw batches become :class:`PaddedBatch`, parsed
                batches get a boolean ``"mask"`` entry. Every record is still counted
                exactly once (where the mask is True).
            readahead: chunks of about 4,096 records (in file order, of about 8 MB
                at most, but at least one batch) prepared ahead on a worker thread
                (read, CRC-checked, decoded); ``0`` prepares each chunk on demand.
                Output and order are the same whatever the value.
            workers: decode in this many worker processes instead of the read-ahead
                thread (parsed datasets: decoding then runs on several cores and the
                consumer only receives finished arrays; see
                :mod:`tfrecord_engine.data.procpool`). The processes start on first use
                (~0.3 s) and are kept for later epochs until :meth:`close`. Output,
                order, errors and damage reports are the same whatever the value; the
                files must be readable by other processes (not ``memory://``), and
                ``decoder.stats`` then counts only this process's decoding.
                ``readahead`` chunks are queued ahead beyond one per worker.
            strings: ``"keep"`` (default) returns string features as object arrays of
                ``bytes``; ``"drop"`` leaves every string feature out of the batches, so
                that the rest goes to ``jax.device_put`` or other numeric-only consumers
                as it is (parsed datasets only).
            in_memory: for a shuffled epoch in this process (``workers=0``) over
                uncompressed local files: read each file whole into memory (one
                sequential pass, into huge pages where the system has them, checking
                every record's CRC as it comes in) and gather records from that copy,
                instead of copying each scattered record out of the file on its own
                (~1.4 µs a small record, which made shuffled epochs about 2.5 times
                slower than sequential ones). A damaged record still raises (or is
                reported) at the batch that holds it, exactly as without the copy.
                ``None`` (default) does so when the files total at most
                :data:`IN_MEMORY_LIMIT` bytes (1 GiB, or an eighth of the machine's
                memory if less); ``True`` whatever their size, ``False`` never. The
                copy is one per file, shared by concurrent epochs of this dataset,
                and a snapshot of the files as indexed. When the last epoch holding it
                ends or is closed, it is kept for the next shuffled epoch (which then
                starts at once), unless the file changed meanwhile (device, inode, size
                or modification time, or a change less than 3 s before the read): the
                copies kept for all datasets of the process stay within
                :data:`IN_MEMORY_LIMIT` bytes, the least recently used dropped first;
                :meth:`close` drops this dataset's (docs/reliability.md). Output is the
                same either way.
            balance: an index column name (or a :class:`~tfrecord_engine.Balance`):
                class-balanced epochs, each class of the column drawn equally often
                (by default as many records of each as the smallest class has, a new
                sample each epoch; see :mod:`tfrecord_engine.data.balance`). Epochs
                count as shuffled ones do; ``shuffle``, shards and ``state`` apply to
                the balanced order.

        Returns:
            an iterator of ``list[bytes]`` (or parsed batch dicts) with ``get_state()``.
        """
        check_batch_arguments(
            batch_size=batch_size,
            seed=seed,
            epoch=epoch,
            shard_index=shard_index,
            shard_count=shard_count,
            readahead=readahead,
            workers=workers,
        )
        layout = (shard_index, shard_count)
        used, before = self._take_epoch(epoch, shuffle or balance is not None, state, layout)
        try:
            return self._batches(
                batch_size,
                shuffle,
                seed,
                used,
                shard_index,
                shard_count,
                drop_remainder,
                state,
                pad_remainder=pad_remainder,
                readahead=readahead,
                workers=workers,
                strings=strings,
                in_memory=in_memory,
                order=None if balance is None else self._balanced(balance, seed, used),
            )
        except BaseException:
            if before is not None:
                with self._epoch_lock:
                    if self._next_epoch.get(layout) == used + 1:
                        self._next_epoch[layout] = before  # a refused call starts no epoch
            raise

    def _balanced(self, balance: str | Balance, seed: int, epoch: int) -> BalancedOrder:
        spec = as_balance(balance)
        return BalancedOrder(balanced_positions(self, spec, seed, epoch), spec)

    def _take_epoch(
        self,
        epoch: int | None,
        shuffle: Shuffle,
        state: Mapping[str, Any] | None,
        layout: tuple[int, int],
    ) -> tuple[int, int | None]:
        """The epoch a ``batches`` call runs, and the count before it took one (``None``
        when the count did not move)."""
        if epoch is not None:
            return epoch, None
        resumed = None if state is None else state.get("epoch")
        if state is not None and (
            isinstance(resumed, bool) or not isinstance(resumed, int) or resumed < 0
        ):
            raise InvalidArgumentError(f"cannot resume: state has epoch={resumed!r}")
        with self._epoch_lock:
            # Under the lock: threads starting epochs at once each get their own.
            before = self._next_epoch.get(layout, 0)
            used: int = resumed if isinstance(resumed, int) else before if shuffle else 0
            if not shuffle:
                return used, None
            self._next_epoch[layout] = used + 1
        return used, before

    def _batches(  # noqa: PLR0917 - batches' arguments, the epoch decided
        self,
        batch_size: int,
        shuffle: Shuffle,
        seed: int,
        epoch: int,
        shard_index: int,
        shard_count: int,
        drop_remainder: bool,
        state: Mapping[str, Any] | None,
        *,
        pad_remainder: bool,
        readahead: int,
        workers: int,
        strings: Literal["keep", "drop"],
        in_memory: bool | None = None,
        order: BalancedOrder | None = None,
    ) -> RecordBatchIterator:
        # (A balanced epoch runs over the positions of its order: see .balance.)
        sampler = (IndexBatchIterator if order is None else order.batches)(
            len(self) if order is None else len(order),
            batch_size,
            shuffle=shuffle,
            seed=seed,
            epoch=epoch,
            shard_index=shard_index,
            shard_count=shard_count,
            drop_remainder=drop_remainder,
            pad_remainder=pad_remainder,
            state=state,
        )
        slow = [
            (r.path, r.sequential_reason)
            for r in self._open()
            if (shuffle or order is not None)
            and isinstance(r, CompressedFileRecords)
            and r.sequential_only
        ]
        if slow:
            path, why = slow[0]
            raise InvalidArgumentError(
                f"a shuffled epoch needs random access, but {path} can only be read "
                f"forward: {why}. Read it with shuffle=False, or rewrite it with "
                "`tfr convert` or TFRecordWriter(..., index=True), which saves restart "
                "points with the data"
            )
        if pad_remainder and self.features is not None and MASK_KEY in self.features:
            raise InvalidArgumentError(
                f"pad_remainder adds a {MASK_KEY!r} entry, which is also a feature name"
            )
        if readahead < 0:
            raise InvalidArgumentError(f"readahead must be >= 0, got {readahead}")
        if workers < 0:
            raise InvalidArgumentError(f"workers must be >= 0, got {workers}")
        if strings not in ("keep", "drop"):
            raise InvalidArgumentError(f"strings must be 'keep' or 'drop', got {strings!r}")
        drop: frozenset[str] = frozenset()
        if strings == "drop":
            if self.features is None:
                raise InvalidArgumentError("strings='drop' needs a dataset with features")
            drop = frozenset(
                k for k, f in self.features.items() if getattr(f, "dtype", None) == "string"
            )
        return RecordBatchIterator(
            self,
            sampler,
            chunk_records=self._chunk_records(shuffle),
            readahead=readahead,
            workers=workers,
            drop_keys=drop,
            hold=self._to_hold(shuffle, workers, in_memory),
            keep=IN_MEMORY_LIMIT,
        )

    def _chunk_records(self, shuffle: Shuffle) -> int:
        """Records per read-ahead chunk: in file order, no more than :data:`CHUNK_BYTES`
        of records of the mean size (shuffled epochs keep theirs)."""
        if shuffle:
            return DEFAULT_CHUNK_RECORDS
        return max(1, min(DEFAULT_CHUNK_RECORDS, int(CHUNK_BYTES // max(self._record_bytes, 1))))

    def _to_hold(
        self, shuffle: Shuffle, workers: int, in_memory: bool | None
    ) -> list[LocalFileRecords]:
        """The files a shuffled epoch reads whole into memory (see ``batches``)."""
        if not shuffle or workers > 0 or in_memory is False:
            return []
        readers = self._open()
        if not all(isinstance(r, LocalFileRecords) for r in readers):
            return []
        local = cast("list[LocalFileRecords]", readers)
        total = sum(r.index.data_size for r in local)
        if in_memory is None and total > IN_MEMORY_LIMIT:
            return []
        return local

    # ---- decode worker processes -------------------------------------------------------

    def _take_pool(self, workers: int, slots: int) -> DecodePool:
        """An idle pool of ``workers`` processes with ``slots`` slots, or a new one.

        Pools in use stay listed in ``_pools`` too, so that :meth:`close` stops them.
        """
        with _POOLS_LOCK:
            # A forked copy of this dataset must not talk to its parent's workers.
            self._pools = [p for p in self._pools if p.owner == os.getpid() and not p.broken]
            for pool in self._pools:
                if not pool.in_use and pool.workers == workers and pool.slots == slots:
                    pool.in_use = True
                    return pool
        pool = DecodePool(self, workers, slots=slots)
        pool.in_use = True
        with _POOLS_LOCK:
            self._pools.append(pool)
        return pool

    def _return_pool(self, pool: DecodePool) -> None:
        """Keeps a pool for the next epoch (one per shape), or stops it: a pool that
        saw an error or an interrupt, or still has replies unread, is never reused."""
        with _POOLS_LOCK:
            pool.in_use = False
            keep = not (
                pool.broken
                or pool.queued
                or self._readers is None
                or pool not in self._pools  # (the dataset was closed meanwhile)
                or any(
                    p is not pool
                    and not p.in_use
                    and p.workers == pool.workers
                    and p.slots == pool.slots
                    for p in self._pools
                )
            )
            if not keep and pool in self._pools:
                self._pools.remove(pool)
        if not keep:
            pool.close()


class RecordBatchIterator(Iterator[Any]):
    """Batches of one epoch's shard; ``get_state()`` returns a small plain dict.

    Batches are prepared ahead on a worker thread, a chunk of about ``chunk_records``
    records at a time (read with one gather, CRC-checked, decoded with one lockstep
    pass, then sliced into batches). A chunk that holds damage or a parse error is
    redone batch by batch, so every batch before the bad one is delivered and the error
    surfaces at the batch that holds it, exactly as without read-ahead. A batch counts
    as delivered only when returned, so ``get_state()`` never runs ahead of the caller.
    """

    def __init__(
        self,
        dataset: RecordDataset,
        sampler: IndexBatchIterator,
        *,
        chunk_records: int = DEFAULT_CHUNK_RECORDS,
        readahead: int = 2,
        workers: int = 0,
        drop_keys: frozenset[str] = frozenset(),
        hold: Sequence[LocalFileRecords] = (),
        keep: int = 0,
    ) -> None:
        self._dataset = dataset
        self._drop_keys = drop_keys
        # Files to read whole before the first chunk (a shuffled epoch; see batches'
        # in_memory), held until the epoch ends or closes; their copies are then kept
        # for the next epoch within ``keep`` bytes for all files (LocalFileRecords.release).
        self._to_hold = list(hold)
        self._keep = keep
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
        chunks = _chunks(plan, per_chunk)
        self._work: Iterator[list[Ready]] | None
        if workers > 0:
            pool = dataset._take_pool(workers, workers + max(1, readahead))
            self._work = PoolStream(pool, chunks, dataset._return_pool)
        elif readahead > 0:
            self._work = ReadAhead(chunks, self._prepare, workers=1, depth=readahead)
        else:
            self._work = ReadAhead(chunks, self._prepare, workers=0)

    def _prepare(self, batches: list[IndexBatch]) -> list[Ready]:
        if self._to_hold:
            self._hold()
        return prepare_chunk(self._dataset, batches)

    def _hold(self) -> None:
        with self._hold_lock:
            # (On the read-ahead thread: close() may have come first.)
            while self._to_hold and not self._closed:
                reader = self._to_hold.pop()
                reader.hold(self._dataset.verify)
                self._held.append(reader)

    def _release(self) -> None:
        with self._hold_lock:
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
            self._pending.popleft()
            self.sampler.commit(ready.batch)
            if ready.output is not None:
                if self._drop_keys:
                    kept = {k: v for k, v in ready.output.items() if k not in self._drop_keys}
                    return self._dataset._out_batch(kept)
                return self._dataset._out_batch(ready.output)

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


def _chunks(plan: IndexBatchIterator, per_chunk: int) -> Iterator[list[IndexBatch]]:
    chunk: list[IndexBatch] = []
    for batch in plan:
        chunk.append(batch)
        if len(chunk) == per_chunk:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


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
