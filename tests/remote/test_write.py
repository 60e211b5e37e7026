"""TFRecordWriter on URLs: the same bytes as locally, published only by a clean close()."""

from __future__ import annotations

import pathlib
from typing import BinaryIO

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.index.placement import cache_entries
from tfrecord_engine.storage import remote
from tfrecord_engine.storage.remote_fileops import RemoteFileOps
from tfrecord_engine.testing.faults import writer_with_ops
from tfrecord_engine.testing.http_server import RangeServer

fsspec = pytest.importorskip("fsspec")
RECORDS = [bytes([i % 256]) * (i * 37 % 500) for i in range(300)]


def _names(url: str) -> list[str]:
    fs = fsspec.filesystem("memory")
    return sorted(p.rsplit("/", 1)[-1] for p in fs.ls(url.removeprefix("memory://"), detail=False))


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_remote_file_is_byte_identical_to_a_local_one(
    mem: str, tmp_path: pathlib.Path, compression: str
) -> None:
    local = tmp_path / "a.tfrecord"
    url = f"{mem}/a.tfrecord"
    for target in (str(local), url):
        with tfe.TFRecordWriter(target, compression, index=True) as w:
            w.write(RECORDS[0])
            w.write_many(RECORDS[1:])
    fs = fsspec.filesystem("memory")
    assert fs.cat_file(url.removeprefix("memory://")) == local.read_bytes()
    assert _names(mem) == [".tfeidx", "a.tfrecord"]
    assert _names(f"{mem}/.tfeidx") == ["a.tfrecord.tfeidx"]
    remote_index, local_index = tfe.Index.load(url), tfe.Index.load(local)
    assert remote_index.to_bytes() == local_index.to_bytes()
    assert list(tfe.read_records(url, compression)) == RECORDS


def test_nothing_is_published_before_close(mem: str) -> None:
    url = f"{mem}/a.tfrecord"
    with tfe.TFRecordWriter(url) as w:
        w.write_many(RECORDS)
        w.flush()
        names = _names(mem)
        assert len(names) == 1
        assert names[0].startswith(".a.tfrecord.tmp-")
    assert _names(mem) == ["a.tfrecord"]


def test_an_exception_inside_with_publishes_nothing_and_keeps_the_old_file(mem: str) -> None:
    url = f"{mem}/a.tfrecord"
    with tfe.TFRecordWriter(url) as w:
        w.write(b"old")

    def interrupted() -> None:
        with tfe.TFRecordWriter(url, index=True) as w:
            w.write_many(RECORDS)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        interrupted()
    assert _names(mem) == ["a.tfrecord"]  # no temporary object, no index
    assert list(tfe.read_records(url)) == [b"old"]


class _FailingOps(RemoteFileOps):
    """Fails the Nth write, or the move that publishes."""

    def __init__(self, url: str, fail_write: int | None = None, fail_move: bool = False):
        super().__init__(url)
        self.writes = 0
        self.fail_write = fail_write
        self.fail_move = fail_move

    def write(self, f: BinaryIO, data: bytes | bytearray | memoryview) -> None:
        self.writes += 1
        if self.writes == self.fail_write:
            raise OSError("injected: connection reset")
        super().write(f, data)

    def replace(self, src: str, dst: str) -> None:
        if self.fail_move:
            raise OSError("injected: copy failed")
        super().replace(src, dst)


def test_a_failed_remote_write_publishes_nothing(mem: str) -> None:
    url = f"{mem}/a.tfrecord"
    w = writer_with_ops(_FailingOps(url, fail_write=3), url)
    # (Small records are held and framed in bulk: each flush() writes what is held.)
    w.write(b"1")
    w.flush()
    w.write(b"2")
    w.flush()
    w.write(b"3")
    with pytest.raises(OSError, match="connection reset"):
        w.flush()
    with pytest.raises(tfe.WriterFailedError):
        w.write(b"4")
    with pytest.raises(tfe.WriterFailedError, match="nothing was published"):
        w.close()
    assert _names(mem) == []


def test_a_failed_move_publishes_nothing(mem: str) -> None:
    url = f"{mem}/a.tfrecord"
    w = writer_with_ops(_FailingOps(url, fail_move=True), url)
    w.write_many(RECORDS)
    with pytest.raises(OSError, match="copy failed"):
        w.close()
    assert _names(mem) == []


def test_remote_appends_and_http_writes_are_refused(
    mem: str, served: tuple[pathlib.Path, RangeServer]
) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="appending"):
        tfe.TFRecordWriter(f"{mem}/a.tfrecord", append=True)
    server = served[1]
    server.reset()
    with pytest.raises(tfe.ReadOnlyStorageError, match="read-only") as err:
        tfe.TFRecordWriter(f"{server.url}/a.tfrecord")
    assert isinstance(err.value, PermissionError)
    assert server.requests == []


def test_atomic_false_writes_the_final_name_directly(mem: str) -> None:
    url = f"{mem}/a.tfrecord"
    with tfe.TFRecordWriter(url, "GZIP", atomic=False) as w:
        w.write_many(RECORDS)
        assert _names(mem) == ["a.tfrecord"]
    assert list(tfe.read_records(url, "GZIP")) == RECORDS


def test_remote_indexes_follow_the_local_rule(mem: str) -> None:
    """Written indexes go to the store's hidden ``.tfeidx/`` folder, which ``train-*``
    does not match; indexes built on read go to the local cache, not the store."""
    for i in range(2):
        with tfe.TFRecordWriter(f"{mem}/train-{i}.tfrecord", index=(i == 0)) as w:
            w.write_many(RECORDS)
    fs = fsspec.filesystem("memory")
    shards = [f"{mem}/train-{i}.tfrecord" for i in range(2)]
    assert remote.glob(f"{mem}/train-*") == shards
    assert sorted(fs.unstrip_protocol(p) for p in fs.glob(f"{mem}/train-*")) == shards
    assert _names(mem) == [".tfeidx", "train-0.tfrecord", "train-1.tfrecord"]
    ds = tfe.RecordDataset(f"{mem}/train-*")
    assert list(ds) == RECORDS * 2
    assert _names(mem) == [".tfeidx", "train-0.tfrecord", "train-1.tfrecord"]
    assert _names(f"{mem}/.tfeidx") == ["train-0.tfrecord.tfeidx"]
    assert cache_entries(shards[0]) == []  # the writer's index served
    assert len(cache_entries(shards[1])) == 1  # built on read, cached locally
    assert (
        tfe.RecordDataset(shards[1]).indexes[0].to_bytes() == tfe.Index.build(shards[1]).to_bytes()
    )
