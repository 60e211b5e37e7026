"""Multi-member GZIP files (bgzip, ``cat a.gz b.gz``, appends): every member start is a
restart point kept in the index, so random access and shuffled epochs work at any size.

The size above which a block between restart points is not decoded whole
(``MAX_UNINDEXED_BLOCK``, 256 MiB) is lowered here so that small files take the path of
large ones; ``test_bgzf_file_over_256_mib`` is the real thing (``--run-slow``).
"""

from __future__ import annotations

import gzip
import itertools
import pathlib
import time
from collections import Counter

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data import compressed_source
from tfrecord_engine.data.compressed_source import CompressedFileRecords
from tfrecord_engine.hosts.splits import plan_pieces
from tfrecord_engine.index.sidecar import (
    CONTENT_CHECK_VERSION_OFFSET,
    MEMBER_STARTS_VERSION_OFFSET,
)
from tfrecord_engine.records.compression import Compression, Decompressor
from tfrecord_engine.testing.members import BGZF_BLOCK, bgzf, framed, members


def _records(n: int, seed: int = 0) -> list[bytes]:
    """Sizes from 0 to 200 KiB (some span many 64 KiB BGZF blocks), compressible."""
    rng = np.random.default_rng(seed)
    sizes = rng.choice([0, 1, 17, 300, 4000, 70_000, 200_000], size=n, p=[*[0.18] * 5, 0.07, 0.03])
    return [bytes([i % 251]) * int(s) + i.to_bytes(4, "little") for i, s in enumerate(sizes)]


def _reader(ds: tfe.RecordDataset) -> CompressedFileRecords:
    reader = ds._open()[0]
    assert isinstance(reader, CompressedFileRecords)
    return reader


