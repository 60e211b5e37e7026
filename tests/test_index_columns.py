"""Index columns: chosen scalar features kept in the index (issue 33, item 3).

The column reader of the index layer against the Example parser, the writer's columns
against a build's, the sidecar format (older indexes load byte for byte, a damaged
column section is refused), and every way an index travels: save/load, the user cache,
``for_policy``, appends, compressed files and ``tfr index --columns``.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given

import tfrecord_engine as tfe
from tfrecord_engine.cli import cli
from tfrecord_engine.data.source import LocalFileRecords
from tfrecord_engine.index.columns import ColumnRecorder
from tfrecord_engine.index.format import COLUMNS_VERSION_OFFSET
from tfrecord_engine.index.placement import index_path_for
from tfrecord_engine.index.scalars import KIND_BYTES, KIND_INT64, OK, scalars_of
from tfrecord_engine.records import framing
from tfrecord_engine.testing.columns import column_records

GOLDEN = Path(__file__).parent / "golden" / "indexes"
COMPRESSIONS = ["", "GZIP", "ZLIB"]


def rows(n: int, start: int = 0) -> list[bytes]:
    """Examples with an int64 ``label`` and a bytes ``id`` (record 4 of each 10 lacks
    the label)."""
    out = []
    for i in range(start, start + n):
        row: dict[str, Any] = {"id": [b"r%d" % i], "x": [float(i)]}
        if i % 10 != 4:
            row["label"] = [i % 3]
        out.append(tfe.encode_example(row))
    return out


def write(path: Path, records: list[bytes], compression: str = "", **kw: Any) -> None:
    with tfe.TFRecordWriter(path, compression, index=True, **kw) as w:
        w.write_many(records)


def same(a: tfe.Index, b: tfe.Index) -> bool:
    return a.columns.keys() == b.columns.keys() and all(
        a.columns[k].same_as(b.columns[k]) for k in a.columns
    )


# ---- the column reader ---------------------------------------------------------------


@given(column_records())
def test_the_column_reader_agrees_with_parse_single_example(records: list[bytes]) -> None:
    # A value is indexed exactly when TensorFlow's parser (ours, differential-tested)
    # reads one scalar of that kind, and it is the same value.
    for record in records:
        found = scalars_of(record, {b"label": 0, b"id": 1})
        for column, key in ((0, "label"), (1, "id")):
            status, kind, value = found[column]
            for dtype, code in (("int64", KIND_INT64), ("string", KIND_BYTES)):
                try:
                    parsed = tfe.parse_single_example(record, {key: tfe.FixedLenFeature([], dtype)})
                except tfe.ParseError:
                    assert status != OK or kind != code, (record, key, dtype)
                    continue
                assert status == OK, (record, key, dtype, found)
                assert kind == code
                assert parsed[key].item() == value


def test_a_column_takes_the_kind_of_its_first_value() -> None:
    recorder = ColumnRecorder((("v", None), ("w", "bytes")))
    recorder.add(
        [
            tfe.encode_example({"w": [b"a"]}),
            tfe.encode_example({"v": [b"first"], "w": [3]}),
            tfe.encode_example({"v": [7], "w": [b"b"]}),
            tfe.encode_example({"v": [b"x", b"y"]}),
        ]
    )
    v, w = recorder.finish()
    assert (v.kind, v.values.tolist(), v.status.tolist()) == (
        "bytes",
        [b"", b"first", b"", b""],
        [1, 0, 3, 2],
    )
    assert (w.kind, w.values.tolist(), w.status.tolist()) == (
        "bytes",
        [b"a", b"", b"b", b""],
        [0, 3, 0, 1],
    )


# ---- writing and building ------------------------------------------------------------


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_the_writer_keeps_the_columns_a_build_reads(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "a.tfrecord"
    records = rows(700)
    with tfe.TFRecordWriter(
        path, compression, index=True, index_columns=["label", "id"], index_flush_every=100
    ) as w:
        w.write_many(records[:300])
        for r in records[300:]:
            w.write(r)
    written = tfe.Index.load(path)
    assert written.data_verified
    assert len(written.restarts) == (7 if compression else 0)
    label = written.columns["label"]
    assert label.kind == "int64"
    assert written.columns["id"].kind == "bytes"
    assert label.values[:6].tolist() == [0, 1, 2, 0, 0, 2]  # (record 4: no label)
    assert label.status[:6].tolist() == [0, 0, 0, 0, 1, 0]
    assert written.columns["id"].values[699] == b"r699"
    built = tfe.Index.build(path, columns=["label", "id"])
    assert same(built, written)
    assert built.data_verified  # (reading the columns checked every data CRC)
    blob = written.to_bytes()
    assert struct.unpack_from("<I", blob, 8)[0] & COLUMNS_VERSION_OFFSET
    assert tfe.Index.from_bytes(blob, path).to_bytes() == blob


def test_index_columns_need_an_index(tmp_path: Path) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="index=True"):
        tfe.TFRecordWriter(tmp_path / "a.tfrecord", index_columns=["label"])
    with pytest.raises(tfe.InvalidArgumentError, match="named twice"):
        tfe.TFRecordWriter(tmp_path / "a.tfrecord", index=True, index_columns=["a", "a"])
    with pytest.raises(tfe.InvalidArgumentError, match="'int64' or 'bytes'"):
        tfe.Index.build(tmp_path / "a.tfrecord", columns={"a": "float32"})


@pytest.mark.parametrize("placement", ["hidden", "cache", "beside"])
def test_columns_survive_save_and_load(tmp_path: Path, placement: str) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write_many(rows(30))
    built = tfe.Index.build(path, columns={"label": "int64", "id": "string"})
    built.save(placement=placement)
    loaded = tfe.Index.load(path)
    assert same(loaded, built)
    ds = tfe.RecordDataset(path, save_index=False)
    assert ds.index_column("id").tolist() == [b"r%d" % i for i in range(30)]


def test_for_policy_cuts_the_columns_where_it_cuts_the_records(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    write(path, rows(12), index_columns=["id"])
    idx = tfe.Index.load(path)
    with open(path, "r+b") as f:  # the data of record 5 no longer matches its CRC
        f.seek(int(idx.offsets[5]) + framing.HEADER_SIZE)
        f.write(b"\xff")
    reports: list[tfe.DamageReport] = []
    skipped = tfe.Index.build(
        path, on_damage="skip", on_damage_report=reports.append, columns=["id"]
    )
    assert skipped.columns["id"].values.tolist() == [b"r%d" % i for i in range(12) if i != 5]
    stopped = skipped.for_policy("stop")
    assert stopped is not None
    assert stopped.columns["id"].values.tolist() == [b"r%d" % i for i in range(5)]
    with pytest.raises(tfe.CorruptedRecordError, match="record 5"):
        tfe.Index.build(path, columns=["id"])  # (a header walk reads the columns' CRCs)


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_appends_keep_the_columns(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "a.tfrecord"
    write(path, rows(10), compression, index_columns=["label", "id"])
    with tfe.TFRecordWriter(path, compression, append=True, index=True) as w:
        w.write_many(rows(5, start=10))  # no index_columns: the file's are kept
    idx = tfe.Index.load(path)
    assert idx.columns["id"].values.tolist() == [b"r%d" % i for i in range(15)]
    assert idx.columns["label"].status.tolist()[14] == 1
    with tfe.TFRecordWriter(path, compression, append=True, index=True, index_columns=["id"]) as w:
        w.write_many(rows(1, start=15))
    assert list(tfe.Index.load(path).columns) == ["id"]
    assert same(tfe.Index.load(path), tfe.Index.build(path, columns=["id"]))


def test_with_columns_keeps_the_writers_restart_points(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord.zz"
    write(path, rows(50), "ZLIB", index_flush_every=8)
    idx = tfe.Index.load(path)
    assert not idx.columns
    assert len(idx.restarts) == 6
    more = idx.with_columns(["label"])
    assert np.array_equal(more.restarts, idx.restarts)
    assert more.columns["label"].values[:3].tolist() == [0, 1, 2]
    again = more.with_columns({"label": "bytes"})  # replaced, not added twice
    assert list(again.columns) == ["label"]
    assert not bool(again.columns["label"].present.any())


def test_index_column_reads_no_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for f in range(2):
        write(tmp_path / f"s{f}.tfrecord", rows(10, start=10 * f), index_columns=["id"])
    ds = tfe.RecordDataset(str(tmp_path / "*.tfrecord"))
    assert len(ds) == 20

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a record was read")

    for name in ("read", "read_one", "read_few", "spans"):
        monkeypatch.setattr(LocalFileRecords, name, refuse)
    assert ds.index_column("id").tolist() == [b"r%d" % i for i in range(20)]
    assert ds["id"][-1] == b"r19"


def test_a_record_without_a_value_is_named_or_filled(tmp_path: Path) -> None:
    write(tmp_path / "s0.tfrecord", rows(10), index_columns=["label"])
    write(tmp_path / "s1.tfrecord", rows(10, start=10), index_columns=["label"])
    ds = tfe.RecordDataset(str(tmp_path / "*.tfrecord"))
    with pytest.raises(tfe.ExampleParseError) as err:
        ds.skip(5).index_column("label")
    offset = int(tfe.Index.load(tmp_path / "s1.tfrecord").offsets[4])
    assert f"s1.tfrecord: record 4 at offset {offset} (dataset index 9)" in str(err.value)
    assert (err.value.record_index, err.value.dataset_index) == (4, 9)
    assert "'label' is missing" in str(err.value)
    assert "missing=" in str(err.value)
    filled = ds.index_column("label", missing=-1)
    assert filled[[4, 14]].tolist() == [-1, -1]
    assert filled[5] == 2
    with pytest.raises(tfe.InvalidArgumentError, match="must be an int"):
        ds.index_column("label", missing=None)


def test_a_file_without_the_column_says_how_to_add_it(tmp_path: Path) -> None:
    write(tmp_path / "s0.tfrecord", rows(3), index_columns=["label"])
    write(tmp_path / "s1.tfrecord", rows(3))
    ds = tfe.RecordDataset(str(tmp_path / "*.tfrecord"))
    with pytest.raises(tfe.InvalidArgumentError) as err:
        ds.index_column("label")
    assert "s1.tfrecord: its index has no column 'label'" in str(err.value)
    assert "tfr index --columns label" in str(err.value)


# ---- the sidecar format --------------------------------------------------------------


def golden_cases() -> list[dict[str, Any]]:
    manifest = json.loads((GOLDEN / "manifest.json").read_text(encoding="utf-8"))
    cases: list[dict[str, Any]] = manifest["indexes"]
    return cases


@pytest.mark.parametrize("case", golden_cases(), ids=lambda c: c["index"])
def test_older_indexes_load_and_are_written_back_byte_for_byte(
    tmp_path: Path, case: dict[str, Any]
) -> None:
    # Written by the engine before index columns existed (make_indexes.py).
    data = tmp_path / case["data"]
    shutil.copy(GOLDEN / case["data"], data)
    blob = (GOLDEN / case["index"]).read_bytes()
    assert struct.unpack_from("<I", blob, 8)[0] == case["version"]
    reports: list[tfe.DamageReport] = []
    idx = tfe.Index.load(
        data, GOLDEN / case["index"], on_damage=case["policy"], on_damage_report=reports.append
    )
    assert idx.offsets.tolist() == case["offsets"]
    assert idx.lengths.tolist() == case["lengths"]
    assert idx.restarts.tolist() == case["restarts"]
    assert [d.record_index for d in reports] == case["damage"]
    assert idx.columns == {}
    assert idx.to_bytes() == blob
    # An index of the same file with columns keeps everything else.
    more = idx.with_columns(["label"])
    framed = 48  # (every record of these files: record i is at offset 48 i)
    labels = [(offset // framed) % 3 for offset in case["offsets"]]
    assert more.columns["label"].values.tolist() == labels
    copy = tfe.Index.from_bytes(more.to_bytes(), data)
    assert same(copy, more)
    assert copy.content == idx.content
    assert copy.damage == idx.damage
    assert copy.restarts.tolist() == case["restarts"]


def test_a_damaged_column_section_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    write(path, rows(5), index_columns=["id"])
    blob = tfe.Index.load(path).to_bytes()
    body = bytearray(blob[:-4])
    at = 48 + 16 + 16 * 5  # head, content check, offsets and lengths: the section size
    struct.pack_into("<Q", body, at, struct.unpack_from("<Q", body, at)[0] + 8)

    def sealed(b: bytes | bytearray) -> bytes:
        return bytes(b) + struct.pack("<I", framing.mask_crc(framing.crc32c(bytes(b))))

    with pytest.raises(tfe.IndexFormatError, match="index columns"):
        tfe.Index.from_bytes(sealed(body), path)
    unknown = bytearray(blob[:-4])
    struct.pack_into("<I", unknown, 8, 3 + 32 + 64)  # (64: no flag of this build)
    with pytest.raises(tfe.IndexFormatError, match="not supported"):
        tfe.Index.from_bytes(sealed(unknown), path)


# ---- tfr index --columns -------------------------------------------------------------


def test_tfr_index_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with tfe.TFRecordWriter("a.tfrecord") as w:
        w.write_many(rows(4))
    write(Path("z.tfrecord.gz"), rows(6), "GZIP", index_flush_every=2)
    runner = CliRunner()
    result = runner.invoke(cli, ["index", "--columns", "label, id", "a.tfrecord", "z.tfrecord.gz"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        ".tfeidx/a.tfrecord.tfeidx: 4 records",
        ".tfeidx/z.tfrecord.gz.tfeidx: 6 records",
    ]
    assert tfe.Index.load("a.tfrecord").columns["id"].values.tolist() == [
        b"r0",
        b"r1",
        b"r2",
        b"r3",
    ]
    z = tfe.Index.load("z.tfrecord.gz")
    assert len(z.restarts) == 3  # the writer's full flushes, kept
    assert z.columns["label"].values.tolist() == [0, 1, 2, 0, 0, 2]
    assert os.path.exists(index_path_for("z.tfrecord.gz"))
    again = runner.invoke(cli, ["index", "--columns", "id", "z.tfrecord.gz"])
    assert again.stdout == ".tfeidx/z.tfrecord.gz.tfeidx: 6 records (valid, kept)\n"
    refused = runner.invoke(cli, ["index", "--format", "dali", "--columns", "id", "a.tfrecord"])
    assert refused.exit_code == 2
    assert "--format tfe" in refused.stderr


@pytest.mark.parametrize("placement", ["hidden", "cache"])
def test_a_rebuilt_stale_index_keeps_its_columns(tmp_path: Path, placement: str) -> None:
    """An append makes the saved index stale; the index the dataset builds instead
    carries the same columns (read from the grown file), so the views keep answering
    from the index."""
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write_many(rows(20))
    tfe.Index.build(path, columns={"label": "int64", "id": "string"}).save(placement=placement)
    with open(path, "ab") as f:  # 5 more records: the saved index is now stale
        for record in rows(5, start=20):
            f.write(framing.frame(record))
    with pytest.raises(tfe.IndexFormatError, match="stale"):
        tfe.Index.load(path)
    rebuilt = tfe.Index.open(path)
    assert len(rebuilt) == 25
    assert sorted(rebuilt.columns) == ["id", "label"]
    assert rebuilt.columns["id"].values.tolist() == [b"r%d" % i for i in range(25)]
    assert tfe.Index.load(path).columns.keys() == rebuilt.columns.keys()  # saved with them
    ds = tfe.RecordDataset(path)
    assert sorted(ds.indexes[0].columns) == ["id", "label"]
    assert ds.index_column("label", missing=-1).tolist() == [
        -1 if i % 10 == 4 else i % 3 for i in range(25)
    ]


def test_a_damaged_old_index_gives_no_columns_and_no_error(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    write(path, rows(8), index_columns=["id"])
    sidecar = tfe.Index.load(path).save(placement="hidden")
    for cached in tfe.index.placement.cache_entries(str(path)):
        os.remove(cached)
    Path(sidecar).write_bytes(b"not an index")
    rebuilt = tfe.Index.open(path)
    assert len(rebuilt) == 8
    assert not rebuilt.columns
