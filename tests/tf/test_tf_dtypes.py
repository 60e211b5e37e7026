"""Specs accept TensorFlow's own dtype and shape objects unchanged."""

from __future__ import annotations

from types import ModuleType

import tfrecord_engine as tfe


def test_tf_dtypes_and_shapes(tf: ModuleType) -> None:
    assert tfe.FixedLenFeature([2], tf.int64).dtype == "int64"
    assert tfe.FixedLenFeature(tf.TensorShape([2, 3]), tf.float32).shape == (2, 3)
    assert tfe.VarLenFeature(tf.string).dtype == "string"
    spec = tfe.RaggedFeature(tf.int64, row_splits_dtype=tf.int64)
    assert (spec.dtype, spec.row_splits_dtype) == ("int64", "int64")
    data = tfe.encode_example({"x": [1, 2]})
    ours = tfe.parse_example([data], {"x": tfe.FixedLenFeature([2], tf.int64)})
    theirs = tf.io.parse_example([data], {"x": tf.io.FixedLenFeature([2], tf.int64)})
    assert ours["x"].tolist() == theirs["x"].numpy().tolist()
