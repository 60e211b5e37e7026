"""Lockstep (vectorized) walking of many serialized Examples at once.

Instead of parsing one Example at a time, every step here advances *all* records of a
batch by one wire element with numpy: one pass per nesting level and per map entry, not
one Python call per record. The result is an :class:`EntryTable`: for every map entry
of every record, which spec key it holds (if any), the Feature's kind and the byte span
of its value list. Value lists are then decoded per key for the whole batch
(:func:`packed_varints`, :func:`packed_floats`, :func:`bytes_values`).

Only the common, canonical shape of an Example is taken here: one ``features`` field
covering the whole record, entries with the key before the value, each Feature holding
exactly one list, packed numeric lists. Any record that deviates (concatenated Examples,
unknown fields, value-before-key entries, unpacked lists, duplicate keys, anything
malformed) is flagged in ``fallback`` and must be parsed by the exact per-record path,
which also raises the precise error for malformed input. Flagging is conservative: a
flagged record may be perfectly valid, but a record not flagged is decoded exactly.

All positions are absolute offsets into one ``uint8`` buffer; records are half-open
spans ``[starts[i], ends[i])``. Every read is bounds-checked against its record's end
before it happens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..kernels.words import read_rows, read_words

__all__ = [
    "EntryTable",
    "bytes_values",
    "gather_spans",
    "packed_floats",
    "packed_span",
    "packed_varints",
    "read_varints",
    "read_words",
    "swar_varints",
    "varint_runs",
    "walk_examples",
]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Bool = npt.NDArray[np.bool_]

# Feature oneof tags (field number << 3 | wire type 2) and the kind codes they map to.
_TAG_BYTES = 0x0A
_TAG_FLOAT = 0x12
_TAG_INT64 = 0x1A
_TAG_LEN1 = 0x0A  # field 1, length-delimited: Example.features, map entry, key, packed list
_TAG_LEN2 = 0x12  # field 2, length-delimited: map entry value
KIND_NONE = 0
KIND_BYTES = 1
KIND_FLOAT = 2
KIND_INT64 = 3

_MAX_VARINT = 10
_U64 = np.uint64


def read_varints(buf: U8, pos: I64, limit: I64) -> tuple[npt.NDArray[np.uint64], I64, Bool]:
    """Decodes one varint at each position, reading no byte at or past ``limit``.

    Returns:
        ``(values, next_positions, ok)``; where ``ok`` is False the varint ran past its
        limit or past 10 bytes, and the value there is meaningless.
    """
    n = pos.shape[0]
    values = np.zeros(n, np.uint64)
    nxt = pos.copy()
    ok = pos < limit
    if n == 0:
        return values, nxt, ok
    # Fast path: 1-byte varints (lengths < 128, small ints), checked across the batch.
    first = np.zeros(n, np.uint8)
    first[ok] = buf[pos[ok]]
    one = ok & (first < 0x80)
    values[one] = first[one]
    nxt[one] = pos[one] + 1
    todo = np.flatnonzero(ok & ~one)
    if todo.size == 0:
        return values, nxt, ok
    acc = np.zeros(todo.size, np.uint64)
    p = pos[todo]
    lim = limit[todo]
    live = np.ones(todo.size, np.bool_)
    done = np.zeros(todo.size, np.bool_)
    for k in range(_MAX_VARINT):
        inside = live & (p + k < lim)
        live &= inside
        if not live.any():
            break
        idx = np.flatnonzero(live)
        b = buf[p[idx] + k].astype(np.uint64)
        acc[idx] |= (b & np.uint64(0x7F)) << np.uint64(7 * k)
        end_here = b < 0x80
        finished = idx[end_here]
        done[finished] = True
        nxt[todo[finished]] = p[finished] + k + 1
        live[finished] = False
    values[todo] = acc
    ok[todo] = done
    return values, nxt, ok


class _Buf:
    """A byte buffer with 4- and 8-byte little-endian reads at any positions."""

    def __init__(self, buf: U8) -> None:
        self.u8 = buf
        self.size = int(buf.shape[0])

    def read4(self, pos: I64) -> npt.NDArray[np.uint32]:
        """Bytes ``pos..pos+3`` as little-endian uint32 (zero past the buffer's end)."""
        out: npt.NDArray[np.uint32] = read_words(self.u8, pos).astype(np.uint32)
        return out

    def read8(self, pos: I64) -> npt.NDArray[np.uint64]:
        """Bytes ``pos..pos+7`` as little-endian uint64 (zero past the buffer's end)."""
        return read_words(self.u8, pos)


def _expect_len(b: _Buf, pos: I64, limit: I64, tag: int | None) -> tuple[I64, I64, Bool]:
    """At each position expects a one-byte ``tag`` (any tag if None) and a varint length.

    Lengths of up to 3 varint bytes (< 2 MiB) are decoded from one 4-byte gather for the
    whole batch; longer ones go through :func:`read_varints`.

    Returns:
        ``(payload_start, payload_end, ok)``; where ``ok`` is False the payload does
        not fit before ``limit`` or the bytes are not of this shape. Bytes past
        ``limit`` may be read but never decide a result that is reported ok.
    """
    w = b.read4(pos).astype(np.int64)
    b0 = (w >> 8) & 0xFF
    b1 = (w >> 16) & 0xFF
    b2 = w >> 24
    one = b0 < 0x80
    two = (b1 < 0x80) & ~one
    length = np.where(
        one,
        b0,
        np.where(
            two,
            (b0 & 0x7F) | (b1 << 7),
            (b0 & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14),
        ),
    )
    hsize = np.where(one, 2, np.where(two, 3, 4))
    ok = one | two | (b2 < 0x80)
    if tag is not None:
        ok &= (w & 0xFF) == tag
    start = pos + hsize
    if not ok.all():
        longer = np.flatnonzero(~ok & (b2 >= 0x80) & (pos + 4 < limit))
        if tag is not None and longer.size:
            longer = longer[(w[longer] & 0xFF) == tag]
        if longer.size:
            val, nxt, vok = read_varints(b.u8, pos[longer] + 1, limit[longer])
            fits = vok & (val <= np.uint64(1 << 62))
            length[longer] = np.where(fits, val, 0).astype(np.int64)
            start[longer] = nxt
            ok[longer] = fits
    end = start + length
    ok &= end <= limit
    return start, np.where(ok, end, start), ok


@dataclass(frozen=True)
class EntryTable:
    """Every map entry of a batch of Examples, decoded structurally.

    Attributes:
        record: the record (row in the batch) each entry belongs to.
        key_id: index of the entry's key in the spec's key list, or -1.
        kind: Feature kind (``KIND_NONE`` for an empty Feature, which counts as missing).
        list_start, list_end: byte span of the kind's list message payload.
        fallback: per record, True where the exact per-record path must be used.
    """

    record: I64
    key_id: I64
    kind: npt.NDArray[np.int8]
    list_start: I64
    list_end: I64
    fallback: Bool


_KIND_OF_TAG = np.zeros(256, np.int8)
_KIND_OF_TAG[_TAG_BYTES] = KIND_BYTES
_KIND_OF_TAG[_TAG_FLOAT] = KIND_FLOAT
_KIND_OF_TAG[_TAG_INT64] = KIND_INT64
_PREFIX_MASK = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [2**64 - 1], np.uint64)


