"""Typed entry points of the compiled walk of Examples (:mod:`._examples`).

Each returns None when the kernels are disabled, not loaded yet (they load in the
background, see :mod:`tfrecord_engine.kernels`) or failed their self-test, or when a
span lies outside the buffer: the caller then takes its numpy path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from . import _in_bounds, _kernels, key_hashes

__all__ = [
    "ExampleWalk",
    "KeyTable",
    "bytes_lists",
    "key_table",
    "padded_rows",
    "sized_rows",
    "sparse_indices",
    "walk_examples",
]

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]


def _kernel(name: str) -> Callable[..., object] | None:
    kernels = _kernels()
    if kernels is None:
        return None
    kernel: Callable[..., object] | None = kernels.get(name)
    return kernel


@dataclass(frozen=True)
class KeyTable:
    """The selected keys of a spec, hashed for :func:`walk_examples` (build once)."""

    table: I64
    table_hash: npt.NDArray[np.uint64]
    key_at: I64
    keys: U8

    @property
    def size(self) -> int:
        """The number of keys."""
        return int(self.key_at.shape[0]) - 1


def key_table(keys: list[bytes]) -> KeyTable | None:
    """The hashed table of ``keys`` (distinct), or None when the kernels are disabled."""
    hashed = key_hashes(keys)
    if hashed is None:
        return None
    hashes = hashed[0]
    size = 8
    while size < 2 * len(keys):
        size *= 2
    table = np.full(size, -1, np.int64)
    table_hash = np.zeros(size, np.uint64)
    for k, h in enumerate(hashes.tolist()):
        idx = h & (size - 1)
        while table[idx] >= 0:
            idx = (idx + 1) & (size - 1)
        table[idx] = k
        table_hash[idx] = h
    key_at = np.cumsum([0] + [len(k) for k in keys], dtype=np.int64)
    return KeyTable(table, table_hash, key_at, np.frombuffer(b"".join(keys) or b"\0", np.uint8))


@dataclass(frozen=True)
class ExampleWalk:
    """What :func:`walk_examples` found in ``n`` records, for ``K`` selected keys.

    Attributes:
        kind: int8 ``[n, K]``: the Feature's kind (0 missing or empty, 1 bytes, 2 float,
            3 int64).
        start, end: int64 ``[n, K]``: the span of its values (a numeric list's packed
            payload, a BytesList's payload).
        bad: bool ``[n]``: records not of the canonical shape (the exact path's).
    """

    kind: npt.NDArray[np.int8]
    start: I64
    end: I64
    bad: Bool


def walk_examples(buf: U8, starts: I64, ends: I64, keys: KeyTable) -> ExampleWalk | None:
    """Walks the Examples ``buf[starts[r]:ends[r]]`` once each (see :mod:`._examples`)."""
    kernel = _kernel("ex_walk")
    if kernel is None:
        return None
    buf = np.ascontiguousarray(buf).reshape(-1)
    if not _in_bounds(buf, starts, ends):
        return None
    n = int(starts.shape[0])
    shape = (n, keys.size)
    walk = ExampleWalk(
        np.empty(shape, np.int8),
        np.empty(shape, np.int64),
        np.empty(shape, np.int64),
        np.empty(n, np.bool_),
    )
    kernel(
        buf,
        np.ascontiguousarray(starts, np.int64),
        np.ascontiguousarray(ends, np.int64),
        keys.table,
        keys.table_hash,
        keys.key_at,
        keys.keys,
        walk.kind,
        walk.start,
        walk.end,
        walk.bad,
    )
    return walk


def bytes_lists(buf: U8, starts: I64, ends: I64) -> tuple[I64, I64, I64, Bool] | None:
    """The values of the BytesList payloads ``buf[starts[j]:ends[j]]`` (spans inside
    ``buf``): ``(value_starts, value_ends, counts, ok)`` as
    ``example.lockstep.bytes_values`` returns them, except that a list not ok has count
    0 and no values."""
    kernel = _kernel("ex_bytes")
    if kernel is None:
        return None
    m = int(starts.shape[0])
    counts = np.empty(m, np.int64)
    ok = np.empty(m, np.bool_)
    spans: tuple[I64, I64] = kernel(  # type: ignore[assignment]  # (two arrays)
        np.ascontiguousarray(buf).reshape(-1),
        np.ascontiguousarray(starts, np.int64),
        np.ascontiguousarray(ends, np.int64),
        counts,
        ok,
    )
    return spans[0], spans[1], counts, ok


def padded_rows(buf: U8, starts: I64, ends: I64, width: int) -> U8 | None:
    """``buf[starts[j]:ends[j]]`` as row j of a ``uint8 [n, w]`` array, zero-padded, ``w``
    being ``width`` rounded up to a multiple of 8 (every span at most ``width`` bytes,
    inside ``buf``), or None without the kernels."""
    kernel = _kernel("ex_pad")
    if kernel is None:
        return None
    buf = np.ascontiguousarray(buf).reshape(-1)
    if not _in_bounds(buf, starts, ends) or int((ends - starts).max(initial=0)) > width:
        return None
    n = int(starts.shape[0])
    out = np.empty((n, (width + 7) // 8), np.uint64)
    kernel(buf, np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(ends, np.int64), out)
    return out.view(np.uint8).reshape(n, -1)


def sized_rows(buf: U8, spans: I64, width: int) -> npt.NDArray[np.uint64] | None:
    """Each ``buf[spans[j, 0]:spans[j, 1]]`` as row j of a ``uint64 [n, 1 + w / 8]``
    array: its size, then its bytes zero-padded to ``w`` (``width`` rounded up to a
    multiple of 8), every span at most ``width`` bytes, inside ``buf``; or None without
    the kernels."""
    kernel = _kernel("ex_rows")
    if kernel is None:
        return None
    buf = np.ascontiguousarray(buf).reshape(-1)
    spans = np.ascontiguousarray(spans, np.int64).reshape(-1, 2)
    starts, ends = spans[:, 0], spans[:, 1]
    if not _in_bounds(buf, starts, ends) or int((ends - starts).max(initial=0)) > width:
        return None
    out = np.empty((spans.shape[0], 1 + (width + 7) // 8), np.uint64)
    kernel(buf, spans, out)
    return out


def sparse_indices(counts: I64, total: int) -> I64 | None:
    """The ``int64 [total, 2]`` indices ``(record, position)`` of a VarLenFeature whose
    records hold ``counts`` values (``total`` in all), or None without the kernels (or
    counts that do not add up to ``total``)."""
    kernel = _kernel("ex_sparse")
    if kernel is None:
        return None
    counts = np.ascontiguousarray(counts, np.int64)
    if counts.shape[0] and (int(counts.min()) < 0 or int(counts.sum()) != total):
        return None
    out = np.empty((total, 2), np.int64)
    kernel(counts, out)
    return out
