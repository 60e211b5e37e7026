"""The tf.data bridge over a view of a dataset, and index columns against TensorFlow's
parser (issue 33, item 3)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
from hypothesis import given, settings

import tfrecord_engine as tfe
from tfrecord_bridge import to_tf_dataset
from tfrecord_engine.index.scalars import OK, scalars_of
from tfrecord_engine.testing.columns import column_records

SPEC = {"i": tfe.FixedLenFeature([], "int64"), "label": tfe.FixedLenFeature([], "int64")}


def test_to_tf_dataset_over_a_view(tf: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path, index=True, index_columns=["label"]) as w:
        w.write_many(tfe.encode_example({"i": [i], "label": [i % 4]}) for i in range(40))
    view = tfe.RecordDataset(path, features=SPEC).where(label=3).skip(2)
    got = to_tf_dataset(view, 3)
    values = np.concatenate([b["i"].numpy() for b in got]).tolist()
    assert values == [11, 15, 19, 23, 27, 31, 35, 39]
    assert int(got.cardinality()) == 3
    shuffled = to_tf_dataset(view, 3, shuffle=True, seed=1)
    assert sorted(np.concatenate([b["i"].numpy() for b in shuffled]).tolist()) == values


@settings(max_examples=20)
@given(column_records(keys=("label",), max_records=6))
def test_index_column_values_are_what_tensorflow_parses(
    tf: ModuleType, records: list[bytes]
) -> None:
    for record in records:
        status, _, value = scalars_of(record, {b"label": 0})[0]
        for dtype in (tf.int64, tf.string):
            spec = {"label": tf.io.FixedLenFeature([], dtype)}
            try:
                parsed = tf.io.parse_single_example(record, spec)["label"].numpy()
            except (tf.errors.InvalidArgumentError, ValueError):
                assert status != OK or type(value) is not (int if dtype == tf.int64 else bytes)
                continue
            assert status == OK, (record, dtype)
            assert parsed == value, (record, dtype)
