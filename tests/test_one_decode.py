"""The compiled one-record decode of ``ds[i]`` (``kernels.single``): what it decodes,
what it declines (the Python path then decides), and its table of keys, which takes the
compiled key hash and so is made once the kernels load."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine import kernels
from tfrecord_engine.example.single import SingleDecoder
from tfrecord_engine.kernels import single
from tfrecord_engine.kernels.single import FLOATS, INTS, ONE_BYTES, OTHER


@pytest.fixture(autouse=True)
def _loaded() -> None:
    kernels.wait()
    if not kernels.enabled():
        pytest.skip("the compiled kernels are off here")


def entry(key: bytes, feature: bytes) -> bytes:
    """One feature-map entry (key, then the Feature's bytes)."""
    body = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(feature)]) + feature
    return b"\x0a" + bytes([len(body)]) + body


def example(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return b"\x0a" + bytes([len(body)]) + body


def values(record: bytes, table: single.OneTable, k: int) -> list[Any]:
    got = single.decode_one(record, table)
    assert got is not None
    out, ints, floats = got
    array = floats if table.code[k] == FLOATS else ints
    return array[out[2, k] : out[2, k] + out[3, k]].tolist()  # type: ignore[no-any-return]


def test_the_decode_reads_numbers_and_spans_the_rest() -> None:
    record = tfe.encode_example(
        {"e": [b"p", b"q"], "a": [7, -1, 2**62], "c": [b"xy"], "b": [2.5, -0.25]}
    )
    table = single.one_table(
        [b"a", b"b", b"c", b"e"], [INTS, FLOATS, ONE_BYTES, OTHER], [3, -1, 1, -1]
    )
    got = single.decode_one(record, table)
    assert got is not None
    out, ints, floats = got
    assert ints.tolist() == [7, -1, 2**62]
    assert floats.tolist() == [2.5, -0.25]
    assert record[out[0, 2] : out[1, 2]] == b"xy"
    assert record[out[0, 3] : out[1, 3]] == b"\x0a\x06\x0a\x01p\x0a\x01q"  # e's Feature
    assert ints.flags.writeable
    assert floats.flags.writeable
    missing = single.one_table([b"a", b"zz"], [INTS, INTS], [-1, -1])
    assert single.decode_one(record, missing) is None  # the Python path decides


@given(
    st.permutations(range(4)),
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=0, max_size=40),
    st.lists(st.floats(width=32, allow_nan=False), min_size=0, max_size=20),
)
def test_fixed_places_whatever_the_record_key_order(
    order: list[int], varlen: list[int], floats: list[float]
) -> None:
    """Keys of expected counts land at their fixed places, the others after them, in
    whatever order the record's keys come."""
    fixed = [3, 2**40, -5]
    feats: dict[str, Any] = {
        "f": fixed,
        "v": np.array(varlen, np.int64),
        "g": np.array(floats, np.float32),
        "s": [1.0],
    }
    names = list(feats)
    record = tfe.encode_example({names[i]: feats[names[i]] for i in order})
    table = single.one_table([b"f", b"v", b"g", b"s"], [INTS, INTS, FLOATS, FLOATS], [3, -1, -1, 1])
    got = single.decode_one(record, table)
    assert got is not None
    out, ints, flts = got
    assert ints[:3].tolist() == fixed
    assert ints[3:].tolist() == varlen
    assert flts[0] == 1.0
    assert flts[1:].tolist() == floats
    assert out[2, 0] == 0
    assert out[2, 3] == 0


