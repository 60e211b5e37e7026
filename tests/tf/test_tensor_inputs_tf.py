"""The parse functions take TensorFlow tensors as TensorFlow's own do (their ``.numpy()``
value), without the core importing TensorFlow."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.example.specs import FeatureSpec

_SPEC: dict[str, FeatureSpec] = {
    "x": tfe.FixedLenFeature([2], "int64"),
    "t": tfe.VarLenFeature("string"),
}


def _records() -> list[bytes]:
    return [tfe.encode_example({"x": [i, i + 1], "t": [b"a"] * (i + 1)}) for i in range(4)]


def test_parse_example_takes_a_string_tensor(tf: ModuleType) -> None:
    records = _records()
    ours = tfe.parse_example(tf.constant(records), _SPEC)
    want = tfe.parse_example(records, _SPEC)
    theirs = tf.io.parse_example(tf.constant(records), {"x": tf.io.FixedLenFeature([2], tf.int64)})
    assert ours["x"].tolist() == want["x"].tolist() == theirs["x"].numpy().tolist()
    assert ours["t"].values.tolist() == want["t"].values.tolist()


def test_single_and_sequence_parsers_take_tensors(tf: ModuleType) -> None:
    record = _records()[2]
    assert tfe.parse_single_example(tf.constant(record), _SPEC)["x"].tolist() == [2, 3]
    seq = tfe.encode_sequence_example({"id": 3}, {"f": [[1.0, 2.0], [3.0, 4.0]]})
    specs = (
        {"id": tfe.FixedLenFeature([], "int64")},
        {"f": tfe.FixedLenSequenceFeature([2], "float32")},
    )
    ctx, lists = tfe.parse_single_sequence_example(tf.constant(seq), *specs)
    assert int(ctx["id"]) == 3
    assert lists["f"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    ctx_b, _, lengths = tfe.parse_sequence_example(tf.constant([seq, seq]), *specs)
    assert ctx_b["id"].tolist() == [3, 3]
    assert lengths["f"].tolist() == [2, 2]


def test_example_names_tensor_names_the_record(tf: ModuleType) -> None:
    records = [*_records()[:1], tfe.encode_example({"x": [1]})]
    with pytest.raises(tfe.ExampleParseError, match="Name: second"):
        tfe.parse_example(
            tf.constant(records), _SPEC, example_names=tf.constant(["first", "second"])
        )


def test_tensor_of_numbers_is_refused_clearly(tf: ModuleType) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="must be bytes"):
        tfe.parse_example(tf.constant(np.arange(3)), _SPEC)
