"""PyTorch host: an ``IterableDataset`` over :meth:`RecordDataset.batches`, a sampler
exposing the engine's epoch order, and batches prefetched onto a CUDA device.

Needs the ``torch`` extra; the rest of the package never imports PyTorch.

:class:`RecordIterableDataset` yields whole batches (use ``DataLoader(...,
batch_size=None)``). One epoch of one rank is the batch sequence of
``ds.batches(..., shard_index=rank, shard_count=world_size)``; with ``num_workers=W``,
worker ``w`` prepares batches ``w, w + W, w + 2W, ...`` of it, and the loader, which takes
one batch from each worker in turn, hands them out in exactly that sequence. So every
record is delivered once per epoch across all ranks and workers, the output does not
depend on ``num_workers``, and ``len()`` is the number of batches per rank.

Epochs: each new iteration runs the next epoch by itself, and
:meth:`~RecordIterableDataset.set_epoch` reaches persistent workers too. Worker
processes keep their own copy of the dataset object, so the epoch travels through a
small shared-memory counter table: the base epoch set in the main process, and per
worker the iterations it started since.

The machinery lives in ``tfrecord_engine.hosts.torch`` (internal); this module is its
public name.
"""

from __future__ import annotations

from .hosts.torch.iterable import MAX_WORKERS, STATE_VERSION, RecordIterableDataset, loader_states
from .hosts.torch.sampler import EpochSampler
from .hosts.torch.tensors import prefetch_to_device, to_torch

__all__ = [
    "MAX_WORKERS",
    "STATE_VERSION",
    "EpochSampler",
    "RecordIterableDataset",
    "loader_states",
    "prefetch_to_device",
    "to_torch",
]
