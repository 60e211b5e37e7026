"""Columnar per-key feature values for a batch: the seam between decoding and assembly.

A :class:`Column` holds, for one feature key and a batch of ``n`` records, every value
concatenated in record order, how many values each record has, and whether the key was
present at all (an empty Feature counts as missing). Both decoders produce columns —
the exact per-record decoder via :func:`from_rows`, the lockstep decoder directly — and
the same assemblers (:mod:`.assemble`) turn columns into outputs, so the two paths give
identical results and identical errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .wire import KIND_BYTES, KIND_INT64, RawValues

__all__ = ["Column", "empty_values", "from_rows", "object_array"]


def object_array(values: Sequence[bytes]) -> npt.NDArray[np.object_]:
    """A 1-D object array of bytes (``np.array`` would make a fixed-width 'S' array)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def empty_values(kind: int) -> npt.NDArray[Any]:
    """A 0-length values array of the kind's dtype."""
    if kind == KIND_BYTES:
        return np.empty(0, dtype=object)
    return np.zeros(0, dtype=np.int64 if kind == KIND_INT64 else np.float32)


@dataclass(frozen=True)
class Column:
    """One key's values across a batch.

    Attributes:
        values: all values in record order (int64, float32, or object array of bytes).
        counts: int64 ``[n]``, values per record (0 where missing).
        present: bool ``[n]``, whether the record has the key with a non-empty Feature.
    """

    values: npt.NDArray[Any]
    counts: npt.NDArray[np.int64]
    present: npt.NDArray[np.bool_]

    @property
    def offsets(self) -> npt.NDArray[np.int64]:
        """``[n + 1]`` offsets of each record's values in :attr:`values`."""
        out = np.zeros(self.counts.shape[0] + 1, np.int64)
        np.cumsum(self.counts, out=out[1:])
        return out

    def slice(self, start: int, stop: int) -> Column:
        """The column of records ``[start, stop)`` (a view where numpy allows)."""
        o = self.offsets
        return Column(
            self.values[o[start] : o[stop]],
            self.counts[start:stop],
            self.present[start:stop],
        )


def from_rows(rows: Sequence[dict[str, RawValues | None]], key: str, kind: int) -> Column:
    """Builds the column of ``key`` from per-record decoded rows."""
    n = len(rows)
    counts = np.zeros(n, np.int64)
    present = np.zeros(n, np.bool_)
    parts: list[RawValues] = []
    for i, row in enumerate(rows):
        v = row[key]
        if v is None:
            continue
        present[i] = True
        counts[i] = len(v)
        if len(v):
            parts.append(v)
    if kind == KIND_BYTES:
        flat: list[bytes] = []
        for p in parts:
            flat.extend(p)  # type: ignore[arg-type]
        values = object_array(flat)
    elif parts:
        values = np.concatenate(
            [np.asarray(p, dtype=np.int64 if kind == KIND_INT64 else np.float32) for p in parts]
        )
    else:
        values = empty_values(kind)
    return Column(values, counts, present)
