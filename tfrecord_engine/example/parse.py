"""``parse_example`` / ``parse_single_example``: TensorFlow's ``tf.io`` parsing in numpy.

Each record is decoded on its own (:mod:`.wire`, :mod:`.records`), then the outputs are
assembled per spec:

- ``FixedLenFeature`` -> ``np.ndarray`` ``[batch, *shape]`` (single: ``shape``);
- ``VarLenFeature`` -> :class:`SparseValue` with indices ``[N, 2]`` (single: ``[N, 1]``);
- ``FixedLenSequenceFeature`` (``allow_missing=True``) -> ``[batch, max_rows, *shape]``
  padded with its default value;
- ``SparseFeature`` -> :class:`SparseValue` sorted by index (out-of-range indices are not
  checked, as in TensorFlow);
- ``RaggedFeature`` -> :class:`RaggedValue` (single, no partitions: a 1-D array).

int64 -> int64, float32 -> float32, string -> object array of ``bytes``. Errors are
:class:`~tfrecord_engine.errors.ExampleParseError` with TensorFlow's message text and
``key``/``index`` attributes; a bad spec is an
:class:`~tfrecord_engine.errors.InvalidArgumentError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ExampleParseError, InvalidArgumentError, MalformedExampleError
from .ragged import batched_ragged, single_ragged
from .records import (
    KIND_OF,
    TF_NAME,
    Request,
    add_request,
    concat_values,
    decode_requests,
    error_prefix,
    object_array,
    to_records,
)
from .specs import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    UniformRowLength,
    VarLenFeature,
)
from .values import RaggedValue, SparseValue
from .wire import KIND_BYTES, Duplicates, RawValues, example_feature_map

__all__ = ["parse_example", "parse_single_example"]

Row = dict[str, "RawValues | None"]
_COUNT_NAME = {"int64": "int64", "float32": "float", "string": "bytes"}
_LIST_NAME = {"int64": "int64_list", "float32": "float_list", "string": "bytes_list"}


def _np_dtype(dtype: str) -> type[Any]:
    return {"int64": np.int64, "float32": np.float32}.get(dtype, object)


def _plan(features: Mapping[str, FeatureSpec]) -> dict[str, Request]:
    if not isinstance(features, Mapping) or not features:
        raise InvalidArgumentError("Invalid argument: features cannot be empty.")
    requests: dict[str, Request] = {}
    for name, spec in features.items():
        if isinstance(spec, FixedLenFeature):
            add_request(requests, name, spec.dtype, "dense")
        elif isinstance(spec, FixedLenSequenceFeature):
            if not spec.allow_missing:
                raise InvalidArgumentError(
                    "Unsupported: FixedLenSequenceFeature requires allow_missing to be True."
                )
            add_request(requests, name, spec.dtype, "dense")
        elif isinstance(spec, VarLenFeature):
            add_request(requests, name, spec.dtype, "sparse")
        elif isinstance(spec, SparseFeature):
            for key in spec.index_key:
                add_request(requests, key, "int64", "sparse")
            add_request(requests, spec.value_key, spec.dtype, "sparse")
        elif isinstance(spec, RaggedFeature):
            add_request(requests, spec.value_key or name, spec.dtype, "ragged")
            for part in spec.partitions:
                if not isinstance(part, UniformRowLength):
                    add_request(requests, part.key, "int64", "ragged")
        else:
            raise InvalidArgumentError(f"feature {name!r}: unsupported spec {spec!r}")
    return requests


def _decode_all(
    records: Sequence[bytes], requests: Mapping[str, Request], single: bool
) -> list[Row]:
    rows = []
    for i, buf in enumerate(records):
        index = None if single else i
        dups = Duplicates()
        try:
            fmap = example_feature_map(buf, dups)
        except MalformedExampleError as exc:
            raise MalformedExampleError(
                f"{exc} (record {i})" if not single else str(exc), offset=exc.offset, index=index
            ) from None
        rows.append(decode_requests(buf, fmap, dups, requests, index))
    return rows


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def assemble_fixed(
    name: str, spec: FixedLenFeature, rows: list[Row], single: bool
) -> npt.NDArray[Any]:
    count = math.prod(spec.shape)
    parts: list[Any] = []
    for i, row in enumerate(rows):
        values = row[name]
        index = None if single else i
        if values is None:
            # TensorFlow treats a default with no elements (shape with a 0) as no default.
            if not spec.default_value:
                where = "" if single else "Name: <unknown>, "
                raise ExampleParseError(
                    f"{where}Feature: {name} (data type: {TF_NAME[KIND_OF[spec.dtype]]}) "
                    "is required but could not be found.",
                    key=name,
                    index=index,
                )
            parts.append(spec.default_value)
        elif len(values) != count:
            if single:
                message = (
                    f"Can't parse serialized Example: Some {_LIST_NAME[spec.dtype]} slice "
                    "was not parsed."
                )
            else:
                message = (
                    f"Number of {_COUNT_NAME[spec.dtype]} values != expected.  Values size: "
                    f"{len(values)} but output shape: {_shape_text(spec.shape)}"
                )
            raise ExampleParseError(error_prefix(name, index) + message, key=name, index=index)
        else:
            parts.append(values)
    out = concat_values(parts, KIND_OF[spec.dtype])
    return out.reshape(spec.shape if single else (len(rows), *spec.shape))


def _sequence(
    name: str, spec: FixedLenSequenceFeature, rows: list[Row], single: bool
) -> npt.NDArray[Any]:
    stride = math.prod(spec.shape)
    pieces: list[RawValues] = []
    for i, row in enumerate(rows):
        values = row[name]
        if values is None:
            values = [] if spec.dtype == "string" else np.zeros(0, _np_dtype(spec.dtype))
        n = len(values)
        if (stride == 0 and n) or (stride and n % stride):
            if single:
                message = (
                    f"Error while parsing feature with key {name}: number of elements should "
                    f"be divisible by {stride}, found {n} instead"
                )
            else:
                message = error_prefix(name, i) + (
                    f"Number of {_COUNT_NAME[spec.dtype]} values is not a multiple of stride "
                    f"length. Saw {n} values but output shape is: "
                    f"{_shape_text(['?', *spec.shape])}"  # type: ignore[list-item]
                )
            raise ExampleParseError(message, key=name, index=None if single else i)
        pieces.append(values)
    rows_per = [len(p) // stride if stride else 0 for p in pieces]
    max_rows = max(rows_per, default=0)
    pad = spec.default_value
    if pad is None:
        pad = b"" if spec.dtype == "string" else 0
    out = np.full((len(rows), max_rows * stride), pad, dtype=_np_dtype(spec.dtype))
    for i, p in enumerate(pieces):
        if len(p):
            out[i, : len(p)] = p if spec.dtype != "string" else object_array(p)  # type: ignore[arg-type]
    out = out.reshape((len(rows), max_rows, *spec.shape))
    return out[0] if single else out


def assemble_varlen(key: str, kind: int, rows: list[Row], single: bool) -> SparseValue:
    parts = [row[key] for row in rows]
    present = [p if p is not None else [] for p in parts]
    lengths = np.array([len(p) for p in present], dtype=np.int64)
    values = concat_values([p for p in present if len(p)], kind)
    if values.dtype != object and kind == KIND_BYTES:
        values = object_array(list(values))
    positions = np.arange(values.size, dtype=np.int64) - np.repeat(
        np.cumsum(lengths) - lengths, lengths
    )
    if single:
        return SparseValue(positions.reshape(-1, 1), values, lengths[:1].copy())
    batch = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    dense_shape = np.array([len(rows), int(lengths.max(initial=0))], dtype=np.int64)
    return SparseValue(np.stack([batch, positions], axis=1), values, dense_shape)


def _sparse(name: str, spec: SparseFeature, rows: list[Row], single: bool) -> SparseValue:
    # TensorFlow parses each key as a VarLen feature, then sparse_merge()s the whole batch.
    ids = [assemble_varlen(key, KIND_OF["int64"], rows, single) for key in spec.index_key]
    vals = assemble_varlen(spec.value_key, KIND_OF[spec.dtype], rows, single)
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
    if not single:
        columns.insert(0, ids[0].indices[:, 0])
        size.insert(0, len(rows))
    indices = np.stack(columns, axis=1) if columns else np.zeros((0, 0), np.int64)
    values = vals.values
    if not spec.already_sorted and len(values) > 1:
        order = np.lexsort(indices.T[::-1])
        indices, values = indices[order], values[order]
    return SparseValue(indices, values, np.array(size, dtype=np.int64))


def assemble_ragged(name: str, spec: RaggedFeature, rows: list[Row], single: bool) -> Any:
    keys = [spec.value_key or name] + [
        p.key for p in spec.partitions if not isinstance(p, UniformRowLength)
    ]
    kinds = [KIND_OF[spec.dtype]] + [KIND_OF["int64"]] * (len(keys) - 1)
    splits_dtype = np.int64 if spec.row_splits_dtype == "int64" else np.int32
    batched: dict[str, RaggedValue] = {}
    for key, kind in zip(keys, kinds, strict=False):
        sv = assemble_varlen(key, kind, rows, single)
        if single:
            batched[key] = RaggedValue(sv.values, np.array([0, len(sv.values)], splits_dtype))
        else:
            lengths = [0 if r[key] is None else len(r[key]) for r in rows]  # type: ignore[arg-type]
            splits = np.concatenate([[0], np.cumsum(lengths)]).astype(splits_dtype)
            batched[key] = RaggedValue(sv.values, splits)
    values = batched[keys[0]]
    if single:
        return single_ragged(
            name,
            spec,
            np.asarray(values.values),
            {k: np.asarray(v.values) for k, v in batched.items()},
        )
    return batched_ragged(name, spec, values, batched)


def _assemble(features: Mapping[str, FeatureSpec], rows: list[Row], single: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec in features.items():
        if isinstance(spec, FixedLenFeature):
            out[name] = assemble_fixed(name, spec, rows, single)
        elif isinstance(spec, FixedLenSequenceFeature):
            out[name] = _sequence(name, spec, rows, single)
        elif isinstance(spec, VarLenFeature):
            out[name] = assemble_varlen(name, KIND_OF[spec.dtype], rows, single)
        elif isinstance(spec, SparseFeature):
            out[name] = _sparse(name, spec, rows, single)
        else:
            out[name] = assemble_ragged(name, spec, rows, single)
    return out


def parse_example(serialized: Any, features: Mapping[str, FeatureSpec]) -> dict[str, Any]:
    """Parses a batch of serialized Examples like ``tf.io.parse_example``.

    Args:
        serialized: a list, tuple or 1-D array of serialized Examples (a single ``bytes``
            is parsed like :func:`parse_single_example`, as TensorFlow does for a scalar).
        features: feature key -> spec.

    Returns:
        feature key -> numpy output (see the module docstring).

    Raises:
        ExampleParseError: a record does not match the specs (``.key``, ``.index``).
        MalformedExampleError: a record is not a valid Example.
        InvalidArgumentError: the specs are invalid (e.g. empty).

    Example:
        >>> from tfrecord_engine.example.encode import encode_example
        >>> from tfrecord_engine.example.specs import FixedLenFeature
        >>> batch = [encode_example({"x": [1, 2]}), encode_example({"x": [3, 4]})]
        >>> parse_example(batch, {"x": FixedLenFeature([2], "int64")})["x"].tolist()
        [[1, 2], [3, 4]]
    """
    if isinstance(serialized, (bytes, bytearray, memoryview)):
        return parse_single_example(serialized, features)
    requests = _plan(features)
    records = to_records(serialized)
    return _assemble(features, _decode_all(records, requests, single=False), single=False)


def parse_single_example(serialized: Any, features: Mapping[str, FeatureSpec]) -> dict[str, Any]:
    """Parses one serialized Example like ``tf.io.parse_single_example``.

    Outputs have no batch dimension; VarLen indices are ``[N, 1]``.

    Example:
        >>> from tfrecord_engine.example.encode import encode_example
        >>> from tfrecord_engine.example.specs import VarLenFeature
        >>> out = parse_single_example(encode_example({"t": ["a", "b"]}),
        ...                            {"t": VarLenFeature("string")})
        >>> out["t"].values.tolist(), out["t"].dense_shape.tolist()
        ([b'a', b'b'], [2])
    """
    if not isinstance(serialized, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(f"serialized must be bytes, got {type(serialized).__name__}")
    requests = _plan(features)
    buf = bytes(serialized)
    return _assemble(features, _decode_all([buf], requests, single=True), single=True)
