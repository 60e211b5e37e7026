"""``tfrecord_engine.ray.read_tfrecords``: index-split reads on real Ray (local mode)."""

from __future__ import annotations

import collections
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe

from ..optional import require

require("ray")
from tfrecord_engine import ray as tr  # noqa: E402 - after the skip
from tfrecord_engine.hosts import splits  # noqa: E402

SPEC: dict[str, Any] = {
    "i": tfe.FixedLenFeature([], "int64"),
    "xy": tfe.FixedLenFeature([2], "float32"),
    "name": tfe.FixedLenFeature([], "string"),
    "tags": tfe.VarLenFeature("int64"),
    "words": tfe.RaggedFeature("string"),
}


def example(i: int) -> bytes:
    return tfe.encode_example(
        {
            "i": i,
            "xy": np.array([i / 2, -i], np.float32),
            "name": b"n%d" % i,
            "tags": np.arange(i % 4, dtype=np.int64),
            "words": [b"w"] * (i % 3) if i % 3 else np.zeros(0, np.int64).astype(object),
        }
    )


def write(path: Path, records: list[bytes], **kwargs: Any) -> str:
    with tfe.TFRecordWriter(path, **kwargs) as w:
        w.write_many(records)
    return str(path)


def records_of(ds: Any) -> list[bytes]:
    return [row["record"] for row in ds.take_all()]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("read")
    return [
        write(root / "a.tfrecord", [example(i) for i in range(600)], index=True),
        write(root / "b.tfrecord", [example(i) for i in range(600, 900)], index=True),
    ]


ALL = [example(i) for i in range(900)]


def test_row_count_is_exact_before_any_data_is_read(ray_local: ModuleType, tmp_path: Path) -> None:
    paths = [write(tmp_path / f"s{k}.tfrecord", ALL[k::3], index=True) for k in range(3)]
    ds = tr.read_tfrecords(paths)
    for p in paths:  # a read would fail now: the count must come from the indexes
        os.remove(p)
    assert ds.count() == 900


def test_every_record_exactly_once_with_files_cut_into_many_tasks(
    ray_local: ModuleType, files: list[str]
) -> None:
    source = tr.TFRecordDatasource(files)
    tasks = source.get_read_tasks(6)
    rows = [t.metadata.num_rows for t in tasks]
    assert len(tasks) >= 5
    assert sum(rows) == 900
    assert source.num_rows == 900
    per_file = collections.Counter(t.metadata.input_files for t in tasks)
    assert all(n >= 2 for n in per_file.values())
    ds = tr.read_tfrecords(files, override_num_blocks=6, records_per_block=64)
    assert records_of(ds) == ALL


def test_pieces_cover_each_file_once_at_any_parallelism(files: list[str]) -> None:
    indexes = [tfe.Index.open(p) for p in files]
    for parallelism in (1, 2, 3, 7, 50, 10_000):
        pieces = splits.plan_pieces(indexes, parallelism)
        for f, idx in enumerate(indexes):
            mine = [(p.start, p.stop) for p in pieces if p.file == f]
            flat = [i for a, b in mine for i in range(a, b)]
            assert flat == list(range(len(idx)))
        assert len(pieces) <= max(2, parallelism)


def test_parsed_columns_equal_parse_example(ray_local: ModuleType, files: list[str]) -> None:
    ds = tr.read_tfrecords(files, features=SPEC, override_num_blocks=4, records_per_block=100)
    assert ds.count() == 900
    got = ds.take_batch(900, batch_format="numpy")
    want = tfe.parse_example(ALL, SPEC)
    np.testing.assert_array_equal(got["i"], want["i"])
    np.testing.assert_array_equal(got["xy"], want["xy"])
    assert got["xy"].shape == (900, 2)
    assert got["xy"].dtype == np.float32
    assert got["name"].tolist() == want["name"].tolist()
    tags = want["tags"]
    rows = [tags.values[tags.indices[:, 0] == r].tolist() for r in range(900)]
    assert [np.asarray(t).tolist() for t in got["tags"]] == rows
    assert [list(w) for w in got["words"]] == want["words"].to_list()


