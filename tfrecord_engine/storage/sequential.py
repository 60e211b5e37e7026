"""Reading ahead of a remote file read in order: several range requests in flight.

A sequential epoch over a remote file asks for one span of bytes per chunk of records
(each chunk's coalesced range), one after the other: with a store's time to first byte
(10-50 ms on S3/GCS) every chunk waits for its own request. :class:`SequentialRanges`
wraps a file's range fetcher and, once two calls in a row asked for adjacent spans
(``[a, b)`` then ``[b, c)``), keeps the next spans requested ahead: pieces as long as
the longest span of the run (at most :data:`MAX_PIECE`), up to :data:`WINDOW` bytes (and
:data:`MAX_PIECES` pieces) past the last byte asked for, all in flight together; a file
read ahead to its end hands on to the next file of the dataset (:func:`link`). A later
call is answered from those pieces; what they do not cover is asked for as before. Any
other call (a shuffled batch's scattered ranges, a jump) drops the pieces and is passed
through unchanged. (Decode workers, which get every other chunk, never see two adjacent
calls: they read nothing ahead, so nothing is fetched twice.)

What it promises:

- the same bytes as the wrapped fetcher, for every call (pieces are cut from the same
  file, through the same fetcher, with its retries and version checks);
- bounded memory: at most ``WINDOW`` bytes ahead per file (plus one piece);
- the same requests for a file read in equal spans of at most ``MAX_PIECE`` bytes (each
  piece is the span the next call asks for), and never a request past the file's end;
- a piece that failed is asked for again by the call that needs it, so its error (or
  its retry) is that call's, located as before.
"""

from __future__ import annotations

import collections
import itertools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final

__all__ = ["MAX_PIECE", "MAX_PIECES", "WINDOW", "SequentialRanges", "link"]

RangesFetcher = Callable[[list[int], list[int]], list[bytes]]

#: Bytes requested ahead of a file read in order.
WINDOW: Final = 32 << 20
#: Pieces requested ahead (short spans must not become thousands of tiny requests).
MAX_PIECES: Final = 8
#: Pieces are at most this long (a long span becomes several requests in flight at once;
#: 4 MiB: the fastest raw GET size measured against SeaweedFS, benchmarks/bench_remote.py).
MAX_PIECE: Final = 4 << 20
#: Threads that send the pieces ahead (process-wide; each piece is one request).
THREADS: Final = 8

_POOL: list[tuple[int, ThreadPoolExecutor]] = []
_POOL_LOCK = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    """The process's read-ahead threads (a forked child gets its own: its parent's
    threads do not exist there)."""
    with _POOL_LOCK:
        if not _POOL or _POOL[0][0] != os.getpid():
            _POOL[:] = [(os.getpid(), ThreadPoolExecutor(THREADS, "tfe-seq-ahead"))]
        return _POOL[0][1]


def _span(starts: Sequence[int], ends: Sequence[int]) -> tuple[int, int] | None:
    """``(first, last)`` when the ranges are in order and touch end to start."""
    if not starts:
        return None
    for i in range(1, len(starts)):
        if starts[i] != ends[i - 1]:
            return None
    return starts[0], ends[-1]


