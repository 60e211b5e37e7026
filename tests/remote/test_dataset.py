"""RecordDataset on URLs: the same records, batches and errors as on local files."""

from __future__ import annotations

import pathlib
import pickle
import secrets

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.data.source import FetcherRecords
from tfrecord_engine.storage import remote
from tfrecord_engine.testing.http_server import RangeServer
from tfrecord_engine.testing.records import compressions, record_lists
from tfrecord_engine.testing.remote import index_batches

fsspec = pytest.importorskip("fsspec")
Served = tuple[pathlib.Path, RangeServer]


def _write(path: str | pathlib.Path, records: list[bytes], compression: str = "") -> None:
    with tfe.TFRecordWriter(path, compression, index=True) as w:
        w.write_many(records)


def _urls(served: Served, mem_root: str, name: str) -> list[str]:
    return [f"{mem_root}/{name}", f"{served[1].url}/{name}"]


@given(
    records=record_lists(max_records=40, max_size=500), compression=compressions(), data=st.data()
)
def test_random_access_and_epochs_equal_local(
    served: Served, mem_shared: str, records: list[bytes], compression: str, data: st.DataObject
) -> None:
    if not records:
        return
    root = served[0]
    name = f"{secrets.token_hex(6)}.tfrecord"
    _write(root / name, records, compression)
    mem_root = mem_shared
    _write(f"{mem_root}/{name}", records, compression)
    local = tfe.RecordDataset(root / name, compression=compression)
    batch = data.draw(index_batches(len(records)))
    batch_size = data.draw(st.integers(1, 16))
    seed = data.draw(st.integers(0, 3))
    expected_epoch = list(local.batches(batch_size, shuffle=True, seed=seed))
    for url in _urls(served, mem_root, name):
        ds = tfe.RecordDataset(url, compression=compression)
        assert len(ds) == len(records)
        assert ds[batch] == local[batch] == [records[i] for i in batch]
        assert ds[-1] == records[-1]
        assert list(ds.batches(batch_size, shuffle=True, seed=seed)) == expected_epoch


def test_parsed_batches_over_http(served: Served, mem: str) -> None:
    root, server = served
    records = [tfe.encode_example({"label": i, "x": np.full(3, i, np.float32)}) for i in range(50)]
    _write(root / "parsed.tfrecord", records)
    features = {"label": tfe.FixedLenFeature([], "int64"), "x": tfe.FixedLenFeature([3], "float32")}
    ds = tfe.RecordDataset(f"{server.url}/parsed.tfrecord", features=features)
    labels = np.concatenate([b["label"] for b in ds.batches(8, shuffle=True, seed=1, epoch=0)])
    assert sorted(labels.tolist()) == list(range(50))
    assert ds[7]["x"].tolist() == [7.0, 7.0, 7.0]
    # Decode workers open the URL themselves (with the parent's index).
    with_workers = [b["label"] for b in ds.batches(8, shuffle=True, seed=1, epoch=0, workers=1)]
    assert np.concatenate(with_workers).tolist() == labels.tolist()
    ds.close()


def test_globs_expand_on_both_backends(served: Served, mem: str) -> None:
    root, server = served
    (root / "shards").mkdir()
    shards = [[f"{s}-{i}".encode() for i in range(5)] for s in range(3)]
    for s, records in enumerate(shards):
        _write(root / "shards" / f"train-{s:05d}-of-00003.tfrecord", records)
        _write(f"{mem}/train-{s:05d}-of-00003.tfrecord", records)
    # A hidden leftover of an interrupted writer matches "train-*" under fnmatch rules.
    fsspec.filesystem("memory").pipe_file(f"{mem.removeprefix('memory://')}/.train-x.tmp-1", b"")
    for pattern in (f"{mem}/train-*", f"{server.url}/shards/train-*.tfrecord"):
        ds = tfe.RecordDataset(pattern)
        assert len(ds.paths) == 3, ds.paths
        assert all(p.endswith("-of-00003.tfrecord") for p in ds.paths)
        assert list(ds) == [r for records in shards for r in records]
    with pytest.raises(FileNotFoundError, match="no file matches"):
        tfe.RecordDataset(f"{mem}/valid-*")


