"""RecordDataset: len, random access, batches over many files, pickling, damage."""

from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import pickle
import tempfile
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.data import sampler
from tfrecord_engine.data.source import FetcherRecords, RandomAccessSource
from tfrecord_engine.index.placement import cache_entries
from tfrecord_engine.testing.epochs import record_lists, shuffle_modes
from tfrecord_engine.testing.resume import assert_resume_exactly_once

SIZES = (761, 100, 1)
_TMP = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def _rec(f: int, i: int) -> bytes:
    return f"file{f}-rec{i:04d}".encode() + bytes(i % 7)


@pytest.fixture(scope="module")
def three_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[bytes]]:
    """Files of 761, 100 and 1 records (names sort in that order)."""
    d = tmp_path_factory.mktemp("ds")
    records: list[bytes] = []
    for f, n in enumerate(SIZES):
        recs = [_rec(f, i) for i in range(n)]
        with tfe.TFRecordWriter(d / f"part-{f}.tfrecord", index=f != 1) as w:
            w.write_many(recs)
        records += recs
    return str(d / "part-*.tfrecord"), records


def test_len_and_random_access(three_files: tuple[str, list[bytes]]) -> None:
    pattern, records = three_files
    ds = tfe.RecordDataset(pattern)
    assert len(ds) == 862
    assert ds[0] == records[0]
    assert ds[761] == records[761]
    assert ds[861] == records[861]
    assert ds[-1] == records[-1]
    assert ds[-862] == records[0]
    assert ds[np.int64(5)] == records[5]
    picks = [861, 3, 800, 760, 761, 3, -2]
    assert ds[picks] == [records[i] for i in picks]
    assert ds[np.array(picks)] == [records[i] for i in picks]
    assert ds[755:765:2] == records[755:765:2]
    assert ds[::-100] == records[::-100]
    assert ds.__getitems__([1, 2]) == records[1:3]
    assert ds[[]] == []


@pytest.mark.parametrize("bad", [862, -863, [0, 862], 10**12])
def test_out_of_range_is_an_index_error(three_files: tuple[str, list[bytes]], bad: Any) -> None:
    ds = tfe.RecordDataset(three_files[0])
    with pytest.raises(IndexError, match="out of range"):
        ds[bad]
    with pytest.raises(tfe.OutOfRangeError):
        ds[bad]


def test_works_as_a_map_style_source(three_files: tuple[str, list[bytes]]) -> None:
    ds = tfe.RecordDataset(three_files[0])
    assert isinstance(ds, RandomAccessSource)
    assert list(ds) == three_files[1]


def test_pickles_and_reopens_lazily(three_files: tuple[str, list[bytes]]) -> None:
    pattern, records = three_files
    ds = tfe.RecordDataset(pattern)
    assert ds[100] == records[100]  # opened (mmap'ed) before pickling
    blob = pickle.dumps(ds)
    assert len(blob) < 2000  # arguments only, no maps or index arrays
    clone = pickle.loads(blob)
    assert clone._readers is None
    assert clone[[861, 0]] == [records[861], records[0]]
    assert len(clone) == len(ds)


def _is_open(ds: tfe.RecordDataset) -> bool:
    return ds._readers is not None


def test_with_block_closes_the_dataset(three_files: tuple[str, list[bytes]]) -> None:
    pattern, records = three_files
    with tfe.RecordDataset(pattern) as ds:
        assert isinstance(ds, tfe.RecordDataset)
        assert ds[0] == records[0]
        assert _is_open(ds)
    assert not _is_open(ds)  # closed: files released
    failing = tfe.RecordDataset(pattern)

    def fail() -> None:
        with failing:
            assert failing[-1] == records[-1]  # opens the files
            raise KeyError("boom")

    with pytest.raises(KeyError):  # the error passes through, the dataset is closed
        fail()
    assert not _is_open(failing)
    assert ds[-1] == records[-1]  # reopens on next use


def test_globs_skip_sidecar_indexes(tmp_path: pathlib.Path) -> None:
    for f in range(2):
        with tfe.TFRecordWriter(tmp_path / f"train-{f}", index=True) as w:
            w.write_many([b"x"] * 3)
    assert sorted(os.listdir(tmp_path)) == [".tfeidx", "train-0", "train-1"]
    # Old versions put sidecars beside the data, where "train-*" matches them.
    for f in range(2):
        tfe.Index.build(tmp_path / f"train-{f}").save(placement="beside")
    assert sorted(os.listdir(tmp_path))[1:] == [
        "train-0",
        "train-0.tfeidx",
        "train-1",
        "train-1.tfeidx",
    ]
    ds = tfe.RecordDataset(str(tmp_path / "train-*"))
    assert ds.paths == [str(tmp_path / "train-0"), str(tmp_path / "train-1")]
    assert len(ds) == 6


