"""ReadTFRecords on the DirectRunner: every record exactly once with pieces far smaller
than a file, splits at record boundaries (restart points for GZIP/ZLIB), damage as data."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe


def _record(i: int) -> bytes:
    return b"%d:" % i + b"x" * (i % 13)


def _number(record: bytes) -> int:
    return int(record.split(b":")[0])


def _write(path: Path, numbers: range, compression: str | None = None, **kw: Any) -> Path:
    with tfe.TFRecordWriter(path, compression, **kw) as w:
        w.write_many(_record(i) for i in numbers)
    return path


def _run(beam: ModuleType, build: Any) -> Any:
    """Runs ``build(pipeline)`` on the DirectRunner; returns the pipeline's result."""
    p = beam.Pipeline(runner="DirectRunner")
    build(p)
    result = p.run()
    result.wait_until_finish()
    return result


def _pieces(result: Any) -> int:
    from apache_beam.metrics.metric import MetricsFilter

    found = result.metrics().query(MetricsFilter().with_name("pieces"))["counters"]
    return int(sum(c.committed for c in found))


def _read_numbers(beam: ModuleType, pattern: str, expected: list[int], **kw: Any) -> int:
    """Reads ``pattern``, asserts the records are exactly ``expected``; returns pieces."""
    from apache_beam.testing.util import assert_that, equal_to

    from tfrecord_engine.beam import ReadTFRecords

    def build(p: Any) -> None:
        got = p | ReadTFRecords(pattern, **kw) | beam.Map(_number)
        assert_that(got, equal_to(expected))

    return _pieces(_run(beam, build))


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_every_record_exactly_once_from_pieces_far_smaller_than_a_file(
    beam: ModuleType, tmp_path: Path, compression: str | None
) -> None:
    for k in range(3):
        _write(
            tmp_path / f"part-{k}",
            range(k * 600, k * 600 + 600),
            compression,
            index=True,
            index_flush_every=32,
        )
    pieces = _read_numbers(
        beam, str(tmp_path / "part-*"), list(range(1800)), desired_bundle_bytes=1024
    )
    # ~10 KB per file cut ~1 KB apart (at restart points: every 32 records when compressed).
    assert pieces >= 3 * 5


def test_plain_files_cut_at_records_about_desired_bytes_apart(tmp_path: Path) -> None:
    from tfrecord_engine.hosts.beam.pieces import PieceProvider, plan_file

    path = _write(tmp_path / "a", range(1000))
    task = plan_file(str(path), tfe.Compression.NONE, "raise", 2000)
    provider = PieceProvider()
    pieces = list(provider.split(task, provider.initial_restriction(task)))
    assert len(pieces) > 5
    # Contiguous, in order, covering [0, n + 1) (n + 1: the damage position).
    assert pieces[0].start == 0
    assert pieces[-1].stop == 1001
    assert all(a.stop == b.start for a, b in itertools.pairwise(pieces))
    idx = tfe.Index.build(path)
    covered = [int(idx.offsets[p.stop]) - int(idx.offsets[p.start]) for p in pieces[:-1]]
    assert max(covered) < 2 * 2000


def test_foreign_gzip_without_restart_points_is_one_piece(beam: ModuleType, tmp_path: Path) -> None:
    from tfrecord_engine.hosts.beam.pieces import PieceProvider, plan_file

    path = _write(tmp_path / "foreign.gz", range(500), "GZIP")  # no index: no restarts
    task = plan_file(str(path), tfe.Compression.GZIP, "raise", 100)
    provider = PieceProvider()
    (piece,) = provider.split(task, provider.initial_restriction(task))
    tracker = provider.create_tracker(piece)
    assert tracker.try_claim(0)
    assert tracker.try_split(0.5) is None  # no record may start a decompression
    assert tracker.try_split(0.0) is None
    assert _read_numbers(beam, str(path), list(range(500)), desired_bundle_bytes=100) >= 1


