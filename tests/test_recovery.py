"""The resynchronizing scanner (``recovery``): candidates, intact records, speed."""

from __future__ import annotations

import struct
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.records import framing, recovery
from tfrecord_engine.testing.damage import record_spans
from tfrecord_engine.testing.records import record_lists


def _header(length: int) -> bytes:
    raw = struct.pack("<Q", length)
    return raw + struct.pack("<I", framing.mask_crc(framing.crc32c(raw)))


def test_vectorized_crc_table_is_crc32c() -> None:
    table = recovery._CRC_TABLE
    crc = 0xFFFFFFFF
    for byte in b"123456789":
        crc = int(table[(crc ^ byte) & 0xFF]) ^ (crc >> 8)
    assert crc ^ 0xFFFFFFFF == 0xE3069283


@given(records=record_lists(max_records=8, max_size=600), junk=st.binary(max_size=40))
def test_candidates_are_exactly_the_record_starts(records: list[bytes], junk: bytes) -> None:
    # Junk that holds no valid header; every record start is found, nothing else.
    blob = junk + framing.frame_many(records)
    starts = [len(junk) + a for a, _ in record_spans(records)]
    found = [int(o) for offs, _ in recovery.header_candidates(blob, 0) for o in offs]
    assert [o for o in found if o >= len(junk)] == starts
    for start in starts:
        assert recovery.find_next_record(blob, start) == start
        assert recovery.is_record_at(blob, start)


def test_find_next_record_skips_garbage_and_bad_data() -> None:
    a, b = framing.frame(b"first"), framing.frame(b"second")
    bad_data = bytearray(a)
    bad_data[13] ^= 1  # header intact, data CRC wrong
    blob = bytes(bad_data) + b"\x00" * 30 + b
    assert recovery.find_next_record(blob, 0) == len(a) + 30
    assert recovery.find_next_record(blob, len(a) + 31) is None
    assert recovery.find_next_record(blob, 0, len(a) + 30) is None  # stop excludes it
    assert not recovery.is_record_at(blob, 0)
    assert not recovery.is_record_at(b"short", 0)


def test_header_whose_record_does_not_fit_is_not_a_candidate() -> None:
    blob = _header(100) + b"x" * 50
    assert list(recovery.header_candidates(blob, 0)) == []
    # With an unknown end (a stream) it is plausible, but not an intact record.
    (offs, lengths), *_ = list(recovery.header_candidates(blob, 0, limit=None))
    assert offs.tolist() == [0]
    assert lengths.tolist() == [100]
    assert recovery.find_next_record(blob, 0, limit=None) is None


def test_stream_limit_rejects_implausible_lengths() -> None:
    blob = _header(recovery.STREAM_MAX_LENGTH) + bytes(8)
    assert list(recovery.header_candidates(blob, 0, limit=None)) == []


def test_empty_and_tiny_buffers() -> None:
    assert recovery.find_next_record(b"", 0) is None
    assert recovery.find_next_record(b"x" * 15, 0) is None
    assert list(recovery.header_candidates(b"x" * 40, 30)) == []
    assert recovery.find_next_record(framing.frame(b""), 0) == 0


def test_records_straddling_scan_windows() -> None:
    # Records at offsets around the growing window boundaries (512, 4096, 32768 ...).
    rng = np.random.default_rng(7)
    for gap in (500, 505, 511, 512, 513, 4090, 4096, 4100, 32770, (1 << 20) + 3):
        blob = rng.integers(1, 256, gap, dtype=np.uint8).tobytes() + framing.frame(b"rec")
        assert recovery.find_next_record(blob, 0) == gap


def test_zero_length_headers_in_zeroed_regions() -> None:
    # Twelve zero bytes are never a header; a real empty record among zeros is found.
    blob = bytes(5000) + framing.frame(b"") + bytes(3000) + framing.frame(b"z")
    assert recovery.find_next_record(blob, 0) == 5000
    assert recovery.find_next_record(blob, 5001) == 5000 + 16 + 3000


def test_dense_nonzero_length_candidates() -> None:
    # int64 arrays of small values put a "plausible length" at every 8th offset.
    blob = np.arange(1, 40000, dtype="<i8").tobytes() + framing.frame(b"after")
    assert recovery.find_next_record(blob, 0) == 39999 * 8


def test_scan_speed_on_damaged_megabytes() -> None:
    rng = np.random.default_rng(1)
    blob = rng.bytes(16 << 20) + bytes(16 << 20) + framing.frame(b"end")
    t0 = time.perf_counter()
    assert recovery.find_next_record(blob, 0) == 32 << 20
    # ~0.1 s on a 2-core CI machine; minutes would mean a per-byte Python loop.
    assert time.perf_counter() - t0 < 5


def test_policy_names() -> None:
    assert recovery.normalize_policy("raise") == "raise"
    assert recovery.normalize_policy("stop") == "stop"
    with pytest.raises(tfe.InvalidArgumentError, match="on_damage must be one of"):
        recovery.normalize_policy("ignore")
    with pytest.raises(ValueError, match="on_damage"):
        tfe.read_records(b"", on_damage="skip!")  # type: ignore[arg-type]


def test_damage_report_validates_and_formats() -> None:
    r = tfe.DamageReport("f.tfrecord", 3, 120, 40, "data CRC mismatch")
    assert str(r) == "f.tfrecord: record 3 at offset 120: data CRC mismatch; 40 byte(s) not read"
    s = tfe.DamageReport(None, 0, 0, None, "x")
    assert "<stream>" in str(s)
    assert "unknown number" in str(s)
    with pytest.raises(tfe.InvalidArgumentError):
        tfe.DamageReport(None, -1, 0, 0, "x")
    with pytest.raises(tfe.InvalidArgumentError):
        tfe.DamageReport(None, 0, -5, 0, "x")
    with pytest.raises(tfe.InvalidArgumentError):
        tfe.DamageReport(None, 0, 0, -1, "x")
    with pytest.raises(AttributeError):
        r.offset = 5  # type: ignore[misc]


def test_damage_warning_is_a_tfrecord_error_and_user_warning() -> None:
    r = tfe.DamageReport("p", 0, 0, 1, "why")
    w = tfe.DamageWarning(str(r), r)
    assert isinstance(w, tfe.TFRecordError)
    assert isinstance(w, UserWarning)
    assert w.report is r
