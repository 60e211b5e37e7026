"""RawFeature: bytes values read as numeric arrays, equal to ``np.frombuffer`` on every path.

Each path is forced as the decoder tests do: small batches through ``parse_example``
take the exact per-record path; a :class:`BatchDecoder` chunk under
``TEMPLATE_MIN_RECORDS`` takes the lockstep walk only; chunks of records that share one
layout take templates; ``parse_example`` on ``LOCKSTEP_MIN_BATCH`` records takes the
batch decoder. The expected values come from ``FixedLenFeature([], "string")`` (the
bytes objects users decode today) through ``np.frombuffer``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.example import batch
from tfrecord_engine.example.batch import BatchDecoder
from tfrecord_engine.example.parse import parse_example as parse_exact
from tfrecord_engine.example.specs import FeatureSpec
from tfrecord_engine.kernels.words import read_rows
from tfrecord_engine.testing.raw import RawCase, RawErrorCase, raw_cases, raw_error_cases

_SLOW_DATA = [HealthCheck.too_slow, HealthCheck.data_too_large]
_MESSAGE = {
    "short": "Number of raw bytes != expected",
    "long": "Number of raw bytes != expected",
    "int64": "Data types don't match. Data type: int64 but expected type: string",
    "float": "Data types don't match. Data type: float but expected type: string",
    "empty": "Number of bytes values != expected.  Values size: 0",
    "two": "Number of bytes values != expected.  Values size: 2",
    "missing": "is required but could not be found",
}


def assert_bitwise(got: Any, want: np.ndarray) -> None:
    """Same dtype, shape and bytes (float NaN payloads included)."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.tobytes() == want.tobytes()


def _from_strings(case: RawCase, records: list[bytes]) -> np.ndarray:
    """The raw values as users decode them today: string output, then np.frombuffer."""
    strings = parse_exact(records, {case.key: case.string_spec})[case.key]
    rows = [
        np.frombuffer(case.spec.fit(value), case.spec.wire_dtype).reshape(case.spec.shape)
        for value in strings.tolist()
    ]
    out = np.stack(rows) if rows else np.zeros((0, *case.spec.shape), case.spec.wire_dtype)
    return out.astype(np.dtype(case.spec.dtype), copy=False)


def _rows(values: np.ndarray) -> list[bytes]:
    """Each record's value bytes, sorted (the rows of a batch, in any order)."""
    data = values.tobytes()
    width = len(data) // len(values)
    return sorted(data[k * width : (k + 1) * width] for k in range(len(values)))


