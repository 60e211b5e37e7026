"""The walk tier of :class:`~.batch.BatchDecoder`: a chunk's columns from a walk of it.

Records that no template took are walked, by the compiled walk
(:func:`~tfrecord_engine.kernels.examples.walk_examples`, then :func:`walked_lists`)
or, without the kernels, by the lockstep walk in numpy passes (:func:`lockstep_lists`).
Either gives each key's values in record order and the records the walk could not
place (not in the canonical layout); :func:`merged_columns` decodes those by the exact
per-record path and merges their values in place. A type mismatch, or an error in a
record, raises :class:`~.merging.Delegate`: the batch goes to the exact path, which
raises TensorFlow's error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..kernels import examples as kernel_examples
from . import lists, lockstep, merging, raw
from .columns import Column, empty_values, from_rows
from .records import Request, decode_requests
from .wire import KIND_FLOAT, KIND_INT64, KIND_NONE, Duplicates, example_feature_map

__all__ = [
    "Decoded",
    "Fusion",
    "decode_lists",
    "exact_rows",
    "fused_layout",
    "lockstep_lists",
    "merged_columns",
    "walked_lists",
]

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
#: One key's values from a walk: (records holding it, their values in record order, counts).
Decoded = tuple[I64, npt.NDArray[Any], I64]
#: The spec's keys in the order :func:`walked_lists` decodes them, and the groups of
#: positions in that order decoded by one call (:func:`fused_layout`).
Fusion = tuple[list[int], list[list[int]]]


def fused_layout(kinds: Sequence[int], widths: Sequence[int | None]) -> Fusion:
    """The spec's keys grouped by kind for :func:`walked_lists` (RawFeature keys alone:
    each has its own row size)."""

    def group(i: int) -> tuple[int, int, int]:
        width = widths[i]
        return (kinds[i], -1 if width is None else i, i)

    order = sorted(range(len(kinds)), key=group)
    groups: list[list[int]] = []
    last: tuple[int, int] | None = None
    for pos, i in enumerate(order):
        tag = group(i)[:2]
        if tag != last:
            groups.append([])
            last = tag
        groups[-1].append(pos)
    return order, groups


def walked_lists(
    buf: npt.NDArray[np.uint8],
    walk: kernel_examples.ExampleWalk,
    kinds: Sequence[int],
    widths: Sequence[int | None],
    fusion: Fusion,
) -> tuple[Bools, list[Decoded]]:
    """Each key's values from the compiled walk (one pass per record, records in order
    whatever their key order), and the records to decode by the exact path."""
    fallback = walk.bad.copy()
    good = ~walk.bad
    expected = np.asarray(kinds, np.int64)
    found = walk.kind
    if np.any((found != KIND_NONE) & (found != expected) & good[:, None]):
        raise merging.Delegate  # a type mismatch: the exact path raises TF's error
    # Every key's lists at once, keys of one kind (and not RawFeature) decoded by one
    # call over all their spans: a spec of many features (wide records) pays the
    # per-call set-up once per kind, not once per feature.
    order, groups = fusion
    match = (found == expected) & good[:, None]
    key_of, recs = np.nonzero(match.T[order])  # by (permuted) key, then record
    keys = np.asarray(order, np.int64)[key_of]
    ps = walk.start[recs, keys]
    pe = walk.end[recs, keys]
    at = np.searchsorted(key_of, np.arange(len(order) + 1))
    decoded: list[Decoded | None] = [None] * len(order)
    for group in groups:
        a, b = int(at[group[0]]), int(at[group[-1] + 1])
        first = order[group[0]]
        width = widths[first]
        values, counts, ok = lists.decode_spans(buf, kinds[first], ps[a:b], pe[a:b], width)
        if not ok.all():
            fallback[recs[a:b][~ok]] = True
        ends = np.cumsum(counts)
        for g in group:
            i, j = int(at[g]) - a, int(at[g + 1]) - a
            lo = int(ends[i - 1]) if i else 0
            hi = int(ends[j - 1]) if j else 0
            decoded[order[g]] = (recs[a + i : a + j], values[lo:hi], counts[i:j])
    return fallback, [d for d in decoded if d is not None]


def lockstep_lists(
    buf: npt.NDArray[np.uint8],
    starts: I64,
    ends: I64,
    keys: list[bytes],
    *,
    order: Sequence[Request],
    widths: Sequence[int | None],
) -> tuple[Bools, list[Decoded]]:
    """Each key's values by the lockstep walk (numpy passes, without the kernels)."""
    table = lockstep.walk_examples(buf, starts, ends, keys)
    fallback = table.fallback.copy()
    spans: list[tuple[I64, I64, I64]] = []
    for i, req in enumerate(order):
        sel = np.flatnonzero(table.key_id == i)
        kind = table.kind[sel]
        if np.any((kind != KIND_NONE) & (kind != req.kind) & ~fallback[table.record[sel]]):
            raise merging.Delegate  # a type mismatch: the exact path raises TF's error
        sel = sel[kind == req.kind]
        # The table lists entries by position within their record, so records
        # whose keys come in different orders interleave: values must be in record
        # order (a record holds at most one entry per key; duplicates fall back).
        in_order = table.record[sel]
        if in_order.size > 1 and bool(np.any(in_order[1:] < in_order[:-1])):
            sel = sel[np.argsort(in_order, kind="stable")]
        recs = table.record[sel]
        spans.append((recs, table.list_start[sel], table.list_end[sel]))
    decoded: list[Decoded] = []
    for req, width, (recs, ls, le) in zip(order, widths, spans, strict=True):
        values, counts, ok = decode_lists(buf, req.kind, ls, le, width)
        fallback[recs[~ok]] = True
        decoded.append((recs, values, counts))
    return fallback, decoded


