"""One read path over many files: batches across files come back as ``Spans`` (issue 30).

A batch of records from several uncompressed local files is copied into one buffer with
each record's CRC footer and handed to the decoder as ``(buf, starts, ends)``
(:class:`tfrecord_engine.data.spans.Spans`), from the files' maps or from copies held in
memory for a shuffled epoch; before, such a batch was cut into one ``bytes`` per record
and joined again for the decoder. Damage is still found and named.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data.local_source import LocalFileRecords
from tfrecord_engine.data.spans import Spans, check_spans
from tfrecord_engine.records import framing

SPEC = {"i": tfe.FixedLenFeature([], "int64"), "s": tfe.FixedLenFeature([], "string")}
PER = 200


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    paths = []
    for f in range(3):
        path = str(tmp_path / f"part-{f}.tfrecord")
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(
                tfe.encode_example({"i": [f * PER + j], "s": [b"x" * (j % 7)]}) for j in range(PER)
            )
        paths.append(path)
    return paths


def _records(spans: Spans) -> list[bytes]:
    return spans.records()


def test_a_batch_across_files_is_read_as_spans(files: list[str]) -> None:
    ds = tfe.RecordDataset(files, SPEC)
    idx = np.random.default_rng(0).permutation(len(ds))[:300]
    spans = ds.read_spans(idx)
    assert spans is not None  # (None before: the batch spans three files)
    assert isinstance(spans, Spans)
    assert _records(spans) == ds.read_raw(idx)
    got = ds[idx]
    assert got["i"].tolist() == idx.tolist()
    samples = ds.__getitems__(idx)
    assert [int(s["i"]) for s in samples] == idx.tolist()


def test_held_files_are_read_as_spans(files: list[str]) -> None:
    ds = tfe.RecordDataset(files, SPEC)
    readers = cast("list[LocalFileRecords]", ds._open())
    for r in readers:
        r.hold()
    try:
        idx = np.random.default_rng(1).permutation(len(ds))[:300]
        spans = ds.read_spans(idx)
        assert spans is not None
        assert _records(spans) == ds.read_raw(idx)
        assert ds[idx]["i"].tolist() == idx.tolist()
    finally:
        for r in readers:
            r.release()


@pytest.mark.parametrize("held", [False, True])
def test_damage_in_a_batch_across_files_is_named(files: list[str], held: bool) -> None:
    index = tfe.Index.build(files[1])
    at = int(index.offsets[17]) + 12 + 2  # a data byte of record 17 of the second file
    ds = tfe.RecordDataset(files, SPEC)
    assert len(ds) == 3 * PER
    with open(files[1], "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x55]))
    readers = cast("list[LocalFileRecords]", ds._open())
    if held:
        for r in readers:
            r.hold()
    idx = np.arange(0, 3 * PER, 2) + 1  # record PER + 17 among them, in all three files
    with pytest.raises(tfe.CorruptedRecordError, match=r"part-1\.tfrecord.*record 17\b"):
        ds.read_spans(idx)
    with pytest.raises(tfe.CorruptedRecordError, match=r"record 17\b"):
        ds[idx]
    for r in readers if held else []:
        r.release()


def test_check_spans_names_the_first_bad_record() -> None:
    buf = bytearray()
    starts, ends = [], []
    for k in range(3):
        data = b"rec%d" % k
        starts.append(len(buf) + framing.HEADER_SIZE)
        ends.append(len(buf) + framing.HEADER_SIZE + len(data))
        buf += framing.frame(data)
    spans = Spans(np.frombuffer(bytes(buf), np.uint8), np.array(starts), np.array(ends))
    local, offsets = np.array([7, 8, 9]), np.array([0, 99, 200], np.uint64)
    check_spans(spans, path="f.tfrecord", local=local, offsets=offsets)  # intact
    buf[starts[1]] ^= 0xFF
    spans = Spans(np.frombuffer(bytes(buf), np.uint8), np.array(starts), np.array(ends))
    with pytest.raises(tfe.CorruptedRecordError, match="record 8") as err:
        check_spans(spans, path="f.tfrecord", local=local, offsets=offsets)
    assert (err.value.path, err.value.record_index, err.value.offset) == ("f.tfrecord", 8, 99)
