"""The counters of a :class:`~.batch.BatchDecoder`: which paths decoded its records."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DecodeStats"]


@dataclass
class DecodeStats:
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
