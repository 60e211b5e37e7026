"""``compression="auto"`` reads what TensorFlow's writer produces, whatever the name."""

from __future__ import annotations

import pathlib
from types import ModuleType

import pytest

import tfrecord_engine as tfe


@pytest.mark.parametrize("level", [None, 1, 9])
@pytest.mark.parametrize("kind", ["", "GZIP", "ZLIB"])
def test_auto_reads_tensorflow_files_under_any_name(
    tf: ModuleType, tmp_path: pathlib.Path, kind: str, level: int | None
) -> None:
    records = [b"tf-%d" % i * (i % 7 + 1) for i in range(300)]
    options = tf.io.TFRecordOptions(compression_type=kind, compression_level=level)
    for name in ("plain.tfrecord", "misnamed.gz", "misnamed.zz", "noext"):
        path = tmp_path / f"{kind or 'none'}-{level}-{name}"
        with tf.io.TFRecordWriter(str(path), options) as w:
            for r in records:
                w.write(r)
        assert list(tfe.read_records(path)) == records
        ds = tfe.RecordDataset(path)
        assert ds[[299, 0]] == [records[299], records[0]]
        assert ds.indexes[0].compression.value == kind
