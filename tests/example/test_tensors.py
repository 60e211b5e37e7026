"""``serialize_tensor`` / ``parse_tensor`` on their own: TensorFlow's bytes as recorded
from it, round trips of every dtype, and the failures (no TensorFlow needed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import tfrecord_engine as tfe
from tfrecord_engine.testing.tensors import tensor_arrays

# Bytes tf.io.serialize_tensor gives (TensorFlow 2.21).
_RECORDED = [
    (np.array([[1, 2], [3, 4]], np.int32),
     "0803120812020802120208022210" "01000000020000000300000004000000"),
    (np.float32(1.5), "0801120022040000c03f"),
    (np.array([b"ab", b"c"], dtype=object), "080712041202080242026162420163"),
    (np.zeros((0, 3), np.float32), "08011206120012020803"),
    (np.array([True, False, True]), "080a1204120208032203010001"),
    (np.array([0, 1, 2], np.float16), "081312041202080322060000003c0040"),
    (np.array([0, 1, 2], np.uint64), "08171204120208032218" + "00" * 8 + "01" + "00" * 7 + "02"
     + "00" * 7),
]  # fmt: skip


@pytest.mark.parametrize(("array", "hex_bytes"), _RECORDED)
def test_recorded_bytes(array: np.ndarray, hex_bytes: str) -> None:
    assert tfe.serialize_tensor(array).hex() == hex_bytes
    dtype = "string" if array.dtype == object else array.dtype
    back = tfe.parse_tensor(bytes.fromhex(hex_bytes), dtype)
    assert back.shape == np.shape(array)
    assert back.tolist() == np.asarray(array).tolist()


@settings(max_examples=200)
@given(array=tensor_arrays())
def test_round_trip_every_dtype(array: np.ndarray) -> None:
    dtype = "string" if array.dtype == object else array.dtype
    back = tfe.parse_tensor(tfe.serialize_tensor(array), dtype)
    assert back.shape == array.shape
    if array.dtype == object:
        assert back.tolist() == array.tolist()
    else:
        assert back.dtype == array.dtype
        assert back.tobytes() == array.tobytes()


def test_typed_fields_fill_with_their_last_value() -> None:
    # float_val holds one value for three elements; int64_val two for three.
    ones = tfe.parse_tensor(bytes.fromhex("080112041202080322002a040000c03f"), "float32")
    assert ones.tolist() == [1.5] * 3
    assert tfe.parse_tensor(bytes.fromhex("08091204120208035202" + "0507"), "int64").tolist() == [
        5,
        7,
        7,
    ]
    assert tfe.parse_tensor(bytes.fromhex("0801120412020803"), "float32").tolist() == [0.0] * 3


@pytest.mark.parametrize(
    ("hex_bytes", "dtype", "message"),
    [
        ("08031200220401000000", "float32",
         "Type mismatch between parsed tensor (int32) and dtype (float)"),
        ("6761726261676eff", "float32",
         "Could not parse `serialized` as TensorProto, base64: Z2FyYmFnbv8="),
        ("", "float32", "Cannot parse tensor from proto"),
        ("080112041202080222040000c03f", "float32", "Cannot parse tensor from proto"),
        ("080a1204120208022202" + "0005", "bool", "Cannot parse tensor from proto"),
        ("0814", "float32", "Type mismatch between parsed tensor (resource) and dtype (float)"),
        ("0864", "float32", "Cannot parse tensor from proto"),
    ],
)  # fmt: skip
def test_failures_say_what_tf_says(hex_bytes: str, dtype: str, message: str) -> None:
    with pytest.raises(tfe.InvalidArgumentError) as exc:
        tfe.parse_tensor(bytes.fromhex(hex_bytes), dtype)
    assert str(exc.value).startswith(message)


def test_bad_arguments() -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="unsupported tensor dtype"):
        tfe.parse_tensor(b"", "datetime64")
    with pytest.raises(TypeError, match="serialized bytes"):
        tfe.parse_tensor(3, "float32")
    with pytest.raises(TypeError, match="bytes or str"):
        tfe.serialize_tensor(np.array([b"a", 3], dtype=object))
    with pytest.raises(tfe.InvalidArgumentError, match="scalar"):
        tfe.parse_tensor(np.array([b"x"], dtype=object), "float32")
