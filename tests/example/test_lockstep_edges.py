"""Batches of >= 1024 records (the lockstep decoder) on the wire shapes it rarely sees.

Each case is a small set of hand-built records (long varints, negative int64 as 10-byte
varints, unpacked lists, torn and over-long varints, 4-byte length prefixes, keys longer
than 8 bytes, records at the very end of the joined buffer, malformed lengths, ...),
tiled into a batch large enough for :func:`tfrecord_engine.parse_example` to decode it
in lockstep. The reference is the exact per-record path on the same batch
(``BatchDecoder.decode_exact``): same outputs, or the same error (type, message, key
and record index).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.test_batch_decoder import _outcome, assert_same
from tfrecord_engine.data import sampler
from tfrecord_engine.example.batch import LOCKSTEP_MIN_BATCH, BatchDecoder
from tfrecord_engine.example.specs import FeatureSpec
from tfrecord_engine.records import framing
from tfrecord_engine.testing.examples import FeatureValues, serialize_example, serialize_feature
from tfrecord_engine.testing.wirebytes import field as _ld

SPEC: dict[str, FeatureSpec] = {
    "i": tfe.VarLenFeature("int64"),
    "f": tfe.VarLenFeature("float32"),
    "s": tfe.VarLenFeature("string"),
    "a_rather_long_key": tfe.FixedLenFeature([], "int64", default_value=-7),
}
WIDTHS = [0, 1, 127, 128, 2**14 - 1, 2**14, 2**21, 2**28, 2**35, 2**42, 2**49, 2**56, 2**63 - 1]
NEGATIVE = [-1, -2, -(2**31), -(2**63)]
GOOD = serialize_example(
    [("i", ("int64", [1, 2])), ("f", ("float32", [0.5])), ("s", ("string", [b"x"]))]
)


def _example(entries: Sequence[tuple[bytes, bytes]]) -> bytes:
    """An Example from raw ``(key, serialized Feature)`` entries."""
    return _ld(0x0A, b"".join(_ld(0x0A, _ld(0x0A, k) + _ld(0x12, v)) for k, v in entries))


def _check(records: list[bytes], spec: dict[str, FeatureSpec] = SPEC, *, at: int = 0) -> Any:
    """Tiles ``records`` into a lockstep-sized batch (``records`` start at ``at``)."""
    n = max(LOCKSTEP_MIN_BATCH, len(records) + at)
    batch = [GOOD] * at + records + [GOOD] * (n - len(records) - at)
    fast = _outcome(lambda: tfe.parse_example(batch, spec))
    exact = _outcome(lambda: BatchDecoder(spec).decode_exact(batch))
    assert fast[0] == exact[0], (fast, exact)
    if fast[0] == "ok":
        assert_same(fast[1], exact[1])
    else:
        assert fast[1] == exact[1]
    # The same records at the very end of the joined buffer (window reads near its end).
    tail = [GOOD] * (n - len(records)) + records
    fast_tail = _outcome(lambda: tfe.parse_example(tail, spec))
    exact_tail = _outcome(lambda: BatchDecoder(spec).decode_exact(tail))
    assert fast_tail[0] == exact_tail[0]
    if fast_tail[0] == "ok":
        assert_same(fast_tail[1], exact_tail[1])
    return fast


def test_int64_varints_of_every_width() -> None:
    one_each = [serialize_example([("i", ("int64", [v]))]) for v in WIDTHS + NEGATIVE]
    together = serialize_example([("i", ("int64", WIDTHS + NEGATIVE))])
    kind, out = _check([*one_each, together])
    assert kind == "ok"
    values = out["i"].values.tolist()
    assert values[: len(WIDTHS) + len(NEGATIVE)] == WIDTHS + NEGATIVE


@pytest.mark.parametrize("value", [v for v in WIDTHS + NEGATIVE if v > 127 or v < 0])
def test_one_long_varint_per_batch(value: int) -> None:
    # One width at a time: each goes through the fixed-width decode of its own size.
    kind, out = _check([serialize_example([("i", ("int64", [value, 5]))])])
    assert kind == "ok"
    assert out["i"].values[:2].tolist() == [value, 5]


def test_unpacked_lists_and_empty_features() -> None:
    records = [
        serialize_example([("i", ("int64", [3, -4])), ("f", ("float32", [1.5]))], packed=False),
        serialize_example([("i", None), ("f", None), ("s", None)]),
        serialize_example([("a_rather_long_key", ("int64", [2**40]))]),
        serialize_example([("a_rather_long_key", None)]),
        b"",
    ]
    kind, out = _check(records)
    assert kind == "ok"
    assert out["a_rather_long_key"][:5].tolist() == [-7, -7, 2**40, -7, -7]


def test_fallback_shapes() -> None:
    entries: list[tuple[str, FeatureValues]] = [
        ("i", ("int64", [9])),
        ("s", ("string", [b"a", b""])),
    ]
    records = [
        serialize_example(entries, split_at=1),
        serialize_example(entries, unknown_field=True),
        serialize_example([*entries, ("i", ("int64", [10]))]),  # duplicate key: last wins
        _ld(0x0A, _ld(0x0A, _ld(0x12, serialize_feature(("int64", [4]))) + _ld(0x0A, b"i"))),
        _example([(b"f", _ld(0x12, b""))]),  # an empty FloatList
        _example([(b"s", _ld(0x0A, b""))]),  # an empty BytesList
    ]
    assert _check(records)[0] == "ok"


def test_keys_longer_than_eight_bytes() -> None:
    decoy = serialize_example([("a_rather_long_kez", ("int64", [1]))])  # same prefix and length
    real = serialize_example([("a_rather_long_key", ("int64", [2]))])
    shorter = serialize_example([("a_rather", ("int64", [3]))])
    kind, out = _check([decoy, real, shorter])
    assert kind == "ok"
    assert out["a_rather_long_key"][:3].tolist() == [-7, 2, -7]


def test_four_byte_length_prefixes() -> None:
    big = b"\xab" * (1 << 21)  # 2 MiB: its length takes a 4-byte varint
    kind, out = _check([serialize_example([("s", ("string", [big, b"z"]))])])
    assert kind == "ok"
    assert out["s"].values[0] == big
    assert out["s"].values[1] == b"z"


@pytest.mark.parametrize(
    "record",
    [
        _example([(b"i", _ld(0x1A, _ld(0x0A, b"\x81")))]),  # a list ending inside a varint
        _example([(b"i", _ld(0x1A, _ld(0x0A, b"\x05\x81\x82")))]),
        _example([(b"i", _ld(0x1A, _ld(0x0A, b"\x80" * 10 + b"\x01")))]),  # 11-byte varint
        _example([(b"f", _ld(0x12, _ld(0x0A, b"\0" * 5)))]),  # 5 bytes of float32
        _example([(b"f", _ld(0x12, b"\x0d\0\0"))]),  # an unpacked float cut short
        _example([(b"s", _ld(0x0A, b"\x0a\x05ab"))]),  # a bytes value past its list
        _example([(b"s", _ld(0x0A, b"\x12\x01a"))]),  # a wrong tag inside a BytesList
        _example([(b"i", _ld(0x12, _ld(0x0A, b"\0\0\0\0")))]),  # float where int64 is asked
        _example([(b"i", b"\x1a")]),  # a Feature cut after its tag
        _example([(b"i", b"\x1a\x80\x80\x80\x80")]),  # a length varint running off the end
        b"\x0a" + b"\xff" * 12,  # a top-level length varint of more than 10 bytes
        b"\x0a\x80\x80\x80\x80\x01",  # a 5-byte length far past the record's end
        b"\x0a\x80\x80\x80",  # a length varint cut by the end of the record
        b"\x0a\x04\x0a\x02\x0a",  # an entry running past the Example
        b"\x0a\x06\x0a\x04\x0a\x01i\x12",
        b"\x12\x00",  # only an unknown (wrong-typed) field
        b"\x0a",
    ],
)
def test_malformed_records_give_the_exact_error(record: bytes) -> None:
    _check([record])
    _check([record], at=LOCKSTEP_MIN_BATCH - 1)


def test_required_feature_missing_gives_the_exact_error() -> None:
    spec: dict[str, FeatureSpec] = {"x": tfe.FixedLenFeature([2], "float32")}
    kind, err = _check([serialize_example([("x", ("float32", [1.0]))])], spec)
    assert kind == "error"
    assert err[0] is tfe.ExampleParseError


def test_tiny_batches_in_lockstep() -> None:
    # Batches whose whole buffer is shorter than one 8-byte window read.
    spec: dict[str, FeatureSpec] = {"k": tfe.VarLenFeature("int64")}
    dec = BatchDecoder(spec)
    for records in ([b""], [b"", b""], [b"\x0a\x00"], [_example([(b"k", b"")])], []):
        got = _outcome(lambda records=records: dec.decode_records(records))
        want = _outcome(lambda records=records: dec.decode_exact(records))
        assert got[0] == want[0]
        if got[0] == "ok":
            assert_same(got[1], want[1])


def test_dataset_batches_take_the_same_paths(tmp_path: Any) -> None:
    records = [
        *[serialize_example([("i", ("int64", [v, -v]))]) for v in WIDTHS],
        serialize_example([("i", ("int64", [1]))], packed=False),
        serialize_example([("a_rather_long_key", ("int64", [5]))]),
    ]
    records = (records * (2 * LOCKSTEP_MIN_BATCH // len(records) + 1))[: 2 * LOCKSTEP_MIN_BATCH]
    path = tmp_path / "e.tfrecord"
    path.write_bytes(framing.frame_many(records))
    ds = tfe.RecordDataset(str(path), SPEC)
    for batch_size in (LOCKSTEP_MIN_BATCH, 700):
        got = list(ds.batches(batch_size, shuffle=True, seed=5, epoch=0))
        order = np.concatenate(
            [
                b.indices
                for b in sampler.IndexBatchIterator(len(records), batch_size, shuffle=True, seed=5)
            ]
        )
        want_batches = []
        pos = 0
        for b in got:
            n = b["a_rather_long_key"].shape[0]
            want_batches.append(
                BatchDecoder(SPEC).decode_exact([records[i] for i in order[pos : pos + n]])
            )
            pos += n
        assert pos == len(records)
        for g, w in zip(got, want_batches, strict=True):
            assert_same(g, w)


def test_floats_round_trip_bitwise() -> None:
    raw = [
        struct.unpack("<f", struct.pack("<I", bits))[0] for bits in (0, 1, 0x7F7FFFFF, 0xFF800000)
    ]
    kind, out = _check([serialize_example([("f", ("float32", raw))])])
    assert kind == "ok"
    assert out["f"].values[:4].view(np.uint32).tolist() == [0, 1, 0x7F7FFFFF, 0xFF800000]


@pytest.mark.parametrize("dtype", ["int64", "float32", "string"])
def test_keys_in_a_different_order_per_record(dtype: str) -> None:
    # Regression: lockstep listed entries by their position within each record, so a
    # batch whose records order their keys differently got values of the wrong records.
    values: dict[str, list[Any]] = {
        "int64": [[1], [2, 3], [4]],
        "float32": [[1.0], [2.0, 3.0], [4.0]],
        "string": [[b"1"], [b"2", b"3"], [b"4"]],
    }
    key = {"int64": "i", "float32": "f", "string": "s"}[dtype]
    v0, v1, v2 = values[dtype]
    records = [
        serialize_example([("a_rather_long_key", ("int64", [0])), (key, (dtype, v0))]),
        serialize_example([(key, (dtype, v1)), ("a_rather_long_key", ("int64", [1]))]),
        serialize_example([("x", ("int64", [0])), ("y", ("int64", [0])), (key, (dtype, v2))]),
    ]
    kind, out = _check(records)
    assert kind == "ok"
    assert out[key].values[:4].tolist() == [*v0, *v1, *v2]
    assert out["a_rather_long_key"][:3].tolist() == [0, 1, -7]


@pytest.mark.parametrize(
    "record",
    [
        _example([(b"i", _ld(0x1A, _ld(0x0A, b"")))]),  # every list packed and empty
        _example([(b"i", _ld(0x1A, _ld(0x0A, b"\x81")))]),  # every list torn
        _example([(b"f", _ld(0x12, _ld(0x0A, b"")))]),
    ],
)
def test_whole_batch_of_one_shape(record: bytes) -> None:
    batch = [record] * LOCKSTEP_MIN_BATCH
    fast = _outcome(lambda: tfe.parse_example(batch, SPEC))
    exact = _outcome(lambda: BatchDecoder(SPEC).decode_exact(batch))
    assert fast[0] == exact[0]
    if fast[0] == "ok":
        assert_same(fast[1], exact[1])
    else:
        assert fast[1] == exact[1]
