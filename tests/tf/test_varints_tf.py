"""Long packed int64 lists (numpy varint path) vs TensorFlow: parsing and FromString."""

from __future__ import annotations

from types import ModuleType

import numpy as np
from hypothesis import given

import tfrecord_engine as tfe
from tests.tf.convert import assert_same_value, ours_outcome, outcome
from tfrecord_engine.testing.varints import int64_examples

_SPECS = {"x": tfe.VarLenFeature("int64"), "y": tfe.VarLenFeature("int64")}


@given(record=int64_examples(mixed=False))
def test_parse_single_example_matches_tensorflow(tf: ModuleType, record: bytes) -> None:
    specs = {k: tf.io.VarLenFeature(tf.int64) for k in _SPECS}
    tf_errors = (tf.errors.InvalidArgumentError, ValueError)
    tf_ok, theirs = outcome(
        lambda: tf.io.parse_single_example(tf.constant(record), specs), tf_errors=tf_errors
    )
    ok, ours = ours_outcome(lambda: tfe.parse_single_example(record, _SPECS))
    assert ok == tf_ok, f"TF: {theirs!r}\nours: {ours!r}"
    if ok:
        for key in _SPECS:
            assert_same_value(tf, ours[key], theirs[key], key)


@given(record=int64_examples())
def test_decode_example_matches_tf_fromstring(tf: ModuleType, record: bytes) -> None:
    tf_ok, msg = outcome(lambda: tf.train.Example.FromString(record), tf_errors=(Exception,))
    ok, ours = ours_outcome(lambda: tfe.decode_example(record))
    assert ok == tf_ok, f"TF: {msg!r}\nours: {ours!r}"
    if ok:
        for key, feature in msg.features.feature.items():
            want = np.array(feature.int64_list.value, dtype=np.int64)
            np.testing.assert_array_equal(ours[key], want, err_msg=key)
