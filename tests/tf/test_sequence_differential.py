"""parse_sequence_example / parse_single_sequence_example vs tf.io: values and errors."""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any

from hypothesis import given

import tfrecord_engine.example as tfe
from tests.tf.convert import assert_same_value, ours_outcome, outcome, tf_specs
from tfrecord_engine.testing.examples import SequenceCase, sequence_cases


def _tf_parse(tf: ModuleType, case: SequenceCase) -> Any:
    ctx = tf_specs(tf, case.context_features) or None
    seq = tf_specs(tf, case.sequence_features) or None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case.single:
            return tf.io.parse_single_sequence_example(tf.constant(case.records[0]), ctx, seq)
        return tf.io.parse_sequence_example(tf.constant(case.records), ctx, seq)


def _ours(case: SequenceCase) -> Any:
    if case.single:
        return tfe.parse_single_sequence_example(
            case.records[0], case.context_features, case.sequence_features
        )
    return tfe.parse_sequence_example(case.records, case.context_features, case.sequence_features)


@given(sequence_cases())
def test_parse_sequence_matches_tensorflow(tf: ModuleType, case: SequenceCase) -> None:
    tf_errors = (tf.errors.InvalidArgumentError, ValueError)
    tf_ok, theirs = outcome(lambda: _tf_parse(tf, case), tf_errors=tf_errors)
    ok, ours = ours_outcome(lambda: _ours(case))
    assert ok == tf_ok, f"TF: {theirs!r}\nours: {ours!r}"
    if ok:
        assert len(ours) == len(theirs)
        for our_dict, tf_dict in zip(ours, theirs, strict=True):
            assert set(our_dict) == set(tf_dict)
            for key in tf_dict:
                assert_same_value(tf, our_dict[key], tf_dict[key], key)
