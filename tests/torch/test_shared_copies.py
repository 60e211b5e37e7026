"""One in-memory copy per machine for a shuffled epoch under DataLoader workers.

``RecordIterableDataset`` runs each worker's epoch through ``RecordDataset.epoch``
(the chunk sizes and in-memory copies of ``batches``); in workers the whole-file copies
are shared segments in ``/dev/shm`` (``data/held_shared.py``). These tests check that
the workers map the same segment, that every record comes exactly once, that a changed
file is read again, and that no segment is left after a test, a killed worker, a normal
exit or a killed parent.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data import held_shared
from tfrecord_engine.data.held import Held
from tfrecord_engine.data.held_shared import NO_COPY, SharedCopies, shared_copy
from tfrecord_engine.data.local_source import LocalFileRecords

from ..optional import require
from ..shards import settled_shards, write_settled

torch = require("torch")
from torch.utils.data import DataLoader, Dataset  # noqa: E402 - after the skip

from tfrecord_engine.torch import RecordIterableDataset  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm"),
    pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning"),
]

SPEC: dict[str, Any] = {
    "i": tfe.FixedLenFeature([], "int64"),
    "s": tfe.FixedLenFeature([], "string"),
}
SIZES = (900, 601)
N = sum(SIZES)


def _write(path: Path, first: int, n: int, tag: bytes = b"a") -> None:
    write_settled(path, (_record(i, tag) for i in range(first, first + n)))


def _record(i: int, tag: bytes = b"a") -> bytes:
    return tfe.encode_example({"i": [i], "s": [tag * 8]})


@pytest.fixture
def paths(tmp_path: Path) -> list[str]:
    return settled_shards(tmp_path, SIZES, _record)


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[None]:
    """Every test leaves /dev/shm as it found it (segments of this test's loaders)."""
    before = set(held_shared.segments())
    yield
    gc.collect()
    assert set(held_shared.segments()) <= before


def _mapped(pid: int) -> set[str]:
    """The shared-copy segments that process ``pid`` maps."""
    with open(f"/proc/{pid}/maps", encoding="utf-8") as f:
        return {
            os.path.basename(line.split()[-1])
            for line in f
            if held_shared.PREFIX in line and not line.rstrip().endswith("(deleted)")
        }


def _ids(batch: Any) -> list[int]:
    got: list[int] = batch["i"].tolist()
    assert list(batch["s"]) == [b"a" * 8] * len(got)
    return got


def test_two_workers_share_one_copy_and_deliver_every_record_once(paths: list[str]) -> None:
    ds = tfe.RecordDataset(paths, features=SPEC)
    it = RecordIterableDataset(ds, 32, shuffle=True, seed=5)
    inodes: list[set[int]] = []
    for epoch in range(2):
        loader = iter(DataLoader(it, batch_size=None, num_workers=2))
        seen: list[int] = []
        for k, batch in enumerate(loader):
            seen += _ids(batch)
            if k == 4:
                names = it._copies.names()
                assert len(names) == len(paths)  # one segment per file, for all workers
                workers = [w.pid for w in loader._workers]  # type: ignore[attr-defined]
                for pid in workers:
                    assert _mapped(pid) == set(names)  # each worker maps the same ones
                inodes.append({os.stat(f"/dev/shm/{n}").st_ino for n in names})
        assert sorted(seen) == list(range(N))
        # (Another dataset: workers forked from a process that holds a kept copy of
        # its own would read that copy, shared with it copy-on-write.)
        plain = tfe.RecordDataset(paths, features=SPEC)
        want = [b["i"].tolist() for b in plain.batches(32, True, 5, epoch, in_memory=False)]
        assert sorted(seen) == sorted(i for b in want for i in b)
        del loader
    # Workers are new each epoch; the second epoch attached the first one's segments.
    assert inodes[0] == inodes[1]
    token = it._copies.token
    del it
    gc.collect()
    assert not [n for n in held_shared.segments() if token in n]


def test_map_style_workers_share_the_random_reads_copies(paths: list[str]) -> None:
    # DataLoader(ds, shuffle=True, num_workers=2) over the dataset itself: each worker's
    # random reads reach a quarter of each file, which is then read whole once for the
    # machine (data/random_holds.py), and both workers map that one segment.
    ds = tfe.RecordDataset(paths, features=SPEC)
    seen: list[int] = []
    mapstyle = cast("Dataset[dict[str, Any]]", ds)  # (duck-typed)
    loader = iter(DataLoader(mapstyle, batch_size=16, shuffle=True, num_workers=2))
    for batch in loader:
        seen += batch["i"].tolist()
    assert sorted(seen) == list(range(N))
    share = ds._holds.share
    assert share is not None  # made as the loader forked its workers
    names = share.names()
    assert len(names) == len(paths)  # one segment per file, for both workers
    # The main process read nothing at random: no private copy there.
    assert not any(getattr(r, "_auto", False) for r in ds._readers or [])
    del loader, ds, mapstyle, share
    gc.collect()
    assert not [n for n in held_shared.segments() if n in names]


def test_main_process_epochs_keep_private_copies(paths: list[str]) -> None:
    ds = tfe.RecordDataset(paths, features=SPEC)
    it = RecordIterableDataset(ds, 32, shuffle=True, seed=1)
    got = sorted(i for b in it for i in _ids(b))
    assert got == list(range(N))
    assert it._copies.names() == []


def test_a_changed_file_is_read_again(paths: list[str]) -> None:
    ds = tfe.RecordDataset(paths, features=SPEC)
    it = RecordIterableDataset(ds, 32, shuffle=True, seed=3)
    loader = DataLoader(it, batch_size=None, num_workers=2)
    assert sorted(i for b in loader for i in _ids(b)) == list(range(N))
    first = it._copies.names()
    # Rewritten in place (same inode, same layout), other bytes, dated back.
    _write(Path(paths[0] + ".other"), 0, SIZES[0], tag=b"b")
    with open(paths[0] + ".other", "rb") as f:
        data = f.read()
    with open(paths[0], "r+b") as f:
        f.write(data)
    old = time.time_ns() - 30_000_000_000
    os.utime(paths[0], ns=(old, old))
    tags = {i: s for b in loader for i, s in zip(b["i"].tolist(), b["s"], strict=True)}
    assert sorted(tags) == list(range(N))
    assert {tags[i] for i in range(SIZES[0])} == {b"b" * 8}
    assert {tags[i] for i in range(SIZES[0], N)} == {b"a" * 8}
    now = it._copies.names()
    assert len(now) == len(paths)
    assert [n for n in first if n.split("-")[5] == str(os.stat(paths[0]).st_ino)] != [
        n for n in now if n.split("-")[5] == str(os.stat(paths[0]).st_ino)
    ]


def _reader(path: str) -> LocalFileRecords:
    ds = tfe.RecordDataset([path])
    reader = ds._open()[0]
    assert isinstance(reader, LocalFileRecords)
    reader._keep_dataset = ds  # type: ignore[attr-defined]  # (alive with the reader)
    return reader


def test_an_incomplete_segment_is_filled_again(paths: list[str]) -> None:
    owner = SharedCopies()
    reader = _reader(paths[0])
    first = shared_copy(reader, True, owner, None)
    assert isinstance(first, Held)
    (name,) = owner.names()
    # As a worker killed while filling leaves it: no trailer, the bytes half there.
    path = os.path.join(held_shared.SHM_DIR, name)
    with open(path, "r+b") as f:
        f.seek(-16, os.SEEK_END)
        f.write(bytes(16))
        f.seek(100)
        f.write(bytes(1000))
    again = shared_copy(reader, True, owner, None)
    assert isinstance(again, Held)
    assert again.all_ok
    with open(paths[0], "rb") as f:
        assert bytes(again.array) == f.read(reader.index.data_size)
    owner.close()
    assert owner.names() == []


def test_attached_copies_are_the_filled_bytes(paths: list[str]) -> None:
    owner = SharedCopies()
    reader = _reader(paths[1])
    filled = shared_copy(reader, True, owner, None)
    attached = shared_copy(reader, True, owner, None)
    assert isinstance(filled, Held)
    assert isinstance(attached, Held)
    assert attached.all_ok
    assert filled.all_ok
    assert np.array_equal(filled.array, attached.array)
    assert attached.identity == filled.identity
    owner.close()


def test_over_the_machine_budget_the_file_is_read_from_disk(paths: list[str]) -> None:
    owner = SharedCopies()
    reader = _reader(paths[0])
    assert shared_copy(reader, True, owner, 100) is NO_COPY
    assert owner.names() == []
    # held without a copy: the records come from the file, the same bytes.
    want = reader.read(np.arange(10))
    reader.hold(True, owner, 100)
    assert reader._copy is None
    assert reader.read(np.arange(10)) == want
    reader.release()


def test_without_a_segment_the_copy_is_private(
    paths: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(held_shared, "SHM_DIR", str(tmp_path / "absent"))
    owner = SharedCopies()
    reader = _reader(paths[0])
    assert shared_copy(reader, True, owner, None) is None
    reader.hold(True, owner, None)
    assert reader._copy is not None  # a private copy, as without sharing
    reader.release()


def test_an_unsettled_file_is_not_shared(paths: list[str]) -> None:
    os.utime(paths[0])  # changed now: within a timestamp's granularity of the read
    owner = SharedCopies()
    reader = _reader(paths[0])
    copy = shared_copy(reader, True, owner, None)
    assert isinstance(copy, Held)  # used by this process for this epoch
    assert copy.identity is None
    assert owner.names() == []


_PARENT = """
import os, signal, sys
import tfrecord_engine as tfe
from torch.utils.data import DataLoader
from tfrecord_engine.torch import RecordIterableDataset
spec = {"i": tfe.FixedLenFeature([], "int64"), "s": tfe.FixedLenFeature([], "string")}
ds = tfe.RecordDataset(sys.argv[2:], features=spec)
it = RecordIterableDataset(ds, 32, shuffle=True, seed=7)
loader = iter(DataLoader(it, batch_size=None, num_workers=2))
if sys.argv[1] == "kill-worker":
    n = len(next(loader)["i"])
    count = len(it._copies.names())
    # PyTorch's SIGCHLD handler would raise its error at any line, even after the loop:
    # without it, the dead worker is reported by the loop itself.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        os.kill(loader._workers[0].pid, signal.SIGKILL)
        for b in loader:
            n += len(b["i"])
    except RuntimeError as exc:  # ("exited unexpectedly")
        assert "DataLoader worker" in str(exc), exc
    except (ConnectionError, EOFError):
        pass  # (its other reports: the dead worker's tensor was being fetched)
    else:
        raise AssertionError("no error for the killed worker")
    n = 1501  # (the epoch did not finish)
else:
    n = sum(len(b["i"]) for b in loader)
    count = len(it._copies.names())
print(it._copies.token, count, n, flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("how", ["exit", "kill-worker", "kill"])
def test_no_segment_is_left_after_the_parent_ends(paths: list[str], how: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_PARENT), how, *paths],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.stdout, done.stderr[-3000:]
    token, count, n = done.stdout.split()
    assert (int(count), int(n)) == (len(paths), N)
    left = [s for s in held_shared.segments() if token in s]
    if how != "kill":
        assert done.returncode == 0, done.stderr[-3000:]
        assert left == []
    else:
        assert done.returncode == -signal.SIGKILL
        assert len(left) == len(paths)  # a killed parent cannot clean up ...
        SharedCopies()  # ... the next use on the machine does
        assert [s for s in held_shared.segments() if token in s] == []
