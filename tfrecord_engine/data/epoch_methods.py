"""``RecordDataset``'s epochs (the methods; the work is in :mod:`.epochs`):
``batches`` (the public epoch), ``epoch`` (an epoch over batches a host planned),
balanced orders, and the decode worker pools they use.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InvalidArgumentError
from .arguments import check_batch_arguments
from .balance import Balance, BalancedOrder, as_balance, balanced_positions
from .collate import collate as tfe_collate
from .epochs import (
    RecordBatchIterator,
    files_reached,
    start_epoch,
    take_epoch,
)
from .files import DatasetFiles, FileRecords
from .held_shared import SharedCopies
from .padding import Padded, check_padded
from .pools import return_pool, take_pool
from .procpool import DecodePool
from .sample_batches import SampleBatchIterator
from .sampler import IndexBatchIterator, IntArray, Shuffle

__all__ = ["EpochMethods"]


class EpochMethods:
    """The epoch methods of :class:`~.dataset.RecordDataset`."""

    if TYPE_CHECKING:  # (what they use of the dataset, which defines them)
        features: Any
        _files: DatasetFiles | None
        _next_epoch: dict[tuple[int, int], int]
        _epoch_lock: threading.Lock

        def __len__(self) -> int: ...
        def _open(self) -> list[FileRecords]: ...
        def _opened(self) -> DatasetFiles: ...
        def _numbers(self, indices: IntArray) -> IntArray: ...

    def _dataset(self) -> Any:
        return self  # (a RecordDataset: what .epochs and .balance take)

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
        padded: Padded = False,
        pad_value: Any = 0,
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
            readahead: chunks of about 4,096 records (of about 8 MB at most, but at
                least one batch) prepared ahead (read, CRC-checked,
                decoded) on worker threads: two at once on a machine of two cores or
                more, as their decode releases the GIL; one for records of 4 KiB or
                more with a string feature, whose ``bytes`` values are made under the
                GIL (``epochs.read_ahead_threads``). ``0`` prepares each chunk on
                demand. Output and order are the same whatever the value.
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
            in_memory: for an epoch in this process (``workers=0``) over uncompressed
                local files: read each file whole into memory (one sequential pass,
                into huge pages where the system has them, checking every record's CRC
                as it comes in) and take records from that copy, instead of copying
                them out of the file chunk by chunk (in a shuffle: each scattered
                record on its own, ~1.4 µs a small record, which made shuffled epochs
                about 2.5 times slower than sequential ones). A shuffled epoch reads
                every file before its first batch; an epoch in file order reads each
                file when it reaches it (one that cannot be read whole, e.g. cut after
                indexing, is then read chunk by chunk as without the copy). A damaged
                record still raises (or is reported) at the batch that holds it,
                exactly as without the copy. ``None`` (default) does so when the files
                total at most :data:`IN_MEMORY_LIMIT` bytes (1 GiB, or an eighth of
                the machine's memory if less); ``True`` whatever their size, ``False``
                never. The copy is one per file, shared by concurrent epochs of this
                dataset, and a snapshot of the files as indexed. When the last epoch
                holding it ends or is closed, it is kept for the next epoch (which then
                reads nothing, in either order), unless the file changed meanwhile
                (device, inode, size or modification time, or a change less than 3 s
                before the read): the copies kept for all datasets of the process stay
                within :data:`IN_MEMORY_LIMIT` bytes, the least recently used dropped
                first; :meth:`close` drops this dataset's (docs/reliability.md). In
                PyTorch ``DataLoader`` workers (``tfrecord_engine.torch``) the copy is
                one per machine, shared by the workers, and the limit counts for the
                machine (docs/workers.md). Output is the same either way.
            balance: an index column name (or a :class:`~tfrecord_engine.Balance`):
                class-balanced epochs, each class of the column drawn equally often
                (by default as many records of each as the smallest class has, a new
                sample each epoch; see :mod:`tfrecord_engine.data.balance`). Epochs
                count as shuffled ones do; ``shuffle``, shards and ``state`` apply to
                the balanced order.
            padded: ``tf.data``'s ``padded_batch`` for the variable-length features
                (parsed datasets): ``True`` turns each ``VarLenFeature``,
                ``RaggedFeature`` and ``SparseFeature`` value into a
                :class:`~tfrecord_engine.PaddedValue` (``values`` padded to the batch's
                longest record, ``lengths``, ``mask``); a dict gives features a fixed
                size (``{"tokens": 128}``; a tuple per variable dimension of a nested
                ragged feature; ``None``: the longest), the others padded to the
                longest. A record longer than its size raises, naming it (nothing is
                cut off). ``False`` (default): TensorFlow's forms (``SparseValue``,
                ``RaggedValue``). See :func:`tfrecord_engine.data.padding.pad_batch`.
            pad_value: the padding: a number for every numeric feature (strings pad
                with ``b""``), or a dict of feature name to value.

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
        if padded is not False:
            if self.features is None:
                raise InvalidArgumentError(
                    "padded= pads parsed batches: pass features= to RecordDataset (raw "
                    "records have nothing to pad)"
                )
            check_padded(padded, pad_value)
        layout = (shard_index, shard_count)
        used, before = take_epoch(
            self._next_epoch,
            self._epoch_lock,
            epoch=epoch,
            shuffle=shuffle or balance is not None,
            state=state,
            layout=layout,
        )
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
                padded=padded,
                pad_value=pad_value,
            )
        except BaseException:
            if before is not None:
                with self._epoch_lock:
                    if self._next_epoch.get(layout) == used + 1:
                        self._next_epoch[layout] = before  # a refused call starts no epoch
            raise

    def _balanced(self, balance: str | Balance, seed: int, epoch: int) -> BalancedOrder:
        spec = as_balance(balance)
        return BalancedOrder(balanced_positions(self._dataset(), spec, seed, epoch), spec)

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
        padded: Padded = False,
        pad_value: Any = 0,
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
        return start_epoch(
            self._dataset(),
            sampler,
            self._open(),
            shuffle=shuffle,
            random_access=bool(shuffle) or order is not None,
            record_bytes=self._opened().record_bytes,
            pad_remainder=pad_remainder,
            readahead=readahead,
            workers=workers,
            strings=strings,
            in_memory=in_memory,
            padded=padded,
            pad_value=pad_value,
            reached=files_reached(self._open(), self._numbers),
        )

    def epoch(
        self,
        sampler: IndexBatchIterator,
        shuffle: Shuffle = False,
        *,
        readahead: int = 2,
        workers: int = 0,
        strings: Literal["keep", "drop"] = "keep",
        in_memory: bool | None = None,
        transform: Callable[[Any], Any] | None = None,
        collate: Callable[[list[Any]], Any] | None = None,
        share: SharedCopies | None = None,
    ) -> RecordBatchIterator:
        """One epoch over batches that a host planned itself (e.g. one ``DataLoader``
        worker's share of a rank's batches): read, held in memory, chunked and
        checked exactly as :meth:`batches` does (the same arguments mean the same).

        Args:
            sampler: the epoch's batches (an ``IndexBatchIterator``; its state is the
                iterator's ``get_state()``).
            shuffle: the sampler's order (decides chunk sizes and ``in_memory``).
            transform, collate: batches made as a map-style loader makes them: each
                record's sample (as ``__getitems__`` gives it) through ``transform``,
                then ``collate`` (default :func:`tfrecord_engine.collate`); not with
                ``workers``.
            share: the loader's :class:`~tfrecord_engine.data.held_shared.SharedCopies`
                (in its worker processes): the in-memory copies are then one per
                machine, shared by the processes, within ``IN_MEMORY_LIMIT`` for the
                machine (docs/workers.md).
        """
        if transform is None and collate is None:
            return start_epoch(
                self._dataset(),
                sampler,
                self._open(),
                shuffle=shuffle,
                random_access=bool(shuffle),
                record_bytes=self._opened().record_bytes,
                pad_remainder=False,  # (the sampler's; its mask key was checked by batches)
                readahead=readahead,
                workers=workers,
                strings=strings,
                in_memory=in_memory,
                share=share,
                reached=files_reached(self._open(), self._numbers),
            )
        if workers:
            raise InvalidArgumentError("transform= and collate= run in this process: workers=0")
        return start_epoch(
            self._dataset(),
            sampler,
            self._open(),
            shuffle=shuffle,
            random_access=bool(shuffle),
            record_bytes=self._opened().record_bytes,
            pad_remainder=False,
            readahead=readahead,
            workers=0,
            strings=strings,
            in_memory=in_memory,
            share=share,
            reached=files_reached(self._open(), self._numbers),
            make=functools.partial(
                SampleBatchIterator,
                transform=transform,
                collate=tfe_collate if collate is None else collate,
            ),
        )

    # ---- decode worker processes (see .epochs, .procpool) ------------------------------

    def _take_pool(self, workers: int, slots: int) -> DecodePool:
        """An idle pool of ``workers`` processes with ``slots`` slots, or a new one."""
        return take_pool(self._dataset(), workers, slots)

    def _return_pool(self, pool: DecodePool) -> None:
        """Keeps a pool for the next epoch (one per shape), or stops it."""
        return_pool(self._dataset(), pool, is_open=self._files is not None)
