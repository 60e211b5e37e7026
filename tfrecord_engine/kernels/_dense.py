# mypy: ignore-errors
# (numba types these functions itself, from the arrays they are called with; the typed
# entry point is kernels.dense_examples.)
"""The compiled decoding of fixed-size features of wide Examples (:func:`dense_examples`)
and the key hash it shares with the walk of :mod:`._examples` (imported only by
the kernel modules)."""

from __future__ import annotations

import numpy as np

from ..errors import MissingDependencyError, install_hint

try:
    from numba import njit
except ImportError as exc:
    raise MissingDependencyError(
        f"the compiled kernels need numba ({exc}): {install_hint('fast')}"
    ) from exc

from ._intrinsics import LOW_BYTES as _LOW_BYTES
from ._intrinsics import NO_REFCOUNTS
from ._intrinsics import copy as _copy
from ._intrinsics import ctz as _ctz
from ._intrinsics import load8 as _load8

__all__ = ["dense_examples", "key_hash"]


_HASH_MUL1 = np.uint64(0x9E3779B97F4A7C15)
_HASH_MUL2 = np.uint64(0xC2B2AE3D27D4EB4F)


@njit(nogil=True, cache=True, inline="always", **NO_REFCOUNTS)
def _key_words(buf, p, n):
    """The key ``buf[p:p + n]`` as two little-endian words: its first (up to) 8 bytes,
    bytes past the key read as 0, and, if it is longer than 8, its last 8 (else 0).
    """
    if p + 8 <= buf.shape[0]:
        w1 = _load8(buf, p) & _LOW_BYTES[min(n, 8)]
    else:
        w1 = np.uint64(0)
        for b in range(min(n, 8)):
            w1 |= np.uint64(buf[p + b]) << np.uint64(8 * b)
    w2 = np.uint64(0)
    if n > 8:
        w2 = _load8(buf, p + n - 8)
    return w1, w2


@njit(nogil=True, cache=True, inline="always", **NO_REFCOUNTS)
def _mix(w1, w2, n):
    """A key's hash from its :func:`_key_words` and its length."""
    h = (w1 ^ (w2 * _HASH_MUL2) ^ np.uint64(n)) * _HASH_MUL1
    return h ^ (h >> np.uint64(32))


@njit(nogil=True, cache=True, inline="always", **NO_REFCOUNTS)
def key_hash(buf, p, n):
    """A feature key's hash from its length and its first and last 8 bytes (bytes past
    the key read as 0). ``example.dense`` builds its table with this same function; its
    top 12 bits are the key's filter mark (see :func:`dense_examples`).
    """
    w1, w2 = _key_words(buf, p, n)
    return _mix(w1, w2, n)


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _varint(buf, i, e):
    """``(value, position after it)`` of the varint at ``buf[i:e]``; position -1 when it
    is torn or longer than 10 bytes.
    """
    value = np.uint64(0)
    shift = 0
    while i < e and shift < 70:
        byte = buf[i]
        i += 1
        value |= np.uint64(byte & 0x7F) << np.uint64(shift)
        if byte < 0x80:
            return value, i
        shift += 7
    return value, -1


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _length(buf, i, e):
    """A length prefix at ``buf[i:e]`` that fits in what is left: ``(end, start)`` of the
    payload, or ``(-1, -1)``.
    """
    if i < e and buf[i] < 0x80:  # the common one-byte length
        end = i + 1 + np.int64(buf[i])
        if end > e:
            return -1, -1
        return end, i + 1
    n, j = _varint(buf, i, e)
    if j < 0 or n > np.uint64(e - j):
        return -1, -1
    return j + np.int64(n), j


