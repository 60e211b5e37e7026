"""Builders: Python/numpy values -> serialized ``Example`` / ``SequenceExample`` bytes.

A value becomes one ``Feature``:

- ``bytes``/``str`` (UTF-8) or a sequence/array of them -> ``BytesList``;
- ``int``/numpy integers, or an integer array -> ``Int64List`` (must fit in int64);
- ``float``/numpy floats, or a float array -> ``FloatList``, rounded to float32 like
  protobuf (values beyond float32's range become +/-inf);
- a list mixing ints and floats -> ``FloatList``; arrays are flattened row-major;
  an object array holds bytes/str.

``bool`` and anything else raise :class:`~tfrecord_engine.errors.InvalidArgumentError`.
An empty untyped list has no kind and is rejected: pass a typed empty array (e.g.
``np.zeros(0, np.int64)``; an empty object array means bytes).

Map entries are written in the mapping's iteration order (insertion order for a dict).
protobuf's own order differs between implementations (see the compat spec section 5), so
compare parsed messages, not raw bytes, against other writers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError
from .wire import KIND_BYTES, KIND_FLOAT, KIND_INT64

__all__ = ["encode_example", "encode_feature", "encode_sequence_example"]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_MASK64 = (1 << 64) - 1
# Python's per-value loop beats numpy's fixed overhead for short lists.
_NUMPY_VARINT_MIN = 16


def _varint(value: int) -> bytes:
    value &= _MASK64
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _varints(values: npt.NDArray[np.int64]) -> bytes:
    """Packed varint encoding of an int64 array (negatives take 10 bytes)."""
    if values.size < _NUMPY_VARINT_MIN:
        return b"".join(_varint(int(v)) for v in values)
    u = values.astype(np.int64, copy=False).view(np.uint64)
    nbytes = np.ones(u.size, dtype=np.int64)
    for k in range(1, 10):
        nbytes += u >= np.uint64(1 << (7 * k))
    ends = np.cumsum(nbytes)
    starts = ends - nbytes
    out = np.empty(int(ends[-1]), dtype=np.uint8)
    for k in range(10):
        live = nbytes > k
        if not live.any():
            break
        chunk = (u[live] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (nbytes[live] > k + 1).astype(np.uint64) << np.uint64(7)
        out[starts[live] + k] = (chunk | more).astype(np.uint8)
    return out.tobytes()


def _delimited(tag: int, payload: bytes) -> bytes:
    return bytes((tag,)) + _varint(len(payload)) + payload


def _fail(key: str, message: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"feature {key!r}: {message}")


def _as_bytes(item: object, key: str) -> bytes:
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    if isinstance(item, str):
        return item.encode("utf-8")
    raise _fail(key, f"cannot mix {type(item).__name__} into a bytes feature")


def _int_array(values: Any, key: str) -> npt.NDArray[np.int64]:
    try:
        if isinstance(values, np.ndarray) and values.dtype == np.uint64:
            if values.size and int(values.max()) > _INT64_MAX:
                raise OverflowError
            return values.astype(np.int64)
        return np.asarray(values, dtype=np.int64).reshape(-1)
    except OverflowError:
        raise _fail(key, "int64 value out of range") from None


def _float_array(values: Any) -> npt.NDArray[np.float32]:
    # protobuf rounds to float32 and turns overflow into +/-inf; numpy warns, so silence it.
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype=np.float64).astype("<f4").reshape(-1)


def _classify_items(items: list[Any], key: str) -> tuple[int, Any]:
    """Decides the kind of a Python list and converts it."""
    if not items:
        raise _fail(
            key, "an empty list has no type: pass a typed empty array, e.g. np.zeros(0, np.int64)"
        )
    has_float = False
    has_int = False
    has_bytes = False
    for item in items:
        if isinstance(item, (bool, np.bool_)):
            raise _fail(key, "bool values are not supported: convert them to int")
        if isinstance(item, (int, np.integer)):
            has_int = True
        elif isinstance(item, (float, np.floating)):
            has_float = True
        elif isinstance(item, (bytes, bytearray, memoryview, str)):
            has_bytes = True
        else:
            raise _fail(key, f"unsupported value type {type(item).__name__}")
    if has_bytes:
        if has_int or has_float:
            raise _fail(key, "cannot mix bytes/str with numbers in one feature")
        return KIND_BYTES, [_as_bytes(i, key) for i in items]
    if has_float:
        return KIND_FLOAT, _float_array([float(i) for i in items])
    if any(not (_INT64_MIN <= int(i) <= _INT64_MAX) for i in items):
        raise _fail(key, "int64 value out of range")
    return KIND_INT64, np.array([int(i) for i in items], dtype=np.int64)


def _classify(value: object, key: str) -> tuple[int, Any]:
    if isinstance(value, (bool, np.bool_)):
        raise _fail(key, "bool values are not supported: convert them to int")
    if isinstance(value, (bytes, bytearray, memoryview, str)):
        return KIND_BYTES, [_as_bytes(value, key)]
    if isinstance(value, (int, np.integer)):
        return _classify_items([value], key)
    if isinstance(value, (float, np.floating)):
        return KIND_FLOAT, _float_array([value])
    if isinstance(value, np.ndarray):
        kind = value.dtype.kind
        if kind in "iu":
            return KIND_INT64, _int_array(value, key)
        if kind == "f":
            return KIND_FLOAT, _float_array(value)
        if kind == "S":
            return KIND_BYTES, [bytes(v) for v in value.reshape(-1)]
        if kind == "U":
            return KIND_BYTES, [str(v).encode("utf-8") for v in value.reshape(-1)]
        if kind == "O":
            return KIND_BYTES, [_as_bytes(v, key) for v in value.reshape(-1)]
        raise _fail(key, f"unsupported array dtype {value.dtype}")
    if isinstance(value, (list, tuple)):
        return _classify_items(list(value), key)
    raise _fail(key, f"unsupported value type {type(value).__name__}")


def encode_feature(value: object, key: str = "<value>") -> bytes:
    """Serializes one ``Feature`` message from a value (see the module docstring).

    Example:
        >>> encode_feature([1, 2]).hex()
        '1a040a020102'
    """
    kind, values = _classify(value, key)
    if kind == KIND_BYTES:
        payload = b"".join(_delimited(0x0A, b) for b in values)
    elif kind == KIND_FLOAT:
        payload = _delimited(0x0A, values.tobytes()) if values.size else b""
    else:
        payload = _delimited(0x0A, _varints(values)) if values.size else b""
    return _delimited((kind << 3) | 2, payload)


def _map_entries(items: Iterable[tuple[str, bytes]]) -> bytes:
    parts = []
    for key, value in items:
        entry = _delimited(0x0A, key.encode("utf-8")) + _delimited(0x12, value)
        parts.append(_delimited(0x0A, entry))
    return b"".join(parts)


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise InvalidArgumentError(f"feature keys must be str, got {key!r}")
    return key


def _features(mapping: Mapping[str, object]) -> bytes:
    return _map_entries(
        (_check_key(k), encode_feature(v, _check_key(k))) for k, v in mapping.items()
    )


def encode_example(mapping: Mapping[str, object]) -> bytes:
    """Serializes a ``tf.train.Example`` from ``{key: value}``.

    Args:
        mapping: feature key -> value; entries are written in iteration order.

    Returns:
        The serialized Example (bytes ``tf.train.Example.FromString`` accepts).

    Raises:
        InvalidArgumentError: a value has an unsupported type, or an int is out of range.

    Example:
        >>> data = encode_example({"label": 3, "image": b"raw", "x": [0.5, 1.5]})
        >>> from tfrecord_engine.example.decode import decode_example
        >>> decode_example(data)["x"]
        array([0.5, 1.5], dtype=float32)
    """
    return _delimited(0x0A, _features(mapping))


def encode_sequence_example(
    context: Mapping[str, object] | None = None,
    feature_lists: Mapping[str, Iterable[object]] | None = None,
) -> bytes:
    """Serializes a ``tf.train.SequenceExample``.

    Args:
        context: context feature key -> value (as in :func:`encode_example`).
        feature_lists: key -> the per-step values; each step becomes one ``Feature``
            (a 2-D array gives one step per row).

    Returns:
        The serialized SequenceExample.

    Example:
        >>> data = encode_sequence_example({"id": 7}, {"tok": [[1, 2], [3]]})
        >>> from tfrecord_engine.example.decode import decode_sequence_example
        >>> ctx, lists = decode_sequence_example(data)
        >>> [step.tolist() for step in lists["tok"]]
        [[1, 2], [3]]
    """
    out = _delimited(0x0A, _features(context or {}))
    lists = []
    for key, steps in (feature_lists or {}).items():
        _check_key(key)
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Iterable):
            raise _fail(key, "a feature list must be a sequence of per-step values")
        body = b"".join(_delimited(0x0A, encode_feature(step, key)) for step in steps)
        lists.append((key, body))
    return out + _delimited(0x12, _map_entries(lists))
