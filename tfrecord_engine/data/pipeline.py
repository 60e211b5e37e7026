"""Bounded, ordered read-ahead on worker threads.

The engine's heavy per-batch work (mmap gathers, hardware CRC32C, numpy decoding)
releases the GIL, so a few threads overlap it with the consumer. :class:`ReadAhead`
maps a function over a stream of work items on worker threads while keeping:

- **order**: results come out in input order, whatever the thread count or timing;
- **bounded memory**: at most ``depth`` items are in flight or waiting;
- **errors in the consumer**: an exception raised by ``fn`` is re-raised by the
  iterator at that item's position (earlier results are delivered first), and ends
  the iteration, as does an interrupt (``KeyboardInterrupt``) while waiting: the
  caller must treat what follows as cut short, never as the rest of the items;
- **clean shutdown**: closing the iterator (or leaving a ``with`` block, or dropping a
  partly consumed ``for`` loop's generator) cancels queued work and joins the threads.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Generic, TypeVar

from ..errors import InvalidArgumentError

__all__ = ["ReadAhead"]

T = TypeVar("T")
R = TypeVar("R")


class ReadAhead(Generic[T, R]):
    """Iterates ``fn(item)`` for each item, computed ahead on ``workers`` threads.

    Args:
        items: the work items, consumed lazily (never more than ``depth`` ahead).
        fn: the function to apply; it should release the GIL for real overlap.
        workers: worker threads; ``0`` computes each result synchronously on the
            consumer's thread (same output, no threads).
        depth: the most results computed ahead of the consumer (≥ 1).

    Example:
        >>> with ReadAhead(range(5), lambda i: i * i, workers=2, depth=3) as results:
        ...     list(results)
        [0, 1, 4, 9, 16]
    """

    def __init__(
        self,
        items: Iterable[T],
        fn: Callable[[T], R],
        *,
        workers: int = 2,
        depth: int = 4,
    ) -> None:
        if workers < 0:
            raise InvalidArgumentError(f"workers must be >= 0, got {workers}")
        if depth < 1:
            raise InvalidArgumentError(f"depth must be >= 1, got {depth}")
        self._items = iter(items)
        self._fn = fn
        self._depth = depth
        self._executor = (
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tfe-readahead")
            if workers
            else None
        )
        self._pending: collections.deque[Future[R]] = collections.deque()
        self._exhausted = False
        self._closed = False
        self._lock = threading.Lock()

    def _fill(self) -> None:
        executor = self._executor
        assert executor is not None
        while not self._exhausted and len(self._pending) < self._depth:
            try:
                item = next(self._items)
            except StopIteration:
                self._exhausted = True
                break
            self._pending.append(executor.submit(self._fn, item))

    def start(self) -> None:
        """Submits the first ``depth`` items now rather than at the first ``next``."""
        with self._lock:
            if self._executor is not None and not self._closed:
                self._fill()

    def __iter__(self) -> Iterator[R]:
        return self

    def __next__(self) -> R:
        if self._closed:
            raise StopIteration
        if self._executor is None:
            try:
                return self._fn(next(self._items))
            except BaseException:
                # (An error or an interrupt: the item is lost, as on the threaded path.)
                self.close()
                raise
        with self._lock:
            self._fill()
            if not self._pending:
                self.close()
                raise StopIteration
            future = self._pending.popleft()
            # Keep the window full while the consumer works on this result.
            self._fill()
        try:
            return future.result()
        except BaseException:
            self.close()
            raise

    @property
    def in_flight(self) -> int:
        """Results computed or being computed ahead of the consumer."""
        return len(self._pending)

    def close(self) -> None:
        """Cancels queued work and joins the worker threads. Idempotent."""
        self._shutdown(wait=True)

    def _shutdown(self, *, wait: bool) -> None:
        if self._closed:
            return
        self._closed = True
        for future in self._pending:
            future.cancel()
        self._pending.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=wait, cancel_futures=True)

    def __enter__(self) -> ReadAhead[T, R]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # A dropped, partly consumed iterator must not leave threads behind. It must not
        # join them either: the garbage collector runs finalizers wherever it happens to
        # run, even inside threading internals that hold a non-reentrant lock a join
        # needs (seen as a hang in a thread's start-up). The workers exit on their own
        # once their queued work is cancelled.
        if not getattr(self, "_closed", True):
            self._shutdown(wait=False)