def merged_columns(
    buf: npt.NDArray[np.uint8],
    starts: I64,
    ends: I64,
    fallback: Bools,
    decoded: list[Decoded],
    *,
    order: Sequence[Request],
    widths: Sequence[int | None],
    requests: Mapping[str, Request],
) -> tuple[dict[str, Column], npt.NDArray[np.intp]]:
    """The columns of walked records: the fast values, the fallback records' merged in;
    and the positions of the fallback records."""
    n = int(starts.shape[0])
    fb = np.flatnonzero(fallback)
    rows = exact_rows(buf, starts, ends, fb, requests) if fb.size else []
    out: dict[str, Column] = {}
    for req, width, (fast_recs, fast_values, fast_counts) in zip(
        order, widths, decoded, strict=True
    ):
        keep = ~fallback[fast_recs]
        recs, values, counts = fast_recs, fast_values, fast_counts
        if not keep.all():
            values = values[np.repeat(keep, counts)]
            recs, counts = recs[keep], counts[keep]
        col_counts = np.zeros(n, np.int64)
        present = np.zeros(n, np.bool_)
        col_counts[recs] = counts
        present[recs] = True
        if fb.size:
            fcol = from_rows(rows, req.key, req.kind)
            col_counts[fb] = fcol.counts
            present[fb] = fcol.present
            slow_values = fcol.values
            if width is not None:
                slow_rows = raw.as_rows(slow_values, width)
                if slow_rows is None:
                    raise merging.Delegate  # a raw value of the wrong size: the exact path raises
                slow_values = slow_rows
            values = merging.merge(values, recs, counts, slow=(slow_values, fb, fcol.counts))
        out[req.key] = Column(values, col_counts, present)
    return out, fb


def decode_lists(
    buf: npt.NDArray[np.uint8], kind: int, ls: I64, le: I64, width: int | None
) -> tuple[npt.NDArray[Any], I64, Bools]:
    """The values of the lists at ``buf[ls[j]:le[j]]`` of one kind (uint8 rows of
    ``width`` bytes for a RawFeature), their counts, and whether each list decoded."""
    if ls.size == 0:
        empty = empty_values(kind) if width is None else raw.empty_rows(width)
        return empty, np.zeros(0, np.int64), np.ones(0, np.bool_)
    if kind == KIND_INT64:
        values, counts, ok = lockstep.packed_varints(buf, ls, le)
        return values, counts, ok
    if kind == KIND_FLOAT:
        fvalues, counts, ok = lockstep.packed_floats(buf, ls, le)
        return fvalues, counts, ok
    if width is not None:
        return lists.raw_rows(buf, lockstep.bytes_values(buf, ls, le), width)
    vs, ve, counts, ok = lockstep.bytes_values(buf, ls, le)
    return lists.bytes_objects(buf, vs, ve), counts, ok


def exact_rows(
    buf: npt.NDArray[np.uint8],
    starts: I64,
    ends: I64,
    which: npt.NDArray[np.intp],
    requests: Mapping[str, Request],
) -> list[dict[str, Any]]:
    """The requested values of records ``which``, by the exact per-record decoder."""
    rows = []
    mv = buf.data
    for i in which.tolist():
        data = mv[int(starts[i]) : int(ends[i])].tobytes()
        dups = Duplicates()
        try:
            fmap = example_feature_map(data, dups)
            rows.append(decode_requests(data, fmap, dups, requests, i))
        except ValueError as exc:
            raise merging.Delegate from exc
    return rows
