"""Damage for tests: corruptions of framed bytes, as Hypothesis strategies and seeded draws.

A :class:`Damage` is a pure description (flip, burst, overwrite, truncate) applied with
:meth:`Damage.apply`, so a failing example prints exactly what was done to the file.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np
from hypothesis import strategies as st

from ..records import framing

__all__ = [
    "Damage",
    "damages",
    "random_damage",
    "record_spans",
]

Kind = Literal["flip", "burst", "overwrite", "truncate"]


@dataclasses.dataclass(frozen=True, slots=True)
class Damage:
    """One corruption of a byte string.

    ``flip``: xor ``data[0]`` into the byte at ``offset`` (a bit flip when it has one
    bit set). ``burst``: xor ``data`` into the bytes from ``offset``. ``overwrite``:
    replace the bytes from ``offset`` with ``data``. ``truncate``: keep ``offset`` bytes.
    Bytes past the end are not written (the file keeps its size unless truncated).
    """

    kind: Kind
    offset: int
    data: bytes = b""

    def apply(self, blob: bytes) -> bytes:
        """Returns ``blob`` with this damage applied."""
        if self.kind == "truncate":
            return blob[: self.offset]
        out = bytearray(blob)
        end = min(len(out), self.offset + len(self.data))
        for i in range(self.offset, end):
            b = self.data[i - self.offset]
            out[i] = b if self.kind == "overwrite" else out[i] ^ b
        return bytes(out)


def record_spans(records: list[bytes]) -> list[tuple[int, int]]:
    """Half-open byte ranges of each framed record in ``framing.frame_many(records)``."""
    spans = []
    pos = 0
    for r in records:
        end = pos + len(r) + framing.FRAME_OVERHEAD
        spans.append((pos, end))
        pos = end
    return spans


def damages(size: int) -> st.SearchStrategy[Damage]:
    """Corruptions of a ``size``-byte blob (``size`` >= 1) that change at least one byte.

    Overwrites may happen to write the bytes already there; callers that need a real
    change compare the result with the original.
    """
    offsets = st.integers(0, size - 1)
    nonzero = st.binary(min_size=1, max_size=64).filter(any)
    return st.one_of(
        st.builds(
            Damage, st.just("flip"), offsets, st.sampled_from([bytes([1 << b]) for b in range(8)])
        ),
        st.builds(Damage, st.just("burst"), offsets, nonzero),
        st.builds(Damage, st.just("overwrite"), offsets, st.binary(min_size=1, max_size=64)),
        st.builds(Damage, st.just("truncate"), st.integers(0, size - 1)),
    )


def random_damage(rng: np.random.Generator, size: int) -> Damage:
    """A seeded draw of a burst or an overwrite (1-64 bytes) inside a ``size``-byte blob.

    For loops of thousands of cases, where Hypothesis would be needlessly slow.
    """
    offset = int(rng.integers(0, size))
    n = int(rng.integers(1, 65))
    if rng.random() < 0.5:
        data = rng.integers(0, 256, n, dtype=np.uint8)
        data[0] |= 1  # at least one flipped bit
        return Damage("burst", offset, data.tobytes())
    return Damage("overwrite", offset, rng.integers(0, 256, n, dtype=np.uint8).tobytes())
