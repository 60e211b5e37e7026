"""The per-call paths (``example/single.py``: walk, compiled layouts, small batches) vs
TensorFlow on the same bytes: whatever they accept, TensorFlow parses to the same values.

Records are generated for scalar specs and then mutated byte by byte at the same length,
which exercises the per-length layouts (tests/test_single.py checks the same against the
exact path).
"""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any

import numpy as np
from hypothesis import given, settings

from tests.test_single import scalar_records
from tests.tf.convert import assert_same_value, tf_specs
from tfrecord_engine.example.single import SingleDecoder


def _theirs(tf: ModuleType, fn: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn()
        except (tf.errors.InvalidArgumentError, ValueError):
            return None


@settings(max_examples=40)
@given(scalar_records())
def test_per_call_paths_match_tensorflow(
    tf: ModuleType, case: tuple[dict[str, Any], list[bytes]]
) -> None:
    features, records = case
    specs = tf_specs(tf, features)
    decoder = SingleDecoder(features)
    for record in records:
        got = decoder.sample(record)
        if got is None:
            continue
        want = _theirs(tf, lambda r=record: tf.io.parse_single_example(tf.constant(r), specs))
        assert want is not None, "accepted a record TensorFlow rejects"
        assert list(got) == list(features)
        for key, value in got.items():
            theirs = want[key].numpy()
            if isinstance(value, bytes):
                assert value == theirs
            else:
                assert value.dtype == theirs.dtype
                assert np.array_equal(value, theirs, equal_nan=value.dtype.kind == "f")
    columns = decoder.columns(records)
    if columns is not None:
        want = _theirs(tf, lambda: tf.io.parse_example(tf.constant(records), specs))
        assert want is not None, "accepted a batch TensorFlow rejects"
        for key in want:
            assert_same_value(tf, columns[key], want[key], key)
