"""The values of the requested keys of a batch of Examples, decoded per key in lockstep.

The same walk as the batch decoder (:mod:`tfrecord_engine.example.lockstep`): all
records advance together, one numpy pass per map entry, then each key's value lists
are decoded for the whole batch. What differs is the output: bytes values stay spans
of the buffer (:class:`~.spans.Spans`), so an Arrow column is made from them with one
gather, never through a ``bytes`` object per value.

Records the lockstep walk does not take (unpacked lists, duplicate keys, concatenated
Examples, anything malformed) are decoded one by one by the exact per-record decoder,
which raises TensorFlow's error for a malformed record or a type mismatch; their bytes
values are appended to a copy of the buffer so that every value is a span again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ...example import lockstep
from ...example.records import Request, decode_requests
from ...example.wire import KIND_FLOAT, KIND_INT64, KIND_NONE, Duplicates
from ...example.wire import example_feature_map as feature_map
from .spans import Spans

__all__ = ["KeyValues", "Role", "TypeMismatch", "requests_for", "walk_examples"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Bool = npt.NDArray[np.bool_]
Role = Literal["dense", "sparse", "ragged"]


@dataclass(frozen=True)
class KeyValues:
    """One key's values across a batch of ``n`` records.

    Attributes:
        kind: ``KIND_INT64``, ``KIND_FLOAT`` or ``KIND_BYTES``.
        values: every value in record order: int64 or float32 numbers, or bytes spans.
        counts: int64 ``[n]``, values per record (0 where missing).
        present: bool ``[n]``, whether the record holds the key (an empty Feature, with
            no list at all, counts as missing, as in TensorFlow).
    """

    kind: int
    values: npt.NDArray[Any] | Spans
    counts: I64
    present: Bool

    @property
    def offsets(self) -> I64:
        """``[n + 1]`` offsets of each record's values."""
        out = np.zeros(self.counts.shape[0] + 1, np.int64)
        np.cumsum(self.counts, out=out[1:])
        return out


class TypeMismatch(Exception):
    """Internal: a record holds a requested key with another kind of list.

    Attributes:
        key: the feature key.
        record: the record's position in the batch.
        found: the kind the record holds.
    """

    def __init__(self, key: str, record: int, found: int) -> None:
        super().__init__(key, record, found)
        self.key = key
        self.record = record
        self.found = found


def walk_examples(
    buf: U8, starts: I64, ends: I64, requests: Sequence[Request]
) -> dict[str, KeyValues]:
    """The values of every requested key of the Examples ``buf[starts[i]:ends[i]]``.

    Raises:
        TypeMismatch: a record holds a key with a kind other than the requested one.
        ExampleParseError / MalformedExampleError: a record the exact path decodes is
            malformed or mismatched (TensorFlow's message, with the record's position).
    """
    n = int(starts.shape[0])
    table = lockstep.walk_examples(buf, starts, ends, [r.raw_key for r in requests])
    fallback = table.fallback.copy()
    walked: list[tuple[I64, npt.NDArray[Any] | Spans, I64]] = []
    for i, req in enumerate(requests):
        sel = np.flatnonzero(table.key_id == i)
        kind = table.kind[sel]
        wrong = (kind != KIND_NONE) & (kind != req.kind) & ~fallback[table.record[sel]]
        if wrong.any():
            j = int(np.argmax(wrong))
            raise TypeMismatch(req.key, int(table.record[sel[j]]), int(kind[j]))
        sel = sel[kind == req.kind]
        # Entries come by position within their record: put them in record order.
        order = table.record[sel]
        if order.size > 1 and bool(np.any(order[1:] < order[:-1])):
            sel = sel[np.argsort(order, kind="stable")]
        recs = table.record[sel]
        values, counts, ok = _lists(buf, req.kind, table.list_start[sel], table.list_end[sel])
        fallback[recs[~ok]] = True
        walked.append((recs, values, counts))
    slow = np.flatnonzero(fallback)
    rows = _exact_rows(buf, starts, ends, slow, requests) if slow.size else []
    out: dict[str, KeyValues] = {}
    for req, (fast_recs, fast_values, fast_counts) in zip(requests, walked, strict=True):
        keep = ~fallback[fast_recs]
        recs, values, counts = fast_recs, fast_values, fast_counts
        if not keep.all():
            values = _take(values, np.repeat(keep, counts))
            recs, counts = recs[keep], counts[keep]
        col_counts = np.zeros(n, np.int64)
        present = np.zeros(n, np.bool_)
        col_counts[recs] = counts
        present[recs] = True
        if slow.size:
            values = _with_slow(
                values,
                recs,
                counts,
                rows=rows,
                req=req,
                slow=slow,
                col_counts=col_counts,
                present=present,
            )
        out[req.key] = KeyValues(req.kind, values, col_counts, present)
    return out


