"""Partitioned ``RaggedFeature``s on records whose partitions disagree, and
SequenceExample steps with a field after their list, against TensorFlow.

Found by a differential search (2026-11-29): the engine dropped rows that a
``UniformRowLength`` could not split, skipped ``parse_sequence_example``'s alignment check
of ``validate=True``, cut a batch's samples so that one record's sample held another's
values (or crashed with an ``IndexError``), gave an empty ``RowSplits`` the batch's
``[0]`` in a sample where ``ds[i]`` gives ``[]``, and read the first list of a step
``Feature`` that TensorFlow refuses. Each case here failed before the fix.
"""

from __future__ import annotations

import struct
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.tf.convert import tf_spec
from tfrecord_engine.errors import ExampleParseError, ParseError

P = tfe.RaggedFeature


def _example(**features: list[Any]) -> bytes:
    """An Example of these lists: ``bytes`` values a BytesList, ``[]`` an empty
    BytesList for "v" (the strings' key) and an empty Int64List otherwise."""
    out: dict[str, Any] = {}
    for key, values in features.items():
        if values and isinstance(values[0], bytes):
            out[key] = values
        elif key == "v" and not values:
            out[key] = np.zeros(0, "S1")
        else:
            out[key] = np.array(values, np.int64)
    return tfe.encode_example(out)


def _sequence(tf: ModuleType, context: dict[str, list[int]], **lists: list[list[int]]) -> bytes:
    s = tf.train.SequenceExample()
    for key, values in context.items():
        s.context.feature[key].int64_list.value.extend(values)
    for key, steps in lists.items():
        fl = s.feature_lists.feature_list[key]
        for step in steps:
            fl.feature.add().int64_list.value.extend(step)
    return bytes(s.SerializeToString())


def _write(path: Path, records: list[bytes]) -> str:
    with tfe.TFRecordWriter(str(path), index=True) as w:
        for r in records:
            w.write(r)
    return str(path)


def _lists(value: Any) -> Any:
    return value.to_list() if hasattr(value, "to_list") else np.asarray(value).tolist()


def test_a_uniform_row_length_that_does_not_divide_the_rows_fails_with_validate(
    tf: ModuleType,
) -> None:
    # 3 rows (RowLengths) in rows of 2: with validate TensorFlow raises, where the third
    # row was dropped; without, TensorFlow's eager parse drops it, and so does the engine.
    partitions: list[Any] = [P.UniformRowLength(2), P.RowLengths("l")]
    records = [_example(v=[1, 2, 3], l=[1, 1, 1])]
    spec = P("int64", partitions=partitions, validate=True)
    with pytest.raises(ValueError, match="uniform_row_length=2 times nrows=1"):
        tf.io.parse_example(records, {"v": tf_spec(tf, spec)})
    with pytest.raises(ExampleParseError, match="uniform_row_length=2 times nrows=1"):
        tfe.parse_example(records, {"v": spec})
    with pytest.raises(ExampleParseError, match="uniform_row_length=2 times nrows=1"):
        tfe.parse_single_example(records[0], {"v": spec})
    with pytest.raises(ValueError, match="uniform_row_length=2 times nrows=1"):
        tf.io.parse_single_sequence_example(
            _sequence(tf, {}, v=[[1, 2, 3]], l=[[1, 1, 1]]),
            sequence_features={"v": tf_spec(tf, spec)},
        )
    with pytest.raises(ExampleParseError, match="uniform_row_length=2 times nrows=1"):
        tfe.parse_single_sequence_example(
            _sequence(tf, {}, v=[[1, 2, 3]], l=[[1, 1, 1]]), None, {"v": spec}
        )
    loose = P("int64", partitions=partitions)
    for batch in (records, [_example(v=[1, 2, 3, 4], l=[1, 1, 2, 0])]):
        theirs = tf.io.parse_example(batch, {"v": tf_spec(tf, loose)})["v"].to_list()
        assert tfe.parse_example(batch, {"v": loose})["v"].to_list() == theirs