def _tile(records: list[bytes], n: int) -> list[bytes]:
    return (records * -(-n // len(records)))[:n]


def _error(fn: Callable[[], object]) -> tuple[type, str, str | None, int | None]:
    with pytest.raises(tfe.ExampleParseError) as info:
        fn()
    exc = info.value
    return type(exc), str(exc), exc.key, exc.index


@given(raw_cases())
def test_exact_path_equals_frombuffer(case: RawCase) -> None:
    want = _from_strings(case, case.records)
    assert_bitwise(want, case.expected())
    got = tfe.parse_example(case.records, {case.key: case.spec})[case.key]
    assert_bitwise(got, want)
    assert got.flags.writeable
    single = tfe.parse_single_example(case.records[0], {case.key: case.spec})[case.key]
    assert_bitwise(single, want[0, ...])


@given(raw_cases(max_records=batch.TEMPLATE_MIN_RECORDS - 1))
def test_lockstep_walk_equals_frombuffer(case: RawCase) -> None:
    features: dict[str, FeatureSpec] = {
        case.key: case.spec,
        "label": tfe.FixedLenFeature([], "int64"),
    }
    dec = BatchDecoder(features)
    got = dec.decode_records(case.records)
    assert dec.stats.template_records == 0
    assert dec.stats.exact_batches == 0
    assert_bitwise(got[case.key], _from_strings(case, case.records))


@settings(suppress_health_check=_SLOW_DATA)
@given(raw_cases(uniform=True, max_records=4))
def test_template_path_equals_frombuffer(case: RawCase) -> None:
    records = _tile(case.records, 2 * batch.TEMPLATE_MIN_RECORDS)
    # "label" is requested too: its bytes then vary freely within one layout.
    features: dict[str, FeatureSpec] = {
        case.key: case.spec,
        "label": tfe.FixedLenFeature([], "int64"),
    }
    dec = BatchDecoder(features)
    got = dec.decode_records(records)[case.key]
    if len(records[0]) >= 8:  # shorter records are never templates (too short for words)
        assert dec.stats.template_records == len(records)
    assert_bitwise(got, _from_strings(case, records))


@settings(suppress_health_check=_SLOW_DATA)
@given(raw_cases(uniform=False, max_records=8), st.integers(0, 64))
def test_mixed_chunk_equals_frombuffer(case: RawCase, shift: int) -> None:
    # Templates, lockstep walk and exact fallback records merged in one chunk.
    records = _tile(case.records, 2 * batch.TEMPLATE_MIN_RECORDS + shift)
    features: dict[str, FeatureSpec] = {
        case.key: case.spec,
        "label": tfe.FixedLenFeature([], "int64"),
    }
    got = BatchDecoder(features).decode_records(records)
    assert_bitwise(got[case.key], _from_strings(case, records))


@settings(max_examples=25, suppress_health_check=_SLOW_DATA)
@given(raw_cases(max_records=6))
def test_parse_example_lockstep_batches_equal_frombuffer(case: RawCase) -> None:
    records = _tile(case.records, batch.LOCKSTEP_MIN_BATCH)
    got = tfe.parse_example(records, {case.key: case.spec})[case.key]
    assert_bitwise(got, _from_strings(case, records))


@settings(suppress_health_check=_SLOW_DATA)
@given(raw_error_cases())
def test_errors_name_key_and_record_on_every_path(err: RawErrorCase) -> None:
    case = err.case
    features: dict[str, FeatureSpec] = {
        case.key: case.spec,
        "label": tfe.FixedLenFeature([], "int64"),
    }
    exact = _error(lambda: tfe.parse_example(case.records, features))
    assert exact[2] == case.key
    assert _MESSAGE[err.fault] in exact[1]
    if err.fault == "missing":
        assert exact[3] == err.index
    else:
        assert exact[1].startswith(f"Name: <unknown>, Key: {case.key}, Index: {err.index}.  ")
    assert _error(lambda: BatchDecoder(features).decode_records(case.records)) == exact
    tiled = _tile(case.records, 2 * batch.TEMPLATE_MIN_RECORDS)
    assert _error(lambda: BatchDecoder(features).decode_records(tiled)) == exact


@settings(max_examples=10, suppress_health_check=_SLOW_DATA)
@given(raw_error_cases(max_records=4))
def test_errors_of_parse_example_lockstep_batches(err: RawErrorCase) -> None:
    records = _tile(err.case.records, batch.LOCKSTEP_MIN_BATCH)
    features = {err.case.key: err.case.spec}
    assert _error(lambda: tfe.parse_example(records, features)) == _error(
        lambda: parse_exact(records, features)
    )


@settings(max_examples=30, suppress_health_check=_SLOW_DATA)
@given(
    raw_cases(min_records=1, max_records=40),
    st.integers(1, 9),
    st.booleans(),
    st.integers(0, 3),
)
def test_record_dataset_on_a_mapped_file(
    case: RawCase, batch_size: int, shuffle: bool, seed: int
) -> None:
    # pad_remainder adds a "mask" entry, so a feature may not be named that here.
    assume(case.key != "mask")
    want = case.expected()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "raw.tfrecord")
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(case.records)
        ds = tfe.RecordDataset(path, features={case.key: case.spec})
        i = len(case.records) // 2
        # One record is a sample: a numpy scalar for shape [] (what want[i] is too).
        one = ds[i][case.key]
        assert type(one) is type(want[i])
        assert_bitwise(np.asarray(one), np.asarray(want[i]))
        pick = [i, 0, len(case.records) - 1]
        assert_bitwise(ds[pick][case.key], want[pick])
        batches = list(ds.batches(batch_size, shuffle=shuffle, seed=seed, pad_remainder=True))
        assert all(b[case.key].shape[0] == batch_size for b in batches)
        got = np.concatenate([b[case.key][b["mask"]] for b in batches])
        if shuffle:  # the same rows, in the seeded order
            assert _rows(got) == _rows(want)
        else:
            assert_bitwise(got, want)


@settings(max_examples=20, suppress_health_check=_SLOW_DATA)
@given(raw_error_cases(min_records=2, max_records=30), st.integers(1, 7))
def test_record_dataset_raises_for_the_batch_holding_the_fault(
    err: RawErrorCase, batch_size: int
) -> None:
    case = err.case
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "raw.tfrecord")
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(case.records)
        ds = tfe.RecordDataset(path, features={case.key: case.spec})
        it = ds.batches(batch_size)
        bad_batch = err.index // batch_size
        for _ in range(bad_batch):
            next(it)
        with pytest.raises(tfe.ExampleParseError) as info:
            next(it)
        assert info.value.key == case.key
        assert info.value.index == err.index - bad_batch * batch_size


