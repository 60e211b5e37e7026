"""Coalescing byte ranges into fewer requests (random access to remote files).

A batch of records becomes one request per run of records that lie back to back or
at most ``max_gap`` bytes apart: a request costs a round trip, a small gap only its
bytes (see :mod:`tfrecord_engine.storage.remote` for the default gap and why).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["RangePlan", "coalesce"]

IntArray = npt.NDArray[np.int64]


class RangePlan(NamedTuple):
    """Requests covering a set of half-open ranges ``[start, end)``.

    Attributes:
        starts, ends: the requests' half-open byte ranges, in increasing offset order.
        request_of: for each input range, the request that holds it; the range is
            ``data[request_of[i]][start_i - starts[request_of[i]]:][: end_i - start_i]``.
    """

    starts: IntArray
    ends: IntArray
    request_of: IntArray


def coalesce(
    starts: IntArray, ends: IntArray, max_gap: int | None, max_request: int | None = None
) -> RangePlan:
    """Plans the requests for ranges ``[starts[i], ends[i])`` (any order, overlaps allowed).

    Ranges at most ``max_gap`` bytes apart (``0``: only touching or overlapping ones)
    share a request; ``None`` gives every range its own request. A request grows past
    ``max_request`` bytes only to hold a single range that is larger by itself (so a
    long run of records becomes several requests, which async backends send
    concurrently, instead of one unbounded one).

    >>> p = coalesce(np.array([100, 0, 10, 60]), np.array([110, 10, 20, 70]), 30)
    >>> p.starts.tolist(), p.ends.tolist(), p.request_of.tolist()
    ([0, 60], [20, 110], [1, 0, 0, 1])
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    n = len(starts)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return RangePlan(empty, empty, empty)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    new = np.ones(n, dtype=np.bool_)
    if max_gap is not None:
        # A request ends where the next range begins beyond its furthest end + the gap.
        reach = np.maximum.accumulate(e)
        new[1:] = s[1:] > reach[:-1] + max_gap
        if max_request is not None:
            _cap(s, e, new, max_request)
    first = np.flatnonzero(new)
    request_of = np.empty(n, dtype=np.int64)
    request_of[order] = np.cumsum(new) - 1
    return RangePlan(s[first], np.maximum.reduceat(e, first), request_of)


def _cap(s: IntArray, e: IntArray, new: npt.NDArray[np.bool_], max_request: int) -> None:
    """Starts new requests (in ``new``) where one would exceed ``max_request`` bytes."""
    first = np.flatnonzero(new)
    span = np.maximum.reduceat(e, first) - s[first]
    if not bool(np.any(span > max_request)):
        return  # the common case: no request to split, no per-range loop
    begin = reach = 0
    for i, (a, b) in enumerate(zip(s.tolist(), e.tolist(), strict=True)):
        # A range inside the request so far costs nothing: only growth is capped.
        if not new[i] and b > reach and b - begin > max_request:
            new[i] = True
        if new[i]:
            begin, reach = a, b
        else:
            reach = max(reach, b)
