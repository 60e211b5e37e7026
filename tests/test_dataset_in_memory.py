"""Shuffled epochs that read their files whole into memory (``batches(in_memory=...)``)."""

from __future__ import annotations

import gc
import mmap
import os
import time
from pathlib import Path
from typing import Any, cast

import crc32c
import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine import kernels
from tfrecord_engine.data import epochs, source
from tfrecord_engine.data import held as held_module

from .isolated import run_python

SPEC = {"x": tfe.FixedLenFeature([], "int64"), "s": tfe.FixedLenFeature([], "string")}


def _write(path: Path, first: int, n: int) -> None:
    with tfe.TFRecordWriter(str(path)) as w:
        for i in range(first, first + n):
            w.write(tfe.encode_example({"x": [i], "s": [b"v" * (i % 50)]}))
    _settle(path)


def _settle(path: Path | str) -> None:
    """Dates the file a minute back: a copy of a file changed less than
    ``held_module._SETTLED_NS`` before it was read is not kept between epochs."""
    old = time.time_ns() - 60_000_000_000
    os.utime(path, ns=(old, old))


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    paths = [tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"]
    _write(paths[0], 0, 700)
    _write(paths[1], 700, 301)
    return [str(p) for p in paths]


def _held(ds: tfe.RecordDataset) -> list[bool]:
    return [r._held is not None for r in ds._readers]  # type: ignore[union-attr]


def _flat(batches: Any) -> list[Any]:
    out: list[Any] = []
    for b in batches:
        out.extend(b["x"].tolist() if isinstance(b, dict) else b)
    return out


@pytest.mark.parametrize("features", [None, SPEC], ids=["raw", "parsed"])
@pytest.mark.parametrize("one_file", [True, False], ids=["one-file", "two-files"])
def test_the_same_batches_whether_held_or_not(
    files: list[str], features: dict[str, Any] | None, one_file: bool
) -> None:
    ds = tfe.RecordDataset(files[:1] if one_file else files, features=features)
    runs = {
        mode: _flat(ds.batches(64, shuffle=True, seed=5, epoch=2, in_memory=mode))
        for mode in (True, False, None)
    }
    assert runs[True] == runs[False] == runs[None]
    assert len(runs[True]) == len(ds)
    assert runs[True] != sorted(runs[True])  # really shuffled
    # Single records and other batches through a held reader read the same too.
    it = ds.batches(64, shuffle=True, in_memory=True)
    next(it)
    assert all(_held(ds))
    assert ds.read_raw([0, len(ds) - 1, 3]) == tfe.RecordDataset(files).read_raw(
        [0, len(ds) - 1, 3]
    )
    it.close()


def test_the_copy_lives_while_an_epoch_holds_it(files: list[str]) -> None:
    ds = tfe.RecordDataset(files)
    first = ds.batches(100, shuffle=True)
    second = ds.batches(100, shuffle=True)
    assert _held(ds) == [False, False]  # nothing read before the first batch
    next(first)
    next(second)
    assert _held(ds) == [True, True]
    first.close()
    assert _held(ds) == [True, True]  # the other epoch still holds it
    assert len(_flat(second)) == len(ds) - 100  # ran to its end
    assert _held(ds) == [False, False]


def test_which_epochs_hold(files: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    ds = tfe.RecordDataset(files, features=SPEC)
    cases: list[tuple[dict[str, Any], bool]] = [
        ({"shuffle": False}, True),  # (its 8th batch reaches the second file)
        ({"shuffle": False, "in_memory": False}, False),  # read in runs as they are
        ({"shuffle": True, "in_memory": False}, False),
        ({"shuffle": True}, True),
        ({"shuffle": True, "workers": 1}, False),  # workers read in their processes
    ]
    for kwargs, held in cases:
        it = ds.batches(100, **kwargs)
        for _ in range(8):
            next(it)
        assert _held(ds) == [held, held], kwargs
        it.close()
    # Over the limit: only when asked.
    monkeypatch.setattr(epochs, "IN_MEMORY_LIMIT", 1000)
    for mode, held in ((None, False), (True, True)):
        it = ds.batches(100, shuffle=True, in_memory=mode)
        next(it)
        assert _held(ds) == [held, held], mode
        it.close()
    ds.close()


def test_a_hosts_epoch_holds_as_batches_does(files: list[str]) -> None:
    # ds.epoch (what the torch host runs) is settled where batches is: in file order
    # too, each file is read whole as it is reached and kept for the next epoch.
    # Batches of transformed samples (the host's transform=) as well, on one thread.
    from tfrecord_engine.data.sampler import IndexBatchIterator

    cases = [(False, False, False), (False, None, True), (True, None, True)]
    for transform in (None, dict):
        ds = tfe.RecordDataset(files, features=SPEC)  # (no copies kept yet)
        # (Samples come through __getitems__, whose random reads may take kept copies
        # of their own: in_memory=False is left to the plain epochs.)
        for shuffle, in_memory, held in cases[transform is not None :]:
            it = ds.epoch(
                IndexBatchIterator(len(ds), 100, shuffle=shuffle, seed=1),
                shuffle,
                in_memory=in_memory,
                transform=transform,
            )
            next(it)
            # (In file order the first chunk is one batch, see prepare.ramp, and a batch
            # of samples is its own chunk: the first reaches file a alone.)
            second = held and shuffle
            assert _held(ds) == [held, second], (shuffle, in_memory, transform)
            if transform is not None:
                assert it._work._executor._max_workers == 1  # type: ignore[union-attr]
            assert len(_flat(it)) == len(ds) - 100
            if held and not shuffle:
                assert _kept(ds) == [os.path.getsize(f) for f in files], transform
        ds.close()


def test_a_damaged_record_is_found_in_the_copy(files: list[str]) -> None:
    # Damaged after indexing (same size): the CRC check of the held copy finds it.
    at = int(tfe.Index.build(files[0]).offsets[123]) + 12 + 3
    ds = tfe.RecordDataset(files)
    assert len(ds) == 1001
    with open(files[0], "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(tfe.CorruptedRecordError, match="record 123 "):
        _flat(ds.batches(64, shuffle=True, seed=1, in_memory=True))


def test_a_file_cut_before_the_epoch_is_a_stale_index(files: list[str]) -> None:
    ds = tfe.RecordDataset(files)
    assert len(ds) == 1001
    size = Path(files[1]).stat().st_size
    with open(files[1], "r+b") as f:
        f.truncate(size // 2)
    with pytest.raises(tfe.StaleIndexError):
        _flat(ds.batches(64, shuffle=True, in_memory=True))


def test_the_default_limit_is_at_most_1_gib() -> None:
    assert 0 < epochs.IN_MEMORY_LIMIT <= 1 << 30
    assert np.int64(epochs.IN_MEMORY_LIMIT) == held_module._in_memory_limit()


# ---- the held copy's own read path: CRCs checked as the file is read, records gathered


def _same_size_file(path: Path, n: int) -> None:
    # Records of one size (the unpack of equal sizes) in a plain TFRecord file.
    with tfe.TFRecordWriter(str(path)) as w:
        for i in range(n):
            w.write(b"%07d" % i + bytes([i % 251]) * 40)


def _plain(batch: Any) -> Any:
    if isinstance(batch, dict):
        return {k: v.tolist() for k, v in batch.items()}
    if isinstance(batch, tuple):  # a PaddedBatch
        return list(batch[0]), batch[1].tolist()
    return batch


def _epochs(ds: tfe.RecordDataset, **kw: Any) -> dict[tuple[bool, bool], list[Any]]:
    """One epoch per (in_memory, kernels on): the batches as plain lists."""
    out = {}
    for held in (True, False):
        for on in (True, False):
            with kernels.switched(on):
                batches = ds.batches(100, shuffle=True, seed=7, epoch=1, in_memory=held, **kw)
                out[held, on] = [_plain(b) for b in batches]
    return out


@pytest.mark.parametrize("same_size", [True, False], ids=["same-size", "sizes-vary"])
def test_held_batches_equal_the_uncopied_ones_with_and_without_kernels(
    tmp_path: Path, files: list[str], same_size: bool
) -> None:
    if same_size:
        path = tmp_path / "same.tfrecord"
        _same_size_file(path, 1234)
        paths = [str(path)]
    else:
        paths = files[:1]
    ds = tfe.RecordDataset(paths)
    runs = _epochs(ds, pad_remainder=False)
    reference = runs[False, False]
    assert all(run == reference for run in runs.values())
    flat = [r for b in reference for r in b]
    assert len(flat) == len(ds)
    assert len(set(flat)) == len(ds)
    # The order is the sampler's, unchanged: batch j holds the records it names.
    order = next(iter(ds.batches(100, shuffle=True, seed=7, epoch=1, in_memory=False).sampler))
    assert reference[0] == ds.read_raw(order.indices)
    # Padded batches repeat records: still the same either way.
    padded = _epochs(ds, pad_remainder=True)
    assert all(run == padded[False, False] for run in padded.values())


def test_held_parsed_batches_equal_the_uncopied_ones(files: list[str]) -> None:
    ds = tfe.RecordDataset(files, features=SPEC)
    runs = _epochs(ds)
    assert all(run == runs[False, False] for run in runs.values())


def test_the_hold_checks_every_crc_once(files: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    ds = tfe.RecordDataset(files[0])
    reader = ds._open()[0]
    assert isinstance(reader, source.LocalFileRecords)
    reader.hold()
    copy = reader._copy
    assert copy is not None
    assert copy.ok is not None
    assert copy.all_ok
    assert copy.ok.all()
    assert len(copy.ok) == 700
    # Records found intact are delivered without computing their CRCs again.
    calls: list[int] = []
    real = crc32c.crc32c

    def counted(data: bytes) -> int:
        calls.append(len(data))
        return int(real(data))

    monkeypatch.setattr(crc32c, "crc32c", counted)
    with kernels.switched(False):
        got = reader.read(np.arange(699, -1, -7, dtype=np.int64))
    assert calls == []
    assert got == tfe.RecordDataset(files[0]).read_raw(np.arange(699, -1, -7))
    reader.release()
    assert reader._copy is None
    assert reader._held is None


def _rot(path: str, record: int) -> None:
    at = int(tfe.Index.build(path).offsets[record]) + 12 + 1
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x10]))


def _until_error(it: Any) -> tuple[list[Any], tuple[int, int, str, str]]:
    got: list[Any] = []
    with pytest.raises(tfe.CorruptedRecordError) as info:
        got.extend(_plain(b) for b in it)
    e = info.value
    return got, (e.record_index, e.offset, e.reason, str(e.path))


@pytest.mark.parametrize("features", [None, SPEC], ids=["raw", "parsed"])
@pytest.mark.parametrize("one_file", [True, False], ids=["one-file", "two-files"])
def test_damage_in_the_copy_raises_as_without_it(
    files: list[str], features: dict[str, Any] | None, one_file: bool
) -> None:
    paths = files[:1] if one_file else files
    ds = tfe.RecordDataset(paths, features=features)
    len(ds)  # indexed intact: the damage below is found by the CRC check
    _rot(files[0], 456)
    reader = ds._open()[0]
    assert isinstance(reader, source.LocalFileRecords)
    reader.hold()  # the hold itself raises nothing, and marks just that record
    assert reader._copy is not None
    assert reader._copy.ok is not None
    assert np.flatnonzero(~reader._copy.ok).tolist() == [456]
    reader.release()
    outcomes = []
    for held in (True, False):
        for on in (True, False):
            with kernels.switched(on):
                it = ds.batches(64, shuffle=True, seed=3, epoch=0, in_memory=held)
                outcomes.append(_until_error(it))
                it.close()
    assert all(o == outcomes[0] for o in outcomes)
    batches, (record, _, _, path) = outcomes[0]
    assert (record, path) == (456, files[0])
    assert batches  # the batches before the damaged one were delivered


@pytest.mark.parametrize("policy", ["skip", "stop"])
def test_damage_policies_give_the_same_epoch_held_or_not(files: list[str], policy: str) -> None:
    reports: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(files, on_damage=policy, on_damage_report=reports.append)  # type: ignore[arg-type]
    len(ds)
    _rot(files[1], 17)
    runs = []
    for held in (True, False):
        reports.clear()
        records = _flat(ds.batches(50, shuffle=True, seed=2, epoch=0, in_memory=held))
        runs.append((records, [(r.record_index, r.path) for r in reports]))
    assert runs[0] == runs[1]
    assert runs[0][1] == [(17, files[1])]


def test_without_verify_the_hold_checks_nothing(files: list[str]) -> None:
    ds = tfe.RecordDataset(files[0], verify=False)
    len(ds)
    _rot(files[0], 5)
    it = ds.batches(64, shuffle=True, seed=1, in_memory=True)
    records = _flat(it)
    assert len(records) == 700  # damage is not looked for, as without the copy
    assert records == _flat(ds.batches(64, shuffle=True, seed=1, in_memory=False, epoch=0))
    reader = ds._open()[0]
    assert isinstance(reader, source.LocalFileRecords)
    reader.hold(verify=False)
    assert reader._copy is not None
    assert reader._copy.ok is None
    assert not reader._copy.all_ok
    reader.release()


@pytest.mark.parametrize(
    "sizes",
    [[0], [5, 5, 5], [0, 0], [3, 0, 12, 1, 100], [1234567, 1], [7] * 300],
    ids=["empty", "equal", "empties", "mixed", "wide", "many"],
)
def test_unpacked_pieces_equal_slices(sizes: list[int]) -> None:
    data = np.random.default_rng(0).integers(0, 256, sum(sizes), dtype=np.uint8)
    ends = np.cumsum(sizes)
    want = [data[e - n : e].tobytes() for n, e in zip(sizes, ends, strict=True)]
    for _ in range(2):  # (the second time from the cached unpacker, where equal)
        got = held_module.unpacked(data, np.array(sizes, np.int64))
        assert got == want
        assert all(type(r) is bytes for r in got)


@pytest.mark.parametrize("step", [1000, 4096, 1 << 20])
def test_a_hold_in_many_pieces_checks_every_record(
    files: list[str], monkeypatch: pytest.MonkeyPatch, step: int
) -> None:
    # Small pieces: records straddle piece boundaries, two threads share the pieces.
    monkeypatch.setattr(held_module, "_HOLD_STEP", step)
    index = tfe.Index.build(files[0])
    ends = index.offsets.astype(np.int64) + index.lengths.astype(np.int64) + 16
    straddling = int(np.flatnonzero(ends // 1000 != index.offsets.astype(np.int64) // 1000)[3])
    ds = tfe.RecordDataset(files[0])
    len(ds)
    for record in (0, straddling, 321, 699):
        _rot(files[0], record)
    reader = ds._open()[0]
    assert isinstance(reader, source.LocalFileRecords)
    reader.hold()
    assert reader._copy is not None
    assert reader._copy.ok is not None
    assert np.flatnonzero(~reader._copy.ok).tolist() == sorted({0, straddling, 321, 699})
    assert bytes(reader._copy.data) == Path(files[0]).read_bytes()
    reader.release()
    # A file cut while held: the read of the piece past its end fails, named.
    with open(files[0], "r+b") as f:
        f.truncate(int(index.offsets[500]))
    ds2 = tfe.RecordDataset(files[0])
    reader = ds2._open()[0]
    assert isinstance(reader, source.LocalFileRecords)
    reader._fd = os.open(files[0], os.O_RDONLY)  # (opened before the cut: no size check)
    monkeypatch.setattr(reader.index, "data_size", int(ends[-1]))
    with pytest.raises(tfe.StaleIndexError, match="shorter than"):
        reader.hold()
    assert reader._copy is None
    assert reader._holders == 0
    reader.close()


def test_batches_gathered_one_after_another_keep_their_bytes(files: list[str]) -> None:
    # Each batch is gathered into a reused buffer: records already returned are copies.
    ds = tfe.RecordDataset(files[0])
    want = ds.read_raw(np.arange(700))
    reader = ds._open()[0]
    assert isinstance(reader, source.LocalFileRecords)
    reader.hold()
    first = reader.read(np.arange(0, 700, 3, dtype=np.int64))
    second = reader.read(np.arange(699, 0, -2, dtype=np.int64))
    assert first == want[0:700:3]
    assert second == want[699:0:-2]
    assert reader._copy is not None
    assert len(reader._copy.scratch) == 1  # one buffer, reused
    reader.release()


def _kept(ds: tfe.RecordDataset) -> list[int]:
    kept = [cast("source.LocalFileRecords", r)._kept for r in ds._open()]
    return [0 if k is None else len(k.data) for k in kept]


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the path of every whole-file read (``LocalFileRecords._read_all``)."""
    seen: list[str] = []
    real = source.LocalFileRecords._read_all

    def counted(self: source.LocalFileRecords, verify: bool, *joint: Any) -> Any:
        seen.append(os.path.basename(self.path))
        return real(self, verify, *joint)

    monkeypatch.setattr(source.LocalFileRecords, "_read_all", counted)
    return seen


def test_later_epochs_take_the_kept_copy(files: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _reads(monkeypatch)
    ds = tfe.RecordDataset(files)
    plain = tfe.RecordDataset(files)
    for epoch in range(3):
        got = _flat(ds.batches(64, shuffle=True, seed=2, epoch=epoch))
        assert got == _flat(plain.batches(64, shuffle=True, seed=2, epoch=epoch, in_memory=False))
        assert _held(ds) == [False, False]  # between epochs: kept, not held
    assert sorted(reads) == ["a.tfrecord", "b.tfrecord"]  # read once, for the first epoch
    # ds[i] and sequential epochs read the file, not the kept copy.
    assert ds.read_raw([5]) == plain.read_raw([5])
    ds.close()  # drops the kept copies
    assert _kept(plain) == [0, 0]
    _flat(ds.batches(64, shuffle=True))
    assert len(reads) == 4


def test_a_file_changed_between_epochs_is_read_again(
    files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _reads(monkeypatch)
    ds = tfe.RecordDataset(files)
    _flat(ds.batches(64, shuffle=True, seed=1))
    # Damaged in place, same size: the next epoch reads the file again and finds it.
    at = int(tfe.Index.build(files[0]).offsets[123]) + 12 + 3
    stat = os.stat(files[0])
    with open(files[0], "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(files[0], ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000))
    with pytest.raises(tfe.CorruptedRecordError, match="record 123 "):
        _flat(ds.batches(64, shuffle=True, seed=1))
    assert reads.count("a.tfrecord") == 2


def _write_other(path: Path, first: int, n: int) -> None:
    """Records of the same sizes as ``_write``'s, with other bytes."""
    with tfe.TFRecordWriter(str(path)) as w:
        for i in range(first, first + n):
            w.write(tfe.encode_example({"x": [i], "s": [b"w" * (i % 50)]}))


def test_an_open_dataset_reads_the_file_it_opened(
    files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file replaced under its path (a new inode): an open dataset still reads the one
    # it opened, kept copy or not; once closed, it opens the new one and reads it anew.
    reads = _reads(monkeypatch)
    one = tfe.RecordDataset(files[1:])
    before = _flat(one.batches(64, shuffle=True, seed=3, epoch=0))
    _write_other(Path(files[1] + ".new"), 700, 301)
    os.replace(files[1] + ".new", files[1])
    assert _flat(one.batches(64, shuffle=True, seed=3, epoch=0)) == before
    assert _flat(one.batches(64, shuffle=True, seed=3, epoch=0, in_memory=False)) == before
    assert reads == ["b.tfrecord"]  # the kept copy served
    one.close()
    after = _flat(one.batches(64, shuffle=True, seed=3, epoch=0))
    assert reads == ["b.tfrecord", "b.tfrecord"]
    assert after != before
    assert sorted(tfe.decode_example(r)["s"][0] for r in after)[-1] == b"w" * 49


def test_a_file_changed_just_before_the_read_is_not_kept(
    files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _reads(monkeypatch)
    os.utime(files[0])  # now: within a timestamp's granularity of the read
    ds = tfe.RecordDataset(files[:1])
    _flat(ds.batches(64, shuffle=True))
    assert _kept(ds) == [0]
    _settle(files[0])
    _flat(ds.batches(64, shuffle=True))  # read again (the identity changed), and kept
    assert _kept(ds) == [os.path.getsize(files[0])]
    _flat(ds.batches(64, shuffle=True))
    assert reads == ["a.tfrecord", "a.tfrecord"]


def test_a_file_changed_while_read_is_not_kept(
    files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _reads(monkeypatch)
    real = held_module.identity
    calls = [0]

    def moving(st: os.stat_result) -> tuple[int, int, int, int]:
        calls[0] += 1
        dev, ino, size, mtime = real(st)
        return dev, ino, size, mtime + calls[0]  # a different mtime at every look

    monkeypatch.setattr(held_module, "identity", moving)
    ds = tfe.RecordDataset(files[:1])
    _flat(ds.batches(64, shuffle=True))
    assert _kept(ds) == [0]
    _flat(ds.batches(64, shuffle=True))
    assert reads == ["a.tfrecord", "a.tfrecord"]


def test_a_finalizer_inside_the_registry_does_not_deadlock(tmp_path: Path) -> None:
    # An epoch abandoned without close() is released by the garbage collector, which
    # may run inside a registry call on the same thread: it must not deadlock.
    script = """
import faulthandler, gc, os, sys
faulthandler.dump_traceback_later(20, exit=True)
import tfrecord_engine as tfe
from tfrecord_engine.data import held
paths = []
for n in range(4):
    p = os.path.join(sys.argv[1], f"f{n}.tfrecord")
    with tfe.TFRecordWriter(p) as w:
        w.write_many(tfe.encode_example({"x": [i]}) for i in range(2000))
    os.utime(p, (1e9, 1e9))  # long settled: its copy is kept
    paths.append(p)
a, b = tfe.RecordDataset(paths[:2]), tfe.RecordDataset(paths[2:])
gc.disable()
it = a.batches(64, shuffle=True, readahead=0)
next(it)
del it  # abandoned in a reference cycle: released by the collector
real, fired = held._forget, []
def forget(key):
    if not fired:
        fired.append(1)
        gc.collect()  # as an allocation inside the registry's lock may
    real(key)
held._forget = forget
for _ in b.batches(64, shuffle=True, readahead=0):
    pass
assert fired
print("done")
"""
    done = run_python(script, str(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "done"


def test_a_collected_dataset_leaves_the_registry(files: list[str]) -> None:
    gc.collect()  # earlier tests' datasets leave first
    before = held_module._KEPT_TOTAL[0]
    ds = tfe.RecordDataset(files)
    _flat(ds.batches(64, shuffle=True))
    sizes = sum(os.path.getsize(p) for p in files)
    assert held_module._KEPT_TOTAL[0] == before + sizes
    del ds
    gc.collect()
    assert held_module._KEPT_TOTAL[0] == before


def test_kept_copies_stay_within_the_limit(
    files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _reads(monkeypatch)
    sizes = [os.path.getsize(p) for p in files]
    # Room for the bigger file alone: keeping the second evicts the first.
    monkeypatch.setattr(epochs, "IN_MEMORY_LIMIT", max(sizes) + 1)
    a = tfe.RecordDataset(files[:1])
    b = tfe.RecordDataset(files[1:])
    _flat(a.batches(64, shuffle=True))
    assert _kept(a) == [sizes[0]]
    _flat(b.batches(64, shuffle=True))
    assert _kept(a) == [0]
    assert _kept(b) == [sizes[1]]
    _flat(a.batches(64, shuffle=True))
    assert reads == ["a.tfrecord", "b.tfrecord", "a.tfrecord"]
    # A file over the limit (in_memory=True) is held for its epoch, never kept, and
    # leaves the others' kept copies alone.
    assert sizes[0] > sizes[1]
    monkeypatch.setattr(epochs, "IN_MEMORY_LIMIT", sizes[1] + 1)
    _flat(b.batches(64, shuffle=True))
    assert (_kept(a), _kept(b)) == ([0], [sizes[1]])  # a, the least recent, made room
    _flat(a.batches(64, shuffle=True, in_memory=True))
    assert (_kept(a), _kept(b)) == ([0], [sizes[1]])
    # Epochs that do not hold keep nothing.
    c = tfe.RecordDataset(files)
    _flat(c.batches(64, shuffle=True, in_memory=False))
    _flat(c.batches(64, shuffle=False))
    assert _kept(c) == [0, 0]


@pytest.mark.skipif(getattr(mmap, "MADV_HUGEPAGE", None) is None, reason="no huge-page advice here")
@pytest.mark.parametrize("size", [(1 << 20) + 3, (3 << 20) // 2, (2 << 20) - 7, (5 << 20) + 11])
def test_copies_start_on_a_huge_page_boundary(size: int) -> None:
    """The kernel backs only aligned 2 MiB ranges with huge pages: a copy of 1 MiB or
    more starts on such a boundary (the page faults of the copy in cost ~4x less)."""
    data = held_module.anonymous(size)
    assert len(data) == size
    view = np.frombuffer(data, np.uint8, size)
    assert view.ctypes.data % (2 << 20) == 0
    view[:3] = [1, 2, 3]
    view[-1] = 9
    # Slices are bytes, as the map's and bytes' are (reads hand them out as records).
    assert data[0:4] == b"\x01\x02\x03\x00"
    assert type(data[0:4]) is bytes
    assert data[size - 1 : size] == b"\x09"


def test_an_in_order_epoch_holds_each_file_as_it_reaches_it(
    files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In file order, a file is read whole when the epoch reaches it (not all before the
    first batch), and the copies are kept: later epochs, in either order, read nothing."""
    monkeypatch.setattr(epochs, "chunk_records", lambda *args: 100)
    reads = _reads(monkeypatch)
    ds = tfe.RecordDataset(files, features=SPEC)
    plain = tfe.RecordDataset(files, features=SPEC)
    it = ds.batches(100, readahead=0)
    seen = [next(it)["x"].tolist()]
    assert _held(ds) == [True, False]
    assert reads == ["a.tfrecord"]
    seen += [b["x"].tolist() for b in it]
    assert seen == [b["x"].tolist() for b in plain.batches(100, in_memory=False)]
    assert reads == ["a.tfrecord", "b.tfrecord"]
    assert _held(ds) == [False, False]
    assert all(_kept(ds))  # kept for the next epochs
    for shuffle in (False, True, False):
        got = _flat(ds.batches(64, shuffle=shuffle, seed=3, epoch=0))
        assert got == _flat(plain.batches(64, shuffle=shuffle, seed=3, epoch=0, in_memory=False))
    assert reads == ["a.tfrecord", "b.tfrecord"]
    ds.close()
    plain.close()


@pytest.mark.parametrize("policy", ["raise", "skip"])
def test_in_order_a_file_cut_under_its_index_gives_what_reading_it_gives(
    files: list[str], policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that cannot be held (cut after indexing) is read in runs as without a
    copy: every batch before the cut is delivered, and the error comes where it lies."""
    monkeypatch.setattr(epochs, "chunk_records", lambda *args: 100)
    ds = tfe.RecordDataset(files, on_damage=cast(Any, policy))
    assert len(ds) == 1001
    with open(files[1], "r+b") as f:
        f.truncate(Path(files[1]).stat().st_size // 2)

    def epoch(**kwargs: Any) -> tuple[list[bytes], type[BaseException] | None]:
        out: list[bytes] = []
        try:
            for batch in ds.batches(50, readahead=0, **kwargs):
                out.extend(batch)
        except tfe.TFRecordError as exc:
            return out, type(exc)
        return out, None

    held, error = epoch()
    assert (held, error) == epoch(in_memory=False)
    assert len(held) >= 700  # every record of the first file, at least


def test_copies_read_for_one_epoch_share_a_region(
    files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files an epoch reads whole go into one region: a batch from several of them
    is then a view of it (no gather into a new buffer), read-only like each copy; one
    of small records (these: ~60 bytes) is still gathered."""
    from tfrecord_engine.data import gather

    ds = tfe.RecordDataset(files, features=SPEC)
    plain = tfe.RecordDataset(files, features=SPEC)
    it = ds.batches(64, shuffle=True, seed=4)
    next(it)
    copies = [cast("source.LocalFileRecords", r)._copy for r in ds._open()]
    assert all(c is not None for c in copies)
    region = copies[0].region  # type: ignore[union-attr]
    assert region is not None
    assert all(c.region is region for c in copies)  # type: ignore[union-attr]
    assert not region.flags.writeable
    picks = [3, 699, 700, 1000, 5, *range(998, 10, -9)]  # both files, out of order
    small = ds.read_spans(picks)
    assert small is not None
    assert small.buf is not region
    assert small.records() == plain.read_raw(picks)
    monkeypatch.setattr(gather, "_VIEW_BYTES", 1)
    spans = ds.read_spans(picks)
    assert spans is not None
    assert spans.buf is region
    assert spans.records() == plain.read_raw(picks)
    want = plain[picks]
    got = ds[picks]
    assert got["x"].tolist() == want["x"].tolist()
    assert got["s"].tolist() == want["s"].tolist()
    it.close()
    # Kept between epochs, each file on its own; the next epoch's batches are views too.
    assert _flat(ds.batches(64, shuffle=True, seed=4, epoch=1)) == _flat(
        plain.batches(64, shuffle=True, seed=4, epoch=1, in_memory=False)
    )
    ds.close()
    plain.close()