@given(raw_cases(max_records=4))
def test_sequence_example_context(case: RawCase) -> None:
    records = [
        tfe.encode_sequence_example({} if v is None else {case.key: v}, {"steps": [[1], [2, 3]]})
        for v in case.values
    ]
    context, _, _ = tfe.parse_sequence_example(records, context_features={case.key: case.spec})
    assert_bitwise(context[case.key], case.expected())
    one, _ = tfe.parse_single_sequence_example(records[0], context_features={case.key: case.spec})
    assert_bitwise(one[case.key], case.expected()[0, ...])


def test_sequence_features_refuse_raw_features() -> None:
    record = tfe.encode_sequence_example({}, {"s": [[b"ab"]]})
    with pytest.raises(tfe.InvalidArgumentError, match="RawFeature"):
        tfe.parse_sequence_example([record], sequence_features={"s": tfe.RawFeature([2])})


def test_mnist_like_records_take_the_template_path_without_copies() -> None:
    rng = np.random.default_rng(7)
    images = rng.integers(0, 256, (200, 784), dtype=np.uint8)
    records = [
        tfe.encode_example({"image": im.tobytes(), "label": int(i % 10)})
        for i, im in enumerate(images)
    ]
    features: dict[str, FeatureSpec] = {
        "image": tfe.RawFeature([28, 28], "uint8"),
        "label": tfe.FixedLenFeature([], "int64"),
    }
    dec = BatchDecoder(features)
    out = dec.decode_records(records)
    assert dec.stats.template_records == 200
    np.testing.assert_array_equal(out["image"], images.reshape(200, 28, 28))
    # The output is the gathered rows themselves (a view), not a copy of them.
    assert out["image"].base is not None


_INTS = b"\x01\x02\x03\xfc"


@pytest.mark.parametrize(
    ("dtype", "raw", "expected"),
    [
        ("uint8", _INTS, [1, 2, 3, 252]),
        ("int8", _INTS, [1, 2, 3, -4]),
        ("uint16", _INTS, [0x0201, 0xFC03]),
        ("int16", _INTS, [0x0201, -0x03FD]),
        ("int32", _INTS, [-0x03FCFDFF]),
        ("uint32", _INTS, [0xFC030201]),
        ("int64", _INTS * 2, [-0x03FCFDFE03FCFDFF]),
        ("float16", b"\x00\x3c\x00\xc0", [1.0, -2.0]),
        ("float32", b"\x00\x00\xc0\x3f", [1.5]),
        ("float64", b"\x00" * 6 + b"\xf8\xbf", [-1.5]),
    ],
)
def test_values_are_little_endian(dtype: str, raw: bytes, expected: list[Any]) -> None:
    record = tfe.encode_example({"v": raw})
    spec = tfe.RawFeature([len(expected)], dtype)
    got = tfe.parse_example([record], {"v": spec})["v"]
    assert got.dtype == np.dtype(dtype)
    assert got[0].tolist() == expected


def test_default_fills_missing_records() -> None:
    spec = tfe.RawFeature([2], "int16", default_value=[-1, 7])
    records = [tfe.encode_example({"v": np.array([5, 6], "<i2").tobytes()}), b""]
    got = tfe.parse_example(records, {"v": spec})["v"]
    assert got.tolist() == [[5, 6], [-1, 7]]


class _TfLikeDType:
    name = "uint16"


