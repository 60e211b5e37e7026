"""parse_example / parse_single_example vs tf.io on the same bytes: values and errors."""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any

from hypothesis import given

import tfrecord_engine.example as tfe
from tests.tf.convert import assert_same_value, ours_outcome, outcome, tf_specs
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
