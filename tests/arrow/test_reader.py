"""tfrecord_engine.arrow.reader: columns, projection, epochs, errors, inference, damage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import tfrecord_engine as tfe
import tfrecord_engine.arrow as tfa
from tfrecord_engine.testing.resume import assert_resume_exactly_once


def _write(path: Path, rows: list[dict[str, Any]], compression: str | None = None) -> str:
    with tfe.TFRecordWriter(path, compression, index=True) as w:
        w.write_many(tfe.encode_example(r) for r in rows)
    return str(path)


def _rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "xy": np.array([i, -i], np.float32),
            "tags": np.array([b"t%d" % j for j in range(i % 3)], dtype=object),
            "name": f"row {i}",
        }
        for i in range(start, start + n)
    ]


def test_columns_take_the_shape_of_each_spec(tmp_path: Path) -> None:
    rows = [
        {
            "id": i,
            "m": np.arange(4, dtype=np.int64) + i,
            "v": np.arange(i % 3, dtype=np.float32),
            "w": np.arange(i % 3, dtype=np.float32),
            "idx": np.array([i % 4], np.int64),
            "sv": np.array([i], np.int64),
            "raw": np.array([i, i + 1], np.uint16).tobytes(),
        }
        for i in range(5)
    ]
    path = _write(tmp_path / "a.tfrecord", rows)
    spec = {
        "id": tfe.FixedLenFeature([], "int64"),
        "m": tfe.FixedLenFeature([2, 2], "int64"),
        "v": tfe.VarLenFeature("float32"),
        "r": tfe.RaggedFeature("float32", value_key="w", row_splits_dtype="int64"),
        "s": tfe.SparseFeature("idx", "sv", "int64", 4),
        "raw": tfe.RawFeature([2], "uint16"),
        "missing": tfe.FixedLenFeature([], "string", default_value=b"none"),
    }
    table = tfa.read_table(path, spec)
    assert table.schema.field("id").type == pa.int64()
    assert table.schema.field("m").type == pa.list_(pa.list_(pa.int64(), 2), 2)
    assert table.schema.field("v").type == pa.list_(pa.float32())
    assert table.schema.field("r").type == pa.large_list(pa.float32())
    assert table.schema.field("raw").type == pa.list_(pa.uint16(), 2)
    assert table.column("m").to_pylist()[1] == [[1, 2], [3, 4]]
    assert table.column("v").to_pylist() == [[], [0.0], [0.0, 1.0], [], [0.0]]
    assert table.column("r").to_pylist() == table.column("v").to_pylist()
    assert table.column("s").to_pylist()[2] == {"indices": [[2]], "values": [2]}
    assert table.column("raw").to_pylist()[3] == [3, 4]
    assert table.column("missing").to_pylist() == [b"none"] * 5


def test_an_arrow_schema_reads_missing_features_as_nulls(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.tfrecord", [{"a": 1, "s": "x"}, {"b": 2.5}])
    schema = pa.schema([("a", pa.int32()), ("s", pa.string()), ("b", pa.float64())])
    assert tfa.read_table(path, schema).to_pydict() == {
        "a": [1, None],
        "s": ["x", None],
        "b": [None, 2.5],
    }
    required = pa.schema([pa.field("a", pa.int64(), nullable=False)])
    with pytest.raises(tfe.ExampleParseError, match="column 'a'"):
        tfa.read_table(path, required)


def test_a_value_that_does_not_fit_the_schema_names_its_record(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.tfrecord", [{"v": [1, 2]}, {"v": [3]}, {"v": [4, 2**40]}])
    with pytest.raises(tfe.ExampleParseError, match=r"record 2 .*does not fit int32"):
        tfa.read_table(path, pa.schema([("v", pa.list_(pa.int32()))]))


def test_projection_decodes_only_the_asked_columns(tmp_path: Path) -> None:
    # "bad" is an int64 list in one record, a string in the spec: parsing it fails,
    # and so the columns that leave it out must not parse it.
    rows = [{"ok": i, "bad": b"text"} for i in range(3)] + [{"ok": 3, "bad": 7}]
    path = _write(tmp_path / "p.tfrecord", rows)
    spec = {"ok": tfe.FixedLenFeature([], "int64"), "bad": tfe.FixedLenFeature([], "string")}
    table = tfa.read_table(path, spec, columns=["ok"])
    assert table.column_names == ["ok"]
    assert table.column("ok").to_pylist() == [0, 1, 2, 3]
    with pytest.raises(tfe.ExampleParseError, match="bad"):
        tfa.read_table(path, spec, columns=["bad"])
    with pytest.raises(tfe.InvalidArgumentError, match="nope"):
        tfa.read_table(path, spec, columns=["nope"])


def test_epochs_are_those_of_record_dataset(tmp_path: Path) -> None:
    paths = [_write(tmp_path / f"s{k}.tfrecord", _rows(7, 7 * k)) for k in range(3)]
    spec = {"id": tfe.FixedLenFeature([], "int64")}
    raw = tfe.RecordDataset(paths)
    seen: list[int] = []
    for shard in range(2):
        args: dict[str, Any] = {"shuffle": True, "seed": 5, "epoch": 2}
        args |= {"shard_index": shard, "shard_count": 2}
        ours = [b["id"].to_pylist() for b in tfa.batches(paths, spec, batch_size=4, **args)]
        theirs = [tfe.parse_example(batch, spec)["id"].tolist() for batch in raw.batches(4, **args)]
        assert ours == theirs
        seen += [i for b in ours for i in b]
    assert sorted(seen) == list(range(21))


def test_an_epoch_resumes_with_each_record_once(tmp_path: Path) -> None:
    paths = [_write(tmp_path / f"s{k}.tfrecord", _rows(6, 6 * k)) for k in range(2)]

    def make(state: Any) -> Any:
        return tfa.batches(paths, batch_size=5, shuffle=True, seed=1, epoch=3, state=state)

    assert_resume_exactly_once(make, lambda b: b["id"].to_pylist())


def test_a_record_dataset_is_read_with_its_features(tmp_path: Path) -> None:
    path = _write(tmp_path / "g.tfrecord.gz", _rows(5), compression="GZIP")
    ds = tfe.RecordDataset(path, {"xy": tfe.FixedLenFeature([2], "float32")})
    table = tfa.reader(ds, batch_size=2).read_all()
    assert table.column_names == ["xy"]
    assert table.column("xy").to_pylist()[3] == [3.0, -3.0]


def test_a_parse_error_names_its_record_after_the_batches_before_it(tmp_path: Path) -> None:
    rows = _rows(10)
    del rows[7]["name"]
    paths = [_write(tmp_path / "a.tfrecord", rows[:5]), _write(tmp_path / "b.tfrecord", rows[5:])]
    spec = {"name": tfe.FixedLenFeature([], "string")}
    got: list[bytes] = []

    def read_all() -> None:
        for batch in tfa.batches(paths, spec, batch_size=3):
            got.extend(batch["name"].to_pylist())

    with pytest.raises(tfe.ExampleParseError) as info:
        read_all()
    assert got == [f"row {i}".encode() for i in range(6)]  # the batches before the bad one
    text = str(info.value)
    assert paths[1] in text
    assert "record 2" in text
    assert "name" in text


def test_inferred_schema_follows_tfr_schema_rules(tmp_path: Path) -> None:
    rows = [
        {
            "id": i,
            "xy": np.array([i, i], np.float32),
            "tags": np.array([b"a"] * (i % 3), dtype=object),
            "text": f"caption {i}",
            "blob": bytes([0, 255, i]),
            **({"sometimes": i} if i % 2 else {}),
            "mixed": i if i < 3 else float(i),
        }
        for i in range(6)
    ]
    path = _write(tmp_path / "i.tfrecord", rows)
    schema = tfa.infer_schema(path)
    assert schema.names == ["blob", "id", "sometimes", "tags", "text", "xy"]
    assert schema.field("id").type == pa.int64()
    assert schema.field("xy").type == pa.list_(pa.float32(), 2)
    assert schema.field("tags").type == pa.list_(pa.string())
    assert schema.field("text").type == pa.string()
    assert schema.field("blob").type == pa.binary()
    table = tfa.read_table(path, columns=["sometimes", "text"])
    assert table.column("sometimes").to_pylist() == [None, 1, None, 3, None, 5]
    with pytest.raises(tfe.InvalidArgumentError, match=r"'mixed'.*conflicting types"):
        tfa.read_table(path, columns=["mixed"])


def test_raw_records_are_one_binary_column(tmp_path: Path) -> None:
    path = tmp_path / "r.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([b"a", b"", b"ccc"])
    table = tfa.read_table(str(path), record_type="ByteArray", record_column="bytes")
    assert table.to_pydict() == {"bytes": [b"a", b"", b"ccc"]}


def test_damaged_records_follow_the_policy(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.tfrecord", _rows(8))
    start = int(tfe.Index.load(path).offsets[3])
    blob = bytearray(Path(path).read_bytes())
    blob[start + 12 + 3] ^= 0xFF  # record 3's data: its CRC no longer matches
    Path(path).write_bytes(bytes(blob))
    spec = {"id": tfe.FixedLenFeature([], "int64")}
    with pytest.raises(tfe.DataLossError):
        tfa.read_table(path, spec)
    reports: list[tfe.DamageReport] = []
    table = tfa.read_table(path, spec, on_damage="skip", on_damage_report=reports.append)
    assert table.column("id").to_pylist() == [0, 1, 2, 4, 5, 6, 7]
    assert len(reports) == 1
    assert reports[0].path == path


def test_a_sequence_dataset_gives_its_context_and_its_feature_lists(tmp_path: Path) -> None:
    """A SequenceExample ``RecordDataset`` as the source: both its spec dicts are the
    default ones (they used to reach the reader as Example features and fail)."""
    path = tmp_path / "s.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        for i in range(7):
            w.write(tfe.encode_sequence_example({"label": [i]}, {"frames": [[float(i)] * 2] * i}))
    context = {"label": tfe.FixedLenFeature([], "int64")}
    lists = {"frames": tfe.FixedLenSequenceFeature([2], "float32")}
    ds = tfe.RecordDataset(path, context_features=context, sequence_features=lists)
    table = tfa.read_table(ds, batch_size=3)
    assert table.column_names == ["label", "frames"]
    assert table["label"].to_pylist() == list(range(7))
    assert table["frames"].to_pylist() == [[[float(i)] * 2] * i for i in range(7)]
    assert table.equals(tfa.read_table(str(path), context, sequence_features=lists))
    shuffled = tfa.read_table(ds, shuffle=True, seed=3)
    assert sorted(shuffled["label"].to_pylist()) == list(range(7))


def test_a_type_mismatch_past_the_templates_names_its_record(tmp_path: Path) -> None:
    # Records 0-99 share a layout (a template), record 50 holds a float: it is walked
    # apart from the others, and its error named record 0 (its place among them).
    rows: list[dict[str, Any]] = [{"a": [i]} for i in range(100)]
    rows[50] = {"a": [0.5]}
    path = _write(tmp_path / "m.tfrecord", rows)
    with pytest.raises(tfe.ExampleParseError, match=r"record 50 at offset"):
        tfa.read_table(path, pa.schema([("a", pa.int64())]))
