"""``tfr convert`` from and to Parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import tfrecord_engine as tfe
import tfrecord_engine.arrow as tfa
from tests.cli.helpers import invoke


def test_parquet_to_tfrecord_and_back(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "label": pa.array([1, None, 3, None, 5, 6], pa.int64()),
            "xy": pa.array([[i, -i] for i in range(6)], pa.list_(pa.float32(), 2)),
            "tags": pa.array([["a"] * (i % 3) for i in range(6)], pa.list_(pa.string())),
        }
    )
    pq.write_table(table, tmp_path / "in.parquet")
    out = invoke(
        "convert", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "tf" / "t"), "--shards", "2"
    )
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert lines[:2] == [
        f"{tmp_path}/tf/t-00000-of-00002.tfrecord: 3 records",
        f"{tmp_path}/tf/t-00001-of-00002.tfrecord: 3 records",
    ]
    assert '    "label": tfe.FixedLenFeature([], "int64", default_value=0),' in out.stdout
    assert '    "xy": tfe.FixedLenFeature([2], "float32"),' in out.stdout
    assert '    "tags": tfe.RaggedFeature("string"),' in out.stdout
    paths = sorted(str(p) for p in (tmp_path / "tf").glob("*.tfrecord"))
    assert tfa.read_table(paths, table.schema).equals(table)
    # The printed spec reads the records (nulls as the default).
    spec: dict[str, Any] = {
        "label": tfe.FixedLenFeature([], "int64", default_value=0),
        "tags": tfe.RaggedFeature("string"),
    }
    parsed = tfe.parse_example([r for p in paths for r in tfe.read_records(p)], spec)
    assert parsed["label"].tolist() == [1, 0, 3, 0, 5, 6]

    back = invoke("convert", *paths, "--to", "parquet", "-o", str(tmp_path / "back.parquet"))
    assert back.exit_code == 0, back.output
    assert back.stdout.splitlines()[0] == f"{tmp_path / 'back.parquet'}: 6 rows"
    again = pq.read_table(tmp_path / "back.parquet")
    assert again.column("label").to_pylist() == table.column("label").to_pylist()
    assert again.column("tags").to_pylist() == table.column("tags").to_pylist()
    assert again.schema.field("xy").type == pa.list_(pa.float32(), 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["back.parquet", "in.parquet", "tf"]


def test_to_parquet_refuses_shard_options_and_other_names(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write(tfe.encode_example({"a": 1}))
    out = invoke("convert", str(path), "--to", "parquet", "-o", "x.parquet", "--shards", "2")
    assert out.exit_code == 2
    assert "--shards" in out.output
    out = invoke("convert", str(path), "--to", "parquet", "-o", str(tmp_path / "x.csv"))
    assert out.exit_code == 2
    assert ".parquet" in out.output


def test_a_column_of_nulls_only_is_converted(tmp_path: Path) -> None:
    # An all-null (type null) column is no feature of any record: the conversion
    # printed its spec line by asking for the type's Example kind, and failed (exit 2)
    # after the shards were published.
    table = pa.table({"a": [1, 2, 3], "n": pa.array([None] * 3, pa.null())})
    pq.write_table(table, tmp_path / "in.parquet")
    out = invoke("convert", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "tf" / "t"))
    assert out.exit_code == 0, out.output
    assert '    # "n": null in every row, so no record holds it' in out.stdout
    paths = sorted(str(p) for p in (tmp_path / "tf").glob("*.tfrecord"))
    assert tfa.read_table(paths, table.schema).equals(table)
