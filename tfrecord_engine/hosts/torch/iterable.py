"""``RecordIterableDataset``: the batches of one rank's epoch shared among the
DataLoader's workers, epochs counted in shared memory, and torchdata's Stateful
protocol (resume, and states merged to resume on other ranks and workers).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from ...data.collate import collate
from ...data.dataset import RecordBatchIterator, RecordDataset
from ...data.held_shared import SharedCopies
from ...data.mixing import MixedDataset
from ...data.output import check_transform
from ...data.sampler import IndexBatch, IndexBatchIterator, Shuffle
from ...errors import InvalidArgumentError
from .sampler import distributed
from .tensors import prefetch_to_device, to_torch

__all__ = ["MAX_WORKERS", "STATE_VERSION", "RecordIterableDataset", "loader_states"]


#: DataLoader worker ids this module can count epochs for (one shared int64 each).
MAX_WORKERS = 1024
STATE_VERSION = 1
# The shared counter table: [base epoch, merged state pending, main-process iterations,
# worker 0, worker 1, ...].
_BASE = 0
_MERGED = 1
_MAIN = 2


def _slot(worker: int | None) -> int:
    return _MAIN if worker is None else _MAIN + 1 + worker


class _WorkerBatches(IndexBatchIterator):
    """One rank's batch sequence of an epoch, keeping every ``stride``-th batch from
    ``phase`` on (one DataLoader worker's share). Its state is an ordinary sampler state
    positioned at this worker's next batch, so resuming needs no phase."""

    def __init__(self, *args: Any, stride: int, phase: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stride = stride
        state = kwargs.get("state")
        if state is None or (state["position"] == 0 and state["batches"] == 0):
            self._skip(phase)  # a fresh start (a merged state too): go to this worker's first

    def _skip(self, count: int) -> None:
        for _ in range(count):
            try:
                batch = super().peek()
            except StopIteration:
                return
            super().commit(batch)

    def commit(self, batch: IndexBatch) -> None:
        super().commit(batch)
        self._skip(self._stride - 1)

    def __len__(self) -> int:
        return (super().__len__() + self._stride - 1) // self._stride


@dataclasses.dataclass(frozen=True, slots=True)
class _Place:
    """Where an iteration runs: rank and world size, DataLoader worker and worker count."""

    rank: int
    world_size: int
    worker: int | None
    num_workers: int


class RecordIterableDataset(IterableDataset[Any]):
    """Batches of a :class:`RecordDataset` as a PyTorch ``IterableDataset``.

    Use it with ``DataLoader(it, batch_size=None, num_workers=N)``: it yields whole
    batches, the dicts of :meth:`RecordDataset.batches` with tensors for their numbers
    and their string arrays as they are (see :func:`to_torch`; raw datasets give lists
    of ``bytes``; with ``transform``, what ``collate_fn`` makes). The arguments of
    :meth:`RecordDataset.batches` mean the same here.

    Args:
        dataset: the records (built with ``features=``, or ``context_features=``/
            ``sequence_features=``, for parsed batches), or a mix
            of datasets (``tfe.sample_from_datasets``: ``shuffle`` then permutes each
            dataset's records, the mix stays exact).
        batch_size, shuffle, seed, drop_remainder: as for ``batches``.
        pad_remainder: full-size batches with a boolean ``"mask"`` entry (raw batches:
            :class:`~tfrecord_engine.data.dataset.PaddedBatch`), and the same number of
            batches on every rank: exact evaluation under DDP (count only where the
            mask is True). Without it, ranks may differ by one batch.
        epoch: the epoch of the first iteration; each later iteration runs the next.
        rank, world_size: this process's share; by default taken from an initialized
            ``torch.distributed`` process group, else ``0`` and ``1``.
        readahead: chunks prepared ahead on a thread in each worker (as for ``batches``).
        strings: ``"keep"`` or ``"drop"`` the string features (as for ``batches``).
        in_memory: as for ``batches``: a shuffled epoch reads uncompressed local files
            whole into memory first, an epoch in order each file as it reaches it (by
            default when they total at most ``IN_MEMORY_LIMIT``). Under
            ``num_workers=N`` the copy is one per machine, shared by the workers
            (docs/workers.md), not one per worker.
        device: iterating in the main process (``num_workers=0``, or a plain ``for``
            loop), move every batch there; a CUDA device gets the next ``prefetch``
            batches copied ahead on a side stream (see :func:`prefetch_to_device`). With
            worker processes, wrap the loader instead:
            ``prefetch_to_device(loader, "cuda")``.
        prefetch: batches copied ahead onto ``device``.
        transform: applied to each record's sample (PyTorch's habit); each batch is
            then read as ``ds.__getitems__`` gives it, transformed sample by sample and
            batched by ``collate_fn`` (default :func:`tfrecord_engine.collate`), in the
            DataLoader worker. ``batch_transform``: applied to each batch handed out.

    Resuming: :meth:`state_dict` / :meth:`load_state_dict` follow torchdata's
    ``StatefulDataLoader`` protocol; a state resumes on the same rank, world size and
    ``num_workers``, and :meth:`merge_states` turns the states of all of them into one
    that resumes on any.

    Example:
        >>> import os, tempfile, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "t.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True) as w:
        ...     w.write_many(tfe.encode_example({"x": [i]}) for i in range(5))
        5
        >>> ds = tfe.RecordDataset(path, features={"x": tfe.FixedLenFeature([], "int64")})
        >>> it = RecordIterableDataset(ds, 2)
        >>> len(it), [b["x"].tolist() for b in it]
        (3, [[0, 1], [2, 3], [4]])
    """

    def __init__(
        self,
        dataset: RecordDataset | MixedDataset,
        batch_size: int,
        shuffle: Shuffle = False,
        seed: int = 0,
        drop_remainder: bool = False,
        *,
        pad_remainder: bool = False,
        epoch: int = 0,
        rank: int | None = None,
        world_size: int | None = None,
        readahead: int = 2,
        strings: Literal["keep", "drop"] = "keep",
        in_memory: bool | None = None,
        device: str | torch.device | None = None,
        prefetch: int = 2,
        transform: Callable[[Any], Any] | None = None,
        batch_transform: Callable[[Any], Any] | None = None,
        collate_fn: Callable[[list[Any]], Any] = collate,
    ) -> None:
        super().__init__()
        self.transform = check_transform(transform)
        self.batch_transform = check_transform(batch_transform, "batch_transform")
        self.collate_fn = collate_fn
        default_rank, default_world = distributed()
        self.rank = default_rank if rank is None else rank
        self.world_size = default_world if world_size is None else world_size
        if epoch < 0:
            raise InvalidArgumentError(f"epoch must be >= 0, got {epoch}")
        if prefetch < 1:
            raise InvalidArgumentError(f"prefetch must be >= 1, got {prefetch}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.drop_remainder = drop_remainder
        self.pad_remainder = pad_remainder
        self.readahead = readahead
        self.strings = strings
        self.in_memory = in_memory
        # The owner of the in-memory copies that this loader's workers share (one per
        # machine; removed when this dataset is collected or the process exits).
        self._copies = SharedCopies()
        self.device = None if device is None else torch.device(device)
        self.prefetch = prefetch
        # Checks every argument as batches() does, and counts this rank's batches.
        probe = dataset.batches(
            batch_size,
            shuffle,
            seed,
            epoch,
            self.rank,
            self.world_size,
            drop_remainder,
            pad_remainder=pad_remainder,
            readahead=0,
            strings=strings,
        )
        self._len = len(probe)
        probe.close()
        # Shared memory: set_epoch in the main process reaches every worker, and
        # non-persistent workers (new copies each epoch) see the epochs run before.
        self._epochs = torch.zeros(_MAIN + 1 + MAX_WORKERS, dtype=torch.int64).share_memory_()  # type: ignore[no-untyped-call]
        self._epochs[_BASE] = epoch
        self._current: RecordBatchIterator | None = None
        self._current_epoch = epoch
        self._resume: dict[str, Any] | None = None
        self._merged: dict[str, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        if self._resume is not None:
            # A copy going to worker processes would drop it: say so instead.
            raise InvalidArgumentError(
                "this RecordIterableDataset holds a state from load_state_dict that resumes "
                "an iteration in this process; to resume DataLoader workers, load the "
                "state with torchdata's StatefulDataLoader.load_state_dict instead"
            )
        # The running iterator (threads, open files) stays in its process.
        state = {k: v for k, v in self.__dict__.items() if k not in ("_current", "_resume")}
        state["_current"] = None
        state["_resume"] = None
        return state

    def __len__(self) -> int:
        """Batches per epoch on this rank (whatever ``num_workers``)."""
        return self._len

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration run ``epoch`` (and the ones after it ``epoch + 1``...),
        in this process and in every DataLoader worker, persistent ones included."""
        if epoch < 0:
            raise InvalidArgumentError(f"epoch must be >= 0, got {epoch}")
        self._epochs[_MERGED:] = 0  # a merged state (load_state_dict) no longer applies
        self._epochs[_BASE] = epoch

    def _place(self) -> _Place:
        info = get_worker_info()
        if info is None:
            return _Place(self.rank, self.world_size, None, 1)
        if info.id >= MAX_WORKERS:
            raise InvalidArgumentError(
                f"RecordIterableDataset counts epochs for at most {MAX_WORKERS} workers"
            )
        return _Place(self.rank, self.world_size, info.id, info.num_workers)

    def __iter__(self) -> Iterator[Any]:
        """Starts the next epoch (or the resumed one) of this rank and worker."""
        place = self._place()
        if self.device is not None and place.worker is not None:
            raise InvalidArgumentError(
                "device= moves batches in the process that iterates; in DataLoader "
                "workers use prefetch_to_device(loader, device) in the main process"
            )
        slot = _slot(place.worker)
        base = int(self._epochs[_BASE])
        state: Mapping[str, Any] | None = None
        if self._resume is not None:
            self._check_place(self._resume, place)  # e.g. a main-process state forked
            epoch = int(self._resume["epoch"])
            state = self._resume["batches"]
            self._resume = None
        else:
            epoch = base + int(self._epochs[slot])
            merged = self._merged
            if merged is not None and int(self._epochs[_MERGED]) and epoch == merged["epoch"]:
                state = merged["batches"]  # the rest of an epoch saved under other layouts
        self._epochs[slot] = epoch - base + 1
        mix = isinstance(self.dataset, MixedDataset)
        sampler: IndexBatchIterator = _WorkerBatches(
            len(self.dataset),
            self.batch_size,
            shuffle=False if mix else self.shuffle,  # a mix orders its own records
            seed=self.seed,
            epoch=epoch,
            shard_index=place.rank,
            shard_count=place.world_size,
            drop_remainder=self.drop_remainder,
            pad_remainder=self.pad_remainder,
            state=state,
            stride=place.num_workers,
            phase=place.worker or 0,
        )
        # An earlier iteration still running (zip(it, it)) keeps going: it closes itself
        # when exhausted or dropped. The state follows the newest one. Every epoch runs
        # through the dataset's own entry point (chunk sizes and in-memory copies as
        # batches() chooses them); in DataLoader workers the copies are shared.
        share = None if place.worker is None else self._copies
        current: RecordBatchIterator
        if isinstance(self.dataset, MixedDataset):
            if self.transform is not None:
                raise InvalidArgumentError(
                    "a per-sample transform= needs a RecordDataset (its samples come from "
                    "__getitems__), not a mix of datasets: transform the mix's whole "
                    "batches with batch_transform= instead"
                )
            _, mapped = self.dataset.mapped(sampler, self.shuffle, self.seed, epoch)
            current = self.dataset.epoch(
                mapped,
                self.shuffle,
                readahead=self.readahead,
                strings=self.strings,
                in_memory=self.in_memory,
                share=share,
            )
        else:
            current = self.dataset.epoch(
                sampler,
                self.shuffle,
                readahead=self.readahead,
                strings=self.strings,
                in_memory=self.in_memory,
                transform=self.transform,
                collate=None if self.transform is None else self.collate_fn,
                share=share,
            )
        self._current = current
        self._current_epoch = epoch
        batches = self._run(current)
        if self.device is not None:
            return prefetch_to_device(batches, self.device, depth=self.prefetch)
        return batches

    def _run(self, current: RecordBatchIterator) -> Iterator[Any]:
        try:
            for batch in current:
                out = to_torch(batch)
                yield out if self.batch_transform is None else self.batch_transform(out)
        finally:
            current.close()

    # ---- torchdata's Stateful protocol -------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Where this copy stands: the epoch and the batches delivered of it.

        A plain dict; StatefulDataLoader takes one per worker after each batch. After an
        epoch's last batch it still names that epoch (with nothing left), so a resume
        from it finishes that epoch and the next iteration runs the next one.
        """
        place = self._place()
        if self._resume is not None:
            return dict(self._resume)
        if self._current is None:
            slot = _slot(place.worker)
            epoch = int(self._epochs[_BASE]) + int(self._epochs[slot])
            batches = None
        else:
            epoch = self._current_epoch
            batches = self._current.get_state()
        return {
            "version": STATE_VERSION,
            "epoch": epoch,
            "rank": place.rank,
            "world_size": place.world_size,
            "num_workers": place.num_workers,
            "worker": place.worker,
            "batches": batches,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Makes the next iteration resume from ``state``.

        ``state`` is one from :meth:`state_dict` (the same rank, world size, worker and
        worker count; StatefulDataLoader passes each worker its own), or one from
        :meth:`merge_states`, which resumes with any ranks and workers: load it into
        the dataset before the loader starts (in every rank), and the next epoch run
        in this process and in the loader's workers is the rest of the saved one.

        Raises:
            InvalidArgumentError: the state is from another rank, world size, worker or
                worker count (the order would differ).
        """
        if state.get("merged"):
            if state.get("version") != STATE_VERSION:
                raise InvalidArgumentError(f"cannot resume from state version {state!r}")
            self._merged = dict(state)
            self.set_epoch(int(state["epoch"]))
            self._epochs[_MERGED] = 1
            return
        self._check_place(state, self._place())
        self._resume = dict(state)

    def merge_states(self, states: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Combines the states of every rank and worker of one epoch into one state that
        resumes with any number of ranks and workers (see :meth:`load_state_dict`).

        Args:
            states: :meth:`state_dict` of each rank x worker, all saved in the same
                epoch (:func:`loader_states` takes them out of StatefulDataLoader's
                states). This dataset must have the arguments they were saved with.

        Raises:
            InvalidArgumentError: not exactly one state per rank and worker of one epoch.
        """
        states = list(states)
        if not states or any(s.get("version") != STATE_VERSION for s in states):
            raise InvalidArgumentError("merge_states needs the states of all ranks and workers")
        first = states[0]
        world, workers, epoch = first["world_size"], first["num_workers"], first["epoch"]
        places = sorted((s["rank"], s["worker"] or 0) for s in states)
        if places != [(r, w) for r in range(world) for w in range(workers)] or any(
            (s["world_size"], s["num_workers"], s["epoch"]) != (world, workers, epoch)
            for s in states
        ):
            raise InvalidArgumentError(
                f"merge_states needs one state per rank 0..{world - 1} and worker "
                f"0..{workers - 1}, all of epoch {epoch}"
            )
        n = len(self.dataset)
        done = np.zeros(n, np.bool_)
        saved: Mapping[str, Any] | None = None
        for s in states:
            inner = s["batches"]
            if inner is None:
                continue  # this worker had not started the epoch
            saved = inner
            for a, b in inner["consumed"]:
                done[a:b] = True
            rank = IndexBatchIterator(
                n,
                self.batch_size,
                shuffle=False if isinstance(self.dataset, MixedDataset) else self.shuffle,
                seed=self.seed,
                epoch=epoch,
                shard_index=s["rank"],
                shard_count=world,
                drop_remainder=self.drop_remainder,
                pad_remainder=self.pad_remainder,
                state={**inner, "position": 0, "batches": 0},
            )
            # Worker w returned the rank's batches w, w + W, ... before its counter.
            worker = s["worker"] or 0
            own = (max(0, int(inner["batches"]) - worker) + workers - 1) // workers
            size = self.batch_size
            for j in range(own):
                at = (worker + j * workers) * size
                done[rank.slice_positions(at, at + size)] = True
        if saved is None:
            return {"version": STATE_VERSION, "merged": True, "epoch": epoch, "batches": None}
        edges = np.flatnonzero(np.diff(np.concatenate([[0], done.astype(np.int8), [0]])))
        consumed = [[int(a), int(b)] for a, b in zip(edges[::2], edges[1::2], strict=True)]
        batches = {
            **saved,
            "consumed": consumed,
            "shard_index": 0,
            "shard_count": 1,
            "position": 0,
            "batches": 0,
        }
        return {"version": STATE_VERSION, "merged": True, "epoch": epoch, "batches": batches}

    @staticmethod
    def _check_place(state: Mapping[str, Any], place: _Place) -> None:
        here = {
            "version": STATE_VERSION,
            "rank": place.rank,
            "world_size": place.world_size,
            "num_workers": place.num_workers,
            "worker": place.worker,
        }
        for key, want in here.items():
            if state.get(key) != want:
                raise InvalidArgumentError(
                    f"cannot resume: the state has {key}={state.get(key)!r}, this iterator "
                    f"has {key}={want!r} (resume with the same ranks and num_workers, "
                    "DataLoader workers through StatefulDataLoader.load_state_dict)"
                )


def loader_states(loader_state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The :class:`RecordIterableDataset` states inside a StatefulDataLoader state (one
    per worker, or the main process's), for :meth:`RecordIterableDataset.merge_states`.

    Raises:
        InvalidArgumentError: none found, or the loader state lags its last batches
            (``snapshot_every_n_steps`` above 1): merging it would repeat them.
    """
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            if value.get("_steps_since_snapshot"):
                raise InvalidArgumentError(
                    "this StatefulDataLoader state lags its last batches; save it with "
                    "snapshot_every_n_steps=1 to merge it"
                )
            if value.get("version") == STATE_VERSION and "num_workers" in value:
                found.append(dict(value))
                return
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    walk(loader_state)
    if not found:
        raise InvalidArgumentError("no RecordIterableDataset state in this loader state")
    return found
