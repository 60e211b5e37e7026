"""TensorFlow reads what WriteTFRecords writes: the same records, byte for byte."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from ..optional import require


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_tf_reads_the_shards_of_write_tfrecords(
    tf: ModuleType, tmp_path: Path, compression: str | None
) -> None:
    beam = require("apache_beam")
    from tfrecord_engine.beam import WriteTFRecords

    records = [bytes([i % 256]) * (i % 37) for i in range(500)]
    with beam.Pipeline(runner="DirectRunner") as p:
        _ = (
            p
            | beam.Create(records)
            | WriteTFRecords(
                str(tmp_path / "train"),
                num_shards=3,
                compression=compression,
                file_name_suffix=".tfrecord",
            )
        )
    # The suffix keeps the index sidecars (.tfeidx) out of TensorFlow's glob.
    files = tf.io.gfile.glob(str(tmp_path / "train-*-of-00003.tfrecord"))
    assert len(files) == 3
    ds = tf.data.TFRecordDataset(sorted(files), compression_type=compression or "")
    got = [r.numpy() for r in ds]
    assert sorted(got) == sorted(records)
