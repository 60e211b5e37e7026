"""Hand-built wire edge cases for the Example decoder (TensorFlow's fast-parser rules)."""

from __future__ import annotations

import contextlib
import time

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.errors import MalformedExampleError

I64 = {"x": tfe.VarLenFeature("int64")}


def _ld(tag: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([tag, len(payload)]) + payload


def _entry(key: bytes, feature: bytes) -> bytes:
    return _ld(0x0A, _ld(0x0A, key) + _ld(0x12, feature))


def _example(*entries: bytes) -> bytes:
    return _ld(0x0A, b"".join(entries))


def _values(data: bytes, spec: dict[str, object] | None = None) -> list[int]:
    out = tfe.parse_single_example(data, spec or I64)  # type: ignore[arg-type]
    return out["x"].values.tolist()  # type: ignore[no-any-return]


def test_unpacked_int64_is_accepted() -> None:
    unpacked = _ld(0x1A, b"\x08\x01\x08\x02\x08\x7f")
    assert _values(_example(_entry(b"x", unpacked))) == [1, 2, 127]


def test_unpacked_float_is_accepted() -> None:
    feature = _ld(0x12, b"\x0d" + np.float32(1.5).tobytes() + b"\x0d" + np.float32(-2).tobytes())
    out = tfe.parse_single_example(
        _example(_entry(b"x", feature)), {"x": tfe.VarLenFeature("float32")}
    )
    assert out["x"].values.tolist() == [1.5, -2.0]


def test_negative_int64_is_a_ten_byte_varint() -> None:
    data = tfe.encode_example({"x": -1})
    assert b"\xff" * 9 + b"\x01" in data
    assert _values(data) == [-1]


def test_duplicate_keys_last_wins_within_and_across_examples() -> None:
    first = _entry(b"x", _ld(0x1A, _ld(0x0A, b"\x01")))
    second = _entry(b"x", _ld(0x1A, _ld(0x0A, b"\x02\x03")))
    assert _values(_example(first, second)) == [2, 3]
    assert _values(_example(first) + _example(second)) == [2, 3]
    assert tfe.decode_example(_example(first) + _example(second))["x"].tolist() == [2, 3]


def test_unknown_top_level_fields_are_skipped() -> None:
    data = (
        b"\x10\x96\x01"
        + b"\x19"
        + bytes(8)
        + _example(_entry(b"x", _ld(0x1A, b"")))
        + b"\x25"
        + bytes(4)
    )
    assert _values(data) == []


def test_groups_are_rejected_by_the_parser_but_skipped_by_decode() -> None:
    data = b"\x0b\x0c" + _example(_entry(b"x", _ld(0x1A, b"\x08\x01")))
    with pytest.raises(MalformedExampleError, match="groups"):
        tfe.parse_single_example(data, I64)
    # protobuf (and so decode_example) skips a well-formed unknown group.
    assert tfe.decode_example(data)["x"].tolist() == [1]
    with pytest.raises(MalformedExampleError):
        tfe.decode_example(b"\x0b" + _example())


def test_empty_feature_is_missing() -> None:
    data = _example(_entry(b"x", b""))
    spec = {"x": tfe.FixedLenFeature([], "int64", default_value=7)}
    assert tfe.parse_single_example(data, spec)["x"].tolist() == 7
    assert tfe.decode_example(data) == {}


def test_empty_list_is_present_not_missing() -> None:
    data = _example(_entry(b"x", _ld(0x1A, b"")))
    with pytest.raises(tfe.ExampleParseError, match="Some int64_list slice was not parsed"):
        tfe.parse_single_example(data, {"x": tfe.FixedLenFeature([], "int64", default_value=7)})
    assert tfe.parse_single_example(data, {"x": tfe.FixedLenFeature([0], "int64")})["x"].shape == (
        0,
    )


def test_map_entry_value_before_key() -> None:
    entry = _ld(0x0A, _ld(0x12, _ld(0x1A, _ld(0x0A, b"\x04"))) + _ld(0x0A, b"x"))
    assert _values(_example(entry)) == [4]


@pytest.mark.parametrize(
    "entry",
    [
        _ld(0x0A, _ld(0x0A, b"x")),  # key only
        _ld(0x0A, _ld(0x12, b"")),  # value only
        _ld(0x0A, _ld(0x0A, b"x") + _ld(0x12, b"") + _ld(0x0A, b"y")),  # three fields
        _ld(0x0A, _ld(0x0A, b"x") + b"\x18\x01"),  # unexpected field
    ],
    ids=["key-only", "value-only", "three-fields", "unknown-field"],
)
def test_malformed_map_entries(entry: bytes) -> None:
    with pytest.raises(MalformedExampleError, match="Could not parse example input"):
        tfe.parse_example([_example(entry)], I64)


def test_unsupported_datatype_only_for_requested_keys() -> None:
    bad = _entry(b"x", b"\x22\x00")
    with pytest.raises(MalformedExampleError, match="Unsupported datatype"):
        _values(_example(bad))
    # A malformed value under a key nobody asked for is ignored, as in TensorFlow.
    out = tfe.parse_single_example(_example(bad), {"y": tfe.VarLenFeature("int64")})
    assert out["y"].values.size == 0


@pytest.mark.parametrize(
    ("data", "dtype"),
    [
        (b"\x0a\x05\x0a\x03", "int64"),  # length beyond the end
        (_example(_entry(b"x", _ld(0x1A, _ld(0x0A, b"\x80")))), "int64"),  # truncated varint
        (_example(_entry(b"x", _ld(0x1A, _ld(0x0A, b"\xff" * 10 + b"\x01")))), "int64"),
        (_example(_entry(b"x", _ld(0x12, b"\x0a\x08" + bytes(4)))), "float32"),
        (_example(_entry(b"x", _ld(0x0A, b"\x0a\x05ab"))), "string"),
    ],
    ids=[
        "overlong-length",
        "truncated-varint",
        "eleven-byte-varint",
        "overrun-float",
        "overrun-bytes",
    ],
)
def test_malformed_values_raise_our_error(data: bytes, dtype: str) -> None:
    with pytest.raises(MalformedExampleError):
        tfe.parse_single_example(data, {"x": tfe.VarLenFeature(dtype)})
    with pytest.raises(MalformedExampleError):
        tfe.decode_example(data)


def test_nested_lengths_may_overrun_like_tensorflow() -> None:
    # TensorFlow reads nested messages under limits that stop at the enclosing end.
    assert _values(_example(_entry(b"x", b"\x1a\x06\x0a\x03\x01\x02\x03"))) == [1, 2, 3]
    assert _values(_example(_entry(b"x", b"\x1a\x05\x0a\x05\x01\x02\x03"))) == [1, 2, 3]
    # A packed float of a length that is not a multiple of 4 yields len // 4 floats.
    spec = {"x": tfe.VarLenFeature("float32")}
    ragged = _example(_entry(b"x", _ld(0x12, _ld(0x0A, np.float32(2).tobytes() + b"\x00"))))
    assert tfe.parse_single_example(ragged, spec)["x"].values.tolist() == [2.0]


def test_numpy_varint_path_matches_loop() -> None:
    values = np.array([0, 1, 127, 128, 300, -1, 2**62, -(2**63), 2**63 - 1] * 10, dtype=np.int64)
    data = tfe.encode_example({"x": values})
    np.testing.assert_array_equal(tfe.decode_example(data)["x"], values)


@pytest.mark.parametrize("depth", [100_000])
def test_deep_nesting_neither_recurses_nor_hangs(depth: int) -> None:
    start = time.perf_counter()
    groups = b"\x0b" * depth  # nested group-start tags
    with pytest.raises(MalformedExampleError):
        tfe.decode_example(groups)
    nested = b""
    for _ in range(2000):  # nested length-delimited fields with the right lengths
        nested = (
            b"\x0a" + bytes([0x80 | (len(nested) & 0x7F), len(nested) >> 7]) + nested
            if len(nested) >= 128
            else _ld(0x0A, nested)
        )
    with pytest.raises(MalformedExampleError):
        tfe.parse_single_example(nested, I64)
    with contextlib.suppress(MalformedExampleError):
        tfe.decode_example(nested)
    with pytest.raises(MalformedExampleError):
        tfe.decode_sequence_example(groups)
    with pytest.raises(MalformedExampleError):
        tfe.parse_single_example(groups, I64)
    assert time.perf_counter() - start < 5


def test_bytes_lists_of_short_and_long_values_and_their_errors() -> None:
    # Values under 128 bytes are read with their one-byte length inline; longer ones,
    # and every error, the general way: the values and the errors' texts and offsets
    # are the same either way.
    from tfrecord_engine.example.wire import _decode_bytes

    values = [b"", b"a", b"x" * 127, b"y" * 128, b"z" * 300, b"q"]
    payload = b"".join(
        b"\x0a"
        + (bytes([len(v)]) if len(v) < 128 else bytes([len(v) & 0x7F | 0x80, len(v) >> 7]))
        + v
        for v in values
    )
    head = b"\x07\x07"
    assert _decode_bytes(head + payload + b"\x00", 2, 2 + len(payload)) == values
    cases = [
        (b"\x0a\x03ab", "length 3 exceeds the 2 bytes remaining at byte 2"),  # overruns by one
        (b"\x0a\x01a\x0a", "truncated varint at byte 4"),  # a tag at the last byte
        (b"\x0a\x01a\x12\x00", "unexpected tag 18 in a BytesList at byte 3"),
        (b"\x0a\x80\x01" + b"x" * 127, "length 128 exceeds the 127 bytes remaining at byte 3"),
    ]
    for data, message in cases:
        with pytest.raises(MalformedExampleError) as caught:
            _decode_bytes(data + b"\x0a\x01a", 0, len(data))
        assert str(caught.value).endswith(message), (data, str(caught.value))
