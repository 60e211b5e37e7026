"""The damage matrix: every bit flip, every truncation, random bursts, skip recovery.

Each case checks what came back against the originals: under ``"raise"`` and ``"stop"``
a prefix of the records, under ``"skip"`` exactly the records the damage did not touch,
and never a record that was not written at that position.
"""

from __future__ import annotations

import io
import random
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.records.compression import Compression, Decompressor, make_compressor
from tfrecord_engine.records.recovery import DamagePolicy
from tfrecord_engine.testing.damage import random_damage, record_spans
from tfrecord_engine.testing.faults import PipeStream

RECORDS = [b"", b"a", b"hello world", bytes(range(40)), b"\x00" * 7]
BLOB = framing.frame_many(RECORDS)
SPANS = record_spans(RECORDS)


def read_all(
    source: str | Path | BinaryIO, compression: str = "", policy: DamagePolicy = "raise"
) -> tuple[list[bytes], tfe.DataLossError | None, list[tfe.DamageReport]]:
    """Reads everything; returns the records, the error ("raise") and the reports."""
    reports: list[tfe.DamageReport] = []
    out: list[bytes] = []
    err = None
    try:
        for r in tfe.read_records(
            source, compression, on_damage=policy, on_damage_report=reports.append
        ):
            out.append(bytes(r))
    except tfe.DataLossError as e:
        err = e
    if policy != "raise":
        assert err is None, "stop/skip must never raise DataLossError"
    return out, err, reports


def _source(kind: str, blob: bytes, path: Path) -> str | BinaryIO:
    if kind == "file":
        path.write_bytes(blob)
        return str(path)
    if kind == "pipe":
        return PipeStream(blob, chunk=5)  # type: ignore[return-value]
    return io.BytesIO(blob)


def _compress(blob: bytes, kind: str) -> bytes:
    co = make_compressor(Compression(kind))
    return co.compress(blob) + co.flush()


def _record_at(offset: int, spans: list[tuple[int, int]]) -> int:
    return next(i for i, (a, b) in enumerate(spans) if a <= offset < b)


def _is_subsequence(got: list[bytes], originals: list[bytes]) -> bool:
    it = iter(originals)
    return all(any(g == o for o in it) for g in got)


