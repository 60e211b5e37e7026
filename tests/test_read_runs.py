"""In-order reads of local files: records that follow each other in a file are copied as
one run (across files too), and epochs in file order take the copies that shuffled epochs
kept instead of reading the files again."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data import local_source as source
from tfrecord_engine.storage import safecopy

SPEC = {"x": tfe.FixedLenFeature([], "int64"), "s": tfe.FixedLenFeature([], "string")}


def _write(path: Path, first: int, n: int) -> None:
    with tfe.TFRecordWriter(str(path)) as w:
        for i in range(first, first + n):
            w.write(tfe.encode_example({"x": [i], "s": [b"v" * (i % 50)]}))
    old = time.time_ns() - 60_000_000_000  # settled: copies of it may be kept
    os.utime(path, ns=(old, old))


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    paths = [tmp_path / "a.tfrecord", tmp_path / "b.tfrecord", tmp_path / "c.tfrecord"]
    for k, p in enumerate(paths):
        _write(p, 1000 * k, 300)
    return [str(p) for p in paths]


def _xs(batches: Any) -> list[int]:
    return [int(x) for b in batches for x in b["x"]]


@pytest.mark.skipif(not safecopy.available(), reason="no process_vm_readv here")
def test_records_back_to_back_are_copied_as_one_run_per_file(
    files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = tfe.RecordDataset(files)
    want = [r for f in files for r in tfe.RecordDataset(f).read_raw(np.arange(300))]
    spans_per_call: list[int] = []
    real = safecopy.gather

    def counted(out: Any, spans: Any) -> int | None:
        spans_per_call.append(len(spans))
        return real(out, spans)

    monkeypatch.setattr(safecopy, "gather", counted)  # (the module gather.py calls)
    # An in-order stretch across the three files: three runs, not 700 spans.
    assert ds.read_raw(np.arange(50, 750)) == want[50:750]
    assert spans_per_call == [3]
    # Runs broken where records do not follow each other in a file: 6 runs here.
    idx = np.array([3, 4, 5, 9, 10, 299, 300, 301, 650, 2])
    assert ds.read_raw(idx) == [want[i] for i in idx.tolist()]
    assert spans_per_call[1:] == [6]  # [3-5] [9-10] [299] [300-301] (two files) [650] [2]
    spans = ds.read_spans(np.arange(290, 320))
    assert spans is not None
    assert spans.records() == want[290:320]
    assert spans_per_call[2:] == [2]
    ds.close()


@pytest.mark.skipif(not safecopy.available(), reason="no process_vm_readv here")
def test_a_file_cut_under_an_in_order_run_is_a_stale_index(files: list[str]) -> None:
    ds = tfe.RecordDataset(files)
    assert len(ds.read_raw(np.arange(0, 900, 7))) > 0  # mapped: gathers from now on
    size = os.path.getsize(files[1])
    with open(files[1], "r+b") as f:
        f.truncate(size // 2)
    with pytest.raises(tfe.StaleIndexError, match=r"b\.tfrecord: record \d+ at offset"):
        ds.read_raw(np.arange(250, 650))
    ds.close()


def test_an_in_order_epoch_takes_the_kept_copies(
    files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    real = source.LocalFileRecords._read_all

    def counted(self: source.LocalFileRecords, verify: bool, *joint: Any) -> Any:
        reads.append(os.path.basename(self.path))
        return real(self, verify, *joint)

    monkeypatch.setattr(source.LocalFileRecords, "_read_all", counted)
    ds = tfe.RecordDataset(files, features=SPEC)
    plain = tfe.RecordDataset(files, features=SPEC)
    want = _xs(plain.batches(64, in_memory=False))
    # Copies turned off: nothing held, nothing read whole.
    it = ds.batches(64, in_memory=False)
    next(it)
    assert [r._copy is not None for r in ds._open()] == [False] * 3  # type: ignore[union-attr]
    it.close()
    assert _xs(ds.batches(64, shuffle=True, seed=1)) != want
    assert sorted(reads) == ["a.tfrecord", "b.tfrecord", "c.tfrecord"]
    # In order after it: the kept copies are taken (checked unchanged), not read again.
    xs: list[int] = []
    held: list[list[bool]] = []
    for b in ds.batches(64):
        xs += [int(x) for x in b["x"]]
        held.append([r._copy is not None for r in ds._open()])  # type: ignore[union-attr]
    assert [True] * 3 in held  # (each taken as the chunks reach it)
    assert xs == want
    assert len(reads) == 3
    assert [r._copy is not None for r in ds._open()] == [False] * 3  # type: ignore[union-attr]
    # A changed file is not served from its kept copy: read again (and found damaged).
    at = int(tfe.Index.build(files[2]).offsets[10]) + 12 + 3
    stat = os.stat(files[2])
    with open(files[2], "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(files[2], ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000))
    with pytest.raises(tfe.CorruptedRecordError, match="record 10 "):
        _xs(ds.batches(64))
    ds.close()
    plain.close()
