"""Typed entry points of the compiled SequenceExample loops (:mod:`._sequence`).

Each returns None when the kernels are disabled, not loaded yet (they load in the
background, see :mod:`tfrecord_engine.kernels`) or failed their self-test, or when a
span lies outside the buffer: the caller then takes the exact per-record path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from . import _in_bounds, _kernels

__all__ = [
    "OneSequenceWalk",
    "SequenceWalk",
    "dense_steps",
    "numeric_lists",
    "sparse_indices",
    "walk_sequences",
]

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]


def _kernel(name: str) -> Callable[..., object] | None:
    kernels = _kernels()
    if kernels is None:
        return None
    kernel: Callable[..., object] | None = kernels.get(name)
    return kernel


@dataclass(frozen=True)
class SequenceWalk:
    """What :func:`walk_sequences` found in a batch of ``n`` records.

    Attributes:
        ctx_kind: int8 ``[n, n_context]``: each context key's Feature kind, -1 missing.
        ctx_start, ctx_end: int64 ``[n, n_context]``: the span of its value list.
        seq_first: int64 ``[n, n_sequence]``: where the FeatureList's steps start in
            ``step_start``/``step_end``, -1 where it is missing.
        seq_count: int64 ``[n, n_sequence]``: its steps.
        step_start, step_end: int64: the span of each step's value list (empty for an
            empty step); one record's steps of one key are consecutive.
        bad: bool ``[n]``: records that are not the canonical shape (exact path).
    """

    ctx_kind: I8
    ctx_start: I64
    ctx_end: I64
    seq_first: I64
    seq_count: I64
    step_start: I64
    step_end: I64
    bad: npt.NDArray[np.bool_]


def walk_sequences(
    buf: U8,
    starts: I64,
    ends: I64,
    *,
    keys: list[bytes],
    ctx_kinds: list[int],
    seq_kinds: list[int],
) -> SequenceWalk | None:
    """Walks the SequenceExamples at ``buf[starts[r]:ends[r]]`` (half-open spans).

    ``keys`` lists the context keys (expected kinds ``ctx_kinds``), then the
    feature-list keys (``seq_kinds``).
    """
    kernel = _kernel("seq_walk")
    buf = np.ascontiguousarray(buf).reshape(-1)
    if kernel is None or not _in_bounds(buf, starts, ends):
        return None
    n, nc, ns = int(starts.shape[0]), len(ctx_kinds), len(seq_kinds)
    key_at = np.zeros(len(keys) + 1, np.int64)
    np.cumsum([len(k) for k in keys], out=key_at[1:])
    # A step takes 2 bytes at least: room for every step the records can hold (only
    # the part written is ever touched).
    room = (int(ends.sum() - starts.sum()) if n else 0) // 2 + 1
    step_start = np.empty(room, np.int64)
    step_end = np.empty(room, np.int64)
    walk = SequenceWalk(
        ctx_kind=np.full((n, nc), -1, np.int8),
        ctx_start=np.full((n, nc), -1, np.int64),
        ctx_end=np.full((n, nc), -1, np.int64),
        seq_first=np.full((n, ns), -1, np.int64),
        seq_count=np.zeros((n, ns), np.int64),
        step_start=step_start,
        step_end=step_end,
        bad=np.zeros(n, np.bool_),
    )
    kernel(
        buf,
        np.ascontiguousarray(starts, np.int64),
        np.ascontiguousarray(ends, np.int64),
        np.frombuffer(b"".join(keys) or b"\0", np.uint8),
        key_at,
        np.array(ctx_kinds, np.int8),
        np.array(seq_kinds, np.int8),
        walk.ctx_kind,
        walk.ctx_start,
        walk.ctx_end,
        walk.seq_first,
        walk.seq_count,
        step_start,
        step_end,
        walk.bad,
    )
    return walk


class OneSequenceWalk:
    """:func:`walk_sequences` of one record at a time, for the per-call path (``ds[i]``),
    over feature-list keys only (context entries are checked, none selected).

    The keys' arrays are made once, and the compiled loops are looked up once they
    have loaded: a call allocates its outputs and calls the walk, nothing else.

    Args:
        keys: the feature-list keys, expected kinds ``kinds`` (3 int64, 2 float32).
    """

    def __init__(self, keys: list[bytes], kinds: list[int]) -> None:
        self._keys = np.frombuffer(b"".join(keys) or b"\0", np.uint8)
        self._key_at = np.zeros(len(keys) + 1, np.int64)
        np.cumsum([len(k) for k in keys], out=self._key_at[1:])
        self._kinds = np.array(kinds, np.int8)
        self._walk: Callable[..., object] | None = None
        self._numeric: Callable[..., object] | None = None

    def __call__(self, buf: U8) -> tuple[I64, I64, I64, I64] | None:
        """``(first, count, step_start, step_end)`` of the record ``buf`` (all of it):
        per key, where its steps start in the step spans (-1: no such FeatureList) and
        how many; per step, its value list's span. ``None``: not the canonical shape
        (see :func:`walk_sequences`) or the kernels not loaded yet."""
        walk = self._walk
        if walk is None:
            walk = self._walk = _kernel("seq_walk")
            self._numeric = _kernel("seq_numeric")
            if walk is None:
                return None
        ns = self._kinds.shape[0]
        n = buf.shape[0]
        none = np.full((1, 0), -1, np.int64)
        first = np.full((1, ns), -1, np.int64)
        count = np.zeros((1, ns), np.int64)
        room = n // 2 + 1  # (a step takes 2 bytes at least)
        step_start = np.empty(room, np.int64)
        step_end = np.empty(room, np.int64)
        bad = np.zeros(1, np.bool_)
        walk(
            buf,
            _FIRST,
            np.array([n], np.int64),
            self._keys,
            self._key_at,
            _NO_KINDS,
            self._kinds,
            np.full((1, 0), -1, np.int8),
            none,
            none,
            first,
            count,
            step_start,
            step_end,
            bad,
        )
        if bad[0]:
            return None
        return first[0], count[0], step_start, step_end

    def numbers(
        self, buf: U8, start: I64, end: I64, kind: int
    ) -> tuple[npt.NDArray[np.int64] | npt.NDArray[np.float32], I64] | None:
        """:func:`numeric_lists` through the loop looked up with the walk's."""
        return _numeric_lists(self._numeric, buf, start, end, kind)


