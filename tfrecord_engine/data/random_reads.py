"""Random reads of one local file served from a copy of the whole file (random holds).

:class:`RandomReads` is the part of
:class:`~tfrecord_engine.data.local_source.LocalFileRecords` that counts the records
read at random (``ds[i]``, ``ds[list]``, scattered batches) and, at a quarter of the
file (:data:`~.random_holds.SHARE`), reads the file whole for the reads that follow: a
private copy, or in a loader's worker the one its processes share
(:mod:`.held_shared`). The copy is dropped once the file changes (checked about once a
second). When random holds are on is the dataset's decision (:mod:`.random_holds`).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

from ..errors import StaleIndexError
from . import held as _held
from .held import Held, Holder, unkeep
from .held_shared import SharedCopies, attached_copy
from .random_holds import RECHECK_READS, RECHECK_S, SHARE, RandomHolds, in_epoch
from .spans import IntArray

__all__ = ["NEVER", "RandomReader", "RandomReads", "scattered"]

#: (A count of random reads never reached: random holds off.)
NEVER = 1 << 62


class RandomReader(Holder, Protocol):
    """What :class:`RandomReads` needs of the reader it is part of (its own methods
    included: they call each other through the reader)."""

    random_holds: RandomHolds | None
    _random: int
    _auto_at: int
    _auto: bool
    _auto_busy: bool
    _attach_first: bool
    _auto_reads: int
    _auto_seen: float
    _copy: Held | None
    _holders: int
    _lock: threading.Lock

    def _set_held(self, copy: Held) -> None: ...

    def hold(
        self,
        verify: bool = True,
        share: SharedCopies | None = None,
        budget: int | None = None,
        joint: _held.Joint | None = None,
        *,
        shared_only: bool = False,
    ) -> None: ...

    def release(self, keep: int = 0) -> None: ...

    def share_started(self) -> None: ...

    def random_read(self, records: int, verify: bool) -> None: ...

    def random_reached(self, verify: bool) -> None: ...

    def hold_for_random(self, verify: bool) -> None: ...

    def auto_tick(self) -> None: ...

    def auto_recheck(self) -> None: ...

    def _attach_shared(self) -> bool: ...

    def _auto_taken(self, copy: Held) -> None: ...


class RandomReads:
    """Random holds for a file reader (a mixin of
    :class:`~tfrecord_engine.data.local_source.LocalFileRecords`, whose ``__init__``
    sets the counters; see :class:`RandomReader`)."""

    #: The dataset's switch and sharing (None: random holds off for this reader).
    random_holds: RandomHolds | None
    #: The whole file in memory while held (by an epoch, or for random reads).
    _copy: Held | None

    def enable_random_holds(self: RandomReader, holds: RandomHolds) -> None:
        """Random reads of this file read it whole once they took a quarter of its
        records (:data:`~.random_holds.SHARE`), as ``holds`` allows."""
        self.random_holds = holds
        self._auto_at = max(1, len(self.index) // SHARE)
        holds.add_user(self)
        if holds.sharing():  # (opened in a spawned worker)
            self.share_started()

    def share_started(self: RandomReader) -> None:
        """The next random read looks for the file's copy shared by this process's
        siblings first (see :class:`~.random_holds.User`)."""
        if self._copy is None:
            self._attach_first = True
            self._random = 0
            self._auto_at = 1

    def random_read(self: RandomReader, records: int, verify: bool) -> None:
        """Counts ``records`` read at random (outside a hold); at the threshold, reads
        the file whole for the reads that follow (:meth:`random_reached`)."""
        self._random += records
        if self._random >= self._auto_at:
            self.random_reached(verify)

    def random_reached(self: RandomReader, verify: bool) -> None:
        """The random reads reached their threshold: a process that shares copies looks
        for one made already (once); else the file is read whole
        (:meth:`hold_for_random`)."""
        if self._attach_first:
            self._attach_first = False
            self._auto_at = max(1, len(self.index) // SHARE)
            if self._attach_shared() or self._random < self._auto_at:
                return
        self.hold_for_random(verify)

    def _attach_shared(self: RandomReader) -> bool:
        """Takes the shared copy of the file if one is complete now (see
        :func:`~.held_shared.attached_copy`); whether the file is held after."""
        holds = self.random_holds
        share = None if holds is None else holds.here()[1]
        if share is None or in_epoch():
            return False
        copy = attached_copy(self, share)
        if copy is None:
            return False
        with self._lock:
            if self._auto or self._copy is not None:
                return True
            self._holders += 1
            self._copy = copy
            self._set_held(copy)
            self._auto = True
        self._auto_taken(copy)
        return True

    def hold_for_random(self: RandomReader, verify: bool) -> None:
        """Holds the file for random reads (their count starts again): a private
        copy, or in a loader's worker the one its processes share; within the budget
        of kept copies (:data:`~.held.IN_MEMORY_LIMIT`), least recently used first.
        Nothing happens for an epoch's reads (:func:`~.random_holds.epoch_reads`:
        epochs hold files by their own rule), where the file cannot be read whole now
        (the reads go on from the file and report what is wrong), changed within the
        last seconds, or the machine's shared copies leave no room."""
        self._random = 0
        holds = self.random_holds
        may, share = (False, None) if holds is None else holds.here()
        if not may or in_epoch():
            return
        with self._lock:
            already = self._copy
            if self._auto or self._auto_busy or already is not None:
                return
            self._auto_busy = True
        try:
            # (Where no shared copy can be made, no private one per worker either.)
            self.hold(verify, share=share, budget=_held.IN_MEMORY_LIMIT, shared_only=True)
        except (OSError, StaleIndexError):
            return  # (hold let go of its count) the reads themselves raise what it is
        finally:
            self._auto_busy = False
        with self._lock:
            copy = self._copy
            taken = copy is not None and copy.identity is not None and self._holders > 0
            self._auto = taken
        if not taken or copy is None:
            self.release()  # no copy (budget), or one of a file still changing
            return
        self._auto_taken(copy)

    def _auto_taken(self: RandomReader, copy: Held) -> None:
        """The random reads' copy is taken: the recheck's clock starts, and the copy
        counts in the budget of kept copies (least recently used dropped first)."""
        self._auto_reads = RECHECK_READS
        self._auto_seen = time.monotonic()
        _held.keep(self, len(copy.data), _held.IN_MEMORY_LIMIT)

    def auto_tick(self: RandomReader) -> None:
        """One read from the random reads' copy: about once a second (every
        :data:`~.random_holds.RECHECK_READS` reads, if a second passed) the file's
        identity is checked, and the copy dropped if the file changed."""
        self._auto_reads -= 1
        if self._auto_reads <= 0:
            self._auto_reads = RECHECK_READS
            self.auto_recheck()

    def auto_recheck(self: RandomReader) -> None:
        """Drops the random reads' copy if the file changed since it was read (checked
        at most once a second, :data:`~.random_holds.RECHECK_S`)."""
        now = time.monotonic()
        if now - self._auto_seen < RECHECK_S:
            return
        self._auto_seen = now
        copy = self._copy
        if copy is not None and _held.current_identity(self) != copy.identity:
            with self._lock:
                auto, self._auto = self._auto, False
            if auto:
                unkeep(self)
                self.release()

    def _batch_copy(self: RandomReader, local: IntArray, verify: bool) -> Held | None:
        """The copy a batch read of ``local`` slices, if any: a scattered batch counts
        as random reads (and may make the copy), a read of the random reads' copy as one
        of its reads (:meth:`auto_tick`)."""
        copy = self._copy
        if copy is None:
            if self._auto_at != NEVER and scattered(local):
                self.random_read(len(local), verify)
                copy = self._copy
        elif self._auto:
            self.auto_tick()
            copy = self._copy
        return copy


def scattered(local: IntArray) -> bool:
    """Whether ``local`` is anything but a run of consecutive records (a sequential
    chunk): what random holds count."""
    return len(local) == 1 or int(local[-1]) - int(local[0]) != len(local) - 1
