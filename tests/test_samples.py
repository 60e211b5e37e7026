"""Per-record samples (``RecordDataset.__getitems__``, ``ds[i]``) and ``tfe.collate``."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.data.samples import sample_of
from tfrecord_engine.example.varlen import VarLenArray, VarLenList, varlen_array
from tfrecord_engine.example.wire import Duplicates, example_feature_map
from tfrecord_engine.testing.examples import ParseCase, parse_cases


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types (numpy scalars, arrays with dtypes, lists, bytes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (tfe.RaggedValue, tfe.SparseValue)):
        return all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (np.ndarray, np.generic)):
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    return bool(a == b)


def write(records: list[bytes]) -> str:
    path = os.path.join(tempfile.mkdtemp(), "s.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    return path


SPEC: dict[str, Any] = {
    "i": tfe.FixedLenFeature([], "int64"),
    "f": tfe.FixedLenFeature([2], "float32"),
    "s": tfe.FixedLenFeature([], "string"),
    "s2": tfe.FixedLenFeature([2], "string"),
    "img": tfe.RawFeature([2, 2], "uint8"),
    "v": tfe.VarLenFeature("int64"),
    "vs": tfe.VarLenFeature("string"),
    "seq": tfe.FixedLenSequenceFeature([2], "float32", allow_missing=True),
    "r": tfe.RaggedFeature("int64"),
    "rp": tfe.RaggedFeature(
        "int64", value_key="rv", partitions=[tfe.RaggedFeature.RowLengths("rl")]
    ),
    "sp": tfe.SparseFeature("spi", "spv", "float32", [5]),
}


def record(i: int) -> bytes:
    k = i % 3
    return tfe.encode_example(
        {
            "i": [i],
            "f": [i / 2, -1.0],
            "s": [b"s%d" % i],
            "s2": [b"a%d" % i, b"b"],
            "img": [bytes([i % 256, 1, 2, 3])],
            "v": np.arange(k, dtype=np.int64),
            "vs": np.array([b"x%d" % j for j in range(k)], dtype=object),
            "seq": np.arange(2 * k, dtype=np.float32),
            "r": np.arange(i % 4, dtype=np.int64),
            "rv": np.arange(3, dtype=np.int64) + i,
            "rl": np.array([1, 2] if k else [3, 0], dtype=np.int64),
            "spi": np.array([k, 4], dtype=np.int64),
            "spv": np.array([1.5, float(i)], dtype=np.float32),
        }
    )


@pytest.fixture(scope="module")
def every_kind() -> tuple[tfe.RecordDataset, list[bytes]]:
    records = [record(i) for i in range(40)]
    return tfe.RecordDataset(write(records), features=SPEC), records


def test_samples_are_collatable_types(every_kind: tuple[tfe.RecordDataset, list[bytes]]) -> None:
    ds, _ = every_kind
    got = ds.__getitems__([7, 3])
    assert isinstance(got, list)
    assert len(got) == 2
    s = got[0]
    assert list(s) == list(SPEC)
    assert s["i"] == 7
    assert isinstance(s["i"], np.int64)
    assert same(s["f"], np.array([3.5, -1.0], np.float32))
    assert s["s"] == b"s7"
    assert s["s2"] == [b"a7", b"b"]
    assert same(s["img"], np.array([[7, 1], [2, 3]], np.uint8))
    # Variable-length values are typed as such (plain arrays otherwise): collates pad them.
    assert same(s["v"], varlen_array(np.array([0], np.int64)))
    assert s["vs"] == [b"x0"]
    assert isinstance(s["vs"], VarLenList)
    assert same(s["seq"], varlen_array(np.array([[0, 1]], np.float32)))
    assert same(s["r"], varlen_array(np.arange(3, dtype=np.int64)))
    assert s["rp"].to_list() == [[7], [8, 9]]
    assert s["sp"].to_dense().tolist() == [0, 1.5, 0, 0, 7.0]


def test_batch_samples_equal_single_record_parsing(
    every_kind: tuple[tfe.RecordDataset, list[bytes]],
) -> None:
    ds, records = every_kind
    order = np.random.default_rng(0).permutation(len(records))
    batch = ds.__getitems__(order)
    for i, sample in zip(order.tolist(), batch, strict=True):
        expected = sample_of(SPEC, tfe.parse_single_example(records[i], SPEC))
        assert same(sample, expected), i
        assert same(ds[i], sample), i
    assert all(same(a, b) for a, b in zip(ds, ds.__getitems__(range(len(ds))), strict=True))


def test_ds_list_stays_the_columnar_batch(
    every_kind: tuple[tfe.RecordDataset, list[bytes]],
) -> None:
    ds, records = every_kind
    got = ds[[4, 1]]
    expected = tfe.parse_example([records[4], records[1]], SPEC)
    assert isinstance(got, dict)
    assert same(got["s"], expected["s"])
    assert isinstance(got["v"], tfe.SparseValue)


def test_getitems_raises_the_batch_error_and_checks_range() -> None:
    records = [tfe.encode_example({"x": [i]}) for i in range(5)]
    records[3] = tfe.encode_example({"x": [1.5]})
    ds = tfe.RecordDataset(write(records), features={"x": tfe.FixedLenFeature([], "int64")})
    assert [int(s["x"]) for s in ds.__getitems__([4, 0, -1])] == [4, 0, 4]
    assert ds.__getitems__([]) == []
    with pytest.raises(tfe.ExampleParseError, match="Index: 1"):
        ds.__getitems__([0, 3])
    with pytest.raises(tfe.OutOfRangeError):
        ds.__getitems__([0, 5])


def test_raw_getitems_is_a_list_of_bytes() -> None:
    ds = tfe.RecordDataset(write([b"a", b"b", b"c"]))
    assert ds.__getitems__(np.array([2, 0])) == [b"c", b"a"]


@given(parse_cases(max_batch=6))
def test_samples_match_parse_single_example(case: ParseCase) -> None:
    try:
        tfe.parse_example(case.records, case.features)
    except tfe.TFRecordError as exc:
        ds = tfe.RecordDataset(write(case.records), features=case.features)
        with pytest.raises(type(exc)):
            ds.__getitems__(range(len(case.records)))
        return
    ds = tfe.RecordDataset(write(case.records), features=case.features)
    got = ds.__getitems__(range(len(case.records)))
    for r, sample in zip(case.records, got, strict=True):
        if _repeats_a_key_with_an_empty_feature(r):
            # TensorFlow itself differs here: its single-record path skips an empty
            # Feature that repeats a key, its batch path (which samples follow) lets
            # it win. Batch semantics are tested against parse_example elsewhere.
            continue
        try:
            want = tfe.parse_single_example(r, case.features)
        except tfe.ExampleParseError:
            # TensorFlow merges a SparseFeature's index and value lists over the whole
            # batch: counts that differ in one record may balance across the batch,
            # which then parses, where that record alone does not.
            assert any(isinstance(s, tfe.SparseFeature) for s in case.features.values())
            continue
        assert same(sample, sample_of(case.features, want))
    ds.close()


def _repeats_a_key_with_an_empty_feature(record: bytes) -> bool:
    dups = Duplicates()
    try:
        example_feature_map(record, dups)
    except ValueError:
        return False
    return bool(dups.shadowed)


def test_collate_stacks_pads_and_lists(every_kind: tuple[tfe.RecordDataset, list[bytes]]) -> None:
    ds, _ = every_kind
    samples = ds.__getitems__([0, 1, 2])
    batch = tfe.collate(samples, format="numpy")
    assert same(batch["i"], np.array([0, 1, 2], np.int64))
    assert batch["f"].shape == (3, 2)
    assert batch["s"] == [b"s0", b"s1", b"s2"]
    assert batch["s2"] == [[b"a0", b"b"], [b"a1", b"b"], [b"a2", b"b"]]
    assert batch["img"].shape == (3, 2, 2)
    assert batch["v"].values.tolist() == [[0, 0], [0, 0], [0, 1]]
    assert batch["v"].lengths.tolist() == [0, 1, 2]
    assert batch["vs"] == [[], [b"x0"], [b"x0", b"x1"]]
    assert batch["rp"].values.shape == (3, 2, 3)
    padded = tfe.collate(samples, pad_value=-1, format="numpy")
    assert padded["v"].values.tolist() == [[-1, -1], [0, -1], [0, 1]]
    assert padded["seq"].values.shape == (3, 2, 2)
    assert padded["seq"].values[0].tolist() == [[-1, -1], [-1, -1]]
    converted = tfe.collate(samples, convert=lambda a: a.tolist())
    assert converted["i"] == [0, 1, 2]
    assert converted["v"].lengths == [0, 1, 2]


def test_collate_refuses_what_it_cannot_batch() -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="at least one"):
        tfe.collate([])
    with pytest.raises(tfe.InvalidArgumentError, match="different keys"):
        tfe.collate([{"a": 1}, {"b": 1}])
    with pytest.raises(tfe.InvalidArgumentError, match="ranks"):
        tfe.collate([varlen_array(np.zeros(2)), varlen_array(np.zeros((1, 1)))], pad_value=0)
    assert tfe.collate([1, 2], format="numpy").tolist() == [1, 2]


@given(st.lists(st.lists(st.integers(-5, 5), max_size=4), min_size=1, max_size=5))
def test_collate_pad_keeps_every_value(rows: list[list[int]]) -> None:
    arrays = [varlen_array(np.array(r, dtype=np.int64)) for r in rows]
    out = tfe.collate(arrays, pad_value=99, format="numpy")
    width = max(len(r) for r in rows)
    # Padded even when the lengths agree: the form follows the kind, not the batch.
    assert out.values.tolist() == [r + [99] * (width - len(r)) for r in rows]
    assert out.lengths.tolist() == [len(r) for r in rows]
    assert out.mask.tolist() == [[True] * len(r) + [False] * (width - len(r)) for r in rows]
    assert not isinstance(out.values, VarLenArray)


def test_repr_identifies_the_files(tmp_path: Any) -> None:
    paths = [str(tmp_path / f"p{i}.tfrecord") for i in range(2)]
    for i, path in enumerate(paths):
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many([b"r%d-%d" % (i, j) for j in range(5)])
    first = repr(tfe.RecordDataset(paths))
    assert first == repr(tfe.RecordDataset(list(paths)))
    assert first.startswith("RecordDataset(2 files, id=")
    assert repr(tfe.RecordDataset(paths[:1])) != first
    assert repr(tfe.RecordDataset(paths[::-1])) != first
    with tfe.TFRecordWriter(paths[1], index=True) as w:  # same size, new content
        w.write_many([b"r9-%d" % j for j in range(5)])
    assert repr(tfe.RecordDataset(paths)) != first
    gone = tmp_path / "gone.tfrecord"  # (a missing file fails at construction)
    with tfe.TFRecordWriter(gone) as w:
        w.write(b"x")
    missing = tfe.RecordDataset(str(gone))
    gone.unlink()  # removed before the dataset's first use
    assert "id=unreadable (FileNotFoundError)" in repr(missing)


def test_grain_batched_hook_is_getitems(every_kind: tuple[tfe.RecordDataset, list[bytes]]) -> None:
    ds, _ = every_kind
    assert all(
        same(a, b) for a, b in zip(ds._getitems([5, 2]), ds.__getitems__([5, 2]), strict=True)
    )


def test_batches_can_drop_string_features(
    every_kind: tuple[tfe.RecordDataset, list[bytes]],
) -> None:
    ds, _ = every_kind
    kept = next(ds.batches(8))
    dropped = next(ds.batches(8, strings="drop", pad_remainder=True))
    assert set(kept) - set(dropped) == {"s", "s2", "vs"}
    assert "mask" in dropped
    assert same(dropped["f"], kept["f"])
    with pytest.raises(tfe.InvalidArgumentError, match="features"):
        tfe.RecordDataset(ds.paths).batches(8, strings="drop")
    with pytest.raises(tfe.InvalidArgumentError, match="strings"):
        ds.batches(8, strings="bytes")  # type: ignore[arg-type]
