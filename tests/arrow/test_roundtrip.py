"""Tables written as TFRecords read back identical: every type and shape, null rows,
Examples, SequenceExamples and raw records."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
import tfrecord_engine.arrow as tfa
from tfrecord_engine.testing.arrow_tables import arrow_tables


@given(arrow_tables(), st.integers(1, 3))
def test_tables_round_trip_identical(table: Any, shards: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = tfa.write(table, os.path.join(folder, "t"), num_shards=shards, batch_size=3)
        assert len(paths) == shards
        back = tfa.read_table(paths, table.schema, batch_size=2)
    assert back.schema == table.schema
    assert back.equals(table)


def test_sequence_examples_round_trip(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": pa.array([1, None, 3], pa.int64()),
            "tokens": pa.array([[[1, 2], [3]], [], None], pa.list_(pa.list_(pa.int64()))),
            "words": pa.array([[["a"]], [["b", "c"], []], [[]]], pa.list_(pa.list_(pa.string()))),
            "xy": pa.array(
                [[[0.5, 1.0]], [[1.5, 2.0], [2.5, 3.0]], []],
                pa.list_(pa.list_(pa.float32(), 2)),
            ),
        }
    )
    paths = tfa.write(table, str(tmp_path / "s"), record_type="SequenceExample")
    context, lists = tfe.decode_sequence_example(next(iter(tfe.read_records(paths[0]))))
    assert context["id"].tolist() == [1]
    assert [s.tolist() for s in lists["tokens"]] == [[1, 2], [3]]
    back = tfa.read_table(paths, table.schema, record_type="SequenceExample")
    assert back.equals(table)
    # Inferred: feature lists are lists of steps; their inner fixed size is not kept.
    inferred = tfa.read_table(paths)
    assert inferred.column("words").to_pylist() == table.column("words").to_pylist()
    assert inferred.column("tokens").to_pylist() == table.column("tokens").to_pylist()


def test_raw_records_round_trip(tmp_path: Path) -> None:
    records = [b"", b"\x00\x01", bytes(range(256))]
    paths = tfa.write(
        pa.table({"record": pa.array(records, pa.binary())}),
        str(tmp_path / "raw"),
        record_type="ByteArray",
    )
    assert [r for p in paths for r in tfe.read_records(p)] == records
    assert tfa.read_table(paths, record_type="ByteArray").column("record").to_pylist() == records


def test_fixed_shape_tensor_columns_round_trip(tmp_path: Path) -> None:
    t = pa.fixed_shape_tensor(pa.float32(), [2, 2])
    storage = pa.array([[1, 2, 3, 4], None, [5, 6, 7, 8]], pa.list_(pa.float32(), 4))
    table = pa.table({"m": pa.ExtensionArray.from_storage(t, storage)})
    paths = tfa.write(table, str(tmp_path / "m"))
    record = next(iter(tfe.read_records(paths[0])))
    assert tfe.decode_example(record)["m"].tolist() == [1.0, 2.0, 3.0, 4.0]
    back = tfa.read_table(paths, table.schema)
    assert back.equals(table)
    assert back.column("m").type == t
