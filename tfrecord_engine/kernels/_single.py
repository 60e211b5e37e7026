# mypy: ignore-errors
# (numba types these functions itself, from the arrays they are called with; the typed
# entry point is in kernels/single.py.)
"""The numba-compiled decode of one Example for ``ds[i]``'s decoder (imported only by
:mod:`tfrecord_engine.kernels` when it loads the kernels).

:func:`decode_one` does in one call what ``example/single.py``'s Python walk does entry by
entry and its per-key readers do after it: it walks the record's feature map, looks
each key up in a hashed table of the requested keys (``_dense.key_hash``, the batch
walk's; the table is built by :func:`tfrecord_engine.kernels.single.one_table`) and,
per requested key, by the key's code:

- ``OTHER``: records the span of its ``Feature`` (the caller reads it);
- ``INTS`` / ``FLOATS``: decodes its int64 or float32 list into one int64 or one
  float32 array shared by the record's keys, and records where its values lie there;
- ``ONE_BYTES``: records the span of its one ``bytes`` value.

It takes only what the Python walk takes: one ``features`` field filling the record,
map entries of key then value, the value filling its entry, no requested key twice,
every requested key present and not empty, each list as writers emit it (one list
filling the ``Feature``; numbers in one packed run filling the list), as many values as
the key's expected count where it has one. Anything else returns False and the caller
takes the Python path, which declines the same records to the exact parser. Every read
is bounds-checked against the record's end.
"""

from __future__ import annotations

import numpy as np

from ..errors import MissingDependencyError, install_hint

try:
    from numba import njit
    from numba.core.errors import NumbaError
except ImportError as exc:
    raise MissingDependencyError(
        f"the compiled kernels need numba ({exc}): {install_hint('fast')}"
    ) from exc

from ._dense import key_hash
from ._examples import _ask_all, _span
from ._intrinsics import NO_REFCOUNTS
from ._intrinsics import copy as _memcpy
from ._numba import varint_run

__all__ = [
    "FLOATS",
    "INTS",
    "ONE_BYTES",
    "OTHER",
    "decode_fixed",
    "decode_fixed_at",
    "decode_many",
    "decode_one",
    "decode_one_at",
    "load",
]

#: Records ahead whose lines decode_many asks for while it walks one (see _numba's gather).
_AHEAD = 2
#: What the decode does with a requested key (``code``): see the module's docstring.
OTHER, INTS, FLOATS, ONE_BYTES = 0, 1, 2, 3
_TAG = (0, 0x1A, 0x12, 0x0A)  # each code's list tag (Int64List 3, FloatList 2, BytesList 1)


