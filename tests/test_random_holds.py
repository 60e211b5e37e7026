"""Random reads read a file whole once they took a quarter of it (``data/random_holds.py``).

``ds[i]``, ``ds[list]`` and raw random batches outside an epoch count the records they
read per file; at a quarter the file is read whole (CRCs checked once) and later reads
slice that copy. These tests check when a copy is made and when not (epochs, large
datasets, ``random_holds=False``, files still changing), that every value is the same
either way, that damage is still reported where it lies, that a file changed under a
copy is noticed, that the copies stay within the budget, and that a forked process
shares one copy per file instead of making its own.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data import held, held_shared, random_holds
from tfrecord_engine.data.local_source import LocalFileRecords

from .shards import settle, settled_shards, write_settled

SPEC: dict[str, Any] = {
    "i": tfe.FixedLenFeature([], "int64"),
    "v": tfe.VarLenFeature("float32"),
    "s": tfe.FixedLenFeature([], "string"),
}
SIZES = (400, 240, 160)
N = sum(SIZES)


def _example(i: int) -> bytes:
    return tfe.encode_example(
        {"i": [i], "v": np.full(i % 7, i, np.float32), "s": [b"r%d" % i * (1 + i % 5)]}
    )


def _write(path: Path, first: int, n: int) -> None:
    """Written just now: not settled (see tests/shards.py)."""
    with tfe.TFRecordWriter(str(path), index=True) as w:
        w.write_many(_example(i) for i in range(first, first + n))


@pytest.fixture
def paths(tmp_path: Path) -> list[str]:
    return settled_shards(tmp_path, SIZES, _example)


def _readers(ds: tfe.RecordDataset) -> list[LocalFileRecords]:
    ds.indexes  # noqa: B018 - opens the files
    readers = ds._readers
    assert readers is not None
    return [r for r in readers if isinstance(r, LocalFileRecords)]


def _copied(ds: tfe.RecordDataset) -> list[bool]:
    return [r._auto and r._copy is not None for r in _readers(ds)]


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for k, x in a.items():
        y = b[k]
        if isinstance(x, tfe.SparseValue):
            for part in ("indices", "values", "dense_shape"):
                np.testing.assert_array_equal(getattr(x, part), getattr(y, part))
        else:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_a_quarter_of_a_file_read_at_random_makes_its_copy(paths: list[str]) -> None:
    ds = tfe.RecordDataset(paths, features=SPEC)
    first = SIZES[0]
    for i in range(first // 4 - 1):
        assert ds[i]["i"] == i
    assert _copied(ds) == [False, False, False]
    assert ds[first // 4]["i"] == first // 4
    assert _copied(ds) == [True, False, False]
    # Later reads slice the copy, and give the same values as the file.
    plain = tfe.RecordDataset(paths, features=SPEC, random_holds=False)
    for i in (0, 5, first - 1):
        _same(ds[i], plain[i])
    assert _copied(plain) == [False, False, False]


@pytest.mark.parametrize("mapped", [False, True], ids=["guarded", "mapped"])
@pytest.mark.parametrize("features", [None, SPEC], ids=["raw", "parsed"])
def test_random_batches_over_shards_give_the_same_records(
    paths: list[str], features: dict[str, Any] | None, mapped: bool
) -> None:
    ds = tfe.RecordDataset(paths, features=features, mapped_reads=mapped)
    plain = tfe.RecordDataset(paths, features=features, random_holds=False)
    rng = np.random.default_rng(3)
    for size in (1, 7, 64, 300):
        for _ in range(6):
            idx = rng.integers(0, N, size)
            got, want = ds[idx], plain[idx]
            if features is None:
                assert got == want
            else:
                _same(got, want)
            items = ds.__getitems__(idx.tolist())
            if features is None:
                assert items == [_example(i) for i in idx.tolist()]
            else:
                assert [x["i"] for x in items] == idx.tolist()
    assert all(_copied(ds))
    assert not any(_copied(plain))


def test_a_sequential_scan_in_batches_makes_no_copy(paths: list[str]) -> None:
    ds = tfe.RecordDataset(paths)
    for a in range(0, N, 50):
        assert len(ds[np.arange(a, min(N, a + 50))]) == min(50, N - a)
    assert _copied(ds) == [False, False, False]


@pytest.mark.parametrize("kwargs", [{"in_memory": False}, {"workers": 0}])
def test_epochs_make_no_random_copy(paths: list[str], kwargs: dict[str, Any]) -> None:
    # An epoch holds files by its own rule (in_memory=); its reads are not random reads.
    ds = tfe.RecordDataset(paths, features=SPEC)
    got = [int(x) for b in ds.batches(16, shuffle=True, **kwargs) for x in b["i"]]
    assert sorted(got) == list(range(N))
    assert not any(r._auto for r in _readers(ds))


def test_a_file_still_changing_is_not_copied(tmp_path: Path) -> None:
    path = tmp_path / "fresh.tfrecord"
    _write(path, 0, 100)
    ds = tfe.RecordDataset(str(path))
    for i in range(100):
        ds[i]
    assert _copied(ds) == [False]


def test_random_holds_false_and_large_datasets_read_the_files(
    paths: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    off = tfe.RecordDataset(paths, random_holds=False)
    monkeypatch.setattr(held, "IN_MEMORY_LIMIT", 1000)  # the files hold more
    large = tfe.RecordDataset(paths)
    for ds in (off, large):
        for i in range(N):
            ds[i]
        ds[np.arange(N)[::-1]]
        assert _copied(ds) == [False, False, False]
        assert all(r._auto_at > N for r in _readers(ds))


def test_damage_in_a_copied_file_is_reported_where_it_lies(tmp_path: Path) -> None:
    path = tmp_path / "damaged.tfrecord"
    _write(path, 0, 80)
    victim = 50
    # A byte of record 50's data (each record framed by 12 bytes before, 4 after).
    at = sum(len(_example(i)) + 16 for i in range(victim)) + 12 + 2
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0xFF]))
    settle(path)
    ds = tfe.RecordDataset(str(path), features=SPEC)
    for i in range(25):
        assert ds[i]["i"] == i
    assert _copied(ds) == [True]
    assert ds[victim + 1]["i"] == victim + 1
    with pytest.raises(tfe.DataLossError) as err:
        ds[victim]
    assert err.value.record_index == victim
    with pytest.raises(tfe.DataLossError):
        ds.__getitems__([1, victim, 2])
    raw = tfe.RecordDataset(str(path))
    for i in range(25):
        raw[i]
    with pytest.raises(tfe.DataLossError):
        raw[np.array([3, 60, victim])]


@pytest.mark.parametrize("features", [None, SPEC], ids=["raw", "parsed"])
def test_a_file_changed_under_its_copy_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, features: dict[str, Any] | None
) -> None:
    monkeypatch.setattr(random_holds, "RECHECK_S", 0.0)
    monkeypatch.setattr("tfrecord_engine.data.random_reads.RECHECK_S", 0.0)
    monkeypatch.setattr("tfrecord_engine.data.random_reads.RECHECK_READS", 1)
    path = tmp_path / "changing.tfrecord"
    write_settled(path, (_example(i) for i in range(100)))
    ds = tfe.RecordDataset(str(path), features=features)
    for i in range(30):
        ds[i]
    assert _copied(ds) == [True]
    # Cut in place (a job regenerating it): the next reads see the file, not the copy.
    with open(path, "r+b") as f:
        f.truncate(100)
    with pytest.raises(tfe.StaleIndexError):
        ds[95]  # (checks the file first: a check every read, at most 0 s apart)
    assert _copied(ds) == [False]


def test_the_copies_stay_within_the_budget(
    paths: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = tfe.RecordDataset(paths)
    readers = _readers(ds)
    # Room for the largest file's copy and no more: each new copy drops the one before.
    monkeypatch.setattr(held, "IN_MEMORY_LIMIT", max(r.index.data_size for r in readers) + 1)
    starts = np.cumsum([0, *SIZES])
    for f in range(3):
        for i in range(int(starts[f]), int(starts[f + 1])):
            ds[i]
        assert sum(_copied(ds)) == 1
        assert _copied(ds)[f]
    # A dropped copy is made again once another quarter of its file was read.
    for i in range(SIZES[0]):
        assert ds[i] == tfe.RecordDataset(paths, random_holds=False)[i]
    assert _copied(ds) == [True, False, False]


def test_pickled_datasets_keep_the_setting(paths: list[str]) -> None:
    ds = tfe.RecordDataset(paths, random_holds=False)
    back = pickle.loads(pickle.dumps(ds))
    assert back._holds.enabled is False
    on = pickle.loads(pickle.dumps(tfe.RecordDataset(paths)))
    assert on._holds.enabled is True
    # Unpickled in the process that made it (not a child of it): private copies.
    assert on._holds.here() == (True, None)


def _in_child(target: Any, *args: Any) -> Any:
    """What ``target(*args, queue)`` puts on the queue, run in a forked process (a
    loader's worker: forked from the process that made the dataset)."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=target, args=(*args, queue))
    child.start()
    got = queue.get(timeout=120)
    child.join(60)
    return got


def _child_reads(ds: tfe.RecordDataset, queue: Any) -> None:
    try:
        for i in range(N - 1, -1, -1):
            assert ds[i] == _example(i)
        copies = [r._copy for r in _readers(ds)]
        queue.put(
            (
                [c is not None for c in copies],
                [c is not None and not isinstance(c.data, bytes) for c in copies],
                held_shared.segments(),
            )
        )
    except (AssertionError, tfe.TFRecordError, OSError) as exc:  # (the parent fails the test)
        queue.put(repr(exc))


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm")
def test_forked_processes_share_one_copy_per_file(paths: list[str]) -> None:
    before = set(held_shared.segments())
    ds = tfe.RecordDataset(paths)
    len(ds)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    children = [ctx.Process(target=_child_reads, args=(ds, queue)) for _ in range(2)]
    for p in children:
        p.start()
    results = [queue.get(timeout=120) for _ in children]
    for p in children:
        p.join(60)
    for got in results:
        assert not isinstance(got, str), got
        held_now, mapped, _ = got
        assert held_now == [True, True, True]
        assert mapped == [True, True, True]  # a map of the shared segment, not private
    share = ds._holds.share
    assert share is not None
    mine = set(share.names())
    assert len(mine) == 3  # one segment per file, for both children
    assert not any(_copied(ds))  # the parent read nothing at random
    del ds, share
    gc.collect()
    assert set(held_shared.segments()) <= before


def _child_reads_a_few(ds: tfe.RecordDataset, batch_first: bool, queue: Any) -> None:
    try:
        starts = np.cumsum([0, *SIZES])
        # One record of each file (far fewer than a quarter of it), by ds[i] or as one
        # batch across the files (the shards' gather).
        pick = [int(s) + 2 for s in starts[:-1]]
        if batch_first:
            assert ds[np.array(pick)] == [_example(i) for i in pick]
        else:
            assert [ds[i] for i in pick] == [_example(i) for i in pick]
        copies = [r._copy for r in _readers(ds)]
        queue.put([c is not None and not isinstance(c.data, bytes) for c in copies])
    except (AssertionError, tfe.TFRecordError, OSError) as exc:  # (the parent fails the test)
        queue.put(repr(exc))


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm")
def test_a_later_child_takes_the_shared_copies_at_its_first_read(paths: list[str]) -> None:
    # DataLoader workers are new processes each epoch (persistent_workers=False): the
    # next epoch's workers take the copies the first made, at their first read.
    before = set(held_shared.segments())
    ds = tfe.RecordDataset(paths)
    len(ds)
    got = _in_child(_child_reads, ds)
    assert not isinstance(got, str), got
    for batch_first in (False, True):
        got = _in_child(_child_reads_a_few, ds, batch_first)
        assert got == [True] * len(SIZES)  # each a map of the first child's segment
    del ds
    gc.collect()
    assert set(held_shared.segments()) <= before


def _child_counts_copies(ds: tfe.RecordDataset, queue: Any) -> None:
    try:
        for i in range(N):
            assert ds[i] == _example(i)
        queue.put([r._copy is not None for r in _readers(ds)])
    except (AssertionError, tfe.TFRecordError, OSError) as exc:  # (the parent fails the test)
        queue.put(repr(exc))


def test_no_shared_segment_means_no_private_copy_per_worker(
    paths: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No /dev/shm (or a full one, as Docker's 64 MB default soon is): a loader's
    # workers read the files as before, never one private whole-file copy each.
    monkeypatch.setattr(held_shared, "SHM_DIR", str(tmp_path / "no-shm"))
    ds = tfe.RecordDataset(paths)
    len(ds)
    assert _in_child(_child_counts_copies, ds) == [False] * len(SIZES)
    # The process that made the dataset takes its private copies as always.
    for i in range(N):
        ds[i]
    assert _copied(ds) == [True] * len(SIZES)


def _rich(i: int) -> bytes:
    rng = np.random.default_rng(i)
    feature = {
        "i": [i],
        "x": rng.random(3, dtype=np.float32),
        "v": np.arange(i % 6, dtype=np.int64),
        "img": [bytes(rng.integers(0, 256, 2000 + 37 * (i % 50), dtype=np.uint8))],
        "raw": [np.full(8, i, np.uint16).tobytes()],
    }
    keys = list(feature)
    rng.shuffle(keys)  # (each record its own key order)
    return tfe.encode_example({k: feature[k] for k in keys})


RICH: dict[str, Any] = {
    "i": tfe.FixedLenFeature([], "int64"),
    "x": tfe.FixedLenFeature([3], "float32"),
    "v": tfe.VarLenFeature("int64"),
    "img": tfe.FixedLenFeature([], "string"),
    "raw": tfe.RawFeature([8], "uint16"),
}


def _held_rich(
    tmp_path: Path, seed: int
) -> tuple[tfe.RecordDataset, tfe.RecordDataset, np.random.Generator]:
    """A dataset of ``_rich`` records whose every file random reads have copied, the
    same files read without copies, and the generator that read them."""
    paths = settled_shards(tmp_path, SIZES, _rich)
    ds = tfe.RecordDataset(paths, features=RICH)
    plain = tfe.RecordDataset(paths, features=RICH, random_holds=False)
    rng = np.random.default_rng(seed)
    for _ in range(40):  # (reads at random until every file is copied)
        ds.__getitems__(rng.integers(0, N, 64).tolist())
    assert all(_copied(ds))
    return ds, plain, rng


def _reads_out(ds: tfe.RecordDataset, monkeypatch: pytest.MonkeyPatch, method: str) -> list[Any]:
    """The ``local`` argument of every call of ``LocalFileRecords.<method>`` (``read_one``
    or ``read_few``: records read out of ``ds``'s files) from now on."""
    read_out: list[Any] = []
    real = getattr(LocalFileRecords, method)
    mine = {id(r) for r in _readers(ds)}

    def counted(self: LocalFileRecords, local: Any, verify: bool = True) -> Any:
        if id(self) in mine:
            read_out.append(local)
        return real(self, local, verify)

    monkeypatch.setattr(LocalFileRecords, method, counted)
    return read_out


def test_small_batches_of_held_files_are_decoded_from_the_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once the files are held, __getitems__ of a few records decodes them where they
    # lie in the copies (no record read out as bytes first); the samples are the same.
    ds, plain, rng = _held_rich(tmp_path, 5)
    read_out = _reads_out(ds, monkeypatch, "read_few")
    for size in (1, 5, 64):
        idx = rng.integers(-N, N, size).tolist()
        got, want = ds.__getitems__(idx), plain.__getitems__(idx)
        assert len(got) == len(want) == size
        for a, b in zip(got, want, strict=True):
            _same(a, b)
            assert type(a["img"]) is bytes
    assert read_out == []
    # Without the copies (or with the path turned off) the records are read out first.
    monkeypatch.setattr(tfe.RecordDataset, "_few_held", lambda self, key: None)
    ds.__getitems__([0, N - 1])
    assert [len(local) for local in read_out] == [1, 1]


def test_a_small_batch_across_files_an_epoch_holds_is_decoded_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shuffled epoch reads its files into one region of memory: a few records of
    # several of them are decoded from it in one call, not one a file; the samples are
    # the same, in the order asked (duplicates and negative indices too).
    from tfrecord_engine.example.single import SingleDecoder

    paths = settled_shards(tmp_path, SIZES, _rich)
    ds = tfe.RecordDataset(paths, features=RICH)
    plain = tfe.RecordDataset(paths, features=RICH, random_holds=False)
    calls: list[int] = []
    real = SingleDecoder.sample_spans

    def counted(self: SingleDecoder, data: Any, array: Any, starts: Any, ends: Any) -> Any:
        calls.append(len(starts))
        return real(self, data, array, starts, ends)

    monkeypatch.setattr(SingleDecoder, "sample_spans", counted)
    rng = np.random.default_rng(11)
    epoch = ds.batches(32, shuffle=True, seed=1)
    next(iter(epoch))  # (the epoch holds every file now)
    for size in (2, 9, 64):
        idx = [0, SIZES[0], N - 1, -1, *rng.integers(-N, N, max(0, size - 4)).tolist()][:size]
        calls.clear()
        got = ds.__getitems__(idx)
        assert calls == [size]
        for a, b in zip(got, plain.__getitems__(idx), strict=True):
            _same(a, b)
    del epoch


def test_single_records_of_held_files_are_decoded_where_they_lie(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once the files are held, ds[i] decodes record i in its file's copy (not read out
    # as bytes first), through a view too; the samples are the same as the files'.
    ds, plain, rng = _held_rich(tmp_path, 7)
    read_out = _reads_out(ds, monkeypatch, "read_one")
    picked = [0, 1, SIZES[0] - 1, SIZES[0], N - 1, -1, -N, *rng.integers(-N, N, 50).tolist()]
    for i in picked:
        got = ds[i]
        _same(got, plain[i])
        assert type(got["img"]) is bytes
    view = ds.select(np.arange(N)[::-3])
    for j in (0, 5, len(view) - 1):
        _same(view[j], plain[N - 1 - 3 * j])
    assert read_out == []
    # Without the copies' spans the record is read out first.
    monkeypatch.setattr(LocalFileRecords, "held_one", lambda self, local, verify=True: None)
    _same(ds[3], plain[3])
    assert read_out == [3]