@pytest.mark.parametrize(
    "kind", ["RowLengths", "RowSplits", "RowStarts", "RowLimits", "ValueRowIds"]
)
def test_validate_checks_that_a_sequence_partition_has_the_values_steps(
    tf: ModuleType, kind: str
) -> None:
    part = getattr(P, kind)("l")
    spec = P("int64", partitions=[part], validate=True)
    records = [_sequence(tf, {}, v=[[1, 2], [3]], l=[[1, 1], [1]]), _sequence(tf, {}, v=[[], []])]
    seq = {"v": tf_spec(tf, spec)}
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="values and partitions are not aligned"
    ):
        tf.io.parse_sequence_example(records, sequence_features=seq)
    with pytest.raises(ExampleParseError, match="values and partitions are not aligned"):
        tfe.parse_sequence_example(records, None, {"v": spec})
    # Aligned steps pass (the partitions above are valid ones of these two kinds).
    if kind in ("RowLengths", "ValueRowIds"):
        last = [[1]] if kind == "RowLengths" else [[0]]
        aligned = [records[0], _sequence(tf, {}, v=[[4]], l=last)]
        theirs = tf.io.parse_sequence_example(aligned, sequence_features=seq)[1]["v"]
        ours = tfe.parse_sequence_example(aligned, None, {"v": spec})[1]["v"]
        assert ours.to_list() == theirs.to_list()


def test_samples_of_disagreeing_partitions_are_each_records_own(
    tf: ModuleType, tmp_path: Path
) -> None:
    # RowLengths claim more (or fewer) rows than ValueRowIds make: cut from the batch, a
    # record's sample took the next record's row (or an IndexError); each sample is now
    # the record's parse_single_example, as ds[i] is.
    spec = {"v": P("string", partitions=[P.RowLengths("a"), P.ValueRowIds("b")])}
    theirs_spec = {"v": tf_spec(tf, spec["v"])}
    cases = [
        [_example(v=[b"x"], a=[2], b=[0]), _example(b=[])],
        [_example(v=[b"x"], a=[2], b=[0]), _example(v=[b"y"], a=[0], b=[0]), _example(v=[], b=[])],
    ]
    for k, records in enumerate(cases):
        ds = tfe.RecordDataset(_write(tmp_path / f"r{k}.tfrecord", records), features=spec)
        idx = list(range(len(records)))
        for sample, record in zip(ds.__getitems__(idx), records, strict=True):
            want = tf.io.parse_single_example(record, theirs_spec)["v"].to_list()
            assert _lists(sample["v"]) == want
        for i, record in enumerate(records):
            assert (
                _lists(ds[i]["v"]) == tf.io.parse_single_example(record, theirs_spec)["v"].to_list()
            )


def test_an_empty_row_splits_partition_is_a_samples_as_in_a_single_parse(
    tf: ModuleType, tmp_path: Path
) -> None:
    seq = {"s": tfe.FixedLenSequenceFeature([], "int64")}
    spec = {"c": P("int64", partitions=[P.RowSplits("p")])}
    records = [
        _sequence(tf, {"c": [], "p": []}, s=[[1]]),
        _sequence(tf, {"c": [5], "p": [0, 1]}, s=[[1]]),
    ]
    path = _write(tmp_path / "s.tfrecord", records)
    ds = tfe.RecordDataset(path, context_features=spec, sequence_features=seq)
    theirs = tf.io.parse_single_sequence_example(records[0], {"c": tf_spec(tf, spec["c"])})[0]["c"]
    got = ds.__getitems__([0, 1])[0]["c"]
    assert got.row_splits.tolist() == theirs.row_splits.numpy().tolist() == []
    assert ds[0]["c"].row_splits.tolist() == []
    # Partitioned again, TensorFlow's single parse fails on it: so do ds[0] and a small
    # batch holding it, naming the record.
    deeper = {"c": P("int64", partitions=[P.RowStarts("q"), P.RowSplits("p")])}
    records = [
        _sequence(tf, {"c": [], "p": [], "q": []}, s=[[1]]),
        _sequence(tf, {"c": [5], "p": [0, 1], "q": [0]}, s=[[1]]),
    ]
    path = _write(tmp_path / "d.tfrecord", records)
    ds = tfe.RecordDataset(path, context_features=deeper, sequence_features=seq)
    with pytest.raises(ValueError, match="Dimension -1 must be >= 0"):
        tf.io.parse_single_sequence_example(records[0], {"c": tf_spec(tf, deeper["c"])})
    for call in (lambda: ds[0], lambda: ds.__getitems__([1, 0])):
        with pytest.raises(ParseError, match="Dimension -1 must be >= 0") as info:
            call()
        assert "record 0 at offset 0" in str(info.value)


