"""Columns put together from several sources (:class:`~.batch.BatchDecoder`'s helpers).

A chunk's records may be decoded by several paths at once: template groups (records
sharing one layout), the walk, the exact per-record path for records off the canonical
layout. Each key's column is the values of all of them, in record order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from . import template
from .columns import Column, empty_values
from .wire import KIND_NONE

__all__ = ["dense_columns", "merge", "merge_groups"]

I64 = npt.NDArray[np.int64]
Columns = dict[str, Column]


class Delegate(Exception):
    """Internal: this batch must go to the exact path (it will raise there)."""


def merge_groups(
    buf: npt.NDArray[np.uint8],
    starts: I64,
    ends: I64,
    i: int,
    *,
    kind: int,
    width: int | None,
    groups: list[template.Group],
    rest: npt.NDArray[np.intp],
    walked: Columns | None,
    key: str,
    as_void: bool = False,
) -> Column:
    """Key ``i``'s column of a chunk from its template groups and its walked records.

    ``as_void``: bytes values of a chunk that one template takes whole may stay a
    ``V<size>`` array (no merge with other sources needs bytes objects, and every
    record holds the key, so no default is filled in beside them).
    """
    n = starts.shape[0]
    as_void = as_void and len(groups) == 1 and walked is None
    counts = np.zeros(n, np.int64)
    present = np.zeros(n, np.bool_)
    # (positions, values in record order, values per record)
    parts: list[tuple[npt.NDArray[np.intp], npt.NDArray[Any], I64]] = []
    for group in groups:
        pos = group.pos
        layout = group.template.fields[i]
        if layout.kind == KIND_NONE:
            continue
        present[pos] = True
        if layout.variable:
            assert group.var_values is not None
            assert group.var_counts is not None
            counts[pos] = group.var_counts
            parts.append((pos, group.var_values, group.var_counts))
        elif layout.count:
            counts[pos] = layout.count
            vals: npt.NDArray[Any]
            if width is None:
                vals = template.template_values(
                    buf, starts[pos], ends[pos], layout, as_void=as_void
                ).reshape(-1)
            else:
                rows = template.template_rows(buf, starts[pos], ends[pos], layout, width)
                if rows is None:
                    raise Delegate  # raw values of the wrong size: the exact path raises
                vals = rows.reshape(rows.shape[0] * rows.shape[1], width)
            parts.append((pos, vals, counts[pos]))
    if walked is not None:
        col = walked[key]
        counts[rest] = col.counts
        present[rest] = col.present
        if col.values.size:
            parts.append((rest, col.values, col.counts))
    if len(parts) == 1 and parts[0][0].shape[0] == n and (walked is None or rest.size == n):
        return Column(parts[0][1], counts, present)  # one source, in record order
    offsets = np.cumsum(counts) - counts
    total = int(counts.sum())
    if width is None:
        values = np.empty(total, dtype=empty_values(kind).dtype)
    else:
        values = np.empty((total, width), np.uint8)
    for pos, vals, cnt in parts:
        first = np.cumsum(cnt) - cnt
        values[np.repeat(offsets[pos] - first, cnt) + np.arange(vals.shape[0])] = vals
    return Column(values, counts, present)


def dense_columns(out: dict[str, npt.NDArray[Any]]) -> Columns:
    """Columns of the compiled plan's outputs (every record holds each feature's values)."""
    columns: Columns = {}
    shared: dict[int, tuple[I64, npt.NDArray[np.bool_]]] = {}
    for key, values in out.items():
        n = values.shape[0]
        count = values.size // n if n else 0
        if count not in shared:
            shared[count] = (np.full(n, count, np.int64), np.ones(n, np.bool_))
        counts, present = shared[count]
        columns[key] = Column(values.reshape(-1), counts, present)
    return columns


def merge(
    fast: npt.NDArray[Any],
    fast_recs: I64,
    fast_counts: I64,
    *,
    slow: tuple[npt.NDArray[Any], npt.NDArray[np.intp], I64],
) -> npt.NDArray[Any]:
    """Interleaves two sets of per-record value runs (values, records, counts) in order."""
    slow_values, slow_recs, slow_counts = slow
    owner = np.concatenate(
        [np.repeat(fast_recs, fast_counts), np.repeat(slow_recs.astype(np.int64), slow_counts)]
    )
    if object in (fast.dtype, slow_values.dtype):
        both = np.concatenate([fast.astype(object), slow_values.astype(object)])
    else:
        both = np.concatenate([fast, slow_values.astype(fast.dtype)])
    return both[np.argsort(owner, kind="stable")]
