"""BuildIndexes, VerifyShards, CountRecords and Reshard on the DirectRunner."""

from __future__ import annotations

import functools
import itertools
import os
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.index.placement import index_path_for
from tfrecord_engine.records import framing

from ..cli.helpers import invoke

SIZES = {"a": 37, "b": 0, "c": 120, "d": 1, "e": 61}


def _record(label: int) -> bytes:
    # Records of different lengths, each naming its label (its place in the input).
    return b"%06d" % label + b"x" * (label % 13)


def _label(record: bytes) -> int:
    return int(record[:6])


def _inputs(folder: Path, *, index: bool = True, compression: str | None = None) -> list[bytes]:
    """Files ``in-a`` .. ``in-e`` (SIZES records), labels increasing over the files in
    path order: the whole input is sorted by label."""
    folder.mkdir(parents=True, exist_ok=True)
    records: list[bytes] = []
    for name, n in sorted(SIZES.items()):
        chunk = [_record(len(records) + i) for i in range(n)]
        with tfe.TFRecordWriter(str(folder / f"in-{name}.tfrecord"), compression, index=index) as w:
            w.write_many(chunk)
        records += chunk
    return records


# What pipelines returned, by key: a matcher is pickled, so it keeps its results in a
# module-level place (found again by reference in this process), not in a closure.
_RESULTS: dict[str, list[Any]] = {}


def _keep(key: str, values: Iterable[Any]) -> None:
    _RESULTS[key] = list(values)


def _collect(pcoll: Any, label: str) -> str:
    from apache_beam.testing.util import assert_that

    key = uuid.uuid4().hex
    assert_that(pcoll, functools.partial(_keep, key), label=label)
    return key


def _run(beam: ModuleType, build: Any) -> list[Any]:
    """Runs ``build(p)`` and returns the elements of the PCollection it returns."""
    with beam.Pipeline(runner="DirectRunner") as p:
        key = _collect(build(p), "Collect")
    return _RESULTS.pop(key)


def _shards(prefix: Path) -> list[Path]:
    return sorted(prefix.parent.glob(prefix.name + "-*"))


# ---- BuildIndexes ----------------------------------------------------------------------


