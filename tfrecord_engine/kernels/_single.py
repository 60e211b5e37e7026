# mypy: ignore-errors
# (numba types these functions itself, from the arrays they are called with; the typed
# entry point is in kernels/single.py.)
"""The numba-compiled walk of one Example for ``ds[i]``'s decoder (imported only by
:mod:`tfrecord_engine.kernels` when it loads the kernels).

:func:`walk_one` does in one call what ``data/single.py``'s Python walk does entry by
entry: it walks the record's feature map, looks each key up in a hashed table of the
requested keys (``_dense.key_hash``, the batch walk's; the table is built by
:func:`tfrecord_engine.kernels.single.one_table`) and, per requested key, records the
span of its ``Feature``; scalars (``FixedLenFeature([])``) it reads too: an int64's
varint, a float32's bits, a string's payload span.

It takes only what the Python walk takes: one ``features`` field filling the record,
map entries of key then value, the value filling its entry, no requested key twice,
every requested key present, scalars as writers emit them (one list filling the
Feature, one value filling the list). Anything else returns False and the caller takes
the Python path, which declines the same records to the exact parser. Every read is
bounds-checked against the record's end.
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
from ._examples import _span

__all__ = ["OTHER", "SCALAR_BYTES", "SCALAR_FLOAT", "SCALAR_INT", "load", "walk_one"]

#: What the walk reads of a requested key (``code``): its Feature's span only, or a scalar.
OTHER, SCALAR_INT, SCALAR_FLOAT, SCALAR_BYTES = 0, 1, 2, 3


@njit(nogil=True, cache=True)
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


@njit(nogil=True, cache=True)
def _scalar(buf, c, vs, ve, out, k):  # noqa: PLR0917
    """Reads the scalar Feature ``buf[vs:ve]`` of code ``c`` into ``out[:, k]``; False
    where it is not one value filling one list filling it."""
    if vs >= ve:
        return False
    if c == SCALAR_FLOAT:
        # FloatList { packed [one float] }: 12 06 0A 04 <4 bytes>.
        if ve - vs != 8 or buf[vs] != 0x12 or buf[vs + 1] != 6:
            return False
        if buf[vs + 2] != 0x0A or buf[vs + 3] != 4:
            return False
        bits = (
            np.uint32(buf[vs + 4])
            | (np.uint32(buf[vs + 5]) << np.uint32(8))
            | (np.uint32(buf[vs + 6]) << np.uint32(16))
            | (np.uint32(buf[vs + 7]) << np.uint32(24))
        )
        out[3, k] = np.int64(bits)
        return True
    tag = 0x1A if c == SCALAR_INT else 0x0A
    if buf[vs] != tag:
        return False
    ls, le = _span(buf, vs + 1, ve)
    if ls < 0 or le != ve or ls >= le or buf[ls] != 0x0A:
        return False
    ps, pe = _span(buf, ls + 1, le)
    if ps < 0 or pe != le:
        return False
    if c == SCALAR_BYTES:
        out[0, k] = ps
        out[1, k] = pe
        return True
    # Int64List { packed [one varint] }: the varint fills the run (at most 10 bytes).
    value = np.uint64(0)
    i = ps
    size = 0
    while True:
        if i >= pe or size == 10:
            return False
        b = buf[i]
        i += 1
        value |= np.uint64(b & 0x7F) << np.uint64(7 * size)
        size += 1
        if b < 0x80:
            break
    if i != pe:
        return False
    out[2, k] = np.int64(value)
    return True


@njit(nogil=True, cache=True)
def walk_one(buf, meta, keys, out):
    """Walks the Example ``buf``; True when it has the shape described above.

    ``meta``: int64 rows of the key table: the slots' keys (-1 free), their hashes
    (uint64 bits), the keys' offsets in ``keys`` (``nk + 1``), their codes (``nk``).
    ``out[0, k]``/``out[1, k]``: the span of requested key ``k``'s Feature (of a string
    scalar: its value); ``out[2, k]``: an int64 scalar; ``out[3, k]``: a float32
    scalar's bits. (Few arguments: each costs numba's dispatch ~0.2 µs a call.)
    """
    n = buf.shape[0]
    nk = out.shape[1]
    for k in range(nk):
        out[0, k] = -1
    if n < 2 or buf[0] != 0x0A:
        return False
    p, fe = _span(buf, 1, n)
    if p < 0 or fe != n:
        return False
    found = 0
    while p < n:
        if buf[p] != 0x0A:
            return False
        es, ee = _span(buf, p + 1, n)
        if es < 0 or es >= ee or buf[es] != 0x0A:
            return False
        ks, ke = _span(buf, es + 1, ee)
        if ks < 0 or ke >= ee or buf[ke] != 0x12:
            return False
        vs, ve = _span(buf, ke + 1, ee)
        if vs < 0 or ve != ee:
            return False
        p = ee
        k = _slot(buf, ks, ke - ks, meta, keys)
        if k < 0:
            continue  # a key nobody asked for
        if out[0, k] >= 0:
            return False  # a requested key twice: TensorFlow's rules for duplicates
        c = meta[3, k]
        out[0, k] = vs
        out[1, k] = ve
        if c != OTHER and not _scalar(buf, c, vs, ve, out, k):
            return False
        found += 1
    return found == nk


def load(errors: tuple[type[Exception], ...]) -> dict[str, object]:
    """The kernels by name, each None where compiling or its self-test failed."""
    try:
        ok = _self_test()
    except (*errors, NumbaError):
        ok = False
    return {"one_walk": walk_one if ok else None, "one_hash": key_hash if ok else None}


def _self_test() -> bool:
    """Compiles (or loads from the cache) the walk and checks it on a known record:
    {"u": 1.0, "x": 300, "b": b"hi", "z": [1, 2]} with "x", "b", "u" and "z" requested."""

    def entry(key: bytes, feature: bytes) -> bytes:
        body = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(feature)]) + feature
        return b"\x0a" + bytes([len(body)]) + body

    entries = (
        entry(b"u", b"\x12\x06\x0a\x04\x00\x00\x80\x3f")
        + entry(b"x", b"\x1a\x04\x0a\x02\xac\x02")
        + entry(b"b", b"\x0a\x04\x0a\x02hi")
        + entry(b"z", b"\x1a\x04\x0a\x02\x01\x02")
    )
    record = np.frombuffer(b"\x0a" + bytes([len(entries)]) + entries, np.uint8)
    keys = [b"x", b"b", b"u", b"z"]
    meta = np.full((4, 8), -1, np.int64)
    for k, key in enumerate(keys):
        h = key_hash(np.frombuffer(key, np.uint8), 0, len(key))
        idx = int(h & np.uint64(7))
        while meta[0, idx] >= 0:
            idx = (idx + 1) & 7
        meta[0, idx] = k
        meta[1, idx] = np.int64(np.uint64(h).view(np.int64))
    meta[2, :5] = [0, 1, 2, 3, 4]
    meta[3, :4] = [SCALAR_INT, SCALAR_BYTES, SCALAR_FLOAT, OTHER]
    out = np.empty((4, 4), np.int64)
    keyb = np.frombuffer(b"xbuz", np.uint8)
    if not walk_one(record, meta, keyb, out):
        return False
    raw = record.tobytes()
    return (
        int(out[2, 0]) == 300
        and raw[out[0, 1] : out[1, 1]] == b"hi"
        and out[3, 2:3].astype(np.uint32).view(np.float32)[0] == 1.0
        and raw[out[0, 3] : out[1, 3]] == b"\x1a\x04\x0a\x02\x01\x02"
        and not walk_one(record[:-1], meta, keyb, out)
    )
