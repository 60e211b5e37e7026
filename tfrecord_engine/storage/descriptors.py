"""One budget of open file descriptors for every reader of the process that keeps files open.

A dataset of thousands of shards cannot keep a descriptor (or a map, which holds one of
its own) per shard open: the usual limit is 1,024 per process, and once it is reached
the process cannot even import a module. So readers that keep files open between reads
report what they hold to :data:`CACHE`, which keeps the total within a budget taken
from ``RLIMIT_NOFILE`` (half the soft limit, and at least 64 below it, never under 8):
before a reader opens one more, the least recently used holders not in use close
theirs, and reopen on their next read. A process that stays within its budget never
closes anything, so a few shards cost nothing.

Lock order (no deadlock): a holder may call into the cache while it holds its own lock;
the cache never waits for a holder's lock. It asks a holder to close with
:meth:`Holder.close_descriptors`, which only *tries* its lock (busy: it declines), and
it never holds its own lock during that call. A holder leaving (closed, or collected:
its finalizer or weakref callback may run inside any call, on any thread, the cache's
own included) only tries the cache's lock too, and when it is taken leaves a note that
the next call under the lock carries out: it never waits, so it can neither deadlock
nor find the cache half-changed.
"""

from __future__ import annotations

import errno
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol, TypeVar

__all__ = [
    "CACHE",
    "DescriptorCache",
    "Holder",
    "budget_for",
    "exhausted",
    "open_file",
    "soft_limit",
    "with_room",
]

T = TypeVar("T")

#: Descriptors left to the rest of the process (imports, sockets, pipes, logs) at least.
RESERVE = 64
#: The smallest budget, whatever the limit (a limit that low fails elsewhere first).
MIN_BUDGET = 8
#: Taken as the limit where the system has none (or reports none).
_UNLIMITED = 1 << 20
_EXHAUSTED = (errno.EMFILE, errno.ENFILE)


def soft_limit() -> int:
    """The process's soft limit of open descriptors (``ulimit -n``)."""
    try:
        import resource  # noqa: PLC0415 - not on Windows
    except ImportError:
        return 8192  # the C runtime's table on Windows
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return _UNLIMITED
    if soft == resource.RLIM_INFINITY or soft < 0:
        return _UNLIMITED
    return int(soft)


