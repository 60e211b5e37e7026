"""Epoch batches made of per-record samples: a per-sample ``transform``, then a collate.

:class:`SampleBatchIterator` runs the batches of one epoch's shard as
:class:`~.dataset.RecordBatchIterator` does (the same sampler, state, read-ahead thread,
damage policy and errors at the batch that holds them), but prepares each batch the way
a map-style ``DataLoader`` would: its records as ``ds.__getitems__`` gives them (one
batch decode, cut into samples), each sample through ``transform``, then ``collate``
(:func:`tfrecord_engine.collate` by default). The PyTorch host uses it for its
``transform=`` argument, so a per-sample transform needs no wrapper ``Dataset``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from ..errors import DataLossError, InvalidArgumentError, TFRecordError
from .epochs import (
    EpochSource,
    RecordBatchIterator,
)
from .prepare import MASK_KEY, Ready
from .sampler import IndexBatch, IndexBatchIterator
from .spans import IntArray

__all__ = ["SampleBatchIterator"]

Transform = Callable[[Any], Any]


class SampleSource(EpochSource, Protocol):
    """An epoch's dataset that also gives its records as samples (a ``RecordDataset``)."""

    def __getitems__(self, indices: Sequence[int] | IntArray) -> list[Any]:
        """The records at ``indices``, one sample each."""


class SampleBatchIterator(RecordBatchIterator):
    """Batches of ``collate([transform(sample) for each record])``, with ``get_state()``.

    Args:
        dataset: the records (its own ``transform`` and format apply first, as in
            ``__getitems__``).
        sampler: the epoch's batches of this shard.
        transform: applied to each record's sample (``None``: none).
        collate: batches the transformed samples.
        readahead: batches prepared ahead on a thread (``0``: on demand).
        drop_keys: keys left out of dict samples before ``transform`` sees them.

    With ``pad_remainder``, the padded batch's mask goes under ``"mask"`` of a dict
    batch (other batch types cannot carry it: an error says so).
    """

    _dataset: SampleSource  # (its __getitems__ besides what every epoch needs)

    def __init__(
        self,
        dataset: SampleSource,
        sampler: IndexBatchIterator,
        *,
        transform: Transform | None,
        collate: Callable[[list[Any]], Any],
        **settings: Any,
    ) -> None:
        self._transform = transform
        self._collate = collate
        self._sample_drop = settings.pop("drop_keys", frozenset())
        # ``settings``: the epoch's, as epochs.start_epoch decides them for every epoch
        # (read-ahead, files to hold, shared copies; no workers: RecordDataset.epoch
        # refuses them with a transform), but one batch a chunk (its decode
        # is the batch's own __getitems__) and one read-ahead thread (a transform
        # need not be safe to call from two threads at once).
        settings.update(chunk_records=1, threads=1)
        super().__init__(dataset, sampler, **settings)

    def _prepare(self, batches: list[IndexBatch]) -> list[Ready]:
        if self._to_hold:
            self._hold_for(batches)
        return [self._prepare_one(b) for b in batches]

    def _prepare_one(self, batch: IndexBatch) -> Ready:
        ds = self._dataset
        indices = batch.indices
        damage: tuple[Any, ...] = ()
        try:
            try:
                samples = ds.__getitems__(indices)
            except DataLossError:
                if ds.on_damage == "raise":
                    raise
                salvaged, reports = ds.read_salvaged(indices)
                if ds.on_damage == "stop":
                    return Ready(batch, None, None, tuple(reports[:1]), stop=True)
                keep = np.array([r is not None for r in salvaged], np.bool_)
                damage = tuple(reports)
                if not keep.any():
                    return Ready(batch, None, None, damage)
                if batch.mask is not None:
                    # A damaged slot becomes padding (it repeats an intact record).
                    first = int(indices[keep][0])
                    indices = np.where(keep, indices, first)
                    batch = IndexBatch(batch.indices, batch.mask & keep)
                else:
                    indices = indices[keep]
                samples = ds.__getitems__(indices)
            out = self._collate(
                [self._one(s, int(i)) for s, i in zip(samples, indices, strict=True)]
            )
        except (TFRecordError, OSError) as exc:
            return Ready(batch, None, exc, damage)
        except Exception as exc:  # noqa: BLE001 - the user's transform: raised at its batch
            return Ready(batch, None, exc, damage)
        if batch.mask is not None:
            if not isinstance(out, Mapping):
                return Ready(batch, None, _no_mask(out), damage)
            out = {**out, MASK_KEY: batch.mask}
        return Ready(batch, out, None, damage)

    def _one(self, sample: Any, index: int) -> Any:
        if self._sample_drop and isinstance(sample, Mapping):
            sample = {k: v for k, v in sample.items() if k not in self._sample_drop}
        if self._transform is None:
            return sample
        try:
            return self._transform(sample)
        except Exception as exc:
            note = getattr(exc, "add_note", None)
            if note is not None:
                note(f"(in the per-sample transform=, applied to record {index})")
            raise


def _no_mask(out: object) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"pad_remainder=True puts the padding mask in the batch under {MASK_KEY!r}, but "
        f"the collated batch is a {type(out).__name__}, not a dict: return dicts from "
        "transform (or collate), or leave pad_remainder off"
    )
