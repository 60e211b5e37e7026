"""RawFeature against TensorFlow: ``tf.io.parse_example`` of the bytes, then ``decode_raw``.

TensorFlow has no RawFeature; its way to the same output is parsing
``FixedLenFeature([], tf.string)`` and ``tf.io.decode_raw`` (little-endian) plus a
reshape. ``decode_raw`` offers no uint32, so uint32 is decoded as int32 and bitcast.
"""

from __future__ import annotations

import tempfile
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

import tfrecord_engine as tfe
from tests.tf.bridge_helpers import write_file
from tfrecord_bridge import to_tf_dataset
from tfrecord_engine.example import batch
from tfrecord_engine.example.specs import FeatureSpec
from tfrecord_engine.testing.raw import RawCase, raw_cases

_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]


def _decode_raw(tf: ModuleType, strings: Any, spec: tfe.RawFeature) -> Any:
    """TensorFlow's values for ``spec`` from a string tensor ``[batch]`` (independent of
    the bridge's own helper)."""
    out_type = tf.int32 if spec.dtype == "uint32" else getattr(tf, spec.dtype)
    values = tf.io.decode_raw(
        strings, out_type, little_endian=spec.little_endian, fixed_length=spec.fixed_length
    )
    if spec.dtype == "uint32":
        values = tf.bitcast(values, tf.uint32)
    # The batch size from the strings: -1 cannot be inferred for zero-byte values.
    shape = tf.concat([tf.shape(strings), tf.constant(list(spec.shape), tf.int32)], axis=0)
    return tf.reshape(values, shape)


def _tf_values(tf: ModuleType, case: RawCase, records: list[bytes]) -> np.ndarray:
    # TensorFlow registers no CPU kernel for DecodePaddedRaw of float16 (NotFoundError).
    assume(not (case.spec.fixed_length is not None and case.spec.dtype == "float16"))
    spec = {case.key: tf.io.FixedLenFeature([], tf.string, default_value=case.default_bytes)}
    strings = tf.io.parse_example(tf.constant(records), spec)[case.key]
    out: np.ndarray = _decode_raw(tf, strings, case.spec).numpy()
    return out


def _assert_bitwise(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert ours.tobytes() == theirs.tobytes()


@settings(max_examples=60, suppress_health_check=_SLOW)
@given(case=raw_cases(max_records=8))
def test_values_equal_tf_decode_raw(tf: ModuleType, case: RawCase) -> None:
    ours = tfe.parse_example(case.records, {case.key: case.spec})[case.key]
    _assert_bitwise(ours, _tf_values(tf, case, case.records))


@settings(max_examples=10, suppress_health_check=_SLOW)
@given(case=raw_cases(max_records=6))
def test_lockstep_batches_equal_tf_decode_raw(tf: ModuleType, case: RawCase) -> None:
    records = (case.records * batch.LOCKSTEP_MIN_BATCH)[: batch.LOCKSTEP_MIN_BATCH]
    ours = tfe.parse_example(records, {case.key: case.spec})[case.key]
    _assert_bitwise(ours, _tf_values(tf, case, records))


@pytest.mark.parametrize(
    ("shape", "dtype", "options"),
    [
        ([28, 28], "uint8", {}),
        ([3], "uint32", {}),
        ([2, 2], "float16", {}),
        ([], "float64", {}),
        ([1, 3], "int16", {}),
        # Zero-size outputs (TensorFlow's unbatch crashes on them; the bridge avoids it).
        ([0], "uint8", {}),
        ([2, 0], "float32", {}),
        # decode_raw's options: byte order, bool and complex, fixed_length.
        ([3], "int32", {"little_endian": False}),
        ([2], "complex128", {"little_endian": False}),
        ([4], "bool", {}),
        ([3], "int16", {"fixed_length": 6}),
        ([2], "uint32", {"fixed_length": 8, "little_endian": False}),
    ],
)
def test_bridge_matches_tensorflows_pipeline(
    tf: ModuleType, shape: list[int], dtype: str, options: dict[str, Any]
) -> None:
    spec = tfe.RawFeature(shape, dtype, **options)
    rng = np.random.default_rng(5)
    sizes = rng.integers(0, spec.nbytes + 4, 37) if spec.fixed_length else [spec.nbytes] * 37
    records = [
        tfe.encode_example({"x": rng.bytes(int(n)), "label": i}) for i, n in enumerate(sizes)
    ]
    features: dict[str, FeatureSpec] = {"x": spec, "label": tfe.FixedLenFeature([], "int64")}
    with tempfile.TemporaryDirectory() as tmp:
        path = write_file(tmp, records)
        ours = to_tf_dataset(tfe.RecordDataset(path, features=features), 8)
        strings = {
            "x": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64),
        }

        def parse(b: Any) -> dict[str, Any]:
            out = tf.io.parse_example(b, strings)
            return {"x": _decode_raw(tf, out["x"], spec), "label": out["label"]}

        theirs = tf.data.TFRecordDataset(path).batch(8).map(parse)
        assert ours.element_spec["x"] == tf.TensorSpec([None, *shape], getattr(tf, dtype))
        count = 0
        for a, b in zip(ours, theirs, strict=True):
            _assert_bitwise(a["x"].numpy(), b["x"].numpy())
            np.testing.assert_array_equal(a["label"].numpy(), b["label"].numpy())
            count += int(a["label"].shape[0])
        assert count == len(records)


def test_bridge_default_is_the_defaults_bytes(tf: ModuleType) -> None:
    spec = tfe.RawFeature([2], "int16", default_value=[-3, 9])
    records = [tfe.encode_example({"x": np.array([1, 2], "<i2").tobytes()}), b""]
    with tempfile.TemporaryDirectory() as tmp:
        path = write_file(tmp, records)
        (got,) = to_tf_dataset(tfe.RecordDataset(path, features={"x": spec}), 2)
    assert got["x"].numpy().tolist() == [[1, 2], [-3, 9]]
