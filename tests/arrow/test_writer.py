"""tfrecord_engine.arrow.write: the bytes, shards, inputs, and failures that publish nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tfrecord_engine as tfe
import tfrecord_engine.arrow as tfa
from tfrecord_engine.index.placement import index_path_for

from ..optional import require


def _table(n: int = 10) -> Any:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "score": pa.array([i / 4 for i in range(n)], pa.float64()),
            "name": [f"n{i}" if i % 4 else None for i in range(n)],
            "box": pa.array([[i, i, i + 1, i + 1] for i in range(n)], pa.list_(pa.int16(), 4)),
            "tokens": pa.array([list(range(i % 3)) for i in range(n)], pa.list_(pa.int32())),
        }
    )


def _visible(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_records_are_encode_example_of_each_row(tmp_path: Path) -> None:
    table = _table()
    paths = tfa.write(table, str(tmp_path / "t"), batch_size=4)
    records = [r for p in paths for r in tfe.read_records(p)]
    for record, row in zip(records, table.to_pylist(), strict=True):
        want = {
            "id": np.int64(row["id"]),
            "score": np.float32(row["score"]),
            **({"name": row["name"]} if row["name"] is not None else {}),
            "box": np.array(row["box"], np.int64),
            "tokens": np.array(row["tokens"], np.int64),
        }
        assert record == tfe.encode_example(want)


def test_shards_and_their_indexes(tmp_path: Path) -> None:
    paths = tfa.write(_table(10), str(tmp_path / "out" / "t"), num_shards=3)
    assert [os.path.basename(p) for p in paths] == [
        f"t-{i:05d}-of-00003.tfrecord" for i in range(3)
    ]
    assert [len(tfe.Index.load(p)) for p in paths] == [3, 3, 4]
    assert all(os.path.exists(index_path_for(p)) for p in paths)
    per = tfa.write(
        _table(10), str(tmp_path / "per" / "t"), records_per_shard=4, compression="GZIP"
    )
    assert [len(list(tfe.read_records(p))) for p in per] == [4, 4, 2]
    assert all(p.endswith(".tfrecord.gz") for p in per)
    empty = tfa.write(_table(1), str(tmp_path / "few" / "t"), num_shards=3)
    assert [len(list(tfe.read_records(p))) for p in empty] == [0, 0, 1]
    assert _visible(tmp_path / "out") == [".tfeidx", *(os.path.basename(p) for p in paths)]


def test_a_stream_of_unknown_length_is_cut_by_records(tmp_path: Path) -> None:
    table = _table(7)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=2))
    paths = tfa.write(reader, str(tmp_path / "s"), records_per_shard=3)
    assert [len(list(tfe.read_records(p))) for p in paths] == [3, 3, 1]
    assert tfa.read_table(paths, table.schema).equals(table)
    again = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    with pytest.raises(tfe.InvalidArgumentError, match="records_per_shard"):
        tfa.write(again, str(tmp_path / "x"), num_shards=2)


@pytest.mark.parametrize(
    ("column", "match"),
    [
        (pa.array([[1, None]], pa.list_(pa.int64())), "null inside a list"),
        (pa.array([1 / 3], pa.float64()), "not exactly a float32"),
        (pa.array([2**63], pa.uint64()), "above the int64 range"),
        (pa.array([{"a": 1}]), "no Example equivalent"),
        (pa.array([[[1]]], pa.list_(pa.list_(pa.int64()))), "list inside a list"),
    ],
)
def test_a_value_no_example_holds_exactly_publishes_nothing(
    tmp_path: Path, column: Any, match: str
) -> None:
    good = pa.table({"v": pa.array([0] * len(column), pa.int64())})
    bad = pa.table({"v": column})
    # The bad batch comes after a good one was encoded and written to the first shard.
    stream = pa.RecordBatchReader.from_batches(
        bad.schema, [_like(good, bad.schema), *bad.to_batches()]
    )
    with pytest.raises(tfe.InvalidArgumentError, match=match):
        tfa.write(stream, str(tmp_path / "t"), records_per_shard=1)
    assert _visible(tmp_path) == []  # no shard, no index, no staging folder


def _like(good: Any, schema: Any) -> Any:
    """A batch of ``schema`` whose values an Example holds (nulls)."""
    return pa.RecordBatch.from_arrays(
        [pa.nulls(good.num_rows, schema.field(0).type)], schema=schema
    )


def test_parquet_files_and_folders(tmp_path: Path) -> None:
    table = _table(9)
    (tmp_path / "pq").mkdir()
    pq.write_table(table.slice(0, 5), tmp_path / "pq" / "a.parquet")
    pq.write_table(table.slice(5), tmp_path / "pq" / "b.parquet")
    paths = tfa.write(str(tmp_path / "pq"), str(tmp_path / "out" / "t"), num_shards=2)
    assert tfa.read_table(paths, table.schema).equals(table)
    one = tfa.write(tmp_path / "pq" / "a.parquet", str(tmp_path / "one" / "t"), columns=["id"])
    assert tfa.read_table(one).to_pydict() == {"id": [0, 1, 2, 3, 4]}


def test_frames_of_other_libraries(tmp_path: Path) -> None:
    pl = require("polars")
    frame = pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", None]})
    paths = tfa.write(frame, str(tmp_path / "pl"))
    assert tfa.read_table(paths).to_pydict() == {"a": [1, 2, 3], "b": ["x", "y", None]}
    pd = require("pandas")
    paths = tfa.write(pd.DataFrame({"a": [1.5, 2.5]}), str(tmp_path / "pd"))
    assert tfa.read_table(paths).to_pydict() == {"a": [1.5, 2.5]}
    with pytest.raises(tfe.InvalidArgumentError, match="cannot write dict"):
        tfa.write({"a": [1]}, str(tmp_path / "d"))


def test_columns_of_the_same_name_are_refused(tmp_path: Path) -> None:
    # Each column is a feature key: a record holding "x" twice keeps only the last in
    # TensorFlow's parse (the first column's values were lost without a word).
    twice = pa.Table.from_arrays([pa.array([1, 2]), pa.array([10, 20])], names=["x", "x"])
    for record_type in ("Example", "SequenceExample"):
        with pytest.raises(tfe.InvalidArgumentError, match=r"same name: \['x'\]"):
            tfa.write(twice, str(tmp_path / f"t-{record_type}"), record_type=record_type)
    assert not list(tmp_path.iterdir())


def test_a_list_of_empty_fixed_size_lists_is_refused(tmp_path: Path) -> None:
    # [[[]], [[], [], []], []]: the row counts of zero-width items cannot be told from
    # the flat values (every row read back as []).
    column = pa.array([[[]], [[], [], []], []], pa.list_(pa.list_(pa.int64(), 0)))
    with pytest.raises(tfe.InvalidArgumentError, match="fixed-size lists of size 0"):
        tfa.write(pa.table({"c": column}), str(tmp_path / "t"))
    # Rows of a fixed number of them keep their shape (the schema says how many).
    fixed = pa.table({"c": pa.array([[[], []], [[], []]], pa.list_(pa.list_(pa.int64(), 0), 2))})
    assert tfa.read_table(tfa.write(fixed, str(tmp_path / "f")), fixed.schema).equals(fixed)


@pytest.mark.parametrize("kind", [pa.list_view, pa.large_list_view])
def test_list_view_columns_are_written_as_their_lists(tmp_path: Path, kind: Any) -> None:
    # pyarrow's cast of a list view to a large list gave broken offsets ([0, 2, 0]):
    # every list_view column failed with numpy's "repeats may not contain negative
    # values"; large_list_view was refused.
    rows = [[1, 2], None, [3], [], [4, 5, 6]]
    for column in (pa.array(rows, kind(pa.int64())), pa.array(rows, kind(pa.int64())).slice(1)):
        paths = tfa.write(pa.table({"c": column}), str(tmp_path / f"t{len(column)}"))
        back = tfa.read_table(paths, pa.schema([("c", pa.large_list(pa.int64()))]))
        assert back.column("c").to_pylist() == column.to_pylist()
