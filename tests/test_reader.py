"""read_records: round trips, file objects, compressed streams and every damage case."""

from __future__ import annotations

import gzip
import io
import os
import pickle
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import BinaryIO, cast

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.testing.records import compressions, record_lists, write_file

_TMP_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def _header(length: int) -> bytes:
    raw = struct.pack("<Q", length)
    return raw + struct.pack("<I", framing.mask_crc(framing.crc32c(raw)))


class _PipeLike(io.RawIOBase):
    """A non-seekable stream that hands out at most ``step`` bytes per read."""

    def __init__(self, data: bytes, step: int = 7) -> None:
        self._data = data
        self._pos = 0
        self._step = step

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        n = min(len(b), self._step, len(self._data) - self._pos)
        b[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


@_TMP_OK
@given(records=record_lists(), compression=compressions())
def test_round_trip_path_and_file_object(
    tmp_path: Path, records: list[bytes], compression: str
) -> None:
    path = tmp_path / "rt.tfrecord"
    write_file(path, records, compression)
    assert list(tfe.read_records(path, compression)) == records
    with open(path, "rb") as f:
        assert list(tfe.read_records(f, compression)) == records
    assert (
        list(tfe.read_records(cast(BinaryIO, _PipeLike(path.read_bytes())), compression)) == records
    )


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_empty_file_has_no_records(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "empty"
    path.write_bytes(b"")
    assert list(tfe.read_records(path, compression)) == []


def _three_records(tmp_path: Path) -> tuple[Path, list[bytes], list[int]]:
    recs = [b"a" * 10, b"b" * 20, b"c" * 30]
    path = tmp_path / "three.tfrecord"
    write_file(path, recs)
    starts = [0, 26, 62]
    return path, recs, starts


def _collect(path: Path, **kw: object) -> tuple[list[bytes], BaseException | None]:
    out: list[bytes] = []
    try:
        for r in tfe.read_records(path, **kw):  # type: ignore[arg-type]
            out.append(r)
    except tfe.TFRecordError as exc:
        return out, exc
    return out, None


@pytest.mark.parametrize("which", [0, 1, 2])
def test_data_crc_mismatch_names_file_record_offset(tmp_path: Path, which: int) -> None:
    path, recs, starts = _three_records(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[starts[which] + 12 + 3] ^= 0x40
    path.write_bytes(bytes(raw))
    got, err = _collect(path)
    assert got == recs[:which]
    assert isinstance(err, tfe.CorruptedRecordError)
    assert isinstance(err, tfe.DataLossError)
    assert isinstance(err, OSError)
    assert (err.path, err.record_index, err.offset) == (str(path), which, starts[which])
    assert "data CRC mismatch" in str(err)
    assert str(path) in str(err)
    assert f"record {which}" in str(err)
    assert f"offset {starts[which]}" in str(err)
    # verify=False returns the damaged bytes: the caller asked not to check.
    assert len(list(tfe.read_records(path, verify=False))) == 3


@pytest.mark.parametrize("which", [0, 1, 2])
def test_length_crc_mismatch(tmp_path: Path, which: int) -> None:
    path, recs, starts = _three_records(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[starts[which] + 9] ^= 0x01
    path.write_bytes(bytes(raw))
    for verify in (True, False):  # header CRCs are always checked
        got, err = _collect(path, verify=verify)
        assert got == recs[:which]
        assert isinstance(err, tfe.CorruptedRecordError)
        assert (err.record_index, err.offset) == (which, starts[which])
        assert "length CRC mismatch" in str(err)
        assert ("is this even a TFRecord file" in str(err)) == (which == 0)


def test_not_a_tfrecord_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"this is plainly a text file, not TFRecord\n")
    _, err = _collect(path)
    assert isinstance(err, tfe.CorruptedRecordError)
    assert err.offset == 0
    assert err.record_index == 0
    assert "is this even a TFRecord file" in str(err)


@pytest.mark.parametrize("cut", [1, 5, 11])
def test_torn_header_at_end_is_truncation(tmp_path: Path, cut: int) -> None:
    # Stricter than TensorFlow, which silently ignores 1-11 trailing bytes.
    path, recs, _ = _three_records(tmp_path)
    full = path.read_bytes()
    path.write_bytes(full + framing.frame(b"dddd")[:cut])
    got, err = _collect(path)
    assert got == recs
    assert isinstance(err, tfe.TruncatedRecordError)
    assert (err.record_index, err.offset) == (3, len(full))
    assert "truncated header" in str(err)


@pytest.mark.parametrize("keep", [12, 13, 29, 32, 35])
def test_truncated_data_or_footer(tmp_path: Path, keep: int) -> None:
    path, recs, starts = _three_records(tmp_path)
    full = path.read_bytes()
    path.write_bytes(full[: starts[2] + keep])
    got, err = _collect(path)
    assert got == recs[:2]
    assert isinstance(err, tfe.TruncatedRecordError)
    assert (err.record_index, err.offset) == (2, starts[2])


@pytest.mark.parametrize("length", [2**31, 2**40, 2**63, 2**64 - 1])
@pytest.mark.parametrize("kind", ["plain", "pipe", "GZIP", "ZLIB"])
def test_lying_length_is_rejected(tmp_path: Path, length: int, kind: str) -> None:
    data = _header(length) + b"tail"
    path = tmp_path / "lie"
    if kind in ("GZIP", "ZLIB"):
        co = zlib.compressobj(-1, zlib.DEFLATED, 31 if kind == "GZIP" else 15, 9)
        path.write_bytes(co.compress(data) + co.flush())
        source: object = path
        compression = kind
    else:
        path.write_bytes(data)
        source = path if kind == "plain" else _PipeLike(data)
        compression = ""
    with pytest.raises(tfe.DataLossError) as info:
        list(tfe.read_records(source, compression))  # type: ignore[arg-type]
    assert info.value.record_index == 0
    assert info.value.offset == 0


def test_lying_length_under_memory_limit(tmp_path: Path) -> None:
    """A 12-byte file claiming 2**40 bytes fails fast without allocating (RLIMIT_AS)."""
    resource = pytest.importorskip("resource")
    del resource
    path = tmp_path / "lie"
    path.write_bytes(_header(2**40))
    gz = tmp_path / "lie.gz"
    co = zlib.compressobj(-1, zlib.DEFLATED, 31, 9)
    gz.write_bytes(co.compress(_header(2**40) + b"x" * 100) + co.flush())
    script = textwrap.dedent(
        f"""
        import resource, time
        import tfrecord_engine as tfe
        vm = int([l for l in open('/proc/self/status') if l.startswith('VmSize')][0].split()[1])
        limit = (vm + 200 * 1024) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        for p, c in (({str(path)!r}, ""), ({str(gz)!r}, "GZIP")):
            t = time.perf_counter()
            try:
                list(tfe.read_records(p, c))
            except tfe.DataLossError as e:
                assert e.record_index == 0 and e.offset == 0, e
            else:
                raise SystemExit("no error")
            assert time.perf_counter() - t < 0.5
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_gzip_concatenated_members_and_record_spanning_members(tmp_path: Path) -> None:
    recs = [os.urandom(50) for _ in range(5)]
    stream = framing.frame_many(recs)
    split = len(stream) // 2 + 3  # inside a record
    members = b""
    for part in (stream[:split], stream[split:]):
        co = zlib.compressobj(-1, zlib.DEFLATED, 31, 9)
        members += co.compress(part) + co.flush()
    path = tmp_path / "cat.gz"
    path.write_bytes(members)
    assert list(tfe.read_records(path, "GZIP")) == recs
    # Python's gzip module output (FNAME, mtime) is accepted too.
    path.write_bytes(gzip.compress(stream))
    assert list(tfe.read_records(path, "gzip")) == recs


def test_zlib_concatenated_streams_are_all_read(tmp_path: Path) -> None:
    # TensorFlow drops everything after the first ZLIB stream; we never drop data.
    path = tmp_path / "cat.z"
    path.write_bytes(zlib.compress(framing.frame(b"one")) + zlib.compress(framing.frame(b"two")))
    assert list(tfe.read_records(path, "ZLIB")) == [b"one", b"two"]


def _gzip_file(tmp_path: Path, recs: list[bytes]) -> tuple[Path, bytes]:
    path = tmp_path / "g.gz"
    write_file(path, recs, "GZIP")
    return path, path.read_bytes()


def test_gzip_missing_trailer_reports_after_all_records(tmp_path: Path) -> None:
    recs = [b"r%d" % i for i in range(10)]
    path, raw = _gzip_file(tmp_path, recs)
    path.write_bytes(raw[:-8])
    got, err = _collect(path, compression="GZIP")
    assert got == recs
    assert isinstance(err, tfe.TruncatedRecordError)
    assert err.record_index == 10
    assert "end marker" in str(err)


def test_gzip_truncated_mid_record(tmp_path: Path) -> None:
    recs = [os.urandom(3000) for _ in range(4)]
    path, raw = _gzip_file(tmp_path, recs)
    path.write_bytes(raw[: len(raw) // 2])
    got, err = _collect(path, compression="GZIP")
    assert got == recs[: len(got)]
    assert len(got) < 4
    assert isinstance(err, tfe.TruncatedRecordError)
    assert err.record_index == len(got)
    assert err.offset == sum(len(r) + 16 for r in got)


def test_gzip_damaged_data_and_trailer(tmp_path: Path) -> None:
    recs = [b"x" * 100 for _ in range(3)]
    path, raw = _gzip_file(tmp_path, recs)
    damaged = bytearray(raw)
    damaged[-5] ^= 0xFF  # trailer CRC
    path.write_bytes(bytes(damaged))
    _, err = _collect(path, compression="GZIP")
    assert isinstance(err, tfe.CorruptedRecordError)
    assert "GZIP data is damaged" in str(err)


def test_plain_file_read_as_gzip_and_gzip_read_as_plain(tmp_path: Path) -> None:
    path, _, _ = _three_records(tmp_path)
    _, err = _collect(path, compression="GZIP")
    assert isinstance(err, tfe.CorruptedRecordError)
    assert "header check" in str(err)
    assert "valid uncompressed TFRecord header; pass compression=None or 'auto'" in str(err)
    gz, _ = _gzip_file(tmp_path, [b"a"])
    _, err = _collect(gz, compression=None)  # explicit: wins over the bytes
    assert isinstance(err, tfe.DataLossError)
    assert err.offset == 0
    assert "GZIP magic (1f 8b); pass compression='GZIP' or 'auto'" in str(err)
    assert _collect(gz) == ([b"a"], None)  # the default recognises it


def test_gzip_garbage_after_member(tmp_path: Path) -> None:
    recs = [b"a", b"b"]
    path, raw = _gzip_file(tmp_path, recs)
    path.write_bytes(raw + b"garbage!")
    got, err = _collect(path, compression="GZIP")
    assert got == recs
    assert isinstance(err, tfe.CorruptedRecordError)


@given(st.sampled_from([tfe.CorruptedRecordError, tfe.TruncatedRecordError]))
def test_data_loss_errors_pickle(cls: type[tfe.DataLossError]) -> None:
    err = cls("why", path="f.tfrecord", record_index=4, offset=1234)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert (back.path, back.record_index, back.offset, back.reason) == (
        "f.tfrecord",
        4,
        1234,
        "why",
    )
    assert str(back) == str(err) == "f.tfrecord: record 4 at offset 1234: why"


def test_unknown_compression_rejected_by_reader(tmp_path: Path) -> None:
    path, _, _ = _three_records(tmp_path)
    with pytest.raises(tfe.InvalidArgumentError):
        tfe.read_records(path, "SNAPPY")


@pytest.mark.parametrize("window", [1 << 20, 300_000, 70_001])
def test_windows_of_the_sequential_reader_lose_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    # Small records in runs across window ends, large ones read on their own, a record
    # larger than a window, empty records: whatever the window, every record, in order.
    from tfrecord_engine.records import reader

    monkeypatch.setattr(reader, "_WINDOW", window)
    rng = np.random.default_rng(window)
    sizes = [*rng.integers(0, 900, 3000), 0, 70_000, *rng.integers(0, 40_000, 40), 2_500_000]
    sizes += [*rng.integers(0, 200, 2000)]
    records = [rng.bytes(int(n)) for n in sizes]
    path = tmp_path / "mixed.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write_many(records)
    assert list(tfe.read_records(path)) == records
    with open(path, "r+b") as f:  # damage the last record's data: located exactly
        f.seek(-5, os.SEEK_END)
        f.write(b"\xff")
    got: list[bytes] = []
    with pytest.raises(tfe.CorruptedRecordError) as err:
        got.extend(tfe.read_records(path))
    assert got == records[:-1]
    assert err.value.record_index == len(records) - 1
    # And a large record in the middle (the inline loop of large records hands it to
    # the careful step, which names it).
    big = sizes.index(70_000)
    at = sum(len(r) + 16 for r in records[:big]) + 12 + 50_000
    with open(path, "r+b") as f:
        f.seek(at)
        flipped = bytes(b ^ 0xFF for b in f.read(2))
        f.seek(at)
        f.write(flipped)
    got.clear()
    with pytest.raises(tfe.CorruptedRecordError) as err:
        got.extend(tfe.read_records(path))
    assert got == records[:big]
    assert (err.value.record_index, err.value.offset) == (big, at - 12 - 50_000)


@pytest.mark.parametrize("source", [1, 2.5, None, b"a.tfrecord", object()])
def test_a_source_of_the_wrong_type_is_a_type_error(source: object) -> None:
    # Once an AttributeError from deep inside ("'int' object has no attribute 'read'").
    with pytest.raises(TypeError, match="path, a URL or a binary file object") as info:
        tfe.read_records(source)  # type: ignore[arg-type]
    assert isinstance(info.value, tfe.InvalidArgumentError)  # and still one of ours
    with pytest.raises(TypeError, match="file path"):
        tfe.RecordFollower(source)  # type: ignore[arg-type]