@njit(nogil=True, cache=True, inline="always", **NO_REFCOUNTS)
def _slot(buf, p, n, meta, keys):
    """The requested key equal to ``buf[p:p + n]`` (its index), or -1."""
    h = key_hash(buf, p, n)
    mask = meta.shape[1] - 1
    idx = np.int64(h & np.uint64(mask))
    k = meta[0, idx]
    while k >= 0:
        a = meta[2, k]
        if np.uint64(meta[1, idx]) == h and meta[2, k + 1] - a == n:
            same = True
            for t in range(n):
                if buf[p + t] != keys[a + t]:
                    same = False
                    break
            if same:
                return k
        idx = (idx + 1) & mask
        k = meta[0, idx]
    return -1


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _run(buf, vs, ve, tag):
    """``(a, b, values)`` of the list ``tag`` filling the Feature ``buf[vs:ve]``: the span
    of its one field-1 run filling it, and whether it has one (``(ve, ve, False)``: an
    empty list); ``(-1, -1, False)`` where it is not that."""
    if vs >= ve or buf[vs] != tag:
        return -1, -1, False
    ls, le = _span(buf, vs + 1, ve)
    if ls < 0 or le != ve:
        return -1, -1, False
    if ls == le:
        return le, le, False
    if buf[ls] != 0x0A:
        return -1, -1, False  # unpacked numbers, or another field: the Python path
    a, b = _span(buf, ls + 1, le)
    if a < 0 or b != le:
        return -1, -1, False
    return a, b, True


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _walk(buf, meta, keys, out):
    """Pass 1: every requested key's spans and counts (see :func:`decode_one`); returns
    the numbers of int64 and float32 values, or ``(-1, -1)``."""
    n = buf.shape[0]
    nk = out.shape[1]
    for k in range(nk):
        out[0, k] = -1
    if n < 2 or buf[0] != 0x0A:
        return -1, -1
    p, fe = _span(buf, 1, n)
    if p < 0 or fe != n:
        return -1, -1
    found = 0
    # Keys of expected counts sit first, at their fixed places (meta[5]); others follow.
    ints = 0
    floats = 0
    for k in range(nk):
        if meta[4, k] >= 0:
            if meta[3, k] == INTS:
                ints += meta[4, k]
            elif meta[3, k] == FLOATS:
                floats += meta[4, k]
    while p < n:
        if buf[p] != 0x0A:
            return -1, -1
        es, ee = _span(buf, p + 1, n)
        if es < 0 or es >= ee or buf[es] != 0x0A:
            return -1, -1
        ks, ke = _span(buf, es + 1, ee)
        if ks < 0 or ke >= ee or buf[ke] != 0x12:
            return -1, -1
        vs, ve = _span(buf, ke + 1, ee)
        if vs < 0 or ve != ee:
            return -1, -1
        p = ee
        k = _slot(buf, ks, ke - ks, meta, keys)
        if k < 0:
            continue  # a key nobody asked for
        if out[0, k] >= 0 or vs == ve:
            return -1, -1  # a requested key twice, or an empty Feature (defaults)
        found += 1
        c = meta[3, k]
        if c == OTHER:
            out[0, k] = vs
            out[1, k] = ve
            continue
        a, b, some = _run(buf, vs, ve, _TAG[c])
        if a < 0 or (c == ONE_BYTES and not some):
            return -1, -1
        out[0, k] = a
        out[1, k] = b
        if c == ONE_BYTES:
            continue
        if c == FLOATS:
            if (b - a) % 4:
                return -1, -1
            count = (b - a) >> 2
            out[2, k] = floats
        else:
            if a < b and buf[b - 1] >= 0x80:
                return -1, -1  # the run's last varint is torn
            count = 0
            for i in range(a, b):
                count += buf[i] < 0x80
            out[2, k] = ints
        out[3, k] = count
        if meta[4, k] < 0:
            if c == FLOATS:
                floats += count
            else:
                ints += count
        elif count != meta[4, k]:
            return -1, -1  # another count than the spec's: the exact path
        else:
            out[2, k] = meta[5, k]
    if found != nk:
        return -1, -1
    return ints, floats


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _fill(buf, meta, out, ints, bits):
    """Pass 2: decodes every numeric key's run into ``ints`` or ``bits`` (float32 bits);
    False where a varint is over 10 bytes."""
    for k in range(out.shape[1]):
        c = meta[3, k]
        a = out[0, k]
        at = out[2, k]
        if c == INTS:
            if varint_run(buf, a, out[1, k], ints, at) < 0:
                return False
        elif c == FLOATS:
            _memcpy(bits, at, buf, a, 4 * out[3, k])  # (little-endian bits, as stored)
    return True


@njit(nogil=True, cache=True)
def decode_one(buf, meta, keys, out):
    """Decodes the Example ``buf``: ``(ok, ints, floats)``, ``ok`` when it has the shape
    described above, ``ints`` and ``floats`` made to the record's counts.

    ``meta``: int64 rows of the key table: the slots' keys (-1 free), their hashes
    (uint64 bits), the keys' offsets in ``keys`` (``nk + 1``), their codes (``nk``),
    their expected counts (``nk``; -1: any) and, for keys with one, where their values
    go in ``ints`` or ``floats`` (``nk``; the others' follow).

    ``out[0, k]``/``out[1, k]``: the span of key ``k``'s Feature (``OTHER``), its packed
    run (``INTS``, ``FLOATS``) or its value (``ONE_BYTES``); ``out[2, k]``/``out[3, k]``:
    where its values start in ``ints`` or ``floats``, and how many. (Few arguments:
    each costs numba's dispatch a little.)
    """
    n_ints, n_floats = _walk(buf, meta, keys, out)
    if n_ints >= 0:
        ints = np.empty(n_ints, np.int64)
        bits = np.empty(n_floats, np.uint32)
        if _fill(buf, meta, out, ints, bits):
            return True, ints, bits.view(np.float32)
    return False, np.empty(0, np.int64), np.empty(0, np.float32)


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def decode_fixed(buf, meta, keys, out, ints, floats):  # noqa: PLR0917
    """:func:`decode_one` for a table whose every numeric key has an expected count,
    into the caller's ``ints`` and ``floats`` of the counts' totals (returning arrays
    costs numba's boxing more than the caller's ``np.empty``); True when taken."""
    n_ints, n_floats = _walk(buf, meta, keys, out)
    if n_ints != ints.shape[0] or n_floats != floats.shape[0]:
        return False
    return _fill(buf, meta, out, ints, floats.view(np.uint32))


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _shift(out, a):
    """The spans of ``out`` (positions in a record) made positions in its buffer, where
    the record starts at ``a``."""
    for k in range(out.shape[1]):
        out[0, k] += a
        out[1, k] += a


