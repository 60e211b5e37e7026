"""parse_example / parse_single_example vs tf.io on the same bytes: values and errors."""

from __future__ import annotations

import re
import warnings
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given

import tfrecord_engine.example as tfe
from tests.tf.convert import assert_same_value, ours_outcome, outcome, tf_specs
from tfrecord_engine.errors import ExampleParseError
from tfrecord_engine.testing.examples import ParseCase, parse_cases


def _tf_parse(tf: ModuleType, case: ParseCase) -> Any:
    specs = tf_specs(tf, case.features)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SparseFeature logs/warns about its config
        if case.single:
            return tf.io.parse_single_example(tf.constant(case.records[0]), specs)
        return tf.io.parse_example(tf.constant(case.records), specs)


def _ours(case: ParseCase) -> Any:
    if case.single:
        return tfe.parse_single_example(case.records[0], case.features)
    return tfe.parse_example(case.records, case.features)


@given(parse_cases())
def test_parse_matches_tensorflow(tf: ModuleType, case: ParseCase) -> None:
    tf_errors = (tf.errors.InvalidArgumentError, ValueError)
    tf_ok, theirs = outcome(lambda: _tf_parse(tf, case), tf_errors=tf_errors)
    ok, ours = ours_outcome(lambda: _ours(case))
    assert ok == tf_ok, f"TF: {theirs!r}\nours: {ours!r}"
    if ok:
        assert set(ours) == set(theirs)
        for key in theirs:
            assert_same_value(tf, ours[key], theirs[key], key)


def _tf_message(exc: BaseException) -> str:
    text = re.sub(r"^\{\{function_node [^}]*\}\} ", "", str(exc).splitlines()[0])
    return re.sub(r" \[Op:\w+\]( name: \S*)?$", "", text)


def test_the_first_failing_record_is_reported_whatever_the_failure(tf: ModuleType) -> None:
    # TensorFlow reports the first record that fails; we used to report a malformed
    # record before an earlier record's count or missing-feature error (found by the
    # mixed-lists differential test, whose case is the last one here).
    ints = tfe.encode_example({"b": np.array([1, 2, 3], np.int64)})
    no_b = tfe.encode_example({"c": np.array([1], np.int64)})
    bad_ints = b"\n\x0b\n\t\n\x01b\x12\x04\x1a\x02\x10\x05"  # a varint tag in an Int64List
    two = tfe.encode_example({"b": np.array([b"x", b"y"], dtype=object)})
    bad_bytes = b"\n\x0b\n\t\n\x01b\x12\x04\n\x02\x10\x05"  # a varint tag in a BytesList
    int_spec = {"b": tfe.FixedLenFeature([2], "int64")}
    str_spec = {"b": tfe.FixedLenFeature([1], "string")}
    mixed = {
        "a": tfe.FixedLenSequenceFeature([], "int64", allow_missing=True),
        "b": tfe.FixedLenFeature([0], "string"),
    }
    found = [
        b"\x10*\n\x14\n\x07\n\x01a\x12\x02\x1a\x00\n\t\n\x01b\x12\x04\n\x02\n\x00\x1a\x02hi",
        b"\x10*\n\x14\n\x07\n\x01a\x12\x02\x1a\x00\n\t\n\x01b\x12\x04\n\x02\x10\x05\x1a\x02hi",
    ]
    cases: list[tuple[list[bytes], dict[str, Any]]] = [
        ([ints, bad_ints], int_spec),
        ([no_b, bad_ints], int_spec),
        ([bad_ints, ints], int_spec),
        ([two], str_spec),  # one bytes value too many: a parse error in TF's batch parser
        ([two, bad_bytes], str_spec),
        (found, mixed),
    ]
    for records, features in cases:
        case = ParseCase(features=features, records=records, single=False)
        with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
            _tf_parse(tf, case)
        with pytest.raises(ExampleParseError) as ours:
            _ours(case)
        assert str(ours.value).startswith(_tf_message(theirs.value)), (
            f"TF: {_tf_message(theirs.value)!r}\nours: {str(ours.value)!r}"
        )


def test_repeated_sparse_indices_keep_record_order(tf: ModuleType) -> None:
    """A record that repeats an index of a ``SparseFeature(already_sorted=False)``.

    TensorFlow's order of the values among equal indices comes from an unstable sort
    (with 40 equal indices it moves values 0, 10, 20 and 30 around); ours keeps record
    order. The differential comparison treats that order as unspecified and nothing
    else: the index rows and every value outside a run of equal indices stay exact.
    """
    index = np.array([1, 0, 0, 2, *([1] * 40)], np.int64)
    values = np.arange(len(index), dtype=np.int64)
    record = tfe.encode_example({"c_i": index, "c_v": values})
    case = ParseCase(
        features={"c": tfe.SparseFeature("c_i", "c_v", "int64", 3)}, records=[record], single=False
    )
    ours, theirs = _ours(case)["c"], _tf_parse(tf, case)["c"]
    assert ours.values.tolist() == [1, 2, 0, *range(4, 44), 3]  # stable: record order
    assert sorted(theirs.values.numpy().tolist()) == values.tolist()
    assert_same_value(tf, ours, theirs, "c")
    # The comparison still sees a value that moved out of its run of equal indices.
    moved = tfe.SparseValue(ours.indices, ours.values[[0, 2, 1, *range(3, 44)]], ours.dense_shape)
    with pytest.raises(AssertionError):
        assert_same_value(tf, moved, theirs, "c")
