"""Epoch orders, exact sharding, batching and resumable state.

The order of an epoch is a pure function of ``(seed, epoch, length, shuffle mode)``:
a uniform permutation of *all* records drawn from
``np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, epoch])))``
(never global random state). Sharding then splits that order into ``shard_count``
contiguous slices whose sizes differ by at most one, so a shuffle is global, not per
shard, and every record lands in exactly one shard.

State is a small plain dict (JSON-able). Positions count records of the epoch order:
``consumed`` lists the half-open ``[start, stop)`` ranges of order positions delivered
under earlier shard layouts (see :func:`merge_states`), and ``position`` counts the
records this shard has delivered from its slice of what remained.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError

__all__ = [
    "BlockShuffle",
    "IndexBatch",
    "IndexBatchIterator",
    "ShardLayout",
    "epoch_order",
    "merge_states",
]

STATE_VERSION = 1
# BlockShuffle mixes windows one by one up to this many windows, else with one sort.
_MAX_WINDOW_LOOP = 2048
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclasses.dataclass(frozen=True, slots=True)
class BlockShuffle:
    """A locality-aware shuffle for slow or remote storage.

    Records are cut into contiguous blocks of ``block_size``; the blocks are visited in a
    uniformly random order and ``window`` blocks at a time are mixed record by record
    (a bounded buffer of ``block_size * window`` records). Each block is one contiguous
    read, so a batch costs about ``batch / block_size`` I/O requests instead of
    ``batch``; the price is that nearby records of the file stay in the same window.

    >>> BlockShuffle(block_size=64, window=8)
    BlockShuffle(block_size=64, window=8)
    """

    block_size: int = 256
    window: int = 16

    def __post_init__(self) -> None:
        if self.block_size < 1 or self.window < 1:
            raise InvalidArgumentError(
                f"BlockShuffle needs block_size >= 1 and window >= 1, got {self}"
            )


Shuffle = bool | BlockShuffle


@dataclasses.dataclass(frozen=True, slots=True)
class ShardLayout:
    """Which of ``count`` shards this is; ``index`` in ``[0, count)``."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise InvalidArgumentError(
                f"need 0 <= shard_index < shard_count, got shard_index={self.index}, "
                f"shard_count={self.count}"
            )

    def span(self, length: int) -> tuple[int, int]:
        """Half-open ``[start, stop)`` of this shard in a sequence of ``length`` items.

        >>> [ShardLayout(i, 3).span(10) for i in range(3)]
        [(0, 3), (3, 6), (6, 10)]
        """
        return self.index * length // self.count, (self.index + 1) * length // self.count


def _rng(seed: int, epoch: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, epoch])))


def epoch_order(
    length: int, *, shuffle: Shuffle = False, seed: int = 0, epoch: int = 0
) -> IntArray:
    """Returns the record order of one epoch (a pure function of its arguments).

    >>> epoch_order(5).tolist()
    [0, 1, 2, 3, 4]
    >>> sorted(epoch_order(5, shuffle=True, seed=1).tolist())
    [0, 1, 2, 3, 4]
    """
    if length < 0 or seed < 0 or epoch < 0:
        raise InvalidArgumentError(
            f"length, seed and epoch must be >= 0, got {length}, {seed}, {epoch}"
        )
    if isinstance(shuffle, BlockShuffle):
        return _block_order(length, _rng(seed, epoch), shuffle)
    if shuffle:
        return _rng(seed, epoch).permutation(length).astype(np.int64)
    return np.arange(length, dtype=np.int64)


