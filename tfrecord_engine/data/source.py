"""Random access to the records of one indexed file: what every reader offers, and where
each kind lives.

Every reader takes a batch of record indices *within its file* and returns the records'
bytes in the same order, with the data CRCs checked in bulk (:mod:`.spans`):

- :class:`~.local_source.LocalFileRecords`: an uncompressed local file, copied by the
  kernel (``pread``, or one gather out of a map of the file: :mod:`.localfile`), or
  sliced from a copy of the whole file held for shuffled epochs (:mod:`.held`); it also
  hands batches out as :class:`~.spans.Spans`, the decoder's input;
- :class:`~.fetcher_source.FetcherRecords`: an uncompressed file read through a
  byte-range :data:`Fetcher` (fsspec URLs);
- GZIP/ZLIB files: :mod:`tfrecord_engine.data.compressed_source`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .fetcher_source import Fetcher, FetcherRecords, RangesFetcher
from .local_source import LocalFileRecords
from .spans import U8, IntArray, Spans, crc_spans, verify_batch

__all__ = [
    "U8",
    "Fetcher",
    "FetcherRecords",
    "IntArray",
    "LocalFileRecords",
    "RandomAccessSource",
    "RangesFetcher",
    "Spans",
    "crc_spans",
    "verify_batch",
]


@runtime_checkable
class RandomAccessSource(Protocol):
    """What map-style loaders (PyTorch ``Dataset``, Grain sources) need."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> object: ...

    def __getitems__(self, indices: Sequence[int]) -> object: ...
