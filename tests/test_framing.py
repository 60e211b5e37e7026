"""Framing: test vectors from TensorFlow, CRC masking, frame/frame_many/parse_header."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfrecord_engine import CorruptedRecordError, TruncatedRecordError
from tfrecord_engine.records import framing
from tfrecord_engine.testing.records import payloads


def test_crc32c_check_value() -> None:
    assert framing.crc32c(b"123456789") == 0xE3069283


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (b"", "000000000000000029039807d8ea82a2"),
        (b"hello", "0500000000000000eab2043e68656c6c6fbb1f1c19"),
    ],
)
def test_frame_matches_tensorflow_vectors(record: bytes, expected: str) -> None:
    assert framing.frame(record).hex() == expected


def test_mask_of_zero_is_delta() -> None:
    assert framing.mask_crc(0) == framing.MASK_DELTA


@given(st.integers(0, 2**32 - 1))
def test_unmask_inverts_mask(crc: int) -> None:
    masked = framing.mask_crc(crc)
    assert 0 <= masked < 2**32
    assert framing.unmask_crc(masked) == crc


@given(st.lists(st.integers(0, 2**32 - 1), max_size=50))
def test_mask_crc_array_matches_scalar(crcs: list[int]) -> None:
    arr = np.array(crcs, dtype=np.uint32)
    got = framing.mask_crc_array(arr)
    assert got.dtype == np.uint32
    assert got.tolist() == [framing.mask_crc(c) for c in crcs]


@given(st.lists(payloads(), max_size=10))
def test_frame_many_equals_concatenated_frames(records: list[bytes]) -> None:
    assert framing.frame_many(records) == b"".join(framing.frame(r) for r in records)


@given(payloads())
def test_frame_layout(record: bytes) -> None:
    framed = framing.frame(record)
    assert len(framed) == len(record) + 16
    length, _ = struct.unpack_from("<QI", framed)
    assert length == len(record)
    assert framed[12 : 12 + len(record)] == record
    assert framing.parse_header(
        framed[:12], remaining=len(framed) - 12, path="p", record_index=0, offset=0
    ) == len(record)


def _header(length: int) -> bytes:
    raw = struct.pack("<Q", length)
    return raw + struct.pack("<I", framing.mask_crc(framing.crc32c(raw)))


def test_parse_header_rejects_length_beyond_remaining_before_allocating() -> None:
    with pytest.raises(TruncatedRecordError) as info:
        framing.parse_header(_header(2**40), remaining=0, path="f", record_index=3, offset=99)
    err = info.value
    assert (err.path, err.record_index, err.offset) == ("f", 3, 99)
    assert "1099511627776" in str(err)


@pytest.mark.parametrize("length", [2**64 - 1, 2**64 - 5])
def test_parse_header_record_size_too_large(length: int) -> None:
    with pytest.raises(CorruptedRecordError, match="record size too large"):
        framing.parse_header(_header(length), remaining=None, path=None, record_index=0, offset=0)


def test_parse_header_bad_length_crc_names_first_record_hint() -> None:
    bad = bytearray(_header(5))
    bad[8] ^= 1
    with pytest.raises(CorruptedRecordError, match="is this even a TFRecord file"):
        framing.parse_header(bytes(bad), remaining=100, path="x", record_index=0, offset=0)
    with pytest.raises(CorruptedRecordError) as info:
        framing.parse_header(bytes(bad), remaining=100, path="x", record_index=2, offset=40)
    assert "TFRecord file" not in str(info.value)
    assert "length CRC" in str(info.value)


def test_parse_header_short() -> None:
    with pytest.raises(TruncatedRecordError, match="5 byte"):
        framing.parse_header(b"\0" * 5, remaining=0, path="x", record_index=1, offset=21)
