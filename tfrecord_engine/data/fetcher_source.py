"""Random access to the records of one uncompressed file through a byte-range fetcher
(fsspec URLs: see :mod:`tfrecord_engine.storage.remote`)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from ..index.sidecar import Index
from ..records import framing
from ..storage.ranges import coalesce
from .spans import IntArray, verify_batch

__all__ = ["Fetcher", "FetcherRecords", "RangesFetcher"]

#: Reads the half-open byte range ``[offset, offset + size)`` of one file.
Fetcher = Callable[[int, int], bytes]
#: Reads the half-open byte ranges ``[starts[i], ends[i])`` of one file, together.
RangesFetcher = Callable[[list[int], list[int]], list[bytes]]
_H = framing.HEADER_SIZE
_F = framing.FOOTER_SIZE


class FetcherRecords:
    """Records of one uncompressed file read through a byte-range :data:`Fetcher`.

    Two request plans, both counted in ``requests`` and ``bytes_fetched``:

    - default: the records of a batch that lie back to back (or within ``max_gap``
      bytes) are coalesced into one request (:func:`~tfrecord_engine.storage.ranges.coalesce`;
      ``max_gap=None``: one request per record; a request grows past ``max_request``
      bytes only for a single larger record). With ``fetch_ranges`` the requests of
      a batch are handed over together (fsspec's ``cat_ranges`` sends them
      concurrently);
    - ``block_records=B``: whole aligned blocks of ``B`` records are fetched and the
      last ``cache_blocks`` are kept, the I/O model of
      :class:`~tfrecord_engine.data.sampler.BlockShuffle` (with ``cache_blocks`` at least its
      window, each block is fetched once per epoch).
    """

    def __init__(
        self,
        index: Index,
        fetch: Fetcher,
        *,
        max_gap: int | None = 0,
        max_request: int | None = None,
        fetch_ranges: RangesFetcher | None = None,
        block_records: int | None = None,
        cache_blocks: int = 32,
    ) -> None:
        self.index = index
        self.path = index.data_path
        self.fetch = fetch
        self.fetch_ranges = fetch_ranges
        self.max_gap = max_gap
        self.max_request = max_request
        self.block_records = block_records
        self.requests = 0
        self.bytes_fetched = 0
        self._start = index.offsets.astype(np.int64)
        self._end = self._start + index.lengths.astype(np.int64) + _H + _F
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cache_blocks = cache_blocks

    def _get(self, start: int, stop: int) -> bytes:
        self.requests += 1
        self.bytes_fetched += stop - start
        return self.fetch(start, stop - start)

    def _framed_coalesced(self, local: IntArray) -> list[bytes]:
        offsets, ends = self._start[local], self._end[local]
        plan = coalesce(offsets, ends, self.max_gap, self.max_request)
        if self.fetch_ranges is not None:
            self.requests += len(plan.starts)
            self.bytes_fetched += int(np.sum(plan.ends - plan.starts))
            chunks = self.fetch_ranges(plan.starts.tolist(), plan.ends.tolist())
        else:
            chunks = [
                self._get(a, b)
                for a, b in zip(plan.starts.tolist(), plan.ends.tolist(), strict=True)
            ]
        rel = (offsets - plan.starts[plan.request_of]).tolist()
        size = (ends - offsets).tolist()
        return [
            chunks[g][r : r + k]
            for g, r, k in zip(plan.request_of.tolist(), rel, size, strict=True)
        ]

    def _framed_blocks(self, local: IntArray, size: int) -> list[bytes]:
        blocks = local // size
        held: dict[int, bytes] = {}
        for b in np.unique(blocks).tolist():
            data = self._cache.get(b)
            if data is None:
                last = min((b + 1) * size, len(self._start)) - 1
                data = self._get(int(self._start[b * size]), int(self._end[last]))
                self._cache[b] = data
                if len(self._cache) > self._cache_blocks:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(b)
            held[b] = data
        base = self._start[blocks * size]
        rel = (self._start[local] - base).tolist()
        end = (self._end[local] - base).tolist()
        return [held[b][r:e] for b, r, e in zip(blocks.tolist(), rel, end, strict=True)]

    def read(self, local: IntArray, verify: bool = True) -> list[bytes]:
        """Returns the records ``local`` (indices within this file), CRC-checked."""
        if len(local) == 0:
            return []
        if self.block_records is None:
            framed = self._framed_coalesced(local)
        else:
            framed = self._framed_blocks(local, self.block_records)
        records = [f[_H:-_F] for f in framed]
        if verify:
            stored = np.array([framing.read_footer(f, len(f) - _F) for f in framed], np.uint32)
            verify_batch(
                records, stored, path=self.path, local=local, offsets=self.index.offsets[local]
            )
        return records

    def close(self) -> None:
        """Drops cached blocks (the fetcher owns its connections)."""
        self._cache.clear()