_FIRST = np.zeros(1, np.int64)
_NO_KINDS = np.zeros(0, np.int8)
_NO_INTS = np.zeros(0, np.int64)
_NO_BYTES = np.zeros(0, np.uint8)


def dense_steps(
    buf: U8,
    step_start: I64,
    step_end: I64,
    first: I64,
    count: I64,
    *,
    stride: int,
    max_steps: int,
    kind: int,
    out: npt.NDArray[np.int64] | npt.NDArray[np.float32],
) -> int | None:
    """Copies numeric steps (list spans from :func:`walk_sequences`) into ``out``, a
    C-contiguous ``[n, max_steps, stride]`` int64 (kind 3) or float32 (kind 2) array
    of zeros. Returns the first record with a step of another value count than
    ``stride`` (-1: none), or None when the kernel is not there.
    """
    kernel = _kernel("seq_dense")
    if kernel is None:
        return None
    flat = out.reshape(-1)
    ints = flat if kind == 3 else np.zeros(0, np.int64)
    floats = flat.view(np.uint8) if kind == 2 else np.zeros(0, np.uint8)
    wrong = kernel(
        np.ascontiguousarray(buf).reshape(-1),
        step_start,
        step_end,
        np.ascontiguousarray(first, np.int64),
        np.ascontiguousarray(count, np.int64),
        stride,
        max_steps,
        kind,
        ints,
        floats,
    )
    assert isinstance(wrong, int)
    return wrong


def numeric_lists(
    buf: U8, start: I64, end: I64, kind: int
) -> tuple[npt.NDArray[np.int64] | npt.NDArray[np.float32], I64] | None:
    """``(values, counts)`` of the Int64List (kind 3) or FloatList (kind 2) payloads
    ``buf[start[j]:end[j]]``, found canonical by :func:`walk_sequences`; None where the
    kernel is not there or a varint is over 10 bytes (the exact path then decides).
    """
    return _numeric_lists(_kernel("seq_numeric"), buf, start, end, kind)


def _numeric_lists(
    kernel: Callable[..., object] | None, buf: U8, start: I64, end: I64, kind: int
) -> tuple[npt.NDArray[np.int64] | npt.NDArray[np.float32], I64] | None:
    if kernel is None:
        return None
    size = int(end.sum() - start.sum()) if start.shape[0] else 0
    counts = np.empty(start.shape[0], np.int64)
    if kind == 3:
        ints = np.empty(size, np.int64)
        total = kernel(buf, start, end, kind, ints, _NO_BYTES, counts)
        assert isinstance(total, int)
        return (ints[:total], counts) if total >= 0 else None
    floats = np.empty(size // 4, np.float32)
    total = kernel(buf, start, end, kind, _NO_INTS, floats.view(np.uint8), counts)
    assert isinstance(total, int)
    return floats[:total], counts


def sparse_indices(per_step: I64, count: I64, total: int) -> I64 | None:
    """The ``[total, 3]`` (record, step, position) of every value of records holding
    ``count[r]`` steps of ``per_step[j]`` values each (``total`` values in all)."""
    kernel = _kernel("seq_sparse")
    if kernel is None:
        return None
    out = np.empty((total, 3), np.int64)
    kernel(np.ascontiguousarray(per_step, np.int64), np.ascontiguousarray(count, np.int64), out)
    return out