def walk_examples(buf: U8, starts: I64, ends: I64, keys: list[bytes]) -> EntryTable:
    """Walks all Examples in lockstep and matches their keys against ``keys``."""
    b = _Buf(buf)
    n = starts.shape[0]
    # Top level: one `features` field spanning the whole record; b"" is an empty Example.
    nonempty = starts < ends
    f_start, f_end, ok = _expect_len(b, starts, ends, _TAG_LEN1)
    ok &= f_end == ends
    fallback = nonempty & ~ok
    cur = np.where(nonempty & ok, f_start, ends)
    limit = ends

    recs: list[I64] = []
    kstarts: list[I64] = []
    klens: list[I64] = []
    kinds: list[npt.NDArray[np.int8]] = []
    lstarts: list[I64] = []
    lends: list[I64] = []
    active = np.flatnonzero(cur < limit)
    while active.size:
        c = cur[active]
        lim = limit[active]
        e_start, e_end, ok = _expect_len(b, c, lim, _TAG_LEN1)
        # Entry: key (field 1) first, then value (field 2), nothing else.
        k_start, k_end, kok = _expect_len(b, e_start, e_end, _TAG_LEN1)
        v_start, v_end, vok = _expect_len(b, k_end, e_end, _TAG_LEN2)
        ok &= kok & vok & (v_end == e_end)
        # Feature: empty (no kind: missing) or exactly one list covering it all.
        empty = v_start == v_end
        l_start, l_end, lok = _expect_len(b, v_start, v_end, None)
        kind = _KIND_OF_TAG[b.u8[np.minimum(v_start, b.size - 1)]]
        kind[empty] = KIND_NONE
        ok &= empty | (lok & (kind != KIND_NONE) & (l_end == v_end))
        if ok.all():
            good = active
        else:
            fallback[active[~ok]] = True
            good = active[ok]
            k_start, k_end, kind = k_start[ok], k_end[ok], kind[ok]
            l_start, l_end, empty, e_end = l_start[ok], l_end[ok], empty[ok], e_end[ok]
        recs.append(good)
        kstarts.append(k_start)
        klens.append(k_end - k_start)
        kinds.append(kind)
        lstarts.append(np.where(empty, k_end, l_start))
        lends.append(np.where(empty, k_end, l_end))
        cur[good] = e_end
        active = good[e_end < limit[good]]

    record = np.concatenate(recs) if recs else np.zeros(0, np.int64)
    kstart = np.concatenate(kstarts) if kstarts else np.zeros(0, np.int64)
    klen = np.concatenate(klens) if klens else np.zeros(0, np.int64)
    key_id = _match_keys(b, kstart, klen, keys)
    # Duplicate spec keys within a record (last wins in TF): leave to the exact path.
    for i in range(len(keys)):
        fallback |= np.bincount(record[key_id == i], minlength=n) > 1
    return EntryTable(
        record=record,
        key_id=key_id,
        kind=np.concatenate(kinds) if kinds else np.zeros(0, np.int8),
        list_start=np.concatenate(lstarts) if lstarts else np.zeros(0, np.int64),
        list_end=np.concatenate(lends) if lends else np.zeros(0, np.int64),
        fallback=fallback,
    )


