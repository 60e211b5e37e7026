"""The compiled loops of ``ds[i]``'s decoder: one record's decode, one packed varint run.

:func:`decode_one` decodes one Example's requested keys in one call (see :mod:`._single`).

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
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _kernels, key_hashes

__all__ = [
    "FLOATS",
    "INTS",
    "ONE_BYTES",
    "OTHER",
    "OneTable",
    "decode_one",
    "one_table",
    "packed_int64",
]

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


#: :func:`decode_one`'s codes (``_single``'s): a key's Feature span only, an int64 list,
#: a float32 list, one ``bytes`` value.
OTHER, INTS, FLOATS, ONE_BYTES = 0, 1, 2, 3
_NO_INTS = np.empty(0, np.int64)  # (never written: a table without such keys)
_U8 = np.dtype(np.uint8)
_NO_FLOATS = np.empty(0, np.float32)
F32 = npt.NDArray[np.float32]
Decoded = tuple[I64, I64, F32]
#: A decode kernel called with its table's arguments bound (see ``_caller``).
Call = Callable[..., "Decoded | None"]
#: :meth:`OneTable.decode_many`'s ``(out, places, ints, floats)``.
Many = tuple[I64, I64, I64, F32]


class OneTable:
    """The requested keys of a spec for :func:`decode_one` (build once, with
    :func:`one_table`): ``meta``, int64 rows of the hashed table (slots' keys, their
    hashes' bits), the keys' offsets in ``keys``, how each is decoded (codes) and how
    many values each must have (-1: any). The hashes are the compiled ``key_hash``'s,
    so the table is made on the first decode once the kernels are loaded."""

    def __init__(self, names: list[bytes], code: list[int], counts: list[int]) -> None:
        self.names = names
        self.code = code
        self.counts = counts
        self.keys = np.frombuffer(b"".join(names) or b"\0", np.uint8)
        self._meta: I64 | None = None
        numeric = [(c, n) for c, n in zip(code, counts, strict=True) if c in (INTS, FLOATS)]
        # Every numeric key's count known: the caller's arrays (decode_fixed).
        self._fixed = all(n >= 0 for _c, n in numeric)
        self._ints = sum(n for c, n in numeric if c == INTS)
        self._floats = sum(n for c, n in numeric if c == FLOATS)
        # decode()'s kernel and decode_at()'s (numba's dispatchers; None until loaded).
        self._kernels: list[Callable[..., Any] | None] = [None, None]
        self._many: Callable[..., Any] | None = None
        # Each kernel called through its dispatcher, and through its compiled entry for
        # the argument types its caller makes (see _entry_for): None until looked for,
        # False where there is none. Both with the table's arguments bound (_caller).
        self._calls: list[Call | None] = [None, None]
        self._entries: list[Call | bool | None] = [None, None]

    def meta(self) -> I64 | None:
        """The table (None while the kernels are not loaded)."""
        if self._meta is None:
            hashed = key_hashes(self.names)
            if hashed is None:
                return None
            self._meta = _table(self.names, self.code, self.counts, hashed[0])
        return self._meta

    def decode(self, record: bytes) -> Decoded | None:
        """:func:`decode_one` (the per-call path: the kernel and table kept once loaded).

        A ``bytes`` record goes straight to the kernel's compiled entry for the argument
        types made here (:func:`_entry_for`): numba's dispatch, which types every
        argument on every call, cost ~0.2 µs of a ~4.5 µs ``ds[i]``.
        """
        return self._run(0, (np.frombuffer(record, np.uint8),), type(record) is bytes)

    def decode_at(self, array: npt.NDArray[np.uint8], start: int, end: int) -> Decoded | None:
        """:meth:`decode` of the record ``array[start:end]`` of a file's copy in memory
        (a ``uint8`` vector, ``Held.array``; ``start`` and ``end`` Python ints within
        it): the record is not copied out first, and the spans in ``out`` are positions
        in ``array``. ``ds[i]`` on a held file: one copy of the record (~7 KiB for an
        encoded image) and its ``np.frombuffer`` saved."""
        # (The entry unboxes its arguments unchecked: only a C-contiguous uint8 vector,
        # as it was found for, goes to it.)
        typed = array.dtype is _U8 and array.ndim == 1 and array.flags.c_contiguous
        entry = self._entries[1]
        if typed and callable(entry):
            return entry(array, start, end)  # (as _run does, one call less)
        return self._run(1, (array, start, end), typed)

    def _run(self, at: int, head: tuple[Any, ...], typed: bool) -> Decoded | None:
        """The decode through kernel ``at`` (0: the record's, 1: at a span of a buffer)
        of ``head`` (its leading arguments); ``typed``: the arguments are of the types
        the compiled entry was found for (else numba's dispatch types them)."""
        entry = self._entries[at]
        if typed and callable(entry):
            return entry(*head)
        call = self._calls[at]
        if call is None:
            kernels = _kernels()
            if kernels is None or self.meta() is None:
                return None
            name = ("one_fixed" if self._fixed else "one_decode") + ("_at" if at else "")
            kernel = self._kernels[at] = kernels.get(name)
            if kernel is None:
                return None
            call = self._calls[at] = _caller(kernel, self)
        got = call(*head)
        if typed and entry is None:  # (the dispatcher has compiled or loaded it now)
            found = _entry_for(self._kernels[at], (*head, *_tail(self)))
            self._entries[at] = _caller(found, self) if callable(found) else False
        return got

    def decode_many(self, buf: npt.NDArray[np.uint8], starts: I64, ends: I64) -> Many | None:
        """The decode of every record ``buf[starts[j]:ends[j]]`` in one compiled call
        (``_single.decode_many``): ``(out, places, ints, floats)``, where ``out[j]`` is
        record ``j``'s ``out`` of :meth:`decode` with its spans made positions in
        ``buf``, and its ``ints`` and ``floats`` are
        ``ints[places[j, 0]:places[j, 0] + places[j, 2]]`` and
        ``floats[places[j, 1]:places[j, 1] + places[j, 3]]``; ``places[j, 0] == -1``
        where the record is not of the shape the decode takes. None when the kernels
        are not loaded."""
        kernel = self._many
        if kernel is None:
            kernels = _kernels()
            if kernels is None or self.meta() is None:
                return None
            kernel = self._many = kernels.get("one_many")
            if kernel is None:
                return None
        m = int(starts.shape[0])
        out = np.empty((m, 4, len(self.names)), np.int64)
        places = np.empty((m, 4), np.int64)
        ints, floats = kernel(buf, starts, ends, self._meta, self.keys, out, places)
        return out, places, ints, floats


def _tail(table: OneTable) -> tuple[Any, ...]:
    """Arguments of the types :func:`_caller` passes after a call's leading ones."""
    out = np.empty((4, len(table.names)), np.int64)
    if not table._fixed:
        return table._meta, table.keys, out
    return table._meta, table.keys, out, np.empty(0, np.int64), np.empty(0, np.float32)


def _caller(fn: Callable[..., Any], table: OneTable) -> Call:
    """``fn`` (one of the table's decode kernels, or its compiled entry) with the table's
    arguments bound: ``call(*head)`` makes ``out`` (and, for a table of fixed counts,
    ``ints`` and ``floats``) and returns :meth:`OneTable.decode`'s result. The per-call
    path of ``ds[i]``: each attribute lookup and argument tuple of a general call
    showed (~0.4 µs of ~1.2 on a held file)."""
    meta, keys = table._meta, table.keys
    shape = (4, len(table.names))
    n_ints, n_floats = table._ints, table._floats
    empty, i64, f32 = np.empty, np.int64, np.float32
    if not table._fixed:

        def call(*head: Any) -> Decoded | None:
            out = empty(shape, i64)
            ok, ints, floats = fn(*head, meta, keys, out)
            return (out, ints, floats) if ok else None

        return call
    no_ints = _NO_INTS if not n_ints else None
    no_floats = _NO_FLOATS if not n_floats else None

    def call_fixed(*head: Any) -> Decoded | None:
        out = empty(shape, i64)
        ints = empty(n_ints, i64) if no_ints is None else no_ints
        floats = empty(n_floats, f32) if no_floats is None else no_floats
        if fn(*head, meta, keys, out, ints, floats):
            return out, ints, floats
        return None

    return call_fixed


def _entry_for(kernel: Any, args: tuple[Any, ...]) -> Callable[..., Any] | bool:
    """The compiled entry of numba's dispatcher ``kernel`` for the types of ``args``
    (which the dispatcher has just compiled or loaded for them), or False.

    The entry unboxes its arguments as the types it was compiled for, without checking
    them: its caller passes arrays made the same way every time (``decode`` makes each
    array itself, of fixed dtypes and ranks, and takes it only for ``bytes`` records,
    whose arrays are read-only). Only numba's own objects are used here; where they are
    not found (another numba), the dispatcher serves every call.
    """
    try:
        types = tuple(kernel.typeof_pyval(a) for a in args)
        compiled = kernel.overloads.get(types)
    except (AttributeError, TypeError, ValueError):
        return False
    entry = getattr(compiled, "entry_point", None)
    return entry if callable(entry) else False


def _table(
    names: list[bytes], code: list[int], counts: list[int], hashed: npt.NDArray[np.uint64]
) -> I64:
    size = 8
    while size < 2 * len(names):
        size *= 2
    meta = np.full((6, size), -1, np.int64)
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
    meta[4, : len(names)] = counts
    meta[5, : len(names)] = fixed_places(code, counts)
    return meta


def fixed_places(code: list[int], counts: list[int]) -> list[int]:
    """Where the values of each numeric key with an expected count go in the decode's
    ``ints`` or ``floats`` (in key order, each array's from 0); -1 for the others (their
    values follow, in the record's order).

    >>> fixed_places([INTS, FLOATS, INTS, INTS, OTHER], [1, 3, 16, -1, -1])
    [0, 0, 1, -1, -1]
    """
    at = {INTS: 0, FLOATS: 0}
    places = []
    for c, n in zip(code, counts, strict=True):
        if c in at and n >= 0:
            places.append(at[c])
            at[c] += n
        else:
            places.append(-1)
    return places


def one_table(keys: list[bytes], code: list[int], counts: list[int]) -> OneTable:
    """The table of ``keys`` (distinct): ``code[k]`` says how key ``k`` is decoded
    (``OTHER``, ``INTS``, ``FLOATS``, ``ONE_BYTES``), ``counts[k]`` how many values it
    must have (-1: any)."""
    return OneTable(keys, code, counts)


def decode_one(record: bytes, keys: OneTable) -> Decoded | None:
    """Decodes one Example (see :mod:`._single`) for the keys of ``keys``: ``(out,
    ints, floats)`` where ``out[0, k]:out[1, k]`` is the span of key ``k``'s Feature
    (``OTHER``) or of its one value (``ONE_BYTES``), and a numeric key's values are
    ``ints`` (or ``floats``) ``[out[2, k]:out[2, k] + out[3, k]]``, arrays the call
    owns; None when the kernels are not loaded or the record is not of the shape the
    decode takes (every key present once, lists as writers emit them, the expected
    counts): the caller's Python path decides.
    """
    return keys.decode(record)
