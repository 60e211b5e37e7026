"""tfrecord_engine.arrow vs TensorFlow: Arrow columns equal tf.io's parsing of the same
bytes (every kind of spec, errors included), and rows written from Arrow are the
tf.train.Examples of the same values."""

from __future__ import annotations

import os
import struct
import tempfile
import warnings
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given

pa = pytest.importorskip("pyarrow")

import tfrecord_engine as tfe  # noqa: E402 - after the skip
import tfrecord_engine.arrow as tfa  # noqa: E402
from tests.tf.convert import ours_outcome, outcome, tf_specs  # noqa: E402
from tfrecord_engine.errors import InvalidArgumentError  # noqa: E402
from tfrecord_engine.example.batch import join_records  # noqa: E402
from tfrecord_engine.hosts.arrow.decode import ExampleBatches  # noqa: E402
from tfrecord_engine.hosts.arrow.plan import plan_of  # noqa: E402
from tfrecord_engine.hosts.arrow.sequence import SequenceBatches, sequence_plans  # noqa: E402
from tfrecord_engine.testing.arrow_tables import arrow_tables  # noqa: E402
from tfrecord_engine.testing.examples import (  # noqa: E402
    ParseCase,
    SequenceCase,
    parse_cases,
    sequence_cases,
)


def _norm(value: Any) -> Any:
    """Values comparable across numpy and Arrow: floats by their float32 bits."""
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return struct.pack("<f", float(value))
    if isinstance(value, np.generic):
        return value.item()
    return value


def _sparse_rows(tf: ModuleType, value: Any, n: int, depth: int = 1) -> list[Any]:
    """A SparseTensor's entries per record: ``(position tuple, value)`` pairs."""
    out: list[list[tuple[tuple[int, ...], Any]]] = [[] for _ in range(n)]
    values = value.values.numpy().tolist()
    for idx, v in zip(value.indices.numpy().tolist(), values, strict=True):
        out[idx[0]].append((tuple(idx[depth:]), v))
    return out


def _tf_rows(tf: ModuleType, spec: Any, value: Any, n: int) -> list[Any]:
    """TensorFlow's output for one feature, per record, as Arrow's to_pylist shows it."""
    if isinstance(value, tf.RaggedTensor):
        return [_norm(r) for r in value.to_list()]
    if isinstance(value, tf.SparseTensor):
        rows = _sparse_rows(tf, value, n)
        if isinstance(spec, tfe.SparseFeature):
            return [sorted((list(k), _norm(v)) for k, v in r) for r in rows]
        return [[_norm(v) for _, v in sorted(r)] for r in rows]
    return [_norm(r) for r in value.numpy().tolist()]


def _arrow_rows(spec: Any, column: Any, padded_to: int | None) -> list[Any]:
    rows = column.to_pylist()
    if isinstance(spec, tfe.SparseFeature):
        return [
            sorted((list(i), _norm(v)) for i, v in zip(r["indices"], r["values"], strict=True))
            for r in rows
        ]
    if isinstance(spec, tfe.FixedLenSequenceFeature):
        # TensorFlow pads a batch to its longest record; a table needs no padding.
        zero: Any = {"int64": 0, "float32": 0.0, "string": b""}[spec.dtype]
        pad: Any = zero if spec.default_value is None else spec.default_value
        for d in reversed(spec.shape):
            pad = [pad] * d
        assert padded_to is not None
        rows = [r + [pad] * (padded_to - len(r)) for r in rows]
    return [_norm(r) for r in rows]


def _decode(features: Any, records: list[bytes]) -> Any:
    buf, starts, ends = join_records(records)
    return ExampleBatches(plan_of(features)).decode(buf, starts, ends)


@given(parse_cases() | parse_cases(mixed=True, max_batch=80))
def test_arrow_columns_equal_tf_parse_example(tf: ModuleType, case: ParseCase) -> None:
    # mixed: lists mixing packed runs, unpacked values and garbage (the exact path);
    # batches past 64 records try templates.
    specs = tf_specs(tf, case.features)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SparseFeature warns about its configuration
        tf_ok, theirs = outcome(
            lambda: tf.io.parse_example(tf.constant(case.records), specs),
            tf_errors=(tf.errors.InvalidArgumentError, ValueError),
        )
    ok, ours = ours_outcome(lambda: _decode(case.features, case.records))
    assert ok == tf_ok, f"TF: {theirs!r}\nours: {ours!r}"
    if not ok:
        return
    n = len(case.records)
    assert ours.num_rows == n
    for key, spec in case.features.items():
        value = theirs[key]
        padded = int(value.shape[1]) if isinstance(spec, tfe.FixedLenSequenceFeature) else None
        assert _arrow_rows(spec, ours.column(key), padded) == _tf_rows(tf, spec, value, n), key