def test_bgzip_file_splits_at_member_starts(beam: ModuleType, tmp_path: Path) -> None:
    from tfrecord_engine.hosts.beam.pieces import PieceProvider, plan_file
    from tfrecord_engine.testing.members import bgzf, framed

    path = tmp_path / "bgzip.gz"
    path.write_bytes(bgzf(framed(_record(i) for i in range(3000)), 2000))
    task = plan_file(str(path), tfe.Compression.GZIP, "raise", 2000)
    assert task.cuts is not None
    assert len(task.cuts) > 10
    provider = PieceProvider()
    pieces = list(provider.split(task, provider.initial_restriction(task)))
    assert len(pieces) > 3
    assert _read_numbers(beam, str(path), list(range(3000)), desired_bundle_bytes=2000) > 3


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_try_split_mid_read_covers_the_range_exactly(
    tmp_path: Path, compression: str | None
) -> None:
    from tfrecord_engine.hosts.beam.pieces import PieceProvider, plan_file

    path = _write(tmp_path / "a", range(400), compression, index=True, index_flush_every=16)
    task = plan_file(str(path), tfe.Compression(compression or ""), "raise", 1 << 20)
    provider = PieceProvider()
    (piece,) = provider.split(task, provider.initial_restriction(task))
    tracker = provider.create_tracker(piece)
    for i in range(37):
        assert tracker.try_claim(i)
    primary, residual = tracker.try_split(0.5)
    assert (primary.start, residual.stop) == (0, 401)
    assert primary.stop == residual.start
    assert 37 < primary.stop < 401
    if compression:
        assert primary.stop % 16 == 0  # a restart point: every 16 records
        assert residual.cuts == piece.cuts
    else:
        assert primary.stop == 36 + (401 - 36) // 2  # Beam's split: half of what is left
    for i in range(37, primary.stop):
        assert tracker.try_claim(i)
    assert not tracker.try_claim(primary.stop)
    tracker.check_done()
    # The residual is a restriction of its own: another worker reads it.
    rest = provider.create_tracker(residual)
    assert all(rest.try_claim(i) for i in range(residual.start, residual.stop))
    rest.check_done()


def test_empty_files_one_record_files_and_zero_length_records(
    beam: ModuleType, tmp_path: Path
) -> None:
    _write(tmp_path / "empty", range(0))
    _write(tmp_path / "empty.gz", range(0), "GZIP", index=True)
    _write(tmp_path / "one", range(7, 8))
    with tfe.TFRecordWriter(tmp_path / "zeros", index=True) as w:
        w.write_many([b""] * 50)
    from apache_beam.testing.util import assert_that, equal_to

    from tfrecord_engine.beam import ReadTFRecords

    def build(p: Any) -> None:
        got = p | ReadTFRecords(str(tmp_path / "*"), desired_bundle_bytes=64)
        assert_that(got, equal_to([_record(7)] + [b""] * 50))

    _run(beam, build)


def test_features_give_parsed_records_and_column_batches(beam: ModuleType, tmp_path: Path) -> None:
    from apache_beam.testing.util import assert_that, equal_to

    from tfrecord_engine.beam import ReadTFRecords

    with tfe.TFRecordWriter(tmp_path / "ex.tfrecord", index=True) as w:
        w.write_many(tfe.encode_example({"x": [i, -i], "name": b"n%d" % i}) for i in range(300))
    features = {"x": tfe.FixedLenFeature([2], "int64"), "name": tfe.FixedLenFeature([], "string")}
    pattern = str(tmp_path / "*.tfrecord")

    def build(p: Any) -> None:
        one = p | "One" >> ReadTFRecords(pattern, features=features, desired_bundle_bytes=500)
        assert_that(
            one | "Row" >> beam.Map(lambda s: (int(s["x"][0]), int(s["x"][1]), s["name"])),
            equal_to([(i, -i, b"n%d" % i) for i in range(300)]),
            label="rows",
        )
        batches = p | "Batches" >> ReadTFRecords(
            pattern, features=features, batch_size=64, with_filename=True
        )
        assert_that(
            batches | "Cols" >> beam.FlatMap(lambda fb: fb[1]["x"][:, 0].tolist()),
            equal_to(list(range(300))),
            label="columns",
        )
        assert_that(
            batches | "Sizes" >> beam.Map(lambda fb: (os.path.basename(fb[0]), len(fb[1]["x"]))),
            equal_to([("ex.tfrecord", 64)] * 4 + [("ex.tfrecord", 44)]),
            label="sizes",
        )

    _run(beam, build)


def _damage_data(path: Path, record: int) -> int:
    """Flips a data byte of ``record``; returns the record's offset."""
    offset = int(tfe.Index.build(path).offsets[record])
    with open(path, "r+b") as f:
        f.seek(offset + 12)
        byte = f.read(1)
        f.seek(offset + 12)
        f.write(bytes([byte[0] ^ 0xFF]))
    return offset


