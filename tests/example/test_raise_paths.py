"""Every deliberate error of the parsing modules, reached through the public entry points.

Each case is a crafted record (or argument) and the error it must raise: the class, and
a fragment of the message. Together with the rest of the suite this executes every
``raise`` of ``tfrecord_engine.example`` (see the coverage report of ``make test``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.example import parse as exact
from tfrecord_engine.example.specs import (
    RowSplits,
    RowStarts,
    UniformRowLength,
    ValueRowIds,
)
from tfrecord_engine.testing.wirebytes import field as _ld
from tfrecord_engine.testing.wirebytes import varint as _varint


def _entry(key: bytes, feature: bytes) -> bytes:
    return _ld(0x0A, _ld(0x0A, key) + _ld(0x12, feature))


def _example(*entries: tuple[bytes, bytes]) -> bytes:
    return _ld(0x0A, b"".join(_entry(k, f) for k, f in entries))


def _ints(*values: int) -> bytes:
    return _ld(0x1A, _ld(0x0A, b"".join(_varint(v) for v in values)))


def _sequence(context: bytes = b"", lists: bytes = b"") -> bytes:
    return _ld(0x0A, context) + _ld(0x12, lists)


VARLEN_I = {"i": tfe.VarLenFeature("int64")}
VARLEN_F = {"f": tfe.VarLenFeature("float32")}
SEQ_Q = {"q": tfe.VarLenFeature("int64")}

Case = tuple[Callable[[], Any], type[Exception], str]

CASES: dict[str, Case] = {
    # wire.py: the exact Example / SequenceExample reader
    "extra-field-in-map-entry": (
        lambda: tfe.parse_single_sequence_example(
            _sequence(_ld(0x0A, _ld(0x0A, b"c") + _ld(0x12, b"") + b"\x08\x01")),
            {"c": tfe.VarLenFeature("int64")},
        ),
        tfe.MalformedExampleError,
        "extra fields in a map entry",
    ),
    "feature-list-without-feature": (
        lambda: tfe.parse_single_sequence_example(
            _sequence(lists=_entry(b"q", b"\x12\x00")), None, SEQ_Q
        ),
        tfe.MalformedExampleError,
        "expected a Feature in a FeatureList",
    ),
    "long-packed-list-torn-varint": (
        lambda: tfe.parse_single_example(
            _example((b"i", _ld(0x1A, _ld(0x0A, b"\x01" * 30 + b"\x81")))), VARLEN_I
        ),
        tfe.MalformedExampleError,
        "truncated varint",
    ),
    "long-packed-list-11-byte-varint": (
        lambda: tfe.parse_single_example(
            _example((b"i", _ld(0x1A, _ld(0x0A, b"\x01" * 30 + b"\x80" * 10 + b"\x01")))),
            VARLEN_I,
        ),
        tfe.MalformedExampleError,
        "varint longer than 10 bytes",
    ),
    "wrong-tag-in-int64-list": (
        lambda: tfe.parse_single_example(_example((b"i", _ld(0x1A, b"\x10\x01"))), VARLEN_I),
        tfe.MalformedExampleError,
        "unexpected tag 16 in an Int64List",
    ),
    "wrong-tag-in-float-list": (
        lambda: tfe.parse_single_example(_example((b"f", _ld(0x12, b"\x10\x01"))), VARLEN_F),
        tfe.MalformedExampleError,
        "unexpected tag 16 in a FloatList",
    ),
    "sequence-list-length-overruns-feature": (
        lambda: tfe.parse_single_sequence_example(
            _sequence(_entry(b"c", b"\x1a\x05\x0a\x01\x01")), {"c": tfe.VarLenFeature("int64")}
        ),
        tfe.MalformedExampleError,
        "exceeds the",
    ),
    "duplicate-key-after-unsupported-value": (
        lambda: tfe.parse_single_example(_example((b"i", b"\x08\x01"), (b"i", _ints(3))), VARLEN_I),
        tfe.MalformedExampleError,
        "Unsupported datatype",
    ),
    # pbwire.py: decode_example's protobuf-exact reader
    "decode-packed-floats-ragged-length": (
        lambda: tfe.decode_example(_example((b"f", _ld(0x12, _ld(0x0A, b"\0" * 5))))),
        tfe.MalformedExampleError,
        "packed floats of 5 bytes",
    ),
    "decode-unpacked-float-cut-short": (
        lambda: tfe.decode_example(_example((b"f", _ld(0x12, b"\x0d\0\0")))),
        tfe.MalformedExampleError,
        "truncated float",
    ),
    # records.py / parse.py / sequence.py / decode.py: arguments
    "batch-of-2d-array": (
        lambda: tfe.parse_example(np.array([[b"a"]], dtype=object), VARLEN_I),
        tfe.InvalidArgumentError,
        "vector of bytes",
    ),
    "batch-not-a-sequence": (
        lambda: tfe.parse_example(42, VARLEN_I),
        tfe.InvalidArgumentError,
        "list, tuple or 1-D array",
    ),
    "batch-item-not-bytes": (
        lambda: tfe.parse_example([b"", "text"], VARLEN_I),
        tfe.InvalidArgumentError,
        "serialized[1] must be bytes, got str",
    ),
    "single-not-bytes": (
        lambda: tfe.parse_single_example("text", VARLEN_I),
        tfe.InvalidArgumentError,
        "serialized must be bytes",
    ),
    "single-sequence-not-bytes": (
        lambda: tfe.parse_single_sequence_example(["x"], None, SEQ_Q),
        tfe.InvalidArgumentError,
        "serialized must be bytes",
    ),
    "unsupported-spec": (
        lambda: tfe.parse_single_example(b"", {"a": object()}),  # type: ignore[dict-item]
        tfe.InvalidArgumentError,
        "unsupported spec",
    ),
    "unsupported-context-spec": (
        lambda: tfe.parse_single_sequence_example(
            b"", {"c": tfe.FixedLenSequenceFeature([], "int64", allow_missing=True)}
        ),
        tfe.InvalidArgumentError,
        "Unsupported FixedLenSequenceFeature",
    ),
    "unsupported-sequence-spec": (
        lambda: tfe.parse_single_sequence_example(
            b"", None, {"q": tfe.FixedLenFeature([], "int64")}
        ),
        tfe.InvalidArgumentError,
        "Unsupported FixedLenFeature",
    ),
    "sequence-default-value": (
        lambda: tfe.parse_single_sequence_example(
            b"",
            None,
            {"q": tfe.FixedLenSequenceFeature([], "int64", allow_missing=True, default_value=0)},
        ),
        tfe.InvalidArgumentError,
        "dense_defaults[q] must be None",
    ),
    "sequence-step-of-wrong-size": (
        lambda: tfe.parse_single_sequence_example(
            _sequence(lists=_entry(b"q", _ld(0x0A, _ints(1, 2)) + _ld(0x0A, _ints(3)))),
            None,
            {"q": tfe.FixedLenSequenceFeature([2], "int64", allow_missing=True)},
        ),
        tfe.ExampleParseError,
        "Number of values != expected",
    ),
    "decode-not-bytes": (
        lambda: tfe.decode_example(42),  # type: ignore[arg-type]
        TypeError,
        "expected bytes, got int",
    ),
    # assemble.py / ragged.py: outputs that cannot be built
    "sparse-index-counts-differ": (
        lambda: tfe.parse_single_example(
            _example((b"a", _ints(1, 2)), (b"b", _ints(1)), (b"v", _ints(5, 6))),
            {"sp": tfe.SparseFeature(["a", "b"], "v", "int64", [4, 4])},
        ),
        tfe.ExampleParseError,
        "are not compatible",
    ),
    "ragged-row-starts-invalid": (
        lambda: tfe.parse_single_example(
            _example((b"v", _ints(1, 2, 3)), (b"p", _ints(1, 0))),
            {
                "r": tfe.RaggedFeature(
                    "int64", value_key="v", partitions=[RowStarts("p")], validate=True
                )
            },
        ),
        tfe.ExampleParseError,
        "row starts",
    ),
    "ragged-uniform-zero-with-values": (
        lambda: tfe.parse_single_example(
            _example((b"v", _ints(1, 2))),
            {"r": tfe.RaggedFeature("int64", value_key="v", partitions=[UniformRowLength(0)])},
        ),
        tfe.ExampleParseError,
        "requested shape has 0",
    ),
    "ragged-uniform-not-a-multiple": (
        lambda: tfe.parse_single_example(
            _example((b"v", _ints(1, 2, 3))),
            {"r": tfe.RaggedFeature("int64", value_key="v", partitions=[UniformRowLength(2)])},
        ),
        tfe.ExampleParseError,
        "multiple of 2",
    ),
    "ragged-negative-row-ids": (
        lambda: tfe.parse_single_example(
            _example((b"v", _ints(1)), (b"p", _ld(0x1A, _ld(0x0A, _varint(2**64 - 1))))),
            {"r": tfe.RaggedFeature("int64", value_key="v", partitions=[ValueRowIds("p")])},
        ),
        tfe.ExampleParseError,
        "must be non-negative",
    ),
    "ragged-row-ids-count": (
        lambda: tfe.parse_single_example(
            _example((b"v", _ints(1, 2)), (b"p", _ints(0))),
            {"r": tfe.RaggedFeature("int64", value_key="v", partitions=[ValueRowIds("p")])},
        ),
        tfe.ExampleParseError,
        "1 value row ids for 2 values",
    ),
    "ragged-empty-splits-partitioned-again": (
        lambda: tfe.parse_single_example(
            _example((b"v", _ints()), (b"p", _ints()), (b"o", _ints(0))),
            {
                "r": tfe.RaggedFeature(
                    "int64", value_key="v", partitions=[RowSplits("o"), RowSplits("p")]
                )
            },
        ),
        tfe.ExampleParseError,
        "Dimension -1",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_raises(name: str) -> None:
    fn, error, fragment = CASES[name]
    with pytest.raises(error) as info:
        fn()
    assert fragment in str(info.value)


def test_exact_parse_example_of_one_record() -> None:
    # The exact module's parse_example takes a scalar like TensorFlow does.
    record = _example((b"i", _ints(4, 5)))
    out = exact.parse_example(record, VARLEN_I)
    assert out["i"].values.tolist() == [4, 5]
    assert out["i"].dense_shape.tolist() == [2]


def test_batches_of_bytes_like_items() -> None:
    record = _example((b"i", _ints(4)))
    out = tfe.parse_example([bytearray(record), memoryview(record)], VARLEN_I)
    assert out["i"].values.tolist() == [4, 4]
    assert tfe.decode_example(bytearray(record)) == tfe.decode_example(record)  # type: ignore[arg-type]


def test_parse_sequence_example_of_one_record() -> None:
    record = _sequence(lists=_entry(b"q", _ld(0x0A, _ints(7)) + _ld(0x0A, b"")))
    ctx, lists, lengths = tfe.parse_sequence_example(record, None, SEQ_Q)
    assert ctx == {}
    assert lists["q"].values.tolist() == [7]
    strings = {"w": tfe.VarLenFeature("string")}
    empty = _sequence(lists=_entry(b"w", _ld(0x0A, _ld(0x0A, b""))))
    _, lists, _ = tfe.parse_sequence_example([empty], None, strings)
    assert lists["w"].values.dtype == object
    assert lists["w"].values.size == 0
    del lengths


def test_duplicate_empty_features_keep_the_key_missing() -> None:
    record = _example((b"i", b""), (b"i", b""))
    out = tfe.parse_single_example(record, VARLEN_I)
    assert out["i"].values.size == 0
