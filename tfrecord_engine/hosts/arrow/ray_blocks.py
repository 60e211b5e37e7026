"""Parsed TFRecord batches as Arrow tables, the blocks of Ray Data.

A scalar feature becomes a plain column; a numeric fixed shape one of Ray's tensor
columns (numpy batches give back one ``[n, *shape]`` array); a string fixed shape nested
fixed-size lists; ``VarLenFeature`` and ``RaggedFeature`` lists per record;
``SparseFeature`` a struct of per-record ``indices`` and ``values`` lists.

Ray's tensor column type is imported when a table needs one: the rest needs only pyarrow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import MissingDependencyError, install_hint
from ...example.batch import parse_example
from ...example.specs import VarLenFeature
from ...example.values import RaggedValue, SparseValue
from .spans import binary_from_objects

__all__ = ["records_to_table"]


def _tensor_array(array: npt.NDArray[Any]) -> Any:
    try:
        from ray.data.extensions import ArrowTensorArray  # noqa: PLC0415 - Ray is optional
    except ImportError:
        raise MissingDependencyError(
            f"Ray's tensor columns need Ray Data: {install_hint('ray')}"
        ) from None
    return ArrowTensorArray.from_numpy(array)


def _offsets(splits: npt.NDArray[Any]) -> Any:
    splits = np.asarray(splits, dtype=np.int64)
    if len(splits) and int(splits[-1]) >= 2**31:
        return pa.array(splits, pa.int64()), True
    return pa.array(splits.astype(np.int32), pa.int32()), False


def _lists(splits: npt.NDArray[Any], values: Any) -> Any:
    offsets, large = _offsets(splits)
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(offsets, values)


def _flat(values: npt.NDArray[Any]) -> Any:
    """A 1-D array as an Arrow array; more dimensions as fixed-size lists."""
    if values.ndim > 1:
        inner = _flat(values.reshape(-1, *values.shape[2:]))
        return pa.FixedSizeListArray.from_arrays(inner, int(values.shape[1]))
    if values.dtype == object:
        return binary_from_objects(values)  # offsets and one data buffer
    return pa.array(values)


def _ragged(value: RaggedValue) -> Any:
    inner = value.values
    values = _ragged(inner) if isinstance(inner, RaggedValue) else _flat(inner)
    return _lists(value.row_splits, values)


def _sparse(value: SparseValue, n: int, spec: Any) -> Any:
    """Per record, its values (``VarLenFeature``), or ``{"indices", "values"}`` lists
    (``SparseFeature``: the positions of the values in each record's dense shape)."""
    rows = value.indices[:, 0] if len(value.indices) else np.zeros(0, np.int64)
    splits = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
    values = _lists(splits, _flat(value.values))
    if isinstance(spec, VarLenFeature):
        return values
    where = np.ascontiguousarray(value.indices[:, 1:])
    positions = _lists(splits, _flat(where.astype(np.int64)))
    return pa.StructArray.from_arrays([positions, values], ["indices", "values"])


def _column(value: Any, n: int, spec: Any) -> Any:
    if isinstance(value, SparseValue):
        return _sparse(value, n, spec)
    if isinstance(value, RaggedValue):
        return _ragged(value)
    array = np.asarray(value)
    if array.ndim > 1 and array.dtype != object:
        # Ray's tensor column: numpy batches give back one [n, *shape] array.
        return _tensor_array(np.ascontiguousarray(array))
    return _flat(array)


def records_to_table(records: list[bytes], features: Mapping[str, Any] | None) -> pa.Table:
    """One block: a ``record`` column of bytes, or one column per parsed feature.

    Parsed columns: a scalar feature is a plain column; a fixed shape is one of Ray's
    tensor columns (numeric) or fixed-size lists (strings); ``VarLenFeature`` and
    ``RaggedFeature`` are lists per record; ``SparseFeature`` is a struct of per-record
    ``indices`` and ``values`` lists. An empty ``features`` gives a table of no column
    with one row per record.
    """
    if features is None:
        return pa.table({"record": pa.array(records, pa.binary())})
    if not features:
        # No column asked for (a projection to none): the rows still count.
        return pa.table({"_": pa.nulls(len(records))}).select([])
    parsed = parse_example(records, features)
    n = len(records)
    return pa.table({k: _column(parsed[k], n, features[k]) for k in features})
