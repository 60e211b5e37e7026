"""The sidecar index: building, persistence, stale detection, DALI text indexes."""

from __future__ import annotations

import os
import pathlib
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.index.sidecar import index_path_for
from tfrecord_engine.records import framing
from tfrecord_engine.testing.epochs import record_lists

_TMP = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def _write(path: pathlib.Path, records: list[bytes], **kw: object) -> str:
    with tfe.TFRecordWriter(path, **kw) as w:  # type: ignore[arg-type]
        w.write_many(records)
    return str(path)


def _expected(records: list[bytes]) -> tuple[list[int], list[int]]:
    offsets, pos = [], 0
    for r in records:
        offsets.append(pos)
        pos += len(r) + 16
    return offsets, [len(r) for r in records]


@_TMP
@given(records=record_lists(), uniform=st.booleans())
def test_build_finds_every_record(
    tmp_path: pathlib.Path, records: list[bytes], uniform: bool
) -> None:
    if uniform:  # exercises the equal-size fast path
        records = [r.ljust(8, b"x")[:8] for r in records]
    path = _write(tmp_path / "a.tfrecord", records)
    idx = tfe.Index.build(path)
    offsets, lengths = _expected(records)
    assert idx.offsets.tolist() == offsets
    assert idx.lengths.tolist() == lengths
    assert idx.stream_size == os.path.getsize(path)


@_TMP
@given(
    records=record_lists(max_records=20),
    kind=st.sampled_from(["", "GZIP", "ZLIB"]),
    every=st.integers(1, 7),
)
def test_writer_index_equals_built_index(
    tmp_path: pathlib.Path, records: list[bytes], kind: str, every: int
) -> None:
    path = tmp_path / f"w{kind}.tfrecord"
    with tfe.TFRecordWriter(path, kind, index=True, index_flush_every=every) as w:
        half = len(records) // 2
        for r in records[:half]:
            w.write(r)
        w.flush()  # a partial flush between restart points must not shift them
        w.write_many(records[half:])
    assert list(tfe.read_records(path, kind)) == records
    written = tfe.Index.load(path)
    built = tfe.Index.build(path, kind)
    assert written.offsets.tolist() == built.offsets.tolist()
    assert written.lengths.tolist() == built.lengths.tolist()
    assert written.compression is built.compression
    if kind:
        assert len(written.restarts) == len(records) // every
    assert tfe.RecordDataset(path, compression=kind)[::-1] == records[::-1]


def test_restart_points_decode_on_their_own(tmp_path: pathlib.Path) -> None:
    records = [bytes([i % 251]) * (50 + i) for i in range(40)]
    path = tmp_path / "g.tfrecord"
    with tfe.TFRecordWriter(path, "GZIP", index=True, index_flush_every=8) as w:
        w.write_many(records)
    idx = tfe.Index.load(path)
    blob = path.read_bytes()
    for (coff, doff), first in zip(idx.restarts.tolist(), range(8, 41, 8), strict=True):
        tail = zlib.decompressobj(-15).decompress(blob[coff:])
        assert doff == idx.offsets[first] if first < 40 else doff == idx.stream_size
        if first < 40:
            assert tail[12 : 12 + len(records[first])] == records[first]


def test_save_load_round_trip(tmp_path: pathlib.Path) -> None:
    path = _write(tmp_path / "a.tfrecord", [b"a", b"bb", b""])
    idx = tfe.Index.build(path)
    assert idx.save() == str(tmp_path / ".tfeidx" / "a.tfrecord.tfeidx") == index_path_for(path)
    back = tfe.Index.load(path)
    assert back.offsets.tolist() == idx.offsets.tolist()
    assert back.lengths.tolist() == idx.lengths.tolist()
    assert (back.data_size, back.fingerprint) == (idx.data_size, idx.fingerprint)


@pytest.mark.parametrize("change", ["append", "truncate", "replace", "empty"])
def test_stale_index_is_detected(tmp_path: pathlib.Path, change: str) -> None:
    records = [bytes([i]) * 100 for i in range(50)]
    path = _write(tmp_path / "a.tfrecord", records, index=True)
    if change == "append":
        with open(path, "ab") as f:
            f.write(framing.frame(b"more"))
    elif change == "truncate":
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 116)
    elif change == "replace":  # same size, different content
        _write(tmp_path / "a.tfrecord", [bytes([i + 1]) * 100 for i in range(50)])
    else:
        _write(tmp_path / "a.tfrecord", [])
    with pytest.raises(tfe.StaleIndexError, match="stale"):
        tfe.Index.load(path)
    with pytest.raises(tfe.StaleIndexError):
        tfe.Index.open(path, rebuild=False)
    # Rebuilding gives the file as it is now, and the dataset reads it right.
    now = list(tfe.read_records(path))
    assert len(tfe.Index.open(path)) == len(now)
    assert tfe.RecordDataset(path)[: len(now)] == now
    assert len(tfe.Index.load(path)) == len(now)  # the rebuilt index was saved