def test_skip_puts_damage_on_its_own_output_and_keeps_every_intact_record(
    beam: ModuleType, tmp_path: Path
) -> None:
    from apache_beam.testing.util import assert_that, equal_to

    from tfrecord_engine.beam import ReadTFRecords

    _write(tmp_path / "good", range(200))
    bad = _write(tmp_path / "bad", range(200, 400))
    offset = _damage_data(bad, 57)

    def build(p: Any) -> None:
        result = p | ReadTFRecords(str(tmp_path / "*"), on_damage="skip", desired_bundle_bytes=300)
        records, damage = result
        assert result.damage is damage
        expected = [i for i in range(400) if i != 257]
        assert_that(records | beam.Map(_number), equal_to(expected), label="records")
        assert_that(
            damage | beam.Map(lambda d: (os.path.basename(d.path or ""), d.record_index, d.offset)),
            equal_to([("bad", 57, offset)]),
            label="damage",
        )

    _run(beam, build)


def test_skip_reports_damage_found_after_the_index_was_written(
    beam: ModuleType, tmp_path: Path
) -> None:
    """A record spoiled after its writer's (data-verified) index was saved."""
    from apache_beam.testing.util import assert_that, equal_to

    from tfrecord_engine.beam import ReadTFRecords

    path = _write(tmp_path / "a", range(100), index=True)
    idx = tfe.Index.load(path)
    offset = _damage_data(path, 40)
    # The sidecar still vouches for the file (a spoiled byte outside the sampled windows
    # of a big file's fingerprint goes unnoticed the same way).
    idx.fingerprint = tfe.Index.build(path).fingerprint
    idx.save()

    def build(p: Any) -> None:
        records, damage = p | ReadTFRecords(str(path), on_damage="skip")
        assert_that(records | beam.Map(_number), equal_to([i for i in range(100) if i != 40]))
        assert_that(
            damage | beam.Map(lambda d: (d.record_index, d.offset)),
            equal_to([(40, offset)]),
            label="damage",
        )

    _run(beam, build)


def test_raise_names_the_file_record_and_offset(beam: ModuleType, tmp_path: Path) -> None:
    from tfrecord_engine.beam import ReadTFRecords

    bad = _write(tmp_path / "bad", range(100))
    offset = _damage_data(bad, 33)
    with pytest.raises(Exception, match=rf"bad: record 33 at offset {offset}"):
        _run(beam, lambda p: p | ReadTFRecords(str(bad), desired_bundle_bytes=100))


def test_a_pattern_that_matches_nothing_fails(beam: ModuleType, tmp_path: Path) -> None:
    from tfrecord_engine.beam import ReadTFRecords

    with pytest.raises(Exception, match="no TFRecord file matches"):
        _run(beam, lambda p: p | ReadTFRecords(str(tmp_path / "nothing-*")))


def test_bad_arguments_fail_at_construction() -> None:
    from tfrecord_engine.beam import ReadTFRecords

    with pytest.raises(tfe.InvalidArgumentError, match="stop"):
        ReadTFRecords("x", on_damage="stop")
    with pytest.raises(tfe.InvalidArgumentError):
        ReadTFRecords("x", compression="lz4")
    with pytest.raises(tfe.InvalidArgumentError):
        ReadTFRecords("x", batch_size=0)
    with pytest.raises(tfe.InvalidArgumentError):
        ReadTFRecords([])


def test_compression_is_recognised_from_the_bytes(tmp_path: Path) -> None:
    from tfrecord_engine.beam import detect_compression

    for kind in ("", "GZIP", "ZLIB"):
        path = _write(tmp_path / f"f{kind}", range(3), kind)
        assert detect_compression(str(path)) is tfe.Compression(kind)
    assert detect_compression(str(_write(tmp_path / "e", range(0)))) is tfe.Compression.NONE


