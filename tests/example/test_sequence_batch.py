"""The batch SequenceExample decoder (example.seqbatch) against the exact per-record path."""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

import tfrecord_engine.example as tfe
from tfrecord_engine import kernels
from tfrecord_engine.errors import TFRecordError
from tfrecord_engine.example.seqbatch import SequenceDecoder
from tfrecord_engine.example.seqexact import parse_records
from tfrecord_engine.testing.examples import serialize_sequence_example
from tfrecord_engine.testing.sequences import SequenceBatch, sequence_batches


def _assert_same(ours: Any, exact: Any, what: str) -> None:
    if isinstance(exact, dict):
        assert set(ours) == set(exact), what
        for key in exact:
            _assert_same(ours[key], exact[key], f"{what}[{key}]")
    elif isinstance(exact, tuple):
        assert type(ours) is type(exact), what
        assert len(ours) == len(exact), what
        for i, (a, b) in enumerate(zip(ours, exact, strict=True)):
            _assert_same(a, b, f"{what}.{i}")
    elif isinstance(exact, np.ndarray):
        assert isinstance(ours, np.ndarray), what
        assert ours.shape == exact.shape, what
        assert ours.dtype == exact.dtype, what
        assert ours.tolist() == exact.tolist(), what
    else:
        assert ours == exact, what


def _outcome(fn: Callable[[], Any]) -> tuple[bool, Any]:
    try:
        return True, fn()
    except TFRecordError as exc:
        return False, exc


def _exact(case: SequenceBatch) -> Any:
    return parse_records(case.records, case.context_features, case.sequence_features, False)


@settings(max_examples=200)
@given(sequence_batches(max_batch=12))
def test_fast_path_equals_exact_path(case: SequenceBatch) -> None:
    assert kernels.wait()
    decoder = SequenceDecoder(case.context_features, case.sequence_features)
    _assert_same(decoder.decode_records(case.records), _exact(case), "out")
    assert decoder.stats.exact_batches == 0


@settings(max_examples=200)
@given(sequence_batches(faults=True))
def test_faults_go_to_the_exact_path(case: SequenceBatch) -> None:
    decoder = SequenceDecoder(case.context_features, case.sequence_features)
    exact_ok, exact = _outcome(lambda: _exact(case))
    ok, ours = _outcome(lambda: decoder.decode_records(case.records))
    assert ok == exact_ok, (ours, exact)
    if ok:
        _assert_same(ours, exact, "out")
    else:
        assert type(ours) is type(exact)
        assert str(ours) == str(exact)


def test_off_canonical_records_go_to_the_exact_path() -> None:
    spec = {"c": tfe.VarLenFeature("int64")}
    empty_context = serialize_sequence_example([("c", None)], [("s", [("int64", [1])])])
    unpacked = serialize_sequence_example([], [("s", [("int64", [1, 2])])], packed=False)
    for record in (empty_context, unpacked):
        decoder = SequenceDecoder(spec, {"s": tfe.VarLenFeature("int64")})
        _assert_same(
            decoder.decode_records([record]),
            parse_records([record], spec, decoder.sequence, False),
            "out",
        )
        assert decoder.stats.exact_batches == 1


def _ld(tag: int, payload: bytes) -> bytes:
    """A length-delimited field (lengths under 128 here: one byte)."""
    assert len(payload) < 0x80
    return bytes([tag, len(payload)]) + payload


def _one_list(steps: list[bytes]) -> bytes:
    """A SequenceExample whose one feature list ``s`` has these step Features (bytes)."""
    feature_list = b"".join(_ld(0x0A, step) for step in steps)
    entry = _ld(0x0A, b"s") + _ld(0x12, feature_list)
    return _ld(0x12, _ld(0x0A, entry))


def _numeric_step(tag: int, payload: bytes, extra: bytes = b"") -> bytes:
    """A step Feature: a FloatList (0x12) or Int64List (0x1A) of one packed field."""
    return _ld(tag, _ld(0x0A, payload)) + extra