@njit(nogil=True, cache=True)
def decode_one_at(buf, a, e, meta, keys, out):  # noqa: PLR0917
    """:func:`decode_one` of the record ``buf[a:e]`` (a file's copy in memory: the
    record is not copied out first), its spans in ``out`` made positions in ``buf``.
    Every line of the record is asked for first: the walk's misses (a key after a
    large value) then overlap, and the values the caller copies out are in cache."""
    _ask_all(buf, a, e)
    ok, ints, floats = decode_one(buf[a:e], meta, keys, out)
    if ok:
        _shift(out, a)
    return ok, ints, floats


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def decode_fixed_at(buf, a, e, meta, keys, out, ints, floats):  # noqa: PLR0917
    """:func:`decode_fixed` of the record ``buf[a:e]``, as :func:`decode_one_at`."""
    _ask_all(buf, a, e)
    if not decode_fixed(buf[a:e], meta, keys, out, ints, floats):
        return False
    _shift(out, a)
    return True


@njit(nogil=True, cache=True)
def decode_many(buf, starts, ends, meta, keys, out, places):  # noqa: PLR0917
    """:func:`decode_one` of the records ``buf[starts[j]:ends[j]]`` in one call (the
    samples of a small ``__getitems__``: one dispatch, not one a record); returns the
    batch's ``(ints, floats)``.

    ``out[j]`` is record ``j``'s ``out`` with its spans made positions in ``buf``;
    ``places[j]``: where its values start in ``ints`` and in ``floats``, and how many it
    has of each (its ``out[j, 2]`` and fixed places count from there); ``places[j, 0]``
    is -1 for a record the decode does not take (the caller's Python path decides).
    The lines of the record ``_AHEAD`` places on are asked for while one is walked
    (records picked at random from a file's copy each begin with cache misses: this
    keeps several in flight, and leaves the values the caller copies out in cache).
    """
    m = starts.shape[0]
    nk = out.shape[2]
    n_ints = 0
    n_floats = 0
    for j in range(min(_AHEAD, m)):
        _ask_all(buf, starts[j], ends[j])
    for j in range(m):
        if j + _AHEAD < m:
            _ask_all(buf, starts[j + _AHEAD], ends[j + _AHEAD])
        a = starts[j]
        got_ints, got_floats = _walk(buf[a : ends[j]], meta, keys, out[j])
        if got_ints < 0:
            places[j, 0] = -1
            continue
        places[j, 0] = n_ints
        places[j, 1] = n_floats
        places[j, 2] = got_ints
        places[j, 3] = got_floats
        n_ints += got_ints
        n_floats += got_floats
    ints = np.empty(n_ints, np.int64)
    bits = np.empty(n_floats, np.uint32)
    for j in range(m):
        if places[j, 0] < 0:
            continue
        a = starts[j]
        i0 = places[j, 0]
        f0 = places[j, 1]
        record_ints = ints[i0 : i0 + places[j, 2]]
        record_bits = bits[f0 : f0 + places[j, 3]]
        if not _fill(buf[a : ends[j]], meta, out[j], record_ints, record_bits):
            places[j, 0] = -1
            continue
        for k in range(nk):
            out[j, 0, k] += a
            out[j, 1, k] += a
    return ints, bits.view(np.float32)


def load(errors: tuple[type[Exception], ...]) -> dict[str, object]:
    """The kernels by name, each None where compiling or its self-test failed."""
    try:
        ok = _self_test()
    except (*errors, NumbaError):
        ok = False
    return {
        "one_decode": decode_one if ok else None,
        "one_fixed": decode_fixed if ok else None,
        "one_many": decode_many if ok else None,
        "one_decode_at": decode_one_at if ok else None,
        "one_fixed_at": decode_fixed_at if ok else None,
        "one_hash": key_hash if ok else None,
    }


