"""The lockstep batch decoder returns exactly what the exact per-record path returns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.errors import ExampleParseError, TFRecordError
from tfrecord_engine.example import (
    FixedLenFeature,
    RaggedValue,
    SparseValue,
    VarLenFeature,
    encode_example,
    parse_example,
)
from tfrecord_engine.example.batch import BatchDecoder
from tfrecord_engine.example.specs import FeatureSpec
from tfrecord_engine.testing.examples import ParseCase, parse_cases


def assert_same(a: Any, b: Any) -> None:
    """Deep equality of parse outputs: arrays (dtype and values), Sparse/Ragged values."""
    if isinstance(a, dict):
        assert isinstance(b, dict)
        assert list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (SparseValue, RaggedValue)):
        assert type(a) is type(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        assert isinstance(a, np.ndarray)
        assert isinstance(b, np.ndarray)
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        assert a.shape == b.shape, (a.shape, b.shape)
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(a, b)
        else:
            assert a.tolist() == b.tolist()


def _outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except TFRecordError as exc:
        return "error", (
            type(exc),
            str(exc),
            getattr(exc, "key", None),
            getattr(exc, "index", None),
        )


@settings(max_examples=300)
@given(parse_cases(max_batch=6))
def test_fast_path_equals_exact_path(case: ParseCase) -> None:
    records = case.records
    exact = _outcome(lambda: parse_example(records, case.features))
    dec = BatchDecoder(case.features) if exact[0] == "ok" or True else None
    assert dec is not None
    fast = _outcome(lambda: dec.decode_records(records))
    assert fast[0] == exact[0], (fast, exact)
    if exact[0] == "ok":
        assert_same(fast[1], exact[1])
    else:
        assert fast[1] == exact[1]


@settings(max_examples=300)
@given(parse_cases(max_batch=8, canonical=True))
def test_fast_path_equals_exact_path_in_any_key_order(case: ParseCase) -> None:
    # Canonical records in per-record key orders: the lockstep walk meets each key at a
    # different step in different records, and values must still land in record order.
    records = case.records
    exact = _outcome(lambda: parse_example(records, case.features))
    dec = BatchDecoder(case.features)
    fast = _outcome(lambda: dec.decode_records(records))
    assert fast[0] == exact[0], (fast, exact)
    if exact[0] == "ok":
        assert_same(fast[1], exact[1])
    else:
        assert fast[1] == exact[1]


def test_values_follow_record_order_when_key_orders_differ() -> None:
    features: dict[str, FeatureSpec] = {
        "a": VarLenFeature("int64"),
        "b": FixedLenFeature([], "int64"),
    }
    records = [encode_example({"b": 1, "a": [10, 11]}), encode_example({"a": [20], "b": 2})]
    dec = BatchDecoder(features)
    out = dec.decode_records(records)
    assert dec.stats.fallback_records == 0
    assert out["a"].values.tolist() == [10, 11, 20]
    assert_same(out, parse_example(records, features))


def test_canonical_records_take_the_fast_path() -> None:
    feats: dict[str, FeatureSpec] = {
        "label": FixedLenFeature([], "int64"),
        "x": FixedLenFeature([3], "float32"),
        "img": FixedLenFeature([], "string"),
        "tags": VarLenFeature("string"),
    }
    recs = [
        encode_example(
            {
                "label": i * 1000,
                "x": [i, -1.5, 2**20],
                "img": bytes([i]) * 300,
                "tags": ["a"] * (1 + i % 3),
            }
        )
        for i in range(200)
    ]
    dec = BatchDecoder(feats)
    assert_same(dec.decode_records(recs), parse_example(recs, feats))
    assert dec.stats.records == 200
    assert dec.stats.fallback_records == 0
    assert dec.stats.exact_batches == 0


def test_errors_are_the_exact_paths() -> None:
    feats = {"x": FixedLenFeature([2], "int64")}
    recs = [encode_example({"x": [1, 2]}), encode_example({"x": [1.0, 2.0]})]
    dec = BatchDecoder(feats)
    with pytest.raises(ExampleParseError) as fast:
        dec.decode_records(recs)
    with pytest.raises(ExampleParseError) as exact:
        parse_example(recs, feats)
    assert str(fast.value) == str(exact.value)
    assert dec.stats.exact_batches == 1


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40), st.integers(1, 5))
def test_int64_varints_of_every_width(values: list[int], copies: int) -> None:
    feats = {"v": VarLenFeature("int64")}
    recs = [encode_example({"v": np.array(values[i:], np.int64)}) for i in range(copies)]
    dec = BatchDecoder(feats)
    assert_same(dec.decode_records(recs), parse_example(recs, feats))
    assert dec.stats.fallback_records == 0


def test_parse_example_uses_the_lockstep_path_for_large_batches() -> None:
    from tfrecord_engine.example import batch
    from tfrecord_engine.example import parse as exact_parse

    feats: dict[str, FeatureSpec] = {"x": FixedLenFeature([], "int64")}
    recs = [encode_example({"x": i}) for i in range(batch.LOCKSTEP_MIN_BATCH)]
    recs[5] = encode_example({"x": 1.5})
    with pytest.raises(ExampleParseError) as fast:
        batch.parse_example(recs, feats)
    with pytest.raises(ExampleParseError) as exact:
        exact_parse.parse_example(recs, feats)
    assert str(fast.value) == str(exact.value)
    recs[5] = encode_example({"x": 5})
    assert batch.parse_example(recs, feats)["x"].tolist() == list(range(len(recs)))


def test_an_error_of_a_batch_the_dense_plan_hands_on_is_raised_alone() -> None:
    # One exception per failure: the exact path's error used to carry the internal
    # delegation as its __context__ ("During handling of ... another exception").
    records = [tfe.encode_example({"a": [1]}), tfe.encode_example({"b": [1]})]
    dec = BatchDecoder({"a": tfe.FixedLenFeature([], "int64")})
    buf = np.frombuffer(b"".join(records), np.uint8)
    starts = np.array([0, len(records[0])], np.int64)
    ends = starts + np.array([len(r) for r in records], np.int64)
    with pytest.raises(ExampleParseError) as info:
        dec.decode(buf, starts, ends)
    assert info.value.__context__ is None
