"""Serialized ``Example`` / ``SequenceExample`` bytes -> numpy values (no spec needed)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import MalformedExampleError
from .wire import (
    KIND_BYTES,
    KIND_NONE,
    FeatureMap,
    Span,
    decode_feature,
    example_feature_map,
    feature_kind,
    feature_list_spans,
    sequence_example_maps,
)

__all__ = ["decode_example", "decode_sequence_example"]


def _as_bytes(data: object) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"expected bytes, got {type(data).__name__}")


def _key(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedExampleError(
            f"Could not parse example input: feature key {raw!r} is not valid UTF-8"
        ) from None


def _array(buf: bytes, span: Span, kind: int) -> npt.NDArray[Any]:
    values = decode_feature(buf, span, kind)
    if kind == KIND_BYTES:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    if isinstance(values, list):
        return np.array(values, dtype=np.int64)
    # Packed floats are read-only views of the input: hand out owned arrays.
    return values.copy() if not values.flags.writeable else values


def _features(buf: bytes, fmap: FeatureMap) -> dict[str, npt.NDArray[Any]]:
    out: dict[str, npt.NDArray[Any]] = {}
    for raw_key, span in fmap.items():
        kind = feature_kind(buf, span)
        if kind != KIND_NONE:
            out[_key(raw_key)] = _array(buf, span, kind)
    return out


def decode_example(data: bytes) -> dict[str, npt.NDArray[Any]]:
    """Decodes a serialized ``Example`` into ``{key: 1-D array}``.

    int64 -> int64 array, float -> float32 array, bytes -> object array of ``bytes``.
    With TensorFlow's semantics: a later duplicate key wins, concatenated Examples merge,
    and an empty ``Feature`` (no list at all) counts as missing, so it is left out.

    Raises:
        MalformedExampleError: the bytes are not a valid Example.

    Example:
        >>> from tfrecord_engine.example.encode import encode_example
        >>> decode_example(encode_example({"a": [1, 2], "b": "hi"}))
        {'a': array([1, 2]), 'b': array([b'hi'], dtype=object)}
    """
    buf = _as_bytes(data)
    return _features(buf, example_feature_map(buf))


def decode_sequence_example(
    data: bytes,
) -> tuple[dict[str, npt.NDArray[Any]], dict[str, list[npt.NDArray[Any]]]]:
    """Decodes a serialized ``SequenceExample`` into ``(context, feature_lists)``.

    ``context`` is as in :func:`decode_example`; ``feature_lists`` maps each key to the
    list of its steps' arrays. An empty step ``Feature`` becomes an empty object array.

    Raises:
        MalformedExampleError: the bytes are not a valid SequenceExample.

    Example:
        >>> from tfrecord_engine.example.encode import encode_sequence_example
        >>> ctx, lists = decode_sequence_example(encode_sequence_example({"n": 1}, {"s": [[0.5]]}))
        >>> ctx["n"], lists["s"]
        (array([1]), [array([0.5], dtype=float32)])
    """
    buf = _as_bytes(data)
    context, lists = sequence_example_maps(buf)
    out_lists: dict[str, list[npt.NDArray[Any]]] = {}
    for raw_key, span in lists.items():
        steps = []
        for step in feature_list_spans(buf, span):
            kind = feature_kind(buf, step)
            steps.append(
                np.empty(0, dtype=object) if kind == KIND_NONE else _array(buf, step, kind)
            )
        out_lists[_key(raw_key)] = steps
    return _features(buf, context), out_lists
