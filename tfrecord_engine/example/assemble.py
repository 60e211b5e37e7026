"""Turning per-key :class:`~.columns.Column` data into ``tf.io``-shaped numpy outputs.

Shared by the exact per-record decoder and the lockstep batch decoder, so both give
identical outputs and identical errors. Errors are checked feature by feature in spec
order and, within a feature, at the first offending record, as TensorFlow does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ExampleParseError
from ..kernels import examples as kernel_examples
from .columns import Column, object_array
from .image import ImageFeature, decode_images
from .ragged import batched_ragged, single_ragged
from .raw import assemble_raw
from .specs import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RawFeature,
    SparseFeature,
    UniformRowLength,
    VarLenFeature,
)
from .tensors import TensorFeature, decode_tensors
from .values import RaggedValue, SparseValue, filled
from .wire import KIND_BYTES, KIND_FLOAT, KIND_INT64

__all__ = ["assemble", "fixed", "ragged", "varlen", "varlen_values"]

ColumnOf = Callable[[str], Column]

#: How an ImageFeature's bytes are parsed before they are decoded.
_ENCODED = FixedLenFeature([], "string")
_KIND_OF = {"int64": KIND_INT64, "float32": KIND_FLOAT, "string": KIND_BYTES}
_TF_NAME = {KIND_INT64: "int64", KIND_FLOAT: "float", KIND_BYTES: "string"}
_COUNT_NAME = {"int64": "int64", "float32": "float", "string": "bytes"}
_LIST_NAME = {"int64": "int64_list", "float32": "float_list", "string": "bytes_list"}


def _np_dtype(dtype: str) -> Any:
    return {"int64": np.int64, "float32": np.float32}.get(dtype, object)


def error_prefix(key: str, index: int | None) -> str:
    """TensorFlow's message prefix: batch records carry a name and index."""
    if index is None:
        return f"Key: {key}.  "
    return f"Name: <unknown>, Key: {key}, Index: {index}.  "