def _block_order(length: int, rng: np.random.Generator, mode: BlockShuffle) -> IntArray:
    size = mode.block_size
    nblocks = -(-length // size)
    blocks = rng.permutation(nblocks).astype(np.int64)
    records = (blocks[:, None] * size + np.arange(size, dtype=np.int64)).reshape(-1)
    records = records[records < length]  # the last block may be short
    counts = np.where(blocks == nblocks - 1, length - (nblocks - 1) * size, size)
    windows = np.add.reduceat(counts, np.arange(0, nblocks, mode.window)) if nblocks else counts
    if len(windows) <= _MAX_WINDOW_LOOP:
        # Mixing each window in place: a few calls, no sort of the whole epoch.
        bounds = np.concatenate([[0], np.cumsum(windows)]).tolist()
        for a, b in itertools.pairwise(bounds):
            rng.shuffle(records[a:b])
        return records
    # Many tiny windows: one sort by (window, random key) beats a Python loop.
    group = np.repeat(np.arange(len(windows), dtype=np.float64), windows)
    return records[np.argsort(group + rng.random(len(records)), kind="stable")]


class IndexBatch(NamedTuple):
    """One batch of record indices; ``mask`` is ``None`` unless padding was requested.

    With padding, ``indices`` always has the full batch size and ``mask[j]`` is
    ``False`` for padding slots (they repeat a real record and must be ignored).
    """

    indices: IntArray
    mask: BoolArray | None


def _shuffle_state(shuffle: Shuffle) -> Any:
    if isinstance(shuffle, BlockShuffle):
        return {"block_size": shuffle.block_size, "window": shuffle.window}
    return bool(shuffle)


def _intervals(mask: BoolArray) -> list[list[int]]:
    """Half-open runs of ``True`` in ``mask``."""
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [[int(a), int(b)] for a, b in zip(edges[::2], edges[1::2], strict=True)]


class IndexBatchIterator(Iterator[IndexBatch]):
    """Batches of record indices for one shard of one epoch, resumable.

    Args:
        length: number of records in the dataset.
        batch_size: records per batch (>= 1).
        shuffle: ``False``, ``True`` (a uniform global permutation) or a
            :class:`BlockShuffle`.
        seed, epoch: select the permutation.
        shard_index, shard_count: this shard of the epoch order.
        drop_remainder: drop this shard's last partial batch.
        pad_remainder: pad to full batches and give every shard the same number of
            batches (with a mask); every record is still delivered exactly once.
        state: a dict from :meth:`get_state` (same order arguments) or
            :func:`merge_states` (any shard layout) to resume from.

    Example:
        >>> it = IndexBatchIterator(5, 2)
        >>> [b.indices.tolist() for b in it]
        [[0, 1], [2, 3], [4]]
    """

    def __init__(
        self,
        length: int,
        batch_size: int,
        *,
        shuffle: Shuffle = False,
        seed: int = 0,
        epoch: int = 0,
        shard_index: int = 0,
        shard_count: int = 1,
        drop_remainder: bool = False,
        pad_remainder: bool = False,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        if batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be >= 1, got {batch_size}")
        if drop_remainder and pad_remainder:
            raise InvalidArgumentError("drop_remainder and pad_remainder exclude each other")
        self._layout = ShardLayout(shard_index, shard_count)
        self._length = length
        self._batch_size = batch_size
        self._shuffle = shuffle
        self._seed = seed
        self._epoch = epoch
        self._drop = drop_remainder
        self._pad = pad_remainder
        self._consumed: list[list[int]] = []
        self._position = 0
        self._batches = 0
        if state is not None:
            self._restore(state)
        order = epoch_order(length, shuffle=shuffle, seed=seed, epoch=epoch)
        if self._consumed:
            keep = np.ones(length, dtype=np.bool_)
            for a, b in self._consumed:
                keep[a:b] = False
            self._remaining_pos = np.flatnonzero(keep).astype(np.int64)
        else:
            self._remaining_pos = np.arange(length, dtype=np.int64)
        remaining = len(self._remaining_pos)
        start, stop = self._layout.span(remaining)
        self._slice_start = start
        self._slice = order[self._remaining_pos[start:stop]]
        largest = -(-remaining // shard_count)
        self._total_batches = -(-largest // batch_size) if pad_remainder else None
        # Padding repeats a real record: this shard's first, else the dataset's first.
        self._pad_index = int(self._slice[0]) if len(self._slice) else 0

    def _restore(self, state: Mapping[str, Any]) -> None:
        expected = {
            "version": STATE_VERSION,
            "length": self._length,
            "seed": self._seed,
            "epoch": self._epoch,
            "shuffle": _shuffle_state(self._shuffle),
        }
        for key, want in expected.items():
            if state.get(key) != want:
                raise InvalidArgumentError(
                    f"cannot resume: state has {key}={state.get(key)!r}, this iterator has "
                    f"{key}={want!r} (pass the same order arguments, on the same dataset)"
                )
        same_layout = (state["shard_index"], state["shard_count"]) == (
            self._layout.index,
            self._layout.count,
        )
        if state["position"] and not same_layout:
            raise InvalidArgumentError(
                f"cannot resume shard {state['shard_index']}/{state['shard_count']} as "
                f"shard {self._layout.index}/{self._layout.count}: to change the shard "
                "layout, resume from merge_states([...the states of all shards...])"
            )
        if (
            self._pad
            and same_layout
            and state["position"]
            and state.get("batch_size") != self._batch_size
        ):
            # Padded shards count batches in lockstep; another size would break that.
            raise InvalidArgumentError(
                f"cannot resume a padded epoch with batch_size={self._batch_size}: it ran "
                f"with batch_size={state.get('batch_size')}"
            )
        self._consumed = [[int(a), int(b)] for a, b in state["consumed"]]
        self._position = int(state["position"])
        self._batches = int(state["batches"]) if same_layout else 0

    def get_state(self) -> dict[str, Any]:
        """Returns a small plain dict to resume from (JSON-serializable)."""
        return {
            "version": STATE_VERSION,
            "length": self._length,
            "seed": self._seed,
            "epoch": self._epoch,
            "shuffle": _shuffle_state(self._shuffle),
            "consumed": [list(r) for r in self._consumed],
            "shard_index": self._layout.index,
            "shard_count": self._layout.count,
            "position": self._position,
            "batches": self._batches,
            "batch_size": self._batch_size,
        }

    def delivered_positions(self) -> BoolArray:
        """Mask over epoch-order positions delivered so far (earlier layouts included)."""
        done = np.zeros(self._length, dtype=np.bool_)
        for a, b in self._consumed:
            done[a:b] = True
        start = self._slice_start
        done[self._remaining_pos[start : start + self._position]] = True
        return done

    def slice_positions(self, start: int, stop: int) -> IntArray:
        """Epoch-order positions of this shard's records ``[start, stop)`` (counted from
        the start of its slice, as ``position`` counts them)."""
        first = self._slice_start
        stop = min(stop, len(self._slice))
        return self._remaining_pos[first + start : first + max(start, stop)]

    @property
    def batch_size(self) -> int:
        """Records per batch."""
        return self._batch_size

    def __len__(self) -> int:
        """Number of batches still to come."""
        left = len(self._slice) - self._position
        if self._total_batches is not None:
            return self._total_batches - self._batches
        return left // self._batch_size if self._drop else -(-left // self._batch_size)

    def __iter__(self) -> IndexBatchIterator:
        return self

    def __next__(self) -> IndexBatch:
        batch = self.peek()
        self.commit(batch)
        return batch

    def commit(self, batch: IndexBatch) -> None:
        """Counts ``batch`` (from :meth:`peek`) as delivered."""
        self._position += len(batch.indices) if batch.mask is None else int(batch.mask.sum())
        self._batches += 1

    def peek(self) -> IndexBatch:
        """Returns the next batch without counting it as delivered.

        Raises:
            StopIteration: the epoch is over for this shard.
        """
        size = self._batch_size
        pos = self._position
        real = self._slice[pos : pos + size]
        if self._total_batches is not None:
            if self._batches >= self._total_batches:
                raise StopIteration
            mask = np.zeros(size, dtype=np.bool_)
            mask[: len(real)] = True
            indices = np.full(size, self._pad_index, dtype=np.int64)
            indices[: len(real)] = real
            return IndexBatch(indices, mask)
        if len(real) == 0 or (self._drop and len(real) < size):
            raise StopIteration
        return IndexBatch(real, None)


def merge_states(states: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Combines the states of *all* shards of one layout into a layout-free state.

    Resume from the result with any ``shard_count``: the records no shard delivered
    are split again, exactly once, across the new shards.

    Raises:
        InvalidArgumentError: the states are not exactly the shards ``0..k-1`` of one
            layout of one epoch.
    """
    if not states:
        raise InvalidArgumentError("merge_states needs the states of all shards")
    first = states[0]
    count = int(first["shard_count"])
    keys = ("version", "length", "seed", "epoch", "shuffle", "consumed", "shard_count")
    if sorted(int(s["shard_index"]) for s in states) != list(range(count)) or any(
        any(s[k] != first[k] for k in keys) for s in states
    ):
        raise InvalidArgumentError(
            f"merge_states needs one state per shard 0..{count - 1} of the same epoch and layout"
        )
    done = np.zeros(int(first["length"]), dtype=np.bool_)
    for s in states:
        it = IndexBatchIterator(
            int(s["length"]),
            1,
            shuffle=_shuffle_from_state(s["shuffle"]),
            seed=int(s["seed"]),
            epoch=int(s["epoch"]),
            shard_index=int(s["shard_index"]),
            shard_count=count,
            state=s,
        )
        done |= it.delivered_positions()
    merged = dict(first)
    merged.update(consumed=_intervals(done), shard_index=0, shard_count=1, position=0, batches=0)
    return merged


def _shuffle_from_state(value: Any) -> Shuffle:
    if isinstance(value, Mapping):
        return BlockShuffle(int(value["block_size"]), int(value["window"]))
    return bool(value)
