# mypy: ignore-errors
# (numba types these functions itself, from the arrays they are called with; the typed
# entry points are in kernels/examples.py.)
"""The numba-compiled walk of batches of Examples for any spec (imported only by
:mod:`tfrecord_engine.kernels` when it loads the kernels).

:func:`walk_examples` does in one pass per record what the lockstep walk
(``example/lockstep.py``) does in numpy passes per nesting level: it walks each
Example's feature map, looks each key up in a hashed table of the selected keys and
records, per record and selected key, the Feature's kind and the span of its values
(a numeric list's packed payload, a BytesList's payload). Records come out in record
order whatever the order of their keys. :func:`bytes_lists` splits BytesList payloads
into their values' spans.

Only the canonical shape is taken, as in the lockstep walk: one ``features`` field
covering the record, map entries key then value, every Feature empty or exactly one
list covering it, numeric lists packed (float32 payloads a multiple of 4 bytes), no
selected key twice. A record that deviates in any way is flagged and the caller decodes
it by the exact per-record path (which raises TensorFlow's error where there is one).
Every read is bounds-checked against the record's end.
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
from ._intrinsics import LOW_BYTES, NO_REFCOUNTS, load8, prefetch

__all__ = ["bytes_lists", "load", "padded_rows", "sized_rows", "sparse_indices", "walk_examples"]

_BYTES = 1
_FLOAT = 2
_INT64 = 3


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _span(buf, i, e):
    """The payload ``(start, end)`` of the length prefix at ``buf[i:e]`` when it fits
    in ``[i, e)``, else ``(-1, -1)`` (lengths of up to 5 varint bytes)."""
    if i < e and buf[i] < 0x80:  # the usual one-byte length
        end = i + 1 + np.int64(buf[i])
        if end > e:
            return -1, -1
        return i + 1, end
    value = np.int64(0)
    shift = 0
    while i < e and shift < 35:
        b = np.int64(buf[i])
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > e - i:
                return -1, -1
            return i, i + value
        shift += 7
    return -1, -1


@njit(nogil=True, cache=True, inline="always", **NO_REFCOUNTS)
def _slot(buf, p, n, table, table_hash, key_at, keys):  # noqa: PLR0917
    """The selected key equal to ``buf[p:p + n]`` (its index), or -1."""
    h = key_hash(buf, p, n)
    mask = table.shape[0] - 1
    idx = np.int64(h & np.uint64(mask))
    k = table[idx]
    while k >= 0:
        a = key_at[k]
        if table_hash[idx] == h and key_at[k + 1] - a == n:
            same = True
            for t in range(n):
                if buf[p + t] != keys[a + t]:
                    same = False
                    break
            if same:
                return k
        idx = (idx + 1) & mask
        k = table[idx]
    return -1


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _record(buf, r, s, e, table, table_hash, key_at, keys, kind, ps, pe):  # noqa: PLR0917
    """Walks record ``r`` at ``buf[s:e]``; False where it is not the canonical shape."""
    if s == e:
        return True  # an empty Example: every feature missing
    if buf[s] != 0x0A:
        return False
    p, fe = _span(buf, s + 1, e)
    if fe != e:
        return False
    while p < e:
        # A map entry: its tag and length, the key (field 1), the value (field 2).
        if buf[p] != 0x0A:
            return False
        es, ee = _span(buf, p + 1, e)
        if es < 0 or es >= ee or buf[es] != 0x0A:
            return False
        ks, ke = _span(buf, es + 1, ee)
        if ks < 0 or ke >= ee or buf[ke] != 0x12:
            return False
        vs, ve = _span(buf, ke + 1, ee)
        if ve != ee:
            return False
        p = ee
        # The Feature: empty (missing) or exactly one list covering it.
        fk = 0
        ls = vs
        le = vs
        if vs < ve:
            tag = buf[vs]
            if tag == 0x0A:
                fk = _BYTES
            elif tag == 0x12:
                fk = _FLOAT
            elif tag == 0x1A:
                fk = _INT64
            else:
                return False
            ls, le = _span(buf, vs + 1, ve)
            if le != ve:
                return False
        k = _slot(buf, ks, ke - ks, table, table_hash, key_at, keys)
        if k < 0:
            continue
        if kind[r, k] != -1:
            return False  # a selected key twice: TensorFlow's rules, the exact path
        if fk != _BYTES and ls < le:
            # One packed field covering the list (unpacked values: the exact path).
            if buf[ls] != 0x0A:
                return False
            a, b = _span(buf, ls + 1, le)
            if b != le or (fk == _FLOAT and (b - a) % 4 != 0):
                return False
            ls = a
        kind[r, k] = fk
        ps[r, k] = ls
        pe[r, k] = le
    return True


#: Records ahead whose first lines the walk asks for (scattered records, as a shuffled
#: epoch's views of its in-memory copy, each begin with a cache miss: asking ahead keeps
#: several in flight), and how many of their first bytes: the walk reads a record's
#: keys and list headers, not the payloads past them.
_AHEAD = 8
_ASK_BYTES = 256


@njit(nogil=True, cache=True, inline="always", **NO_REFCOUNTS)
def _ask_all(buf, a, e):
    """Asks for every cache line of ``buf[a:e]`` (:func:`_ask` asks for a record's first
    lines only: for the callers of this one the values copied out are wanted in cache
    too)."""
    for p in range(a, e, 64):
        prefetch(buf, p)


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _ask(buf, a, e):
    _ask_all(buf, a, min(e, a + _ASK_BYTES))


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def walk_examples(buf, starts, ends, table, table_hash, key_at, keys, kind, ps, pe, bad):  # noqa: PLR0917
    """Walks the Examples ``buf[starts[r]:ends[r]]``.

    ``table`` is an open-addressing table of key indices by :func:`key_hash` (-1 marks
    an empty place; ``table_hash`` holds each place's hash), the selected keys being
    ``keys[key_at[k]:key_at[k + 1]]``. Writes, for record ``r`` and key ``k``:
    ``kind[r, k]`` (0 missing or an empty Feature, 1 bytes, 2 float, 3 int64) and the
    span ``ps[r, k]:pe[r, k]`` of the list's values (numeric: the packed payload;
    bytes: the BytesList's payload); ``bad[r]`` where the record is not the canonical
    shape (then its other outputs are meaningless).
    """
    nkeys = key_at.shape[0] - 1
    n = starts.shape[0]
    for r in range(min(_AHEAD, n)):
        _ask(buf, starts[r], ends[r])
    for r in range(n):
        if r + _AHEAD < n:
            _ask(buf, starts[r + _AHEAD], ends[r + _AHEAD])
        for k in range(nkeys):
            kind[r, k] = -1
        good = _record(buf, r, starts[r], ends[r], table, table_hash, key_at, keys, kind, ps, pe)
        bad[r] = not good
        for k in range(nkeys):
            if kind[r, k] == -1:
                kind[r, k] = 0
                ps[r, k] = 0
                pe[r, k] = 0


@njit(nogil=True, cache=True)
def bytes_lists(buf, ls, le, counts, ok):
    """The values of the BytesList payloads ``buf[ls[j]:le[j]]``: returns their spans
    ``(starts, ends)``, list 0's first. ``counts[j]`` gets list j's number of values;
    ``ok[j]`` False (and count 0, no values) where a list is not a run of field-1
    length-delimited values filling it."""
    m = ls.shape[0]
    total = 0
    for j in range(m):
        p = ls[j]
        e = le[j]
        c = 0
        good = True
        while p < e:
            if buf[p] != 0x0A:
                good = False
                break
            a, b = _span(buf, p + 1, e)
            if a < 0:
                good = False
                break
            c += 1
            p = b
        ok[j] = good
        counts[j] = c if good else 0
        total += counts[j]
    vs = np.empty(total, np.int64)
    ve = np.empty(total, np.int64)
    n = 0
    for j in range(m):
        if not ok[j]:
            continue
        p = ls[j]
        e = le[j]
        while p < e:
            a, b = _span(buf, p + 1, e)
            vs[n] = a
            ve[n] = b
            n += 1
            p = b
    return vs, ve


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _pad_row(buf, a, m, out, j, first):  # noqa: PLR0917 - a compiled inner loop
    """``buf[a:a + m]`` into ``out[j, first:]`` (uint64 words, seen as bytes),
    zero-padded. Eight bytes are moved at a time (masked to the value's end)."""
    size = buf.shape[0]
    for q in range(out.shape[1] - first):
        left = m - 8 * q
        if left <= 0:
            out[j, first + q] = 0
            continue
        at = a + 8 * q
        if at + 8 <= size:
            w = load8(buf, at)
        else:
            w = np.uint64(0)
            for b in range(min(left, 8)):
                w |= np.uint64(buf[at + b]) << np.uint64(8 * b)
        out[j, first + q] = w & LOW_BYTES[min(left, 8)]


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def padded_rows(buf, vs, ve, out):
    """``buf[vs[j]:ve[j]]`` into row j of ``out`` (uint64 ``[n, words]``, seen as the
    row's bytes), zero-padded: rows a numpy ``S<8 * words>`` view turns into ``bytes``
    objects in one C loop."""
    for j in range(vs.shape[0]):
        _pad_row(buf, vs[j], ve[j] - vs[j], out, j, 0)


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def sized_rows(buf, spans, out):
    """``buf[spans[j, 0]:spans[j, 1]]`` into row j of ``out`` (uint64 ``[n, 1 + words]``):
    its size in the first word, then its bytes, zero-padded (the string rows of
    ``tfrecord_engine.example.string_rows``, written once)."""
    for j in range(spans.shape[0]):
        a = spans[j, 0]
        m = spans[j, 1] - a
        out[j, 0] = m
        _pad_row(buf, a, m, out, j, 1)


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def sparse_indices(counts, out):
    """A VarLenFeature's ``[values, 2]`` indices from its values per record: ``(r, j)``
    for value j of record r, written once (numpy's repeat, arange and stack write four
    arrays of that size)."""
    k = 0
    for r in range(counts.shape[0]):
        for j in range(counts[r]):
            out[k, 0] = r
            out[k, 1] = j
            k += 1


def load(errors: tuple[type[Exception], ...]) -> dict[str, object]:
    """The kernels by name, each None where compiling or its self-test failed."""
    names = ("ex_walk", "ex_bytes", "ex_pad", "ex_rows", "ex_sparse")
    try:
        ok = _self_test()
    except (*errors, NumbaError):
        ok = False
    if not ok:
        return dict.fromkeys(names)
    kernels = (walk_examples, bytes_lists, padded_rows, sized_rows, sparse_indices)
    return dict(zip(names, kernels, strict=True))


def _self_test() -> bool:
    """Compiles (or loads from the cache) each kernel and checks it on a known record:
    {"b": [b"hi", b""], "x": [5], "u": float} with "x" and "b" selected, then an empty
    record and one that is not an Example."""
    feat_b = b"\x0a\x06\x0a\x02hi\x0a\x00"
    feat_x = b"\x1a\x03\x0a\x01\x05"
    feat_u = b"\x12\x06\x0a\x04\x00\x00\x80\x3f"

    def entry(key: bytes, feature: bytes) -> bytes:
        body = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(feature)]) + feature
        return b"\x0a" + bytes([len(body)]) + body

    entries = entry(b"u", feat_u) + entry(b"x", feat_x) + entry(b"b", feat_b)
    record = b"\x0a" + bytes([len(entries)]) + entries
    buf = np.frombuffer(record + b"\x0b", np.uint8)
    n = len(record)
    keys = np.frombuffer(b"xb", np.uint8)
    key_at = np.array([0, 1, 2], np.int64)
    table = np.full(4, -1, np.int64)
    table_hash = np.zeros(4, np.uint64)
    for k in range(2):
        h = key_hash(keys, k, 1)
        idx = int(h & np.uint64(3))
        while table[idx] >= 0:
            idx = (idx + 1) & 3
        table[idx] = k
        table_hash[idx] = h
    kind = np.zeros((3, 2), np.int8)
    ps = np.zeros((3, 2), np.int64)
    pe = np.zeros((3, 2), np.int64)
    bad = np.zeros(3, np.bool_)
    starts = np.array([0, n, n], np.int64)
    ends = np.array([n, n, n + 1], np.int64)
    walk_examples(buf, starts, ends, table, table_hash, key_at, keys, kind, ps, pe, bad)
    if kind.tolist() != [[3, 1], [0, 0], [0, 0]] or bad.tolist() != [False, False, True]:
        return False
    if buf[ps[0, 0] : pe[0, 0]].tobytes() != b"\x05":
        return False
    counts = np.zeros(1, np.int64)
    ok = np.zeros(1, np.bool_)
    vs, ve = bytes_lists(buf, ps[0, 1:2].copy(), pe[0, 1:2].copy(), counts, ok)
    got = [buf[a:b].tobytes() for a, b in zip(vs.tolist(), ve.tolist(), strict=True)]
    if not (bool(ok[0]) and counts.tolist() == [2] and got == [b"hi", b""]):
        return False
    rows = np.ones((2, 1), np.uint64)
    padded_rows(buf, vs, ve, rows)
    if rows.tobytes() != b"hi" + bytes(14):
        return False
    sized = np.ones((2, 2), np.uint64)
    sized_rows(buf, np.stack((vs, ve), axis=1), sized)
    if sized.tolist() != [[2, 0x6968], [0, 0]]:
        return False
    indices = np.full((3, 2), -1, np.int64)
    sparse_indices(np.array([2, 0, 1], np.int64), indices)
    return bool(indices.tolist() == [[0, 0], [0, 1], [2, 0]])
