"""Reliability vs TensorFlow: appended files, damage policies and deliberate differences.

- GZIP appends (one member per append) read identically in TensorFlow.
- Where TensorFlow silently ends early (a torn header at the end, an unfinished GZIP
  stream) we raise; ``on_damage="stop"`` returns exactly TensorFlow's records and
  reports the damage.
- On a damaged record TensorFlow's ``ignore_errors()`` drops the rest of the file;
  ``on_damage="skip"`` returns every intact record, TensorFlow's records among them.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.records.recovery import DamagePolicy
from tfrecord_engine.testing.records import record_lists


def _tf_read(
    tf: ModuleType, path: Path, compression: str = "", ignore_errors: bool = False
) -> tuple[list[bytes], str | None]:
    ds = tf.data.TFRecordDataset(str(path), compression_type=compression)
    if ignore_errors:
        ds = ds.ignore_errors()
    out: list[bytes] = []
    try:
        for r in ds:
            out.append(r.numpy())
    except tf.errors.DataLossError as exc:
        return out, str(exc)
    return out, None


def _ours(
    path: Path, compression: str = "", policy: DamagePolicy = "raise"
) -> tuple[list[bytes], list[tfe.DamageReport]]:
    reports: list[tfe.DamageReport] = []
    got = [
        bytes(r)
        for r in tfe.read_records(
            path, compression, on_damage=policy, on_damage_report=reports.append
        )
    ]
    return got, reports


@given(batches=st.lists(record_lists(max_records=5, max_size=300), min_size=1, max_size=4))
def test_gzip_appends_read_identically_in_tensorflow(
    tf: ModuleType, tmp_path_factory: pytest.TempPathFactory, batches: list[list[bytes]]
) -> None:
    path = tmp_path_factory.mktemp("append") / "a.tfrecord.gz"
    for batch in batches:
        with tfe.TFRecordWriter(path, "GZIP", append=True) as w:
            w.write_many(batch)
    expected = [r for batch in batches for r in batch]
    assert _tf_read(tf, path, "GZIP") == (expected, None)
    assert _ours(path, "GZIP") == (expected, [])


@pytest.mark.parametrize("stray", [1, 5, 11])
def test_torn_header_tensorflow_ends_silently_we_raise_or_stop(
    tf: ModuleType, tmp_path: Path, stray: int
) -> None:
    records = [b"a", b"bb", b"ccc"]
    path = tmp_path / "torn.tfrecord"
    path.write_bytes(framing.frame_many(records) + framing.frame(b"dddd")[:stray])
    assert _tf_read(tf, path) == (records, None)  # TensorFlow: no error at all
    with pytest.raises(tfe.TruncatedRecordError):
        _ours(path)
    got, [report] = _ours(path, policy="stop")
    assert got == records
    assert report.bytes_skipped == stray


def test_unfinished_gzip_stream_tensorflow_ends_silently_we_raise_or_stop(
    tf: ModuleType, tmp_path: Path
) -> None:
    records = [b"x" * 100, b"y" * 200]
    co = zlib.compressobj(-1, zlib.DEFLATED, 31, 9)
    path = tmp_path / "unfinished.gz"
    path.write_bytes(co.compress(framing.frame_many(records)) + co.flush(zlib.Z_SYNC_FLUSH))
    assert _tf_read(tf, path, "GZIP") == (records, None)
    with pytest.raises(tfe.TruncatedRecordError, match="end marker"):
        _ours(path, "GZIP")
    got, [report] = _ours(path, "GZIP", "stop")
    assert got == records
    assert "end marker" in report.reason


@pytest.mark.parametrize("damaged", [0, 3, 9])
def test_skip_recovers_what_ignore_errors_drops(
    tf: ModuleType, tmp_path: Path, damaged: int
) -> None:
    records = [bytes([i]) * (10 + i) for i in range(10)]
    frames = [bytearray(framing.frame(r)) for r in records]
    frames[damaged][14] ^= 0x40  # data byte: a data CRC error
    path = tmp_path / "mid.tfrecord"
    path.write_bytes(b"".join(frames))
    theirs, err = _tf_read(tf, path)
    assert theirs == records[:damaged]
    assert err is not None
    assert "corrupted record" in err
    got, _ = _ours(path, policy="stop")
    assert got == theirs
    # ignore_errors() gives up on the rest of the file; skip does not.
    theirs_ignoring, _ = _tf_read(tf, path, ignore_errors=True)
    assert theirs_ignoring == records[:damaged]
    got, [report] = _ours(path, policy="skip")
    assert got == records[:damaged] + records[damaged + 1 :]
    assert report.record_index == damaged


def test_tensorflow_stops_at_a_record_less_gzip_member(tf: ModuleType, tmp_path: Path) -> None:
    """TF quirk our appends avoid: a member that inflates to nothing ends its read."""

    def member(recs: list[bytes]) -> bytes:
        co = zlib.compressobj(-1, zlib.DEFLATED, 31, 9)
        return co.compress(framing.frame_many(recs)) + co.flush()

    path = tmp_path / "m.gz"
    path.write_bytes(member([b"x"]) + member([]) + member([b"y"]))
    assert _tf_read(tf, path, "GZIP") == ([b"x"], None)
    assert list(tfe.read_records(path, "GZIP")) == [b"x", b"y"]  # we read every member
    # Appending to a zero-record file, or appending nothing, never leaves such a member.
    fresh = tmp_path / "a.gz"
    tfe.TFRecordWriter(fresh, "GZIP").close()
    tfe.TFRecordWriter(fresh, "GZIP", append=True).close()
    with tfe.TFRecordWriter(fresh, "GZIP", append=True) as w:
        w.write(b"z")
    tfe.TFRecordWriter(fresh, "GZIP", append=True).close()
    with tfe.TFRecordWriter(fresh, "GZIP", append=True) as w:
        w.write(b"w")
    assert _tf_read(tf, fresh, "GZIP") == ([b"z", b"w"], None)
