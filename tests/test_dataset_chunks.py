"""RecordDataset.batches with chunked decoding and read-ahead: same batches, same errors."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.test_batch_decoder import assert_same
from tfrecord_engine.data import epochs, prepare
from tfrecord_engine.example.specs import FeatureSpec

FEATURES: dict[str, FeatureSpec] = {
    "label": tfe.FixedLenFeature([], "int64"),
    "x": tfe.FixedLenFeature([2], "float32"),
    "tags": tfe.VarLenFeature("string"),
    "seq": tfe.FixedLenSequenceFeature([], "int64", allow_missing=True),
}


def _record(i: int) -> bytes:
    return tfe.encode_example(
        {
            "label": i,
            "x": np.array([i, -i], np.float32),
            "tags": [b"t%d" % k for k in range(i % 4 + 1)],
            "seq": np.arange(i % 5, dtype=np.int64),
        }
    )


def _dataset(tmp_path: Path, records: list[bytes]) -> tfe.RecordDataset:
    path = tmp_path / "d.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    return tfe.RecordDataset(str(path), features=FEATURES)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(1, 300),
    batch=st.integers(1, 70),
    shuffle=st.booleans(),
    readahead=st.integers(0, 3),
    pad=st.booleans(),
)
def test_chunked_batches_equal_per_batch_parsing(  # noqa: PLR0917 - Hypothesis arguments
    tmp_path: Path, n: int, batch: int, shuffle: bool, readahead: int, pad: bool
) -> None:
    records = [_record(i) for i in range(n)]
    ds = _dataset(tmp_path, records)
    it = ds.batches(batch, shuffle=shuffle, seed=3, pad_remainder=pad, readahead=readahead)
    # The reference: the sampler's batches parsed one by one with parse_example.
    ref = tfe.RecordDataset(str(tmp_path / "d.tfrecord")).batches(
        batch, shuffle=shuffle, seed=3, pad_remainder=pad
    )
    got = list(it)
    want: list[Any] = []
    for raw in ref:
        records_of_batch = raw.records if isinstance(raw, tfe.PaddedBatch) else raw
        parsed = tfe.parse_example(records_of_batch, FEATURES)
        if isinstance(raw, tfe.PaddedBatch):
            parsed["mask"] = raw.mask
        want.append(parsed)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)


def test_a_bad_record_mid_chunk_surfaces_at_its_batch(tmp_path: Path) -> None:
    records = [_record(i) for i in range(100)]
    records[37] = tfe.encode_example({"label": 1.5})  # wrong type in batch 3 (size 10)
    ds = _dataset(tmp_path, records)
    it = ds.batches(10)
    for _ in range(3):
        next(it)
    state = it.get_state()
    with pytest.raises(tfe.ExampleParseError) as info:
        next(it)
    assert info.value.index == 7  # index within its batch, as parse_example reports
    assert it.get_state() == state  # not delivered: a resume retries this batch
    with pytest.raises(tfe.ExampleParseError):
        next(it)


def test_damaged_record_mid_chunk_surfaces_at_its_batch(tmp_path: Path) -> None:
    records = [_record(i) for i in range(100)]
    ds = _dataset(tmp_path, records)
    offset = int(ds.indexes[0].offsets[55]) + 20
    path = tmp_path / "d.tfrecord"
    raw = bytearray(path.read_bytes())
    raw[offset] ^= 0xFF
    path.write_bytes(bytes(raw))
    ds = tfe.RecordDataset(str(path), features=FEATURES)
    it = ds.batches(10)
    delivered = [next(it) for _ in range(5)]
    assert [int(b["label"][0]) for b in delivered] == [0, 10, 20, 30, 40]
    with pytest.raises(tfe.CorruptedRecordError) as info:
        next(it)
    assert info.value.record_index == 55


def test_decoder_stats_count_the_fast_path(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, [_record(i) for i in range(500)])
    total = sum(len(b["label"]) for b in ds.batches(64))
    assert total == 500
    assert ds.decoder.stats.records == 500
    assert ds.decoder.stats.fallback_records == 0


def _chunk_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of records of every chunk epochs prepare from now on."""
    sizes: list[int] = []
    real = epochs.prepare_chunk  # type: ignore[attr-defined]  # (imported there)

    def spy(ds: Any, batches: list[Any]) -> Any:
        sizes.append(sum(len(b.indices) for b in batches))
        return real(ds, batches)

    monkeypatch.setattr(epochs, "prepare_chunk", spy)
    return sizes


