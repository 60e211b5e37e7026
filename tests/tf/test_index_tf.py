"""TensorFlow reads our indexed (fully flushed) files; we index TensorFlow's files."""

from __future__ import annotations

import pathlib
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.testing.epochs import record_lists

_TMP = settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_TMP
@given(records=record_lists(), kind=st.sampled_from(["", "GZIP", "ZLIB"]), every=st.integers(1, 5))
def test_tensorflow_reads_files_written_with_index(
    tf: ModuleType, tmp_path: pathlib.Path, records: list[bytes], kind: str, every: int
) -> None:
    path = tmp_path / f"ours{kind}.tfrecord"
    with tfe.TFRecordWriter(path, kind, index=True, index_flush_every=every) as w:
        w.write_many(records)
    got = [t.numpy() for t in tf.data.TFRecordDataset(str(path), compression_type=kind)]
    assert got == records


@pytest.mark.parametrize("snapshots", [False, True])
@pytest.mark.parametrize("kind", ["", "GZIP", "ZLIB"])
def test_random_access_into_tensorflow_files(
    tf: ModuleType,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    snapshots: bool,
) -> None:
    from tfrecord_engine.data import compressed_source

    if snapshots:  # a "large" file: inflater snapshots instead of one whole decode
        monkeypatch.setattr(compressed_source, "MAX_UNINDEXED_BLOCK", 1000)
        monkeypatch.setattr(compressed_source, "SNAPSHOT_SPACING", 2000)
    records = [bytes([i % 256]) * (i % 97) for i in range(300)]
    path = tmp_path / f"tf{kind}.tfrecord"
    with tf.io.TFRecordWriter(str(path), kind) as w:
        for r in records:
            w.write(r)
    ds = tfe.RecordDataset(path, compression=kind)
    picks = [299, 0, 150, 7, 7]
    assert ds[picks] == [records[i] for i in picks]
    assert sorted(r for b in ds.batches(32, shuffle=True) for r in b) == sorted(records)


@pytest.mark.parametrize("layout", ["bgzip", "cat", "append"])
def test_multi_member_gzip_reads_as_tensorflow_reads_it(
    tf: ModuleType, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    import gzip

    from tfrecord_engine.data import compressed_source
    from tfrecord_engine.testing.members import bgzf, framed, members

    monkeypatch.setattr(compressed_source, "MAX_UNINDEXED_BLOCK", 3000)  # "large"
    monkeypatch.setattr(compressed_source, "SNAPSHOT_SPACING", 2000)
    records = [bytes([i % 256]) * (i * 37 % 3000) for i in range(400)]
    data = framed(records)
    path = tmp_path / f"{layout}.tfrecord.gz"
    if layout == "bgzip":
        path.write_bytes(bgzf(data, 4000))
    elif layout == "cat":
        path.write_bytes(members(data, [len(data) // 2]))
    else:
        for a in range(0, 400, 90):
            with gzip.open(path, "ab") as f:
                f.write(framed(records[a : a + 90]))
    theirs = [t.numpy() for t in tf.data.TFRecordDataset(str(path), compression_type="GZIP")]
    assert theirs == records
    ds = tfe.RecordDataset(path)
    assert len(ds.indexes[0].restarts) > 0
    picks = [399, 0, 200, 7, 7]
    assert ds[picks] == [theirs[i] for i in picks]
    assert sorted(r for b in ds.batches(32, shuffle=True) for r in b) == sorted(theirs)
