"""Unaligned little-endian 8-byte reads at many positions of a byte buffer, in bulk.

The batch paths (header checks of the reader, the lockstep walk, template matching)
read small fixed-size fields at thousands of arbitrary offsets at once.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["read_rows", "read_words"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
_U64 = np.uint64


def read_words(buf: U8, at: I64) -> npt.NDArray[np.uint64]:
    """The 8 bytes at each position as a little-endian uint64 (zeros past the end).

    Unaligned reads are built from two aligned ones: ``word(p) = A[q] >> 8r |
    A[q+1] << (64 - 8r)`` with ``p = 8q + r`` and ``A`` the buffer viewed as uint64.
    Two 1-D gathers and a few shifts cost a fraction of fancy-indexing an ``[n, 8]``
    sliding window, which copies row by row.
    """
    n = buf.shape[0]
    full = n // 8
    limit = 8 * (full - 1)  # positions below this have both aligned words in range
    if at.size == 0:
        return np.zeros(at.shape, np.uint64)
    if int(at.max()) < limit:
        return _words_at(np.frombuffer(buf, "<u8", count=full), at)
    # Near the end: the same arithmetic over a zero-padded copy of the last bytes.
    base = max(0, limit)
    padded = np.zeros((n - base) // 8 * 8 + 16, np.uint8)
    padded[: n - base] = buf[base:]
    near = at >= base
    out = np.empty(at.shape, np.uint64)
    out[near] = _words_at(np.frombuffer(padded, "<u8"), at[near] - base)
    if not near.all():
        out[~near] = _words_at(np.frombuffer(buf, "<u8", count=full), at[~near])
    return out


def _words_at(words: npt.NDArray[np.uint64], at: I64) -> npt.NDArray[np.uint64]:
    q = at >> 3
    r = (at & 7).astype(np.uint64) << _U64(3)
    lo = words[q] >> r
    # Two shifts: a shift by 64 (r = 0) is undefined for uint64.
    hi = (words[q + 1] << (_U64(63) - r)) << _U64(1)
    out: npt.NDArray[np.uint64] = lo | hi
    return out


def read_rows(buf: U8, at: I64, size: int) -> U8:
    """``buf[at[j] : at[j] + size]`` for every j, as a ``[*at.shape, size]`` array.

    One strided gather (a copy per span); every span must lie inside ``buf``.
    """
    if size == 0 or at.size == 0:
        # (No spans: ``buf`` may even be shorter than one row.)
        return np.zeros((*at.shape, size), np.uint8)
    window = np.lib.stride_tricks.as_strided(
        buf, shape=(buf.shape[0] - size + 1, size), strides=(1, 1), writeable=False
    )
    rows: U8 = window[at]
    return rows
