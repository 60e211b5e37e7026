"""The node-local shard cache (``storage/cache.py``, ``data/remote_cache.py``) against the
loopback HTTP server: bounded, never torn, never stale, shared."""

from __future__ import annotations

import os
import pathlib
import pickle
import secrets
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings

import tfrecord_engine as tfe
from tfrecord_engine.storage.cache import ShardCache
from tfrecord_engine.storage.retry import RetryPolicy, set_default_retry_policy
from tfrecord_engine.testing.http_server import RangeServer
from tfrecord_engine.testing.shard_cache import cache_plans

Served = tuple[pathlib.Path, RangeServer]


@pytest.fixture
def server(served: Served) -> Iterator[RangeServer]:
    served[1].reset()
    yield served[1]
    served[1].heal()
    served[1].reset()


def _shards(served: Served, n: int = 3, per: int = 100, tag: str = "") -> list[str]:
    root, server = served
    folder = f"s-{secrets.token_hex(4)}"
    (root / folder).mkdir()
    urls = []
    for s in range(n):
        name = f"{folder}/train-{s}.tfrecord"
        with tfe.TFRecordWriter(root / name, index=True) as w:
            w.write_many(f"{tag}{s}-{i}".encode() * 20 for i in range(per))
        urls.append(f"{server.url}/{name}")
    return urls


def _records(n: int, per: int = 100, tag: str = "") -> list[bytes]:
    return [f"{tag}{s}-{i}".encode() * 20 for s in range(n) for i in range(per)]


def test_a_second_epoch_and_dataset_read_only_versions(
    served: Served, server: RangeServer, tmp_path: pathlib.Path
) -> None:
    urls = _shards(served)
    ds = tfe.RecordDataset(urls, cache_dir=tmp_path / "c")
    assert [r for b in ds.batches(32, shuffle=True, seed=0) for r in b] != _records(3)
    server.reset()
    assert [r for b in ds.batches(32) for r in b] == _records(3)
    assert server.requests == []
    ds.close()
    again = tfe.RecordDataset(urls, cache_dir=tmp_path / "c")
    assert again[[299, 0]] == [_records(3)[299], _records(3)[0]]
    assert [q.method for q in server.requests] == ["HEAD"] * 3  # index cached too
    # A pickled copy (a DataLoader worker's) gets the versions: it asks nothing.
    server.reset()
    copy = pickle.loads(pickle.dumps(again))
    assert copy[150] == _records(3)[150]
    assert server.requests == []
    again.close()
    copy.close()


def test_a_replaced_file_is_fetched_again(
    served: Served, server: RangeServer, tmp_path: pathlib.Path
) -> None:
    urls = _shards(served, n=1)
    with tfe.RecordDataset(urls, cache_dir=tmp_path) as ds:
        assert ds[0] == _records(1)[0]
    path = served[0] / urls[0].removeprefix(server.url + "/")
    with tfe.TFRecordWriter(path, index=True) as w:  # same size and layout, new records
        w.write_many(f"X{0}-{i}".encode() * 20 for i in range(100))
    with tfe.RecordDataset(urls, cache_dir=tmp_path) as ds:
        assert ds[0] == _records(1, tag="X")[0]
    assert len([p for p in os.listdir(tmp_path) if p.startswith("train-0.tfrecord.")]) == 2