def _self_test() -> bool:
    """Compiles (or loads from the cache) the decode and checks it on a known record:
    {"u": 1.0, "x": 300, "b": b"hi", "z": [1, 2], "f": [0.5, 2.0]} with every key
    requested ("f" with no expected count, "z" as its Feature)."""

    def entry(key: bytes, feature: bytes) -> bytes:
        body = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(feature)]) + feature
        return b"\x0a" + bytes([len(body)]) + body

    entries = (
        entry(b"u", b"\x12\x06\x0a\x04\x00\x00\x80\x3f")
        + entry(b"x", b"\x1a\x04\x0a\x02\xac\x02")
        + entry(b"b", b"\x0a\x04\x0a\x02hi")
        + entry(b"z", b"\x1a\x04\x0a\x02\x01\x02")
        + entry(b"f", b"\x12\x0a\x0a\x08\x00\x00\x00\x3f\x00\x00\x00\x40")
    )
    record = np.frombuffer(b"\x0a" + bytes([len(entries)]) + entries, np.uint8)
    keys = [b"x", b"b", b"u", b"z", b"f"]
    meta = np.full((6, 16), -1, np.int64)
    for k, key in enumerate(keys):
        h = key_hash(np.frombuffer(key, np.uint8), 0, len(key))
        idx = int(h & np.uint64(15))
        while meta[0, idx] >= 0:
            idx = (idx + 1) & 15
        meta[0, idx] = k
        meta[1, idx] = np.int64(np.uint64(h).view(np.int64))
    meta[2, :6] = [0, 1, 2, 3, 4, 5]
    meta[3, :5] = [INTS, ONE_BYTES, FLOATS, OTHER, FLOATS]
    meta[4, :5] = [1, -1, 1, -1, -1]
    meta[5, :5] = [0, -1, 0, -1, -1]
    out = np.empty((4, 5), np.int64)
    keyb = np.frombuffer(b"xbuzf", np.uint8)
    ok, ints, floats = decode_one(record, meta, keyb, out)
    if not ok:
        return False
    raw = record.tobytes()
    return (
        ints.tolist() == [300]
        and floats.tolist() == [1.0, 0.5, 2.0]
        and int(out[2, 2]) == 0
        and int(out[2, 4]) == 1
        and int(out[3, 4]) == 2
        and raw[out[0, 1] : out[1, 1]] == b"hi"
        and raw[out[0, 3] : out[1, 3]] == b"\x1a\x04\x0a\x02\x01\x02"
        and not decode_one(record[:-1], meta, keyb, out)[0]
        and _self_test_fixed(record, meta, keyb)
        and _self_test_many(record, meta, keyb)
        and _self_test_at(record, meta, keyb)
    )


def _self_test_fixed(record, meta, keyb) -> bool:
    """:func:`decode_fixed` on the self-test's record ("f" given its count)."""
    meta = meta.copy()
    meta[4, 4] = 2
    meta[5, 4] = 1
    out = np.empty((4, 5), np.int64)
    ints = np.empty(1, np.int64)
    floats = np.empty(3, np.float32)
    return (
        decode_fixed(record, meta, keyb, out, ints, floats)
        and ints.tolist() == [300]
        and floats.tolist() == [1.0, 0.5, 2.0]
        and not decode_fixed(record, meta, keyb, out, ints, floats[:2])
    )


def _self_test_at(record, meta, keyb) -> bool:
    """:func:`decode_one_at` and :func:`decode_fixed_at` on the self-test's record
    between two bytes of another, and cut one byte short."""
    buf = np.concatenate([record[:3], record, record[:2]])
    a, e = 3, 3 + record.shape[0]
    raw = buf.tobytes()
    out = np.empty((4, 5), np.int64)
    ok, ints, floats = decode_one_at(buf, a, e, meta, keyb, out)
    if not ok or ints.tolist() != [300] or raw[out[0, 1] : out[1, 1]] != b"hi":
        return False
    if decode_one_at(buf, a, e - 1, meta, keyb, out)[0]:
        return False
    meta = meta.copy()
    meta[4, 4] = 2
    meta[5, 4] = 1
    ints = np.empty(1, np.int64)
    floats = np.empty(3, np.float32)
    return (
        decode_fixed_at(buf, a, e, meta, keyb, out, ints, floats)
        and ints.tolist() == [300]
        and floats.tolist() == [1.0, 0.5, 2.0]
        and raw[out[0, 1] : out[1, 1]] == b"hi"
        and not decode_fixed_at(buf, a, e - 1, meta, keyb, out, ints, floats)
    )


def _self_test_many(record, meta, keyb) -> bool:
    """:func:`decode_many` on the self-test's record twice around a torn copy of it."""
    buf = np.concatenate([record, record[:-1], record])
    n = record.shape[0]
    starts = np.array([0, n, 2 * n - 1], np.int64)
    ends = np.array([n, 2 * n - 1, 3 * n - 1], np.int64)
    out = np.empty((3, 4, 5), np.int64)
    places = np.empty((3, 4), np.int64)
    ints, floats = decode_many(buf, starts, ends, meta, keyb, out, places)
    raw = buf.tobytes()
    last = places[2]
    return (
        places[:, 0].tolist() == [0, -1, 1]
        and ints.tolist() == [300, 300]
        and floats[last[1] : last[1] + last[3]].tolist() == [1.0, 0.5, 2.0]
        and raw[out[2, 0, 1] : out[2, 1, 1]] == b"hi"
    )