@pytest.mark.parametrize("kind", ["file", "stream"])
def test_every_bit_flip_is_detected_and_attributed(tmp_path: Path, kind: str) -> None:
    size = len(BLOB)
    for bit in range(size * 8):
        bad = bytearray(BLOB)
        bad[bit // 8] ^= 1 << (bit % 8)
        k = _record_at(bit // 8, SPANS)
        start, end = SPANS[k]
        path = tmp_path / "flip.tfrecord"
        out, err, _ = read_all(_source(kind, bytes(bad), path))
        assert out == RECORDS[:k], bit
        assert err is not None, bit
        assert (err.record_index, err.offset) == (k, start), bit
        out, _, reports = read_all(_source(kind, bytes(bad), path), policy="stop")
        assert out == RECORDS[:k]
        [r] = reports
        assert (r.record_index, r.offset) == (k, start)
        assert r.bytes_skipped == (size - start if kind == "file" else None)
        assert r.path == (str(path) if kind == "file" else None)
        out, _, reports = read_all(_source(kind, bytes(bad), path), policy="skip")
        assert out == RECORDS[:k] + RECORDS[k + 1 :], bit
        [r] = reports
        assert (r.record_index, r.offset, r.bytes_skipped) == (k, start, end - start), bit


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_every_bit_flip_of_a_compressed_file_is_an_error_never_wrong_data(
    compression: str,
) -> None:
    comp = _compress(BLOB, compression)
    undetected = 0
    for bit in range(len(comp) * 8):
        bad = bytearray(comp)
        bad[bit // 8] ^= 1 << (bit % 8)
        out, err, _ = read_all(io.BytesIO(bytes(bad)), compression)
        assert out == RECORDS[: len(out)], bit
        if err is None:
            # Only header fields nothing checks (gzip mtime/XFL/OS) may change unnoticed,
            # and then the data is identical.
            assert out == RECORDS
            undetected += 1
        for policy in ("stop", "skip"):
            got, _, reports = read_all(io.BytesIO(bytes(bad)), compression, policy)
            assert _is_subsequence(got, RECORDS)
            assert bool(reports) == (err is not None)
    assert undetected < len(comp)  # header fields and padding bits only


def _short_records() -> list[bytes]:
    """30 short, repetitive records (8 to 27 bytes): a damaged deflate stream of them
    copies whole earlier frames, CRCs and all, through its back-references."""
    rng = random.Random(0)
    return [
        b"rec%04d-" % i + bytes(rng.choice(b"ab") for _ in range(rng.randrange(0, 20)))
        for i in range(30)
    ]


def test_skip_reads_a_compressed_member_ahead_once_for_all_its_damage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Records damaged before compression: each damage asks whether the member inflates
    # intact to its end; the answer is kept for the member, not read ahead again.
    rng = np.random.default_rng(50)
    records = _distinct_records(rng, 200, 300)
    frames = [bytearray(framing.frame(r)) for r in records]
    damaged = set(rng.choice(len(records), 50, replace=False).tolist())
    for i in damaged:
        _damage_record(rng, frames[i], int(rng.integers(0, 4)))
    snapshots: list[int] = []
    real = Decompressor.snapshot

    def counted(self: Decompressor) -> Any:
        snapshots.append(1)
        return real(self)

    monkeypatch.setattr(Decompressor, "snapshot", counted)
    blob = _compress(b"".join(frames), "GZIP")
    out, _, reports = read_all(io.BytesIO(blob), "GZIP", "skip")
    assert _is_subsequence(out, records)
    assert len(reports) > 20
    assert len(snapshots) <= 2  # (the member, and the end of the input)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_bit_flips_in_a_stream_of_short_records_never_make_or_repeat_records(
    compression: str,
) -> None:
    # Before: a flip made a record that was never written (an earlier record's header
    # inflated into an 8-byte record's data and CRC), under every policy; another made
    # "skip" return a record twice (found again by the resync scan in garbage).
    records = _short_records()
    blob = framing.frame_many(records)
    comp = _compress(blob, compression)
    for bit in range(len(comp) * 8):
        bad = bytearray(comp)
        bad[bit // 8] ^= 1 << (bit % 8)
        out, _, _ = read_all(io.BytesIO(bytes(bad)), compression)
        assert out == records[: len(out)], bit
        for policy in ("stop", "skip"):
            got, _, _ = read_all(io.BytesIO(bytes(bad)), compression, policy)
            assert _is_subsequence(got, records), (bit, policy)


@pytest.mark.parametrize("kind", ["file", "stream", "pipe"])
def test_truncation_at_every_offset(tmp_path: Path, kind: str) -> None:
    starts = [a for a, _ in SPANS] + [len(BLOB)]
    for cut in range(len(BLOB) + 1):
        k = sum(1 for _, b in SPANS if b <= cut)
        at_boundary = cut == starts[k]
        path = tmp_path / "cut.tfrecord"
        out, err, _ = read_all(_source(kind, BLOB[:cut], path))
        assert out == RECORDS[:k], cut
        if at_boundary:
            assert err is None, cut
        else:
            assert isinstance(err, tfe.TruncatedRecordError), cut
            assert (err.record_index, err.offset) == (k, starts[k])
        for policy in ("stop", "skip"):
            out, _, reports = read_all(_source(kind, BLOB[:cut], path), policy=policy)
            assert out == RECORDS[:k], (cut, policy)
            if at_boundary:
                assert reports == []
                continue
            [r] = reports
            assert (r.record_index, r.offset) == (k, starts[k])
            expected = cut - starts[k] if kind == "file" or policy == "skip" else None
            assert r.bytes_skipped == expected, (cut, policy)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_truncation_of_a_compressed_file_at_every_offset(compression: str) -> None:
    comp = _compress(BLOB, compression)
    for cut in range(len(comp) + 1):
        out, err, _ = read_all(io.BytesIO(comp[:cut]), compression)
        assert out == RECORDS[: len(out)]
        # Only the empty file and the whole file are complete (a GZIP file missing
        # only its trailer is an error here; TensorFlow accepts it).
        assert (err is None) == (cut in (0, len(comp))), cut
        out2, _, reports = read_all(io.BytesIO(comp[:cut]), compression, "stop")
        assert out2 == out
        assert len(reports) == (err is not None)


def _distinct_records(rng: np.random.Generator, n: int, max_size: int) -> list[bytes]:
    # Non-empty distinct random payloads: an accepted record identifies its position.
    return [bytes([i]) + rng.bytes(int(rng.integers(0, max_size))) for i in range(n)]


def test_ten_thousand_bursts_and_overwrites_accept_no_corrupt_record(tmp_path: Path) -> None:
    rng = np.random.default_rng(20260)
    records = _distinct_records(rng, 8, 100)
    blob = framing.frame_many(records)
    path = tmp_path / "burst.tfrecord"
    path.write_bytes(blob)
    # Damage keeps the size, so rewrite in place: truncating opens are slow on some disks.
    with open(path, "r+b") as f:
        _bursts(rng, records, blob, f, str(path))


def _bursts(
    rng: np.random.Generator, records: list[bytes], blob: bytes, f: BinaryIO, path: str
) -> None:
    spans = record_spans(records)
    changed = 0
    for case in range(10_000):
        damage = random_damage(rng, len(blob))
        bad = damage.apply(blob)
        diff = np.flatnonzero(np.frombuffer(bad, np.uint8) != np.frombuffer(blob, np.uint8))
        if diff.size == 0:
            continue  # an overwrite with the bytes already there
        changed += 1
        first, last = int(diff[0]), int(diff[-1])
        k = _record_at(first, spans)
        hit = {i for i, (a, b) in enumerate(spans) if a <= last and first < b}
        f.seek(0)
        f.write(bad)
        f.flush()
        for source in (path, io.BytesIO(bad)):
            out, err, _ = read_all(source)
            assert out == records[:k], (case, damage)
            assert err is not None, (case, damage)
            assert err.record_index == k, (case, damage)
        out, _, reports = read_all(path, policy="skip")
        # Exactly the untouched records come back, and the reports account for every
        # byte of the damaged ones.
        assert out == [r for i, r in enumerate(records) if i not in hit], (case, damage)
        lost = sum(spans[i][1] - spans[i][0] for i in hit)
        assert sum(r.bytes_skipped or 0 for r in reports) == lost, (case, damage)
    assert changed > 9_900


def _damage_record(rng: np.random.Generator, frame: bytearray, mode: int) -> None:
    n = len(frame)
    if mode == 0:  # length or length CRC
        frame[int(rng.integers(0, 12))] ^= 1 << int(rng.integers(0, 8))
    elif mode == 1:  # data or data CRC
        frame[int(rng.integers(12, n))] ^= 1 << int(rng.integers(0, 8))
    elif mode == 2:  # never written (zeros)
        frame[:] = bytes(n)
    else:  # garbage
        frame[:] = rng.bytes(n)


@pytest.mark.parametrize("n_damaged", [1, 5, 50])
@pytest.mark.parametrize("kind", ["file", "stream", "pipe", "GZIP"])
def test_skip_recovers_every_intact_record(tmp_path: Path, n_damaged: int, kind: str) -> None:
    rng = np.random.default_rng(n_damaged)
    records = _distinct_records(rng, 200, 300)
    frames = [bytearray(framing.frame(r)) for r in records]
    damaged = set(rng.choice(len(records), n_damaged, replace=False).tolist())
    for i in damaged:
        _damage_record(rng, frames[i], int(rng.integers(0, 4)))
    blob = b"".join(frames)
    if kind == "GZIP":
        gz = tmp_path / "d.tfrecord.gz"
        gz.write_bytes(_compress(blob, "GZIP"))
        source: str | BinaryIO = str(gz)
        compression = "GZIP"
    else:
        source = _source(kind, blob, tmp_path / "d.tfrecord")
        compression = ""
    out, _, reports = read_all(source, compression, "skip")
    assert out == [r for i, r in enumerate(records) if i not in damaged]
    assert sum(r.bytes_skipped or 0 for r in reports) == sum(len(frames[i]) for i in damaged)
    assert 1 <= len(reports) <= n_damaged


def test_skip_steps_over_a_damaged_record_whole_even_if_it_holds_a_frame() -> None:
    # A record whose payload is itself a framed record: with the outer header intact,
    # the inner frame must not come back as a phantom record.
    inner = framing.frame(b"inner")
    outer = bytearray(framing.frame(b"pre" + inner + b"post"))
    outer[12] ^= 0x01  # damage "pre": outer data CRC fails, inner frame still valid
    blob = framing.frame(b"A") + bytes(outer) + framing.frame(b"B")
    out, _, reports = read_all(io.BytesIO(blob), policy="skip")
    assert out == [b"A", b"B"]
    assert [r.bytes_skipped for r in reports] == [len(outer)]


def test_without_a_callback_damage_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "w.tfrecord"
    path.write_bytes(BLOB[:-3])
    with pytest.warns(tfe.DamageWarning, match=r"record 4 at offset") as caught:
        assert list(tfe.read_records(path, on_damage="stop")) == RECORDS[:4]
    warning = caught[0].message
    assert isinstance(warning, tfe.DamageWarning)
    assert warning.report.record_index == 4
    with pytest.warns(tfe.DamageWarning):
        assert list(tfe.read_records(io.BytesIO(BLOB[:-3]), on_damage="skip")) == RECORDS[:4]


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_skip_after_deflate_damage_stops_and_says_so(compression: str) -> None:
    comp = bytearray(_compress(framing.frame_many([b"x" * 3000] * 20), compression))
    comp[len(comp) // 2] ^= 0xFF
    out, _, reports = read_all(io.BytesIO(bytes(comp)), compression, "skip")
    assert out == [b"x" * 3000] * len(out)
    [r] = reports
    assert "cannot be resynchronized" in r.reason
    assert r.bytes_skipped is None


def test_unfinished_gzip_stream_under_stop_and_skip() -> None:
    co = zlib.compressobj(-1, zlib.DEFLATED, 31, 9)
    comp = co.compress(BLOB) + co.flush(zlib.Z_SYNC_FLUSH)  # no end marker, no trailer
    policies: tuple[DamagePolicy, ...] = ("stop", "skip")
    for policy in policies:
        out, _, reports = read_all(io.BytesIO(comp), "GZIP", policy)
        assert out == RECORDS
        [r] = reports
        assert "end marker" in r.reason
        assert r.offset == len(BLOB)


def test_skip_on_a_stream_with_a_record_larger_than_the_scan_window() -> None:
    big = bytes(range(256)) * 5000  # 1.28 MB, larger than the 1 MiB look-ahead
    blob = b"garbage!" * 3 + framing.frame(big) + framing.frame(b"tail")
    for source in (io.BytesIO(blob), PipeStream(blob, chunk=65536)):
        out, _, reports = read_all(source, policy="skip")  # type: ignore[arg-type]
        assert out == [big, b"tail"]
        assert [r.bytes_skipped for r in reports] == [24]


def test_skip_on_a_long_damaged_stream_region() -> None:
    rng = np.random.default_rng(3)
    blob = framing.frame(b"first") + rng.bytes(3 << 20) + framing.frame(b"last")
    out, _, reports = read_all(PipeStream(blob, chunk=1 << 16), policy="skip")  # type: ignore[arg-type]
    assert out == [b"first", b"last"]
    assert [r.bytes_skipped for r in reports] == [3 << 20]


def test_skip_with_verify_false_still_resynchronizes_on_bad_headers(tmp_path: Path) -> None:
    bad = bytearray(BLOB)
    bad[SPANS[2][0] + 3] ^= 0x10
    path = tmp_path / "nv.tfrecord"
    path.write_bytes(bytes(bad))
    for source in (str(path), io.BytesIO(bytes(bad))):
        reports: list[tfe.DamageReport] = []
        out = [
            bytes(r)
            for r in tfe.read_records(
                source, verify=False, on_damage="skip", on_damage_report=reports.append
            )
        ]
        assert out == RECORDS[:2] + RECORDS[3:]
        assert len(reports) == 1


def test_stream_resync_passes_over_a_candidate_with_bad_data() -> None:
    bad = bytearray(framing.frame(b"looks fine"))
    bad[-1] ^= 0x80  # header valid, data CRC wrong: a candidate the scan must reject
    blob = b"junk!" + bytes(bad) + framing.frame(b"ok")
    out, _, reports = read_all(io.BytesIO(blob), policy="skip")
    assert out == [b"ok"]
    assert [r.bytes_skipped for r in reports] == [5 + len(bad)]


def test_compressible_records_larger_than_the_decompression_chunk() -> None:
    records = [bytes(3 << 20), b"after"]  # 3 MiB of zeros inflate from a few KB
    comp = _compress(framing.frame_many(records), "GZIP")
    assert read_all(io.BytesIO(comp), "GZIP", "skip")[0] == records
