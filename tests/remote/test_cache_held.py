"""Shuffled epochs over a node-local cache (``cache_dir=``) keep their in-memory copies
between epochs and share them between processes, from the first epoch after the fill
on, as they do for local files (the loopback HTTP server; no SeaweedFS)."""

from __future__ import annotations

import os
import pathlib
import secrets
import time
from typing import Any, cast

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data import held, held_shared
from tfrecord_engine.data import local_source as source
from tfrecord_engine.storage import cache as shard_cache
from tfrecord_engine.testing.http_server import RangeServer

Served = tuple[pathlib.Path, RangeServer]


def _shards(served: Served, n: int = 3, per: int = 200) -> tuple[list[str], list[bytes]]:
    root, server = served
    folder = f"h-{secrets.token_hex(4)}"
    (root / folder).mkdir()
    urls, records = [], []
    for s in range(n):
        name = f"{folder}/train-{s}.tfrecord"
        rows = [f"{s}-{i}".encode() * 30 for i in range(per)]
        with tfe.TFRecordWriter(root / name, index=True) as w:
            w.write_many(rows)
        urls.append(f"{server.url}/{name}")
        records += rows
    return urls, records


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of every whole-file read of a shuffled epoch's copy."""
    seen: list[str] = []
    real = source.LocalFileRecords._read_all

    def counted(self: source.LocalFileRecords, verify: bool, *joint: Any) -> Any:
        seen.append(self.path)
        return real(self, verify, *joint)

    monkeypatch.setattr(source.LocalFileRecords, "_read_all", counted)
    return seen


def test_a_fresh_cache_copy_is_read_whole_once_for_all_epochs(
    served: Served, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    urls, records = _shards(served)
    reads = _reads(monkeypatch)
    # Epochs right after the fill: each copy is read whole once, then kept (it was read
    # whole again by every epoch of the fill's first seconds).
    with tfe.RecordDataset(urls, cache_dir=tmp_path / "c") as ds:
        for epoch in range(3):
            got = [r for b in ds.batches(64, shuffle=True, seed=1, epoch=epoch) for r in b]
            assert sorted(got) == sorted(records)
        assert len(reads) == len(urls)
        assert all(r.startswith(str(tmp_path / "c")) for r in reads)


def test_a_fresh_cache_copy_is_dated_back_past_the_settling_time(
    served: Served, tmp_path: pathlib.Path
) -> None:
    urls, _ = _shards(served, n=1)
    started = time.time_ns()
    with tfe.RecordDataset(urls, cache_dir=tmp_path / "c") as ds:
        path = cast("source.LocalFileRecords", ds._open()[0]).path
        assert started - os.stat(path).st_mtime_ns > held._SETTLED_NS
    assert shard_cache.DATED_BACK_NS > held._SETTLED_NS


@pytest.mark.skipif(not os.path.isdir(held_shared.SHM_DIR), reason="no /dev/shm")
def test_a_fresh_cache_copy_is_shared_by_a_loaders_processes(
    served: Served, tmp_path: pathlib.Path
) -> None:
    # A DataLoader's workers share one copy per machine; a copy of a file that changed
    # too recently is private to each worker instead (W times the memory).
    urls, _ = _shards(served, n=1)
    owner = held_shared.SharedCopies()
    try:
        with tfe.RecordDataset(urls, cache_dir=tmp_path / "c") as ds:
            reader = cast("source.LocalFileRecords", ds._open()[0])
            first = held_shared.shared_copy(reader, True, owner, None)
            assert isinstance(first, held.Held)
            assert len(owner.names()) == 1  # published for the other processes
            again = held_shared.shared_copy(reader, True, owner, None)
            assert isinstance(again, held.Held)
            assert bytes(again.array) == bytes(first.array)
    finally:
        owner.close()
    assert owner.names() == []
