"""TFRecordWriter: lifecycle, argument checking, compression spellings."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.testing.records import COMPRESSION_SPELLINGS


def test_uncompressed_output_is_concatenated_frames(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    recs = [b"", b"x", b"hello" * 100]
    with tfe.TFRecordWriter(path) as w:
        for r in recs:
            w.write(r)
    assert path.read_bytes() == b"".join(framing.frame(r) for r in recs)


def test_write_accepts_bytes_like_and_str(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write(bytearray(b"ab"))
        w.write(memoryview(b"cd"))
        w.write("é")  # TensorFlow writes str as UTF-8
        w.write(memoryview(bytes(range(8))).cast("I"))  # non-byte itemsize
        assert w.records_written == 4
    assert list(tfe.read_records(path)) == [b"ab", b"cd", "é".encode(), bytes(range(8))]


def test_write_rejects_non_bytes(tmp_path: Path) -> None:
    with (
        tfe.TFRecordWriter(tmp_path / "a") as w,
        pytest.raises(tfe.InvalidArgumentError, match="int"),
    ):
        w.write(3)  # type: ignore[arg-type]


def test_close_is_idempotent_and_write_after_close_raises(tmp_path: Path) -> None:
    w = tfe.TFRecordWriter(tmp_path / "a", "GZIP")
    w.write(b"x")
    w.close()
    w.close()
    assert w.closed
    with pytest.raises(tfe.WriterClosedError, match="write on a closed"):
        w.write(b"y")
    with pytest.raises(tfe.WriterClosedError, match="flush on a closed"):
        w.flush()
    with pytest.raises(ValueError, match="write_many on a closed"):
        w.write_many([b"z"])
    assert list(tfe.read_records(tmp_path / "a", "GZIP")) == [b"x"]


@pytest.mark.parametrize("compression", COMPRESSION_SPELLINGS)
def test_compression_spellings(tmp_path: Path, compression: str | None) -> None:
    path = tmp_path / "a"
    with tfe.TFRecordWriter(path, compression) as w:
        w.write_many([b"a", b"bb"])
    assert list(tfe.read_records(path, compression)) == [b"a", b"bb"]
    raw = path.read_bytes()
    kind = (compression or "").upper()
    if kind == "GZIP":
        assert raw[:2] == b"\x1f\x8b"
    elif kind == "ZLIB":
        assert raw[:2] == b"\x78\x9c"
    else:
        assert raw == framing.frame_many([b"a", b"bb"])


@pytest.mark.parametrize("bad", ["SNAPPY", "gz", "BOGUS", 3])
def test_unknown_compression_is_a_value_error(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="not a valid compression type"):
        tfe.TFRecordWriter(tmp_path / "a", bad)  # type: ignore[arg-type]
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize(("kind", "wbits"), [("GZIP", 31), ("ZLIB", 15)])
def test_flush_is_a_partial_flush_like_tensorflow(tmp_path: Path, kind: str, wbits: int) -> None:
    path = tmp_path / "a"
    with tfe.TFRecordWriter(path, kind) as w:
        w.write(b"one")
        w.flush()
        w.write(b"two")
    co = zlib.compressobj(-1, zlib.DEFLATED, wbits, 9, zlib.Z_DEFAULT_STRATEGY)
    expected = co.compress(framing.frame(b"one")) + co.flush(zlib.Z_PARTIAL_FLUSH)
    expected += co.compress(framing.frame(b"two")) + co.flush(zlib.Z_FINISH)
    assert path.read_bytes() == expected


def test_zero_record_compressed_files_match_tensorflow_bytes(tmp_path: Path) -> None:
    # Spec §2: TF's zero-record GZIP file is 20 bytes, ZLIB 8 bytes.
    tfe.TFRecordWriter(tmp_path / "g", "GZIP").close()
    tfe.TFRecordWriter(tmp_path / "z", "ZLIB").close()
    assert (tmp_path / "g").read_bytes().hex() == "1f8b080000000000000303000000000000000000"
    assert (tmp_path / "z").read_bytes().hex() == "789c030000000001"


def test_repr_mentions_state(tmp_path: Path) -> None:
    w = tfe.TFRecordWriter(tmp_path / "a")
    assert "open" in repr(w)
    w.close()
    assert "closed" in repr(w)


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_index_with_append_is_rebuilt_after_publish(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path, compression, index=True) as w:
        w.write_many([b"one", b"two"])
    with tfe.TFRecordWriter(path, compression, append=True, index=True) as w:
        w.write(b"three")
    ds = tfe.RecordDataset(str(path), compression=compression or None)
    assert len(ds) == 3
    assert ds[[2, 0]] == [b"three", b"one"]
    idx = tfe.Index.load(path)
    assert len(idx) == 3


def test_index_is_not_published_when_the_data_is_not(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"

    def fail_midway() -> None:
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write(b"x")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fail_midway()
    assert list(tmp_path.iterdir()) == []
