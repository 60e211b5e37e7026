# mypy: ignore-errors
# (numba types these functions itself, from the arrays they are called with; the typed
# entry points are in kernels/sequences.py.)
"""The numba-compiled loops that walk batches of SequenceExamples (imported only by
:mod:`tfrecord_engine.kernels` when it loads the kernels).

Wire layout walked here (every field length-delimited)::

    SequenceExample: 1 context (Features)         2 feature_lists (FeatureLists)
    Features:        1 map entry {1 key, 2 Feature}
    FeatureLists:    1 map entry {1 key, 2 FeatureList}
    FeatureList:     1 Feature (one per step)
    Feature:         1 BytesList | 2 FloatList | 3 Int64List; a numeric list holds one
                     packed field 1

Only the canonical shape is taken: each top-level field at most once, map entries key
then value, every selected Feature empty or exactly one list covering it, numeric
lists packed (or empty), the expected kind, no selected key twice, no empty context
Feature (TensorFlow reads that as present with no values). A record that deviates in
any way is flagged and the caller parses the batch by the exact per-record path, which
also raises TensorFlow's error where there is one. Every read is bounds-checked.
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

# The length-prefix reader of the Example walk and the shared memcpy: one definition each.
from ._examples import _ask_all, _span
from ._intrinsics import NO_REFCOUNTS
from ._intrinsics import copy as _memcpy

__all__ = ["dense_steps", "load", "numeric_lists", "sparse_indices", "walk_sequences"]

#: Records ahead whose lines the walks ask for while they walk one: records scattered
#: over a file's copy (a shuffled epoch) each begin with cache misses, and a frame list
#: is read through to its end; asking ahead keeps several in flight.
_AHEAD = 2
#: A record that begins at most this many bytes after the one before it (records in
#: file order, as an epoch in order reads them) is left to the CPU's own prefetcher:
#: asking for its lines there only costs (an epoch in file order measured ~10% slower).
_NEAR = 256
#: Bytes of a record asked for at most: a record of large frames is walked by its
#: headers alone, and its frames are copied in long runs the CPU's prefetcher follows
#: (asking for every line of 40 records of 30 64-KB frames took the walk 0.05 -> 2 ms).
_ASK_MAX = 8192
_BYTES = 1
_FLOAT = 2
_INT64 = 3


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _match(buf, p, n, keys, key_at, lo, hi):  # noqa: PLR0917
    """The index in ``[lo, hi)`` of the key equal to ``buf[p:p + n]``, or -1."""
    for k in range(lo, hi):
        a = key_at[k]
        if key_at[k + 1] - a != n:
            continue
        same = True
        for t in range(n):
            if buf[p + t] != keys[a + t]:
                same = False
                break
        if same:
            return k
    return -1


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _feature(buf, s, e, want):
    """``(kind, list_start, list_end)`` of the Feature ``buf[s:e]``: kind 0 when empty,
    -1 when it is not the canonical shape or its kind is neither 0 nor ``want``."""
    if s == e:
        return 0, s, s
    tag = buf[s]
    kind = _BYTES if tag == 0x0A else (_FLOAT if tag == 0x12 else (_INT64 if tag == 0x1A else 0))
    if kind != want:
        return -1, s, s
    ls, le = _span(buf, s + 1, e)
    if le != e:
        return -1, s, s
    if kind != _BYTES and ls < le:
        if buf[ls] != 0x0A:
            return -1, s, s
        ps, pe = _span(buf, ls + 1, le)
        if pe != le or (kind == _FLOAT and (pe - ps) % 4 != 0):
            return -1, s, s
        if kind == _INT64 and pe > ps and buf[pe - 1] >= 0x80:
            return -1, s, s  # a torn last varint
    return kind, ls, le


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _entry(buf, p, end):
    """``(key_start, key_end, value_start, value_end, entry_end)`` of the map entry at
    ``buf[p:end]`` (its tag first); ``entry_end`` -1 when it is not key then value."""
    if buf[p] != 0x0A:
        return 0, 0, 0, 0, -1
    es, ee = _span(buf, p + 1, end)
    if es < 0 or es >= ee or buf[es] != 0x0A:
        return 0, 0, 0, 0, -1
    ks, ke = _span(buf, es + 1, ee)
    if ks < 0 or ke >= ee or buf[ke] != 0x12:
        return 0, 0, 0, 0, -1
    vs, ve = _span(buf, ke + 1, ee)
    if ve != ee:
        return 0, 0, 0, 0, -1
    return ks, ke, vs, ve, ee


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _context(buf, r, s, e, keys, key_at, kinds, ctx_kind, ctx_ls, ctx_le):  # noqa: PLR0917
    p = s
    nctx = kinds.shape[0]
    while p < e:
        ks, ke, vs, ve, p = _entry(buf, p, e)
        if p < 0:
            return False
        k = _match(buf, ks, ke - ks, keys, key_at, 0, nctx)
        if k < 0:
            continue
        if ctx_kind[r, k] != -1:
            return False  # a selected key twice
        kind, ls, le = _feature(buf, vs, ve, kinds[k])
        if kind <= 0:
            return False  # empty, another kind or not canonical
        ctx_kind[r, k] = kind
        ctx_ls[r, k] = ls
        ctx_le[r, k] = le
    return True


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _steps(buf, s, e, want, step_ls, step_le, at):  # noqa: PLR0917
    """Writes the list span of each step of the FeatureList ``buf[s:e]`` from ``at`` on
    (an empty step: an empty span); returns where the next goes, or -1 where a step is
    not canonical or of another kind than ``want``."""
    q = s
    tag = (want << 3) | 2  # (the Feature's field of that kind, length-delimited)
    while q < e:
        if buf[q] != 0x0A:
            return -1
        # The usual step of a short numeric list, every length one byte: 0A n, then
        # the list's tag and n - 2, then 0A and the packed payload's n - 4 (as
        # _feature checks it, without its calls); any other step takes the long way.
        if want != _BYTES and q + 5 < e:
            n = np.int64(buf[q + 1])
            if (
                4 <= n < 0x80
                and q + 2 + n <= e
                and buf[q + 2] == tag
                and buf[q + 3] == n - 2
                and buf[q + 4] == 0x0A
                and buf[q + 5] == n - 4
                and (want != _FLOAT or (n - 4) % 4 == 0)
                and (want != _INT64 or n == 4 or buf[q + 1 + n] < 0x80)
            ):
                step_ls[at] = q + 4
                step_le[at] = q + 2 + n
                at += 1
                q += 2 + n
                continue
        ss, se = _span(buf, q + 1, e)
        if ss < 0:
            return -1
        kind, ls, le = _feature(buf, ss, se, want)
        if kind < 0:
            return -1
        step_ls[at] = ls
        step_le[at] = le
        at += 1
        q = se
    return at


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _lists(buf, r, s, e, keys, key_at, nctx, kinds, seq_first, seq_count, step_ls, step_le, at):  # noqa: PLR0917
    p = s
    nseq = kinds.shape[0]
    while p < e:
        ks, ke, vs, ve, p = _entry(buf, p, e)
        if p < 0:
            return -1
        k = _match(buf, ks, ke - ks, keys, key_at, nctx, nctx + nseq)
        if k < 0:
            continue
        k -= nctx
        if seq_first[r, k] != -1:
            return -1  # a selected key twice
        done = _steps(buf, vs, ve, kinds[k], step_ls, step_le, at)
        if done < 0:
            return -1
        seq_first[r, k] = at
        seq_count[r, k] = done - at
        at = done
    return at


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def walk_sequences(  # noqa: PLR0917
    buf,
    starts,
    ends,
    keys,
    key_at,
    ctx_kinds,
    seq_kinds,
    ctx_kind,
    ctx_ls,
    ctx_le,
    seq_first,
    seq_count,
    step_ls,
    step_le,
    bad,
):
    """Walks the SequenceExamples ``buf[starts[r]:ends[r]]``.

    Keys ``keys[key_at[k]:key_at[k + 1]]``: the context keys first (expected kinds
    ``ctx_kinds``), then the feature-list keys (``seq_kinds``). Fills, per record and
    context key, the Feature's kind (-1: missing) and its list's span; per record and
    feature-list key, where its steps start in ``step_ls``/``step_le`` (-1: no such
    FeatureList) and how many there are; per step, the span of its value list (empty
    for an empty step). The step arrays must hold one entry per 2 bytes of the records
    (a step takes at least 2); the others come initialised (kinds and firsts -1, counts
    0). ``bad[r]`` is set where record r is not the canonical shape (see the module's
    docstring). Returns the number of steps written.
    """
    nctx = ctx_kinds.shape[0]
    at = 0
    n = starts.shape[0]
    for r in range(min(_AHEAD, n)):
        _ask_record(buf, starts[r], ends[r])
    for r in range(n):
        j = r + _AHEAD
        if j < n and not 0 <= starts[j] - ends[j - 1] <= _NEAR:
            _ask_record(buf, starts[j], ends[j])
        p = starts[r]
        e = ends[r]
        ok = True
        seen_ctx = False
        seen_lists = False
        while p < e and ok:
            tag = buf[p]
            ms, me = _span(buf, p + 1, e)
            if ms < 0:
                ok = False
            elif tag == 0x0A and not seen_ctx:
                seen_ctx = True
                ok = _context(buf, r, ms, me, keys, key_at, ctx_kinds, ctx_kind, ctx_ls, ctx_le)
            elif tag == 0x12 and not seen_lists:
                seen_lists = True
                done = _lists(
                    buf,
                    r,
                    ms,
                    me,
                    keys,
                    key_at,
                    nctx,
                    seq_kinds,
                    seq_first,
                    seq_count,
                    step_ls,
                    step_le,
                    at,
                )
                ok = done >= 0
                if ok:
                    at = done
            else:
                ok = False
            p = me
        bad[r] = not ok
    return at


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _ask_record(buf, a, e):
    """:func:`_ask_all` for one record's first :data:`_ASK_MAX` bytes (called, not
    inlined: the rare branch of the walk's loop)."""
    _ask_all(buf, a, min(e, a + _ASK_MAX))


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _ask_steps(buf, step_ls, step_le, j0, count):
    """Asks for the lines of a record's ``count`` steps from step ``j0`` on (their spans
    lie in order within the record)."""
    if j0 >= 0 and count > 0:
        a = step_ls[j0]
        _ask_all(buf, a, min(step_le[j0 + count - 1], a + _ASK_MAX))


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def dense_steps(buf, step_ls, step_le, first, count, stride, max_steps, kind, ints, floats):  # noqa: PLR0917
    """Copies the numeric steps of each record into ``[n, max_steps, stride]`` outputs.

    Record r's ``count[r]`` steps start at ``first[r]`` in the step spans (list spans
    as :func:`walk_sequences` writes them). float32 steps go to ``floats`` (uint8, their
    bytes), int64 steps to ``ints``. Returns the first record with a step whose value
    count is not ``stride``, or -1.
    """
    row = 4 * stride
    m = first.shape[0]
    for r in range(min(_AHEAD, m)):
        _ask_steps(buf, step_ls, step_le, first[r], count[r])
    for r in range(m):
        q = r + _AHEAD  # (the record asked for; its steps lie after those of q - 1)
        if q < m and count[q] > 0 and count[q - 1] > 0:
            end = step_le[first[q - 1] + count[q - 1] - 1]
            if not 0 <= step_ls[first[q]] - end <= _NEAR:
                _ask_steps(buf, step_ls, step_le, first[q], count[q])
        j0 = first[r]
        for t in range(count[r]):
            j = j0 + t
            s = step_ls[j]
            e = step_le[j]
            if s < e:
                ps, pe = _span(buf, s + 1, e)
            else:
                ps, pe = s, s
            at = r * max_steps + t
            if kind == _FLOAT:
                if pe - ps != row:
                    return r
                _memcpy(floats, at * row, buf, ps, row)
            else:
                o = at * stride
                n = 0
                value = np.uint64(0)
                shift = np.uint64(0)
                for i in range(ps, pe):
                    byte = buf[i]
                    value |= np.uint64(byte & 0x7F) << shift
                    if byte < 0x80:
                        if n >= stride:
                            return r
                        ints[o + n] = np.int64(value)
                        n += 1
                        value = np.uint64(0)
                        shift = np.uint64(0)
                    else:
                        shift += np.uint64(7)
                        if shift >= np.uint64(70):
                            return r
                if n != stride:
                    return r
    return -1


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def numeric_lists(buf, ls, le, kind, ints, floats, counts):  # noqa: PLR0917
    """Decodes the Int64List (kind 3) or FloatList (kind 2) payloads ``buf[ls[j]:le[j]]``
    (each empty or one packed field, as :func:`walk_sequences` checked) into ``ints`` or
    ``floats`` (uint8, the float32 bytes), back to back; ``counts[j]`` values each.
    Returns how many values in all, or -1 at a varint over 10 bytes.
    """
    total = 0
    for j in range(ls.shape[0]):
        s = ls[j]
        e = le[j]
        if s >= e:
            counts[j] = 0
            continue
        ps, pe = _span(buf, s + 1, e)
        if kind == _FLOAT:
            size = pe - ps
            _memcpy(floats, 4 * total, buf, ps, size)
            counts[j] = size // 4
            total += size // 4
            continue
        n = 0
        value = np.uint64(0)
        shift = np.uint64(0)
        for i in range(ps, pe):
            byte = buf[i]
            value |= np.uint64(byte & 0x7F) << shift
            if byte < 0x80:
                ints[total + n] = np.int64(value)
                n += 1
                value = np.uint64(0)
                shift = np.uint64(0)
            else:
                shift += np.uint64(7)
                if shift >= np.uint64(70):
                    return -1
        counts[j] = n
        total += n
    return total


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def sparse_indices(per_step, count, out):
    """Fills ``out`` ``[N, 3]`` with (record, step, position) of every value, records
    holding ``count[r]`` steps of ``per_step[j]`` values each, in order."""
    j = 0
    s = 0
    for r in range(count.shape[0]):
        for t in range(count[r]):
            for p in range(per_step[s]):
                out[j, 0] = r
                out[j, 1] = t
                out[j, 2] = p
                j += 1
            s += 1