def test_build_indexes_writes_the_hidden_folder_and_keeps_valid_ones(
    beam: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_engine.beam import BuildIndexes, IndexSummary

    monkeypatch.setenv("TFE_INDEX_CACHE", str(tmp_path / "cache"))
    _inputs(tmp_path / "data", index=False, compression="GZIP")
    first = _run(beam, lambda p: p | BuildIndexes(str(tmp_path / "data" / "in-*")))
    assert sorted((s.path, s.records, s.built) for s in first) == [
        (str(tmp_path / "data" / f"in-{k}.tfrecord"), n, True) for k, n in sorted(SIZES.items())
    ]
    for s in first:
        assert isinstance(s, IndexSummary)
        assert s.index == index_path_for(s.path)  # the dataset's place, not a cache
        assert s.bytes == os.path.getsize(s.path)
        assert s.compression is tfe.Compression.GZIP
        assert len(tfe.Index.load(s.path, s.index)) == s.records
    assert not (tmp_path / "cache").exists()
    # A second run finds them valid and keeps them.
    again = _run(beam, lambda p: p | BuildIndexes(str(tmp_path / "data" / "in-*")))
    assert sorted((s.index, s.built) for s in again) == sorted((s.index, False) for s in first)


def test_build_indexes_into_the_cache_leaves_the_data_folder_alone(
    beam: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_engine.beam import BuildIndexes

    monkeypatch.setenv("TFE_INDEX_CACHE", str(tmp_path / "cache"))
    _inputs(tmp_path / "data", index=False)
    got = _run(
        beam, lambda p: p | BuildIndexes([str(tmp_path / "data" / "in-*")], placement="cache")
    )
    assert len(got) == len(SIZES)
    assert all(s.index.startswith(str(tmp_path / "cache")) for s in got)
    assert not (tmp_path / "data" / ".tfeidx").exists()
    with pytest.raises(tfe.InvalidArgumentError):
        BuildIndexes("x", placement="nowhere")


def test_build_indexes_reports_damage_under_skip(beam: ModuleType, tmp_path: Path) -> None:
    from tfrecord_engine.beam import BuildIndexes

    records = _inputs(tmp_path, index=False)
    _damage(tmp_path / "in-c.tfrecord", record=5)
    got = {
        Path(s.path).name: s
        for s in _run(beam, lambda p: p | BuildIndexes(str(tmp_path / "in-*"), on_damage="skip"))
    }
    assert got["in-c.tfrecord"].records == SIZES["c"] - 1
    (report,) = got["in-c.tfrecord"].damage
    assert report.record_index == 5
    assert all(not s.damage for k, s in got.items() if k != "in-c.tfrecord")
    assert sum(s.records for s in got.values()) == len(records) - 1


# ---- VerifyShards ----------------------------------------------------------------------


def _damage(path: Path, *, record: int) -> None:
    """Flips one payload byte of record ``record`` (its data CRC then fails)."""
    idx = tfe.Index.build(str(path))
    at = int(idx.offsets[record]) + 12
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def test_verify_reports_damage_as_data(beam: ModuleType, tmp_path: Path) -> None:
    from tfrecord_engine.beam import ShardReport, VerifyShards

    _inputs(tmp_path)
    _damage(tmp_path / "in-a.tfrecord", record=3)
    _damage(tmp_path / "in-e.tfrecord", record=60)
    got = {
        Path(r.path).name: r for r in _run(beam, lambda p: p | VerifyShards(str(tmp_path / "in-*")))
    }
    assert sorted(got) == [f"in-{k}.tfrecord" for k in sorted(SIZES)]
    for name, report in got.items():
        assert isinstance(report, ShardReport)
        assert report.bytes == os.path.getsize(tmp_path / name)
        damaged = name in {"in-a.tfrecord", "in-e.tfrecord"}
        assert report.ok is not damaged
        assert report.records == SIZES[name[3]] - damaged
    assert [(d.record_index, d.path) for d in got["in-a.tfrecord"].damage] == [
        (3, str(tmp_path / "in-a.tfrecord"))
    ]
    assert "CRC" in got["in-e.tfrecord"].damage[0].reason


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def _verify(beam: ModuleType, pattern: str, **kw: Any) -> dict[str, Any]:
    from tfrecord_engine.beam import VerifyShards

    return {Path(r.path).name: r for r in _run(beam, lambda p: p | VerifyShards(pattern, **kw))}


def test_verify_splits_a_big_indexed_file_and_finds_what_a_whole_read_finds(
    beam: ModuleType, tmp_path: Path
) -> None:
    from tfrecord_engine.hosts.beam.tools import check_pieces
    from tfrecord_engine.index.identity import identify, opened
    from tfrecord_engine.index.scan import fingerprint_ranges

    path = tmp_path / "big.tfrecord"
    with tfe.TFRecordWriter(str(path), index=True) as w:
        w.write_many(_record(i) + b"y" * 1000 for i in range(400))
    size = path.stat().st_size
    idx = tfe.Index.load(str(path))
    offsets = [*idx.offsets.tolist(), size]
    pieces = list(check_pieces(str(path), "auto", 20_000))
    assert len(pieces) >= 8
    assert pieces[0].start == 0
    assert pieces[-1].stop == size
    assert all(a.stop == b.start for a, b in itertools.pairwise(pieces))

    clean = _verify(beam, str(path), desired_bundle_bytes=20_000)["big.tfrecord"]
    assert (clean.ok, clean.records) == (True, 400)

    # Damage in place where the index's fingerprint does not look (so the index stays
    # fresh and the file is cut by it): a data CRC, two adjacent records, and a length
    # header (whose length can then no longer be trusted).
    sampled = fingerprint_ranges(size)
    unseen = [
        i for i in range(399) if all(offsets[i + 2] <= a or b <= offsets[i] for a, b in sampled)
    ]
    bad_data, pair, bad_header = unseen[5], unseen[len(unseen) // 2], unseen[-5]
    assert bad_data + 1 < pair
    assert pair + 2 < bad_header
    for i in (bad_data, pair, pair + 1):
        _flip(path, offsets[i] + 13)
    _flip(path, offsets[bad_header] + 2)
    # Its content check now refuses the index (every byte of a file this size is
    # checked): stamp the same layout with the damaged bytes, as damage after indexing
    # that the check missed (in a larger file, outside its samples) would leave it.
    with opened(str(path)) as data:
        now = identify(data, True, idx.offsets, idx.lengths)
    tfe.Index(
        str(path),
        idx.offsets,
        idx.lengths,
        data_size=now.size,
        fingerprint=now.fingerprint,
        content=now.content,
        data_verified=True,
    ).save()
    tfe.Index.load(str(path))  # fresh
    split = _verify(beam, str(path), desired_bundle_bytes=20_000)["big.tfrecord"]
    frame = [b - a for a, b in itertools.pairwise(offsets)]
    assert split.records == 400 - 4
    assert [(d.record_index, d.offset, d.bytes_skipped) for d in split.damage] == [
        (bad_data, offsets[bad_data], frame[bad_data]),
        (pair, offsets[pair], frame[pair] + frame[pair + 1]),
        (bad_header, offsets[bad_header], frame[bad_header]),
    ]
    assert "data CRC" in split.damage[0].reason
    assert "length CRC" in split.damage[2].reason
    # Read whole (no index to cut by): the same records and damaged regions.
    os.remove(index_path_for(str(path)))
    assert [p.first for p in check_pieces(str(path), "auto", 20_000)] == [-1]
    whole = _verify(beam, str(path), desired_bundle_bytes=20_000)["big.tfrecord"]
    assert whole.records == split.records
    assert [d.offset for d in whole.damage] == [d.offset for d in split.damage]


def test_verify_reads_a_truncated_file_whole(beam: ModuleType, tmp_path: Path) -> None:
    from tfrecord_engine.hosts.beam.tools import check_pieces

    path = tmp_path / "t.tfrecord"
    with tfe.TFRecordWriter(str(path), index=True) as w:
        w.write_many(_record(i) for i in range(100))
    path.write_bytes(path.read_bytes()[:-7])  # the index is stale now
    assert [p.first for p in check_pieces(str(path), "auto", 100)] == [-1]
    report = _verify(beam, str(path), desired_bundle_bytes=100)["t.tfrecord"]
    assert report.records == 99
    assert [d.record_index for d in report.damage] == [99]


# ---- CountRecords ----------------------------------------------------------------------


def _counts(beam: ModuleType, pattern: str) -> tuple[dict[str, tuple[int, bool]], int]:
    from tfrecord_engine.beam import CountRecords

    with beam.Pipeline(runner="DirectRunner") as p:
        result = p | CountRecords(pattern)
        keys = _collect(result["files"], "Files"), _collect(result["total"], "Total")
    files, (total,) = (_RESULTS.pop(k) for k in keys)
    return {Path(c.path).name: (c.records, c.from_index) for c in files}, total


def test_count_uses_fresh_indexes_without_reading_records(
    beam: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_engine.hosts import fileops

    monkeypatch.setenv("TFE_INDEX_CACHE", str(tmp_path / "cache"))
    records = _inputs(tmp_path / "d")
    pattern = str(tmp_path / "d" / "in-*")

    def no_walk(*_args: Any, **_kw: Any) -> Any:
        raise AssertionError("a record walk while every index is fresh")

    with monkeypatch.context() as m:
        m.setattr(tfe.Index, "build", no_walk)
        m.setattr(fileops, "read_records", no_walk)
        files, total = _counts(beam, pattern)
    assert total == len(records)
    assert files == {f"in-{k}.tfrecord": (n, True) for k, n in SIZES.items()}

    # A stale index (the file grew) and a missing one: counted from the data.
    with open(tmp_path / "d" / "in-a.tfrecord", "ab") as f:
        f.write(framing.frame(b"one more"))
    os.remove(index_path_for(str(tmp_path / "d" / "in-c.tfrecord")))
    files, total = _counts(beam, pattern)
    assert total == len(records) + 1
    assert files["in-a.tfrecord"] == (SIZES["a"] + 1, False)
    assert files["in-c.tfrecord"] == (SIZES["c"], False)
    assert files["in-e.tfrecord"] == (SIZES["e"], True)
    assert not (tmp_path / "cache").exists()  # counting writes no index


# ---- Reshard ---------------------------------------------------------------------------


def _reshard(
    beam: ModuleType,
    patterns: Sequence[str],
    prefix: Path,
    num_shards: int,
    **kw: Any,
) -> list[str]:
    from tfrecord_engine.beam import Reshard

    return _run(
        beam, lambda p: p | beam.Create(list(patterns)) | Reshard(str(prefix), num_shards, **kw)
    )


def _read_shards(prefix: Path) -> list[list[bytes]]:
    return [list(tfe.read_records(str(s))) for s in _shards(prefix)]


def test_reshard_is_a_global_permutation_with_even_shards(beam: ModuleType, tmp_path: Path) -> None:
    records = _inputs(tmp_path / "in")
    prefix = tmp_path / "out" / "train"
    names = _reshard(beam, [str(tmp_path / "in" / "in-*")], prefix, 7, seed=3)
    assert sorted(names) == [str(s) for s in _shards(prefix)]
    assert [s.name for s in _shards(prefix)] == [f"train-{i:05d}-of-00007" for i in range(7)]
    shards = _read_shards(prefix)
    flat = [r for s in shards for r in s]
    assert sorted(flat) == sorted(records)  # exactly once
    assert len(set(flat)) == len(flat)
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1
    assert flat != records
    # Published with loadable indexes, nothing temporary left.
    for shard in _shards(prefix):
        assert len(tfe.Index.load(str(shard), index_path_for(str(shard)))) == len(
            list(tfe.read_records(str(shard)))
        )
    assert sorted(os.listdir(prefix.parent)) == [".tfeidx"] + [s.name for s in _shards(prefix)]


def test_reshard_is_uncorrelated_with_a_sorted_input(beam: ModuleType, tmp_path: Path) -> None:
    records = _inputs(tmp_path / "in")
    prefix = tmp_path / "out" / "t"
    _reshard(beam, [str(tmp_path / "in" / "*")], prefix, 3, seed=11)
    labels = np.array([_label(r) for s in _read_shards(prefix) for r in s], dtype=np.float64)
    assert sorted(labels.tolist()) == list(range(len(records)))
    # The labels are their own ranks: Spearman's rho is Pearson's on them.
    rho = np.corrcoef(np.arange(len(labels)), labels)[0, 1]
    assert abs(rho) < 0.2  # ~N(0, 1/sqrt(219)): |rho| >= 0.2 has p < 0.3%
    # Each shard draws from the whole input, not from one end of it.
    for shard in _read_shards(prefix):
        mean = np.mean([_label(r) for r in shard])
        assert abs(mean - (len(records) - 1) / 2) < 0.25 * len(records)


def test_reshard_same_seed_same_bytes_whatever_the_bundles(
    beam: ModuleType, tmp_path: Path
) -> None:
    _inputs(tmp_path / "in")
    glob = str(tmp_path / "in" / "in-*")
    parts = [str(tmp_path / "in" / f"in-{k}.tfrecord") for k in ("e", "c", "a", "d", "b")]
    runs = [
        ("one", [glob], {}),
        # The inputs named one by one in another order, read in tiny pieces.
        ("two", parts, {"desired_bundle_bytes": 40}),
        ("three", [glob, parts[0]], {"desired_bundle_bytes": 300}),
    ]
    outputs = []
    for name, patterns, kw in runs:
        prefix = tmp_path / name / "x"
        _reshard(beam, patterns, prefix, 4, seed=5, **kw)
        outputs.append([s.read_bytes() for s in _shards(prefix)])
    assert outputs[0] == outputs[1] == outputs[2]
    # Shards sorted through a spill file, not in memory: the same bytes.
    _reshard(beam, [glob], tmp_path / "spilled" / "x", 4, seed=5, sort_memory_bytes=0)
    assert [s.read_bytes() for s in _shards(tmp_path / "spilled" / "x")] == outputs[0]
    _reshard(beam, [glob], tmp_path / "other" / "x", 4, seed=6)
    assert _read_shards(tmp_path / "other" / "x") != _read_shards(tmp_path / "one" / "x")


def test_reshard_matches_tfr_reshard_shuffle(
    beam: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The distributed reshard writes the files ``tfr reshard --shuffle`` writes."""
    monkeypatch.setenv("TFE_INDEX_CACHE", str(tmp_path / "cache"))
    _inputs(tmp_path / "in", index=False)
    monkeypatch.chdir(tmp_path)
    result = invoke(
        "reshard", "in/in-*", "-o", "cli/train", "--shards", "3", "--shuffle", "--seed", "9"
    )
    assert result.exit_code == 0, result.output
    _reshard(
        beam, ["in/in-*"], tmp_path / "beam" / "train", 3, seed=9, file_name_suffix=".tfrecord"
    )
    cli = sorted((tmp_path / "cli").glob("train-*"))
    ours = sorted((tmp_path / "beam").glob("train-*"))
    assert [p.name for p in cli] == [p.name for p in ours]
    assert [p.read_bytes() for p in cli] == [p.read_bytes() for p in ours]


def test_reshard_in_order_and_compressed(beam: ModuleType, tmp_path: Path) -> None:
    records = _inputs(tmp_path / "in", compression="GZIP")
    prefix = tmp_path / "out" / "o"
    _reshard(
        beam,
        [str(tmp_path / "in" / "*")],
        prefix,
        4,
        shuffle=False,
        compression="ZLIB",
        desired_bundle_bytes=64,
    )
    shards = _read_shards(prefix)
    assert [r for s in shards for r in s] == records
    assert [len(s) for s in shards] == [54, 55, 55, 55]  # as tfr reshard: i * total // n
    assert tfe.Index.load(str(_shards(prefix)[0])).compression is tfe.Compression.ZLIB


def test_reshard_more_shards_than_records(beam: ModuleType, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    with tfe.TFRecordWriter(str(folder / "one.tfrecord")) as w:
        w.write_many([b"a", b"b"])
    prefix = tmp_path / "out" / "s"
    _reshard(beam, [str(folder / "*")], prefix, 5)
    assert sorted(len(s) for s in _read_shards(prefix)) == [0, 0, 0, 1, 1]


def test_reshard_refuses_bad_arguments(beam: ModuleType) -> None:
    from tfrecord_engine.beam import Reshard

    with pytest.raises(tfe.InvalidArgumentError):
        Reshard("out/x", 0)
    with pytest.raises(tfe.InvalidArgumentError):
        Reshard("out/x", 2, seed=-1)
    with pytest.raises(tfe.InvalidArgumentError):
        Reshard("out/x", 2, input_compression="BZIP2")


def test_reshard_on_two_worker_processes(beam: ModuleType, tmp_path: Path) -> None:
    """The transform pickles: two worker processes write the single-process bytes."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from tfrecord_engine.beam import Reshard

    _inputs(tmp_path / "in")
    glob = str(tmp_path / "in" / "*")
    _reshard(beam, [glob], tmp_path / "a" / "x", 3, seed=1, desired_bundle_bytes=200)
    options = PipelineOptions(direct_num_workers=2, direct_running_mode="multi_processing")
    with beam.Pipeline(runner="DirectRunner", options=options) as p:
        _ = (
            p
            | beam.Create([glob])
            | Reshard(str(tmp_path / "b" / "x"), 3, seed=1, desired_bundle_bytes=200)
        )
    a = [s.read_bytes() for s in _shards(tmp_path / "a" / "x")]
    assert len(a) == 3
    assert a == [s.read_bytes() for s in _shards(tmp_path / "b" / "x")]


def test_reshard_of_a_damaged_input_fails_and_publishes_nothing(
    beam: ModuleType, tmp_path: Path
) -> None:
    _inputs(tmp_path / "in")
    _damage(tmp_path / "in" / "in-c.tfrecord", record=7)
    with pytest.raises(Exception, match=r"in-c\.tfrecord.*record 7") as info:
        _reshard(beam, [str(tmp_path / "in" / "*")], tmp_path / "out" / "x", 2)
    assert "CRC" in str(info.value)
    assert not (tmp_path / "out").exists()  # no shard, no temporary folder


def test_reshard_refuses_to_replace_an_input(beam: ModuleType, tmp_path: Path) -> None:
    # One output shard named exactly like an input: publishing it would replace a file
    # that the pipeline reads.
    _inputs(tmp_path / "in")
    before = {p.name: p.read_bytes() for p in (tmp_path / "in").iterdir() if p.is_file()}
    with pytest.raises(Exception, match="would replace an input") as info:
        _reshard(
            beam,
            [str(tmp_path / "in" / "*")],
            tmp_path / "in" / "in-a.tfrecord",
            1,
            shard_name_template="",
        )
    assert "in-a.tfrecord" in str(info.value)
    after = {p.name: p.read_bytes() for p in (tmp_path / "in").iterdir() if p.is_file()}
    assert after == before  # nothing replaced, nothing left beside the inputs
    assert not [p for p in (tmp_path / "in").iterdir() if p.name.startswith(".tfe-temp")]


def _name_and_records(value: Any) -> tuple[str, int]:
    return Path(value.path).name, value.records


def test_file_operations_on_two_worker_processes(beam: ModuleType, tmp_path: Path) -> None:
    """BuildIndexes, CountRecords and VerifyShards pickle: two worker processes."""
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.testing.util import assert_that, equal_to

    from tfrecord_engine.beam import BuildIndexes, CountRecords, VerifyShards

    _inputs(tmp_path, index=False)
    pattern = str(tmp_path / "in-*")
    expected = [(f"in-{k}.tfrecord", n) for k, n in SIZES.items()]
    options = PipelineOptions(direct_num_workers=2, direct_running_mode="multi_processing")
    with beam.Pipeline(runner="DirectRunner", options=options) as p:
        built = p | "Build" >> BuildIndexes(pattern) | "B" >> beam.Map(_name_and_records)
        counts = p | "Count" >> CountRecords(pattern)
        checked = p | "Verify" >> VerifyShards(pattern) | "V" >> beam.Map(_name_and_records)
        assert_that(built, equal_to(expected), label="Built")
        assert_that(checked, equal_to(expected), label="Checked")
        assert_that(counts["total"], equal_to([sum(SIZES.values())]), label="Total")
    for k, n in SIZES.items():
        assert len(tfe.Index.load(str(tmp_path / f"in-{k}.tfrecord"))) == n
