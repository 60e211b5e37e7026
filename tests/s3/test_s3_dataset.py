"""RecordDataset over ``s3://`` on a real S3 store: the same records, batches and epochs
as over the same files on local disk."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import tfrecord_engine as tfe

from .conftest import S3

FEATURES = {"label": tfe.FixedLenFeature([], "int64"), "x": tfe.FixedLenFeature([3], "float32")}


def _shards(s3: S3, local: pathlib.Path, compression: str = "") -> tuple[str, str]:
    """Three shards of 300 Examples, on the store and on disk; their two globs."""
    for s in range(3):
        rows = [
            tfe.encode_example({"label": 1000 * s + i, "x": np.full(3, i, np.float32)})
            for i in range(300)
        ]
        name = f"train-{s:05d}-of-00003.tfrecord"
        for target in (f"{s3.url}/{name}", str(local / name)):
            with tfe.TFRecordWriter(target, compression, index=True) as w:
                w.write_many(rows)
    return f"{s3.url}/train-*", str(local / "train-*")


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_random_access_and_epochs_equal_local_files(
    s3: S3, tmp_path: pathlib.Path, compression: str
) -> None:
    remote_glob, local_glob = _shards(s3, tmp_path, compression)
    ds = tfe.RecordDataset(remote_glob, features=FEATURES)
    local = tfe.RecordDataset(local_glob, features=FEATURES)
    assert len(ds) == len(local) == 900
    picks = [899, 0, 450, 301, 7, 7]
    assert ds[picks]["label"].tolist() == local[picks]["label"].tolist()
    assert ds[-1]["label"] == 2299
    in_order = np.concatenate([b["label"] for b in ds.batches(64)])
    assert in_order.tolist() == [1000 * s + i for s in range(3) for i in range(300)]
    shuffled = [b["label"].tolist() for b in ds.batches(50, shuffle=True, seed=3, epoch=1)]
    expected = [b["label"].tolist() for b in local.batches(50, shuffle=True, seed=3, epoch=1)]
    assert shuffled == expected
    assert sorted(x for b in shuffled for x in b) == in_order.tolist()
    ds.close()
    local.close()


def test_decode_workers_read_the_store_themselves(s3: S3, tmp_path: pathlib.Path) -> None:
    remote_glob, local_glob = _shards(s3, tmp_path)
    ds = tfe.RecordDataset(remote_glob, features=FEATURES)
    local = tfe.RecordDataset(local_glob, features=FEATURES)
    got = [b["label"].tolist() for b in ds.batches(64, shuffle=True, seed=5, workers=2)]
    want = [b["label"].tolist() for b in local.batches(64, shuffle=True, seed=5)]
    assert got == want
    ds.close()
    local.close()


def test_a_sequential_epoch_coalesces_its_requests(s3: S3, tmp_path: pathlib.Path) -> None:
    remote_glob, _ = _shards(s3, tmp_path)
    ds = tfe.RecordDataset(remote_glob)
    assert len(ds) == 900  # indexes loaded: from here on, data requests only
    s3.proxy.reset()
    assert sum(len(b) for b in ds.batches(100)) == 900
    # One ranged GET per shard and chunk (a chunk of 4,096 records spans each shard).
    assert s3.proxy.count("GET", ranged=True, match="/train-") == 3
    assert s3.proxy.count("GET", ranged=False) == 0
    ds.close()


def test_a_sequential_epoch_reads_ahead_each_byte_once(s3: S3) -> None:
    """Shards of several chunks: the read-ahead (next spans in flight, into the next
    shard) returns every record in order and fetches every byte exactly once."""
    rng = np.random.default_rng(7)
    records = [rng.bytes(500) for _ in range(16_000)]  # chunks of 4,096: ~2 MB
    urls = [f"{s3.url}/big-{s}.tfrecord" for s in range(2)]
    for s, url in enumerate(urls):
        with tfe.TFRecordWriter(url, index=True) as w:
            w.write_many(records[12_000 * s : 12_000 + 4_000 * s])
    ds = tfe.RecordDataset(urls)
    total = sum(idx.data_size for idx in ds.indexes)
    s3.proxy.reset()
    s3.proxy.latency = 0.05  # a store's time to first byte: requests overlap, or wait
    assert [r for b in ds.batches(1024) for r in b] == records
    assert s3.proxy.received(match="/big-") == total
    assert s3.proxy.most_in_flight >= 2  # before: one chunk's request at a time
    ds.close()
