"""``tfrecord_engine.ray.write_tfrecords``: staged shards published only on success."""

from __future__ import annotations

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

RECORDS = [b"r%d" % i * (i % 7) for i in range(250)]


def listing(folder: Path) -> list[str]:
    """Every file under ``folder``: shards, and indexes as ``.tfeidx/<shard>.tfeidx``."""
    return sorted(
        os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs
    )


def test_round_trip_writes_indexed_shards_and_nothing_else(
    ray_local: ModuleType, tmp_path: Path
) -> None:
    ds = ray_local.data.from_items([{"record": r} for r in RECORDS], override_num_blocks=3)
    out = tmp_path / "out"
    paths = tr.write_tfrecords(ds, out, num_rows_per_file=40)
    n = len(paths)
    assert n >= 7  # 250 rows, at most 40 per shard
    assert paths == [str(out / f"part-{i:05d}-of-{n:05d}.tfrecord") for i in range(n)]
    assert listing(out) == sorted(
        [*map(os.path.basename, paths), *(f".tfeidx/{os.path.basename(p)}.tfeidx" for p in paths)]
    )  # no staging folder, no temporary file
    got = [r for p in paths for r in tfe.read_records(p)]
    assert got == RECORDS  # in order (the tests preserve Ray's block order)
    for p in paths:
        idx = tfe.Index.load(p, on_damage="skip")  # fresh and data-verified
        assert 0 < len(idx) <= 40
    back = tr.read_tfrecords(out)
    assert back.count() == 250
    assert [row["record"] for row in back.take_all()] == RECORDS


def test_rows_are_encoded_as_examples(ray_local: ModuleType, tmp_path: Path) -> None:
    rows = [{"i": i, "name": b"n%d" % i, "xy": np.array([i, -i], np.float32)} for i in range(20)]
    paths = tr.write_tfrecords(ray_local.data.from_items(rows), tmp_path / "ex")
    got = [tfe.decode_example(r) for p in paths for r in tfe.read_records(p)]
    assert [int(g["i"][0]) for g in got] == list(range(20))
    assert [g["name"][0] for g in got] == [b"n%d" % i for i in range(20)]
    np.testing.assert_array_equal(got[3]["xy"], [3, -3])


def test_gzip_shards_read_back_with_restart_points(ray_local: ModuleType, tmp_path: Path) -> None:
    records = [b"g%d" % i for i in range(600)]
    ds = ray_local.data.from_items([{"record": r} for r in records], override_num_blocks=1)
    paths = tr.write_tfrecords(ds, tmp_path / "gz", compression="GZIP")
    assert [os.path.basename(p) for p in paths] == ["part-00000-of-00001.tfrecord.gz"]
    assert list(tfe.read_records(paths[0], "GZIP")) == records
    assert len(tfe.Index.load(paths[0]).restarts) >= 2


def test_a_failed_write_publishes_nothing(ray_local: ModuleType, tmp_path: Path) -> None:
    def explode(batch: dict[str, Any]) -> dict[str, Any]:
        if b"r7" in batch["record"].tolist():
            raise RuntimeError("boom")
        return batch

    ds = ray_local.data.from_items(
        [{"record": b"r%d" % i} for i in range(40)], override_num_blocks=4
    )
    out = tmp_path / "out"
    with pytest.raises(Exception, match="boom"):
        tr.write_tfrecords(ds.map_batches(explode, batch_size=None), out)
    assert listing(out) == []


def test_taken_names_stop_the_publish_before_any_rename(
    ray_local: ModuleType, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-00000-of-00001.tfrecord").write_bytes(b"old")
    ds = ray_local.data.from_items([{"record": b"new"}], override_num_blocks=1)
    with pytest.raises(Exception, match="already exists"):
        tr.write_tfrecords(ds, out)
    assert listing(out) == ["part-00000-of-00001.tfrecord"]
    assert (out / "part-00000-of-00001.tfrecord").read_bytes() == b"old"


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="num_rows_per_file"):
        tr.TFRecordDatasink(tmp_path, num_rows_per_file=0)
    with pytest.raises(tfe.InvalidArgumentError, match="file_prefix"):
        tr.TFRecordDatasink(tmp_path, file_prefix=".hidden")


def test_one_record_per_shard_and_an_empty_dataset(ray_local: ModuleType, tmp_path: Path) -> None:
    ds = ray_local.data.from_items([{"record": b"%d" % i} for i in range(5)], override_num_blocks=2)
    paths = tr.write_tfrecords(ds, tmp_path / "one", num_rows_per_file=1)
    assert [list(tfe.read_records(p)) for p in paths] == [[b"%d" % i] for i in range(5)]
    empty = ds.filter(expr=ray_local.data.expressions.col("record") == b"none")
    assert tr.write_tfrecords(empty, tmp_path / "none") == []
    assert listing(tmp_path / "none") == []


def test_null_values_are_left_out_of_their_example(ray_local: ModuleType, tmp_path: Path) -> None:
    rows = [{"i": 1, "s": "a"}, {"i": None, "s": "b"}, {"i": 3, "s": None}]
    paths = tr.write_tfrecords(ray_local.data.from_items(rows), tmp_path / "nulls")
    got = [tfe.decode_example(r) for p in paths for r in tfe.read_records(p)]
    assert [{k: v.tolist() for k, v in g.items()} for g in got] == [
        {"i": [1], "s": [b"a"]},
        {"s": [b"b"]},
        {"i": [3]},
    ]


def test_the_same_dataset_writes_the_same_shards(ray_local: ModuleType, tmp_path: Path) -> None:
    ds = ray_local.data.from_items([{"record": r} for r in RECORDS], override_num_blocks=4)
    first = tr.write_tfrecords(ds, tmp_path / "a", num_rows_per_file=70, compression="GZIP")
    second = tr.write_tfrecords(ds, tmp_path / "b", num_rows_per_file=70, compression="GZIP")
    assert [os.path.basename(p) for p in first] == [os.path.basename(p) for p in second]
    assert [Path(p).read_bytes() for p in first] == [Path(p).read_bytes() for p in second]
