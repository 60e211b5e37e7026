"""Helpers for differential tests: our specs -> tf.io specs, TF outputs -> numpy checks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import numpy as np

import tfrecord_engine.example as tfe
from tfrecord_engine.errors import TFRecordError


def tf_dtype(tf: ModuleType, dtype: str) -> Any:
    return {"int64": tf.int64, "float32": tf.float32, "string": tf.string}[dtype]


def tf_spec(tf: ModuleType, spec: Any) -> Any:
    """The tf.io spec equal to one of ours."""
    dt = tf_dtype(tf, spec.dtype)
    if isinstance(spec, tfe.FixedLenFeature):
        default = None
        if spec.default_value is not None:
            default = np.array(spec.default_value, dtype=_np(spec.dtype)).reshape(spec.shape)
        return tf.io.FixedLenFeature(list(spec.shape), dt, default_value=default)
    if isinstance(spec, tfe.VarLenFeature):
        return tf.io.VarLenFeature(dt)
    if isinstance(spec, tfe.FixedLenSequenceFeature):
        return tf.io.FixedLenSequenceFeature(
            list(spec.shape), dt, allow_missing=spec.allow_missing, default_value=spec.default_value
        )
    if isinstance(spec, tfe.SparseFeature):
        return tf.io.SparseFeature(
            list(spec.index_key), spec.value_key, dt, list(spec.size), spec.already_sorted
        )
    assert isinstance(spec, tfe.RaggedFeature)
    R = tf.io.RaggedFeature
    parts = []
    for p in spec.partitions:
        if isinstance(p, tfe.UniformRowLength):
            parts.append(R.UniformRowLength(p.length))
        else:
            parts.append(getattr(R, type(p).__name__)(p.key))
    return R(
        dt,
        value_key=spec.value_key,
        partitions=parts,
        row_splits_dtype=tf_dtype(tf, "int64") if spec.row_splits_dtype == "int64" else tf.int32,
        validate=spec.validate,
    )


def tf_specs(tf: ModuleType, features: Mapping[str, Any]) -> dict[str, Any]:
    return {k: tf_spec(tf, v) for k, v in features.items()}


def _np(dtype: str) -> Any:
    return {"int64": np.int64, "float32": np.float32, "string": object}[dtype]


def _numpy(tf: ModuleType, tensor: Any) -> Any:
    # A scalar string tensor's .numpy() is plain bytes; keep strings as object arrays.
    if tensor.dtype == tf.string:
        return np.asarray(tensor.numpy(), dtype=object)
    return tensor.numpy()


def ties_in_order(indices: Any, values: Any) -> Any:
    """``values`` with each run of equal consecutive index rows sorted by value bytes.

    A record of a ``SparseFeature(already_sorted=False)`` may repeat an index. TensorFlow
    sorts the entries with an unstable ``std::sort`` on the indices alone (in
    ``SparseReorder``), so the order of the values among equal indices is unspecified
    there (it changes with the number of entries); ours keeps record order. Both sides
    compare through this, which leaves every other value in place: the index rows
    themselves are compared exactly.
    """
    indices, values = np.asarray(indices), np.asarray(values)
    if len(values) < 2:
        return values
    same = (indices[1:] == indices[:-1]).all(axis=1)
    if not same.any():
        return values
    run = np.concatenate([[0], np.cumsum(~same)])  # run number of each entry
    # Strings by their bytes, numbers by their bit patterns (NaN and -0.0 included).
    keys = [bytes(v) if values.dtype == object else v.tobytes() for v in values]
    order = sorted(range(len(values)), key=lambda i: (int(run[i]), keys[i]))
    return values[np.array(order, dtype=np.int64)]


def assert_array_same(ours: Any, theirs: Any, what: str) -> None:
    theirs = np.asarray(theirs)
    assert isinstance(ours, np.ndarray), f"{what}: expected ndarray, got {type(ours)}"
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != {theirs.shape}"
    if theirs.dtype == object:
        assert ours.dtype == object, f"{what}: dtype {ours.dtype} != object"
        assert ours.reshape(-1).tolist() == theirs.reshape(-1).tolist(), what
        return
    assert ours.dtype == theirs.dtype, f"{what}: dtype {ours.dtype} != {theirs.dtype}"
    np.testing.assert_array_equal(ours, theirs, err_msg=what)


def assert_same_value(tf: ModuleType, ours: Any, theirs: Any, what: str) -> None:
    """Our output equals TF's (dense, sparse or ragged), dtypes included."""
    if isinstance(theirs, tf.SparseTensor):
        assert isinstance(ours, tfe.SparseValue), f"{what}: expected SparseValue"
        indices = theirs.indices.numpy()
        assert_array_same(ours.indices, indices, what + ".indices")
        assert_array_same(
            ties_in_order(indices, ours.values),
            ties_in_order(indices, _numpy(tf, theirs.values)),
            what + ".values",
        )
        assert_array_same(ours.dense_shape, theirs.dense_shape.numpy(), what + ".dense_shape")
    elif isinstance(theirs, tf.RaggedTensor):
        assert isinstance(ours, tfe.RaggedValue), f"{what}: expected RaggedValue, got {type(ours)}"
        assert_array_same(ours.row_splits, theirs.row_splits.numpy(), what + ".row_splits")
        assert_same_value(tf, ours.values, theirs.values, what + ".values")
    else:
        assert_array_same(ours, _numpy(tf, theirs), what)


def outcome(
    fn: Callable[[], Any], *, tf_errors: tuple[type[BaseException], ...]
) -> tuple[bool, Any]:
    """(ok, result or exception); an exception outside ``tf_errors`` propagates."""
    try:
        return True, fn()
    except tf_errors as exc:
        return False, exc


def ours_outcome(fn: Callable[[], Any]) -> tuple[bool, Any]:
    """Like :func:`outcome` for our code: only TFRecordError subclasses count as errors."""
    return outcome(fn, tf_errors=(TFRecordError,))
