"""The node-local cache of remote shards (``RecordDataset(..., cache_dir=, cache_limit=)``)
against a real S3 store, every request counted by the proxy in front of it."""

from __future__ import annotations

import multiprocessing
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np

import tfrecord_engine as tfe
from tfrecord_engine.storage.cache import ShardCache

from .conftest import S3

FEATURES = {"label": tfe.FixedLenFeature([], "int64")}
PER_SHARD = 200


def _write(s3: S3, shards: int = 3, base: int = 0, pad: int = 100) -> list[str]:
    urls = []
    for s in range(shards):
        url = f"{s3.url}/train-{s:05d}-of-{shards:05d}.tfrecord"
        with tfe.TFRecordWriter(url, index=True) as w:
            w.write_many(
                tfe.encode_example({"label": base + PER_SHARD * s + i, "pad": b"x" * pad})
                for i in range(PER_SHARD)
            )
        urls.append(url)
    return urls


def _labels(ds: tfe.RecordDataset, *, shuffle: bool = False, seed: int = 0) -> list[int]:
    labels: list[int] = np.concatenate(
        [b["label"] for b in ds.batches(64, shuffle=shuffle, seed=seed)]
    ).tolist()
    return labels


def _sizes(urls: list[str]) -> int:
    return sum(tfe.Index.load(u).data_size for u in urls)


def test_later_epochs_and_datasets_read_nothing_from_the_store(
    s3: S3, tmp_path: pathlib.Path
) -> None:
    urls = _write(s3)
    cache = tmp_path / "cache"
    s3.proxy.reset()
    ds = tfe.RecordDataset(f"{s3.url}/train-*", features=FEATURES, cache_dir=cache)
    assert _labels(ds, shuffle=True, seed=1) != list(range(600))
    # The first use copied each shard once (whole-object ranges, no more).
    data_gets = [q for q in s3.proxy.requests if q.method == "GET" and "/train-" in q.path]
    assert sum(q.received for q in data_gets if ".tfeidx" not in q.path) == _sizes(urls)
    s3.proxy.reset()
    assert sorted(_labels(ds, shuffle=True, seed=2)) == list(range(600))
    assert ds[[599, 0]]["label"].tolist() == [599, 0]
    assert s3.proxy.requests == []  # a second epoch: nothing at all
    ds.close()
    again = tfe.RecordDataset(f"{s3.url}/train-*", features=FEATURES, cache_dir=cache)
    assert _labels(again) == list(range(600))
    # A new dataset on a warm cache: the listing and one version query per shard.
    assert s3.proxy.count("GET", match="/train-") == 0
    assert s3.proxy.count("HEAD", match="/train-") == 3
    again.close()


def test_a_replaced_object_is_fetched_again_never_served_stale(
    s3: S3, tmp_path: pathlib.Path
) -> None:
    cache = tmp_path / "cache"
    _write(s3, shards=1)
    with tfe.RecordDataset(f"{s3.url}/train-*", features=FEATURES, cache_dir=cache) as ds:
        assert _labels(ds) == list(range(PER_SHARD))
    # The same size and layout, other records: only the ETag tells them apart.
    _write(s3, shards=1, base=5000)
    with tfe.RecordDataset(f"{s3.url}/train-*", features=FEATURES, cache_dir=cache) as ds:
        assert _labels(ds) == list(range(5000, 5000 + PER_SHARD))
    # The old version was dropped when the new one came in.
    copies = [p for p in os.listdir(cache) if not p.startswith(".") and "tfeidx" not in p]
    assert len(copies) == 1


def test_the_limit_holds_and_what_does_not_fit_is_read_from_the_store(
    s3: S3, tmp_path: pathlib.Path
) -> None:
    urls = _write(s3)
    one = tfe.Index.load(urls[0]).data_size
    limit = 2 * one + 4 * 4096  # two shards and their indexes; not three
    cache = tmp_path / "cache"
    with tfe.RecordDataset(urls, features=FEATURES, cache_dir=cache, cache_limit=limit) as ds:
        assert _labels(ds) == list(range(600))
        assert ShardCache(cache).used_bytes() <= limit
        s3.proxy.reset()
        assert _labels(ds) == list(range(600))
        # Two shards read locally; the third (no room beside the two in use) from the store.
        assert s3.proxy.count("GET", match=urls[2].rsplit("/", 1)[1]) >= 1
        assert s3.proxy.count("GET", match=urls[0].rsplit("/", 1)[1]) == 0
    # Closed: its copies may go. The least recently used one makes room for the third.
    with tfe.RecordDataset(urls[2], features=FEATURES, cache_dir=cache, cache_limit=limit) as ds:
        assert _labels(ds) == list(range(400, 600))
        assert ShardCache(cache).used_bytes() <= limit
    names = sorted(p.split(".tfrecord")[0] for p in os.listdir(cache) if p.startswith("train-"))
    assert names == ["train-00001-of-00003"] * 2 + ["train-00002-of-00003"] * 2


def _open_in_child(pattern: str, cache: str, out: multiprocessing.Queue[object]) -> None:
    ds = tfe.RecordDataset(pattern, features=FEATURES, cache_dir=cache)
    out.put(_labels(ds))
    ds.close()


def test_processes_sharing_a_cache_copy_each_shard_once(s3: S3, tmp_path: pathlib.Path) -> None:
    urls = _write(s3)
    cache = str(tmp_path / "cache")
    s3.proxy.reset()
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue[object] = ctx.Queue()
    children = [
        ctx.Process(target=_open_in_child, args=(f"{s3.url}/train-*", cache, out)) for _ in range(3)
    ]
    for child in children:
        child.start()
    results = [out.get(timeout=120) for _ in children]
    for child in children:
        child.join(30)
        assert child.exitcode == 0
    assert results == [list(range(600))] * 3
    data = [q for q in s3.proxy.requests if q.method == "GET" and q.path.endswith(".tfrecord")]
    assert sum(q.received for q in data) == _sizes(urls)  # one copy of each, not three


_CHILD = """
import sys, tfrecord_engine as tfe
tfe.RecordDataset(sys.argv[1], cache_dir=sys.argv[2]).__len__()
"""


def test_a_killed_fill_leaves_nothing_that_is_served(s3: S3, tmp_path: pathlib.Path) -> None:
    _write(s3, shards=1, pad=20_000)  # ~4 MB: filled in one slow request
    cache = tmp_path / "cache"
    s3.proxy.latency = 1.0
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, f"{s3.url}/train-*", str(cache)], env=dict(os.environ)
    )
    try:
        deadline = time.monotonic() + 60
        while not (cache.exists() and any(p.startswith(".tmp-") for p in os.listdir(cache))):
            assert time.monotonic() < deadline, "the child never started its fill"
            assert child.poll() is None
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)  # mid-fill: a temporary file, nothing published
    finally:
        child.kill()
        child.wait()
    s3.proxy.latency = 0.0
    assert not [p for p in os.listdir(cache) if p.startswith("train-")]
    with tfe.RecordDataset(f"{s3.url}/train-*", features=FEATURES, cache_dir=cache) as ds:
        assert _labels(ds) == list(range(PER_SHARD))
    assert not [p for p in os.listdir(cache) if p.startswith(".tmp-")]  # the dead fill's
