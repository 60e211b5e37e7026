"""Long packed int64 lists (numpy varint path) vs TensorFlow: parsing and FromString."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given

import tfrecord_engine as tfe
from tests.example.test_varints import numpy_always
from tests.tf.convert import assert_same_value, ours_outcome, outcome
from tfrecord_engine.testing.varints import int64_examples
from tfrecord_engine.testing.wirebytes import field as _ld

_SPECS = {"x": tfe.VarLenFeature("int64"), "y": tfe.VarLenFeature("int64")}


@given(record=int64_examples(mixed=False))
def test_parse_single_example_matches_tensorflow(tf: ModuleType, record: bytes) -> None:
    specs = {k: tf.io.VarLenFeature(tf.int64) for k in _SPECS}
    tf_errors = (tf.errors.InvalidArgumentError, ValueError)
    tf_ok, theirs = outcome(
        lambda: tf.io.parse_single_example(tf.constant(record), specs), tf_errors=tf_errors
    )
    with numpy_always():  # every run, however short, through the numpy path
        ok, ours = ours_outcome(lambda: tfe.parse_single_example(record, _SPECS))
    assert ok == tf_ok, f"TF: {theirs!r}\nours: {ours!r}"
    if ok:
        for key in _SPECS:
            assert_same_value(tf, ours[key], theirs[key], key)


@given(record=int64_examples())
def test_decode_example_matches_tf_fromstring(tf: ModuleType, record: bytes) -> None:
    tf_ok, msg = outcome(lambda: tf.train.Example.FromString(record), tf_errors=(Exception,))
    with numpy_always():
        ok, ours = ours_outcome(lambda: tfe.decode_example(record))
    assert ok == tf_ok, f"TF: {msg!r}\nours: {ours!r}"
    if ok:
        for key, feature in msg.features.feature.items():
            want = np.array(feature.int64_list.value, dtype=np.int64)
            np.testing.assert_array_equal(ours[key], want, err_msg=key)


@pytest.mark.parametrize("last", [0x00, 0x01, 0x02, 0x7E, 0x7F])
def test_tenth_byte_high_bits_are_dropped_as_in_tensorflow(tf: ModuleType, last: int) -> None:
    # 30 values, each 10 bytes whose last byte has bits past 64 set: the numpy path.
    run = bytes([0xFF] * 9 + [last]) * 30
    record = _ld(0x0A, _ld(0x0A, _ld(0x0A, b"x") + _ld(0x12, _ld(0x1A, _ld(0x0A, run)))))
    theirs = tf.io.parse_single_example(record, {"x": tf.io.VarLenFeature(tf.int64)})["x"]
    ours = tfe.parse_single_example(record, {"x": tfe.VarLenFeature("int64")})["x"]
    assert_same_value(tf, ours, theirs, "x")
    want = list(tf.train.Example.FromString(record).features.feature["x"].int64_list.value)
    assert tfe.decode_example(record)["x"].tolist() == want
    assert want == [-1 if last & 1 else 2**63 - 1] * 30