@pytest.mark.parametrize(
    ("name", "feature", "code", "count"),
    [
        ("an 11-byte varint", b"\x1a\x0d\x0a\x0b" + b"\xff" * 10 + b"\x01", INTS, -1),
        ("a torn varint", b"\x1a\x04\x0a\x02\x01\x80", INTS, -1),
        ("another count", b"\x1a\x04\x0a\x02\x01\x02", INTS, 3),
        ("unpacked int64s", b"\x1a\x04\x08\x01\x08\x02", INTS, -1),
        ("a float run of 5 bytes", b"\x12\x07\x0a\x05\x00\x00\x80\x3f\x00", FLOATS, -1),
        ("an empty Feature (defaults)", b"", INTS, -1),
        ("another kind", b"\x12\x06\x0a\x04\x00\x00\x80\x3f", INTS, -1),
        ("no bytes value", b"\x0a\x00", ONE_BYTES, 1),
        ("two bytes values", b"\x0a\x06\x0a\x01a\x0a\x01b", ONE_BYTES, 1),
        ("a list past its Feature", b"\x1a\x09\x0a\x02\x01\x02", INTS, -1),
    ],
)
def test_the_decode_declines_what_the_python_path_decides(
    name: str, feature: bytes, code: int, count: int
) -> None:
    table = single.one_table([b"k"], [code], [count])
    assert single.decode_one(example(entry(b"k", feature)), table) is None, name


def test_the_decode_takes_empty_lists_of_any_count_and_the_10th_varint_byte() -> None:
    table = single.one_table([b"k", b"t"], [INTS, INTS], [-1, 1])
    # An empty Int64List; 10 bytes: the 10th contributes bit 63 only (as protobuf).
    record = example(
        entry(b"k", b"\x1a\x00"), entry(b"t", b"\x1a\x0c\x0a\x0a" + b"\xff" * 9 + b"\x7f")
    )
    assert values(record, table, 0) == []
    assert values(record, table, 1) == [-1]


def test_a_key_twice_or_a_cut_record_is_declined() -> None:
    one = entry(b"k", b"\x1a\x03\x0a\x01\x05")
    table = single.one_table([b"k"], [INTS], [1])
    assert values(example(one), table, 0) == [5]
    assert single.decode_one(example(one, one), table) is None
    assert single.decode_one(example(one)[:-1], table) is None


def test_a_table_made_before_the_kernels_load_is_filled_at_its_first_decode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = tfe.encode_example({"a": [5]})
    monkeypatch.setattr(single, "key_hashes", lambda keys: None)  # (not loaded yet)
    table = single.one_table([b"a"], [INTS], [1])
    assert single.decode_one(record, table) is None
    monkeypatch.undo()
    assert values(record, table, 0) == [5]


