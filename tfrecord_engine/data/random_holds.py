"""Whole files in memory for random access (``ds[i]``, ``ds[list]``, a map-style loader).

A shuffled epoch reads each file whole first (:mod:`.held`): slicing records out of a
copy in memory costs less than asking the kernel for each one (a ``pread``, or a
guarded copy out of the map), and a copy read with its CRCs checked spares every later
read the check. Random reads outside an epoch (``ds[i]``, ``ds[list]``, a PyTorch
``DataLoader`` over the dataset) get the same once they have read a quarter of a
file's records (:data:`SHARE`): the file is then read whole, its CRCs checked, and the
reads that follow slice the copy. Measured on the benchmark's record shapes (20,000
records in four files, one process): ``ds[i]`` of an image record 12.7 → 7.1 µs, random
``ds[list of 64]`` of images 706 → 348 µs, raw random batches of 1,024 mixed records
2.5 → 0.9 µs a record.

Rules (:class:`RandomHolds`, one per opened dataset):

- only for datasets of uncompressed local files whose data fit in
  :data:`~.held.IN_MEMORY_LIMIT` together (larger ones would only trade copies in and
  out of the budget); with ``mapped_reads=True`` too (slicing the copy, its CRCs
  checked once, beats slicing the map and checking every record);
- the copies count in the process's budget of kept copies (:func:`~.held.keep`): the
  least recently used is dropped first, and its file read at random again from the
  disk until another quarter of it was;
- a copy is a snapshot of the file as indexed: about once a second (:data:`RECHECK_S`)
  a read checks the file's identity (device, inode, size, modification time) and drops
  the copy when it changed, so reads see the file (and report a changed one) again;
  a file changed within the last seconds (:data:`~.held._SETTLED_NS`) is not copied;
- in a process forked from the one that opened the dataset (a ``DataLoader`` worker),
  the copy is the one shared by all such processes on the machine
  (:mod:`.held_shared`, within :data:`~.held.IN_MEMORY_LIMIT` for the machine), never
  one per worker: the owner of those shared copies is made just before the fork. Such
  a process's first random read of a file takes the file's shared copy if one is
  complete (new workers each epoch, ``persistent_workers=False``, find the copies of
  the epoch before at once); where no segment can be made, such a process makes no
  copy (reads go to the file), never a private one per worker;
- an epoch's own reads (``batches()``, ``epoch()``, the hosts built on them) never make
  such a copy: epochs hold files by their own rule (``batches(in_memory=)``);
- ``RecordDataset(..., random_holds=False)`` turns this off for a dataset.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from typing import Final, Protocol

from ..kernels.threads import ThreadFlag
from .held_shared import SharedCopies

__all__ = ["RECHECK_S", "SHARE", "RandomHolds", "epoch_reads", "in_epoch"]

#: A file is read whole once random reads took this fraction's inverse of its records
#: (4: a quarter): a shuffled pass over the file then reads it about once more in all.
SHARE: Final = 4
#: How often (seconds, at most) a read from a random-access copy checks that the file
#: is still the one copied.
RECHECK_S: Final = 1.0
#: Reads from a copy between two looks at the clock (the recheck above).
RECHECK_READS: Final = 256

_LIVE: weakref.WeakSet[RandomHolds] = weakref.WeakSet()
_EPOCH = ThreadFlag()


def epoch_reads() -> contextlib.AbstractContextManager[None]:
    """Marks this thread's reads as an epoch's (they make no random-access copy)."""
    return _EPOCH.set()


def in_epoch() -> bool:
    """Whether this thread reads for an epoch now (:func:`epoch_reads`)."""
    return _EPOCH.on


_LIVE_LOCK = threading.Lock()


class User(Protocol):
    """What counts random reads against a dataset's copies (a file's reader, the
    gather over a dataset's shards)."""

    def share_started(self) -> None:
        """This process shares the copies of the process it was started from: the
        next random read of each file looks for a copy made already (a loader's
        workers of an earlier epoch) before counting towards one of its own."""


class RandomHolds:
    """The random-access copies of one dataset's files (shared by its views and
    copies): whether they are made and, in the processes a loader forks or spawns from
    the dataset's, the owner of the copies those processes share.

    Args:
        enabled: ``RecordDataset(..., random_holds=)``; ``False``: random reads always
            go to the files.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        #: The process that made the dataset (its copies are private there).
        self.pid = os.getpid()
        #: The owner of the copies shared by the processes started from :attr:`pid`:
        #: made just before the first fork (:func:`_before_fork`) or when the dataset is
        #: pickled for a spawned process; ``None`` until then.
        self.share: SharedCopies | None = None
        #: What counts random reads for these copies (told when a fork shares them).
        self._users: weakref.WeakSet[User] = weakref.WeakSet()
        with _LIVE_LOCK:
            _LIVE.add(self)

    def __getstate__(self) -> dict[str, object]:
        if self.enabled and self.share is None and os.getpid() == self.pid:
            self.share = SharedCopies()  # (for the process the pickle is for)
        return {"enabled": self.enabled, "pid": self.pid, "share": self.share}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.enabled = bool(state["enabled"])
        self.pid = int(state["pid"])  # type: ignore[call-overload]
        share = state["share"]
        self.share = share if isinstance(share, SharedCopies) else None
        self._users = weakref.WeakSet()

    def here(self) -> tuple[bool, SharedCopies | None]:
        """``(may copy, shared owner)`` in this process: a private copy in the process
        that made the dataset, or in one not started from it (a pickle loaded
        elsewhere); in a process it started (a loader's or decoder's worker), the
        copy shared by them all, or none where no owner was made."""
        if not self.enabled:
            return False, None
        here = os.getpid()
        if here == self.pid or os.getppid() != self.pid:
            return True, None
        return self.share is not None, self.share

    def sharing(self) -> bool:
        """Whether this process takes the copies shared with others (see :meth:`here`)."""
        return self.here()[1] is not None

    def add_user(self, user: User) -> None:
        """Registers ``user`` (kept weakly) to be told when a fork starts sharing."""
        self._users.add(user)


def _before_fork() -> None:
    """Gives every dataset made in this process an owner of shared copies, so that its
    forked children (loader workers) share one copy per file instead of one each."""
    here = os.getpid()
    with _LIVE_LOCK:
        live = list(_LIVE)
    for holds in live:
        if holds.enabled and holds.pid == here and holds.share is None:
            holds.share = SharedCopies()


def _in_child() -> None:
    """In a forked child: a new lock (the parent's may have been held by a thread the
    child lacks), and the datasets whose copies it shares look for them first."""
    global _LIVE_LOCK  # noqa: PLW0603 - one module-wide lock, replaced after fork
    _LIVE_LOCK = threading.Lock()
    for holds in list(_LIVE):
        if holds.sharing():
            for user in list(holds._users):
                user.share_started()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_in_child)
