"""``tfrecord_bridge.to_tf_dataset`` over ``s3://`` datasets with their own
``storage_options``, fsspec's global configuration pointing at a decoy (``s3_explicit``):
the same batches as TensorFlow's ``TFRecordDataset(...).batch(n).map(parse_example)`` over
a local copy of the records, in order, shuffled, from a mix, and with decode workers."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe

from ..tf.conftest import tf  # noqa: F401 - TensorFlow, or a skip (TFE_REQUIRE_TF: an error)
from .conftest import S3Explicit

pytestmark = pytest.mark.tf

FEATURES = {
    "label": tfe.FixedLenFeature([], "int64"),
    "tags": tfe.VarLenFeature("int64"),
    "name": tfe.FixedLenFeature([], "string"),
}


def _examples(first: int, n: int) -> list[bytes]:
    return [
        tfe.encode_example(
            {"label": i, "tags": np.arange(i % 4, dtype=np.int64), "name": f"n{i}".encode()}
        )
        for i in range(first, first + n)
    ]


def _write(s3: S3Explicit, local: Path, name: str, records: list[bytes]) -> str:
    with tfe.TFRecordWriter(
        f"{s3.url}/{name}.tfrecord", index=True, storage_options=s3.options
    ) as w:
        w.write_many(records)
    with tfe.TFRecordWriter(str(local / f"{name}.tfrecord")) as w:
        w.write_many(records)
    return f"{s3.url}/{name}.tfrecord"


def _plain(batch: dict[str, Any]) -> dict[str, Any]:
    """A batch as numpy values (a sparse tensor as its indices and values)."""
    out: dict[str, Any] = {}
    for k, v in batch.items():
        if hasattr(v, "indices"):
            out[k] = (v.indices.numpy().tolist(), v.values.numpy().tolist())
        else:
            out[k] = v.numpy().tolist()
    return out


def test_to_tf_dataset_reads_s3_with_the_datasets_options(
    tf: ModuleType,  # noqa: F811 - the fixture imported above
    s3_explicit: S3Explicit,
    tmp_path: Path,
) -> None:
    from tfrecord_bridge import to_tf_dataset

    s3 = s3_explicit
    a = _write(s3, tmp_path, "a", _examples(0, 50))
    b = _write(s3, tmp_path, "b", _examples(50, 30))
    ds = tfe.RecordDataset(f"{s3.url}/*.tfrecord", features=FEATURES, storage_options=s3.options)
    assert ds.paths == [a, b]

    spec = {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "tags": tf.io.VarLenFeature(tf.int64),
        "name": tf.io.FixedLenFeature([], tf.string),
    }
    native = (
        tf.data.TFRecordDataset([str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")])
        .batch(16)
        .map(lambda x: tf.io.parse_example(x, spec))
    )
    want = [_plain(x) for x in native]
    assert [_plain(x) for x in to_tf_dataset(ds, 16)] == want
    assert [_plain(x) for x in to_tf_dataset(ds, 16, readahead=1)] == want

    # Shuffled, and decoded by worker processes (fresh interpreters: FSSPEC_S3 names
    # the decoy there; the pickled dataset brings its options).
    shuffled = [_plain(x) for x in to_tf_dataset(ds, 16, shuffle=True, seed=3, workers=2)]
    engine = [b["label"].tolist() for b in ds.batches(16, shuffle=True, seed=3, epoch=0)]
    assert [x["label"] for x in shuffled] == engine
    assert sorted(np.concatenate(engine).tolist()) == list(range(80))

    # A mix of two datasets, each with its options.
    left = tfe.RecordDataset(a, features=FEATURES, storage_options=s3.options)
    right = tfe.RecordDataset(b, features=FEATURES, storage_options=s3.options)
    mix = tfe.sample_from_datasets([left, right], weights=[0.5, 0.5], seed=1)
    labels = [v for x in to_tf_dataset(mix, 10) for v in x["label"].numpy().tolist()]
    assert sorted(labels) == sorted(
        int(b["label"][i]) for b in mix.batches(10) for i in range(len(b["label"]))
    )
    assert len(labels) == len(mix)
    ds.close()
