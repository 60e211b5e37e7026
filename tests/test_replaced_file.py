"""A dataset reads the file its index describes, or says it was replaced (issue 29, 4b).

A reader opens its file on first use and again after the descriptor budget closed it
(:mod:`tfrecord_engine.storage.descriptors`). Another file renamed over the path
between the index's check and such an open used to be read through the old index: with
``verify=False``, wrong records and no error. Now each open compares the descriptor's
device and inode with the index's ``file_stat`` (or, for an index never checked
against the file, with what the reader's first open found).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.storage import descriptors

N = 40


def _write(path: Path, tag: bytes, compression: str | None = None, *, index: bool = True) -> str:
    with tfe.TFRecordWriter(str(path), compression=compression, index=index) as w:
        w.write_many([tag + b"%04d" % i for i in range(N)])
    return str(path)


def _replace(path: str, tag: bytes, compression: str | None = None) -> None:
    """Another job publishing a new version: written aside, renamed over ``path``."""
    new = _write(Path(path).with_name("new-" + Path(path).name), tag, compression)
    os.replace(new, path)


# Each reads every record of the dataset.
READS: dict[str, Callable[[tfe.RecordDataset], object]] = {
    "getitem": lambda ds: [ds[i] for i in range(len(ds))],
    "getitem_list": lambda ds: ds[list(range(len(ds)))],
    "batches": lambda ds: list(ds.batches(8)),
    "shuffled": lambda ds: list(ds.batches(8, shuffle=True, seed=3, in_memory=False)),
    "in_memory": lambda ds: list(ds.batches(8, shuffle=True, seed=3, in_memory=True)),
}


@pytest.mark.parametrize("read", list(READS))
@pytest.mark.parametrize("shards", [1, 2])
def test_a_file_replaced_before_the_first_read_is_refused(
    tmp_path: Path, read: str, shards: int
) -> None:
    paths = [_write(tmp_path / f"part-{k}.tfrecord", b"old") for k in range(shards)]
    ds = tfe.RecordDataset(paths, verify=False)
    assert len(ds) == N * shards  # the indexes are loaded and checked; no file open yet
    size = os.path.getsize(paths[-1])
    _replace(paths[-1], b"new")  # the same size, other records
    assert os.path.getsize(paths[-1]) == size
    with pytest.raises(tfe.StaleIndexError, match="replaced since this dataset opened it") as e:
        READS[read](ds)  # before: the new file's records, through the old index
    assert paths[-1] in str(e.value)
    assert "tfr index" in str(e.value)
    # A dataset opened now reads the new file.
    assert tfe.RecordDataset(paths[-1])[N - 1] == b"new%04d" % (N - 1)


def test_a_replaced_gzip_file_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "part.tfrecord.gz", b"old", "GZIP")
    ds = tfe.RecordDataset(path, verify=False)
    assert len(ds) == N
    _replace(path, b"new", "GZIP")
    with pytest.raises(tfe.StaleIndexError, match="replaced since this dataset opened it") as e:
        ds[np.arange(N)]  # before: inflated from the new file's bytes at the old offsets
    assert path in str(e.value)


def _write_parts(path: Path, compression: str | None) -> str:
    """3 * N records ``old0000``... as three GZIP members (three blocks a reader
    inflates, and caches, one at a time) or one uncompressed file; no sidecar."""
    records = [b"old%04d" % i for i in range(3 * N)]
    if compression is None:
        with tfe.TFRecordWriter(str(path)) as w:
            w.write_many(records)
        return str(path)
    members = []
    for k in range(3):
        part = path.with_name(f"member-{k}.gz")
        with tfe.TFRecordWriter(str(part), compression=compression) as w:
            w.write_many(records[k * N : (k + 1) * N])
        members.append(part.read_bytes())
        part.unlink()
    path.write_bytes(b"".join(members))
    return str(path)


@pytest.mark.parametrize("compression", [None, "GZIP"])
@pytest.mark.parametrize("checked", [True, False])
def test_a_reader_reopens_only_the_file_it_first_read(
    tmp_path: Path, compression: str | None, checked: bool
) -> None:
    path = _write_parts(tmp_path / ("part.tfrecord" + (".gz" if compression else "")), compression)
    if checked:
        # A sidecar, checked against the file when loaded: the index's file_stat.
        tfe.Index.build(path).save(placement="hidden")
    # Else indexed in memory, never checked: the reader's first open is the reference.
    ds = tfe.RecordDataset(path, verify=False, save_index=False)
    assert ds[0] == b"old0000"
    # The budget closes every reader not in use; the next read opens the file again.
    descriptors.CACHE.make_room(0, everything=True)
    reader = ds._open()[0]
    assert (getattr(reader, "_fd", None), getattr(reader, "_map", None)) == (None, None)
    # Renamed away and back, linked, chmod-ed: the same file (only its ctime moved).
    os.rename(path, path + ".tmp")
    os.rename(path + ".tmp", path)
    os.link(path, path + ".link")
    os.chmod(path, 0o444)
    assert ds[[1, N + 1]] == [b"old0001", b"old%04d" % (N + 1)]
    descriptors.CACHE.make_room(0, everything=True)
    os.chmod(path, 0o644)
    _replace(path, b"new", compression)
    with pytest.raises(tfe.StaleIndexError, match="replaced since this dataset opened it") as e:
        ds[2 * N]  # before: read through the old index from the new file
    assert path in str(e.value)