def load(errors: tuple[type[Exception], ...]) -> dict[str, object]:
    """The kernels by name, each None where compiling or its self-test failed."""
    names = ("seq_walk", "seq_dense", "seq_numeric", "seq_sparse")
    try:
        ok = _self_test()
    except (*errors, NumbaError):
        ok = False
    if not ok:
        return dict.fromkeys(names)
    return dict(
        zip(names, (walk_sequences, dense_steps, numeric_lists, sparse_indices), strict=True)
    )


def _self_test() -> bool:
    """Compiles (or loads from the cache) each kernel and checks it on a known record:
    context {"c": int64 [5]}, feature list "s" of one step float [1.0]; then an int64
    list [300] as a dense step."""
    one = np.float32(1.0).tobytes()
    float_step = b"\x12\x06\x0a\x04" + one
    feature_list = b"\x0a" + bytes([len(float_step)]) + float_step
    lists_entry = b"\x0a\x01s\x12" + bytes([len(feature_list)]) + feature_list
    lists = b"\x0a" + bytes([len(lists_entry)]) + lists_entry
    ctx_feature = b"\x1a\x03\x0a\x01\x05"
    ctx_entry = b"\x0a\x01c\x12" + bytes([len(ctx_feature)]) + ctx_feature
    ctx = b"\x0a" + bytes([len(ctx_entry)]) + ctx_entry
    record = b"\x0a" + bytes([len(ctx)]) + ctx + b"\x12" + bytes([len(lists)]) + lists
    buf = np.frombuffer(record, np.uint8)
    keys = np.frombuffer(b"cs", np.uint8)
    key_at = np.array([0, 1, 2], np.int64)
    ctx_kind = np.full((1, 1), -1, np.int8)
    ctx_ls = np.full((1, 1), -1, np.int64)
    ctx_le = np.full((1, 1), -1, np.int64)
    seq_first = np.full((1, 1), -1, np.int64)
    seq_count = np.zeros((1, 1), np.int64)
    step_ls = np.zeros(len(record) // 2, np.int64)
    step_le = np.zeros(len(record) // 2, np.int64)
    bad = np.ones(1, np.bool_)
    steps = walk_sequences(
        buf,
        np.array([0], np.int64),
        np.array([len(record)], np.int64),
        keys,
        key_at,
        np.array([_INT64], np.int8),
        np.array([_FLOAT], np.int8),
        ctx_kind,
        ctx_ls,
        ctx_le,
        seq_first,
        seq_count,
        step_ls,
        step_le,
        bad,
    )
    if bad[0] or steps != 1 or int(ctx_kind[0, 0]) != _INT64 or int(seq_count[0, 0]) != 1:
        return False
    if record[int(ctx_ls[0, 0]) : int(ctx_le[0, 0])] != b"\x0a\x01\x05":
        return False
    floats = np.zeros(4, np.uint8)
    ints = np.zeros(1, np.int64)
    first = np.zeros(1, np.int64)
    wrong = dense_steps(
        buf, step_ls, step_le, first, np.ones(1, np.int64), 1, 1, _FLOAT, ints, floats
    )
    if wrong != -1 or floats.tobytes() != one:
        return False
    int_list = np.frombuffer(b"\x0a\x02\xac\x02", np.uint8)  # [300]
    wrong = dense_steps(
        int_list,
        np.zeros(1, np.int64),
        np.full(1, 4, np.int64),
        first,
        np.ones(1, np.int64),
        1,
        1,
        _INT64,
        ints,
        floats,
    )
    if wrong != -1 or int(ints[0]) != 300:
        return False
    counts = np.zeros(2, np.int64)
    ints = np.zeros(4, np.int64)
    spans = np.array([0, 4], np.int64)
    total = numeric_lists(int_list, spans, spans[::-1].copy(), _INT64, ints, floats, counts)
    if total != 1 or int(ints[0]) != 300 or counts.tolist() != [1, 0]:
        return False
    indices = np.zeros((3, 3), np.int64)
    sparse_indices(np.array([2, 0, 1], np.int64), np.array([1, 2], np.int64), indices)
    return indices.tolist() == [[0, 0, 0], [0, 0, 1], [1, 1, 0]]
