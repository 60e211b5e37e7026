"""Hostile bytes: random and mutated input only ever raises TFRecordError subclasses."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.errors import TFRecordError
from tfrecord_engine.testing.examples import ParseCase, SequenceCase, parse_cases, sequence_cases


@st.composite
def _mutated(draw: st.DrawFn, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        pos = draw(st.integers(0, max(len(buf) - 1, 0)))
        if op == "flip" and buf:
            buf[pos] = draw(st.integers(0, 255))
        elif op == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=3))
        elif op == "delete" and buf:
            del buf[pos]
        elif op == "truncate":
            del buf[pos:]
    return bytes(buf)


def _survives(fn: Any) -> None:
    with contextlib.suppress(TFRecordError):
        fn()


@given(st.binary(max_size=64))
def test_random_bytes(data: bytes) -> None:
    _survives(lambda: tfe.decode_example(data))
    _survives(lambda: tfe.decode_sequence_example(data))
    _survives(lambda: tfe.parse_single_example(data, {"a": tfe.VarLenFeature("int64")}))


@given(parse_cases(), st.data())
def test_mutated_examples(case: ParseCase, data: st.DataObject) -> None:
    records = [data.draw(_mutated(r)) for r in case.records]
    _survives(lambda: tfe.parse_example(records, case.features))
    _survives(lambda: tfe.parse_single_example(records[0], case.features))
    _survives(lambda: tfe.decode_example(records[0]))


@given(sequence_cases(), st.data())
def test_mutated_sequence_examples(case: SequenceCase, data: st.DataObject) -> None:
    records = [data.draw(_mutated(r)) for r in case.records]
    _survives(
        lambda: tfe.parse_sequence_example(records, case.context_features, case.sequence_features)
    )
    _survives(lambda: tfe.decode_sequence_example(records[0]))