def budget_for(limit: int) -> int:
    """The descriptors that readers may keep open under a soft limit of ``limit``."""
    return max(MIN_BUDGET, min(limit // 2, limit - RESERVE))


_Entry = tuple["weakref.ref[Holder]", int]  # the holder, and how many it keeps


class Holder(Protocol):
    """A reader that keeps descriptors open between reads (see :class:`DescriptorCache`)."""

    #: Set by the holder when it is read from; the cache clears it and passes the holder
    #: over once (a second chance) before closing its descriptors.
    recently_used: bool

    def close_descriptors(self) -> bool:
        """Closes every descriptor (and map) the holder keeps, unless one is in use or its
        lock is taken (it must not wait for it); it then reports ``holds(self, 0)``.
        Returns whether it closed them."""
        ...


class DescriptorCache:
    """The descriptors that holders keep open, least recently used first, within a budget.

    Holders report what they keep with :meth:`holds` and call :meth:`make_room` before
    opening more; :attr:`evictions` counts the holders asked to close, bumped by the
    holder (:meth:`evicting`) before it closes anything, so a reader that used a holder's
    map without pinning it can tell, after the fact, that it may have been unmapped.
    """

    def __init__(self, limit: Callable[[], int] = soft_limit) -> None:
        self._limit = limit
        self._budget = budget_for(limit())
        self._lock = threading.Lock()
        #: By ``id``: the holder and how many descriptors it keeps, oldest first.
        self._held: OrderedDict[int, _Entry] = OrderedDict()
        self._total = 0
        #: Entries to take out, left by holders that found the lock taken.
        self._leaving: list[tuple[int, _Entry]] = []
        #: Holders that closed their descriptors for the budget (only ever grows).
        self.evictions = 0

    @property
    def total(self) -> int:
        """Descriptors kept open by holders now."""
        return self._total

    @property
    def budget(self) -> int:
        """Descriptors holders may keep (from the soft limit, read again when it is met)."""
        return self._budget

    def holds(self, holder: Holder, count: int) -> None:
        """Records that ``holder`` keeps ``count`` descriptors open now (``0``: none;
        this one never waits, see the module's notes)."""
        key = id(holder)
        if not count:
            entry = self._held.get(key)
            if entry is not None:
                self._leave(key, entry)
            return
        # Allocated before the lock: a collection they start may run finalizers.
        new = (weakref.ref(holder, self._gone(key)), count)
        with self._lock:
            self._settle()
            old = self._held.pop(key, None)
            if old is not None:
                self._total -= old[1]
            self._held[key] = new
            self._total += count

    def _leave(self, key: int, entry: _Entry) -> None:
        """Takes ``entry`` out now, or (the lock taken) at the next call under the lock."""
        if self._lock.acquire(blocking=False):
            try:
                self._settle()
                self._drop(key, entry)
            finally:
                self._lock.release()
        else:
            self._leaving.append((key, entry))

    def _drop(self, key: int, entry: _Entry) -> None:
        """Takes ``entry`` out if it is still ``key``'s (the lock held)."""
        if self._held.get(key) is entry:
            del self._held[key]
            self._total -= entry[1]

    def _settle(self) -> None:
        """Carries out the notes of holders that left (the lock held)."""
        while self._leaving:
            self._drop(*self._leaving.pop())

    def _gone(self, key: int) -> Callable[[object], None]:
        """A weakref callback: a holder collected without closing leaves the count."""

        def forget(_ref: object) -> None:
            entry = self._held.get(key)
            if entry is not None and entry[0]() is None:
                self._leave(key, entry)

        return forget

    def evicting(self) -> None:
        """Called by a holder closing its descriptors for the budget, before it closes."""
        with self._lock:
            self.evictions += 1

    def make_room(self, need: int, *, everything: bool = False) -> None:
        """Asks the least recently used holders not in use to close their descriptors,
        until ``need`` more fit within the budget (``everything``: all that can).

        Never waits for a holder: one in use is passed over (the budget may then be
        exceeded for a while, which its distance to the limit allows for).
        """
        if not everything and self._total + need <= self._budget:
            return  # the common case: no lock, no system call
        self._budget = budget_for(self._limit())  # the limit may have changed since
        target = 0 if everything else self._budget - need
        # Each holder is visited at most twice: once to clear its mark, once to close.
        for _ in range(2 * len(self._held) + 1):
            if self._total <= target:
                return
            with self._lock:
                self._settle()
                if not self._held:
                    return
                key = next(iter(self._held))
                ref = self._held[key][0]
                self._held.move_to_end(key)  # a busy or recently used one goes last
            holder = ref()
            if holder is None:
                continue  # (its weakref callback takes it out)
            if holder.recently_used and not everything:
                holder.recently_used = False
                continue
            holder.close_descriptors()

    def renew_lock(self) -> None:
        """In a forked child: the lock may have been held by a thread the child lacks."""
        self._lock = threading.Lock()


#: The process's cache: every dataset's readers share the one limit of the process.
CACHE = DescriptorCache()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=CACHE.renew_lock)


def exhausted(path: str, exc: OSError) -> OSError:
    """The error for ``path`` that could not be opened (or mapped) for lack of
    descriptors, saying what to do."""
    if exc.errno == errno.ENFILE:
        what = (
            "the system's table of open files is full (ENFILE): close other programs' "
            "files or raise the system's limit (fs.file-max)"
        )
    else:
        what = (
            f"too many open files in this process (the limit is {soft_limit()}; datasets "
            f"keep {CACHE.total} of them open and closed all they could): raise the limit "
            "(`ulimit -n 65536` in the shell that starts Python, or "
            "resource.setrlimit(resource.RLIMIT_NOFILE, ...) at the start), or open fewer "
            "files at once (fewer shards, datasets or loader workers)"
        )
    return OSError(exc.errno, f"{path}: cannot open: {what}")


def with_room(path: str, need: int, make: Callable[[], T], cache: DescriptorCache = CACHE) -> T:
    """``make()`` (an open or a map that takes ``need`` descriptors), after making room;
    when the process has none left anyway, again after closing every holder not in use,
    and then :func:`exhausted`'s error."""
    cache.make_room(need)
    try:
        return make()
    except OSError as exc:
        if exc.errno not in _EXHAUSTED:
            raise
    cache.make_room(need, everything=True)
    try:
        return make()
    except OSError as exc:
        if exc.errno in _EXHAUSTED:
            raise exhausted(path, exc) from exc
        raise


def open_file(path: str, cache: DescriptorCache = CACHE) -> int:
    """A read-only descriptor of ``path`` (closed on exec), within the budget
    (:func:`with_room`): the caller reports it to ``cache`` with :meth:`~DescriptorCache.holds`."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    return with_room(path, 1, lambda: os.open(path, flags), cache)
