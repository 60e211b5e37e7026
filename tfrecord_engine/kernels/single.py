"""The compiled loops of ``ds[i]``'s decoder: one record's walk, one packed varint run.

:func:`walk_one` walks one Example's feature map in one call (see :mod:`._single`).

:func:`tfrecord_engine.kernels.varint_runs` serves batches: its checks and conversions
cost ~10 µs a call, more than the decode of one record's run. :func:`packed_int64` calls
the same compiled loop (``_numba.varint_runs``) on one run of one record with nothing
else, ~2-3 µs whatever the run's length (numpy's decode of 200 three-byte varints costs
~20 µs). It returns None when the kernels are disabled or not loaded yet (the caller
then decodes with numpy), or when the run is torn or holds a varint over 10 bytes (the
caller's exact path then reports it).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from . import _kernels, key_hashes

__all__ = ["OneTable", "one_table", "packed_int64", "walk_one"]

I64 = npt.NDArray[np.int64]


def packed_int64(record: bytes, start: int, end: int) -> I64 | None:
    """The varints of ``record[start:end]`` as int64 (two's complement), or None.

    ``0 <= start <= end <= len(record)`` is the caller's to ensure.

    >>> from tfrecord_engine import kernels
    >>> got = packed_int64(bytes([9, 0xAC, 0x02, 0x01]), 1, 4)
    >>> got is None or got.tolist() == [300, 1]
    True
    """
    kernels = _kernels()
    if kernels is None:
        return None
    kernel: Callable[..., int] = kernels["varints"]
    buf = np.frombuffer(record, np.uint8)
    values = np.empty(end - start, np.int64)
    ok = np.empty(1, np.bool_)
    n = kernel(
        buf,
        np.array([start], np.int64),
        np.array([end], np.int64),
        values,
        np.empty(1, np.int64),
        ok,
    )
    if not ok[0]:
        return None
    return values if n == values.size else values[:n]


class OneTable:
    """The requested keys of a spec for :func:`walk_one` (build once, with
    :func:`one_table`): ``meta``, int64 rows of the hashed table (slots' keys, their
    hashes' bits), the keys' offsets in ``keys`` and how each is read (codes). The
    hashes are the compiled ``key_hash``'s, so the table is made on the first walk
    once the kernels are loaded."""

    def __init__(self, names: list[bytes], code: list[int]) -> None:
        self.names = names
        self.code = code
        self.keys = np.frombuffer(b"".join(names) or b"\0", np.uint8)
        self._meta: I64 | None = None

    def meta(self) -> I64 | None:
        """The table (None while the kernels are not loaded)."""
        if self._meta is None:
            hashed = key_hashes(self.names)
            if hashed is None:
                return None
            self._meta = _table(self.names, self.code, hashed[0])
        return self._meta


def _table(names: list[bytes], code: list[int], hashed: npt.NDArray[np.uint64]) -> I64:
    size = 8
    while size < 2 * len(names):
        size *= 2
    meta = np.full((4, size), -1, np.int64)
    hashes = np.zeros(size, np.uint64)
    for k in range(len(names)):
        h = int(hashed[k])
        idx = h & (size - 1)
        while meta[0, idx] >= 0:
            idx = (idx + 1) & (size - 1)
        meta[0, idx] = k
        hashes[idx] = h
    meta[1] = hashes.view(np.int64)
    meta[2, : len(names) + 1] = np.cumsum([0] + [len(k) for k in names])
    meta[3, : len(names)] = code
    return meta


def one_table(keys: list[bytes], code: list[int]) -> OneTable:
    """The table of ``keys`` (distinct); ``code[k]``: 0 the Feature's span only, 1 an
    int64 scalar, 2 a float32 scalar, 3 a string scalar (``_single``'s codes)."""
    return OneTable(keys, code)


def walk_one(record: bytes, keys: OneTable, n: int) -> I64 | None:
    """Walks one Example (see :mod:`._single`) for the ``n`` keys of ``keys``: ``out``
    where ``out[0, k]``, ``out[1, k]`` is the span of key ``k``'s Feature (a string
    scalar's value), ``out[2, k]`` an int64 scalar and ``out[3, k]`` a float32
    scalar's bits; None when the kernels are not loaded or the record is not of the
    shape the walk takes (every key present once, scalars as writers emit them): the
    caller's Python path decides.
    """
    kernels = _kernels()
    if kernels is None:
        return None
    kernel: Callable[..., bool] | None = kernels.get("one_walk")
    if kernel is None:
        return None
    meta = keys.meta()
    if meta is None:
        return None
    out = np.empty((4, n), np.int64)
    if not kernel(np.frombuffer(record, np.uint8), meta, keys.keys, out):
        return None
    return out
