"""WriteTFRecords on the DirectRunner: shard names, indexes published with their shards,
no temporary folder left, byte identity with Beam's own writer, a re-runnable finalize."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import tfrecord_engine as tfe

RECORDS = [b"r%03d" % i + b"x" * (i % 11) for i in range(120)]


def _write(beam: ModuleType, records: list[Any], prefix: Path, **kw: Any) -> None:
    from tfrecord_engine.beam import WriteTFRecords

    with beam.Pipeline(runner="DirectRunner") as p:
        _ = p | beam.Create(records) | WriteTFRecords(str(prefix), **kw)


def _listing(folder: Path) -> list[str]:
    """Every file under ``folder``: shards, and their indexes as ``.tfeidx/<shard>.tfeidx``."""
    return sorted(
        os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs
    )


def _index(name: str) -> str:
    return f".tfeidx/{name}.tfeidx"


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_round_trip_through_read(beam: ModuleType, tmp_path: Path, compression: str | None) -> None:
    from apache_beam.testing.util import assert_that, equal_to

    from tfrecord_engine.beam import ReadTFRecords, WriteTFRecords

    out = tmp_path / "out"
    with beam.Pipeline(runner="DirectRunner") as p:
        names = (
            p
            | beam.Create(RECORDS)
            | WriteTFRecords(
                str(out / "train"), num_shards=3, compression=compression, file_name_suffix=".tfr"
            )
        )
        assert_that(
            names | beam.Map(os.path.basename),
            equal_to([f"train-0000{i}-of-00003.tfr" for i in range(3)]),
        )
    with beam.Pipeline(runner="DirectRunner") as p:
        got = p | ReadTFRecords(str(out / "train-*"), desired_bundle_bytes=64)
        assert_that(got, equal_to(RECORDS))


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_shards_and_indexes_only_no_temporary_folder(
    beam: ModuleType, tmp_path: Path, compression: str | None
) -> None:
    _write(beam, RECORDS, tmp_path / "train", num_shards=4, compression=compression)
    shards = [f"train-{i:05d}-of-00004" for i in range(4)]
    assert _listing(tmp_path) == sorted(shards + [_index(s) for s in shards])
    got: list[bytes] = []
    for name in shards:
        idx = tfe.Index.load(tmp_path / name, on_damage="skip")  # data-verified: any policy
        assert idx.compression is tfe.Compression(compression or "")
        records = list(tfe.read_records(tmp_path / name, compression))
        assert len(idx) == len(records)
        assert abs(len(records) - len(RECORDS) / 4) <= 1  # round robin, one bundle
        got += records
    assert sorted(got) == sorted(RECORDS)


def test_compressed_shards_carry_restart_points_and_split(beam: ModuleType, tmp_path: Path) -> None:
    from tfrecord_engine.hosts.beam.pieces import PieceProvider, plan_file

    records = [b"%05d" % i * 20 for i in range(3000)]
    _write(beam, records, tmp_path / "g", num_shards=1, compression="GZIP")
    path = tmp_path / "g-00000-of-00001"
    assert len(tfe.Index.load(path).restarts) > 5
    task = plan_file(str(path), tfe.Compression.GZIP, "raise", 4096)
    provider = PieceProvider()
    assert len(list(provider.split(task, provider.initial_restriction(task)))) > 1


def test_byte_identical_to_beams_own_writer(
    beam: ModuleType, beam_crc: None, tmp_path: Path
) -> None:
    from tfrecord_engine.beam import WriteTFRecords

    with beam.Pipeline(runner="DirectRunner") as p:
        pc = p | beam.Create(RECORDS)
        _ = pc | "Ours" >> WriteTFRecords(str(tmp_path / "ours"), num_shards=1)
        _ = pc | "Beam" >> beam.io.WriteToTFRecord(str(tmp_path / "beam"), num_shards=1)
    ours = (tmp_path / "ours-00000-of-00001").read_bytes()
    assert ours == (tmp_path / "beam-00000-of-00001").read_bytes()
    assert list(tfe.read_records(tmp_path / "ours-00000-of-00001")) == RECORDS


def test_beam_reads_our_shards_back(beam: ModuleType, beam_crc: None, tmp_path: Path) -> None:
    from apache_beam.testing.util import assert_that, equal_to

    _write(beam, RECORDS, tmp_path / "t", num_shards=3, file_name_suffix=".tfrecord")
    with beam.Pipeline(runner="DirectRunner") as p:
        got = p | beam.io.ReadFromTFRecord(str(tmp_path / "t-*.tfrecord"))
        assert_that(got, equal_to(RECORDS))


def test_more_shards_than_records_writes_empty_shards(beam: ModuleType, tmp_path: Path) -> None:
    # Files an earlier run left under the same names are replaced, empty shards included.
    for i in range(7):
        with tfe.TFRecordWriter(tmp_path / f"few-{i:05d}-of-00007", "GZIP", index=True) as w:
            w.write(b"stale")
    _write(beam, RECORDS[:3], tmp_path / "few", num_shards=7, compression="GZIP")
    shards = [tmp_path / f"few-{i:05d}-of-00007" for i in range(7)]
    counts = [len(tfe.Index.load(s)) for s in shards]
    assert sorted(counts) == [0, 0, 0, 0, 1, 1, 1]
    assert sorted(r for s in shards for r in tfe.read_records(s, "GZIP")) == RECORDS[:3]


def test_empty_input_writes_one_empty_shard(beam: ModuleType, tmp_path: Path) -> None:
    _write(beam, [], tmp_path / "none")
    assert _listing(tmp_path) == sorted(["none-00000-of-00001", _index("none-00000-of-00001")])
    assert (tmp_path / "none-00000-of-00001").read_bytes() == b""


def test_max_records_per_shard(beam: ModuleType, tmp_path: Path) -> None:
    _write(beam, RECORDS, tmp_path / "m", max_records_per_shard=25, index=False)
    names = _listing(tmp_path)
    assert names == [f"m-{i:05d}-of-00005" for i in range(5)]
    counts = [sum(1 for _ in tfe.read_records(tmp_path / n)) for n in names]
    assert max(counts) <= 25
    assert sum(counts) == len(RECORDS)


def test_one_file_without_a_shard_template(beam: ModuleType, tmp_path: Path) -> None:
    _write(beam, RECORDS, tmp_path / "single.tfrecord", shard_name_template="")
    assert _listing(tmp_path) == sorted(["single.tfrecord", _index("single.tfrecord")])
    assert list(tfe.read_records(tmp_path / "single.tfrecord")) == RECORDS


def _temp_shards(tmp_path: Path, options: Any, n: int) -> list[Any]:
    from tfrecord_engine.hosts.beam.write import ShardFiles

    out = []
    for key in range(n):
        files = ShardFiles(options, key)
        for r in RECORDS[key::n]:
            files.write(r)
        out += files.close()
    return out


def test_finalize_runs_again_after_a_failure_and_twice(tmp_path: Path) -> None:
    from apache_beam.io.filesystems import FileSystems

    from tfrecord_engine.beam import WriteTFRecords
    from tfrecord_engine.hosts.beam.write import publish

    options = WriteTFRecords(str(tmp_path / "f"), num_shards=3)._options
    shards = _temp_shards(tmp_path, options, 3)
    # A first finalize that died after moving one shard (and not its index).
    FileSystems.rename([shards[0].path], [str(tmp_path / "f-00000-of-00003")])
    names = publish(options, shards)
    assert names == [str(tmp_path / f"f-{i:05d}-of-00003") for i in range(3)]
    assert publish(options, shards) == names  # and once more: nothing left to do
    listing = _listing(tmp_path)
    assert listing == sorted(
        [os.path.basename(n) for n in names] + [_index(os.path.basename(n)) for n in names]
    )
    for key, name in enumerate(names):
        assert list(tfe.read_records(name)) == RECORDS[key::3]
        assert len(tfe.Index.load(name)) == len(RECORDS[key::3])


def test_finalize_of_empty_shards_runs_twice(tmp_path: Path) -> None:
    from tfrecord_engine.beam import WriteTFRecords
    from tfrecord_engine.hosts.beam.write import publish

    options = WriteTFRecords(str(tmp_path / "e"), num_shards=5, compression="ZLIB")._options
    shards = _temp_shards(tmp_path, options, 2)  # keys 0 and 1; 2, 3 and 4 get no record
    names = publish(options, shards)
    assert publish(options, shards) == names
    assert len(_listing(tmp_path)) == 10
    assert [len(tfe.Index.load(n)) for n in names] == [60, 60, 0, 0, 0]


def test_finalize_refuses_when_a_shard_is_lost(tmp_path: Path) -> None:
    from tfrecord_engine.beam import WriteTFRecords
    from tfrecord_engine.hosts.beam.write import publish

    options = WriteTFRecords(str(tmp_path / "f"), num_shards=2)._options
    shards = _temp_shards(tmp_path, options, 2)
    os.remove(shards[1].path)
    with pytest.raises(FileNotFoundError, match="missing from the temporary folder"):
        publish(options, shards)


def test_a_failing_writer_publishes_nothing(beam: ModuleType, tmp_path: Path) -> None:
    records: list[Any] = [*RECORDS, 12345]  # not bytes: the writer raises in its bundle
    for num_shards in (0, 2):
        with pytest.raises(Exception, match="int"):
            _write(beam, records, tmp_path / "bad", num_shards=num_shards)
    published = [n for n in _listing(tmp_path) if not n.startswith(".")]
    assert published == []
    # What a failed pipeline leaves is hidden from every shard glob, and holds no
    # half-written file (each writer's own temporary was removed when it failed).
    for folder in tmp_path.iterdir():
        assert folder.name.startswith(".tfe-temp-bad-")
        assert not [n for n in _listing(folder) if ".tmp-" in n]


def test_bad_arguments_fail_at_construction() -> None:
    from tfrecord_engine.beam import WriteTFRecords

    with pytest.raises(tfe.InvalidArgumentError):
        WriteTFRecords("x", num_shards=-1)
    with pytest.raises(tfe.InvalidArgumentError):
        WriteTFRecords("x", num_shards=2, shard_name_template="")
    with pytest.raises(tfe.InvalidArgumentError):
        WriteTFRecords("x", shard_name_template="-of-NN")
    with pytest.raises(tfe.InvalidArgumentError):
        WriteTFRecords("x", compression="lz4")
    with pytest.raises(tfe.InvalidArgumentError):
        WriteTFRecords("x", max_records_per_shard=0)