def test_missing_files(tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError):
        tfe.RecordDataset(str(tmp_path / "nothing-*.tfrecord"))
    with pytest.raises(FileNotFoundError):
        len(tfe.RecordDataset(tmp_path / "nothing.tfrecord"))
    with pytest.raises(tfe.InvalidArgumentError):
        tfe.RecordDataset([])


def _epoch(ds: tfe.RecordDataset, count: int, **kw: Any) -> list[list[bytes]]:
    return [
        [r for b in ds.batches(batch_size=37, shard_index=s, shard_count=count, **kw) for r in b]
        for s in range(count)
    ]


@pytest.mark.parametrize("shuffle", [False, True])
def test_exactly_once_over_files_for_1_to_16_shards(
    three_files: tuple[str, list[bytes]], shuffle: bool
) -> None:
    pattern, records = three_files
    ds = tfe.RecordDataset(pattern)
    for count in range(1, 17):
        shards = _epoch(ds, count, shuffle=shuffle, seed=11)
        assert Counter(r for s in shards for r in s) == Counter(records)
        sizes = [len(s) for s in shards]
        assert max(sizes) - min(sizes) <= 1
    if shuffle:  # a global shuffle mixes the files inside each shard
        first = _epoch(ds, 4, shuffle=True, seed=11)[0]
        assert {b"file0", b"file1"} <= {r[:5] for r in first}


def test_single_files_of_761_100_and_1_records(three_files: tuple[str, list[bytes]]) -> None:
    pattern, records = three_files
    start = 0
    for f, n in enumerate(SIZES):
        ds = tfe.RecordDataset(pattern.replace("*", str(f)))
        mine = records[start : start + n]
        start += n
        for count in (1, 2, 5, 16):
            for shuffle in (False, True):
                shards = _epoch(ds, count, shuffle=shuffle, seed=1)
                assert sorted(r for s in shards for r in s) == sorted(mine)


def test_partial_last_batch_and_padding(three_files: tuple[str, list[bytes]]) -> None:
    ds = tfe.RecordDataset(three_files[0].replace("*", "0"))  # 761 records
    assert [len(b) for b in ds.batches(100)] == [100] * 7 + [61]
    assert [len(b) for b in ds.batches(100, drop_remainder=True)] == [100] * 7
    padded = list(ds.batches(100, pad_remainder=True))
    assert all(isinstance(b, tfe.PaddedBatch) and len(b.records) == 100 for b in padded)
    real = [r for b in padded for r, m in zip(b.records, b.mask.tolist(), strict=True) if m]
    assert real == three_files[1][:761]


def test_seeded_reproducibility(three_files: tuple[str, list[bytes]]) -> None:
    ds = tfe.RecordDataset(three_files[0])
    a = list(ds.batches(50, shuffle=True, seed=4, epoch=1))
    assert a == list(ds.batches(50, shuffle=True, seed=4, epoch=1))
    assert a == list(pickle.loads(pickle.dumps(ds)).batches(50, shuffle=True, seed=4, epoch=1))
    assert a != list(ds.batches(50, shuffle=True, seed=4, epoch=2))
    assert a != list(ds.batches(50, shuffle=True, seed=5, epoch=1))


def test_successive_shuffled_epochs_move_to_the_next_epoch(
    three_files: tuple[str, list[bytes]],
) -> None:
    # A loop over epochs without epoch= (the PyTorch / tf.data way) gets a new order
    # each time, as tf.data's reshuffle_each_iteration; epoch= still pins one.
    ds = tfe.RecordDataset(three_files[0])
    first_batches = []
    epochs = []
    for _ in range(3):
        it = ds.batches(50, shuffle=True, seed=4)
        epochs.append(it.get_state()["epoch"])
        first_batches.append(next(it))
        it.close()
    assert epochs == [0, 1, 2]
    assert first_batches[0] != first_batches[1] != first_batches[2] != first_batches[0]
    pinned = list(ds.batches(50, shuffle=True, seed=4, epoch=0))
    assert pinned == list(ds.batches(50, shuffle=True, seed=4, epoch=0))
    assert pinned[0] == first_batches[0]
    assert next(ds.batches(50, shuffle=True, seed=4, epoch=1)) == first_batches[1]
    # Pinned calls leave the count alone; unshuffled calls neither use nor move it.
    assert list(ds.batches(50)) == list(ds.batches(50, epoch=0))
    assert ds.batches(50).get_state()["epoch"] == 0
    assert ds.batches(50, shuffle=True, seed=4).get_state()["epoch"] == 3
    # A refused call starts no epoch.
    with pytest.raises(tfe.InvalidArgumentError):
        ds.batches(50, shuffle=True, readahead=-1)
    assert ds.batches(50, shuffle=True, seed=4).get_state()["epoch"] == 4