def _match_keys(b: _Buf, kstart: I64, klen: I64, keys: list[bytes]) -> I64:
    """Key index of every entry (-1 for keys not asked for), by 8-byte prefix + length."""
    key_id = np.full(kstart.shape[0], -1, np.int64)
    if kstart.size == 0 or not keys:
        return key_id
    prefix = b.read8(kstart) & _PREFIX_MASK[np.minimum(klen, 8)]
    for i, key in enumerate(keys):
        want = int.from_bytes(key[:8].ljust(8, b"\0"), "little")
        cand = np.flatnonzero((klen == len(key)) & (prefix == np.uint64(want)))
        if len(key) > 8 and cand.size:
            rest = np.frombuffer(key[8:], np.uint8)
            got = b.u8[kstart[cand, None] + 8 + np.arange(len(rest))]
            cand = cand[(got == rest).all(axis=1)]
        key_id[cand] = i
    return key_id


def gather_spans(buf: U8, starts: I64, ends: I64) -> tuple[U8, I64]:
    """Concatenates ``buf[starts[i]:ends[i]]`` for all i; returns (bytes, lengths).

    Equal-length spans (fixed-size features: the common case) are copied row by row
    through a sliding-window view, one ``memcpy`` per span; others through an index
    built with one cumulative sum.
    """
    lengths = ends - starts
    m = lengths.shape[0]
    if m == 0:
        return np.zeros(0, np.uint8), lengths
    first = int(lengths[0])
    if first > 0 and bool((lengths == first).all()) and int(ends.max()) <= buf.shape[0]:
        return read_rows(buf, starts, first).reshape(-1), lengths
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.uint8), lengths
    # idx = cumsum(step): +1 inside a span, a jump to the next span's start at its first
    # byte. Empty spans contribute nothing.
    nonempty = lengths > 0
    s, ln = starts[nonempty], lengths[nonempty]
    step = np.ones(total, np.int64)
    firsts = np.cumsum(ln) - ln
    step[firsts[1:]] = s[1:] - (s[:-1] + ln[:-1]) + 1
    step[0] = s[0]
    return buf[np.cumsum(step)], lengths


_WEIGHTS = np.array([1 << (7 * k) for k in range(_MAX_VARINT)], np.uint64)
# Little-endian masks of the low ``w`` bytes, for w = 0..8.
_BYTE_MASK = np.array([(1 << (8 * w)) - 1 for w in range(9)], np.uint64)


def swar_varints(words: npt.NDArray[np.uint64], widths: I64) -> npt.NDArray[np.uint64]:
    """Decodes varints of 1..8 bytes from the 8 bytes starting at each one.

    ``words[j]`` holds the 8 bytes at varint j's start (little-endian); ``widths[j]`` is
    its length. The 7-bit groups are packed together in three shift-and-merge steps
    (pairs of bytes, then pairs of 14-bit halves, then 28-bit halves): a fixed dozen
    whole-array operations whatever the widths.
    """
    x = words & _BYTE_MASK[widths] & _U64(0x7F7F7F7F7F7F7F7F)
    x = (x & _U64(0x007F007F007F007F)) | ((x & _U64(0x7F007F007F007F00)) >> _U64(1))
    x = (x & _U64(0x00003FFF00003FFF)) | ((x & _U64(0x3FFF00003FFF0000)) >> _U64(2))
    packed: npt.NDArray[np.uint64] = (x & _U64(0x000000000FFFFFFF)) | (
        (x & _U64(0x0FFFFFFF00000000)) >> _U64(4)
    )
    return packed