def _varint(n: int) -> bytes:
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([low])
        out += bytes([low | 0x80])


def _field(number: int, payload: bytes) -> bytes:
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


@pytest.mark.parametrize(
    ("dtype", "value_list"),
    [
        ("string", _field(1, _field(1, b"ab"))),
        ("int64", _field(3, _varint(1 << 3) + _varint(5))),  # an unpacked Int64List
        ("float32", _field(2, _varint((1 << 3) | 5) + struct.pack("<f", 0.5))),  # unpacked
    ],
    ids=["bytes", "int64", "float32"],
)
@pytest.mark.parametrize(
    "tail", [_field(7, b"zz"), _field(3, _field(1, _varint(9)))], ids=["unknown", "second-list"]
)
def test_a_step_with_a_field_after_its_list_fails_as_in_tensorflow(
    tf: ModuleType, tmp_path: Path, dtype: str, value_list: bytes, tail: bytes
) -> None:
    step = value_list + tail
    record = _field(2, _field(1, _field(1, b"s") + _field(2, _field(1, step))))
    tf_dtype = {"int64": tf.int64, "string": tf.string, "float32": tf.float32}[dtype]
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_single_sequence_example(
            record, sequence_features={"s": tf.io.FixedLenSequenceFeature([], tf_dtype)}
        )
    spec = {"s": tfe.FixedLenSequenceFeature([], dtype)}
    with pytest.raises(ParseError):
        tfe.parse_single_sequence_example(record, None, spec)
    with pytest.raises(ParseError):
        tfe.parse_sequence_example([record], None, spec)
    ds = tfe.RecordDataset(_write(tmp_path / "s.tfrecord", [record]), sequence_features=spec)
    with pytest.raises(ParseError):
        next(iter(ds.batches(1)))
    with pytest.raises(ParseError):
        ds[0]
    # The list alone is a step TensorFlow reads, and so does the engine.
    alone = _field(2, _field(1, _field(1, b"s") + _field(2, _field(1, value_list))))
    theirs = tf.io.parse_single_sequence_example(
        alone, sequence_features={"s": tf.io.FixedLenSequenceFeature([], tf_dtype)}
    )[1]["s"].numpy()
    assert tfe.parse_single_sequence_example(alone, None, spec)[1]["s"].tolist() == theirs.tolist()


def test_samples_of_agreeing_partitions_are_cut_from_the_batch(
    tf: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Well-formed records (uniform rows inside ragged ones too) keep the batch cut: no
    # record goes the per-record way, and each sample is TensorFlow's single parse.
    from tfrecord_engine.data import samples

    spec = {"v": P("int64", partitions=[P.RowLengths("a"), P.UniformRowLength(2)])}
    records = [_example(v=[0, 1, 2, 3], a=[1, 1]), _example(v=[4, 5, 6, 7, 8, 9], a=[3])]
    ds = tfe.RecordDataset(_write(tmp_path / "u.tfrecord", records), features=spec)
    calls: list[int] = []
    real = samples.per_record

    def counted(one: Any, n: int) -> Any:
        calls.append(n)
        return real(one, n)

    monkeypatch.setattr(samples, "per_record", counted)
    got = ds._samples(np.arange(2))
    assert calls == []
    theirs_spec = {"v": tf_spec(tf, spec["v"])}
    for sample, record in zip(got, records, strict=True):
        assert _lists(sample["v"]) == tf.io.parse_single_example(record, theirs_spec)["v"].to_list()
