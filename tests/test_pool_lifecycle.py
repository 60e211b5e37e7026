"""Decode pools and read-ahead after errors and interrupts (issue 29, items 2 and 5).

An epoch interrupted inside ``next`` (Ctrl-C caught by a notebook) must never hand its
workers to the next epoch out of step, must not go on with a gap, and must let go of
its held copies; ``close()`` must stop workers and free their pipes and shared memory
at once, whatever state the epoch was left in. The garbage collector is off in these
tests: nothing may depend on it, and the exceptions are kept (as a notebook keeps the
last one, with its frames).
"""

from __future__ import annotations

import concurrent.futures
import gc
import os
import pickle
import signal
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data import epochs
from tfrecord_engine.data.procpool import DecodePool
from tfrecord_engine.data.source import LocalFileRecords
from tfrecord_engine.errors import WorkerError
from tfrecord_engine.records import framing

FEATURES: dict[str, Any] = {
    "label": tfe.FixedLenFeature([], "int64"),
    "x": tfe.FixedLenFeature([2], "float32"),
}
N = 700
BATCH = 16


def _record(i: int) -> bytes:
    return tfe.encode_example({"label": i, "x": np.array([i, -i], np.float32)})


@pytest.fixture(scope="module")
def data_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("lifecycle") / "d.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([_record(i) for i in range(N)])
    return str(path)


@pytest.fixture(autouse=True)
def small_chunks_no_gc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Chunks of 4 batches: an epoch has 11 of them, several in flight at once.
    monkeypatch.setattr(epochs, "DEFAULT_CHUNK_RECORDS", 4 * BATCH)
    monkeypatch.setattr(epochs, "CHUNK_BYTES", 4 * BATCH * 40)
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _children() -> set[int]:
    """Processes whose parent is this one and that are not reaped yet."""
    me = str(os.getpid())
    out = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        if stat.rsplit(")", 1)[1].split()[1] == me:
            out.add(int(name))
    return out


def _pipes_and_maps() -> set[str]:
    """This process's descriptors of pipes and of decode pools' shared memory."""
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor
        if target.startswith("pipe:") or "tfe-pool-" in target:
            out.add(f"{fd} -> {target}")
    return out


class _Leaks:
    """What this test started: processes and descriptors beyond those at its start."""

    def __init__(self) -> None:
        self.children = _children()
        self.fds = _pipes_and_maps()

    def check(self, ds: tfe.RecordDataset) -> None:
        """Only the workers, pipes and maps of ``ds``'s pools are left."""
        pools = [p for p in ds._pools if p.owner == os.getpid()]
        assert _children() - self.children == {p.pid for pool in pools for p in pool._procs}
        # Per pool: a task and a result pipe per worker, and the shared memory.
        assert len(_pipes_and_maps() - self.fds) == sum(2 * p.workers + 1 for p in pools)


def _labels(batches: Any) -> list[list[int]]:
    return [b["label"].tolist() for b in batches]


