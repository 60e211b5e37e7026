"""Builders: value conversion, wire bytes, and round trips through the decoder."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.testing.examples import KINDS, feature_values, serialize_example

_KEY_X = b"\x0a\x01x"


def _feature_bytes(value: object) -> bytes:
    data = tfe.encode_example({"x": value})
    # 0a <len> 0a <len> [0a 01 78] 12 <len> <feature>
    start = data.index(_KEY_X) + len(_KEY_X) + 2
    return data[start:]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.zeros(0, np.int64), "1a00"),
        (np.zeros(0, np.float32), "1200"),
        (np.zeros(0, object), "0a00"),
        (-1, "1a0c0a0a" + "ff" * 9 + "01"),
        (float("nan"), "12060a040000c07f"),
        ("é", "0a040a02c3a9"),
    ],
)
def test_feature_wire_bytes(value: object, expected: str) -> None:
    assert _feature_bytes(value).hex() == expected


def test_empty_mapping_is_an_empty_features_message() -> None:
    assert tfe.encode_example({}) == b"\x0a\x00"
    assert tfe.decode_example(b"") == {}


def test_entries_follow_mapping_order() -> None:
    data = tfe.encode_example({"b": 1, "a": 2})
    assert data.index(b"\x0a\x01b") < data.index(b"\x0a\x01a")
    assert list(tfe.decode_example(data)) == ["b", "a"]


@pytest.mark.parametrize(
    ("value", "dtype", "expected"),
    [
        (np.array([1, 2], np.int8), np.int64, [1, 2]),
        (np.array([2**64 - 1 - 2**63], np.uint64), np.int64, [2**63 - 1]),
        (np.array([[1.5, 2.5]], np.float64), np.float32, [1.5, 2.5]),
        (np.array([1.5], np.float16), np.float32, [1.5]),
        ([1, 2.5], np.float32, [1.0, 2.5]),
        (np.float64(1e39), np.float32, [np.inf]),
        ([-1e39], np.float32, [-np.inf]),
        (np.array([b"a", b"bc"]), object, [b"a", b"bc"]),
        (np.array(["a", "é"]), object, [b"a", "é".encode()]),
        ([b"a", "b", bytearray(b"c")], object, [b"a", b"b", b"c"]),
        (np.int32(7), np.int64, [7]),
    ],
)
def test_value_conversion(value: object, dtype: Any, expected: list[Any]) -> None:
    got = tfe.decode_example(tfe.encode_example({"x": value}))["x"]
    assert got.dtype == dtype
    assert got.tolist() == expected


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (True, "bool"),
        ([1, True], "bool"),
        (np.array([True]), "dtype bool"),
        ([], "empty list"),
        ([1, b"a"], "mix"),
        (2**63, "out of range"),
        (np.array([2**63], np.uint64), "out of range"),
        ({"a": 1}, "unsupported"),
        ([None], "unsupported"),
        (np.array([1 + 2j]), "dtype complex"),
    ],
)
def test_unsupported_values_raise(value: object, match: str) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match=match):
        tfe.encode_example({"x": value})


def test_non_str_key_raises() -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="keys must be str"):
        tfe.encode_example({1: 2})  # type: ignore[dict-item]


def _typed(dtype: str, values: list[Any]) -> Any:
    if dtype == "string":
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr
    return np.array(values, dtype=np.int64 if dtype == "int64" else np.float32)


@st.composite
def _entries(draw: st.DrawFn) -> dict[str, tuple[str, list[Any]]]:
    keys = draw(st.lists(st.text(max_size=5), max_size=5, unique=True))
    out = {}
    for key in keys:
        dtype = draw(st.sampled_from(KINDS))
        out[key] = (dtype, draw(feature_values(dtype, max_size=40)))
    return out


@given(_entries())
def test_round_trip(entries: dict[str, tuple[str, list[Any]]]) -> None:
    data = tfe.encode_example({k: _typed(d, v) for k, (d, v) in entries.items()})
    decoded = tfe.decode_example(data)
    assert list(decoded) == list(entries)
    for key, (dtype, values) in entries.items():
        assert decoded[key].dtype == _typed(dtype, values).dtype
        assert decoded[key].tolist() == _typed(dtype, values).tolist()


@given(_entries(), st.booleans())
def test_encoder_matches_independent_serializer(
    entries: dict[str, tuple[str, list[Any]]], packed: bool
) -> None:
    ours = tfe.encode_example({k: _typed(d, v) for k, (d, v) in entries.items()})
    reference = serialize_example(list(entries.items()), packed=True)
    assert ours == reference
    # Unpacked encodings decode to the same values.
    unpacked = serialize_example(list(entries.items()), packed=packed)
    for key, got in tfe.decode_example(unpacked).items():
        assert got.tolist() == tfe.decode_example(ours)[key].tolist()


@given(
    st.dictionaries(
        st.text(max_size=3),
        st.lists(st.lists(st.floats(width=32, allow_nan=False), max_size=3), max_size=3),
        max_size=3,
    )
)
def test_sequence_round_trip(lists: dict[str, list[list[float]]]) -> None:
    data = tfe.encode_sequence_example(
        {"id": b"x"}, {k: [np.array(s, dtype=np.float32) for s in v] for k, v in lists.items()}
    )
    ctx, out = tfe.decode_sequence_example(data)
    assert ctx["id"].tolist() == [b"x"]
    assert {k: [s.tolist() for s in v] for k, v in out.items()} == lists


def test_sequence_rejects_non_sequence_lists() -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="sequence of per-step values"):
        tfe.encode_sequence_example({}, {"s": b"abc"})