class SequentialRanges:
    """A range fetcher (``fetch_ranges(starts, ends)``) that reads ahead of a file read
    in order; see the module doc.

    Args:
        fetch_ranges: the file's own fetcher (concurrent, retried, version-checked).
        size: the file's size in bytes.
        window: bytes to keep requested ahead.

    Example:
        >>> data = bytes(range(100))
        >>> asked = []
        >>> def fetch(starts, ends):
        ...     asked.extend(zip(starts, ends))
        ...     return [data[a:b] for a, b in zip(starts, ends)]
        >>> f = SequentialRanges(fetch, len(data), window=20)
        >>> [f([a], [a + 10])[0] == data[a : a + 10] for a in range(0, 100, 10)]
        [True, True, True, True, True, True, True, True, True, True]
        >>> sorted(asked) == [(a, a + 10) for a in range(0, 100, 10)]  # once each
        True
    """

    def __init__(self, fetch_ranges: RangesFetcher, size: int, *, window: int = WINDOW) -> None:
        self._fetch = fetch_ranges
        self._size = size
        self._window = window
        self._lock = threading.Lock()
        self._end: int | None = None  # the end of the last call's span
        self._ahead = False  # two adjacent spans in a row: read ahead
        self._piece = 0
        self._pieces: collections.OrderedDict[int, tuple[int, Future[bytes]]] = (
            collections.OrderedDict()
        )
        self._scheduled = 0  # the end of the last piece requested
        self._next: SequentialRanges | None = None  # the file read after this one
        self._handed_on = False

    def __call__(self, starts: list[int], ends: list[int]) -> list[bytes]:
        span = _span(starts, ends)
        if span is None:
            self._drop()
            return self._fetch(starts, ends)
        first, last = span
        with self._lock:
            adjacent = self._end == first
            self._ahead = adjacent
            self._end = last
            # Pieces as long as the longest span of this run (a chunk cut short where
            # it crossed into the next file does not shrink them).
            longest = self._piece if adjacent else 0
            self._piece = max(1, longest, min(MAX_PIECE, last - first))
        if adjacent:
            self._schedule(last)  # before waiting: the next pieces are in flight meanwhile
        data = self._take(first, last)
        if not adjacent:
            self._drop()
        return [data[a - first : b - first] for a, b in zip(starts, ends, strict=True)]

    def _take(self, first: int, last: int) -> bytes:
        """``[first, last)`` from the pieces requested ahead, the rest asked for now."""
        parts: list[bytes] = []
        cur = first
        while cur < last:
            with self._lock:
                while self._pieces and next(iter(self._pieces)) < cur:
                    _, (_, stale) = self._pieces.popitem(last=False)
                    stale.cancel()
                found = self._pieces.pop(cur, None)
            if found is None:
                nxt = self._next_piece_after(cur, last)
                parts.append(self._fetch([cur], [nxt])[0])
                cur = nxt
                continue
            end, future = found
            try:
                got = future.result()
            except Exception:  # noqa: BLE001 - asked for again below: that call's error
                got = self._fetch([cur], [end])[0]
            if end > last:  # the rest of the piece serves the next call
                rest: Future[bytes] = Future()
                rest.set_result(got[last - cur :])
                with self._lock:
                    self._pieces[last] = (end, rest)
                    self._pieces.move_to_end(last, last=False)
                got = got[: last - cur]
                end = last
            parts.append(got)
            cur = end
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _next_piece_after(self, cur: int, last: int) -> int:
        with self._lock:
            later = [s for s in self._pieces if cur < s < last]
        return min(later) if later else last

    def _schedule(self, frontier: int) -> None:
        """Requests pieces ahead of ``frontier`` up to the window."""
        with self._lock:
            start = max(frontier, self._scheduled)
            stop = min(self._size, frontier + self._window)
            piece = self._piece
            new: list[tuple[int, int]] = []
            while start < stop and self._ahead and len(self._pieces) + len(new) < MAX_PIECES:
                end = min(start + piece, self._size)
                new.append((start, end))
                start = end
            self._scheduled = max(self._scheduled, start)
            left = self._window - (stop - frontier)
            hand_on = stop == self._size and not self._handed_on and left > 0 and self._ahead
            self._handed_on = self._handed_on or hand_on
        if hand_on and self._next is not None:
            self._next.start_ahead(piece, left)
        pool = _executor()
        for a, b in new:
            future = pool.submit(self._one, a, b)
            with self._lock:
                self._pieces[a] = (b, future)

    def start_ahead(self, piece: int, window: int) -> None:
        """Reads this file's start ahead: the file before it in a sequential read is
        requested up to its end."""
        with self._lock:
            if self._pieces:
                return  # read ahead already
            self._end = 0  # a first call from byte 0 continues the read in order
            self._ahead = True
            self._piece = piece
            window = min(window, self._window)
        self._schedule_window(0, window)

    def _schedule_window(self, frontier: int, window: int) -> None:
        saved, self._window = self._window, window
        try:
            self._schedule(frontier)
        finally:
            self._window = saved

    def _one(self, start: int, end: int) -> bytes:
        return self._fetch([start], [end])[0]

    def _drop(self) -> None:
        """Forgets the pieces (an out-of-order call: they would not be used)."""
        with self._lock:
            pieces, self._pieces = self._pieces, collections.OrderedDict()
            self._scheduled = 0
            self._ahead = False
            self._handed_on = False
            self._piece = 0
        for _, future in pieces.values():
            future.cancel()


def link(fetchers: Sequence[object]) -> None:
    """Chains the :class:`SequentialRanges` of a dataset's files in file order: a file
    read ahead up to its end starts the next one's first pieces (a sequential epoch goes
    on into it). Other fetchers (``None``, local files) break the chain."""
    for a, b in itertools.pairwise(fetchers):
        if isinstance(a, SequentialRanges):
            a._next = b if isinstance(b, SequentialRanges) else None