@pytest.mark.parametrize("dtype", ["uint16", np.uint16, np.dtype("<u2"), "u2", _TfLikeDType()])
def test_dtype_spellings(dtype: object) -> None:
    assert tfe.RawFeature([3], dtype).dtype == "uint16"
    assert tfe.RawFeature([3], dtype).nbytes == 6


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([2], ">u2"), "big-endian"),
        (([2], "uint64"), "unsupported dtype"),
        (([2], "string"), "unsupported dtype"),
        (([2], "datetime64"), "unsupported dtype"),
        (([-1], "uint8"), "non-negative"),
        (([2], "int8", [1j, 2]), "not an array"),
        (([2], "uint8", [1, 2, 3]), "has 3 values"),
        (([2], "uint8", [1, 256]), "does not fit"),
        (([2], "int32", [0.5, 1]), "does not fit"),
        (([1], "uint8", ["a"]), "not an array"),
    ],
)
def test_bad_specs_are_refused(args: tuple[Any, ...], match: str) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match=match):
        tfe.RawFeature(*args)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fixed_length": 5}, "must agree"),
        ({"fixed_length": 0}, "greater than zero"),
        ({"fixed_length": 4.0}, "must be an int"),
        ({"little_endian": "no"}, "True or False"),
    ],
)
def test_bad_decode_raw_options_are_refused(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match=match):
        tfe.RawFeature([2], "int16", **kwargs)
    with pytest.raises(tfe.InvalidArgumentError, match="not offered for bool"):
        tfe.RawFeature([2], "bool", fixed_length=2)


def test_big_endian_complex_bool_and_fixed_length() -> None:
    """decode_raw's options, each on its own, against values written the other way."""
    ints = np.array([1, -2, 300], np.int32)
    record = tfe.encode_example(
        {"b": ints.astype(">i4").tobytes(), "c": np.array([1 + 2j], ">c8").tobytes()}
    )
    out = tfe.parse_example(
        [record],
        {
            "b": tfe.RawFeature([3], "int32", little_endian=False),
            "c": tfe.RawFeature([1], "complex64", little_endian=False),
        },
    )
    assert out["b"].tolist() == [ints.tolist()]
    assert out["c"].tolist() == [[1 + 2j]]
    assert out["b"].dtype == np.int32
    short, long = b"\x01\x00\x02", b"\x01\x00\x02\x00\x03\x00\x04"
    fixed = tfe.RawFeature([3], "int16", fixed_length=6)
    records = [tfe.encode_example({"v": v}) for v in (short, long)]
    assert tfe.parse_example(records, {"v": fixed})["v"].tolist() == [[1, 2, 0], [1, 2, 3]]
    assert tfe.parse_single_example(records[0], {"v": fixed})["v"].tolist() == [1, 2, 0]
    flags = tfe.parse_single_example(
        tfe.encode_example({"f": b"\x01\x00\x02"}), {"f": tfe.RawFeature([3], "bool")}
    )
    assert flags["f"].tobytes() == b"\x01\x00\x02"  # as stored, as decode_raw leaves it


def test_raw_and_sparse_on_one_key_are_refused() -> None:
    features: dict[str, FeatureSpec] = {
        "v": tfe.RawFeature([2]),
        "s": tfe.SparseFeature("i", "v", "string", 4),
    }
    with pytest.raises(tfe.InvalidArgumentError, match="must not intersect"):
        tfe.parse_example([b""], features)


def test_a_raw_key_whose_lists_are_all_empty_in_a_short_batch() -> None:
    # Found by Hypothesis: every list of the RawFeature key empty, and the records'
    # buffer shorter than one row; the row gather then asked numpy for negative sizes.
    record = tfe.encode_example({"0": [b""], "label": [1]})
    features: dict[str, FeatureSpec] = {
        "0": tfe.RawFeature([3, 5], "uint16"),
        "label": tfe.FixedLenFeature([], "int64"),
    }
    exact = _error(lambda: tfe.parse_example([record], features))
    assert _error(lambda: BatchDecoder(features).decode_records([record])) == exact
    assert read_rows(np.zeros(5, np.uint8), np.zeros(0, np.int64), 30).shape == (0, 30)