def test_ds_getitem_takes_the_compiled_decode_and_its_generated_take(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A spec of every kind the decode takes; the Python walk is never called."""
    features: dict[str, Any] = {
        "x": tfe.FixedLenFeature([2, 3], "float32"),
        "ids": tfe.VarLenFeature("int64"),
        "w": tfe.FixedLenFeature([], "float32"),
        "n": tfe.FixedLenFeature([], "int64"),
        "name": tfe.FixedLenFeature([], "string"),
        "raw": tfe.RawFeature([2], "int16"),
        "tags": tfe.VarLenFeature("string"),
        "r": tfe.RaggedFeature("int64", partitions=[tfe.RaggedFeature.RowLengths("len")]),
    }
    record = tfe.encode_example(
        {
            "tags": [b"a", b"bc"],
            "len": [1, 2],
            "raw": [np.array([3, -4], "<i2").tobytes()],
            "x": [0.5, 1, 2, 3, 4, 5],
            "r": [7, 8, 9],
            "name": [b"nm"],
            "n": [-3],
            "w": [0.25],
            "ids": np.zeros(0, np.int64),
        }
    )
    decoder = SingleDecoder(features)
    monkeypatch.setattr(decoder, "values", None)  # (the Python walk: not called)
    got = decoder.sample(record)
    assert got is not None
    assert got["x"].shape == (2, 3)
    assert got["x"].dtype == np.float32
    assert got["x"].tolist() == [[0.5, 1, 2], [3, 4, 5]]
    assert got["ids"].tolist() == []
    assert got["ids"].dtype == np.int64
    assert type(got["w"]) is np.float32
    assert got["w"] == 0.25
    assert type(got["n"]) is np.int64
    assert got["n"] == -3
    assert got["name"] == b"nm"
    assert got["raw"].tolist() == [3, -4]
    assert got["raw"].dtype == np.int16
    assert got["tags"] == [b"a", b"bc"]
    assert got["r"].values.tolist() == [7, 8, 9]
    assert got["r"].row_splits.tolist() == [0, 1, 3]
    want = tfe.data.samples.sample_of(features, tfe.parse_single_example(record, features))
    assert list(got) == list(want)


@pytest.mark.parametrize("fixed", [True, False])
def test_bytes_records_take_the_compiled_entry_and_others_the_dispatch(fixed: bool) -> None:
    # After its first call with a ``bytes`` record, the decode calls the kernel's compiled
    # entry for those argument types (no per-call typing); a bytearray (writable, other
    # numba types) still goes through numba's dispatch. Both read the same values.
    table = single.one_table(
        [b"a", b"b", b"c"], [INTS, FLOATS, ONE_BYTES], [2, 1 if fixed else -1, 1]
    )
    first = tfe.encode_example({"a": [5, -6], "b": [1.5], "c": [b"hi"]})
    before: Any = table._entries[0]
    assert before is None
    assert single.decode_one(first, table) is not None
    after: Any = table._entries[0]
    assert callable(after)
    assert after is not table._kernels[0]
    table_off = single.one_table(
        [b"a", b"b", b"c"], [INTS, FLOATS, ONE_BYTES], [2, 1 if fixed else -1, 1]
    )
    table_off._entries[0] = False  # (the dispatch only)
    for record in (
        tfe.encode_example({"c": [b"x" * 300], "b": [-2.0], "a": [2**40, 0]}),
        # (typed bytes: decode_one reads any buffer, as np.frombuffer does)
        cast("bytes", bytearray(tfe.encode_example({"a": [1, 2], "b": [0.5], "c": [b""]}))),
    ):
        got = single.decode_one(record, table)
        want = single.decode_one(record, table_off)
        assert got is not None
        assert want is not None
        # (Rows 2-3 of a bytes key are not written: spans, then the numbers' places.)
        assert got[0][:2].tolist() == want[0][:2].tolist()
        assert got[0][2:, :2].tolist() == want[0][2:, :2].tolist()
        assert got[1].tolist() == want[1].tolist()
        assert got[2].tolist() == want[2].tolist()
    # A record the kernel declines is declined through the entry too.
    assert single.decode_one(tfe.encode_example({"a": [1, 2, 3], "b": [1.5]}), table) is None


@pytest.mark.parametrize("fixed", [True, False])
def test_a_record_decoded_where_it_lies_in_a_buffer_reads_as_its_copy(fixed: bool) -> None:
    # decode_at (ds[i] on a file held in memory): the record inside a larger buffer,
    # not copied out, reads the values its copy reads, with its spans as positions in
    # the buffer; through the compiled entry after the first call, as through the
    # dispatch; a span cut short, or a record the kernel declines, is declined.
    def table() -> single.OneTable:
        return single.one_table(
            [b"a", b"b", b"c"], [INTS, FLOATS, ONE_BYTES], [2, 1 if fixed else -1, 1]
        )

    mine, dispatch = table(), table()
    dispatch._entries[1] = False
    records = [
        tfe.encode_example({"a": [5, -6], "b": [1.5], "c": [b"hi"]}),
        tfe.encode_example({"c": [b"x" * 300], "b": [-2.0], "a": [2**40, 0]}),
        tfe.encode_example({"a": [1, 2, 3], "b": [1.5], "c": [b""]}),  # (a count off)
    ]
    buf = b"\x0a\x05junk" + b"".join(records) + b"tail"
    array = np.frombuffer(buf, np.uint8)
    at = 6
    for record in records:
        want = single.decode_one(record, table())
        for t in (mine, dispatch):
            got = t.decode_at(array, at, at + len(record))
            if want is None:
                assert got is None
                continue
            assert got is not None
            assert (got[0][:2] - at).tolist() == want[0][:2].tolist()
            assert got[1].tolist() == want[1].tolist()
            assert got[2].tolist() == want[2].tolist()
            assert buf[got[0][0, 2] : got[0][1, 2]] == record[want[0][0, 2] : want[0][1, 2]]
            assert t.decode_at(array, at, at + len(record) - 1) is None
        at += len(record)
    assert callable(mine._entries[1])
    assert dispatch._entries[1] is False
