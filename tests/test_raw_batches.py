"""Raw batches ``ds[list]`` of local files: records made straight from the buffer the
batch was copied into (one unpack, no copy of the whole batch to ``bytes`` first), that
buffer reused from one batch to the next; the same records as one by one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.data import gather as gather_module
from tfrecord_engine.data.spans import Spans, unpacked_spans
from tfrecord_engine.storage import safecopy


def _write(path: Path, first: int, n: int) -> list[bytes]:
    # Sizes from 0 bytes up: empty records, single bytes (cached objects in CPython)
    # and records over 999 bytes (four-digit sizes).
    rows = [bytes([i % 251]) * ((i * 37) % 1500) for i in range(first, first + n)]
    with tfe.TFRecordWriter(str(path), index=True) as w:
        w.write_many(rows)
    return rows


@pytest.fixture
def shards(tmp_path: Path) -> tuple[list[str], list[bytes]]:
    paths, rows = [], []
    for k in range(3):
        p = tmp_path / f"s{k}.tfrecord"
        rows += _write(p, 1000 * k, 400 + 50 * k)
        paths.append(str(p))
    return paths, rows


def test_random_batches_equal_the_records(shards: tuple[list[str], list[bytes]]) -> None:
    paths, rows = shards
    ds = tfe.RecordDataset(paths)
    rng = np.random.default_rng(3)
    for size in (1, 2, 5, 64, 1024):
        idx = rng.integers(0, len(rows), size)
        assert ds[idx] == [rows[i] for i in idx.tolist()]
        assert ds[idx.tolist()] == [rows[i] for i in idx.tolist()]
    ds.close()


@pytest.mark.skipif(not safecopy.available(), reason="no process_vm_readv here")
def test_batches_reuse_one_gather_buffer(shards: tuple[list[str], list[bytes]]) -> None:
    paths, rows = shards
    ds = tfe.RecordDataset(paths)
    g = ds._opened().gather
    assert isinstance(g, gather_module.LocalFilesGather)
    rng = np.random.default_rng(5)
    first = rng.permutation(len(rows))[:300]
    got = ds[first]
    assert len(g._scratch) == 1
    buffer = g._scratch[0]
    second = rng.permutation(len(rows))[:200]
    again = ds[second]
    # The same one, not a new one per batch.
    assert len(g._scratch) == 1
    assert g._scratch[0] is buffer
    # Records returned before are their own bytes, not views of the reused buffer.
    assert got == [rows[i] for i in first.tolist()]
    assert again == [rows[i] for i in second.tolist()]
    ds.close()


def test_a_damaged_record_in_a_random_batch_is_located(
    shards: tuple[list[str], list[bytes]],
) -> None:
    paths, _ = shards
    at = int(tfe.Index.build(paths[1]).offsets[7]) + 12 + 5
    with open(paths[1], "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0xFF]))
    ds = tfe.RecordDataset(paths)
    with pytest.raises(tfe.CorruptedRecordError, match="record 7 "):
        ds[[3, 400 + 7, 900]]
    with tfe.RecordDataset(paths[1]) as one, pytest.raises(tfe.CorruptedRecordError):
        one[[1, 7, 300]]
    ds.close()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1200), st.integers(0, 1100)), min_size=0, max_size=40),
    st.integers(0, 2000),
)
def test_unpacked_spans_equal_slices(pieces: list[tuple[int, int]], lead: int) -> None:
    # (gap, size) per span, gaps and sizes of one to four digits.
    starts, ends, at = [], [], lead
    for gap, size in pieces:
        at += gap
        starts.append(at)
        ends.append(at + size)
        at += size
    buf = np.frombuffer(np.random.default_rng(len(pieces)).bytes(at + 3), np.uint8)
    s = np.array(starts, np.int64)
    e = np.array(ends, np.int64)
    want = [buf[a:b].tobytes() for a, b in zip(starts, ends, strict=True)]
    assert unpacked_spans(buf, s, e) == want
    assert Spans(buf, s, e).records() == want
    # Out of order (a shuffled batch's spans): sliced one by one, the same bytes.
    assert unpacked_spans(buf, s[::-1], e[::-1]) == want[::-1]