def _tf_steps(tf: ModuleType, spec: Any, value: Any, lengths: Any, n: int) -> list[Any]:
    if isinstance(value, tf.RaggedTensor):
        return [_norm(r) for r in value.to_list()]
    if isinstance(value, tf.SparseTensor):
        return _sparse_rows(tf, value, n)
    dense = value.numpy().tolist()
    return [_norm(dense[r][: int(lengths[r])]) for r in range(n)]


@given(sequence_cases())
def test_arrow_columns_equal_tf_parse_sequence_example(tf: ModuleType, case: SequenceCase) -> None:
    try:
        plans = sequence_plans(case.context_features, case.sequence_features, None)
    except InvalidArgumentError:
        assume(False)  # partitioned RaggedFeature: not offered as Arrow columns
        raise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tf_ok, theirs = outcome(
            lambda: tf.io.parse_sequence_example(
                tf.constant(case.records),
                context_features=tf_specs(tf, case.context_features),
                sequence_features=tf_specs(tf, case.sequence_features),
            ),
            tf_errors=(tf.errors.InvalidArgumentError, ValueError),
        )
    buf, starts, ends = join_records(case.records)
    ok, ours = ours_outcome(lambda: SequenceBatches(*plans).decode(buf, starts, ends))
    assert ok == tf_ok, f"TF: {theirs!r}\nours: {ours!r}"
    if not ok:
        return
    n = len(case.records)
    context, lists, lengths = theirs
    for key, spec in case.context_features.items():
        assert _arrow_rows(spec, ours.column(key), None) == _tf_rows(tf, spec, context[key], n)
    for key, spec in case.sequence_features.items():
        steps = ours.column(key).to_pylist()
        want = _tf_steps(tf, spec, lists[key], lengths.get(key), n)
        if isinstance(spec, tfe.VarLenFeature):
            # TensorFlow's sparse output keeps no empty step: compare what it holds.
            got = [
                {(s, p): _norm(v) for s, step in enumerate(r) for p, v in enumerate(step)}
                for r in steps
            ]
            assert got == [{k: _norm(v) for k, v in w} for w in want], key
        else:
            assert [_norm(r) for r in steps] == want, key


# ---- writing -----------------------------------------------------------------------------


def _storage(t: Any) -> Any:
    """``t`` with temporal leaves as their integer storage (as the writer stores them)."""
    if pa.types.is_fixed_size_list(t):
        return pa.list_(_storage(t.value_type), t.list_size)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_storage(t.value_type))
    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return pa.int64()
    return t


def _flat(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [v for item in value for v in _flat(item)]
    return [value]


def _tf_feature(tf: ModuleType, leaf: Any, values: list[Any]) -> Any:
    if pa.types.is_floating(leaf):
        return tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))
    if pa.types.is_string(leaf) or pa.types.is_large_string(leaf):
        encoded = [v.encode("utf-8") for v in values]
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=encoded))
    if (
        pa.types.is_binary(leaf)
        or pa.types.is_large_binary(leaf)
        or pa.types.is_fixed_size_binary(leaf)
    ):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))


def _leaf(t: Any) -> Any:
    while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        t = t.value_type
    return t


@given(arrow_tables())
def test_written_records_are_tensorflow_examples_of_the_same_values(
    tf: ModuleType, table: Any
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = tfa.write(table, os.path.join(folder, "t"))
        ours = [r for p in paths for r in tfe.read_records(p)]
    assert len(ours) == table.num_rows
    columns = {
        name: table.column(name).cast(_storage(table.schema.field(name).type)).to_pylist()
        for name in table.column_names
    }
    for i, record in enumerate(ours):
        feature = {
            name: _tf_feature(tf, _leaf(table.schema.field(name).type), _flat(values[i]))
            for name, values in columns.items()
            if values[i] is not None
        }
        theirs = tf.train.Example(features=tf.train.Features(feature=feature))
        parsed = tf.train.Example.FromString(record)
        assert parsed == theirs
        assert parsed.SerializeToString(deterministic=True) == theirs.SerializeToString(
            deterministic=True
        )


def test_tensorflow_reads_written_gzip_shards(tf: ModuleType, tmp_path: Any) -> None:
    table = pa.table(
        {
            "label": pa.array(range(10), pa.int64()),
            "xy": pa.array([[i / 2, i / 4] for i in range(10)], pa.list_(pa.float32(), 2)),
            "text": [f"row {i}" for i in range(10)],
        }
    )
    paths = tfa.write(table, str(tmp_path / "t"), num_shards=3, compression="GZIP")
    ds = tf.data.TFRecordDataset(paths, compression_type="GZIP")
    spec = {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "xy": tf.io.FixedLenFeature([2], tf.float32),
        "text": tf.io.FixedLenFeature([], tf.string),
    }
    parsed = tf.io.parse_example(tf.stack(list(ds)), spec)
    assert parsed["label"].numpy().tolist() == list(range(10))
    assert parsed["xy"].numpy().tolist() == table.column("xy").to_pylist()
    assert [t.decode() for t in parsed["text"].numpy().tolist()] == table.column("text").to_pylist()
