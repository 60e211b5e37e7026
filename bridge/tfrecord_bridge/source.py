"""Batch ``k`` of epoch ``e`` as a pure function, served from an open engine iterator.

:class:`EpochBatches` is what the ``tf.data`` pipeline calls (through
``tf.numpy_function``) for every ``(epoch, batch)`` pair. For checkpointing, its answer
must depend on nothing but those two numbers and the fixed arguments; for speed, it
must not decode record by record. It keeps one open
:class:`~tfrecord_engine.data.dataset.RecordBatchIterator` per recent epoch (a *cursor*):
the engine reads, checks and decodes ~4,096 records at a time (on its worker thread
ahead of the requests when ``readahead > 0``, else on the first request that needs
them), and the other requests for the cursor's next batches are only hand-overs. A
request anywhere else (a restored checkpoint, a skipped batch) re-opens the cursor at
that batch with ``batches(..., state=...)``, computed from the engine's own sampler.

This module does not import TensorFlow.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfrecord_engine.data.dataset import MASK_KEY, RecordBatchIterator, RecordDataset
from tfrecord_engine.data.mixing import MixedDataset
from tfrecord_engine.data.sampler import IndexBatchIterator, ShardLayout, Shuffle
from tfrecord_engine.errors import InvalidArgumentError

__all__ = ["EpochBatches"]

# Batches a cursor may run ahead of a request to reach it (parallel map calls arrive
# slightly out of order); further away, re-opening at the batch is cheaper.
_MAX_SKIP = 64
# Cursors kept open: the epoch being consumed and the next one (prefetched early).
_MAX_CURSORS = 2


@dataclass
class _Cursor:
    """An open engine iterator of one epoch whose next batch is ``next_batch``."""

    iterator: RecordBatchIterator
    next_batch: int


class EpochBatches:
    """Serves parsed batch ``k`` of epoch ``e`` of one shard, thread-safely.

    Args:
        dataset: a :class:`~tfrecord_engine.RecordDataset` built with ``features=``, or
            a mix of them (``tfe.sample_from_datasets``).
        batch_size: records per batch.
        shuffle, seed: the engine's global shuffle (see ``RecordDataset.batches``).
        shard_index, shard_count: this input pipeline's exact share of every epoch.
        drop_remainder, pad_remainder: as for ``RecordDataset.batches``.
        first_epoch: the epoch of the first iteration (see :meth:`next_epoch`).
        readahead: chunks the engine prepares ahead on its worker thread (0: none,
            each chunk is decoded by the request that needs it).
        batch_multiple: with ``pad_remainder``, append fully masked batches until the
            batch count is a multiple of this (the replicas one input pipeline feeds:
            ``tf.distribute`` silently drops a last step that not every replica has).
        workers: decode in this many worker processes (``RecordDataset.batches``); 0
            decodes in this process.

    Example:
        >>> import os, tempfile, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True) as w:
        ...     w.write_many([tfe.encode_example({"i": [i]}) for i in range(5)])
        5
        >>> ds = tfe.RecordDataset(path, features={"i": tfe.FixedLenFeature([], "int64")})
        >>> src = EpochBatches(ds, 2)
        >>> src.num_batches, src.get(0, 2)["i"].tolist()
        (3, [4])
    """

    def __init__(
        self,
        dataset: RecordDataset | MixedDataset,
        batch_size: int,
        *,
        shuffle: Shuffle = False,
        seed: int = 0,
        shard_index: int = 0,
        shard_count: int = 1,
        drop_remainder: bool = False,
        pad_remainder: bool = False,
        first_epoch: int = 0,
        readahead: int = 2,
        batch_multiple: int = 1,
        workers: int = 0,
    ) -> None:
        if dataset.features is None:
            raise InvalidArgumentError(
                "to_tf_dataset needs a RecordDataset built with features=... (or, for "
                "SequenceExamples, context_features=/sequence_features=): parsed batches"
            )
        if first_epoch < 0:
            raise InvalidArgumentError(f"epoch must be >= 0, got {first_epoch}")
        self.dataset = dataset
        self._args: dict[str, Any] = {
            "batch_size": batch_size,
            "shuffle": shuffle,
            "seed": seed,
            "shard_index": shard_index,
            "shard_count": shard_count,
            "drop_remainder": drop_remainder,
            "pad_remainder": pad_remainder,
        }
        self._readahead = readahead
        self._workers = workers
        # Validates every argument once, up front, and fixes the batch count: it is the
        # same for every epoch (only the order changes).
        self.engine_batches = len(self._sampler(first_epoch))
        if batch_multiple < 1:
            raise InvalidArgumentError(f"batch_multiple must be >= 1, got {batch_multiple}")
        self.num_batches = self.engine_batches
        if pad_remainder and self.engine_batches:
            self.num_batches = -(-self.engine_batches // batch_multiple) * batch_multiple
        self._padding: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._cursors: collections.OrderedDict[int, _Cursor] = collections.OrderedDict()
        self._stash: dict[tuple[int, int], Any] = {}
        self._next_epoch = first_epoch
        # The epoch whose cursor was opened ahead of its first request (see ``get``).
        self._early: int | None = None

    def chunks(self, per_chunk: int) -> list[int]:
        """Boundaries of chunks of at most ``per_chunk`` batches, each of one batch size.

        A partial last batch gets a chunk of its own, so every chunk stacks evenly. The
        chunks are whole from the first (unlike the engine's epochs underneath, see
        :func:`~tfrecord_engine.data.prepare.ramp`): a ``tf.train.Checkpoint`` of an
        iterator saves the index of the chunk it is in, and other bounds would restore
        an iterator saved by an earlier version at other batches.
        """
        bounds = [*range(0, self.num_batches, per_chunk), self.num_batches]
        size, count = self._args["batch_size"], self._args["shard_count"]
        start, stop = ShardLayout(self._args["shard_index"], count).span(len(self.dataset))
        partial = (
            self.engine_batches
            and (stop - start) % size
            and not (self._args["drop_remainder"] or self._args["pad_remainder"])
        )
        if partial and bounds[-2] != self.num_batches - 1:
            bounds.insert(-1, self.num_batches - 1)
        return bounds

    def _sampler(self, epoch: int) -> IndexBatchIterator:
        if isinstance(self.dataset, MixedDataset):  # it orders its own records
            return self.dataset.index_batches(epoch=epoch, **self._args)
        return IndexBatchIterator(len(self.dataset), epoch=epoch, **self._args)

    def next_epoch(self) -> int:
        """The epoch of a new iteration: one more than the latest epoch started or served.

        A restored iterator keeps its own (saved) epoch; the iteration after it moves on
        from there, because serving a batch of epoch ``e`` bumps the counter past ``e``.
        """
        with self._lock:
            epoch = self._next_epoch
            self._next_epoch += 1
            return epoch

    def get(self, epoch: int, batch: int) -> Any:
        """Parsed batch ``batch`` of ``epoch`` (a pure function of the two and the args).

        Raises:
            OutOfRangeError: ``batch`` is outside ``[0, num_batches)``.
            TFRecordError: the batch holds damage or a parse error (as the engine raises).
        """
        if not 0 <= batch < self.num_batches:
            raise InvalidArgumentError(
                f"batch {batch} out of range: this epoch has {self.num_batches} batches"
            )
        with self._lock:
            self._next_epoch = max(self._next_epoch, epoch + 1)
            if batch >= self.engine_batches:
                return self._padding_batch()
            stashed = self._stash.pop((epoch, batch), None)
            if stashed is not None:
                return stashed
            cursor = self._cursors.get(epoch)
            if cursor is None or not cursor.next_batch <= batch < cursor.next_batch + _MAX_SKIP:
                cursor = self._open(epoch, batch)
            if epoch == self._early:
                self._early = None  # taken: an ordinary cursor from here on
            while cursor.next_batch < batch:
                # A parallel call for this batch is on its way: keep it for that call.
                self._stash[epoch, cursor.next_batch] = next(cursor.iterator)
                cursor.next_batch += 1
            out = next(cursor.iterator)
            cursor.next_batch += 1
            if cursor.next_batch == self.engine_batches:
                # The epoch is over: stop the read-ahead (batches stashed for parallel
                # calls still on their way stay).
                self._cursors.pop(epoch)
                cursor.iterator.close()
                if self._workers and epoch + 1 not in self._cursors:
                    # The next iteration almost always takes the next epoch: its first
                    # chunks decode in the workers while TensorFlow finishes this
                    # iteration and sets up the next (which takes ~10-30 ms).
                    self._open(epoch + 1, 0).iterator.start()
                    self._early = epoch + 1
            return out

    def _padding_batch(self) -> dict[str, Any]:
        """A full batch in which every record is masked out (the same one every time)."""
        if self._padding is None:
            size = self._args["batch_size"]
            first = self.dataset.batches(size, pad_remainder=True, readahead=0)
            batch = dict(next(first))
            first.close()
            batch[MASK_KEY] = np.zeros(size, np.bool_)
            self._padding = batch
        return self._padding

    def _open(self, epoch: int, batch: int) -> _Cursor:
        self._close(epoch)
        if self._early is not None:
            # Opened ahead for an iteration that took another epoch: it would hold the
            # worker processes that this cursor needs.
            self._close(self._early)
            self._early = None
        for key in [k for k in self._stash if k[0] < epoch - 1]:
            del self._stash[key]  # left by an abandoned iteration
        sampler = self._sampler(epoch)
        for _ in range(batch):
            # Index arithmetic only (no reading): finds where batch ``batch`` starts.
            next(sampler)
        args = dict(self._args)
        iterator = self.dataset.batches(
            args.pop("batch_size"),
            epoch=epoch,
            state=sampler.get_state(),
            readahead=self._readahead,
            workers=self._workers,
            **args,
        )
        cursor = _Cursor(iterator, batch)
        self._cursors[epoch] = cursor
        while len(self._cursors) > _MAX_CURSORS:
            self._close(next(iter(self._cursors)))
        return cursor

    def _close(self, epoch: int) -> None:
        cursor = self._cursors.pop(epoch, None)
        if cursor is not None:
            cursor.iterator.close()
        for key in [k for k in self._stash if k[0] == epoch]:
            del self._stash[key]

    def close(self) -> None:
        """Stops every cursor's read-ahead thread (a later request re-opens one)."""
        with self._lock:
            for epoch in list(self._cursors):
                self._close(epoch)
            self._stash.clear()
            self._early = None
