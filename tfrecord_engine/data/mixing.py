"""``sample_from_datasets``: datasets mixed in exact proportions, resumable.

One pass of a mix is a fixed sequence of *positions*. Position ``p`` draws the next
record from the source :mod:`.interleave` assigns to it (a low-discrepancy schedule: after
``N`` positions of a phase each source has given ``floor`` or ``ceil`` of ``w_j N``
records, so any window of ``W`` positions holds ``w_j W`` of them to within less than 2).
Which record a source gives next is its own epoch order: its records in file order, or
with ``shuffle`` a seeded permutation of them (:func:`~.sampler.epoch_order`, one seed per
source, derived from ``(seed, source number)``), so no record is given twice in a pass.

An epoch is then an ordinary :class:`~.sampler.IndexBatchIterator` over the positions,
in order (never permuted: that would spoil the proportions), whose batches are handed
out as the records at those positions (:class:`MappedBatches`) and read by a
:class:`~.leaves.LeafSource` over every dataset of the mix. So sharding, padding,
read-ahead, decode workers, damage handling and the resumable state are those of
``RecordDataset.batches``: shard ``k`` of ``K`` is the ``k``-th contiguous slice of the
positions (itself a window, so exactly mixed), and the state counts positions. Resuming
on another number of shards: ``tfe.merge_states`` of every shard's state records which
positions were delivered; the positions left are split again, contiguously, among the
new shards (each record still exactly once; each new shard's share is made of at most
a few runs of consecutive positions, each exactly mixed).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError, InvalidArgumentTypeError, OutOfRangeError
from .dataset import RecordBatchIterator, RecordDataset
from .epochs import start_epoch
from .held_shared import SharedCopies
from .interleave import Schedule, integer_weights, schedule
from .leaves import LeafSource, check_alike
from .sampler import BlockShuffle, IndexBatch, IndexBatchIterator, Shuffle, epoch_order

__all__ = ["MappedBatches", "MixedDataset", "MixedEpoch", "sample_from_datasets"]

IntArray = npt.NDArray[np.int64]
# Epoch maps (position -> record) kept per mix: the epoch being read and the next one.
_CACHED_EPOCHS = 2


def sample_from_datasets(
    datasets: Sequence[RecordDataset | MixedDataset],
    weights: Sequence[float] | None = None,
    seed: int | None = 0,
    stop_on_empty_dataset: bool = False,
) -> MixedDataset:
    """Mixes ``datasets`` in the proportions ``weights``, exactly (``tf.data``'s name).

    Unlike TensorFlow's random draws, the proportions hold in every stretch of records:
    after ``N`` records of the pass each source has given ``floor`` or ``ceil`` of
    ``w_j N`` of them, and any ``W`` consecutive records hold ``w_j W`` of a source to
    within less than 2 (see :mod:`tfrecord_engine.data.interleave`).

    Args:
        datasets: :class:`~tfrecord_engine.RecordDataset` objects of equal ``features``
            (and ``on_damage``), or other mixes.
        weights: one weight >= 0 per dataset, in any scale (default: equal). Used as
            exact fractions when they have a common denominator up to 65,536 (0.7/0.3,
            1/3, small integers), else rounded to multiples of 1/65,536. A dataset of
            weight 0 is left out, as TensorFlow does.
        seed: which of the equally exact interleaves is used (ties between sources) and
            the default seed of :meth:`MixedDataset.batches`; ``None`` is 0 (a mix is
            always deterministic).
        stop_on_empty_dataset: ``True`` ends the pass when a source with no record left
            is due (as TensorFlow); ``False`` (default) goes on with the others, their
            weights renormalized, until every source is used up.

    Returns:
        a :class:`MixedDataset`: ``len()``, random access, ``batches(...)``.

    Raises:
        InvalidArgumentError: no datasets, weights that are not one finite number >= 0
            per dataset (not all 0), or datasets whose records decode differently.

    Example:
        >>> import os, tempfile, tfrecord_engine as tfe
        >>> d = tempfile.mkdtemp()
        >>> for name, n in (("a", 7), ("b", 3)):
        ...     with tfe.TFRecordWriter(os.path.join(d, name), index=True) as w:
        ...         w.write_many([b"%s%d" % (name.encode(), i) for i in range(n)])
        7
        3
        >>> a, b = (tfe.RecordDataset(os.path.join(d, n)) for n in "ab")
        >>> mix = tfe.sample_from_datasets([a, b], weights=[0.7, 0.3])
        >>> len(mix), [r[:1] for r in mix[:10]]
        (10, [b'a', b'a', b'b', b'a', b'a', b'b', b'a', b'a', b'a', b'b'])
    """
    return MixedDataset(datasets, weights, seed, stop_on_empty_dataset)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """A mix's pass, fixed once: its schedule and where each source's records go."""

    schedule: Schedule
    by_source: IntArray  # positions grouped by source, in order
    bounds: list[int]  # source j's positions: by_source[bounds[j]:bounds[j + 1]]
    offsets: list[int]  # source j's first record in the numbering of the leaves


def _shuffle_key(shuffle: Shuffle) -> Any:
    if isinstance(shuffle, BlockShuffle):
        return {"block_size": shuffle.block_size, "window": shuffle.window}
    return bool(shuffle)


def _source_seed(seed: int, source: int) -> int:
    """Source ``source``'s own seed: its order is independent of the others'."""
    return int(np.random.SeedSequence([seed, source]).generate_state(1, np.uint32)[0])


class MixedDataset:
    """Datasets mixed in exact proportions (see :func:`sample_from_datasets`).

    A random-access source of the records of one unshuffled pass (``len()``,
    ``mix[i]``, ``mix[list]``, ``__getitems__``: what PyTorch map-style loaders and
    Grain use), :meth:`epoch_view` for the pass of a shuffled epoch, and
    :meth:`batches` for epochs in batches with exact sharding and a resumable state.
    """

    def __init__(
        self,
        datasets: Sequence[RecordDataset | MixedDataset],
        weights: Sequence[float] | None = None,
        seed: int | None = 0,
        stop_on_empty_dataset: bool = False,
    ) -> None:
        if isinstance(datasets, (RecordDataset, MixedDataset)) or not isinstance(
            datasets, Sequence
        ):
            raise InvalidArgumentTypeError(
                f"datasets must be a list of datasets, got {type(datasets).__name__}"
            )
        if not datasets:
            raise InvalidArgumentError("sample_from_datasets needs at least one dataset")
        for j, ds in enumerate(datasets):
            if not isinstance(ds, (RecordDataset, MixedDataset)):
                raise InvalidArgumentTypeError(
                    f"dataset {j} is a {type(ds).__name__}: mix tfe.RecordDataset objects "
                    "or mixes of them"
                )
        seed = 0 if seed is None else seed
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvalidArgumentError(f"seed must be an int >= 0, got {seed!r}")
        #: The mixed datasets, in the order given.
        self.datasets: tuple[RecordDataset | MixedDataset, ...] = tuple(datasets)
        self._units = integer_weights(weights, len(datasets))
        self.seed = seed
        self.stop_on_empty_dataset = bool(stop_on_empty_dataset)
        check_alike(self.leaves)
        self._reset()

    def _reset(self) -> None:
        self._plan_cache: _Plan | None = None
        self._source: LeafSource | None = None
        self._epochs: dict[tuple[Any, ...], IntArray] = {}
        self._lock = threading.RLock()
        self._next_epoch: dict[tuple[int, int], int] = {}

    # ---- what the mix is ---------------------------------------------------------------

    @property
    def leaves(self) -> list[RecordDataset]:
        """Every RecordDataset of the mix, nested mixes flattened, in order."""
        return [
            leaf
            for ds in self.datasets
            for leaf in (ds.leaves if isinstance(ds, MixedDataset) else [ds])
        ]

    @property
    def paths(self) -> list[str]:
        """The files of every dataset of the mix, in order."""
        return [path for leaf in self.leaves for path in leaf.paths]

    @property
    def weights(self) -> tuple[Fraction, ...]:
        """The weights in use, as exact fractions summing to 1."""
        total = sum(self._units)
        return tuple(Fraction(a, total) for a in self._units)

    @property
    def features(self) -> Any:
        """The datasets' feature spec (``None``: raw records)."""
        return self.leaves[0].features

    @property
    def counts(self) -> tuple[int, ...]:
        """How many records each dataset gives in one pass."""
        return self._plan().schedule.taken

    def __len__(self) -> int:
        """The number of records one pass yields (exactly)."""
        return len(self._plan().schedule.sources)

    def _plan(self) -> _Plan:
        with self._lock:
            if self._plan_cache is None:
                m = len(self.datasets)
                seeds = np.random.SeedSequence([self.seed, m])
                rank = np.random.Generator(np.random.PCG64(seeds)).permutation(m)
                sizes = [len(ds) for ds in self.datasets]
                sched = schedule(
                    sizes, self._units, rank.tolist(), stop_on_empty=self.stop_on_empty_dataset
                )
                by_source = np.argsort(sched.sources, kind="stable")
                bounds = np.concatenate([[0], np.cumsum(sched.taken)]).tolist()
                records = [
                    sum(len(leaf) for leaf in ds.leaves) if isinstance(ds, MixedDataset) else n
                    for ds, n in zip(self.datasets, sizes, strict=True)
                ]
                offsets = np.concatenate([[0], np.cumsum(records)]).tolist()
                self._plan_cache = _Plan(sched, by_source, bounds, offsets)
            return self._plan_cache

    def leaf_source(self) -> LeafSource:
        """The records of :attr:`leaves` numbered one after the other (what epochs read)."""
        with self._lock:
            if self._source is None:
                self._source = LeafSource(self.leaves)
            return self._source

    def identity(self) -> str:
        """A digest of what fixes the pass: sizes, weights, seed, stop rule (nested too)."""
        parts = [ds.identity() if isinstance(ds, MixedDataset) else len(ds) for ds in self.datasets]
        text = json.dumps([parts, self._units, self.seed, self.stop_on_empty_dataset])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __repr__(self) -> str:
        """Names the datasets by a digest of their reprs (Grain compares reprs)."""
        inner = hashlib.sha256("\n".join(map(repr, self.datasets)).encode()).hexdigest()[:16]
        shares = ":".join(str(w) for w in self.weights)
        return (
            f"MixedDataset({len(self.datasets)} datasets, id={inner}, weights={shares}, "
            f"seed={self.seed}, stop_on_empty_dataset={self.stop_on_empty_dataset})"
        )

    # ---- epoch orders ------------------------------------------------------------------

    def epoch_records(
        self, shuffle: Shuffle = False, seed: int | None = None, epoch: int = 0
    ) -> IntArray:
        """Position ``p`` of this epoch's pass -> its record's number in :meth:`leaf_source`
        (read-only; kept for the two most recent epochs)."""
        seed = self.seed if seed is None else seed
        key = (json.dumps(_shuffle_key(shuffle)), seed if shuffle else 0, epoch if shuffle else 0)
        with self._lock:
            cached = self._epochs.get(key)
            if cached is not None:
                return cached
        plan = self._plan()
        out = np.empty(len(plan.schedule.sources), dtype=np.int64)
        for j, ds in enumerate(self.datasets):
            take = plan.schedule.taken[j]
            if not take:
                continue
            own = _source_seed(seed, j)
            if isinstance(ds, MixedDataset):
                order = ds.epoch_records(shuffle, own, epoch)
            else:
                order = epoch_order(len(ds), shuffle=shuffle, seed=own, epoch=epoch)
            out[plan.by_source[plan.bounds[j] : plan.bounds[j + 1]]] = (
                order[:take] + plan.offsets[j]
            )
        out.flags.writeable = False
        with self._lock:
            self._epochs[key] = out
            while len(self._epochs) > _CACHED_EPOCHS:
                del self._epochs[next(iter(self._epochs))]
        return out

    def epoch_view(
        self, shuffle: Shuffle = False, seed: int | None = None, epoch: int = 0
    ) -> MixedEpoch:
        """The pass of one epoch as a random-access source (for Grain, map-style loaders).

        ``view[i]`` is the ``i``-th record that ``batches(..., shuffle, seed, epoch)``
        delivers (over all shards).
        """
        return MixedEpoch(self, shuffle, self.seed if seed is None else seed, epoch)

    # ---- random access (the unshuffled pass) ------------------------------------------

    def __getitem__(self, key: int | slice | Sequence[int] | IntArray) -> Any:
        """``mix[i]``: the ``i``-th record of the unshuffled pass (as ``ds[i]`` gives it);
        ``mix[list | slice | array]``: a batch (a list of bytes, or parsed columns)."""
        return self.epoch_view()[key]

    def __getitems__(self, indices: Sequence[int] | IntArray) -> list[Any]:
        """The records at ``indices`` of the unshuffled pass, one item per record."""
        return self.epoch_view().__getitems__(indices)

    def _getitems(self, indices: Sequence[int] | IntArray) -> list[Any]:
        """Grain's batched read hook (as :meth:`__getitems__`)."""
        return self.__getitems__(indices)

    # ---- epochs ------------------------------------------------------------------------

    def index_batches(
        self,
        batch_size: int,
        *,
        shuffle: Shuffle = False,
        seed: int | None = None,
        epoch: int = 0,
        shard_index: int = 0,
        shard_count: int = 1,
        drop_remainder: bool = False,
        pad_remainder: bool = False,
        state: Mapping[str, Any] | None = None,
    ) -> MappedBatches:
        """The batches of one shard of one epoch as record numbers of :meth:`leaf_source`
        (what :meth:`batches` reads; the ``tf.data`` bridge plans its chunks with it)."""
        seed = self.seed if seed is None else seed
        mark = {"mix": self.identity(), "mix_shuffle": _shuffle_key(shuffle)}
        if state is not None:
            for key, want in mark.items():
                if state.get(key) != want:
                    raise InvalidArgumentError(
                        f"cannot resume: the state has {key}={state.get(key)!r}, this mix "
                        f"has {key}={want!r} (resume the same mix with the same shuffle)"
                    )
        positions = IndexBatchIterator(
            len(self),
            batch_size,
            shuffle=False,
            seed=seed,
            epoch=epoch,
            shard_index=shard_index,
            shard_count=shard_count,
            drop_remainder=drop_remainder,
            pad_remainder=pad_remainder,
            state=state,
        )
        return MappedBatches(positions, self.epoch_records(shuffle, seed, epoch), mark)

    def mapped(
        self, positions: IndexBatchIterator, shuffle: Shuffle, seed: int | None, epoch: int
    ) -> tuple[RecordDataset, MappedBatches]:
        """For hosts that build their own sampler over the positions (``shuffle=False``):
        what ``RecordBatchIterator`` reads and the sampler that hands out records."""
        seed = self.seed if seed is None else seed
        mark = {"mix": self.identity(), "mix_shuffle": _shuffle_key(shuffle)}
        records = self.epoch_records(shuffle, seed, epoch)
        return self._reader(), MappedBatches(positions, records, mark)

    def _reader(self) -> RecordDataset:
        # RecordBatchIterator needs of its dataset the reads and decoder of a ChunkSource,
        # on_damage_report, verify and the pool hooks: LeafSource has them all.
        return cast("RecordDataset", self.leaf_source())

    def batches(  # noqa: PLR0917 - RecordDataset.batches' signature
        self,
        batch_size: int,
        shuffle: Shuffle = False,
        seed: int | None = None,
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
    ) -> RecordBatchIterator:
        """One epoch of this shard in batches, as ``RecordDataset.batches`` (same arguments).

        ``shuffle`` permutes each dataset's records (a seeded order per dataset and
        epoch); the interleave of the datasets stays exact. ``seed=None`` is the mix's
        seed. ``epoch=None``: the state's epoch, else for shuffled calls the next one
        of this shard layout (0, 1, ...), else 0. Shards are contiguous slices of the
        pass. ``get_state()`` of the iterator is a small dict; resume with
        ``state=``, on another shard layout from ``tfe.merge_states`` of all shards'
        states.

        Raises:
            InvalidArgumentError: invalid arguments, or a state of another mix, shuffle,
                seed or epoch.
        """
        layout = (shard_index, shard_count)
        used = self._epoch_of(epoch, shuffle, state, layout)
        sampler = self.index_batches(
            batch_size,
            shuffle=shuffle,
            seed=seed,
            epoch=used,
            shard_index=shard_index,
            shard_count=shard_count,
            drop_remainder=drop_remainder,
            pad_remainder=pad_remainder,
            state=state,
        )
        out = self._start(
            sampler,
            shuffle,
            pad_remainder=pad_remainder,
            readahead=readahead,
            workers=workers,
            strings=strings,
            in_memory=in_memory,
        )
        if epoch is None and shuffle:
            with self._lock:
                self._next_epoch[layout] = used + 1
        return out

    def epoch(
        self,
        sampler: MappedBatches,
        shuffle: Shuffle = False,
        *,
        readahead: int = 2,
        workers: int = 0,
        strings: Literal["keep", "drop"] = "keep",
        in_memory: bool | None = None,
        share: SharedCopies | None = None,
    ) -> RecordBatchIterator:
        """One epoch over batches a host planned itself (a sampler from :meth:`mapped`
        or :meth:`index_batches`), read, held and chunked as :meth:`batches` does;
        ``share``: as for ``RecordDataset.epoch``."""
        return self._start(
            sampler,
            shuffle,
            pad_remainder=False,  # (the sampler's; batches checks its mask key)
            readahead=readahead,
            workers=workers,
            strings=strings,
            in_memory=in_memory,
            share=share,
        )

    def _start(
        self,
        sampler: MappedBatches,
        shuffle: Shuffle,
        *,
        pad_remainder: bool,
        readahead: int,
        workers: int,
        strings: Literal["keep", "drop"],
        in_memory: bool | None,
        share: SharedCopies | None = None,
    ) -> RecordBatchIterator:
        # Settled as a dataset's epoch over the mix's files is (epochs.start_epoch): the
        # chunk size and read-ahead threads from the files' mean record size, every file
        # held for a shuffled epoch and, in file order, each as the chunks reach it.
        source = self.leaf_source()
        return start_epoch(
            self._reader(),
            sampler,
            source.readers(),
            shuffle=shuffle,
            random_access=bool(shuffle),
            record_bytes=source.record_bytes,
            pad_remainder=pad_remainder,
            readahead=readahead,
            workers=workers,
            strings=strings,
            in_memory=in_memory,
            share=share,
            reached=source.files_reached,
        )

    def _epoch_of(
        self,
        epoch: int | None,
        shuffle: Shuffle,
        state: Mapping[str, Any] | None,
        layout: tuple[int, int],
    ) -> int:
        if epoch is not None:
            return epoch
        if state is not None:
            resumed = state.get("epoch")
            if isinstance(resumed, bool) or not isinstance(resumed, int) or resumed < 0:
                raise InvalidArgumentError(f"cannot resume: state has epoch={resumed!r}")
            return resumed
        if not shuffle:
            return 0
        with self._lock:
            return self._next_epoch.get(layout, 0)

    # ---- lifetime ----------------------------------------------------------------------

    def close(self) -> None:
        """Stops decode workers and closes every dataset (they reopen on next use)."""
        with self._lock:
            source, self._source = self._source, None
        if source is not None:
            source.close()
        for ds in self.datasets:
            ds.close()

    def __enter__(self) -> MixedDataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        return {
            "datasets": self.datasets,
            "units": self._units,
            "seed": self.seed,
            "stop_on_empty_dataset": self.stop_on_empty_dataset,
            "next_epoch": dict(self._next_epoch),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.datasets = tuple(state["datasets"])
        self._units = tuple(state["units"])
        self.seed = state["seed"]
        self.stop_on_empty_dataset = state["stop_on_empty_dataset"]
        self._reset()
        self._next_epoch = dict(state["next_epoch"])


class MixedEpoch:
    """One epoch's pass of a mix as a random-access source (``len``, ``[i]``,
    ``__getitems__``); it pickles as the mix and the epoch's arguments."""

    def __init__(self, mix: MixedDataset, shuffle: Shuffle, seed: int, epoch: int) -> None:
        epoch_order(0, shuffle=shuffle, seed=seed, epoch=epoch)  # checks the arguments
        self.mix = mix
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.mix)

    def __repr__(self) -> str:
        return f"{self.mix!r}.epoch_view({_shuffle_key(self.shuffle)}, {self.seed}, {self.epoch})"

    def _records(self, key: Sequence[int] | IntArray) -> IntArray:
        records = self.mix.epoch_records(self.shuffle, self.seed, self.epoch)
        idx = np.asarray(key, dtype=np.int64).reshape(-1)
        n = len(records)
        bad = (idx < -n) | (idx >= n)
        if bool(np.any(bad)):
            raise OutOfRangeError(
                f"record index {int(idx[np.argmax(bad)])} out of range for a mix of {n} records"
            )
        return records[np.where(idx < 0, idx + n, idx)]

    def __getitem__(self, key: int | slice | Sequence[int] | IntArray) -> Any:
        """``view[i]``: one record (bytes, or a sample dict as ``ds[i]``); a list, slice
        or array of indices: a batch (list of bytes, or the parsed columns)."""
        source = self.mix.leaf_source()
        if isinstance(key, (str, bytes, float)):
            raise InvalidArgumentTypeError(
                f"a mix is indexed by record positions (int, slice, list), not {key!r}"
            )
        if isinstance(key, (int, np.integer)):
            c = int(self._records([int(key)])[0])
            d = int(np.searchsorted(source.starts, c, "right")) - 1
            return source.datasets[d][c - int(source.starts[d])]
        if isinstance(key, slice):
            key = np.arange(len(self), dtype=np.int64)[key]
        records = source.read_raw(self._records(key))
        if source.features is None:
            return records
        return source._out_batch(dict(source.decoder.decode_records(records)))

    def __getitems__(self, indices: Sequence[int] | IntArray) -> list[Any]:
        """The records at ``indices``, one item per record (PyTorch's and Grain's hook)."""
        return self.mix.leaf_source().__getitems__(self._records(indices))

    def _getitems(self, indices: Sequence[int] | IntArray) -> list[Any]:
        return self.__getitems__(indices)


class MappedBatches(IndexBatchIterator):
    """A sampler over a mix's positions whose batches hold the records at them.

    It wraps the position sampler (any :class:`IndexBatchIterator`, e.g. a host's own),
    which counts what is delivered and carries the state; ``peek`` maps the positions
    of each batch to record numbers. ``get_state()`` adds the mix's identity and shuffle.
    """

    def __init__(
        self, positions: IndexBatchIterator, records: IntArray, mark: Mapping[str, Any]
    ) -> None:
        # Deliberately not IndexBatchIterator.__init__: every count lives in `positions`.
        self._positions = positions
        self._map = records
        self._mark = dict(mark)

    def __deepcopy__(self, memo: dict[int, Any]) -> MappedBatches:
        import copy  # noqa: PLC0415 - only read-ahead planning copies samplers

        # The map is read-only and shared; the position cursor is copied.
        return MappedBatches(copy.deepcopy(self._positions, memo), self._map, self._mark)

    @property
    def batch_size(self) -> int:
        """Records per batch."""
        return self._positions.batch_size

    def __len__(self) -> int:
        """Number of batches still to come."""
        return len(self._positions)

    def peek(self) -> IndexBatch:
        """The next batch, as record numbers, without counting it as delivered."""
        batch = self._positions.peek()
        return IndexBatch(self._map[batch.indices], batch.mask)

    def commit(self, batch: IndexBatch) -> None:
        """Counts ``batch`` (from :meth:`peek`) as delivered."""
        self._positions.commit(batch)

    def get_state(self) -> dict[str, Any]:
        """The position sampler's state plus the mix's identity and shuffle."""
        return {**self._positions.get_state(), **self._mark}

    def delivered_positions(self) -> npt.NDArray[np.bool_]:
        """Mask over the pass's positions delivered so far."""
        return self._positions.delivered_positions()

    def slice_positions(self, start: int, stop: int) -> IntArray:
        """Positions of this shard's records ``[start, stop)``."""
        return self._positions.slice_positions(start, stop)
