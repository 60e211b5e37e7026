"""Packed varint runs decoded with numpy vs the per-varint loops (and protobuf)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given

import tfrecord_engine as tfe
from tfrecord_engine.errors import MalformedExampleError, TFRecordError
from tfrecord_engine.example import pbwire, protos, wire
from tfrecord_engine.example.varints import NUMPY_MIN_BYTES, decode_packed
from tfrecord_engine.testing.varints import int64_examples, packed_runs

Varint = Callable[[bytes, int, int], tuple[int, int]]
Fail = Callable[[str, int], MalformedExampleError]
_DECODERS: list[tuple[Varint, Fail]] = [(pbwire._varint, pbwire._fail), (wire._varint, wire._fail)]
_SPECS = {"x": tfe.VarLenFeature("int64"), "y": tfe.VarLenFeature("int64")}


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except MalformedExampleError as err:
        return "error", (type(err), str(err), err.offset)
    except TFRecordError as err:
        return "error", (type(err), str(err))


def _loop(varint: Varint, run: bytes) -> list[int]:
    """The reference: the decoder's own per-varint loop over the whole run."""
    out = []
    pos = 0
    while pos < len(run):
        value, pos = varint(run, pos, len(run))
        out.append(value)
    return out


@contextmanager
def _threshold(min_bytes: int) -> Iterator[None]:
    """Both decoders use numpy for packed runs of at least ``min_bytes`` bytes."""
    with (
        mock.patch.object(pbwire, "NUMPY_MIN_BYTES", min_bytes),
        mock.patch.object(wire, "NUMPY_MIN_BYTES", min_bytes),
    ):
        yield


def per_varint() -> contextlib.AbstractContextManager[None]:
    """Both decoders take their per-varint loops (the reference) for every run."""
    return _threshold(1 << 62)


def numpy_always() -> contextlib.AbstractContextManager[None]:
    """Both decoders take the numpy path for every packed run, however short."""
    return _threshold(0)


def _same(a: tuple[str, Any], b: tuple[str, Any]) -> None:
    assert a[0] == b[0], f"{a!r} != {b!r}"
    if a[0] == "error":
        assert a[1] == b[1]
        return
    assert a[1].keys() == b[1].keys()
    for key in a[1]:
        x, y = a[1][key], b[1][key]
        assert x.dtype == y.dtype, key
        np.testing.assert_array_equal(x, y, err_msg=key)


@pytest.mark.parametrize(("varint", "fail"), _DECODERS, ids=["pbwire", "wire"])
@given(run=packed_runs())
def test_decode_packed_matches_the_loop(varint: Varint, fail: Fail, run: bytes) -> None:
    # A prefix shifts every offset: they must be offsets in the whole buffer.
    buf = b"\x07\x07" + run + b"\x80"
    ours = _outcome(lambda: decode_packed(buf, 2, 2 + len(run), fail).tolist())
    ref = _outcome(lambda: _loop(varint, buf[: 2 + len(run)])[2:])
    assert ours == ref


@pytest.mark.parametrize("forced", [False, True], ids=["default", "numpy-always"])
@given(record=int64_examples())
def test_decode_example_matches_per_varint_decoding(forced: bool, record: bytes) -> None:
    with numpy_always() if forced else contextlib.nullcontext():
        ours = _outcome(lambda: tfe.decode_example(record))
    with per_varint():
        ref = _outcome(lambda: tfe.decode_example(record))
    _same(ours, ref)


def _parsed(record: bytes) -> dict[str, Any]:
    return {k: v.values for k, v in tfe.parse_single_example(record, _SPECS).items()}


@pytest.mark.parametrize("forced", [False, True], ids=["default", "numpy-always"])
@given(record=int64_examples())
def test_parse_single_example_matches_per_varint_parsing(forced: bool, record: bytes) -> None:
    with numpy_always() if forced else contextlib.nullcontext():
        ours = _outcome(lambda: _parsed(record))
    with per_varint():
        ref = _outcome(lambda: _parsed(record))
    _same(ours, ref)


@given(record=int64_examples())
def test_decode_example_matches_protobuf(record: bytes) -> None:
    with numpy_always():
        ok, ours = _outcome(lambda: tfe.decode_example(record))
    try:
        msg = protos.Example.FromString(record)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError lives in a private module
        assert ok == "error", ours
        return
    assert ok == "ok", ours
    for key, feature in msg.features.feature.items():
        want = np.array(feature.int64_list.value, dtype=np.int64)
        np.testing.assert_array_equal(ours[key], want, err_msg=key)


def _example(run: bytes) -> bytes:
    def ld(tag: int, payload: bytes) -> bytes:
        n, size = len(payload), bytearray()
        while n > 0x7F:
            size.append(n & 0x7F | 0x80)
            n >>= 7
        return bytes([tag, *size, n]) + payload

    return ld(0x0A, ld(0x0A, ld(0x0A, b"x") + ld(0x12, ld(0x1A, ld(0x0A, run)))))


_LONG = b"\x01" * NUMPY_MIN_BYTES  # long enough for the numpy path on its own


@pytest.mark.parametrize(
    ("tail", "reason"),
    [
        (b"\x80\x80", "truncated varint"),
        (b"\x80" * 9, "truncated varint"),
        (b"\x80" * 10, "varint longer than 10 bytes"),
        (b"\xff" * 10 + b"\x01" + b"\x80", "varint longer than 10 bytes"),
    ],
)
def test_errors_name_the_first_bad_varint(tail: bytes, reason: str) -> None:
    record = _example(_LONG + tail)
    at = len(record) - len(tail)  # the run ends the record
    with pytest.raises(MalformedExampleError) as got:
        tfe.decode_example(record)
    assert str(got.value) == f"Could not parse message: {reason} at byte {at}"
    assert got.value.offset == at
    with per_varint(), pytest.raises(MalformedExampleError) as ref:
        tfe.decode_example(record)
    assert str(ref.value) == str(got.value)


@pytest.mark.parametrize(
    ("low", "last", "value"),
    [
        (0xFF, 0x01, -1),
        (0xFF, 0x7F, -1),
        (0xFF, 0x7E, 2**63 - 1),
        (0xFF, 0x00, 2**63 - 1),
        (0x80, 0x01, -(2**63)),
        (0x80, 0x7F, -(2**63)),
        (0x80, 0x7E, 0),
    ],
)
def test_tenth_byte_keeps_only_its_lowest_bit(low: int, last: int, value: int) -> None:
    # Nine bytes carry bits 0..62; the 10th byte's bit 0 is bit 63 and its other bits
    # fall past 64 bits: dropped, as protobuf and TensorFlow do.
    varint = bytes([low] * 9 + [last])
    record = _example(_LONG + varint * 3)
    got = tfe.decode_example(record)["x"]
    assert got[-3:].tolist() == [value] * 3
    assert got[-1] == protos.Example.FromString(record).features.feature["x"].int64_list.value[-1]
    parsed = tfe.parse_single_example(record, {"x": tfe.VarLenFeature("int64")})["x"]
    assert parsed.values[-3:].tolist() == [value] * 3