def _check_random_access(ds: tfe.RecordDataset, records: list[bytes], seed: int) -> None:
    """``ds[i]``, ``ds[list]`` and a shuffled epoch give exactly ``records``."""
    rng = np.random.default_rng(seed)
    n = len(records)
    for i in rng.integers(0, n, size=20).tolist():
        assert ds[i] == records[i]
    picks = rng.permutation(n)[: min(n, 60)].tolist()
    assert ds[picks] == [records[i] for i in picks]
    assert ds[[n - 1, 0, n - 1]] == [records[-1], records[0], records[-1]]
    epoch = [r for b in ds.batches(7, shuffle=True, seed=seed) for r in b]
    assert len(epoch) == n
    assert Counter(epoch) == Counter(records)  # every record exactly once, values intact
    assert epoch != records
    sharded = [
        r
        for s in range(3)
        for b in ds.batches(5, shuffle=True, shard_index=s, shard_count=3)
        for r in b
    ]
    assert Counter(sharded) == Counter(records)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files of a few MiB take the path of files over 256 MiB."""
    monkeypatch.setattr(compressed_source, "MAX_UNINDEXED_BLOCK", 100_000)
    monkeypatch.setattr(compressed_source, "SNAPSHOT_SPACING", 150_000)


def _write_layout(path: pathlib.Path, records: list[bytes], layout: str) -> None:
    data = framed(records)
    if layout == "bgzip":
        path.write_bytes(bgzf(data))
    elif layout == "cat":  # `cat a.gz b.gz c.gz` of Python-gzipped pieces
        path.write_bytes(members(data, [len(data) // 3, 2 * len(data) // 3]))
    else:  # gzip.open(p, "ab"), one append per 50 records
        for a in range(0, len(records), 50):
            with gzip.open(path, "ab") as f:
                f.write(framed(records[a : a + 50]))


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("layout", ["bgzip", "cat", "append"])
def test_random_access_and_shuffled_epoch(tmp_path: pathlib.Path, layout: str) -> None:
    records = _records(300, seed=9)
    path = tmp_path / "a.tfrecord.gz"
    _write_layout(path, records, layout)
    _check_random_access(tfe.RecordDataset(path), records, seed=9)


@pytest.mark.usefixtures("small_blocks")
def test_bgzf_file_restarts_at_every_member(tmp_path: pathlib.Path) -> None:
    records = _records(400)
    data = framed(records)
    path = tmp_path / "a.tfrecord.gz"
    path.write_bytes(bgzf(data))
    count = -(-len(data) // BGZF_BLOCK)
    assert count > 30
    ds = tfe.RecordDataset(path)
    (idx,) = ds.indexes
    assert idx.compression is Compression.GZIP
    # Every member start but the first; bgzip's empty end-of-file member starts none.
    assert len(idx.restarts) == count - 1
    assert idx.member_starts.all()
    assert idx.restarts[:, 1].tolist() == list(range(BGZF_BLOCK, len(data), BGZF_BLOCK))
    _check_random_access(ds, records, seed=1)
    reader = _reader(ds)
    assert not reader.sequential_only
    assert reader._snaps == {}  # every block is small: no scan of the file at all


@pytest.mark.usefixtures("small_blocks")
def test_bgzf_random_access_inflates_one_member_per_record(tmp_path: pathlib.Path) -> None:
    records = [bytes([i % 256]) * 200 for i in range(5000)]  # 1 MiB, 17 members
    path = tmp_path / "a.tfrecord.gz"
    path.write_bytes(bgzf(framed(records)))
    ds = tfe.RecordDataset(path)
    reader = _reader(ds)
    fetched: list[int] = []
    fetch = reader._fetch

    def counting(offset: int, size: int) -> bytes:
        fetched.append(size)
        return fetch(offset, size)

    reader._fetch = counting
    assert ds[4321] == records[4321]
    assert ds[17] == records[17]
    assert len(fetched) <= 4  # a record across a member boundary needs two
    assert max(fetched) < 2 * BGZF_BLOCK  # one member's compressed bytes, not the file


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("gzip_module", [False, True])
def test_concatenated_gzip_files(tmp_path: pathlib.Path, gzip_module: bool) -> None:
    """``cat a.gz b.gz c.gz``: members larger than the limit get snapshots inside, and
    restart at each member start (from the index) in between."""
    records = _records(300, seed=2)
    parts = [records[:100], records[100:101], records[101:]]
    blobs = []
    for part in parts:
        if gzip_module:
            blobs.append(gzip.compress(framed(part)))
        else:
            with tfe.TFRecordWriter(tmp_path / "part.gz", "GZIP") as w:
                w.write_many(part)
            blobs.append((tmp_path / "part.gz").read_bytes())
    path = tmp_path / "cat.tfrecord.gz"
    path.write_bytes(b"".join(blobs))
    ds = tfe.RecordDataset(path)
    (idx,) = ds.indexes
    starts = np.cumsum([len(b) for b in blobs])[:-1].tolist()
    assert idx.restarts[:, 0].tolist() == starts
    assert idx.restarts[:, 1].tolist() == [idx.offsets[100], idx.offsets[101]]
    _check_random_access(ds, records, seed=3)
    reader = _reader(ds)
    assert not reader.sequential_only
    assert len(reader._snaps) >= 2  # the first and last members are "large"


@pytest.mark.usefixtures("small_blocks")
def test_gzip_appends(tmp_path: pathlib.Path) -> None:
    """``gzip.open(p, "ab")`` and ``TFRecordWriter(..., append=True)`` add members."""
    records = _records(300, seed=4)
    path = tmp_path / "log.tfrecord.gz"
    cuts = [0, 40, 41, 120, 200, 300]
    for a, b in itertools.pairwise(cuts):
        with gzip.open(path, "ab") as f:
            f.write(framed(records[a:b]))
    more = _records(30, seed=5)
    with tfe.TFRecordWriter(path, "GZIP", append=True) as w:
        w.write_many(more)
    everything = records + more
    ds = tfe.RecordDataset(path)
    (idx,) = ds.indexes
    assert idx.member_starts.sum() == len(cuts) - 1
    assert idx.restarts[:, 1].tolist() == [int(idx.offsets[i]) for i in [*cuts[1:-1], 300]]
    _check_random_access(ds, everything, seed=5)


def test_index_with_member_starts_round_trips_and_old_layouts_stay(tmp_path: pathlib.Path) -> None:
    records = _records(200, seed=6)
    path = tmp_path / "a.tfrecord.gz"
    path.write_bytes(bgzf(framed(records), 20_000))
    idx = tfe.Index.build(path)
    blob = idx.to_bytes()
    version = int.from_bytes(blob[8:12], "little")
    # A header walk, member starts, a content check.
    assert version == 1 + MEMBER_STARTS_VERSION_OFFSET + CONTENT_CHECK_VERSION_OFFSET
    back = tfe.Index.from_bytes(blob, path)
    assert back.restarts.tolist() == idx.restarts.tolist()
    assert back.member_starts.tolist() == idx.member_starts.tolist() == [True] * len(idx.restarts)
    assert "at member starts" in repr(back)
    # Saved and loaded through the usual places, then served to a reader.
    idx.save(placement="hidden")
    loaded = tfe.Index.load(path)
    assert loaded.member_starts.all()
    assert tfe.RecordDataset(path)[[199, 0]] == [records[199], records[0]]
    # An index built by a skip scan keeps them too (version 3 + 16: data CRCs checked).
    skip = tfe.Index.build(path, on_damage="skip")
    assert skip.restarts.tolist() == idx.restarts.tolist()
    assert int.from_bytes(skip.to_bytes()[8:12], "little") == (
        3 + MEMBER_STARTS_VERSION_OFFSET + CONTENT_CHECK_VERSION_OFFSET
    )
    # The writer's single-stream index marks no member start (version 3, content check).
    single = tmp_path / "w.tfrecord.gz"
    with tfe.TFRecordWriter(single, "GZIP", index=True, index_flush_every=10) as w:
        w.write_many(records)
    written = tfe.Index.load(single)
    assert len(written.restarts) > 0
    assert not written.member_starts.any()
    assert int.from_bytes(written.to_bytes()[8:12], "little") == 3 + CONTENT_CHECK_VERSION_OFFSET
    # A restart offset with the member bit in an index that does not announce it is damage.
    forged = bytearray(written.to_bytes())
    at = 48 + 16 + 16 * len(written)  # header, content check, offsets and lengths
    forged[at + 7] |= 0x80
    body = bytes(forged[:-4])
    from tfrecord_engine.records import framing

    forged[-4:] = framing.mask_crc(framing.crc32c(body)).to_bytes(4, "little")
    with pytest.raises(tfe.IndexFormatError, match="2\\*\\*63"):
        tfe.Index.from_bytes(bytes(forged), single)


def test_index_from_before_member_starts_still_serves_random_access(
    tmp_path: pathlib.Path,
) -> None:
    """An index saved before member starts were kept (version 1, no restart points) of
    a multi-member file: the in-memory pass now crosses member ends."""
    records = _records(300, seed=10)
    path = tmp_path / "a.tfrecord.gz"
    _write_layout(path, records, "cat")
    new = tfe.Index.build(path)
    old = tfe.Index(
        path,
        new.offsets,
        new.lengths,
        data_size=new.data_size,
        fingerprint=new.fingerprint,
        compression="GZIP",
    )
    blob = old.to_bytes()
    assert int.from_bytes(blob[8:12], "little") == 1
    loaded = tfe.Index.from_bytes(blob, path)
    reader = CompressedFileRecords(loaded, max_block=50_000)
    assert not reader.sequential_only
    snapped = reader._dstart[sorted(reader._snaps)]
    assert snapped.max() > 2 * loaded.stream_size // 3  # past both member ends
    order = np.random.default_rng(10).permutation(len(records))
    got = reader.read(order.astype(np.int64))
    assert got == [records[i] for i in order.tolist()]


def test_decompressor_notes_member_starts_once() -> None:
    import io

    data = framed(_records(50, seed=7))
    blob = members(data, [100, 100, 5000, len(data) - 1])  # one empty member
    found: list[tuple[int, int]] = []
    dec = Decompressor(io.BytesIO(blob), Compression.GZIP, members=found)
    out = []
    snap = None
    while True:
        part = dec.read(777)
        if not part:
            break
        out.append(part)
        if snap is None and dec._produced > 3000:
            snap = dec.snapshot()
            assert snap is not None
            assert dec.read(10_000)  # read ahead (past a member start), then again
            dec.restore(snap)
    assert b"".join(out) == data
    sizes = [len(members(data[a:b], [])) for a, b in [(0, 100), (100, 100), (100, 5000)]]
    starts = np.cumsum(sizes).tolist()
    last = len(blob) - len(members(data[-1:], []))
    assert found == [(starts[0], 100), (starts[1], 100), (starts[2], 5000), (last, len(data) - 1)]


@pytest.mark.usefixtures("small_blocks")
def test_host_pieces_start_at_member_starts(tmp_path: pathlib.Path) -> None:
    records = [bytes([i % 256]) * 300 for i in range(3000)]
    path = tmp_path / "a.tfrecord.gz"
    path.write_bytes(bgzf(framed(records)))
    idx = tfe.Index.build(path)
    pieces = plan_pieces([idx], 6)
    assert len(pieces) == 6
    reader = CompressedFileRecords(idx)
    got = [r for p in pieces for r in reader.read(np.arange(p.start, p.stop, dtype=np.int64))]
    assert got == records


@pytest.mark.slow
def test_bgzf_file_over_256_mib(tmp_path: pathlib.Path) -> None:
    """The size the issue names, without lowering anything (``--run-slow``)."""
    rng = np.random.default_rng(8)
    sizes = rng.integers(1, 40_000, size=16_000)
    records = [bytes([i % 251]) * int(s) + i.to_bytes(4, "little") for i, s in enumerate(sizes)]
    data = framed(records)
    assert len(data) > compressed_source.MAX_UNINDEXED_BLOCK == 256 << 20
    path = tmp_path / "big.tfrecord.gz"
    path.write_bytes(bgzf(data, level=1))
    del data
    t0 = time.perf_counter()
    ds = tfe.RecordDataset(path)
    (idx,) = ds.indexes
    built = time.perf_counter() - t0
    assert idx.member_starts.sum() == len(idx.restarts) > 4000
    t0 = time.perf_counter()
    picks = rng.permutation(len(records))[:2000].tolist()
    assert ds[picks] == [records[i] for i in picks]
    assert ds[len(records) - 1] == records[-1]
    access = time.perf_counter() - t0
    epoch = [r for b in ds.batches(256, shuffle=True, seed=1) for r in b]
    assert len(epoch) == len(records)
    assert Counter(epoch) == Counter(records)
    assert not _reader(ds).sequential_only
    print(f"index build {built:.1f} s, 2000 random records {access:.2f} s")