def test_two_workers_read_every_record_once(beam: ModuleType, tmp_path: Path) -> None:
    """The DoFns and their restrictions pickle (worker processes)."""
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.testing.util import assert_that, equal_to

    from tfrecord_engine.beam import ReadTFRecords

    for k in range(2):
        _write(
            tmp_path / f"p{k}",
            range(k * 300, k * 300 + 300),
            "GZIP",
            index=True,
            index_flush_every=20,
        )
    options = PipelineOptions(direct_num_workers=2, direct_running_mode="multi_processing")
    with beam.Pipeline(runner="DirectRunner", options=options) as p:
        got = p | ReadTFRecords(str(tmp_path / "p*"), desired_bundle_bytes=512)
        assert_that(got | beam.Map(_number), equal_to(list(range(600))))


def test_pieces_are_typed_numpy_free_and_small(tmp_path: Path) -> None:
    """A task carries record numbers as ints (pickled per element), not arrays."""
    from tfrecord_engine.hosts.beam.pieces import plan_file

    path = _write(tmp_path / "g", range(1000), "GZIP", index=True, index_flush_every=10)
    task = plan_file(str(path), tfe.Compression.GZIP, "raise", 1000)
    assert task.cuts is not None
    assert all(type(c) is int for c in (*task.pieces, *task.cuts))
    assert set(task.pieces) <= set(task.cuts)
    assert list(task.cuts) == list(range(10, 1000, 10))
    assert np.all(np.diff(task.pieces) > 0)


def test_a_file_that_changed_after_planning_fails_loudly(tmp_path: Path) -> None:
    from tfrecord_engine.hosts.beam.pieces import plan_file
    from tfrecord_engine.hosts.beam.read import ReadOptions, ReadPieces

    path = _write(tmp_path / "a", range(10))
    task = plan_file(str(path), tfe.Compression.NONE, "raise", 100)
    _write(path, range(12))  # replaced by a longer file (and its index rebuilt on open)
    reader = ReadPieces(ReadOptions("auto", None, "raise", None, False, 100))
    with pytest.raises(tfe.StaleIndexError, match=r"had 10 records .* it has 12 now"):
        reader._dataset(task)


@pytest.mark.parametrize("compression", [None, "ZLIB"])
def test_a_split_while_the_dofn_reads_hands_the_rest_to_another_worker(
    tmp_path: Path, compression: str | None
) -> None:
    """The DoFn reads under Beam's thread-safe tracker; the runner splits mid-read."""
    from apache_beam.runners.sdf_utils import RestrictionTrackerView, ThreadsafeRestrictionTracker

    from tfrecord_engine.hosts.beam.pieces import PieceProvider, plan_file
    from tfrecord_engine.hosts.beam.read import ReadOptions, ReadPieces

    path = _write(tmp_path / "a", range(5000), compression, index=True, index_flush_every=100)
    task = plan_file(str(path), tfe.Compression(compression or ""), "raise", 1 << 30)
    provider = PieceProvider()
    reader = ReadPieces(ReadOptions("auto", None, "raise", None, False, 1 << 30))
    reader.setup()

    def read(piece: Any, split_after: int | None = None) -> tuple[list[int], Any]:
        tracker = ThreadsafeRestrictionTracker(provider.create_tracker(piece))
        got, residual = [], None
        # The DoFn yields chunks of records (one element each, flattened downstream).
        for chunk in reader.process(task, tracker=RestrictionTrackerView(tracker)):
            got += [_number(record) for record in chunk]
            if split_after is not None and residual is None and len(got) >= split_after:
                _primary, residual = tracker.try_split(0.5)
        tracker.check_done()
        return got, residual

    first, residual = read(provider.initial_restriction(task), split_after=1500)
    assert residual is not None
    if compression:
        assert residual.start % 100 == 0  # a restart point
    rest, _ = read(residual)
    assert first + rest == list(range(5000))
    assert len(first) < 5000


def test_a_chunk_claim_takes_what_the_range_still_holds() -> None:
    """One ``try_claim`` per chunk: it claims up to the range's end, and a split after
    it cuts only after the claimed records, so the reader knows what it owns."""
    from tfrecord_engine.hosts.beam.pieces import Claim, Piece, RecordTracker

    tracker = RecordTracker(Piece(0, 100, None))
    assert tracker.try_claim(Claim(0, 30))
    primary, residual = tracker.try_split(0.5)
    assert primary.stop == residual.start > 29
    stop = tracker.current_restriction().stop
    assert tracker.try_claim(Claim(30, 1000))  # a chunk that runs past the split
    assert tracker.current_restriction().stop == stop
    assert not tracker.try_claim(Claim(stop, stop + 10))
    tracker.check_done()