@pytest.mark.parametrize("batch", [1, 4, 16])
def test_chunks_of_big_records_are_cut_by_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    # A chunk holds about CHUNK_BYTES of records (at least one batch), in file order or
    # shuffled, so it is read, checked and decoded while in the CPU's cache (and a
    # shuffled chunk of big records is not hundreds of MB); the batches are the same.
    from tfrecord_engine.data import epochs

    sizes = _chunk_sizes(monkeypatch)
    monkeypatch.setattr(epochs, "CHUNK_BYTES", 20_000)
    spec: dict[str, FeatureSpec] = {"label": tfe.FixedLenFeature([], "int64")}
    records = [tfe.encode_example({"label": i, "pad": [b"x" * 3000]}) for i in range(50)]
    path = tmp_path / "big.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write_many(records)
    ds = tfe.RecordDataset(str(path), features=spec)
    got = [b["label"].tolist() for b in ds.batches(batch)]
    assert got == [list(range(i, min(i + batch, 50))) for i in range(0, 50, batch)]
    # 20,000 bytes hold 6 records of ~3 KB: chunks of max(6 // batch, 1) batches.
    assert max(sizes) == max(6 // batch, 1) * batch
    sizes.clear()
    shuffled = [x for b in ds.batches(batch, shuffle=True, seed=1) for x in b["label"].tolist()]
    assert sorted(shuffled) == list(range(50))
    assert max(sizes) == max(6 // batch, 1) * batch  # shuffled: the same cap
    # The chunk size changes no batch of a shuffled epoch.
    monkeypatch.setattr(epochs, "CHUNK_BYTES", 1 << 30)
    sizes.clear()
    again = tfe.RecordDataset(str(path), features=spec)  # (a new dataset: its epoch 0)
    whole = [x for b in again.batches(batch, shuffle=True, seed=1) for x in b["label"].tolist()]
    assert max(sizes) > max(6 // batch, 1) * batch  # (the ramp's chunks: see ramp)
    assert sum(sizes) == 50
    assert whole == shuffled


def test_in_order_chunks_of_many_keys_are_whole_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A spec of many keys builds each key's column once a chunk: in file order it
    # takes the chunks of a shuffled epoch, whatever the byte cap allows (here 10 keys
    # count as many, and a whole chunk is 32 records).
    sizes = _chunk_sizes(monkeypatch)
    monkeypatch.setattr(epochs, "CHUNK_BYTES", 20_000)
    monkeypatch.setattr(epochs, "MANY_KEYS", 10)
    monkeypatch.setattr(epochs, "DEFAULT_CHUNK_RECORDS", 32)
    spec: dict[str, FeatureSpec] = {f"k{j}": tfe.FixedLenFeature([], "int64") for j in range(10)}
    records = [
        tfe.encode_example({**{f"k{j}": i + j for j in range(10)}, "pad": [b"x" * 3000]})
        for i in range(120)
    ]
    path = tmp_path / "keys.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write_many(records)
    ds = tfe.RecordDataset(str(path), features=spec)
    got = [x for b in ds.batches(4, readahead=1) for x in b["k3"].tolist()]
    assert got == [i + 3 for i in range(120)]
    assert sizes == [4, 8, 16, 32, 32, 28]  # (after the ramp's 1, 2, 4 batches: see ramp)
    # 20,000 bytes hold 6 records of ~3 KB; 10 keys take whole chunks: 8 batches.
    assert max(sizes) == 32
    assert epochs.chunk_records(3000.0, 10) == 32
    assert epochs.chunk_records(3000.0, 9) == 6  # (few keys: the byte cap)
    # Many keys of large records: within MANY_KEYS_CHUNK_BYTES, not a whole chunk.
    monkeypatch.setattr(epochs, "DEFAULT_CHUNK_RECORDS", 4096)
    assert epochs.chunk_records(16_384.0, 40) == epochs.MANY_KEYS_CHUNK_BYTES // 16_384
    assert epochs.chunk_records(3000.0, 40) == 4096


@pytest.mark.parametrize("shuffle", [False, True])
def test_an_epoch_starts_with_a_chunk_of_one_batch_then_doubles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shuffle: bool
) -> None:
    # An epoch's first batch waits for its first chunk alone: chunks of 1, 2, 4, ...
    # batches, then whole ones (here 8 batches of 4 records); the batches are the same.
    sizes = _chunk_sizes(monkeypatch)
    monkeypatch.setattr(epochs, "DEFAULT_CHUNK_RECORDS", 32)
    ds = _dataset(tmp_path, [_record(i) for i in range(100)])
    epoch = ds.batches(4, shuffle=shuffle, seed=2, readahead=1)  # (one thread: in order)
    got = [x for b in epoch for x in b["label"].tolist()]
    assert (sorted(got) if shuffle else got) == list(range(100))
    assert sizes == [4, 8, 16, 32, 32, 8]
    assert list(itertools.islice(prepare.ramp(16), 7)) == [1, 2, 4, 8, 16, 16, 16]
    assert list(itertools.islice(prepare.ramp(3), 4)) == [1, 2, 3, 3]
    assert list(itertools.islice(prepare.ramp(1), 2)) == [1, 1]


def test_read_ahead_threads_follow_the_records() -> None:
    """Two threads for specs decoded in compiled code; one for raw records, for records
    of large strings with nothing but scalars beside them (their bytes objects are made
    under the GIL) unless dropped, and where only one chunk is read ahead or the
    machine has one core."""
    threads = epochs.read_ahead_threads
    numbers = {"x": tfe.FixedLenFeature([4], "float32"), "v": tfe.VarLenFeature("int64")}
    image = {"img": tfe.FixedLenFeature([], "string"), "y": tfe.FixedLenFeature([], "int64")}
    two = min(2, os.cpu_count() or 1)
    assert threads(2, numbers, 50_000.0) == two
    assert threads(2, image, 300.0) == two
    assert threads(2, image, 8_000.0) == 1
    assert threads(2, image, 8_000.0, frozenset({"img"})) == two
    assert threads(2, {"raw": tfe.RawFeature([8192], "uint8")}, 8_200.0) == two
    # Lists beside the strings: their decode runs without the GIL, beside the copies.
    captioned = {**image, "ids": tfe.VarLenFeature("int64")}
    assert threads(2, captioned, 5_000.0) == two
    assert threads(2, {**image, "emb": tfe.FixedLenFeature([16], "float32")}, 5_000.0) == two
    assert threads(2, {**image, "w": tfe.FixedLenFeature([], "float32")}, 5_000.0) == 1
    # Records this large: the strings' copies outweigh the lists, one thread again.
    assert threads(2, captioned, 16_000.0) == 1
    assert threads(2, None, 100.0) == 1
    assert threads(1, numbers, 100.0) == 1


@pytest.mark.parametrize("shuffle", [False, True])
def test_chunks_prepared_on_two_threads_equal_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shuffle: bool
) -> None:
    """Chunks of 64 records on two read-ahead threads: the same batches in the same
    order as prepared on demand, the decoder's counts exact, and an error at its batch
    with every batch before it delivered."""
    monkeypatch.setattr(epochs, "DEFAULT_CHUNK_RECORDS", 64)
    monkeypatch.setattr(epochs, "CHUNK_BYTES", 64 * 40)
    records = [_record(i) for i in range(1_000)]
    ds = _dataset(tmp_path, records)
    assert epochs.read_ahead_threads(2, ds.features, 40.0) == min(2, os.cpu_count() or 1)
    want = list(ds.batches(16, shuffle=shuffle, seed=5, readahead=0))
    fresh = _dataset(tmp_path, records)
    got = list(fresh.batches(16, shuffle=shuffle, seed=5, readahead=2))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)
    assert fresh.decoder.stats.records == 1_000
    records[700] = tfe.encode_example({"label": 1.5})  # batch 43 of 16 in file order
    bad = _dataset(tmp_path, records)
    it = bad.batches(16, readahead=2)
    labels = [int(next(it)["label"][0]) for _ in range(43)]
    assert labels == [16 * k for k in range(43)]
    with pytest.raises(tfe.ExampleParseError) as info:
        next(it)
    assert info.value.index == 700 - 16 * 43
