"""The per-call path of ``ds[i]`` (``data/single.py``) against the exact path.

The fast path may decline a record (``None``: the exact path decides), but must never
accept one the exact path rejects, and must return the same values, types and shapes.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given

import tfrecord_engine as tfe
from tfrecord_engine.data.samples import sample_of
from tfrecord_engine.data.single import SingleDecoder
from tfrecord_engine.testing.examples import ParseCase, parse_cases
from tfrecord_engine.testing.raw import RawCase, raw_cases

FAST_KINDS = (tfe.FixedLenFeature, tfe.RawFeature, tfe.VarLenFeature)


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types (NaN equals NaN; arrays by dtype, shape, values)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (np.ndarray, np.generic)):
        nan = a.dtype.kind == "f"
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=nan)
    return bool(a == b)


def exact(record: bytes, features: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return sample_of(features, tfe.parse_single_example(record, features))
    except tfe.TFRecordError:
        return None


def check(case: ParseCase) -> int:
    """Checks every record of ``case`` on the fast-path specs; returns how many it took."""
    features = {k: s for k, s in case.features.items() if isinstance(s, FAST_KINDS)}
    assume(features)
    decoder = SingleDecoder(features)
    taken = 0
    for record in case.records:
        fast = decoder.sample(record)
        if fast is None:
            continue
        taken += 1
        want = exact(record, features)
        assert want is not None, "the fast path accepted a record the exact path rejects"
        assert same(fast, want), (fast, want)
        for value in fast.values():
            if isinstance(value, np.ndarray):
                assert value.flags.writeable
    return taken


@given(parse_cases(max_batch=3))
def test_fast_path_agrees_with_the_exact_path(case: ParseCase) -> None:
    check(case)


@given(parse_cases(max_batch=3, mixed=True))
def test_fast_path_agrees_on_mixed_list_encodings(case: ParseCase) -> None:
    check(case)


@given(raw_cases(min_records=1, max_records=4))
def test_fast_path_agrees_on_raw_features(case: RawCase) -> None:
    check(ParseCase({case.key: case.spec}, case.records, single=False))


def test_fast_path_takes_what_writers_emit_and_declines_the_rest() -> None:
    features: dict[str, Any] = {
        "i": tfe.FixedLenFeature([], "int64"),
        "f": tfe.FixedLenFeature([2], "float32"),
        "s": tfe.FixedLenFeature([], "string"),
        "t": tfe.FixedLenFeature([2, 1], "string"),
        "img": tfe.RawFeature([2, 2], "uint16"),
        "px": tfe.RawFeature([], "float32"),
        "v": tfe.VarLenFeature("int64"),
        "vs": tfe.VarLenFeature("string"),
    }
    values = {
        "i": [7],
        "f": [0.5, -1.0],
        "s": [b"x"],
        "t": [b"a", b"b"],
        "img": [np.arange(4, dtype="<u2").tobytes()],
        "px": [np.float32(2.5).tobytes()],
        "v": [1, 2, 3],
        "vs": [b"p"],
    }
    decoder = SingleDecoder(features)
    record = tfe.encode_example(values)
    got = decoder.sample(record)
    assert got is not None
    assert same(got, exact(record, features))
    assert got["img"].tolist() == [[0, 1], [2, 3]]
    assert got["t"] == [[b"a"], [b"b"]]
    assert type(got["px"]) is np.float32
    # Declined: a missing feature (defaults), a wrong count, another kind, garbage.
    for bad in (
        tfe.encode_example({k: v for k, v in values.items() if k != "v"}),
        tfe.encode_example({**values, "f": [1.0]}),
        tfe.encode_example({**values, "i": [b"7"]}),
        record[:-3],
    ):
        assert decoder.sample(bad) is None
    # Specs without a fast path decline every record.
    assert SingleDecoder({"r": tfe.RaggedFeature("int64")}).sample(record) is None


def test_ds_getitem_uses_it_and_keeps_exact_errors() -> None:
    features = {"i": tfe.FixedLenFeature([], "int64", default_value=-1)}
    path = os.path.join(tempfile.mkdtemp(), "s.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([tfe.encode_example({"i": [5]}), tfe.encode_example({}), b"\xff\xff", b"\x0a"])
    ds = tfe.RecordDataset(path, features=features)
    assert same(ds[0], {"i": np.int64(5)})
    assert same(ds[1], {"i": np.int64(-1)})  # the default, from the exact path
    with pytest.raises(tfe.TFRecordError):
        ds[2]
    with pytest.raises(tfe.TFRecordError):
        ds[-1]
    with pytest.raises(IndexError):
        ds[4]
    with pytest.raises(IndexError):
        ds[-5]
