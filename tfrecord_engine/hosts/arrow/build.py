"""Arrow arrays from a column's plan and its walked values, and from numpy outputs.

:func:`build` checks each record's value count against the plan (exactly the fixed
width, or whole rows of it), fills what a missing record gives (a null, the default,
an empty list), converts the values to the leaf type (checked, never silently cut:
:mod:`.leaf`) and wraps them in the list levels. Numbers become Arrow arrays without a
copy where the type is the decoded one; bytes are gathered once (:mod:`.spans`).

:func:`numpy_column` converts what the numpy batch decoder returns for the specs it
alone decodes (``SparseFeature``, ``RawFeature``, partitioned ``RaggedFeature``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...example.values import RaggedValue, SparseValue
from .leaf import LeafError, read_leaf
from .plan import ColumnPlan
from .spans import Spans, binary_from_objects, validity
from .walk import KeyValues

__all__ = ["Violation", "build", "numpy_column"]

I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]


class Violation(Exception):
    """Internal: record ``record`` (its position in the batch) breaks the plan.

    The reader raises TensorFlow's own error for a ``tfe`` spec (by parsing the batch
    with the exact path) or an error naming the column, file and record otherwise.
    """

    def __init__(self, column: str, record: int, reason: str) -> None:
        super().__init__(column, record, reason)
        self.column = column
        self.record = record
        self.reason = reason


def _fixed_types(storage: Any, plan: ColumnPlan) -> list[Any]:
    """The fixed-size list types, outermost first, under the optional list level."""
    t = storage.value_type if plan.variable else storage
    out = []
    while pa.types.is_fixed_size_list(t):
        out.append(t)
        t = t.value_type
        if isinstance(t, pa.BaseExtensionType):
            t = t.storage_type
    return out


def _wrap(leaf: Any, types: list[Any], n: int, nulls: Bool | None = None) -> Any:
    """``leaf`` under the fixed-size list levels ``types`` (outermost first) for ``n``
    rows; ``nulls`` marks null rows. Built from buffers: a level of size 0 holds no
    value to divide the rows by."""
    sizes = [n]
    for t in types[:-1]:
        sizes.append(sizes[-1] * t.list_size)
    child = leaf
    for i in reversed(range(len(types))):
        outer = i == 0 and nulls is not None
        bitmap = validity(~nulls) if outer and nulls is not None else None
        child = pa.Array.from_buffers(
            types[i],
            sizes[i],
            [bitmap],
            null_count=int(nulls.sum()) if outer and nulls is not None else 0,
            children=[child],
        )
    return child


def _leaf(
    plan: ColumnPlan, values: npt.NDArray[Any] | Spans, counts: I64, valid: Any = None
) -> Any:
    """The leaf array; a value that does not fit names its record (``counts``: values
    per record, to find it)."""
    try:
        return read_leaf(values, plan.leaf, valid)
    except LeafError as exc:
        record = int(np.searchsorted(np.cumsum(counts), exc.position, side="right"))
        raise Violation(plan.name, record, exc.reason) from None


def _storage(plan: ColumnPlan) -> Any:
    t = plan.arrow_type
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


def _finish(plan: ColumnPlan, storage_array: Any) -> Any:
    t = plan.arrow_type
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, storage_array)
    return storage_array


def build(plan: ColumnPlan, kv: KeyValues) -> Any:
    """The Arrow array of ``plan`` over the walked values ``kv`` of a batch.

    Raises:
        Violation: a record's values do not fit the plan, or it misses a required feature.
    """
    if plan.variable:
        return _finish(plan, _variable(plan, kv))
    return _finish(plan, _fixed(plan, kv))


def _missing(plan: ColumnPlan, present: Bool) -> Bool | None:
    """The mask of null records (``None``: none), after checking required ones."""
    absent = ~present
    if not absent.any() or plan.missing in ("empty", "default"):
        return None
    if plan.missing == "error":
        raise Violation(plan.name, int(np.argmax(absent)), "is missing and the column requires it")
    return absent


def _variable(plan: ColumnPlan, kv: KeyValues) -> Any:
    width = plan.width
    counts = kv.counts
    bad = counts % width != 0 if width else counts != 0
    if bad.any():
        i = int(np.argmax(bad))
        raise Violation(plan.name, i, f"holds {int(counts[i])} values: not whole rows of {width}")
    nulls = _missing(plan, kv.present)
    storage = _storage(plan)
    leaf = _leaf(plan, kv.values, counts)
    child = _wrap(leaf, _fixed_types(storage, plan), int(counts.sum()) // width if width else 0)
    rows = counts // width if width else np.zeros_like(counts)
    large = pa.types.is_large_list(storage)
    offsets = np.zeros(rows.shape[0] + 1, np.int64)
    np.cumsum(rows, out=offsets[1:])
    cls = pa.LargeListArray if large else pa.ListArray
    mask = None if nulls is None else pa.array(nulls)
    return cls.from_arrays(
        pa.array(offsets if large else offsets.astype(np.int32)), child, type=storage, mask=mask
    )


def _fixed(plan: ColumnPlan, kv: KeyValues) -> Any:
    width = plan.width
    counts, present = kv.counts, kv.present
    bad = present & (counts != width)
    if bad.any():
        i = int(np.argmax(bad))
        raise Violation(
            plan.name, i, f"holds {int(counts[i])} values, the column takes {width} per record"
        )
    nulls = _missing(plan, present)
    values = kv.values
    n = counts.shape[0]
    if not present.all():
        values = _fill(plan, values, present, n)
    storage = _storage(plan)
    types = _fixed_types(storage, plan)
    records = np.full(n, width, np.int64)  # values per record
    if not types:
        valid = None if nulls is None else ~nulls
        return _leaf(plan, values, records, valid)
    if nulls is None:
        return _wrap(_leaf(plan, values, records), types, n)
    # The values under a null row are null too (as pyarrow builds them).
    leaf = _leaf(plan, values, records, np.repeat(~nulls, width))
    return _wrap(leaf, types, n, nulls)


def _fill(
    plan: ColumnPlan, values: npt.NDArray[Any] | Spans, present: Bool, n: int
) -> npt.NDArray[Any] | Spans:
    """``n * width`` values: the records' own, and for the missing ones the default (or
    zeros / empty values under a null)."""
    width = plan.width
    default = plan.default if plan.missing == "default" else None
    if isinstance(values, Spans):
        starts = np.zeros((n, width), np.int64)
        ends = np.zeros((n, width), np.int64)
        buf = values.buf
        if default is not None:
            walked, extra = values.extended(list(default))
            buf = walked.buf
            starts[~present] = extra.starts
            ends[~present] = extra.ends
        starts[present] = values.starts.reshape(-1, width)
        ends[present] = values.ends.reshape(-1, width)
        return Spans(buf, starts.reshape(-1), ends.reshape(-1))
    full = np.zeros((n, width), values.dtype)
    if default is not None:
        full[~present] = np.asarray(default, values.dtype)
    full[present] = values.reshape(-1, width)
    return full.reshape(-1)


# ---- outputs of the numpy batch decoder -------------------------------------------------


def _flat(values: npt.NDArray[Any]) -> Any:
    """A 1-D array as an Arrow array; more dimensions as nested fixed-size lists."""
    flat = values.reshape(-1)
    leaf = binary_from_objects(flat) if values.dtype == object else pa.array(flat)
    types: list[Any] = []
    t = leaf.type
    for d in reversed(values.shape[1:]):
        t = pa.list_(t, int(d))
        types.insert(0, t)
    return _wrap(leaf, types, int(values.shape[0])) if types else leaf


def _lists(splits: npt.NDArray[Any], values: Any) -> Any:
    if splits.dtype == np.int64:
        return pa.LargeListArray.from_arrays(pa.array(splits), values)
    return pa.ListArray.from_arrays(pa.array(splits.astype(np.int32)), values)


def _ragged(value: RaggedValue) -> Any:
    inner = value.values
    values = _ragged(inner) if isinstance(inner, RaggedValue) else _flat(np.asarray(inner))
    return _lists(np.asarray(value.row_splits), values)


def numpy_column(value: Any, n: int) -> Any:
    """The Arrow column of one output of the numpy batch decoder for ``n`` records.

    Dense arrays become plain columns or nested fixed-size lists; a
    :class:`~tfrecord_engine.RaggedValue` lists per ragged dimension (``large_list``
    for int64 row splits); a :class:`~tfrecord_engine.SparseValue` a struct of per-record
    ``indices`` (positions in the record's dense shape) and ``values`` lists.
    """
    if isinstance(value, RaggedValue):
        return _ragged(value)
    if isinstance(value, SparseValue):
        rows = value.indices[:, 0] if len(value.indices) else np.zeros(0, np.int64)
        splits = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=splits[1:])
        splits32 = splits.astype(np.int32)
        where = np.ascontiguousarray(value.indices[:, 1:]).astype(np.int64)
        positions = _lists(splits32, _flat(where))
        values = _lists(splits32, _flat(np.asarray(value.values)))
        return pa.StructArray.from_arrays([positions, values], ["indices", "values"])
    return _flat(np.asarray(value))
