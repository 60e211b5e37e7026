"""``parse_example`` / ``parse_single_example``: TensorFlow's ``tf.io`` parsing in numpy.

Each record is decoded on its own (:mod:`.wire`, :mod:`.records`), then the outputs are
assembled per spec:

- ``FixedLenFeature`` -> ``np.ndarray`` ``[batch, *shape]`` (single: ``shape``);
- ``VarLenFeature`` -> :class:`SparseValue` with indices ``[N, 2]`` (single: ``[N, 1]``);
- ``FixedLenSequenceFeature`` (``allow_missing=True``) -> ``[batch, max_rows, *shape]``
  padded with its default value;
- ``SparseFeature`` -> :class:`SparseValue` sorted by index (out-of-range indices are not
  checked, as in TensorFlow);
- ``RaggedFeature`` -> :class:`RaggedValue` (single, no partitions: a 1-D array);
- ``RawFeature`` -> ``np.ndarray`` ``[batch, *shape]`` of its dtype (:mod:`.raw`).

int64 -> int64, float32 -> float32, string -> object array of ``bytes``. Errors are
:class:`~tfrecord_engine.errors.ExampleParseError` with TensorFlow's message text and
``key``/``index`` attributes; a bad spec is an
:class:`~tfrecord_engine.errors.InvalidArgumentError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ExampleParseError, InvalidArgumentError, MalformedExampleError
from . import assemble
from .columns import Column, from_rows
from .image import ImageFeature
from .raw import assemble_raw
from .records import KIND_OF, Request, add_request, decode_requests, tensor_value, to_records
from .specs import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RawFeature,
    SparseFeature,
    UniformRowLength,
    VarLenFeature,
    as_feature_specs,
)
from .tensors import TensorFeature
from .values import SparseValue
from .wire import KIND_BYTES, KIND_INT64, Duplicates, RawValues, example_feature_map

__all__ = ["parse_example", "parse_single_example"]

Row = dict[str, "RawValues | None"]


def _plan(features: Mapping[str, FeatureSpec]) -> dict[str, Request]:
    if not isinstance(features, Mapping) or not features:
        raise InvalidArgumentError("Invalid argument: features cannot be empty.")
    requests: dict[str, Request] = {}
    for name, spec in features.items():
        if isinstance(spec, FixedLenFeature):
            add_request(requests, name, spec.dtype, "dense", counted=False)
        elif isinstance(spec, (RawFeature, ImageFeature, TensorFeature)):
            # Parsed as TensorFlow parses FixedLenFeature([], tf.string), then read as
            # numbers (RawFeature), decoded as an image (ImageFeature, see .image) or
            # as a serialized tensor (TensorFeature, see .tensors).
            add_request(requests, name, "string", "dense", counted=False)
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
    records: Sequence[bytes],
    requests: Mapping[str, Request],
    single: bool,
    rows: list[Row] | None = None,
) -> list[Row]:
    """Each record's requested values, appended to ``rows`` (when given) as decoded.

    If a record fails, ``rows`` holds exactly the records before it.
    """
    rows = [] if rows is None else rows
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


def assemble_fixed(name: str, spec: FixedLenFeature, rows: list[Row], single: bool) -> Any:
    """A FixedLenFeature's output from per-record rows (see :mod:`.assemble`)."""
    return assemble.fixed(name, spec, from_rows(rows, name, KIND_OF[spec.dtype]), single)


def assemble_raw_rows(name: str, spec: RawFeature, rows: list[Row], single: bool) -> Any:
    """A RawFeature's output from per-record rows (see :mod:`.raw`)."""
    return assemble_raw(name, spec, from_rows(rows, name, KIND_BYTES), single)


def assemble_varlen(key: str, kind: int, rows: list[Row], single: bool) -> SparseValue:
    """A VarLenFeature's output from per-record rows (see :mod:`.assemble`)."""
    return assemble.varlen(from_rows(rows, key, kind), kind, single)


def assemble_ragged(name: str, spec: RaggedFeature, rows: list[Row], single: bool) -> Any:
    """A RaggedFeature's output from per-record rows (see :mod:`.assemble`)."""
    kinds = {p.key: KIND_INT64 for p in spec.partitions if not isinstance(p, UniformRowLength)}
    kinds[spec.value_key or name] = KIND_OF[spec.dtype]
    return assemble.ragged(name, spec, lambda key: from_rows(rows, key, kinds[key]), single)


def _assemble(
    features: Mapping[str, FeatureSpec],
    rows: list[Row],
    single: bool,
    requests: Mapping[str, Request],
) -> dict[str, Any]:
    # The same columnar assemblers as the lockstep decoder: identical outputs and errors.
    cache: dict[str, Column] = {}

    def column(key: str) -> Column:
        col = cache.get(key)
        if col is None:
            col = cache[key] = from_rows(rows, key, requests[key].kind)
        return col

    return assemble.assemble(features, column, single)


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
    features = as_feature_specs(features)
    requests = _plan(features)
    records = to_records(serialized)
    rows: list[Row] = []
    try:
        _decode_all(records, requests, single=False, rows=rows)
    except ExampleParseError:
        if rows:
            # TensorFlow parses the records in order and reports the first that fails,
            # however it fails: a wrong value count or a missing feature in an earlier
            # record (those decoded into ``rows``) comes before this record's error.
            # Not a SparseFeature's index/value mismatch: TensorFlow finds that after
            # parsing every record (sparse_merge), so any parse error comes first.
            parsed = {k: v for k, v in features.items() if not isinstance(v, SparseFeature)}
            if parsed:
                _assemble(parsed, rows, False, requests)
        raise
    return _assemble(features, rows, False, requests)


def parse_single_example(
    serialized: Any,
    features: Mapping[str, FeatureSpec],
    example_names: Any = None,
    name: object = None,
) -> dict[str, Any]:
    """Parses one serialized Example like ``tf.io.parse_single_example``.

    Outputs have no batch dimension; VarLen indices are ``[N, 1]``. ``features`` may
    hold ``tf.io``'s own spec objects (see :func:`~.specs.as_feature_specs`).
    ``example_names`` (the record's name) and ``name`` (TensorFlow's op name) are
    accepted and unused: TensorFlow's texts for a single Example name no record.

    Example:
        >>> from tfrecord_engine.example.encode import encode_example
        >>> from tfrecord_engine.example.specs import VarLenFeature
        >>> out = parse_single_example(encode_example({"t": ["a", "b"]}),
        ...                            {"t": VarLenFeature("string")})
        >>> out["t"].values.tolist(), out["t"].dense_shape.tolist()
        ([b'a', b'b'], [2])
    """
    del example_names, name  # TensorFlow's single-Example texts carry no name
    serialized = tensor_value(serialized)
    if not isinstance(serialized, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(f"serialized must be bytes, got {type(serialized).__name__}")
    features = as_feature_specs(features)
    requests = _plan(features)
    buf = bytes(serialized)
    return _assemble(features, _decode_all([buf], requests, single=True), True, requests)
