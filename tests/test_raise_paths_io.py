"""The remaining deliberate errors of the I/O modules, each reached on purpose.

Index arguments and damaged sidecars, datasets whose files change under them (plain and
GZIP, with and without restart points), a foreign text index, a failing index write,
and argument checks. Every one must be one of our errors (or the ``OSError`` that
caused it), naming what was wrong.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data.dataset import open_records
from tfrecord_engine.data.sampler import epoch_order
from tfrecord_engine.records import framing
from tfrecord_engine.testing.faults import FaultyOps, writer_with_ops

RECORDS = [b"record-%03d" % i * 20 for i in range(300)]


def _write(path: Path, compression: str = "", *, index: bool = False) -> str:
    with tfe.TFRecordWriter(str(path), compression, index=index) as w:
        w.write_many(RECORDS)
    return str(path)


def test_index_arrays_must_match() -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="1-D arrays of one length"):
        tfe.Index("x", [0, 18], [2], data_size=37, fingerprint=0)


def test_index_blob_of_the_wrong_size() -> None:
    idx = tfe.Index("x", [0], [1], data_size=17, fingerprint=0)
    body = idx.to_bytes()[:-4] + b"\0" * 8  # valid checksum, wrong length
    blob = body + struct.pack("<I", framing.mask_crc(framing.crc32c(body)))
    with pytest.raises(tfe.IndexFormatError, match="expected 68 for 1 records"):
        tfe.Index.from_bytes(blob, "x")


def test_reader_of_a_missing_file() -> None:
    idx = tfe.Index("/nonexistent/file.tfrecord", [], [], data_size=0, fingerprint=0)
    with pytest.raises(FileNotFoundError, match="nonexistent"):
        open_records(idx)


def test_file_grown_after_indexing(tmp_path: Path) -> None:
    path = _write(tmp_path / "g.tfrecord")
    ds = tfe.RecordDataset(path)
    assert len(ds) == len(RECORDS)  # indexed, not mapped yet
    with open(path, "ab") as f:
        f.write(framing.frame(b"late"))
    with pytest.raises(tfe.StaleIndexError, match="changed while in use"):
        ds[0]


def test_text_index_splitting_records_differently(tmp_path: Path) -> None:
    path = tmp_path / "t.tfrecord"
    path.write_bytes(framing.frame(b"ab") + framing.frame(b"cde"))
    text = tmp_path / "t.idx"
    text.write_text("0 19\n19 18\n")  # back to back, but not where the records are
    with pytest.raises(tfe.StaleIndexError, match="header announces 2 bytes, the index says 3"):
        tfe.Index.from_text(text, path)


def test_dataset_argument_checks(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.tfrecord")
    ds = tfe.RecordDataset(path)
    with pytest.raises(tfe.InvalidArgumentError, match="no features"):
        ds.decoder  # noqa: B018
    with pytest.raises(tfe.InvalidArgumentError, match="readahead"):
        ds.batches(4, readahead=-1)
    masked = tfe.RecordDataset(path, {"mask": tfe.VarLenFeature("int64")})
    with pytest.raises(tfe.InvalidArgumentError, match="also a feature name"):
        masked.batches(4, pad_remainder=True)
    with pytest.raises(tfe.InvalidArgumentError, match="must be >= 0"):
        epoch_order(5, seed=-1)
    with pytest.raises(tfe.InvalidArgumentError, match="index_flush_every"):
        tfe.TFRecordWriter(str(tmp_path / "b.tfrecord"), index=True, index_flush_every=0)


def test_iteration_raises_on_read_time_damage(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.tfrecord")
    ds = tfe.RecordDataset(path)
    assert len(ds) == len(RECORDS)
    with open(path, "r+b") as f:
        f.seek(framing.HEADER_SIZE + 3)
        f.write(b"!")
    with pytest.raises(tfe.CorruptedRecordError, match="record 0 at offset 0"):
        list(ds)


def test_failed_index_write_fails_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "w.tfrecord"
    w = writer_with_ops(FaultyOps("write", 1), str(path), index=True)
    with pytest.raises(OSError, match="injected failure"):
        w.write_many(RECORDS)
    with pytest.raises(tfe.WriterFailedError):
        w.close()
    assert not path.exists()


def _deflate_damage(path: str, at: float) -> None:
    with open(path, "r+b") as f:
        size = f.seek(0, 2)
        f.seek(int(size * at))
        f.write(b"\xff" * 16)


@pytest.mark.parametrize("restarts", [True, False])
def test_compressed_file_damaged_after_indexing(tmp_path: Path, restarts: bool) -> None:
    path = _write(tmp_path / "c.tfrecord.gz", "GZIP", index=restarts)
    ds = tfe.RecordDataset(path, compression="GZIP")
    assert len(ds) == len(RECORDS)
    _deflate_damage(path, 0.5)
    with pytest.raises(tfe.DataLossError, match=r"c\.tfrecord\.gz"):
        ds[np.arange(len(RECORDS))]
    reports: list[tfe.DamageReport] = []
    skip = tfe.RecordDataset(
        path, compression="GZIP", on_damage="skip", on_damage_report=reports.append
    )
    got = [r for b in skip.batches(50) for r in b]
    assert got == [r for r in RECORDS if r in got]
    assert reports


@pytest.mark.parametrize("restarts", [True, False])
def test_compressed_file_cut_after_indexing(tmp_path: Path, restarts: bool) -> None:
    path = _write(tmp_path / "t.tfrecord.gz", "GZIP", index=restarts)
    ds = tfe.RecordDataset(path, compression="GZIP")
    assert len(ds) == len(RECORDS)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2] + bytes(len(data) - len(data) // 2))
    with pytest.raises(tfe.DataLossError):
        ds[np.arange(len(RECORDS))]


def _two_stream_gzip(tmp_path: Path) -> tuple[str, list[bytes]]:
    records = [bytes([i % 256]) * (i % 50 + 1) for i in range(300)]
    parts = []
    for half in (records[:150], records[150:]):
        with tfe.TFRecordWriter(str(tmp_path / "part"), "GZIP") as w:
            w.write_many(half)
        parts.append((tmp_path / "part").read_bytes())
    path = tmp_path / "joined.tfrecord.gz"
    path.write_bytes(b"".join(parts))  # two streams: read forward only
    return str(path), records


@pytest.mark.parametrize("cut", [False, True])
def test_forward_only_stream_damaged_after_indexing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: bool
) -> None:
    from tfrecord_engine.data import compressed_source

    monkeypatch.setattr(compressed_source, "MAX_UNINDEXED_BLOCK", 500)
    path, records = _two_stream_gzip(tmp_path)
    ds = tfe.RecordDataset(path, compression="GZIP")
    assert len(ds) == len(records)
    data = Path(path).read_bytes()
    if cut:
        Path(path).write_bytes(data[: len(data) // 3])
        error: type[tfe.DataLossError] = tfe.TruncatedRecordError
    else:
        Path(path).write_bytes(data[:40] + b"\xff" * 32 + data[72:])
        error = tfe.CorruptedRecordError
    with pytest.raises(error, match="joined"):
        ds[np.arange(len(records))]


def test_encoder_rejects_mixed_bytes_values() -> None:
    mixed = np.array([b"a", 1], dtype=object)
    with pytest.raises(tfe.InvalidArgumentError, match="cannot mix int into a bytes feature"):
        tfe.encode_example({"s": mixed})