@njit(nogil=True, cache=True)
def dense_examples(  # noqa: PLR0917
    buf, starts, ends, first, total, plan, table_hash, keys, defaults, ints, floats, fallback
):
    """Decodes fixed-size features of the Examples ``buf[starts[r]:ends[r]]``.

    ``plan`` is ``(table, key_at, kinds, counts, cols, marks, key_words)``: an
    open-addressing table of slots by :func:`key_hash` (``table_hash`` holds each
    entry's hash, -1 marks empty), the selected keys' bytes ``keys[key_at[s]:key_at[s +
    1]]``, each slot's kind (1 bytes, 2 float, 3 int64), values per record and first column,
    which hash marks (its top 12 bits, 4096) selected keys have, and each key's two
    :func:`_key_words` (``key_words[2s]``, ``key_words[2s + 1]``). Slot ``s`` of record
    ``r`` goes to ``out[cols[s] * n + r * counts[s]:][:counts[s]]`` of ``ints`` or
    ``floats`` (the float32 bits as uint32); a bytes slot (kind 1, ``counts[s]`` twice its
    values) gets each value's ``(start, end)`` in ``buf`` as two words of ``ints``.
    ``defaults[s]`` is the start of slot s's
    default in the same array's tail region, or -1 for none (a missing feature is then
    the record's fallback). ``fallback[r]`` is set for every record this loop did not
    take whole: anything but one packed list per selected key, a duplicate selected
    key, a malformed entry, a wrong kind or count, a missing feature with no default.
    The records are records ``first``.. of a batch of ``total`` (the ``n`` above), so a
    batch can be decoded in chunks that stay in the CPU's cache.

    An unselected entry costs a few nanoseconds: its head (entry tag and length, key
    tag and length, all one byte) is checked as one word, its key hashed from two word
    loads, and a key whose mark no selected key has (nearly all) is skipped by the
    entry's length, its value never decoded.
    """
    table, key_at, kinds, counts, cols, marks, key_words = plan
    n = total
    size = buf.shape[0]
    slots = kinds.shape[0]
    mask = table.shape[0] - 1
    seen = np.zeros(slots, np.uint8)
    for j in range(starts.shape[0]):
        seen[:] = 0
        r = first + j
        i = starts[j]
        e = ends[j]
        ok = True
        if i < e:  # else an empty Example: every feature missing
            ok = buf[i] == 0x0A
            if ok:
                fe, i = _length(buf, i + 1, e)
                ok = fe == e
        while ok and i < e:
            ok = False
            # The usual entry: 0x0A, its length, 0x0A, the key's length (both under
            # 128), the key, 0x12 and the value's length, which ends the entry.
            ee = np.int64(-1)
            if i + 8 <= size:
                w = _load8(buf, i)
                if (w & np.uint64(0x80FF80FF)) == np.uint64(0x000A000A):
                    ee = i + 2 + np.int64((w >> np.uint64(8)) & np.uint64(0xFF))
                    kp = i + 4
                    ke = kp + np.int64((w >> np.uint64(24)) & np.uint64(0xFF))
                    # (A value length byte of 0x80 or more cannot end at ee: ee <= ke + 127.)
                    if ke + 2 <= ee <= e and buf[ke] == 0x12 and ke + 2 + buf[ke + 1] == ee:
                        i = ke + 2
                    else:
                        ee = -1
            if ee < 0:  # any other layout the exact way, or the exact path
                if buf[i] != 0x0A:
                    break
                ee, i = _length(buf, i + 1, e)
                if ee < 0 or i >= ee or buf[i] != 0x0A:
                    break
                ke, kp = _length(buf, i + 1, ee)
                if ke < 0 or ke >= ee or buf[ke] != 0x12:
                    break
                ve, i = _length(buf, ke + 1, ee)
                if ve != ee:
                    break
            # The key's hash, as key_hash computes it (written inline: numba's call of a
            # helper taking arrays costs more than the rest of the entry).
            kl = ke - kp
            if kp + 8 <= size:
                w1 = _load8(buf, kp) & _LOW_BYTES[min(kl, 8)]
                w2 = _load8(buf, kp + kl - 8) if kl > 8 else np.uint64(0)
            else:
                w1, w2 = _key_words(buf, kp, kl)
            h = (w1 ^ (w2 * _HASH_MUL2) ^ np.uint64(kl)) * _HASH_MUL1
            h ^= h >> np.uint64(32)
            ok = True
            if marks[np.int64(h >> np.uint64(52))] == 0:
                i = ee  # not asked for: skipped by its length, never decoded
                continue
            # The key's slot: the table entry of equal hash, length and bytes (the two
            # words are the whole key up to 16 bytes; the middle of a longer one is
            # compared byte by byte).
            idx = np.int64(h & np.uint64(mask))
            s = table[idx]
            while s >= 0:
                a = key_at[s]
                if (
                    table_hash[idx] == h
                    and key_at[s + 1] - a == kl
                    and key_words[2 * s] == w1
                    and key_words[2 * s + 1] == w2
                ):
                    q = 8
                    while q < kl - 8 and keys[a + q] == buf[kp + q]:
                        q += 1
                    if q >= kl - 8:
                        break
                idx = (idx + 1) & mask
                s = table[idx]
            if s < 0:
                i = ee  # not asked for
                continue
            ok = False
            if seen[s] != 0:
                break  # a duplicate key: the exact path applies TensorFlow's rules
            if i == ee:
                seen[s] = 2  # an empty Feature counts as missing
                ok = True
                continue
            kind = kinds[s]
            k = counts[s]
            base = cols[s] * n + r * k
            if kind == 1:
                # A BytesList: each value's (start, end) in buf, as two int64 words.
                if buf[i] != 0x0A:
                    break  # another kind (an error) or an unknown tag: the exact path
                le, i = _length(buf, i + 1, ee)
                if le != ee:
                    break
                got = 0
                while i < ee:
                    if buf[i] != 0x0A:
                        i = -1
                        break
                    ve, vs = _length(buf, i + 1, ee)
                    if ve < 0:
                        i = -1
                        break
                    if 2 * got < k:
                        ints[base + 2 * got] = vs
                        ints[base + 2 * got + 1] = ve
                    got += 1
                    i = ve
                if i < 0 or 2 * got != k:
                    break  # malformed, or a wrong count (an error): the exact path
                seen[s] = 1
                ok = True
                continue
            tag = 0x12 if kind == 2 else 0x1A
            # The usual value: its kind's tag and length, the packed list's tag and
            # length (both lengths under 128), checked as one word; then the values.
            pe = np.int64(-1)
            if i + 8 <= size:
                w = _load8(buf, i)
                if (
                    (w & np.uint64(0x80FF80FF)) == np.uint64(0x000A0000 | tag)
                    and i + 2 + np.int64((w >> np.uint64(8)) & np.uint64(0xFF)) == ee
                    and i + 4 + np.int64(w >> np.uint64(24) & np.uint64(0xFF)) == ee
                ):
                    pe = ee
                    i += 4
            if pe < 0:  # any other layout
                if buf[i] != tag:
                    break  # another kind (an error) or an unknown tag: the exact path
                le, i = _length(buf, i + 1, ee)
                if le != ee:
                    break
                if i < ee:
                    if buf[i] != 0x0A:
                        break  # unpacked values: the exact path
                    pe, i = _length(buf, i + 1, ee)
                    if pe != ee:
                        break
            got = 0
            if kind == 3:
                # Varints, as _varint reads them (inline: see above). A 10th byte
                # contributes only bit 63; one torn or longer than 10 bytes is an error.
                while i < ee:
                    w = _load8(buf, i) if i + 8 <= size else np.uint64(0x8080808080808080)
                    stop = ~w & np.uint64(0x8080808080808080)
                    width = np.int64(_ctz(stop) >> np.uint64(3)) + 1
                    if stop != 0 and i + width <= ee:
                        # Up to 8 bytes at once: keep the varint's bytes, drop their high
                        # bits, and close the gaps (7-bit groups into 14, 28, 56 bits).
                        v = w & _LOW_BYTES[width] & np.uint64(0x7F7F7F7F7F7F7F7F)
                        v = ((v & np.uint64(0x7F007F007F007F00)) >> np.uint64(1)) | (
                            v & np.uint64(0x007F007F007F007F)
                        )
                        v = ((v & np.uint64(0x3FFF00003FFF0000)) >> np.uint64(2)) | (
                            v & np.uint64(0x00003FFF00003FFF)
                        )
                        v = ((v & np.uint64(0x0FFFFFFF00000000)) >> np.uint64(4)) | (
                            v & np.uint64(0x000000000FFFFFFF)
                        )
                        i += width
                    else:
                        v = np.uint64(0)
                        shift = np.uint64(0)
                        while True:
                            byte = buf[i]
                            i += 1
                            v |= np.uint64(byte & 0x7F) << shift
                            if byte < 0x80:
                                break
                            shift += np.uint64(7)
                            if i >= ee or shift >= np.uint64(70):
                                i = -1
                                break
                        if i < 0:
                            break
                    if got < k:
                        ints[base + got] = np.int64(v)
                    got += 1
                if i < 0:
                    break
            else:
                size4 = ee - i
                if size4 % 4:
                    break
                got = size4 // 4
                _copy(floats, base, buf, i, 4 * min(got, k))  # the float32 bits: one memcpy
                i = ee
            if got != k:
                break  # a wrong count (an error): the exact path raises it
            seen[s] = 1
            ok = True
        if ok:
            for s in range(slots):
                if seen[s] == 1:
                    continue
                d = defaults[s]
                if d < 0:
                    ok = False
                    break
                k = counts[s]
                base = cols[s] * n + r * k
                if kinds[s] != 2:
                    for v in range(k):
                        ints[base + v] = ints[d + v]
                else:
                    for v in range(k):
                        floats[base + v] = floats[d + v]
        fallback[j] = not ok
