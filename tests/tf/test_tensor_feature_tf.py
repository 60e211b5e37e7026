"""``tfe.TensorFeature`` against TensorFlow's way to the same values:
``tf.io.parse_example`` of the bytes, then ``tf.io.parse_tensor`` per record."""

from __future__ import annotations

from types import ModuleType

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.testing.tensors import TENSOR_DTYPES, tensor_arrays


@settings(
    max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(data=st.data())
def test_values_equal_parse_tensor_per_record(tf: ModuleType, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(TENSOR_DTYPES))
    arrays = data.draw(st.lists(tensor_arrays((dtype,)), min_size=1, max_size=5))
    records = [tfe.encode_example({"t": tf.io.serialize_tensor(a).numpy()}) for a in arrays]
    ours = tfe.parse_example(records, {"t": tfe.TensorFeature(dtype)})["t"]
    strings = tf.io.parse_example(tf.constant(records), {"t": tf.io.FixedLenFeature([], tf.string)})
    tf_dtype = tf.string if dtype == "string" else tf.dtypes.as_dtype(dtype)
    theirs = [tf.io.parse_tensor(s, tf_dtype).numpy() for s in strings["t"]]
    got = list(ours)
    assert len(got) == len(theirs)
    for mine, value in zip(got, theirs, strict=True):
        # A stacked batch of string scalars holds bytes, not 0-d arrays.
        a = np.asarray(mine, dtype=object) if dtype == "string" else mine
        b = np.asarray(value, dtype=object) if dtype == "string" else np.asarray(value)
        assert a.shape == b.shape
        if dtype == "string":
            assert a.tolist() == b.tolist()
        else:
            assert a.dtype == b.dtype
            assert a.tobytes() == b.tobytes()