def test_gzip_files_are_cut_at_restart_points_and_detected(
    ray_local: ModuleType, tmp_path: Path
) -> None:
    ours = write(tmp_path / "a.gz", ALL, compression="GZIP", index=True, index_flush_every=100)
    foreign = write(tmp_path / "b.zz", ALL[:50], compression="ZLIB")
    assert splits.sniff_compression(ours) is tfe.Compression.GZIP
    assert splits.sniff_compression(foreign) is tfe.Compression.ZLIB
    source = tr.TFRecordDatasource([ours, foreign])
    pieces = splits.plan_pieces(source.indexes, 8)
    starts = [p.start for p in pieces if p.file == 0]
    assert len(starts) >= 4
    assert all(s % 100 == 0 for s in starts)
    assert [(p.start, p.stop) for p in pieces if p.file == 1] == [(0, 50)]  # no restarts
    ds = tr.read_tfrecords([ours, foreign], override_num_blocks=8)
    assert ds.count() == 950
    assert records_of(ds) == ALL + ALL[:50]


def test_globs_and_folders_leave_out_indexes_and_hidden_files(
    files: list[str], tmp_path: Path
) -> None:
    folder = os.path.dirname(files[0])
    (Path(folder) / ".a.tfrecord.tmp-x").write_bytes(b"")
    assert splits.expand_paths(folder) == files
    assert splits.expand_paths(os.path.join(folder, "*")) == files
    with pytest.raises(FileNotFoundError):
        splits.expand_paths(str(tmp_path / "none-*"))


def damaged(tmp_path: Path) -> tuple[str, int]:
    path = write(tmp_path / "d.tfrecord", ALL[:100])
    offset = int(tfe.Index.build(path).offsets[10]) + 12  # record 10's first data byte
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))
    return path, offset - 12


def test_damage_under_skip_keeps_every_intact_record(ray_local: ModuleType, tmp_path: Path) -> None:
    path, offset = damaged(tmp_path)
    reports: list[tfe.DamageReport] = []
    ds = tr.read_tfrecords(path, on_damage="skip", on_damage_report=reports.append)
    assert [(r.record_index, r.offset) for r in reports] == [(10, offset)]
    assert ds.count() == 99
    assert records_of(ds) == ALL[:10] + ALL[11:100]


def test_damage_under_raise_fails_naming_the_record(ray_local: ModuleType, tmp_path: Path) -> None:
    path, offset = damaged(tmp_path)
    ds = tr.read_tfrecords(path)
    with pytest.raises(Exception, match=f"record 10 at offset {offset}") as info:
        ds.take_all()
    assert isinstance(info.value, tfe.CorruptedRecordError)


def test_bad_arguments_are_refused(files: list[str]) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="'raise' or 'skip'"):
        tr.TFRecordDatasource(files, on_damage="stop")
    with pytest.raises(tfe.InvalidArgumentError, match="records_per_block"):
        tr.TFRecordDatasource(files, records_per_block=0)


def test_count_and_verify_report_per_file(ray_local: ModuleType, tmp_path: Path) -> None:
    good = write(tmp_path / "a.tfrecord", ALL[:20], index=True)
    path, offset = damaged(tmp_path)
    assert tr.count([good]) == 20
    checks = tr.verify([good, path])
    assert [(c.path, c.records, c.ok) for c in checks] == [(good, 20, True), (path, 99, False)]
    assert [(d.record_index, d.offset) for d in checks[1].damage] == [(10, offset)]


def test_big_indexes_travel_through_the_object_store(ray_local: ModuleType, tmp_path: Path) -> None:
    records = [b"%d" % i for i in range(5000)]
    big = write(tmp_path / "big.tfrecord", records, index=True)
    small = write(tmp_path / "small.tfrecord", records[:10], index=True)
    source = tr.TFRecordDatasource([big, small])
    tasks = source.get_read_tasks(4)
    shipped = [t.read_fn.args[0] for t in tasks]
    assert all(isinstance(s, ray_local.ObjectRef) for s in shipped[:-1])
    assert len({s.hex() for s in shipped[:-1]}) == 1  # put once
    assert isinstance(shipped[-1], tfe.Index)  # one small piece: inline
    assert source.get_read_tasks(4)[0].read_fn.args[0] == shipped[0]
    ds = tr.read_tfrecords([big, small], override_num_blocks=4)
    assert records_of(ds) == records + records[:10]


