"""Arrow record batches encoded into serialized Examples, column by column with numpy.

The bytes are those of :func:`tfrecord_engine.encode_example` for each row (entries in
column order, packed numeric lists, an empty list kept as a typed empty list), which
are TensorFlow's bytes for the same message. A null is a missing feature.

How: every record is the concatenation of runs: its header ``0x0A len``, then per
feature present in the row a prefix (entry, key, Feature and list headers) and the
list's payload. Headers and payloads are built for whole columns at once (varints
written for all rows in ten numpy passes at most) into one pool buffer; one gather of
the runs, in record order, then lays the records out back to back. Python work is per
column and per batch, never per row or value::

    record  = 0A len(features) features
    feature = 0A len(entry) [0A len(key) key 12 len(f) f]          one per present column
    f       = 1A|12|0A len(list) list
    list    = 0A len(packed) packed   (int64: varints; float: little-endian float32)
            | (0A len(v) v)*           (bytes)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...example.wire import KIND_BYTES, KIND_FLOAT, KIND_INT64
from .flatten import Flat
from .spans import Spans, gather

__all__ = ["encode_columns", "put_varints", "varint_sizes"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

_TAG = {KIND_BYTES: 0x0A, KIND_FLOAT: 0x12, KIND_INT64: 0x1A}


def varint_sizes(values: npt.NDArray[Any]) -> I64:
    """Bytes of each value's varint (int64 as two's complement: negatives take 10)."""
    u = values.astype(np.int64, copy=False).view(np.uint64)
    sizes = np.ones(u.shape[0], np.int64)
    for k in range(1, 10):
        more = u >= np.uint64(1 << (7 * k))
        if not more.any():
            break
        sizes += more
    return sizes


def put_varints(out: U8, pos: I64, values: npt.NDArray[Any], sizes: I64) -> None:
    """Writes each value's varint at ``out[pos[j]:pos[j] + sizes[j]]``."""
    u = values.astype(np.int64, copy=False).view(np.uint64)
    live = np.arange(u.shape[0])
    for k in range(10):
        if k:
            live = live[sizes[live] > k]
        if not live.size:
            return
        chunk = (u[live] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (sizes[live] > k + 1).astype(np.uint64) << np.uint64(7)
        out[pos[live] + k] = (chunk | more).astype(np.uint8)


@dataclass
class _Pool:
    """The pool buffer: pieces appended, each addressed by its start."""

    parts: list[U8]
    size: int = 0

    def add(self, piece: U8) -> int:
        at = self.size
        self.parts.append(piece)
        self.size += int(piece.shape[0])
        return at


def _packed_ints(values: npt.NDArray[Any], counts: I64) -> tuple[U8, I64]:
    """All values' varints back to back, and each row's packed size."""
    sizes = varint_sizes(values)
    ends = np.cumsum(sizes)
    out = np.empty(int(ends[-1]) if ends.size else 0, np.uint8)
    put_varints(out, ends - sizes, values, sizes)
    row_bytes = np.add.reduceat(sizes, _row_starts(counts)) if sizes.size else sizes
    return out, _per_row(row_bytes, counts)


def _row_starts(counts: I64) -> I64:
    nz = counts[counts > 0]
    return (np.cumsum(nz) - nz).astype(np.int64)


def _per_row(sums: I64, counts: I64) -> I64:
    """Per-row sums given for the rows with values only, spread to every row."""
    out = np.zeros(counts.shape[0], np.int64)
    out[counts > 0] = sums
    return out


def _bytes_payload(values: Spans, counts: I64) -> tuple[U8, I64]:
    """Each row's BytesList payload ``(0A len v)*`` back to back, and each row's size."""
    lengths = values.lengths
    hsizes = 1 + varint_sizes(lengths)
    m = lengths.shape[0]
    if m == 0:
        return np.zeros(0, np.uint8), np.zeros(counts.shape[0], np.int64)
    # Value headers in one small buffer, then runs [header_j, value_j] gathered in order
    # from a pool of the headers and the values' buffer.
    hends = np.cumsum(hsizes)
    headers = np.empty(int(hends[-1]), np.uint8)
    hstarts = hends - hsizes
    headers[hstarts] = 0x0A
    put_varints(headers, hstarts + 1, lengths, hsizes - 1)
    # Only the part of the values' buffer they span (a batch cut from a table shares
    # the whole table's buffer).
    lo, hi = int(values.starts.min()), int(values.ends.max())
    base = headers.shape[0] - lo
    pool = np.concatenate([headers, values.buf[lo:hi]])
    starts = np.empty(2 * m, np.int64)
    ends = np.empty(2 * m, np.int64)
    starts[0::2], ends[0::2] = hstarts, hends
    starts[1::2], ends[1::2] = values.starts + base, values.ends + base
    payload = gather(pool, starts, ends)
    row_bytes = np.add.reduceat(hsizes + lengths, _row_starts(counts))
    return payload, _per_row(row_bytes, counts)


def _payload(flat: Flat) -> tuple[U8, I64, I64]:
    """``(payload bytes, per-row list bytes, per-row packed bytes)`` of a column."""
    counts = flat.counts
    if flat.kind == KIND_BYTES:
        assert isinstance(flat.values, Spans)
        payload, list_bytes = _bytes_payload(flat.values, counts)
        return payload, list_bytes, np.zeros_like(list_bytes)
    assert not isinstance(flat.values, Spans)
    if flat.kind == KIND_FLOAT:
        raw = np.ascontiguousarray(flat.values, dtype="<f4").view(np.uint8)
        packed = counts * 4
    else:
        raw, packed = _packed_ints(flat.values, counts)
    # A non-empty list: 0A len(packed) packed; an empty one: nothing.
    list_bytes = np.where(counts > 0, 1 + varint_sizes(packed) + packed, 0)
    return raw, list_bytes, packed


def _prefixes(
    key: bytes, flat: Flat, list_bytes: I64, packed: I64, rows: npt.NDArray[np.intp]
) -> tuple[U8, I64, I64]:
    """The prefix bytes of the present ``rows``: ``0A len(entry) 0A len(key) key 12 len(f)
    tag len(list) [0A len(packed)]``; returns them, each one's size, and each row's
    whole entry size (``0A len(entry) entry``)."""
    lb = list_bytes[rows]
    pk = packed[rows]
    numeric = (flat.kind != KIND_BYTES) & (flat.counts[rows] > 0)
    f_len = 1 + varint_sizes(lb) + lb
    key_part = 1 + len(_varint(len(key))) + len(key)  # 0A len(key) key
    f_size = varint_sizes(f_len)
    e_len = key_part + 1 + f_size + f_len
    e_size = varint_sizes(e_len)
    l_size = varint_sizes(lb)
    p_size = np.where(numeric, 1 + varint_sizes(pk), 0)
    sizes = 1 + e_size + key_part + 1 + f_size + 1 + l_size + p_size
    ends = np.cumsum(sizes)
    starts = ends - sizes
    out = np.zeros(int(ends[-1]) if ends.size else 0, np.uint8)
    out[starts] = 0x0A
    put_varints(out, starts + 1, e_len, e_size)
    at = starts + 1 + e_size
    head = np.frombuffer(b"\x0a" + _varint(len(key)) + key + b"\x12", np.uint8)
    out[at[:, None] + np.arange(head.shape[0])] = head
    at = at + head.shape[0]
    put_varints(out, at, f_len, f_size)
    at = at + f_size
    out[at] = _TAG[flat.kind]
    put_varints(out, at + 1, lb, l_size)
    at = at + 1 + l_size
    if numeric.any():
        which = np.flatnonzero(numeric)
        out[at[which]] = 0x0A
        put_varints(out, at[which] + 1, pk[which], p_size[which] - 1)
    return out, sizes, 1 + e_size + e_len


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_columns(names: Sequence[str], flats: Sequence[Flat], n: int) -> tuple[U8, I64, I64]:
    """The serialized Examples of ``n`` rows: ``(buf, starts, ends)``, record ``i`` at
    ``buf[starts[i]:ends[i]]`` (half-open), entries in column order."""
    pool = _Pool([])
    # Per column: where its prefixes and payloads are in the pool, per row.
    runs: list[tuple[I64, I64, I64, I64, npt.NDArray[np.bool_]]] = []
    features = np.zeros(n, np.int64)
    for name, flat in zip(names, flats, strict=True):
        payload, list_bytes, packed = _payload(flat)
        rows = np.flatnonzero(flat.present)
        prefixes, p_sizes, entry = _prefixes(name.encode("utf-8"), flat, list_bytes, packed, rows)
        features[rows] += entry
        p_at = pool.add(prefixes)
        v_at = pool.add(payload)
        p_start = np.zeros(n, np.int64)
        p_len = np.zeros(n, np.int64)
        p_start[rows] = p_at + np.cumsum(p_sizes) - p_sizes
        p_len[rows] = p_sizes
        # The payload run: the packed values (their list header is in the prefix), or
        # the whole BytesList.
        v_len = list_bytes if flat.kind == KIND_BYTES else packed
        v_start = v_at + np.cumsum(v_len) - v_len
        runs.append((p_start, p_len, v_start, v_len, flat.present))
    # Record headers: 0A len(features).
    h_sizes = 1 + varint_sizes(features)
    h_ends = np.cumsum(h_sizes)
    headers = np.empty(int(h_ends[-1]) if n else 0, np.uint8)
    h_starts = h_ends - h_sizes
    headers[h_starts] = 0x0A
    put_varints(headers, h_starts + 1, features, h_sizes - 1)
    h_at = pool.add(headers)
    buf = np.concatenate(pool.parts) if pool.parts else np.zeros(0, np.uint8)
    # Runs in record order: header, then (prefix, payload) per column; absent columns
    # give empty runs, which the gather skips.
    k = 1 + 2 * len(runs)
    starts = np.zeros((n, k), np.int64)
    ends = np.zeros((n, k), np.int64)
    starts[:, 0] = h_at + h_starts
    ends[:, 0] = h_at + h_ends
    for j, (p_start, p_len, v_start, v_len, _) in enumerate(runs):
        starts[:, 1 + 2 * j] = p_start
        ends[:, 1 + 2 * j] = p_start + p_len
        starts[:, 2 + 2 * j] = v_start
        ends[:, 2 + 2 * j] = v_start + v_len
    out = gather(buf, starts.reshape(-1), ends.reshape(-1))
    sizes = h_sizes + features
    rec_ends = np.cumsum(sizes)
    return out, rec_ends - sizes, rec_ends
