"""The counters of a :class:`~.batch.BatchDecoder`: which paths decoded its records."""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["Counters", "DecodeStats"]

# (Epochs decode chunks on two read-ahead threads: counts are added under one lock, a
# module's, so that the counters stay plain picklable dataclasses.)
_COUNTING = threading.Lock()


class Counters:
    """A decoder's counters: :meth:`count` adds to one, safely from several threads."""

    def count(self, name: str, n: int) -> None:
        """Adds ``n`` to the counter ``name``."""
        with _COUNTING:
            setattr(self, name, getattr(self, name) + n)


@dataclass
class DecodeStats(Counters):
    """Counters of a :class:`BatchDecoder` (cumulative).

    Attributes:
        records: records decoded.
        fallback_records: records decoded by the exact per-record path.
        exact_batches: batches handed whole to the exact path (they raised).
        template_records: records decoded by template (shared-layout) gathers.
        walked_records: records walked by the compiled walk (the rest of those neither
            templates nor the dense plan took went through the numpy lockstep walk).
    """

    records: int = 0
    fallback_records: int = 0
    exact_batches: int = 0
    template_records: int = 0
    walked_records: int = 0
