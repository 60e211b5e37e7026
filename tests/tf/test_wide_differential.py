"""Wide records (many int64/float32 FixedLenFeatures among unselected ones, defaults,
missing and empty features, duplicates, errors): ours vs tf.io.parse_example.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from hypothesis import given

import tfrecord_engine as tfe
from tests.tf.convert import assert_same_value, ours_outcome, outcome, tf_specs
from tfrecord_engine.testing.examples import ParseCase
from tfrecord_engine.testing.wide import wide_cases


def _tf_parse(tf: ModuleType, case: ParseCase) -> Any:
    return tf.io.parse_example(tf.constant(case.records), tf_specs(tf, case.features))


@given(wide_cases())
def test_wide_records_match_tensorflow(tf: ModuleType, case: ParseCase) -> None:
    tf_ok, theirs = outcome(
        lambda: _tf_parse(tf, case), tf_errors=(tf.errors.InvalidArgumentError,)
    )
    ok, ours = ours_outcome(lambda: tfe.parse_example(case.records, case.features))
    assert ok == tf_ok, f"TF: {theirs!r}\nours: {ours!r}"
    # Error texts are compared in test_parse_differential (where several features of a
    # record fail, TensorFlow reports the first in sorted key order, ours in spec order).
    if ok:
        assert list(ours) == list(case.features)
        for key in theirs:
            assert_same_value(tf, ours[key], theirs[key], key)
