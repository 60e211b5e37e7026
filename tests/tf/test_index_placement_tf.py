"""TensorFlow's usual shard glob reads a folder after our reads and writes (no index in it)."""

from __future__ import annotations

import pathlib
from types import ModuleType

import pytest

import tfrecord_engine as tfe

SHARDS = [f"train-{i:05d}-of-00004.tfrecord" for i in range(4)]


def _records(shard: int) -> list[bytes]:
    return [b"shard%d-%d" % (shard, i) * (i + 1) for i in range(3 + shard)]


def _tf_read(tf: ModuleType, pattern: str, kind: str) -> list[bytes]:
    files = tf.io.gfile.glob(pattern)
    return [t.numpy() for t in tf.data.TFRecordDataset(sorted(files), compression_type=kind)]


@pytest.mark.parametrize("kind", ["", "GZIP", "ZLIB"])
@pytest.mark.parametrize("index", [True, False])
def test_tensorflow_glob_reads_the_folder_after_our_writes_and_reads(
    tf: ModuleType, tmp_path: pathlib.Path, kind: str, index: bool
) -> None:
    want = [r for i in range(len(SHARDS)) for r in _records(i)]
    for i, name in enumerate(SHARDS):
        with tfe.TFRecordWriter(tmp_path / name, kind, index=index) as w:
            w.write_many(_records(i))
    pattern = str(tmp_path / "train-*")
    assert sorted(tf.io.gfile.glob(pattern)) == [str(tmp_path / n) for n in SHARDS]
    assert _tf_read(tf, pattern, kind) == want
    # Our reads (random access and an epoch, through indexes) leave the folder as it was.
    ds = tfe.RecordDataset(pattern, compression=kind)
    assert len(ds) == len(want)
    assert ds[[len(want) - 1, 0]] == [want[-1], want[0]]
    assert sorted(r for b in ds.batches(5, shuffle=True) for r in b) == sorted(want)
    assert sorted(tf.io.gfile.glob(pattern)) == [str(tmp_path / n) for n in SHARDS]
    assert _tf_read(tf, pattern, kind) == want
    assert _tf_read(tf, str(tmp_path / "*.tfrecord"), kind) == want


def test_the_old_placement_is_what_broke_tensorflow(tf: ModuleType, tmp_path: pathlib.Path) -> None:
    # Why indexes moved: a sidecar at <file>.tfeidx is picked up by "train-*".
    for i, name in enumerate(SHARDS):
        with tfe.TFRecordWriter(tmp_path / name) as w:
            w.write_many(_records(i))
        tfe.Index.build(tmp_path / name).save(placement="beside")
    with pytest.raises(tf.errors.DataLossError):
        _tf_read(tf, str(tmp_path / "train-*"), "")
