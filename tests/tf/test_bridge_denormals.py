"""Subnormal float32 values through the bridge: TensorFlow runs ``numpy_function`` calls
with denormals flushed to zero, and the engine's work there must not be."""

from __future__ import annotations

import tempfile
from types import ModuleType

import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.tf.bridge_helpers import assert_same_batch, native, write_file
from tests.tf.convert import tf_specs
from tfrecord_bridge import to_tf_dataset
from tfrecord_bridge.fpenv import default_floats

# The smallest subnormal, the largest, a negative one, and 12 ulps (1.7e-44).
SUBNORMAL = np.array([1, 0x007FFFFF, 0x80000005, 12], np.uint32).view(np.float32)


@pytest.mark.parametrize("chunk", [None, 1])
def test_subnormal_defaults_and_values_are_kept(tf: ModuleType, chunk: int | None) -> None:
    # Found by the wide specs' differential test: a FixedLenFeature default of 1.7e-44
    # became 0.0 (numpy's float64 -> float32 conversion in TensorFlow's thread).
    features = {
        "values": tfe.FixedLenFeature([4], "float32"),
        "some": tfe.VarLenFeature("float32"),
        "missing": tfe.FixedLenFeature([4], "float32", default_value=[float(v) for v in SUBNORMAL]),
    }
    one = {"one": tfe.FixedLenFeature([], "float32", default_value=float(SUBNORMAL[3]))}
    records = [
        tfe.encode_example({"values": SUBNORMAL, "some": SUBNORMAL[: i % 4 + 1]}) for i in range(9)
    ]
    with tempfile.TemporaryDirectory() as d:
        path = write_file(d, records)
        ds = tfe.RecordDataset(path, features={**features, **one})
        ours = list(to_tf_dataset(ds, 4, chunk_batches=chunk))
        theirs = list(native(tf, path, features, 4))
        assert len(ours) == len(theirs) == 3
        for a, b in zip(ours, theirs, strict=True):
            assert_same_batch(tf, {k: a[k] for k in b}, b)
        bits = ours[0]["missing"].numpy().view(np.uint32)
        assert bits.tolist() == [SUBNORMAL.view(np.uint32).tolist()] * 4
        # A scalar default as tf.io.parse_example gives it called eagerly (TensorFlow's
        # own tf.data pipeline flushes this one to 0.0).
        eager = tf.io.parse_example(tf.constant(records[:4]), tf_specs(tf, one))["one"]
        assert eager.numpy().view(np.uint32).tolist() == [12] * 4
        assert ours[0]["one"].numpy().view(np.uint32).tolist() == [12] * 4
        ds.close()


def test_default_floats_lifts_the_flush_of_the_thread_and_restores_it(tf: ModuleType) -> None:
    # Inside a TensorFlow op's thread the flush is on; inside the block it is off; after
    # the block the thread's own mode is back.
    tiny = float(SUBNORMAL[3])

    def converted(_: object) -> np.ndarray:
        before = np.float32(tiny)
        with default_floats():
            inside = np.float32(tiny)
        after = np.float32(tiny)
        return np.array([before, inside, after], np.float32).view(np.uint32).astype(np.int64)

    got = (
        tf.data.Dataset.range(1)
        .map(lambda x: tf.numpy_function(converted, [x], tf.int64))
        .get_single_element()
    )
    assert got.numpy().tolist() == [0, 12, 0]
    assert np.float32(tiny).view(np.uint32) == 12  # (this thread never flushed)
