"""Index on URLs: build, save, load and open, on memory:// and read-only HTTP."""

from __future__ import annotations

import os
import pathlib
import secrets

import numpy as np
import pytest
from hypothesis import given

import tfrecord_engine as tfe
from tfrecord_engine.index.placement import cache_entries, index_path_for
from tfrecord_engine.records import framing
from tfrecord_engine.storage import remote
from tfrecord_engine.testing.http_server import RangeServer
from tfrecord_engine.testing.records import compressions, record_lists, write_file

fsspec = pytest.importorskip("fsspec")
Served = tuple[pathlib.Path, RangeServer]


def _memfs() -> object:
    return fsspec.filesystem("memory")


def _put(url: str, blob: bytes) -> None:
    fsspec.filesystem("memory").pipe_file(url.removeprefix("memory://"), blob)


def _get(url: str) -> bytes:
    return bytes(fsspec.filesystem("memory").cat_file(url.removeprefix("memory://")))


def _same(a: tfe.Index, b: tfe.Index) -> None:
    assert np.array_equal(a.offsets, b.offsets)
    assert np.array_equal(a.lengths, b.lengths)
    assert (a.data_size, a.fingerprint, a.compression) == (
        b.data_size,
        b.fingerprint,
        b.compression,
    )
    assert np.array_equal(a.restarts, b.restarts)


@given(records=record_lists(max_records=20, max_size=3000), compression=compressions())
def test_remote_index_equals_the_local_index(
    served: Served,
    mem_shared: str,
    tmp_path_factory: pytest.TempPathFactory,
    records: list[bytes],
    compression: str,
) -> None:
    root, server = served
    name = f"{secrets.token_hex(6)}.tfrecord"
    write_file(root / name, records, compression)
    local = tfe.Index.build(root / name, compression)
    mem_url = f"{mem_shared}/{name}"
    _put(mem_url, (root / name).read_bytes())
    for url in (mem_url, f"{server.url}/{name}"):
        built = tfe.Index.build(url, compression)
        assert built.data_path == url
        _same(built, local)  # the fingerprint's windows are fetched as ranges: same bytes


def test_save_load_round_trip_and_staleness(mem: str) -> None:
    url = f"{mem}/a.tfrecord"
    with tfe.TFRecordWriter(url) as w:
        w.write_many([bytes([i]) * 10 for i in range(100)])
    idx = tfe.Index.build(url)
    assert idx.save() == index_path_for(url) == f"{mem}/.tfeidx/a.tfrecord.tfeidx"
    _same(tfe.Index.load(url), idx)
    # Same size, different content: the fingerprint catches it.
    _put(url, framing.frame_many([bytes([i + 1]) * 10 for i in range(100)]))
    with pytest.raises(tfe.StaleIndexError, match="fingerprint"):
        tfe.Index.load(url)
    _put(index_path_for(url), b"garbage" * 10)
    with pytest.raises(tfe.IndexFormatError):
        tfe.Index.load(url)
    rebuilt = tfe.Index.open(url)  # rebuilds and caches it locally; the store is untouched
    assert _get(index_path_for(url)) == b"garbage" * 10
    _same(tfe.Index.load(url), rebuilt)
    with pytest.raises(FileNotFoundError):
        tfe.Index.load(f"{mem}/missing.tfrecord")


def test_open_on_read_only_http_builds_in_memory(served: Served) -> None:
    root, server = served
    write_file(root / "ro.tfrecord", [b"x" * 50] * 40)
    server.reset()
    idx = tfe.Index.open(f"{server.url}/ro.tfrecord")
    assert len(idx) == 40
    assert server.count("PUT") == 0  # read-only by protocol: no attempt to write
    with pytest.raises(tfe.ReadOnlyStorageError):
        idx.save()
    assert server.count("PUT") == 0
    # A sidecar that exists on the server is used: no pass over the data.
    tfe.Index.build(root / "ro.tfrecord").save()
    server.reset()
    _same(tfe.Index.open(f"{server.url}/ro.tfrecord"), idx)
    assert server.count("GET", ranged=False) == 1  # the sidecar
    assert server.count("GET", ranged=True) == 1  # the fingerprint's windows


def test_open_skips_only_read_only_save_errors(mem: str, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"{mem}/a.tfrecord"
    with tfe.TFRecordWriter(url) as w:
        w.write_many([b"abc"] * 5)

    def denied(target: str, data: bytes, storage_options: object = None) -> None:
        raise PermissionError(f"{target}: access denied")

    monkeypatch.setattr(remote, "write_bytes", denied)
    # By default an index built on read goes to the local cache: the store is not asked.
    assert len(tfe.Index.open(url)) == 5
    assert cache_entries(url)
    for entry in cache_entries(url):
        os.remove(entry)
    # Asked to keep it with the data: a read-only bucket keeps the index in memory.
    assert len(tfe.Index.open(url, save="hidden")) == 5

    def broken(target: str, data: bytes, storage_options: object = None) -> None:
        raise ConnectionError(f"{target}: connection reset")

    monkeypatch.setattr(remote, "write_bytes", broken)
    with pytest.raises(ConnectionError, match="connection reset"):
        tfe.Index.open(url, save="hidden")


def test_build_reports_damage_like_a_local_build(mem: str, tmp_path: pathlib.Path) -> None:
    blob = bytearray(framing.frame_many([b"r" * 30] * 10))
    blob[3 * 46 + 2] ^= 1  # the length field of record 3
    (tmp_path / "a.tfrecord").write_bytes(bytes(blob))
    _put(f"{mem}/a.tfrecord", bytes(blob))
    with pytest.raises(tfe.CorruptedRecordError) as local:
        tfe.Index.build(tmp_path / "a.tfrecord")
    with pytest.raises(tfe.CorruptedRecordError) as far:
        tfe.Index.build(f"{mem}/a.tfrecord")
    assert (far.value.record_index, far.value.offset) == (local.value.record_index, 3 * 46)


def test_text_index_saves_to_a_url(mem: str) -> None:
    url = f"{mem}/a.tfrecord"
    with tfe.TFRecordWriter(url) as w:
        w.write_many([b"ab", b"cde"])
    tfe.Index.build(url).save_text(f"{url}.idx")
    assert fsspec.filesystem("memory").cat_file(f"{url}.idx".removeprefix("memory://")) == (
        b"0 18\n18 19\n"
    )


def test_remote_multi_member_gzip_keeps_member_starts(
    served: Served, mem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_engine.data import compressed_source
    from tfrecord_engine.testing.members import bgzf, framed

    monkeypatch.setattr(compressed_source, "MAX_UNINDEXED_BLOCK", 10_000)  # "large"
    records = [bytes([i % 256]) * (i % 700) for i in range(600)]
    root, server = served
    name = f"{secrets.token_hex(6)}.tfrecord.gz"
    blob = bgzf(framed(records), 5000)
    (root / name).write_bytes(blob)
    _put(f"{mem}/{name}", blob)
    local = tfe.Index.build(root / name)
    assert len(local.restarts) == len(framed(records)) // 5000
    assert local.member_starts.all()
    for url in (f"{mem}/{name}", f"{server.url}/{name}"):
        built = tfe.Index.build(url)
        _same(built, local)
        assert built.member_starts.all()
        ds = tfe.RecordDataset(url)
        picks = [599, 3, 300, 3]
        assert ds[picks] == [records[i] for i in picks]
        got = [r for b in ds.batches(64, shuffle=True, seed=2) for r in b]
        assert sorted(got) == sorted(records)