def test_damaged_or_foreign_index_file(tmp_path: pathlib.Path) -> None:
    path = _write(tmp_path / "a.tfrecord", [b"x"] * 5, index=True)
    side = pathlib.Path(index_path_for(path))
    good = side.read_bytes()
    for bad, match in [
        (good[:-1] + bytes([good[-1] ^ 1]), "checksum"),
        (good[:60] + b"\xff" + good[61:], "checksum"),
        (good[:-8], "damaged index"),
        (b"offset size\n", "magic"),
        (good[:8] + (99).to_bytes(4, "little") + good[12:], "version 99"),
    ]:
        side.write_bytes(bad)
        with pytest.raises(tfe.IndexFormatError, match=match):
            tfe.Index.load(path, side)
        assert len(tfe.Index.open(path)) == 5  # rebuilt and cached
        # The damaged file beside the data is left alone; the rebuilt index (a header
        # walk's, version 1) is in the user's cache and is what a load finds next.
        assert side.read_bytes() == bad
        assert tfe.Index.load(path).to_bytes() == tfe.Index.build(path).to_bytes()
        assert tfe.Index.load(path).to_bytes()[12:-4] == good[12:-4]


def test_index_of_another_file_is_foreign(tmp_path: pathlib.Path) -> None:
    a = _write(tmp_path / "a.tfrecord", [b"x"] * 5, index=True)
    b = _write(tmp_path / "b.tfrecord", [b"y"] * 6)
    with pytest.raises(tfe.StaleIndexError):
        tfe.Index.load(b, index_path_for(a))


@pytest.mark.parametrize("where", ["length", "length_crc", "truncated"])
def test_build_reports_damage_like_the_reader(tmp_path: pathlib.Path, where: str) -> None:
    records = [b"a" * 30, b"b" * 31, b"c" * 32, b"d" * 33]
    path = _write(tmp_path / "a.tfrecord", records)
    data = bytearray(pathlib.Path(path).read_bytes())
    third = 46 + 47  # offset of record 2
    if where == "length":
        data[third] ^= 0x01
    elif where == "length_crc":
        data[third + 9] ^= 0x40
    else:
        del data[-5:]
    pathlib.Path(path).write_bytes(bytes(data))
    with pytest.raises(tfe.DataLossError) as built:
        tfe.Index.build(path)
    with pytest.raises(tfe.DataLossError) as read:
        list(tfe.read_records(path, verify=False))
    assert type(built.value) is type(read.value)
    assert (built.value.record_index, built.value.offset) == (
        read.value.record_index,
        read.value.offset,
    )
    assert built.value.path == path


def test_dali_text_export_import(tmp_path: pathlib.Path) -> None:
    records = [b"abc", b"", b"z" * 300]
    path = _write(tmp_path / "a.tfrecord", records)
    idx = tfe.Index.build(path)
    assert idx.to_text() == "0 19\n19 16\n35 316\n"  # offset, framed size (DALI/tfrecord)
    text = tmp_path / "a.idx"
    idx.save_text(text)
    back = tfe.Index.from_text(text, path)
    assert back.offsets.tolist() == [0, 19, 35]
    assert back.lengths.tolist() == [3, 0, 300]
    back.save()
    assert tfe.RecordDataset(path)[[2, 0, 1]] == [records[2], records[0], records[1]]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("0 19\n19 16\n", tfe.StaleIndexError),  # misses the last record
        ("0 19\n20 16\n35 316\n", tfe.StaleIndexError),  # not back to back
        ("0 20\n20 15\n35 316\n", tfe.StaleIndexError),  # sizes lie
        ("0 19\n19\n", tfe.IndexFormatError),
        ("zero 19\n", tfe.IndexFormatError),
    ],
)
def test_dali_import_rejects_what_does_not_fit(
    tmp_path: pathlib.Path, text: str, error: type[Exception]
) -> None:
    path = _write(tmp_path / "a.tfrecord", [b"abc", b"", b"z" * 300])
    (tmp_path / "a.idx").write_text(text)
    with pytest.raises(error):
        tfe.Index.from_text(tmp_path / "a.idx", path)


def test_text_export_refuses_empty_and_compressed(tmp_path: pathlib.Path) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="empty"):
        tfe.Index.build(_write(tmp_path / "e.tfrecord", [])).to_text()
    gz = _write(tmp_path / "g.tfrecord", [b"a"], compression="GZIP")
    with pytest.raises(tfe.InvalidArgumentError, match="uncompressed"):
        tfe.Index.build(gz, "GZIP").to_text()
    # save_text makes the text first: no empty file is left behind.
    for data, kind in ((tmp_path / "e.tfrecord", None), (gz, "GZIP")):
        target = tmp_path / "out.tfindex"
        with pytest.raises(tfe.InvalidArgumentError):
            tfe.Index.build(data, kind).save_text(target)
        assert not target.exists()


def test_open_rejects_a_compression_mismatch(tmp_path: pathlib.Path) -> None:
    path = _write(tmp_path / "g.tfrecord", [b"a"], compression="GZIP", index=True)
    with pytest.raises(tfe.InvalidArgumentError, match=r"compression 'GZIP'.*'auto'"):
        tfe.Index.open(path, None)
    assert tfe.Index.open(path).compression is tfe.Compression.GZIP  # "auto": its own


def test_index_arrays_are_numpy_uint64(tmp_path: pathlib.Path) -> None:
    idx = tfe.Index.build(_write(tmp_path / "a.tfrecord", [b"a"] * 3))
    assert idx.offsets.dtype == np.uint64
    assert idx.lengths.dtype == np.uint64
    assert "3 records" in repr(idx)


def test_unsaveable_sidecar_is_not_fatal(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "a.tfrecord", [b"a", b"b"])

    def refuse(self: tfe.Index, index_path: object = None, **kwargs: object) -> str:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(tfe.Index, "save", refuse)
    assert len(tfe.Index.open(path)) == 2
    assert tfe.RecordDataset(path)[1] == b"b"
    assert not os.path.exists(index_path_for(path))
