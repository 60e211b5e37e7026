"""Our descriptors and bytes against TensorFlow's: same messages, exchangeable bytes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from google.protobuf import descriptor_pb2
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine.example as tfe
from tfrecord_engine.example import protos
from tfrecord_engine.testing.examples import KINDS, feature_values

ROOT = Path(__file__).resolve().parents[2]


def _file_proto(fd: Any) -> descriptor_pb2.FileDescriptorProto:
    out = descriptor_pb2.FileDescriptorProto()
    fd.CopyToProto(out)
    for msg in out.message_type:
        for f in msg.field:
            f.ClearField("json_name")
        for nested in msg.nested_type:
            for f in nested.field:
                f.ClearField("json_name")
    return out


def test_descriptors_equal_tensorflows(tf: ModuleType) -> None:
    ours = [
        _file_proto(protos.Feature.DESCRIPTOR.file),
        _file_proto(protos.Example.DESCRIPTOR.file),
    ]
    theirs = [
        _file_proto(tf.train.Feature.DESCRIPTOR.file),
        _file_proto(tf.train.Example.DESCRIPTOR.file),
    ]
    for a, b in zip(ours, theirs, strict=True):
        assert a.package == b.package == "tensorflow"
        assert list(a.message_type) == list(b.message_type)


_IMPORT_SCRIPT = """
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
{first}
{second}
import tfrecord_engine as tfe
from tfrecord_engine.example import protos
data = tfe.encode_example({{"label": 3, "image": b"abc", "x": [0.5, 1.5]}})
msg = tensorflow.train.Example.FromString(data)
assert list(msg.features.feature["label"].int64_list.value) == [3]
ours = protos.Example.FromString(msg.SerializeToString())
assert ours.features.feature["image"].bytes_list.value[0] == b"abc"
assert protos.Example.DESCRIPTOR.full_name == tensorflow.train.Example.DESCRIPTOR.full_name
print("OK")
"""


@pytest.mark.parametrize("tf_first", [True, False], ids=["tf-first", "tfe-first"])
def test_import_together_in_either_order(tf: ModuleType, tf_first: bool) -> None:
    imports = ["import tensorflow", "import tfrecord_engine.example.protos"]
    first, second = imports if tf_first else imports[::-1]
    script = textwrap.dedent(_IMPORT_SCRIPT.format(first=first, second=second))
    env = {"PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("OK")


@st.composite
def _feature_dicts(draw: st.DrawFn) -> dict[str, tuple[str, list[Any]]]:
    keys = draw(st.lists(st.text(max_size=4), max_size=4, unique=True))
    out = {}
    for key in keys:
        dtype = draw(st.sampled_from(KINDS))
        out[key] = (dtype, draw(feature_values(dtype)))
    return out


def _tf_feature(tf: ModuleType, dtype: str, values: list[Any]) -> Any:
    if dtype == "int64":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    if dtype == "float32":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


def _typed(dtype: str, values: list[Any]) -> Any:
    if dtype == "string":
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr
    return np.array(values, dtype=np.int64 if dtype == "int64" else np.float32)


@given(_feature_dicts())
def test_bytes_exchange_with_tensorflow(
    tf: ModuleType, feats: dict[str, tuple[str, list[Any]]]
) -> None:
    ours = tfe.encode_example({k: _typed(d, v) for k, (d, v) in feats.items()})
    theirs = tf.train.Example(
        features=tf.train.Features(
            feature={k: _tf_feature(tf, d, v) for k, (d, v) in feats.items()}
        )
    )
    # Compare parsed messages, never raw bytes: protobuf's map order is not defined.
    assert tf.train.Example.FromString(ours) == theirs
    decoded = tfe.decode_example(theirs.SerializeToString())
    assert set(decoded) == set(feats)
    for key, (dtype, values) in feats.items():
        np.testing.assert_array_equal(decoded[key], _typed(dtype, values))


@given(
    st.dictionaries(
        st.text(max_size=3),
        st.lists(st.lists(st.integers(-5, 5), max_size=3), max_size=3),
        max_size=3,
    )
)
def test_sequence_bytes_exchange_with_tensorflow(
    tf: ModuleType, lists: dict[str, list[list[int]]]
) -> None:
    data = tfe.encode_sequence_example(
        {"id": 7}, {k: [np.array(step, dtype=np.int64) for step in v] for k, v in lists.items()}
    )
    msg = tf.train.SequenceExample.FromString(data)
    assert list(msg.context.feature["id"].int64_list.value) == [7]
    for key, steps in lists.items():
        got = [list(f.int64_list.value) for f in msg.feature_lists.feature_list[key].feature]
        assert got == steps
    ctx, out = tfe.decode_sequence_example(msg.SerializeToString())
    assert ctx["id"].tolist() == [7]
    assert {k: [s.tolist() for s in v] for k, v in out.items()} == lists