def _varints_by_width(raw: U8, begins: I64, size: I64) -> npt.NDArray[np.uint64]:
    """Decodes varints ``raw[begins[j] : begins[j] + size[j]]`` (sizes 1..10)."""
    padded = np.concatenate([raw, np.zeros(_MAX_VARINT, np.uint8)])
    window = np.lib.stride_tricks.as_strided(
        padded, shape=(raw.shape[0], _MAX_VARINT), strides=(1, 1)
    )
    words = window[begins, :8].copy().view("<u8")[:, 0]
    wide = size > 8
    if not wide.any():
        return swar_varints(words, size)
    values = np.zeros(begins.shape[0], np.uint64)
    narrow = ~wide
    values[narrow] = swar_varints(words[narrow], size[narrow])
    # 9- and 10-byte varints (values >= 2**56, negative int64): byte by byte.
    for width in (9, 10):
        sel = np.flatnonzero(size == width)
        if sel.size:
            groups = (window[begins[sel], :width] & 0x7F).astype(np.uint64)
            values[sel] = (groups * _WEIGHTS[:width]).sum(axis=1, dtype=np.uint64)
    return values


def packed_varints(buf: U8, starts: I64, ends: I64) -> tuple[I64, I64, Bool]:
    """Decodes Int64List payloads ``[start, end)`` holding one packed field each.

    Returns:
        ``(values, counts, ok)``: all values concatenated (int64, two's complement as
        protobuf), values per list, and per list whether it was the simple packed form.
    """
    empty = starts == ends
    p_start, p_end, ok = packed_span(buf, starts, ends)
    ok |= empty
    p_start = np.where(empty | ~ok, starts, p_start)
    p_end = np.where(empty | ~ok, starts, p_end)
    values, counts, runs_ok = varint_runs(buf, p_start, p_end)
    return values, counts, ok & runs_ok


def varint_runs(buf: U8, p_start: I64, p_end: I64) -> tuple[I64, I64, Bool]:
    """Decodes runs of back-to-back varints ``buf[p_start[i]:p_end[i]]`` (packed payloads).

    Returns:
        ``(values, counts, ok)``: all values concatenated (int64, two's complement as
        protobuf), values per run, and per run whether it decoded cleanly (it ends on a
        varint's last byte and holds no varint longer than 10 bytes). A run that is
        not ok may or may not contribute values (the compiled kernel leaves them out);
        its count says how many, so callers drop them with ``np.repeat(ok, counts)``.
    """
    compiled = kernels.varint_runs(buf, p_start, p_end)
    if compiled is not None:
        return compiled
    return numpy_varint_runs(buf, p_start, p_end)