def test_damage_over_http_names_url_record_and_offset(served: Served) -> None:
    root, server = served
    records = [bytes([i]) * 20 for i in range(30)]
    _write(root / "bad.tfrecord", records)
    blob = bytearray((root / "bad.tfrecord").read_bytes())
    blob[12 * 36 + 15] ^= 4  # record 12's payload; the header (and the index) stay valid
    (root / "bad.tfrecord").write_bytes(bytes(blob))
    tfe.Index.build(root / "bad.tfrecord").save()  # a fresh index: the damage is in data
    url = f"{server.url}/bad.tfrecord"
    ds = tfe.RecordDataset(url)
    assert ds[[11, 13]] == [records[11], records[13]]
    with pytest.raises(tfe.CorruptedRecordError) as err:
        ds[[3, 12]]
    assert (err.value.path, err.value.record_index, err.value.offset) == (url, 12, 12 * 36)
    assert len(ds[0:12]) == 12


def test_a_dataset_of_urls_pickles(mem: str) -> None:
    _write(f"{mem}/a.tfrecord", [b"a", b"b", b"c"])
    ds = tfe.RecordDataset(f"{mem}/a.tfrecord", max_gap=None)
    assert ds[1] == b"b"
    clone = pickle.loads(pickle.dumps(ds))
    assert clone.max_gap is None
    assert clone[[2, 0]] == [b"c", b"a"]
    with pytest.raises(tfe.InvalidArgumentError, match="max_gap"):
        tfe.RecordDataset(f"{mem}/a.tfrecord", max_gap=-1)


def _mnist_like(path: pathlib.Path, n: int) -> list[bytes]:
    rng = np.random.default_rng(0)
    blob = rng.integers(0, 256, size=n * 856, dtype=np.uint8).tobytes()
    records = [blob[i * 856 : (i + 1) * 856] for i in range(n)]
    _write(path, records)
    return records


def test_request_counts_of_a_random_batch_and_of_an_epoch(served: Served) -> None:
    """The issue's numbers: 70,000 856-byte records over HTTP, a random batch of 1,024."""
    root, server = served
    n = 70_000
    records = _mnist_like(root / "mnist.tfrecord", n)
    url = f"{server.url}/mnist.tfrecord"
    batch = np.random.default_rng(1).choice(n, 1024, replace=False)
    expected = [records[i] for i in batch.tolist()]
    counts = {}
    for label, gap in [("none", None), ("touching", 0), ("default", remote.DEFAULT_MAX_GAP)]:
        ds = tfe.RecordDataset(url, max_gap=gap)
        len(ds)  # load the index first
        server.reset()
        assert ds[batch] == expected
        counts[label] = server.count("GET")
        reader = ds._open()[0]
        assert isinstance(reader, FetcherRecords)
        assert reader.requests == counts[label]
    assert counts["none"] == 1024
    assert counts["default"] < counts["touching"] <= counts["none"]
    assert counts["default"] < 450  # ~1 - exp(-64 KiB / 58 KB) of the gaps are merged
    # A sequential epoch: one request per read-ahead chunk of 4,096 records.
    ds = tfe.RecordDataset(url)
    len(ds)
    server.reset()
    assert sum(len(b) for b in ds.batches(1024)) == n
    assert server.count("GET") == -(-n // 4096) == 18
    print(f"\nrequests for 1,024 random records of {n}: {counts}; sequential epoch: 18")


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_random_access_fetches_one_restart_block(
    served: Served, compression: str
) -> None:
    root, server = served
    records = [i.to_bytes(4, "little") * 50 for i in range(2000)]
    name = f"restarts-{compression}.tfrecord"
    _write(root / name, records, compression)  # a restart point every 256 records
    ds = tfe.RecordDataset(f"{server.url}/{name}", compression=compression)
    idx = ds.indexes[0]
    server.reset()
    assert ds[[1500, 1501]] == records[1500:1502]
    ranged = [q.range for q in server.requests if q.range is not None]
    assert len(ranged) == 1  # one block, not the file
    block = ranged[0]
    assert block[0] == int(idx.restarts[1500 // 256 - 1, 0])
    assert block[1] - block[0] < (root / name).stat().st_size // 4