def _take(values: npt.NDArray[Any] | Spans, which: npt.NDArray[Any]) -> npt.NDArray[Any] | Spans:
    return values.take(which) if isinstance(values, Spans) else values[which]


def _lists(buf: U8, kind: int, ls: I64, le: I64) -> tuple[npt.NDArray[Any] | Spans, I64, Bool]:
    """Each list's values: numbers, or the spans of bytes values."""
    if kind == KIND_INT64:
        ints, counts, ok = lockstep.packed_varints(buf, ls, le)
        return ints, counts, ok
    if kind == KIND_FLOAT:
        floats, counts, ok = lockstep.packed_floats(buf, ls, le)
        return floats, counts, ok
    if ls.size == 0:
        return Spans(buf, ls, le), np.zeros(0, np.int64), np.ones(0, np.bool_)
    vs, ve, counts, ok = lockstep.bytes_values(buf, ls, le)
    return Spans(buf, vs, ve), counts, ok


def _exact_rows(
    buf: U8, starts: I64, ends: I64, which: npt.NDArray[np.intp], requests: Sequence[Request]
) -> list[dict[str, Any]]:
    """The requested values of records ``which``, by the exact per-record decoder."""
    plan = {r.key: r for r in requests}
    mv = buf.data
    rows = []
    for i in which.tolist():
        data = mv[int(starts[i]) : int(ends[i])].tobytes()
        dups = Duplicates()
        rows.append(decode_requests(data, feature_map(data, dups), dups, plan, i))
    return rows


def _with_slow(
    fast: npt.NDArray[Any] | Spans,
    fast_recs: I64,
    fast_counts: I64,
    *,
    rows: list[dict[str, Any]],
    req: Request,
    slow: npt.NDArray[np.intp],
    col_counts: I64,
    present: Bool,
) -> npt.NDArray[Any] | Spans:
    """Merges the exactly decoded records' values into the walked ones, in record order
    (fills ``col_counts`` and ``present`` of those records)."""
    parts = [row[req.key] for row in rows]
    counts = np.array([0 if p is None else len(p) for p in parts], np.int64)
    col_counts[slow] = counts
    present[slow] = [p is not None for p in parts]
    owner = np.concatenate([np.repeat(fast_recs, fast_counts), np.repeat(slow, counts)])
    order = np.argsort(owner, kind="stable")
    if isinstance(fast, Spans):
        flat: list[bytes] = [v for p in parts if p for v in p]
        walked, extra = fast.extended(flat)
        return Spans(
            walked.buf,
            np.concatenate([walked.starts, extra.starts])[order],
            np.concatenate([walked.ends, extra.ends])[order],
        )
    dtype = np.int64 if req.kind == KIND_INT64 else np.float32
    got = [np.asarray(p, dtype) for p in parts if p is not None and len(p)]
    slow_values = np.concatenate(got) if got else np.zeros(0, dtype)
    merged: npt.NDArray[Any] = np.concatenate([fast.astype(dtype), slow_values])[order]
    return merged


def requests_for(kinds: Mapping[str, tuple[int, Role]]) -> list[Request]:
    """Requests of ``{key: (kind, role)}`` (role: ``"dense"``, ``"sparse"``, ``"ragged"``:
    TensorFlow's wording of a type mismatch, and how an empty last duplicate counts)."""
    return [
        Request(key, key.encode("utf-8"), kind, role, counted=role != "dense")
        for key, (kind, role) in kinds.items()
    ]