def test_auto_epochs_count_per_shard_layout(three_files: tuple[str, list[bytes]]) -> None:
    pattern, records = three_files
    ds = tfe.RecordDataset(pattern)
    # One process iterating every shard of an epoch: each shard gets the same epoch,
    # so every record is delivered exactly once, in each of two successive epochs.
    epochs = [_epoch(ds, 3, shuffle=True, seed=2) for _ in range(2)]
    for shards in epochs:
        assert Counter(r for s in shards for r in s) == Counter(records)
    assert epochs[0] != epochs[1]
    assert epochs[1] == _epoch(ds, 3, shuffle=True, seed=2, epoch=1)


def test_resume_after_auto_epochs_reproduces_the_epoch(
    three_files: tuple[str, list[bytes]],
) -> None:
    ds = tfe.RecordDataset(three_files[0])
    list(ds.batches(64, shuffle=True, seed=9))  # epoch 0
    it = ds.batches(64, shuffle=True, seed=9)  # epoch 1
    head = [next(it) for _ in range(3)]
    state = json.loads(json.dumps(it.get_state()))
    assert state["epoch"] == 1
    rest = list(it)
    # A new process (a new dataset) resumes without epoch=: the state names the epoch.
    fresh = tfe.RecordDataset(three_files[0])
    assert list(fresh.batches(64, shuffle=True, seed=9, state=state)) == rest
    assert head + rest == list(ds.batches(64, shuffle=True, seed=9, epoch=1))
    # ...and the loop goes on with the epoch after the resumed one.
    assert fresh.batches(64, shuffle=True, seed=9).get_state()["epoch"] == 2
    assert list(fresh.batches(64, shuffle=True, seed=9, state=state, epoch=1)) == rest


def test_pickled_copies_and_workers_go_on_counting(
    three_files: tuple[str, list[bytes]],
) -> None:
    ds = tfe.RecordDataset(three_files[0])
    seen = [list(ds.batches(100, shuffle=True, seed=1)) for _ in range(2)]
    copy = pickle.loads(pickle.dumps(ds))
    # The copy neither starts over at epoch 0 nor skips one.
    third = list(copy.batches(100, shuffle=True, seed=1))
    assert third not in seen
    assert third == list(ds.batches(100, shuffle=True, seed=1, epoch=2))
    # Decode workers (copies of the dataset) do not move the parent's count.
    with_workers = list(ds.batches(100, shuffle=True, seed=1, workers=1))
    assert with_workers == third
    assert ds.batches(100, shuffle=True, seed=1).get_state()["epoch"] == 3
    ds.close()


def test_threads_starting_epochs_each_get_their_own(
    three_files: tuple[str, list[bytes]],
) -> None:
    ds = tfe.RecordDataset(three_files[0])
    len(ds)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = list(
            pool.map(
                lambda _: ds.batches(10, shuffle=True, readahead=0).get_state()["epoch"],
                range(16),
            )
        )
    assert sorted(got) == list(range(16))


@given(
    batch_size=st.integers(1, 300),
    shuffle=shuffle_modes(),
    count=st.integers(1, 4),
    data=st.data(),
)
def test_resume_equality_at_every_batch_boundary(
    three_files: tuple[str, list[bytes]],
    batch_size: int,
    shuffle: Any,
    count: int,
    data: st.DataObject,
) -> None:
    ds = tfe.RecordDataset(three_files[0])
    kw = {
        "shuffle": shuffle,
        "seed": data.draw(st.integers(0, 1000)),
        "epoch": 0,  # pinned: every call below runs the same epoch
        "shard_index": data.draw(st.integers(0, count - 1)),
        "shard_count": count,
        "drop_remainder": data.draw(st.booleans()),
    }
    # Every boundary is covered on the sampler alone (test_sampler); here a sample of
    # boundaries on real files keeps the test quadratic only in a handful of resumes.
    total = len(ds.batches(batch_size, **kw))
    cuts = data.draw(st.lists(st.integers(0, total), min_size=1, max_size=3))
    assert_resume_exactly_once(
        lambda s: ds.batches(batch_size, state=s, **kw), lambda b: b, boundaries=[0, total, *cuts]
    )


