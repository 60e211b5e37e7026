"""``serialize_tensor`` / ``parse_tensor`` against ``tf.io``: the same bytes, the same
values bit for bit, and the same failures (TensorFlow's message, up to its debug dump)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

import tfrecord_engine as tfe
from tfrecord_engine.example import tensors
from tfrecord_engine.testing.tensors import tensor_arrays, tensor_protos

_SLOW = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
_ENUM_DTYPES = {
    1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 7: "string",
    8: "complex64", 9: "int64", 10: "bool", 14: "bfloat16", 17: "uint16", 18: "complex128",
    19: "float16", 22: "uint32", 23: "uint64",
}  # fmt: skip
# The start of each of TensorFlow's three messages; what follows is a dump of the bytes
# (base64, or protobuf's debug string, which this protobuf build may elide).
_KINDS = (
    "Could not parse `serialized` as TensorProto",
    "Cannot parse tensor from proto",
    "Type mismatch",
)


def _tf_tensor(tf: ModuleType, array: np.ndarray) -> Any:
    if array.dtype == object:
        return tf.constant(array.astype(object), dtype=tf.string)
    return tf.constant(array)


def _same(ours: np.ndarray, theirs: Any) -> None:
    if isinstance(theirs, bytes):  # TensorFlow's .numpy() of a string scalar
        theirs = np.array(theirs, dtype=object)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    if theirs.dtype == object:
        assert ours.dtype == object
        assert ours.tolist() == theirs.tolist()
    else:
        assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
        assert ours.tobytes() == theirs.tobytes()


def _kind(message: str) -> str:
    found = [k for k in _KINDS if k in message]
    assert found, message
    return found[0]


@settings(max_examples=150, suppress_health_check=_SLOW)
@given(array=tensor_arrays())
def test_serialize_matches_tf_bytes(tf: ModuleType, array: np.ndarray) -> None:
    theirs = tf.io.serialize_tensor(_tf_tensor(tf, array)).numpy()
    assert tfe.serialize_tensor(array) == theirs
    dtype = "string" if array.dtype == object else array.dtype
    _same(tfe.parse_tensor(theirs, dtype), tf.io.parse_tensor(theirs, _tf_dtype(tf, dtype)).numpy())


def _tf_dtype(tf: ModuleType, dtype: object) -> Any:
    name = "string" if dtype == "string" else np.dtype(dtype).name  # type: ignore[call-overload]
    return tf.dtypes.as_dtype(name)


@pytest.mark.parametrize(
    "value",
    [1, 2**40, -(2**31), 2**31, 1.5, [1, 1.5], True, [True, False], 1j, "a", b"b", [],
     [[1], [2]], np.float64(2), [b"a\x00", "bc"], np.array(["x", "yz"]), [[b"a"], [b""]]],
)  # fmt: skip
def test_python_values_convert_as_tf_constant(tf: ModuleType, value: object) -> None:
    assert tfe.serialize_tensor(value) == tf.io.serialize_tensor(value).numpy()


def test_tf_tensors_are_accepted_without_importing_tf_in_the_core(tf: ModuleType) -> None:
    t = tf.constant([[1.0, 2.0]])
    data = tf.io.serialize_tensor(t)  # a scalar string tensor
    assert tfe.serialize_tensor(t) == data.numpy()
    _same(tfe.parse_tensor(data, tf.float32), t.numpy())


@settings(max_examples=400, suppress_health_check=_SLOW, deadline=None)
@given(data=tensor_protos())
def test_parse_matches_tf_on_any_bytes(tf: ModuleType, data: bytes) -> None:
    # A dimension believed by both sides must not allocate much.
    try:
        msg = tensors._message(data)
    except tensors._Malformed:
        pass
    else:
        n = 1
        for d in msg.dims:
            n *= max(d, 0)
        assume(n <= 4096 and len(msg.dims) <= 8)
        # Resource handles and variants deserialize their own content: not ours to read.
        assume(msg.dtype not in (20, 21) or not msg.content)
    for name in _ENUM_DTYPES.values():
        try:
            theirs = tf.io.parse_tensor(data, tf.dtypes.as_dtype(name)).numpy()
        except tf.errors.InvalidArgumentError as exc:
            message = exc.message
        else:
            _same(tfe.parse_tensor(data, name), theirs)
            continue
        with pytest.raises(tfe.InvalidArgumentError) as ours:
            tfe.parse_tensor(data, name)
        assert _kind(str(ours.value)) == _kind(message)
        if _kind(message) == "Type mismatch":
            assert str(ours.value) in message