def _interrupt_at(
    monkeypatch: pytest.MonkeyPatch,
    owner: Any,
    name: str,
    k: int,
    *,
    after: bool = False,
    when: Callable[..., bool] = lambda *a, **kw: True,
) -> list[int]:
    """Makes the ``k``-th call of ``owner.name`` (among those ``when`` accepts) raise
    ``KeyboardInterrupt``, before or ``after`` the real call, as a Ctrl-C would there."""
    real = getattr(owner, name)
    calls = [0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not when(*args, **kwargs):
            return real(*args, **kwargs)
        calls[0] += 1
        if calls[0] == k and not after:
            raise KeyboardInterrupt
        out = real(*args, **kwargs)
        if calls[0] == k:
            raise KeyboardInterrupt
        return out

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def _body_read(self: Connection, size: int, *args: Any) -> bool:
    return size > 4  # a message's body (its 4-byte length read before it)


@pytest.mark.parametrize(
    "point",
    [
        # Before the reply is read: it stays in the pipe (the case).
        (DecodePool, "receive", 1, False),
        (DecodePool, "receive", 3, False),
        # A chunk sent whose reply nobody waits for.
        (DecodePool, "submit", 1, True),
        (DecodePool, "submit", 4, True),
        # Inside a read: the length is consumed, the body is not (1, 2: the workers'
        # "ready" while the pool starts; then replies to chunks).
        (Connection, "_recv", 1, False),
        (Connection, "_recv", 2, False),
        (Connection, "_recv", 4, False),
        (Connection, "_recv", 7, False),
    ],
    ids=lambda p: f"{p[1]}-{p[2]}{'-after' if p[3] else ''}",
)
def test_an_interrupted_epoch_leaves_the_next_one_exact(
    monkeypatch: pytest.MonkeyPatch, data_path: str, point: tuple[Any, str, int, bool]
) -> None:
    owner, name, k, after = point
    leaks = _Leaks()
    ds = tfe.RecordDataset(data_path, features=FEATURES)
    try:
        want = {e: _labels(ds.batches(BATCH, shuffle=True, seed=3, epoch=e)) for e in (0, 1)}
        when = _body_read if name == "_recv" else (lambda *a, **kw: True)
        calls = _interrupt_at(monkeypatch, owner, name, k, after=after, when=when)
        got: list[list[int]] = []
        epoch: list[Any] = []

        def run() -> None:
            epoch.append(ds.batches(BATCH, shuffle=True, seed=3, epoch=0, workers=2))
            got.extend(b["label"].tolist() for b in epoch[0])  # (kept as they come)

        with pytest.raises(KeyboardInterrupt) as info:
            run()
        it = epoch[0] if epoch else None
        assert calls[0] >= k
        monkeypatch.undo()
        leaks.check(ds)
        # The next epochs, other and same, are what workers=0 gives, batch for batch.
        assert _labels(ds.batches(BATCH, shuffle=True, seed=3, epoch=1, workers=2)) == want[1]
        assert _labels(ds.batches(BATCH, shuffle=True, seed=3, epoch=0, workers=2)) == want[0]
        if it is not None:
            # The interrupted epoch does not go on with a gap, nor end silently; it
            # resumes exactly from its state.
            with pytest.raises(WorkerError, match="resume it exactly"):
                next(it)
            with pytest.raises(WorkerError):
                next(it)
            rest = ds.batches(BATCH, shuffle=True, seed=3, state=it.get_state(), workers=2)
            assert got + _labels(rest) == want[0]
        del info
    finally:
        ds.close()
    leaks.check(ds)


def test_an_interrupt_while_draining_an_abandoned_epoch(
    monkeypatch: pytest.MonkeyPatch, data_path: str
) -> None:
    leaks = _Leaks()
    ds = tfe.RecordDataset(data_path, features=FEATURES)
    try:
        want = _labels(ds.batches(BATCH, shuffle=True, seed=5, epoch=1))
        it = ds.batches(BATCH, shuffle=True, seed=5, epoch=0, workers=2)
        next(it)
        # Ctrl-C lands while close() reads the replies of the chunks in flight.
        _interrupt_at(monkeypatch, Connection, "_recv", 1, when=_body_read)
        with pytest.raises(KeyboardInterrupt) as info:
            it.close()
        monkeypatch.undo()
        leaks.check(ds)
        assert _labels(ds.batches(BATCH, shuffle=True, seed=5, epoch=1, workers=2)) == want
        del info
    finally:
        ds.close()
    leaks.check(ds)


@pytest.mark.parametrize("readahead", [0, 2])
def test_an_interrupted_epoch_without_workers(
    monkeypatch: pytest.MonkeyPatch, data_path: str, readahead: int
) -> None:
    ds = tfe.RecordDataset(data_path, features=FEATURES)
    try:
        want = {e: _labels(ds.batches(BATCH, shuffle=True, seed=4, epoch=e)) for e in (0, 1)}
        (reader,) = ds._open()
        assert isinstance(reader, LocalFileRecords)
        if readahead:
            # Ctrl-C while the consumer waits for the read-ahead thread's chunk.
            _interrupt_at(monkeypatch, concurrent.futures.Future, "result", 2)
        else:
            _interrupt_at(monkeypatch, epochs, "prepare_chunk", 2)
        it = ds.batches(BATCH, shuffle=True, seed=4, epoch=0, readahead=readahead, in_memory=True)
        got: list[list[int]] = []
        with pytest.raises(KeyboardInterrupt) as info:
            got.extend(b["label"].tolist() for b in it)
        monkeypatch.undo()
        assert len(got) == 1  # the first chunk (of one batch: prepare.ramp)
        # The copy of the file that the epoch held is let go at once.
        assert reader._holders == 0
        # Going on would skip the lost chunk (or end the epoch early): it raises.
        with pytest.raises(WorkerError, match="resume it exactly"):
            next(it)
        rest = ds.batches(BATCH, shuffle=True, seed=4, state=it.get_state(), readahead=readahead)
        assert got + _labels(rest) == want[0]
        assert (
            _labels(ds.batches(BATCH, shuffle=True, seed=4, epoch=1, readahead=readahead))
            == (want[1])
        )
        del info
    finally:
        ds.close()


def test_close_after_a_failed_epoch_stops_the_workers_at_once(tmp_path: Path) -> None:
    path = tmp_path / "d.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([_record(i) for i in range(N)])
    leaks = _Leaks()
    ds = tfe.RecordDataset(str(path), features=FEATURES, on_damage="raise")
    # Damaged after it was indexed: found while reading, by the workers.
    data = bytearray(path.read_bytes())
    data[int(ds.indexes[0].offsets[300]) + framing.HEADER_SIZE] ^= 0xFF
    path.write_bytes(bytes(data))
    it = ds.batches(BATCH, workers=2)
    got: list[Any] = []
    with pytest.raises(tfe.CorruptedRecordError) as info:
        got.extend(it)
    assert len(got) == 300 // BATCH
    pids = _children() - leaks.children
    assert len(pids) == 2
    ds.close()
    # No worker, pipe or shared memory is left, though the epoch and its exception
    # are still referenced.
    assert _children() - leaks.children == set()
    assert _pipes_and_maps() - leaks.fds == set()
    # The batch that holds the damage stays where it was (never a hang, never a gap).
    with pytest.raises(tfe.CorruptedRecordError):
        next(it)
    it.close()
    del info


def test_close_stops_the_workers_of_a_running_epoch(data_path: str) -> None:
    leaks = _Leaks()
    ds = tfe.RecordDataset(data_path, features=FEATURES)
    want = _labels(ds.batches(BATCH, shuffle=True, seed=1, epoch=0))
    it = ds.batches(BATCH, shuffle=True, seed=1, epoch=0, workers=2)
    head = [next(it)["label"].tolist() for _ in range(2)]
    assert len(_children() - leaks.children) == 2
    ds.close()  # chunks are in flight on both workers
    assert _children() - leaks.children == set()
    assert _pipes_and_maps() - leaks.fds == set()
    # The batches already prepared may still come; then it raises (and never hangs).
    with pytest.raises(WorkerError, match="were stopped"):  # noqa: PT012 - the loop is the case
        for batch in it:
            head.append(batch["label"].tolist())
    assert head == want[: len(head)]
    with pytest.raises(WorkerError):
        next(it)
    # The dataset reopens; its state resumes the epoch exactly.
    rest = ds.batches(BATCH, shuffle=True, seed=1, state=it.get_state(), workers=2)
    assert head + _labels(rest) == want
    ds.close()
    assert _children() - leaks.children == set()


def test_close_after_a_killed_worker_frees_every_pipe(data_path: str) -> None:
    leaks = _Leaks()
    ds = tfe.RecordDataset(data_path, features=FEATURES)
    it = ds.batches(BATCH, workers=2)
    next(it)
    os.kill(max(_children() - leaks.children), signal.SIGKILL)
    with pytest.raises(WorkerError, match="killed by signal 9") as info:
        list(it)
    # The broken pool is stopped by the epoch itself: its result pipes too.
    assert _pipes_and_maps() - leaks.fds == set()
    assert _children() - leaks.children == set()
    ds.close()
    del info


def test_an_interrupt_while_unpickling_a_result_keeps_no_view_of_the_slot(
    monkeypatch: pytest.MonkeyPatch, data_path: str
) -> None:
    leaks = _Leaks()
    ds = tfe.RecordDataset(data_path, features=FEATURES)
    want = _labels(ds.batches(BATCH))
    # Only the parent's unpickling of a slot passes buffers=.
    _interrupt_at(
        monkeypatch, pickle, "loads", 2, when=lambda *a, **kw: kw.get("buffers") is not None
    )
    it = ds.batches(BATCH, workers=1)
    with pytest.raises(KeyboardInterrupt) as info:
        list(it)
    monkeypatch.undo()
    # The reply was read whole: the pool is still in step and serves the next epoch.
    assert _labels(ds.batches(BATCH, workers=1)) == want
    ds.close()
    # The exception's frames held views of the shared memory; the map is gone anyway.
    assert _pipes_and_maps() - leaks.fds == set()
    assert _children() - leaks.children == set()
    del info
