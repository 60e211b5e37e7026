"""Lockstep-sized batches (>= 1024 records) vs ``tf.io.parse_example`` on the same bytes.

The other differential tests use small batches, which take the exact per-record path;
these tile their records into batches large enough for the lockstep decoder.
"""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

import tfrecord_engine.example as tfe
from tests.tf.convert import assert_same_value, ours_outcome, outcome, tf_specs
from tfrecord_engine.example.batch import LOCKSTEP_MIN_BATCH
from tfrecord_engine.example.specs import FeatureSpec
from tfrecord_engine.testing.examples import ParseCase, parse_cases, serialize_example


def _compare(tf: ModuleType, records: list[bytes], features: dict[str, FeatureSpec]) -> None:
    specs = tf_specs(tf, features)

    def theirs() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return tf.io.parse_example(tf.constant(records), specs)

    tf_ok, want = outcome(theirs, tf_errors=(tf.errors.InvalidArgumentError, ValueError))
    ok, got = ours_outcome(lambda: tfe.parse_example(records, features))
    assert ok == tf_ok, f"TF: {want!r}\nours: {got!r}"
    if ok:
        assert set(got) == set(want)
        for key in want:
            assert_same_value(tf, got[key], want[key], key)


@settings(max_examples=30)
@given(parse_cases(max_batch=5))
def test_tiled_cases_match_tensorflow(tf: ModuleType, case: ParseCase) -> None:
    reps = -(-LOCKSTEP_MIN_BATCH // len(case.records))
    _compare(
        tf, (case.records * reps)[: max(LOCKSTEP_MIN_BATCH, len(case.records))], dict(case.features)
    )


@pytest.mark.parametrize("dtype", ["int64", "float32", "string"])
def test_keys_in_a_different_order_per_record(tf: ModuleType, dtype: str) -> None:
    values: dict[str, list[Any]] = {
        "int64": [[1], [2, -3], [2**63 - 1]],
        "float32": [[1.5], [2.0, -3.0], [np.float32(1e-30).item()]],
        "string": [[b"a"], [b"bc", b""], [b"d"]],
    }
    v0, v1, v2 = values[dtype]
    records = [
        serialize_example([("k", ("int64", [0])), ("x", (dtype, v0))]),
        serialize_example([("x", (dtype, v1)), ("k", ("int64", [1]))]),
        serialize_example([("u", ("int64", [5])), ("v", None), ("x", (dtype, v2))]),
    ] * (LOCKSTEP_MIN_BATCH // 3 + 1)
    features: dict[str, FeatureSpec] = {
        "x": tfe.VarLenFeature(dtype),
        "k": tfe.FixedLenFeature([], "int64", default_value=-1),
    }
    _compare(tf, records, features)
