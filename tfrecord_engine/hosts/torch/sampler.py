"""The engine's epoch order as a sampler for map-style ``DataLoader`` use
(:class:`EpochSampler`), and this process's rank and world size.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import Sampler

from ...data.sampler import ShardLayout, Shuffle, epoch_order
from ...errors import InvalidArgumentError

__all__ = ["EpochSampler", "distributed"]


def distributed() -> tuple[int, int]:
    """This process's rank and world size in an initialized ``torch.distributed``
    process group, else ``(0, 1)``."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class EpochSampler(Sampler[int]):
    """The engine's seeded epoch order as a sampler for map-style ``DataLoader`` use.

    Rank ``r`` of ``world_size`` gets the ``r``-th contiguous slice of
    :func:`~tfrecord_engine.data.sampler.epoch_order` (slices differ in size by at most
    one): the records and order of ``ds.batches(..., shard_index=r, shard_count=world_size)``,
    every record exactly once per epoch across ranks. Like ``DistributedSampler``, call
    :meth:`set_epoch` before each epoch (the order is a pure function of seed and epoch).

    Args:
        dataset: a dataset or its length.
        shuffle: ``False``, ``True`` or a ``BlockShuffle``.
        seed, epoch: select the order.
        rank, world_size: this process's share (default: the initialized
            ``torch.distributed`` process group, else ``0`` and ``1``).
        pad: repeat this slice's first record so that every rank gets the same number of
            indices (what ``DistributedSampler`` does by default; a padded record is then
            seen twice). Default ``False``: exactly once, ranks differ by at most one.

    >>> list(EpochSampler(5, shuffle=False, rank=1, world_size=2))
    [2, 3, 4]
    """

    def __init__(
        self,
        dataset: Any,
        *,
        shuffle: Shuffle = True,
        seed: int = 0,
        epoch: int = 0,
        rank: int | None = None,
        world_size: int | None = None,
        pad: bool = False,
    ) -> None:
        default_rank, default_world = distributed()
        self.length = dataset if isinstance(dataset, int) else len(dataset)
        self.layout = ShardLayout(
            default_rank if rank is None else rank,
            default_world if world_size is None else world_size,
        )
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = epoch
        self.pad = pad
        epoch_order(0, shuffle=shuffle, seed=seed, epoch=epoch)  # checks the arguments

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iterations run ``epoch``."""
        if epoch < 0:
            raise InvalidArgumentError(f"epoch must be >= 0, got {epoch}")
        self.epoch = epoch

    def __len__(self) -> int:
        if self.pad:
            return (self.length + self.layout.count - 1) // self.layout.count
        start, stop = self.layout.span(self.length)
        return stop - start

    def __iter__(self) -> Iterator[int]:
        order = epoch_order(self.length, shuffle=self.shuffle, seed=self.seed, epoch=self.epoch)
        start, stop = self.layout.span(self.length)
        part: list[int] = order[start:stop].tolist()
        if self.pad and len(part) < len(self):
            # This slice's first record, or the epoch's first when the slice is empty.
            part += [part[0] if part else int(order[0])] * (len(self) - len(part))
        return iter(part)
