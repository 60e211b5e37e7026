"""TensorFlow reads what ``write_tfrecords`` publishes, and writes the same bytes."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import cast

import pytest

import tfrecord_engine as tfe

from ..optional import require

require("ray")
from tfrecord_engine import ray as tr  # noqa: E402 - after the skip

pytestmark = pytest.mark.tf

RECORDS = [b"", *(bytes(range(i % 256)) * (1 + i % 3) for i in range(300))]


@pytest.fixture(scope="module")
def tf() -> ModuleType:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if os.environ.get("TFE_REQUIRE_TF") == "1":
        import tensorflow

        return cast(ModuleType, tensorflow)
    module: ModuleType = pytest.importorskip("tensorflow")
    return module


def test_shards_are_byte_identical_to_tensorflows_writer(
    ray_local: ModuleType, tf: ModuleType, tmp_path: Path
) -> None:
    ds = ray_local.data.from_items([{"record": r} for r in RECORDS], override_num_blocks=2)
    paths = tr.write_tfrecords(ds, tmp_path / "out", num_rows_per_file=120)
    got: list[bytes] = []
    for i, path in enumerate(paths):
        records = [t.numpy() for t in tf.data.TFRecordDataset(path)]
        theirs = str(tmp_path / f"tf-{i}.tfrecord")
        with tf.io.TFRecordWriter(theirs) as w:
            for r in records:
                w.write(r)
        assert Path(path).read_bytes() == Path(theirs).read_bytes()
        got += records
    assert got == RECORDS
    # A shard glob sees the data and its sidecars; TensorFlow reads the data ones.
    data = tf.io.gfile.glob(str(tmp_path / "out" / "part-*.tfrecord"))
    assert sorted(data) == paths


def test_tensorflow_reads_gzip_shards(
    ray_local: ModuleType, tf: ModuleType, tmp_path: Path
) -> None:
    ds = ray_local.data.from_items([{"record": r} for r in RECORDS], override_num_blocks=1)
    paths = tr.write_tfrecords(ds, tmp_path / "gz", compression="GZIP")
    got = [t.numpy() for t in tf.data.TFRecordDataset(paths, compression_type="GZIP")]
    assert got == RECORDS == list(tfe.read_records(paths[0], "GZIP"))


def test_rays_own_reader_reads_the_shards(
    ray_local: ModuleType, tf: ModuleType, tmp_path: Path
) -> None:
    rows = [{"i": i, "name": b"n%d" % i} for i in range(30)]
    ds = ray_local.data.from_items(rows, override_num_blocks=3)
    tr.write_tfrecords(ds, tmp_path / "out")
    # The sidecars sit beside the shards: Ray's folder read must leave them out.
    back = ray_local.data.read_tfrecords(str(tmp_path / "out"), file_extensions=["tfrecord"])
    got = sorted((r["i"], r["name"]) for r in back.take_all())
    assert got == [(i, b"n%d" % i) for i in range(30)]
