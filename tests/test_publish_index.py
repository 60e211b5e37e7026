"""Publishing data with its index (issue 29, item 7): a failure writing the index either
publishes nothing or says that the data was published without its index, and never
leaves the previous version's index beside the new data.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.errors import IndexPublishError
from tfrecord_engine.index.placement import index_path_for
from tfrecord_engine.testing.faults import OPERATIONS, FaultyOps, writer_with_ops

PREVIOUS = [b"previous-%d" % i for i in range(40)]
NEW = [bytes([i % 251]) * (30 + i % 7) for i in range(300)]


def _write_previous(path: Path) -> None:
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(PREVIOUS)


def _write_new(path: Path, ops: FaultyOps) -> None:
    with writer_with_ops(ops, path, index=True) as w:
        w.write_many(NEW[:100])
        w.write(NEW[100])
        w.write_many(NEW[101:])


def _leftovers(folder: Path) -> list[str]:
    """Hidden temporary files left in ``folder`` or its index folder."""
    found = [p.name for p in folder.glob(".*.tmp-*")]
    return found + [p.name for p in (folder / ".tfeidx").glob(".*.tmp-*")]


def _index_pairs_with_data(path: Path) -> bool:
    """Whether the index readers find first (if any) describes the data as it is."""
    try:
        idx = tfe.Index.load(path)
    except FileNotFoundError:
        return False
    data = [bytes(r) for r in tfe.read_records(path)]
    assert idx.lengths.tolist() == [len(r) for r in data]
    assert [bytes(r) for r in tfe.RecordDataset(str(path), verify=False)] == data
    return True


def _clean_counts(tmp_path: Path) -> dict[str, int]:
    d = tmp_path / "count"
    d.mkdir()
    _write_previous(d / "data.tfrecord")
    ops = FaultyOps()
    _write_new(d / "data.tfrecord", ops)
    return dict(ops.calls)


@pytest.mark.parametrize("op", ["open_new", "write", "flush", "fsync", "close"])
def test_index_write_failure_publishes_nothing(tmp_path: Path, op: str) -> None:
    """The index is written (and synced) before the data is renamed: a full disk there
    leaves the previous version with its own index."""
    counts = _clean_counts(tmp_path)
    path = tmp_path / "data.tfrecord"
    _write_previous(path)
    # The index file's call is the writer's last of its kind before the renames.
    with pytest.raises(IndexPublishError, match="nothing was published") as info:
        _write_new(path, FaultyOps(op, counts[op]))
    err = info.value
    assert isinstance(err, OSError)
    assert err.errno == errno.ENOSPC
    assert not err.published
    assert err.path == str(path)
    assert err.index_path == index_path_for(str(path))
    assert [bytes(r) for r in tfe.read_records(path)] == PREVIOUS
    assert _index_pairs_with_data(path)
    assert _leftovers(tmp_path) == []


def test_index_rename_failure_says_the_data_was_published_without_it(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord"
    _write_previous(path)
    with pytest.raises(IndexPublishError, match="published without its index") as info:
        _write_new(path, FaultyOps("replace", 2))  # 1: the data's rename; 2: the index's
    assert info.value.published
    assert info.value.errno == errno.ENOSPC
    assert f"tfr index {path}" in str(info.value)
    assert [bytes(r) for r in tfe.read_records(path)] == NEW
    assert not _index_pairs_with_data(path)  # no index: the previous one is gone too
    assert _leftovers(tmp_path) == []
    assert [bytes(r) for r in tfe.RecordDataset(str(path), verify=False)] == NEW


def test_every_failure_leaves_the_data_with_its_own_index_or_none(tmp_path: Path) -> None:
    counts = _clean_counts(tmp_path)
    # The index goes through the writer's file operations (so a full disk reaches it
    # where it reaches the data): a second file created, a second rename.
    assert counts["open_new"] == 2
    assert counts["replace"] == 2
    cases = [(op, n) for op in OPERATIONS for n in range(1, counts.get(op, 0) + 1)]
    for op, n in cases:
        d = tmp_path / f"{op}-{n}"
        d.mkdir()
        path = d / "data.tfrecord"
        _write_previous(path)
        with pytest.raises(OSError, match="injected failure") as info:
            _write_new(path, FaultyOps(op, n))
        data = [bytes(r) for r in tfe.read_records(path)]
        assert data in (PREVIOUS, NEW), (op, n)
        if isinstance(info.value, IndexPublishError):
            assert info.value.published == (data == NEW), (op, n)
        _index_pairs_with_data(path)  # the index found, if any, is the data's
        assert _leftovers(d) == [], (op, n)


@pytest.mark.parametrize("mode", ["in place", "append"])
def test_in_place_index_failure_says_written_without_index(tmp_path: Path, mode: str) -> None:
    """``atomic=False`` and appends write the data under its path: an index failure
    then says so, and removes the previous version's index."""
    path = tmp_path / "data.tfrecord"
    _write_previous(path)
    ops = FaultyOps()
    kwargs = {"atomic": mode != "in place", "append": mode == "append"}
    with writer_with_ops(ops, path, index=True, **kwargs) as w:
        w.write_many(NEW)
    want = [*PREVIOUS, *NEW] if mode == "append" else NEW
    assert [bytes(r) for r in tfe.read_records(path)] == want
    assert _index_pairs_with_data(path)
    failing = writer_with_ops(FaultyOps("open_new", 1), path, index=True, **kwargs)
    with pytest.raises(IndexPublishError, match="written without its index") as info, failing:
        failing.write_many(NEW)
    assert info.value.published
    want = [*want, *NEW] if mode == "append" else NEW
    assert [bytes(r) for r in tfe.read_records(path)] == want
    assert not _index_pairs_with_data(path)
    assert _leftovers(tmp_path) == []


# ---- a real full disk ----------------------------------------------------------------


@contextlib.contextmanager
def _small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace')}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_a_real_full_disk_while_writing_only_the_index(tmp_path: Path) -> None:
    """The data fills the disk exactly and its index does not fit (the previous version,
    an empty file, frees no block when replaced): nothing is published, the previous
    version keeps its own index, and no temporary file is left."""
    with _small_tmpfs(tmp_path / "small", "256k") as disk:
        path = disk / "data.tfrecord"
        with tfe.TFRecordWriter(path, index=True):
            pass
        st = os.statvfs(disk)
        free = st.f_bavail * st.f_frsize
        target = free - 100  # the new data takes every free block, with room to spare
        count = target // 1016 - 1
        filler = target - count * 1016 - 16
        records = [bytes([i % 251]) * 1000 for i in range(count)] + [b"f" * filler]
        writer = tfe.TFRecordWriter(path, index=True)
        with pytest.raises(IndexPublishError, match="nothing was published") as info, writer:
            writer.write_many(records)
        assert info.value.errno == errno.ENOSPC
        assert path.stat().st_size == 0  # the previous version
        assert _index_pairs_with_data(path)
        assert _leftovers(disk) == []
        # With room again, the same write publishes both.
        os.remove(path)
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(records[:-20])
        assert _index_pairs_with_data(path)
