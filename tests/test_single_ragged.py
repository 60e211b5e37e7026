"""``ds[i]``'s per-record decoder (``example/single.py``, ``example/single_steps.py``) on
``RaggedFeature`` and on numeric lists, against the exact path.

The per-record decoder reads packed numeric lists without Python lists (floats with
one ``frombuffer`` copy, varints with the compiled loop or numpy) and builds a
``RaggedFeature``'s sample from its value and partition keys with the exact path's own
``single_ragged``. Whatever it accepts must equal ``sample_of(parse_single_example)``:
values, dtypes, types (``VarLenArray``, ``RaggedValue``) and row splits.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.test_single import agreeing, exact, scalar_records
from tests.test_single import same as _same
from tfrecord_engine import kernels
from tfrecord_engine.example.single import SingleDecoder
from tfrecord_engine.testing.examples import ParseCase, parse_cases


def same(a: Any, b: Any) -> bool:
    """:func:`tests.test_single.same`, and ragged values by their parts (recursively)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, tfe.RaggedValue):
        return type(b) is type(a) and same(a.values, b.values) and _same(a.row_splits, b.row_splits)
    return _same(a, b)


KINDS = (tfe.FixedLenFeature, tfe.RawFeature, tfe.VarLenFeature, tfe.RaggedFeature)


def _check(case: ParseCase) -> int:
    features = {k: s for k, s in case.features.items() if isinstance(s, KINDS)}
    assume(features)
    decoder = SingleDecoder(features)
    return len(agreeing(decoder.sample, lambda r: exact(r, features), case.records, same))


@settings(max_examples=150)
@given(parse_cases(max_batch=3, canonical=True))
def test_ragged_and_lists_agree_with_the_exact_path_in_any_key_order(case: ParseCase) -> None:
    _check(case)


@settings(max_examples=80)
@given(parse_cases(max_batch=3, mixed=True))
def test_ragged_and_lists_agree_on_mixed_list_encodings(case: ParseCase) -> None:
    _check(case)


RAGGED: dict[str, Any] = {
    "chars": tfe.RaggedFeature("int64", partitions=[tfe.RaggedFeature.RowLengths("lens")]),
    "tags": tfe.RaggedFeature("string"),
    "w": tfe.RaggedFeature("float32", value_key="wv", row_splits_dtype="int64"),
    "label": tfe.FixedLenFeature([], "int64"),
}


def _ragged_record(rng: np.random.Generator, order: list[str]) -> bytes:
    lens = rng.integers(0, 6, size=int(rng.integers(0, 5)))
    values: dict[str, Any] = {
        "chars": rng.integers(-(2**40), 2**40, size=int(lens.sum())),
        "lens": lens.astype(np.int64),
        "tags": [b"t%d" % t for t in rng.integers(0, 9, size=int(rng.integers(1, 4)))],
        "wv": rng.standard_normal(int(rng.integers(1, 5))).astype(np.float32).tolist(),
        "label": [int(rng.integers(0, 3))],
    }
    return tfe.encode_example({k: values[k] for k in order})


def test_ragged_specs_take_the_per_record_path() -> None:
    decoder = SingleDecoder(RAGGED)
    assert decoder.enabled
    rng = np.random.default_rng(3)
    keys = ["chars", "lens", "tags", "wv", "label"]
    for _ in range(40):
        order = [str(k) for k in rng.permutation(keys)]
        record = _ragged_record(rng, order)
        got = decoder.sample(record)
        assert got is not None, order
        assert same(got, exact(record, RAGGED))
        assert isinstance(got["chars"], tfe.RaggedValue)
        assert got["chars"].row_splits.dtype == np.int32
        assert got["w"].dtype == np.float32


def test_a_key_shared_by_two_specs_takes_the_exact_path() -> None:
    features: dict[str, Any] = {
        "a": tfe.RaggedFeature("int64", partitions=[tfe.RaggedFeature.RowLengths("n")]),
        "n": tfe.VarLenFeature("int64"),
    }
    decoder = SingleDecoder(features)
    assert not decoder.enabled
    assert decoder.sample(tfe.encode_example({"a": [1, 2, 3], "n": [1, 2]})) is None


def test_inconsistent_row_lengths_follow_the_exact_path() -> None:
    # Without validate, TensorFlow builds the value as is; with it, the exact path raises.
    record = tfe.encode_example({"v": [1, 2, 3], "n": [1, 5]})
    for validate in (False, True):
        spec = {
            "v": tfe.RaggedFeature(
                "int64", partitions=[tfe.RaggedFeature.RowLengths("n")], validate=validate
            )
        }
        got = SingleDecoder(spec).sample(record)
        want = exact(record, spec)
        if want is None:
            assert got is None
        else:
            assert got is not None
            assert same(got, want)


@pytest.mark.parametrize("splits_dtype", ["int32", "int64"])
@given(
    st.lists(
        st.one_of(
            st.integers(0, 5),
            st.integers(-(2**63), 2**63 - 1),
            st.sampled_from([2**31 - 1, 2**31, -(2**31), 2**32, 2**62, -(2**63)]),
        ),
        max_size=40,
    )
)
def test_row_splits_wrap_as_the_exact_path_casts(splits_dtype: str, lengths: list[int]) -> None:
    """Row lengths of any size (unvalidated: TensorFlow casts each to the splits' dtype,
    sums, casts back; the casts wrap): the per-record path's splits, summed in Python
    for a few rows, equal the exact path's, past 32 rows and past the dtype's range."""
    spec = {
        "v": tfe.RaggedFeature(
            "int64",
            partitions=[tfe.RaggedFeature.RowLengths("n")],
            row_splits_dtype=splits_dtype,
        )
    }
    record = tfe.encode_example({"v": [1, 2, 3], "n": np.array(lengths, np.int64)})
    got = SingleDecoder(spec).sample(record)
    want = exact(record, spec)
    assert want is not None
    assert got is not None
    assert same(got, want)


