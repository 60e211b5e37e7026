"""``tfe.infer_features`` / ``infer_sequence_features`` over ``s3://`` with their own
``storage_options`` (fsspec's global configuration points at a decoy: ``s3_explicit``)."""

from __future__ import annotations

import tfrecord_engine as tfe

from .conftest import S3Explicit


def test_infer_features_lists_and_reads_s3_with_its_options(s3_explicit: S3Explicit) -> None:
    s3 = s3_explicit
    for s in range(2):
        with tfe.TFRecordWriter(f"{s3.url}/e-{s}.tfrecord", storage_options=s3.options) as w:
            w.write_many(tfe.encode_example({"y": i, "x": [0.5] * 3}) for i in range(5))
    features = tfe.infer_features(f"{s3.url}/e-*", storage_options=s3.options)
    assert features == {
        "x": tfe.FixedLenFeature([3], "float32"),
        "y": tfe.FixedLenFeature([], "int64"),
    }
    # The sample crosses into the second file: both are read with the options.
    assert tfe.infer_features(f"{s3.url}/e-*", 8, storage_options=s3.options) == features


def test_infer_sequence_features_reads_s3_with_its_options(s3_explicit: S3Explicit) -> None:
    s3 = s3_explicit
    url = f"{s3.url}/s.tfrecord"
    with tfe.TFRecordWriter(url, storage_options=s3.options) as w:
        w.write(tfe.encode_sequence_example({"id": 7}, {"v": [[1.0], [2.0]]}))
    context, sequence = tfe.infer_sequence_features(
        url, compression=None, storage_options=s3.options
    )
    assert context == {"id": tfe.FixedLenFeature([], "int64")}
    assert list(sequence) == ["v"]