def test_objects_without_a_version_are_read_from_the_store(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("fsspec")
    from tfrecord_engine.testing.remote import memory_dir

    with memory_dir() as mem:
        url = f"{mem}/a.tfrecord"
        with tfe.TFRecordWriter(url, index=True) as w:
            w.write_many([b"a", b"b"])
        with tfe.RecordDataset(url, cache_dir=tmp_path) as ds:
            assert ds[[1, 0]] == [b"b", b"a"]
            assert ds._cache is not None
            assert ds._cache.cache.stats.uncached == 1
    assert [p for p in os.listdir(tmp_path) if not p.startswith(".")] == []


def test_a_dead_fill_and_a_dead_pin_are_cleared_never_served(
    served: Served, server: RangeServer, tmp_path: pathlib.Path
) -> None:
    first, second = _shards(served, n=2)
    cache = ShardCache(tmp_path)
    copy = cache.get(first)
    assert copy is not None
    cache.close()
    size = copy.size
    # A process killed mid-fill left its temporary file (its lock died with it); the
    # copy itself is not there.
    os.remove(copy.data_path)
    torn = tmp_path / f".tmp-deadbeef0000-{os.path.basename(copy.data_path)}"
    torn.write_bytes(b"\0" * size)
    with tfe.RecordDataset(first, cache_dir=tmp_path) as ds:
        assert ds[99] == _records(1)[99]  # filled again, the torn file never served
    assert not torn.exists()
    # A process killed while using the copy left its pin file: it protects nothing.
    dead_pin = tmp_path / ".pins" / "1-dead"
    dead_pin.write_text(os.path.basename(copy.data_path) + "\n")
    room = ShardCache(tmp_path, limit=size + 8192)  # one shard and its index
    assert room.get(second) is not None
    assert not os.path.exists(copy.data_path)
    assert not dead_pin.exists()
    room.close()


def test_a_failed_fill_publishes_nothing_and_frees_its_room(
    served: Served, server: RangeServer, tmp_path: pathlib.Path
) -> None:
    (url,) = _shards(served, n=1)
    previous = set_default_retry_policy(RetryPolicy(attempts=2, initial=0.001, maximum=0.002))
    try:
        server.fail(503, times=None, methods=("GET",))
        cache = ShardCache(tmp_path, limit=1 << 20)
        with pytest.raises(tfe.RemoteReadError, match=r"train-0\.tfrecord"):
            cache.get(url)
        assert cache.used_bytes() == 0
        assert [p for p in os.listdir(tmp_path) if not p.startswith(".")] == []
        assert [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")] == []
    finally:
        set_default_retry_policy(previous)
        server.heal()


def test_concurrent_users_copy_an_object_once(
    served: Served, server: RangeServer, tmp_path: pathlib.Path
) -> None:
    (url,) = _shards(served, n=1, per=2000)
    server.reset()
    caches = [ShardCache(tmp_path) for _ in range(4)]
    got: list[object] = []
    threads = [threading.Thread(target=lambda c=c: got.append(c.get(url))) for c in caches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4
    assert all(g is not None for g in got)
    assert server.count("GET", ranged=True) == 1  # one fill; the others waited for it
    assert sum(c.stats.fills for c in caches) == 1
    for c in caches:
        c.close()


def test_a_limit_needs_a_folder() -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="cache_dir"):
        tfe.RecordDataset("memory://x/a.tfrecord", cache_limit=10)


@settings(max_examples=15, deadline=None)
@given(plan=cache_plans(files=4))
def test_the_limit_holds_and_copies_in_use_stay(
    served: Served,
    tmp_path_factory: pytest.TempPathFactory,
    plan: tuple[int, list[tuple[int, int]]],
) -> None:
    """Random sizes, opens and closes by several users: the folder never holds more than
    the limit, and a copy in use is never removed under its user."""
    limit, steps = plan
    root, server = served
    folder = tmp_path_factory.mktemp("lru")
    urls, blobs = [], []
    for i, size in enumerate([700, 1500, 3000, 5000]):
        name = f"{folder.name}-{i}-{secrets.token_hex(3)}.bin"
        blobs.append(os.urandom(size))
        (root / name).write_bytes(blobs[-1])
        urls.append(f"{server.url}/{name}")
    users: dict[int, ShardCache] = {}
    held: dict[int, list[tuple[str, bytes]]] = {}
    for user, action in steps:
        if action < 0:  # the user closes: its copies may go
            if user in users:
                users.pop(user).close()
                held.pop(user, None)
            continue
        cache = users.setdefault(user, ShardCache(folder, limit))
        copy = cache.get(urls[action])
        if copy is not None:
            held.setdefault(user, []).append((copy.data_path, blobs[action]))
        assert cache.used_bytes() <= limit
        for copies in held.values():
            for path, blob in copies:
                assert pathlib.Path(path).read_bytes() == blob
    for cache in users.values():
        cache.close()