@pytest.mark.parametrize("compiled", [False, True])
@given(
    st.lists(
        st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(0, 300)), min_size=0, max_size=60
    ),
    st.lists(st.floats(width=32, allow_nan=False), max_size=20),
)
def test_packed_lists_with_and_without_the_compiled_loop(
    compiled: bool, ints: list[int], floats: list[float]
) -> None:
    features = {
        "i": tfe.VarLenFeature("int64"),
        "f": tfe.VarLenFeature("float32"),
        "g": tfe.FixedLenFeature([len(ints)], "int64") if ints else tfe.VarLenFeature("int64"),
    }
    i64, f32 = np.array(ints, np.int64), np.array(floats, np.float32)
    record = tfe.encode_example({"f": f32, "i": i64, "g": i64})
    if compiled:
        kernels.wait()
    with kernels.switched(compiled):
        got = SingleDecoder(features).sample(record)
    assert got is not None
    assert same(got, exact(record, features))
    assert got["i"].flags.writeable
    assert got["f"].flags.writeable


def test_getitem_and_getitems_of_ragged_records_equal_the_exact_path() -> None:
    rng = np.random.default_rng(7)
    keys = ["chars", "lens", "tags", "wv", "label"]
    records = [_ragged_record(rng, [str(k) for k in rng.permutation(keys)]) for _ in range(30)]
    path = os.path.join(tempfile.mkdtemp(), "r.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    ds = tfe.RecordDataset(path, features=RAGGED)
    for i, record in enumerate(records):
        assert same(ds[i], exact(record, RAGGED))
    idx = [3, 1, 29, 3, 0, 17, 8, 22]
    for got, i in zip(ds.__getitems__(idx), idx, strict=True):
        assert same(got, exact(records[i], RAGGED))


def test_scalar_specs_of_varied_lengths_or_many_keys_prefer_the_batch_walk() -> None:
    small = SingleDecoder({"x": tfe.FixedLenFeature([], "int64")})
    before = small.prefers_walk  # small records of few lengths: the layouts
    assert not before
    for n in range(70):  # records of 70 lengths: the layouts run out
        assert small.sample(tfe.encode_example({"x": [1], "pad": [b"p" * n]})) is not None
    assert small.prefers_walk
    wide = SingleDecoder({f"k{j}": tfe.FixedLenFeature([], "float32") for j in range(20)})
    assert wide.prefers_walk
    assert SingleDecoder(RAGGED).prefers_walk


# ---- the compiled walk of one record (kernels/_single.py) ----------------------------


def _compiled(decoder: SingleDecoder, record: bytes) -> dict[str, Any] | None:
    if not kernels.wait():
        pytest.skip("the compiled kernels are not available here")
    return decoder._compiled_sample(record)


@settings(max_examples=150)
@given(parse_cases(max_batch=3, mixed=True) | parse_cases(max_batch=3, canonical=True))
def test_the_compiled_walk_agrees_with_the_exact_path(case: ParseCase) -> None:
    features = {k: s for k, s in case.features.items() if isinstance(s, KINDS)}
    assume(features)
    decoder = SingleDecoder(features)
    assume(decoder.enabled)
    for record in case.records:
        got = _compiled(decoder, record)
        if got is None:
            continue
        want = exact(record, features)
        assert want is not None, "the compiled walk accepted a record the exact path rejects"
        assert same(got, want), (got, want)


@given(scalar_records())
def test_the_compiled_walk_agrees_on_mutated_scalar_records(
    case: tuple[dict[str, Any], list[bytes]],
) -> None:
    features, records = case
    decoder = SingleDecoder(features)
    for record in records:
        got = _compiled(decoder, record)
        if got is not None:
            want = exact(record, features)
            assert want is not None, "the compiled walk accepted a record the exact path rejects"
            assert same(got, want), (got, want)


def test_the_compiled_walk_takes_wide_records_in_any_key_order() -> None:
    rng = np.random.default_rng(11)
    kinds = ["int64", "float32", "string"]
    features: dict[str, Any] = {
        f"f{j:03d}": tfe.FixedLenFeature([], kinds[j % 3]) for j in range(40)
    }
    features["v"] = tfe.VarLenFeature("int64")
    decoder = SingleDecoder(features)
    for _ in range(20):
        values: dict[str, Any] = {
            f"f{j:03d}": [int(rng.integers(-(2**62), 2**62))]
            if j % 3 == 0
            else ([float(rng.standard_normal())] if j % 3 == 1 else [b"s%d" % j])
            for j in range(40)
        }
        values["v"] = rng.integers(0, 2**40, size=int(rng.integers(1, 9)))
        values["unrequested"] = [b"x" * int(rng.integers(0, 300))]
        order = [str(k) for k in rng.permutation(list(values))]
        record = tfe.encode_example({k: values[k] for k in order})
        got = _compiled(decoder, record)
        assert got is not None
        assert same(got, exact(record, features))
        assert same(decoder.sample(record), got)