def test_iterator_state_is_small_and_plain(three_files: tuple[str, list[bytes]]) -> None:
    it = tfe.RecordDataset(three_files[0]).batches(64, shuffle=True, seed=3)
    assert len(it) == 14
    next(it)
    state = it.get_state()
    assert len(json.dumps(state)) < 400
    assert state["position"] == 64
    assert len(it) == 13


def test_corrupted_record_names_file_record_and_offset(tmp_path: pathlib.Path) -> None:
    for f in range(2):
        with tfe.TFRecordWriter(tmp_path / f"p{f}.tfrecord", index=True) as w:
            w.write_many([bytes([f]) * 20] * 10)
    data = bytearray((tmp_path / "p1.tfrecord").read_bytes())
    data[3 * 36 + 12 + 5] ^= 0xFF  # a payload byte of record 3 of the second file
    (tmp_path / "p1.tfrecord").write_bytes(bytes(data))
    with pytest.raises(tfe.StaleIndexError):  # the fingerprint saw the change...
        tfe.Index.load(tmp_path / "p1.tfrecord")
    ds = tfe.RecordDataset(str(tmp_path / "p*.tfrecord"))  # ...so this rebuilds it
    assert ds[12] == bytes([1]) * 20
    with pytest.raises(tfe.CorruptedRecordError) as err:
        ds[[0, 13, 14]]
    assert err.value.path == str(tmp_path / "p1.tfrecord")
    assert (err.value.record_index, err.value.offset) == (3, 108)
    assert "data CRC mismatch" in str(err.value)
    assert len(tfe.RecordDataset(tmp_path / "p1.tfrecord", verify=False)[[3]][0]) == 20


@_TMP
@given(
    records=record_lists(max_records=30),
    kind=st.sampled_from(["GZIP", "ZLIB"]),
    every=st.integers(1, 9),
)
def test_compressed_random_access(
    tmp_path: pathlib.Path, records: list[bytes], kind: str, every: int
) -> None:
    path = tmp_path / f"c{kind}.tfrecord"
    with tfe.TFRecordWriter(path, kind, index=True, index_flush_every=every) as w:
        w.write_many(records)
    ds = tfe.RecordDataset(path, compression=kind)
    order = np.random.default_rng(every).permutation(len(records))
    assert ds[order] == [records[i] for i in order]
    got = [r for b in ds.batches(4, shuffle=True, seed=every) for r in b]
    assert Counter(got) == Counter(records)


def test_compressed_file_we_did_not_write(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "foreign.tfrecord.gz"
    records = [bytes([i]) * i for i in range(50)]
    with tfe.TFRecordWriter(path, "GZIP") as w:  # no index: no restart points
        w.write_many(records)
    ds = tfe.RecordDataset(path, compression="gzip")
    assert len(ds.indexes[0].restarts) == 0
    assert ds[[49, 0, 7]] == [records[49], records[0], records[7]]


@_TMP
@given(
    records=record_lists(max_records=60, max_size=120),
    kind=st.sampled_from(["GZIP", "ZLIB"]),
    spacing=st.integers(1, 400),
)
def test_large_foreign_compressed_file_gets_in_memory_snapshots(
    tmp_path: pathlib.Path, records: list[bytes], kind: str, spacing: int
) -> None:
    from tfrecord_engine.data import compressed_source

    path = tmp_path / f"foreign-{kind}.tfrecord"
    path.unlink(missing_ok=True)
    for entry in cache_entries(str(path)):  # an earlier example's index
        os.remove(entry)
    with tfe.TFRecordWriter(path, kind) as w:  # no index: no restart points
        w.write_many(records)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compressed_source, "MAX_UNINDEXED_BLOCK", 100)
        mp.setattr(compressed_source, "SNAPSHOT_SPACING", spacing)
        mp.setattr(compressed_source, "_CHUNK", 97)
        ds = tfe.RecordDataset(path, compression=kind)
        order = np.random.default_rng(spacing).permutation(len(records))
        assert ds[order] == [records[i] for i in order]
        reader = ds._open()[0]
        assert isinstance(reader, compressed_source.CompressedFileRecords)
        assert not reader.sequential_only
        size = ds.indexes[0].stream_size
        if size > 100:  # a record start past each spacing mark gets a snapshot
            assert len(reader._snaps) >= 1 or size <= spacing + 136
        got = [r for b in ds.batches(7, shuffle=True, seed=1) for r in b]
        assert Counter(got) == Counter(records)