def _shape_text(shape: Sequence[object]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _default_array(spec: FixedLenFeature) -> npt.NDArray[Any]:
    assert spec.default_value is not None
    if spec.dtype == "string":
        return object_array(list(spec.default_value))
    return np.asarray(spec.default_value, dtype=_np_dtype(spec.dtype))


def fixed(name: str, spec: FixedLenFeature, col: Column, single: bool) -> npt.NDArray[Any]:
    count = math.prod(spec.shape)
    n = col.counts.shape[0]
    # TensorFlow treats a default with no elements (shape with a 0) as no default.
    has_default = bool(spec.default_value)
    bad = (col.present & (col.counts != count)) | (~col.present & (not has_default))
    if bad.any():
        i = int(np.argmax(bad))
        index = None if single else i
        if not col.present[i]:
            where = "" if single else "Name: <unknown>, "
            raise ExampleParseError(
                f"{where}Feature: {name} (data type: {_TF_NAME[_KIND_OF[spec.dtype]]}) "
                "is required but could not be found.",
                key=name,
                index=index,
            )
        if single:
            message = (
                f"Can't parse serialized Example: Some {_LIST_NAME[spec.dtype]} slice "
                "was not parsed."
            )
        elif spec.dtype == "string" and col.counts[i] > count:
            # TensorFlow's batch parser copies bytes values into the output as it reads
            # them and fails as a parse error at the first one too many.
            message = (
                "Can't parse serialized Example. (Values size: "
                f"{int(col.counts[i])} but output shape: {_shape_text(spec.shape)})"
            )
        else:
            message = (
                f"Number of {_COUNT_NAME[spec.dtype]} values != expected.  Values size: "
                f"{int(col.counts[i])} but output shape: {_shape_text(spec.shape)}"
            )
        raise ExampleParseError(error_prefix(name, index) + message, key=name, index=index)
    dtype = _np_dtype(spec.dtype)
    if col.present.all():
        out = col.values if dtype is object else col.values.astype(dtype, copy=False)
        out = out.reshape(n, count)
    else:
        out = np.empty((n, count), dtype=dtype)
        out[col.present] = col.values.reshape(-1, count)
        out[~col.present] = _default_array(spec)
    return out.reshape(spec.shape if single else (n, *spec.shape))


def _sequence(
    name: str, spec: FixedLenSequenceFeature, col: Column, single: bool
) -> npt.NDArray[Any]:
    stride = math.prod(spec.shape)
    counts = col.counts
    n = counts.shape[0]
    bad = (counts % stride != 0) if stride else (counts != 0)
    if bad.any():
        i = int(np.argmax(bad))
        c = int(counts[i])
        if single:
            message = (
                f"Error while parsing feature with key {name}: number of elements should "
                f"be divisible by {stride}, found {c} instead"
            )
        else:
            message = error_prefix(name, i) + (
                f"Number of {_COUNT_NAME[spec.dtype]} values is not a multiple of stride "
                f"length. Saw {c} values but output shape is: "
                f"{_shape_text(['?', *spec.shape])}"
            )
        raise ExampleParseError(message, key=name, index=None if single else i)
    rows_per = counts // stride if stride else np.zeros(n, np.int64)
    max_rows = int(rows_per.max(initial=0))
    pad = spec.default_value
    if pad is None:
        pad = b"" if spec.dtype == "string" else 0
    width = max_rows * stride
    out = filled((n, width), pad, _np_dtype(spec.dtype))
    if col.values.size:
        starts = col.offsets[:-1]
        pos = np.arange(col.values.size, dtype=np.int64) - np.repeat(starts, counts)
        rec = np.repeat(np.arange(n, dtype=np.int64), counts)
        out.reshape(-1)[rec * width + pos] = col.values
    out = out.reshape((n, max_rows, *spec.shape))
    return out[0] if single else out


def varlen_values(col: Column, kind: int) -> npt.NDArray[Any]:
    """The values of a variable-length column of ``kind`` (strings as an object array)."""
    values = col.values
    if kind == KIND_BYTES and values.dtype != object:
        values = object_array(list(values))
    return values


def varlen(col: Column, kind: int, single: bool) -> SparseValue:
    counts = col.counts
    values = varlen_values(col, kind)
    if not single:
        n = counts.shape[0]
        dense_shape = np.array([n, int(counts.max(initial=0))], dtype=np.int64)
        indices = kernel_examples.sparse_indices(counts, values.shape[0])  # (compiled)
        if indices is not None:
            return SparseValue(indices, values, dense_shape)
    positions = np.arange(values.size, dtype=np.int64) - np.repeat(col.offsets[:-1], counts)
    if single:
        return SparseValue(positions.reshape(-1, 1), values, counts[:1].copy())
    batch = np.repeat(np.arange(n, dtype=np.int64), counts)
    return SparseValue(np.stack([batch, positions], axis=1), values, dense_shape)


def _sparse(name: str, spec: SparseFeature, column: ColumnOf, single: bool) -> SparseValue:
    # TensorFlow parses each key as a VarLen feature, then sparse_merge()s the whole batch.
    ids = [varlen(column(key), KIND_INT64, single) for key in spec.index_key]
    vals = varlen(column(spec.value_key), _KIND_OF[spec.dtype], single)
    counts = [len(s.values) for s in ids]
    for c in counts[1:]:
        if c != counts[0]:
            raise ExampleParseError(
                f"SparseFeature {name}: Dimensions {counts[0]} and {c} are not compatible "
                "(index features have different value counts)",
                key=name,
            )
    if len(vals.values) != counts[0]:
        raise ExampleParseError(
            f"SparseFeature {name}: Dimensions {counts[0]} and {len(vals.values)} are not "
            "compatible (index and value features have different value counts)",
            key=name,
        )
    columns = [s.values.astype(np.int64) for s in ids]
    size = list(spec.size)
    n = column(spec.value_key).counts.shape[0]
    if not single:
        columns.insert(0, ids[0].indices[:, 0])
        size.insert(0, n)
    indices = np.stack(columns, axis=1) if columns else np.zeros((0, 0), np.int64)
    values = vals.values
    if not spec.already_sorted and len(values) > 1:
        order = np.lexsort(indices.T[::-1])
        indices, values = indices[order], values[order]
    return SparseValue(indices, values, np.array(size, dtype=np.int64))


def ragged(name: str, spec: RaggedFeature, column: ColumnOf, single: bool) -> Any:
    keys = [spec.value_key or name] + [
        p.key for p in spec.partitions if not isinstance(p, UniformRowLength)
    ]
    kinds = [_KIND_OF[spec.dtype]] + [KIND_INT64] * (len(keys) - 1)
    splits_dtype = np.int64 if spec.row_splits_dtype == "int64" else np.int32
    batched: dict[str, RaggedValue] = {}
    for key, kind in zip(keys, kinds, strict=True):
        col = column(key)
        values = varlen_values(col, kind)
        if single:
            splits = np.array([0, values.size], splits_dtype)
        else:
            splits = col.offsets.astype(splits_dtype)
        batched[key] = RaggedValue(values, splits)
    values_rt = batched[keys[0]]
    if single:
        return single_ragged(
            name,
            spec,
            np.asarray(values_rt.values),
            {k: np.asarray(v.values) for k, v in batched.items()},
        )
    return batched_ragged(name, spec, values_rt, batched)


def assemble(features: Mapping[str, FeatureSpec], column: ColumnOf, single: bool) -> dict[str, Any]:
    """Builds every feature's output from the columns ``column(key)`` returns."""
    out: dict[str, Any] = {}
    for name, spec in features.items():
        if isinstance(spec, FixedLenFeature):
            out[name] = fixed(name, spec, column(name), single)
        elif isinstance(spec, RawFeature):
            out[name] = assemble_raw(name, spec, column(name), single)
        elif isinstance(spec, ImageFeature):
            encoded = fixed(name, _ENCODED, column(name), single)
            out[name] = decode_images(name, spec, encoded, single, error_prefix)
        elif isinstance(spec, TensorFeature):
            encoded = fixed(name, _ENCODED, column(name), single)
            out[name] = decode_tensors(name, spec, encoded, single, error_prefix)
        elif isinstance(spec, FixedLenSequenceFeature):
            out[name] = _sequence(name, spec, column(name), single)
        elif isinstance(spec, VarLenFeature):
            out[name] = varlen(column(name), _KIND_OF[spec.dtype], single)
        elif isinstance(spec, SparseFeature):
            out[name] = _sparse(name, spec, column, single)
        else:
            out[name] = ragged(name, spec, column, single)
    return out