def test_empty_files_one_record_files_and_empty_records(
    ray_local: ModuleType, tmp_path: Path
) -> None:
    write(tmp_path / "a-empty.tfrecord", [], index=True)
    write(tmp_path / "b-one.tfrecord", [b""], index=True)
    write(tmp_path / "c-empties.tfrecord", [b"", b"x", b""])  # indexed on open
    ds = tr.read_tfrecords(tmp_path, override_num_blocks=10)
    assert ds.count() == 4
    assert records_of(ds) == [b"", b"", b"x", b""]
    assert tr.read_tfrecords(tmp_path / "a-empty.tfrecord").take_all() == []
    assert records_of(ds.limit(2)) == [b"", b""]


def test_damage_found_by_a_read_task_is_skipped_there(
    ray_local: ModuleType, tmp_path: Path
) -> None:
    path = write(tmp_path / "w.tfrecord", ALL[:100], index=True)  # data-verified index
    ds = tr.read_tfrecords(path, on_damage="skip", override_num_blocks=3)
    offset = int(tfe.Index.load(path).offsets[50]) + 12
    with open(path, "r+b") as f:  # damaged after planning: only the read task sees it
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert records_of(ds) == ALL[:50] + ALL[51:100]


def test_indexes_are_built_in_ray_tasks(ray_local: ModuleType, tmp_path: Path) -> None:
    plain = write(tmp_path / "a.tfrecord", ALL[:30])
    path, offset = damaged(tmp_path)
    checks = tr.build_indexes([plain, path], on_damage="skip")
    assert [(c.records, c.ok) for c in checks] == [(30, True), (99, False)]
    assert [(d.record_index, d.offset) for d in checks[1].damage] == [(10, offset)]
    assert len(tfe.Index.load(plain)) == 30  # saved by the task
    assert len(tfe.Index.load(path, on_damage="skip", on_damage_report=lambda r: None)) == 99


def test_docstring_examples(ray_local: ModuleType) -> None:
    import doctest
    import sys

    # The examples live where the functions do (tfrecord_engine.ray re-exports them).
    home = sys.modules[tr.read_tfrecords.__module__]
    result = doctest.testmod(home, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_files_over_http_are_read_by_the_tasks_in_ranges(
    ray_local: ModuleType, tmp_path: Path
) -> None:
    require("fsspec")
    from tfrecord_engine.testing.http_server import serve_directory

    write(tmp_path / "a.tfrecord", ALL[:600], index=True)
    write(tmp_path / "b.gz", ALL[600:], compression="GZIP", index=True, index_flush_every=50)
    with serve_directory(tmp_path) as server:
        urls = [server.url + "/a.tfrecord", server.url + "/b.gz"]
        ds = tr.read_tfrecords(urls, override_num_blocks=6)
        assert ds.count() == 900
        server.reset()
        assert records_of(ds) == ALL
        assert server.count(ranged=True) >= 6  # byte ranges, not whole files


def test_select_columns_decodes_only_those(ray_local: ModuleType, files: list[str]) -> None:
    # "missing" is absent from every record: decoding it would fail the read.
    spec = {**SPEC, "missing": tfe.FixedLenFeature([], "int64")}
    ds = tr.read_tfrecords(files, features=spec, override_num_blocks=3)
    got = ds.select_columns(["i", "name"]).take_batch(900, batch_format="numpy")
    assert sorted(got) == ["i", "name"]
    assert got["i"].tolist() == list(range(900))
    assert ds.select_columns(["i"]).count() == 900
    with pytest.raises(Exception, match="missing"):
        ds.take_batch(1)
