"""tf.io's own spec objects and ``example_names`` given to our parse functions.

The README promises "same names and arguments as tf.io": the very dict of
``tf.io.FixedLenFeature`` ... ``tf.io.RaggedFeature`` (with partitions) and
``tf.io.SparseFeature`` given to ``tf.io.parse_example`` gives equal results (or fails
alike) when given to ours, which converts the objects by duck typing.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given

import tfrecord_engine as tfe
from tests.tf.convert import assert_same_value, ours_outcome, outcome, tf_specs
from tfrecord_engine.errors import ExampleParseError
from tfrecord_engine.testing.examples import (
    ParseCase,
    SequenceCase,
    parse_cases,
    sequence_cases,
)


def _quiet(fn: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SparseFeature warns about its config
        return fn()


@given(parse_cases())
def test_the_same_tf_specs_dict_gives_the_same_results(tf: ModuleType, case: ParseCase) -> None:
    specs = tf_specs(tf, case.features)
    if case.single:

        def theirs_fn() -> Any:
            return tf.io.parse_single_example(tf.constant(case.records[0]), specs)

        def ours_fn() -> Any:
            return tfe.parse_single_example(case.records[0], specs)
    else:

        def theirs_fn() -> Any:
            return tf.io.parse_example(tf.constant(case.records), specs)

        def ours_fn() -> Any:
            return tfe.parse_example(case.records, specs)

    tf_ok, theirs = outcome(
        lambda: _quiet(theirs_fn), tf_errors=(tf.errors.InvalidArgumentError, ValueError)
    )
    ok, ours = ours_outcome(ours_fn)
    assert ok == tf_ok, f"TF: {theirs!r}\nours: {ours!r}"
    if ok:
        assert set(ours) == set(theirs)
        for key in theirs:
            assert_same_value(tf, ours[key], theirs[key], key)


@given(sequence_cases())
def test_the_same_tf_sequence_specs_give_the_same_results(
    tf: ModuleType, case: SequenceCase
) -> None:
    ctx = tf_specs(tf, case.context_features) or None
    seq = tf_specs(tf, case.sequence_features) or None
    tf_fn: Callable[[], Any]
    our_fn: Callable[[], Any]
    if case.single:
        tf_fn = lambda: tf.io.parse_single_sequence_example(tf.constant(case.records[0]), ctx, seq)  # noqa: E731
        our_fn = lambda: tfe.parse_single_sequence_example(case.records[0], ctx, seq)  # noqa: E731
    else:
        tf_fn = lambda: tf.io.parse_sequence_example(tf.constant(case.records), ctx, seq)  # noqa: E731
        our_fn = lambda: tfe.parse_sequence_example(case.records, ctx, seq)  # noqa: E731
    tf_ok, theirs = outcome(
        lambda: _quiet(tf_fn), tf_errors=(tf.errors.InvalidArgumentError, ValueError)
    )
    ok, ours = ours_outcome(our_fn)
    assert ok == tf_ok, f"TF: {theirs!r}\nours: {ours!r}"
    if ok:
        for our_dict, tf_dict in zip(ours, theirs, strict=True):
            assert set(our_dict) == set(tf_dict)
            for key in tf_dict:
                assert_same_value(tf, our_dict[key], tf_dict[key], key)


def test_tf_specs_with_tensor_defaults_partitions_and_shapes(tf: ModuleType) -> None:
    R = tf.io.RaggedFeature
    specs = {
        "f": tf.io.FixedLenFeature(
            tf.TensorShape([2]), tf.float32, default_value=tf.constant([1.5, 2.5])
        ),
        "s": tf.io.FixedLenFeature([], tf.string, default_value="none"),
        "v": tf.io.VarLenFeature(tf.int64),
        "q": tf.io.FixedLenSequenceFeature([2], tf.int64, allow_missing=True, default_value=-1),
        "r": R(
            tf.int64,
            value_key="vals",
            partitions=[R.RowLengths("lens"), R.UniformRowLength(2)],
            row_splits_dtype=tf.int64,
        ),
        "sp": tf.io.SparseFeature(["i0", "i1"], "sv", tf.float32, [4, 5]),
    }
    records = [
        tfe.encode_example(
            {
                "v": [1, 2],
                "q": [1, 2, 3, 4],
                "vals": [1, 2, 3, 4, 5, 6],
                "lens": [1, 2],
                "i0": [3, 1],
                "i1": [0, 4],
                "sv": [0.5, 1.5],
            }
        ),
        tfe.encode_example(
            {
                "f": np.array([7, 8], np.float32),
                "s": b"x",
                "vals": [9, 9],
                "lens": [1],
                "i0": np.zeros(0, np.int64),
                "i1": np.zeros(0, np.int64),
                "sv": np.array([], np.float32),
            }
        ),
    ]
    theirs = _quiet(lambda: tf.io.parse_example(tf.constant(records), specs))
    ours = tfe.parse_example(records, specs)
    assert set(ours) == set(theirs)
    for key in theirs:
        assert_same_value(tf, ours[key], theirs[key], key)
    ds_specs = {k: v for k, v in specs.items() if k in ("f", "s", "v")}
    one = tfe.parse_single_example(records[1], ds_specs)
    assert one["f"].tolist() == [7.0, 8.0]


def _tf_message(exc: BaseException) -> str:
    text = re.sub(r"^\{\{function_node [^}]*\}\} ", "", str(exc).splitlines()[0])
    return re.sub(r" \[Op:\w+\]( name: \S*)?$", "", text)


EX = [
    tfe.encode_example({"x": np.array([1, 2], np.int64)}),
    tfe.encode_example({"y": np.array([1.0], np.float32)}),
]
NAMES = ["first.tfrecord:0", b"second"]


@pytest.mark.parametrize(
    "spec",
    [
        lambda tf: {"x": tf.io.FixedLenFeature([2], tf.int64)},  # missing in record 1
        lambda tf: {"y": tf.io.FixedLenFeature([1], tf.int64)},  # missing in record 0
        lambda tf: {"x": tf.io.FixedLenFeature([3], tf.int64, default_value=[0, 0, 0])},
        lambda tf: {"y": tf.io.VarLenFeature(tf.int64)},
        lambda tf: {"x": tf.io.FixedLenSequenceFeature([3], tf.int64, allow_missing=True)},
        lambda tf: {"x": tf.io.RaggedFeature(tf.string)},
        # record 0's index/value counts differ, record 1's value has the wrong type:
        # TensorFlow reports the type (parsing comes before sparse_merge's check)
        lambda tf: {"s": tf.io.SparseFeature("x", "y", tf.string, 5)},
    ],
)
def test_example_names_in_error_texts_match_tensorflow(tf: ModuleType, spec: Any) -> None:
    features = spec(tf)
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf.io.parse_example(EX, features, example_names=NAMES)
    with pytest.raises(ExampleParseError) as ours:
        tfe.parse_example(EX, features, example_names=NAMES)
    assert str(ours.value) == _tf_message(theirs.value)
    # parse_single_example takes a name, and TensorFlow's single-Example texts carry none
    single_tf = outcome(
        lambda: tf.io.parse_single_example(EX[1], features, example_names="n"),
        tf_errors=(tf.errors.InvalidArgumentError,),
    )
    single_ours = ours_outcome(lambda: tfe.parse_single_example(EX[1], features, example_names="n"))
    assert single_tf[0] == single_ours[0]
    if not single_tf[0]:
        assert str(single_ours[1]) == _tf_message(single_tf[1])


def test_example_names_of_the_wrong_length_fail_like_tensorflow(tf: ModuleType) -> None:
    features = {"x": tf.io.VarLenFeature(tf.int64)}
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf.io.parse_example(EX, features, example_names=["a"])
    with pytest.raises(tfe.InvalidArgumentError) as ours:
        tfe.parse_example(EX, features, example_names=["a"])
    assert str(ours.value) == _tf_message(theirs.value)


SE = [
    tfe.encode_sequence_example(
        {"c": np.array([1], np.int64)}, {"s": [np.array([1, 2], np.int64)]}
    ),
    tfe.encode_sequence_example({}, {"t": [np.array([1.0], np.float32)]}),
]


@pytest.mark.parametrize(
    "specs",
    [
        lambda tf: (None, {"s": tf.io.FixedLenSequenceFeature([], tf.int64)}),
        lambda tf: (None, {"t": tf.io.VarLenFeature(tf.int64)}),
        lambda tf: ({"c": tf.io.FixedLenFeature([], tf.float32)}, None),
        # a missing required context feature: TensorFlow names no record there
        lambda tf: ({"c": tf.io.FixedLenFeature([], tf.int64)}, None),
    ],
)
def test_sequence_example_names_match_tensorflow(tf: ModuleType, specs: Any) -> None:
    ctx, seq = specs(tf)
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf.io.parse_sequence_example(SE, ctx, seq, example_names=NAMES)
    with pytest.raises(ExampleParseError) as ours:
        tfe.parse_sequence_example(SE, ctx, seq, example_names=NAMES)
    assert str(ours.value).startswith(_tf_message(theirs.value))
    with pytest.raises(ExampleParseError) as ours:
        tfe.parse_sequence_example(SE, ctx, seq)
    unnamed = _tf_message(theirs.value)
    for name in ("first.tfrecord:0", "second"):
        unnamed = unnamed.replace(f"Name: {name},", "Name: <unknown>,")
    assert str(ours.value).startswith(unnamed)
    single_tf = outcome(
        lambda: tf.io.parse_single_sequence_example(SE[1], ctx, seq, example_name="nm"),
        tf_errors=(tf.errors.InvalidArgumentError,),
    )
    single_ours = ours_outcome(
        lambda: tfe.parse_single_sequence_example(SE[1], ctx, seq, example_name="nm")
    )
    assert single_tf[0] == single_ours[0]
    if not single_tf[0] and "Name:" in _tf_message(single_tf[1]):
        assert str(single_ours[1]).startswith(_tf_message(single_tf[1]))