def numpy_varint_runs(buf: U8, p_start: I64, p_end: I64) -> tuple[I64, I64, Bool]:
    """:func:`varint_runs` in whole-array numpy passes (without the compiled kernel)."""
    m = p_start.shape[0]
    lengths = p_end - p_start
    width = int(lengths.max(initial=0))
    # Runs of similar lengths (a fixed-count list of varints): decode them as the rows
    # of one [m, width] array, which needs no per-byte index to gather.
    if 0 < width <= 2 * (int(lengths.sum()) // m + 1) and int(p_start.max()) + width <= buf.size:
        return _varint_rows(buf, p_start, lengths, width)
    return _varint_spans(buf, p_start, p_end)


def _varint_spans(buf: U8, p_start: I64, p_end: I64) -> tuple[I64, I64, Bool]:
    """:func:`varint_runs` over the runs' bytes gathered into one array."""
    m = p_start.shape[0]
    ok = np.ones(m, np.bool_)
    raw, lengths = gather_spans(buf, p_start, p_end)
    if raw.size == 0:
        return np.zeros(0, np.int64), np.zeros(m, np.int64), ok
    term = raw < 0x80
    # Each run must end on a varint terminator, or its tail would run into the next
    # run's first value: drop such runs (exact path) and decode the rest cleanly.
    last = np.cumsum(lengths) - 1
    nonzero = lengths > 0
    torn = np.zeros(m, np.bool_)
    torn[nonzero] = ~term[last[nonzero]]
    if torn.any():
        ok &= ~torn
        p_end = np.where(torn, p_start, p_end)
        raw, lengths = gather_spans(buf, p_start, p_end)
        term = raw < 0x80
        if raw.size == 0:
            return np.zeros(0, np.int64), np.zeros(m, np.int64), ok
    ends_idx = np.flatnonzero(term)
    begins = np.concatenate(([0], ends_idx[:-1] + 1))
    size = ends_idx - begins + 1
    if size.size and int(size.max()) > _MAX_VARINT:
        # Over-long varints: hand those runs to the exact path.
        owner = np.searchsorted(np.cumsum(lengths), begins[size > _MAX_VARINT], side="right")
        ok[owner] = False
    if int(size.max(initial=0)) == 1:
        values = raw[ends_idx].astype(np.int64)
    else:
        values = _varints_by_width(raw, begins, size).view(np.int64)
    # Values per run: terminators inside each run's byte range.
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    counts = np.diff(np.searchsorted(ends_idx, bounds)).astype(np.int64)
    return values, counts, ok


def _varint_rows(buf: U8, p_start: I64, lengths: I64, width: int) -> tuple[I64, I64, Bool]:
    """:func:`varint_runs` over ``[m, width]`` rows (each run padded with what follows it)."""
    m = p_start.shape[0]
    rows = read_rows(buf, p_start, width)
    inside = np.arange(width) < lengths[:, None]
    term = (rows < 0x80) & inside
    # A run must end on a terminator: else its last value would be torn.
    has = lengths > 0
    ok = np.ones(m, np.bool_)
    ok[has] = term[has, lengths[has] - 1]
    if not ok.all():
        term &= ok[:, None]
    ends_idx = np.flatnonzero(term)
    row = ends_idx // width
    prev = np.empty_like(ends_idx)
    prev[:1] = -1
    prev[1:] = ends_idx[:-1]
    begins = np.maximum(prev + 1, row * width)
    size = ends_idx - begins + 1
    counts = np.bincount(row, minlength=m).astype(np.int64)
    if size.size == 0:
        return np.zeros(0, np.int64), counts, ok
    if int(size.max()) > 8:
        # Long varints (values >= 2**56, negative int64, over-long encodings): the
        # general path.
        flat = np.concatenate([rows.reshape(-1), np.zeros(_MAX_VARINT, np.uint8)])
        values = _varints_by_width(flat, begins, size).view(np.int64)
        if int(size.max()) > _MAX_VARINT:
            ok[np.unique(row[size > _MAX_VARINT])] = False
        return values, counts, ok
    words = read_words(rows.reshape(-1), begins)
    return swar_varints(words, size).view(np.int64), counts, ok


def packed_span(buf: U8, starts: I64, ends: I64) -> tuple[I64, I64, Bool]:
    """The packed field's payload span of each list ``[start, end)`` (one field each)."""
    p_start, p_end, ok = _expect_len(_Buf(buf), starts, ends, _TAG_LEN1)
    return p_start, p_end, ok & (p_end == ends)


def packed_floats(buf: U8, starts: I64, ends: I64) -> tuple[npt.NDArray[np.float32], I64, Bool]:
    """Decodes FloatList payloads holding one packed field each (little-endian float32)."""
    empty = starts == ends
    p_start, p_end, ok = packed_span(buf, starts, ends)
    ok &= (p_end - p_start) % 4 == 0
    ok |= empty
    p_start = np.where(empty | ~ok, starts, p_start)
    p_end = np.where(empty | ~ok, starts, p_end)
    raw, lengths = gather_spans(buf, p_start, p_end)
    return raw.view("<f4").astype(np.float32, copy=False), lengths // 4, ok


def bytes_values(buf: U8, starts: I64, ends: I64) -> tuple[I64, I64, I64, Bool]:
    """Walks BytesList payloads in lockstep.

    Returns:
        ``(value_starts, value_ends, counts, ok)`` with the values of list 0 first,
        then list 1, and so on (each list's values in order).
    """
    m = starts.shape[0]
    counts = np.zeros(m, np.int64)
    ok = np.ones(m, np.bool_)
    cur = starts.copy()
    owners: list[I64] = []
    vstarts: list[I64] = []
    vends: list[I64] = []
    active = np.flatnonzero(cur < ends)
    wb = _Buf(buf)
    step = 0
    while active.size:
        v_start, v_end, vok = _expect_len(wb, cur[active], ends[active], _TAG_LEN1)
        ok[active[~vok]] = False
        good = active[vok]
        owners.append(good)
        vstarts.append(v_start[vok])
        vends.append(v_end[vok])
        counts[good] += 1
        cur[good] = v_end[vok]
        active = good[cur[good] < ends[good]]
        step += 1
    if not owners:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), counts, ok
    owner = np.concatenate(owners)
    order = np.argsort(owner, kind="stable")
    return np.concatenate(vstarts)[order], np.concatenate(vends)[order], counts, ok
