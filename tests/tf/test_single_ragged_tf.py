"""``ds[i]``'s per-record decoder on ``RaggedFeature`` (RowLengths and others) and
packed numeric lists vs TensorFlow's ``parse_single_example`` on the same bytes, in
random key orders: whatever it accepts, TensorFlow parses to the same values."""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.test_single import scalar_records
from tests.tf.convert import assert_same_value, tf_specs
from tfrecord_engine import kernels
from tfrecord_engine.example.single import SingleDecoder

FEATURES: dict[str, Any] = {
    "chars": tfe.RaggedFeature("int64", partitions=[tfe.RaggedFeature.RowLengths("lens")]),
    "deep": tfe.RaggedFeature(
        "float32",
        value_key="dv",
        partitions=[tfe.RaggedFeature.RowLengths("outer"), tfe.RaggedFeature.RowLengths("inner")],
        row_splits_dtype="int64",
    ),
    "tags": tfe.RaggedFeature("string"),
    "ids": tfe.VarLenFeature("int64"),
    "emb": tfe.FixedLenFeature([3], "float32"),
    "label": tfe.FixedLenFeature([], "int64"),
}

_INT64 = st.integers(-(2**63), 2**63 - 1) | st.integers(0, 200)


@st.composite
def records(draw: st.DrawFn) -> bytes:
    lens = draw(st.lists(st.integers(0, 4), max_size=5))
    inner = draw(st.lists(st.integers(0, 3), max_size=6))
    outer_total = len(inner)
    outer = draw(st.lists(st.integers(0, 3), max_size=4))
    if sum(outer) != outer_total:  # mostly consistent, sometimes not (TF builds it anyway)
        outer = [outer_total] if draw(st.booleans()) else outer
    values: dict[str, Any] = {
        "chars": np.array(draw(st.lists(_INT64, min_size=sum(lens), max_size=sum(lens))), np.int64),
        "lens": np.array(lens, np.int64),
        "dv": np.array(
            draw(st.lists(st.floats(width=32), min_size=sum(inner), max_size=sum(inner))),
            np.float32,
        ),
        "outer": np.array(outer, np.int64),
        "inner": np.array(inner, np.int64),
        "tags": np.array(draw(st.lists(st.binary(max_size=5), max_size=4)), dtype=object),
        "ids": np.array(draw(st.lists(_INT64, max_size=30)), np.int64),
        "emb": np.array(draw(st.lists(st.floats(width=32), min_size=3, max_size=3)), np.float32),
        "label": np.array([draw(_INT64)], np.int64),
    }
    if not len(values["tags"]):
        values["tags"] = np.zeros(0, dtype="S1")
    order = draw(st.permutations(list(values)))
    return tfe.encode_example({k: values[k] for k in order})


@settings(max_examples=60, deadline=None)
@given(st.lists(records(), min_size=1, max_size=4))
def test_ragged_row_lengths_via_the_per_record_path_match_tensorflow(
    tf: ModuleType, batch: list[bytes]
) -> None:
    specs = tf_specs(tf, FEATURES)
    decoder = SingleDecoder(FEATURES)
    assert decoder.enabled
    compiled = kernels.wait()  # (9 keys: sample() takes the compiled walk when loaded)
    for record in batch:
        got = decoder.sample(record)
        if compiled:
            assert got is None or decoder._compiled_sample(record) is not None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                want = tf.io.parse_single_example(tf.constant(record), specs)
            except (tf.errors.InvalidArgumentError, ValueError):
                want = None
        if got is None:
            continue
        assert want is not None, "accepted a record TensorFlow rejects"
        assert list(got) == list(FEATURES)
        for key in ("chars", "deep"):
            assert_same_value(tf, got[key], want[key], key)
        for key in ("tags", "ids", "emb"):
            theirs = want[key]
            theirs = theirs.values.numpy() if hasattr(theirs, "indices") else theirs.numpy()
            ours = np.asarray(got[key], dtype=object if key == "tags" else None)
            assert ours.dtype == theirs.dtype, key
            assert np.array_equal(ours, theirs, equal_nan=ours.dtype.kind == "f"), key
        assert got["label"] == want["label"].numpy()


def _parse_tf(tf: ModuleType, record: bytes, specs: dict[str, Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return tf.io.parse_single_example(tf.constant(record), specs)
        except (tf.errors.InvalidArgumentError, ValueError):
            return None


@settings(max_examples=60, deadline=None)
@given(scalar_records())
def test_the_compiled_walk_of_mutated_scalar_records_matches_tensorflow(
    tf: ModuleType, case: tuple[dict[str, Any], list[bytes]]
) -> None:
    features, records = case
    if not kernels.wait():
        return  # (no compiled kernels here: tests/tf/test_single_tf.py covers the rest)
    specs = tf_specs(tf, features)
    decoder = SingleDecoder(features)
    for record in records:
        got = decoder._compiled_sample(record)
        if got is None:
            continue
        want = _parse_tf(tf, record, specs)
        assert want is not None, "accepted a record TensorFlow rejects"
        for key, value in got.items():
            theirs = want[key].numpy()
            if isinstance(value, bytes):
                assert value == theirs
            else:
                assert value.dtype == theirs.dtype
                assert np.array_equal(value, theirs, equal_nan=value.dtype.kind == "f")