@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
def test_concatenated_compressed_streams_restart_at_each_stream(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    from tfrecord_engine.data import compressed_source

    records = [bytes([i % 256]) * (i % 50) for i in range(300)]
    parts = []
    for half in (records[:150], records[150:]):
        with tfe.TFRecordWriter(tmp_path / "part", kind) as w:
            w.write_many(half)
        parts.append((tmp_path / "part").read_bytes())
    path = tmp_path / "joined.tfrecord.z"
    path.write_bytes(b"".join(parts))  # two streams: what `cat a.gz b.gz` gives
    # Each stream is "large": snapshots inside each, the second's start from the index.
    monkeypatch.setattr(compressed_source, "MAX_UNINDEXED_BLOCK", 500)
    monkeypatch.setattr(compressed_source, "SNAPSHOT_SPACING", 700)
    monkeypatch.setattr(compressed_source, "_CHUNK", 64)
    ds = tfe.RecordDataset(path, compression=kind)
    (idx,) = ds.indexes
    assert idx.restarts.tolist() == [[len(parts[0]), idx.offsets[150]]]
    assert idx.member_starts.tolist() == [True]
    for count in (1, 3):  # sequential epochs, sharded too
        got = [
            r
            for s in range(count)
            for b in ds.batches(16, shard_index=s, shard_count=count)
            for r in b
        ]
        assert got == records
    assert ds[[250, 3, 299]] == [records[250], records[3], records[299]]
    assert ds[10] == records[10]
    reader = ds._open()[0]
    assert isinstance(reader, compressed_source.CompressedFileRecords)
    assert not reader.sequential_only
    assert len(reader._snaps) >= 4  # inside both streams
    got = [r for b in ds.batches(16, shuffle=True, seed=3) for r in b]
    assert got != records
    assert sorted(got) == sorted(records)


@pytest.mark.parametrize("members", [1, 2])
def test_compressed_file_that_cannot_be_scanned_reads_forward_and_says_why(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, members: int
) -> None:
    from tfrecord_engine.data import compressed_source

    records = [bytes([i % 256]) * (i % 50) for i in range(300)]
    path = tmp_path / "a.tfrecord.gz"
    with open(path, "wb") as f:
        for part in np.array_split(np.arange(300), members):
            with tfe.TFRecordWriter(tmp_path / "part", "GZIP") as w:
                w.write_many(records[i] for i in part.tolist())
            f.write((tmp_path / "part").read_bytes())
    monkeypatch.setattr(compressed_source, "MAX_UNINDEXED_BLOCK", 500)
    monkeypatch.setattr(compressed_source, "SNAPSHOT_SPACING", 700)
    ds = tfe.RecordDataset(path, compression="GZIP")
    assert len(ds) == len(records)  # indexed
    data = path.read_bytes()  # damaged after indexing, before the first read
    path.write_bytes(data[:40] + bytes(256) + data[296:])
    with pytest.raises(tfe.InvalidArgumentError) as err:
        ds.batches(16, shuffle=True)
    text = str(err.value)
    assert "can only be read forward" in text
    assert "does not inflate at or after compressed byte" in text
    assert "shuffle=False" in text
    assert "tfr convert" in text
    assert ("single GZIP deflate stream" in text) == (members == 1)
    assert "not written with" not in text
    with pytest.raises(tfe.DataLossError):
        list(ds.batches(16))


def test_fetcher_source_coalesces_contiguous_reads(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "a.tfrecord"
    records = [bytes([i % 256]) * 40 for i in range(1000)]
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    blob = path.read_bytes()
    calls: list[tuple[int, int]] = []

    def fetch(offset: int, size: int) -> bytes:
        calls.append((offset, size))
        return blob[offset : offset + size]

    src = FetcherRecords(tfe.Index.load(path), fetch)
    block = np.arange(100, 200)[::-1]
    assert src.read(block) == [records[i] for i in block]
    assert calls == [(100 * 56, 100 * 56)]
    scattered = np.array([5, 900, 6, 7])
    assert src.read(scattered) == [records[i] for i in scattered]
    assert src.requests == 3
    data = bytearray(blob)
    data[5 * 56 + 20] ^= 1
    blob = bytes(data)
    with pytest.raises(tfe.CorruptedRecordError) as err:
        src.read(scattered)
    assert (err.value.record_index, err.value.offset) == (5, 5 * 56)


def test_a_failed_batch_is_not_counted_as_delivered(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([bytes([i]) * 10 for i in range(10)])
    data = bytearray(path.read_bytes())
    data[5 * 26 + 12] ^= 1  # payload of record 5 (in the 2nd batch of 4)
    path.write_bytes(bytes(data))
    tfe.Index.build(path).save()
    it = tfe.RecordDataset(path).batches(4)
    next(it)
    with pytest.raises(tfe.CorruptedRecordError):
        next(it)
    assert it.get_state()["position"] == 4


@pytest.mark.parametrize(("block", "window"), [(16, 4), (50, 3), (7, 1)])
def test_block_shuffle_fetches_each_block_once(
    tmp_path: pathlib.Path, block: int, window: int
) -> None:
    path = tmp_path / "a.tfrecord"
    records = [i.to_bytes(2, "little") * 5 for i in range(1000)]
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    blob = path.read_bytes()
    src = FetcherRecords(
        tfe.Index.load(path),
        lambda o, s: blob[o : o + s],
        block_records=block,
        cache_blocks=64 // block + 3 * window,  # a batch may span several windows
    )
    order = sampler.epoch_order(1000, shuffle=tfe.BlockShuffle(block, window), seed=2)
    got = [r for i in range(0, 1000, 64) for r in src.read(order[i : i + 64])]
    assert got == [records[i] for i in order]
    assert src.requests == -(-1000 // block)
    assert src.bytes_fetched == len(blob)


def test_label_sorted_file_shuffled_epoch(tmp_path: pathlib.Path) -> None:
    """The issue's scenario: 70,000 label-sorted records, where a buffer shuffle fails."""
    n = 70_000
    labels = np.arange(n) * 10 // n
    path = tmp_path / "sorted.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(bytes([lab]) + i.to_bytes(4, "little") for i, lab in enumerate(labels))
    ds = tfe.RecordDataset(path)
    got = [r for b in ds.batches(1024, shuffle=True, seed=0) for r in b]
    positions = np.array([int.from_bytes(r[1:], "little") for r in got])
    assert sorted(positions.tolist()) == list(range(n))
    assert abs(np.corrcoef(np.arange(n), positions)[0, 1]) < 0.02
    assert {r[0] for r in got[:100]} == set(range(10))


def _read_in_child(ds: tfe.RecordDataset, picks: list[int]) -> list[bytes]:
    return ds[picks]  # type: ignore[no-any-return]


def test_works_in_a_spawned_process(three_files: tuple[str, list[bytes]]) -> None:
    import concurrent.futures
    import multiprocessing

    pattern, records = three_files
    ds = tfe.RecordDataset(pattern)
    assert len(ds) == 862  # opened here; the child reopens from the pickled arguments
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        got = pool.submit(_read_in_child, ds, [861, 0, 500]).result(timeout=120)
    assert got == [records[861], records[0], records[500]]


@_TMP
@given(
    shards=st.lists(record_lists(max_records=6, max_size=8), min_size=2, max_size=12),
    data=st.data(),
)
def test_many_shards_random_access(
    tmp_path: pathlib.Path, shards: list[list[bytes]], data: st.DataObject
) -> None:
    run = pathlib.Path(tempfile.mkdtemp(dir=tmp_path))  # one directory per example
    for i, recs in enumerate(shards):  # empty shards included
        with tfe.TFRecordWriter(run / f"s-{i:03d}", index=i % 2 == 0) as w:
            w.write_many(recs)
    flat = [r for recs in shards for r in recs]
    ds = tfe.RecordDataset(str(run / "s-*"))
    assert len(ds) == len(flat)
    if flat:
        picks = data.draw(st.lists(st.integers(-len(flat), len(flat) - 1), max_size=40))
        assert ds[picks] == [flat[i] for i in picks]
    assert list(ds) == flat