# Steps at the edges of the walk's short-step path (every length one byte): each
# record alone and beside good ones, the batch decoder against the exact path.
_GOOD_FLOATS = _numeric_step(0x12, np.array([1.5, -2.0], "<f4").tobytes())
_STEP_EDGES = {
    "floats": ("float32", [_GOOD_FLOATS, _GOOD_FLOATS]),
    "ints": ("int64", [_numeric_step(0x1A, b"\x05\x96\x01"), _numeric_step(0x1A, b"\x07\x08")]),
    "empty packed field": ("float32", [_numeric_step(0x12, b""), _GOOD_FLOATS]),
    "floats not of 4 bytes": ("float32", [_numeric_step(0x12, b"\x00" * 6)]),
    "a torn varint": ("int64", [_numeric_step(0x1A, bytes([5, 0x96]))]),
    "another kind": ("int64", [_GOOD_FLOATS]),
    # Floats whose last byte would end a varint, and four one-byte varints as floats.
    "floats read as ints": ("int64", [_numeric_step(0x12, np.array([1, 2], "<f4").tobytes())]),
    "ints read as floats": ("float32", [_numeric_step(0x1A, b"\x01\x02\x03\x04")]),
    # Unpacked ints 2 and 7 (valid, off the canonical shape): 08 02 08 07 would read as a
    # packed field of two bytes.
    "unpacked ints": ("int64", [_ld(0x1A, b"\x08\x02\x08\x07"), _ld(0x1A, b"\x08\x02\x08\x07")]),
    "a field after the list": ("float32", [_numeric_step(0x12, b"\x00" * 8, b"\x1a\x00")]),
    # A FloatList of 3 bytes whose packed field claims 4: the rest lies after the list.
    "a list shorter than its field": ("float32", [bytes([0x12, 3, 0x0A, 4, 0, 0, 0, 0])]),
    "an empty list": ("float32", [_ld(0x12, b""), _GOOD_FLOATS]),
    "an empty step": ("float32", [b"", _GOOD_FLOATS]),
}


#: The cases every value of which the batch decoder takes itself, by spec (the others
#: go to the exact path, which decides).
_TAKEN = {
    "varlen": {"floats", "ints", "empty packed field", "an empty list", "an empty step"},
    "dense": {"floats", "ints"},  # (steps of two values each: FixedLenSequenceFeature([2]))
}


@pytest.mark.parametrize("case", list(_STEP_EDGES))
def test_short_steps_at_the_edges_match_the_exact_path(case: str) -> None:
    assert kernels.wait()
    dtype, steps = _STEP_EDGES[case]
    specs: dict[str, Any] = {
        "varlen": tfe.VarLenFeature(dtype),
        "dense": tfe.FixedLenSequenceFeature([2], dtype, allow_missing=True),
    }
    record = _one_list(steps)
    good = _one_list([_GOOD_FLOATS] if dtype == "float32" else [_numeric_step(0x1A, b"\x01\x02")])
    for name, spec in specs.items():
        sequence = {"s": spec}
        for batch in ([record], [good, record, good]):
            decoder = SequenceDecoder({}, sequence)
            exact_ok, exact = _outcome(functools.partial(parse_records, batch, {}, sequence, False))
            ok, ours = _outcome(functools.partial(decoder.decode_records, batch))
            assert ok == exact_ok, (case, name, ours, exact)
            if ok:
                _assert_same(ours, exact, f"{case} {name}")
            else:
                assert type(ours) is type(exact)
                assert str(ours) == str(exact)
            taken = case in _TAKEN[name]
            assert (decoder.stats.exact_batches == 0) == taken, (case, name)
            assert ok or not taken


def test_without_kernels_the_exact_path_serves() -> None:
    data = [
        tfe.encode_sequence_example({"id": 1}, {"f": [[1.0, 2.0], [3.0, 4.0]]}),
        tfe.encode_sequence_example({"id": 2}, {"f": [[5.0, 6.0]]}),
    ]
    decoder = SequenceDecoder(
        {"id": tfe.FixedLenFeature([], "int64")},
        {"f": tfe.FixedLenSequenceFeature([2], "float32")},
    )
    with kernels.switched(False):
        slow = decoder.decode_records(data)
    assert decoder.stats.exact_batches == 1
    fast = decoder.decode_records(data)
    assert decoder.stats.exact_batches == 1
    _assert_same(fast, slow, "out")
    ctx, lists, lengths = fast
    assert ctx["id"].tolist() == [1, 2]
    assert lists["f"].tolist() == [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [0.0, 0.0]]]
    assert lengths["f"].tolist() == [2, 1]


def test_parse_sequence_example_takes_the_batch_decoder() -> None:
    data = [tfe.encode_sequence_example({}, {"t": [[1, 2], [3]]})] * 3
    ctx, lists, lengths = tfe.parse_sequence_example(data, None, {"t": tfe.VarLenFeature("int64")})
    assert ctx == {}
    assert lengths == {}
    assert lists["t"].dense_shape.tolist() == [3, 2, 2]
    assert lists["t"].values.tolist() == [1, 2, 3] * 3


def test_decoder_pickles_as_its_specs() -> None:
    decoder = SequenceDecoder(None, {"s": tfe.VarLenFeature("string")})
    decoder.decode_records([tfe.encode_sequence_example({}, {"s": [[b"a"]]})])
    copy = pickle.loads(pickle.dumps(decoder))
    assert copy.sequence == decoder.sequence
    assert copy.context == decoder.context
    assert copy.stats.records == 0
