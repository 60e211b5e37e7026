"""Serialized ``Example`` / ``SequenceExample`` bytes -> numpy values (no spec needed).

Decoding follows protobuf (``tf.train.Example.FromString``), see :mod:`.pbwire`; parsing
against specs (:mod:`.parse`) follows TensorFlow's parsing kernels instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .pbwire import PbFeature, example_features, sequence_example_features
from .wire import KIND_NONE

__all__ = ["decode_example", "decode_sequence_example"]


def _as_bytes(data: object) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"expected bytes, got {type(data).__name__}")


def decode_example(data: bytes) -> dict[str, npt.NDArray[Any]]:
    """Decodes a serialized ``Example`` into ``{key: 1-D array}``.

    int64 -> int64 array, float -> float32 array, bytes -> object array of ``bytes``.
    Accepts and rejects exactly what ``tf.train.Example.FromString`` does (a later
    duplicate key wins, concatenated Examples merge). A ``Feature`` with no list at all
    has no type and no values, and is left out, as TensorFlow's parsers treat it as
    missing.

    Raises:
        MalformedExampleError: the bytes are not a valid Example.

    Example:
        >>> from tfrecord_engine.example.encode import encode_example
        >>> decode_example(encode_example({"a": [1, 2], "b": "hi"}))
        {'a': array([1, 2]), 'b': array([b'hi'], dtype=object)}
    """
    return {
        key: feature.array()
        for key, feature in example_features(_as_bytes(data)).items()
        if feature.kind != KIND_NONE
    }


def _step(feature: PbFeature) -> npt.NDArray[Any]:
    return np.empty(0, dtype=object) if feature.kind == KIND_NONE else feature.array()


def decode_sequence_example(
    data: bytes,
) -> tuple[dict[str, npt.NDArray[Any]], dict[str, list[npt.NDArray[Any]]]]:
    """Decodes a serialized ``SequenceExample`` into ``(context, feature_lists)``.

    ``context`` is as in :func:`decode_example`; ``feature_lists`` maps each key to the
    list of its steps' arrays. A step ``Feature`` with no list becomes an empty object
    array. Accepts and rejects what ``tf.train.SequenceExample.FromString`` does.

    Raises:
        MalformedExampleError: the bytes are not a valid SequenceExample.

    Example:
        >>> from tfrecord_engine.example.encode import encode_sequence_example
        >>> ctx, lists = decode_sequence_example(encode_sequence_example({"n": 1}, {"s": [[0.5]]}))
        >>> ctx["n"], lists["s"]
        (array([1]), [array([0.5], dtype=float32)])
    """
    context, lists = sequence_example_features(_as_bytes(data))
    return (
        {k: f.array() for k, f in context.items() if f.kind != KIND_NONE},
        {k: [_step(s) for s in steps] for k, steps in lists.items()},
    )
