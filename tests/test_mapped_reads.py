"""``RecordDataset(..., mapped_reads=True)``: records sliced straight out of the files' maps.

The opt-in must return exactly what the guarded default returns (random indices,
batches, epochs, raw and parsed, one file and shards), find damage the same way, and
survive pickling and views; the default must stay guarded (a file cut under it is a
located error, checked in a child process). A file cut under a *mapped* dataset kills
the process with SIGBUS (the documented risk): no test does that here.
"""

from __future__ import annotations

import os
import pickle
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine import kernels
from tfrecord_engine.data import gather
from tfrecord_engine.records import framing
from tfrecord_engine.storage import safecopy

SPEC = {"x": tfe.FixedLenFeature([], "int64"), "pad": tfe.VarLenFeature("string")}


def _records(rng: np.random.Generator, n: int, big: bool) -> list[bytes]:
    """Raw records of varied sizes (some empty; ``big``: a few KiB, past the size
    where mapped reads stop gathering with the kernels and slice each record)."""
    top = 9000 if big else 700
    return [rng.bytes(int(k)) for k in rng.integers(0, top, n)]


def _write(path: Path, records: list[bytes]) -> str:
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    return str(path)


def _examples(path: Path, first: int, n: int) -> str:
    rng = np.random.default_rng(first)
    return _write(
        path,
        [
            tfe.encode_example({"x": [first + i], "pad": [b"p" * int(rng.integers(0, 3000))]})
            for i in range(n)
        ],
    )


def _pair(paths: list[str], **kw: Any) -> tuple[tfe.RecordDataset, tfe.RecordDataset]:
    return tfe.RecordDataset(paths, **kw), tfe.RecordDataset(paths, mapped_reads=True, **kw)


def _same_parsed(a: Any, b: Any) -> None:
    """Equal parsed values: dicts, arrays, and sparse values (tuples of arrays)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same_parsed(a[k], b[k])
    elif isinstance(a, tuple | list):
        assert type(a) is type(b)
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same_parsed(x, y)
    else:
        assert np.array_equal(np.asarray(a), np.asarray(b))


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> list[list[str]]:
    """Datasets of one and of three files, small records and a few KiB ones."""
    tmp = tmp_path_factory.mktemp("mapped")
    rng = np.random.default_rng(7)
    sets = []
    for big in (False, True):
        files = [
            _write(tmp / f"{int(big)}-{s}.tfrecord", _records(rng, int(n), big))
            for s, n in enumerate(rng.integers(40, 120, 3))
        ]
        sets += [files[:1], files]
    return sets


@settings(max_examples=60, deadline=None)
@given(which=st.integers(0, 3), seed=st.integers(0, 2**32 - 1), size=st.integers(1, 300))
def test_mapped_reads_return_the_default_bytes(
    shards: list[list[str]], which: int, seed: int, size: int
) -> None:
    kernels.wait(60)  # (the kernel gather of small records too, where numba is there)
    default, mapped = _pair(shards[which])
    n = len(default)
    rng = np.random.default_rng(seed)
    picks = rng.integers(-n, n, size)
    assert mapped[picks.tolist()] == default[picks.tolist()]
    assert mapped[picks] == default[picks]
    assert [mapped[int(i)] for i in picks[:20]] == [default[int(i)] for i in picks[:20]]
    for epoch in range(2):
        for in_memory in (None, False):  # (False: no file held whole, all from the map)
            got = mapped.batches(37, shuffle=True, seed=seed, epoch=epoch, in_memory=in_memory)
            want = default.batches(37, shuffle=True, seed=seed, epoch=epoch, in_memory=in_memory)
            assert list(got) == list(want)
    assert list(mapped.batches(64)) == list(default.batches(64))
    assert list(mapped) == list(default)


@pytest.mark.parametrize("small", [0, 1 << 30], ids=["sliced", "gathered"])
def test_both_ways_of_a_mapped_batch_agree(
    shards: list[list[str]], monkeypatch: pytest.MonkeyPatch, small: int
) -> None:
    monkeypatch.setattr(gather, "_SMALL", small)
    kernels.wait(60)
    for files in shards:
        default, mapped = _pair(files)
        order = np.random.default_rng(1).permutation(len(default))
        for at in range(0, len(order), 100):
            assert mapped[order[at : at + 100]] == default[order[at : at + 100]]


def test_parsed_reads_are_the_same(tmp_path: Path) -> None:
    kernels.wait(60)
    files = [_examples(tmp_path / f"e{s}.tfrecord", 1000 * s, 150) for s in range(3)]
    for paths in (files[:1], files):
        default, mapped = _pair(paths, features=SPEC)
        n = len(default)
        for idx in ([3], [n - 1, 0, 5], list(np.random.default_rng(2).permutation(n)[:200])):
            _same_parsed(mapped[idx], default[idx])
        _same_parsed(mapped[n - 2], default[n - 2])
        for shuffle in (False, True):
            for a, b in zip(
                mapped.batches(64, shuffle=shuffle, seed=4),
                default.batches(64, shuffle=shuffle, seed=4),
                strict=True,
            ):
                _same_parsed(a, b)
        got = [int(v) for b in mapped.batches(50, shuffle=True, seed=1) for v in b["x"]]
        assert sorted(got) == sorted(int(v) for b in default.batches(50) for v in b["x"])


def test_mapped_reads_do_not_copy_through_the_kernel_or_pread(
    shards: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*args: object) -> None:
        raise AssertionError("a guarded copy was made")

    for files in shards[:2]:
        default, mapped = _pair(files)
        n = len(mapped)
        len(default)  # (indexes loaded before the reads are patched)
        with monkeypatch.context() as m:
            for name in ("gather", "copy_span"):
                m.setattr(safecopy, name, refused)
            m.setattr(os, "pread", refused)
            m.setattr(os, "preadv", refused)
            got = [mapped[0], mapped[[n - 1, 1, 2]], mapped[list(range(n))]]
            with pytest.raises(AssertionError, match="guarded copy"):
                default[list(range(0, n, 3))]  # (the patches do reach the default)
        assert got == [default[0], default[[n - 1, 1, 2]], default[list(range(n))]]


def _rot(path: str, index: tfe.Index, which: int) -> None:
    """Flips a data bit of record ``which`` in place (the file keeps its size)."""
    at = int(index.offsets[which]) + framing.HEADER_SIZE + int(index.lengths[which]) // 2
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x10]))


def _error(read: Callable[[tfe.RecordDataset], object], ds: tfe.RecordDataset) -> tuple[str, str]:
    with pytest.raises(tfe.DataLossError) as info:
        read(ds)
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("files", [1, 3])
def test_damage_is_found_the_same_way(tmp_path: Path, files: int) -> None:
    paths = [_examples(tmp_path / f"d{s}.tfrecord", 100 * s, 60) for s in range(files)]
    default, mapped = _pair(paths)
    parsed = _pair(paths, features=SPEC)
    n = len(default)
    for ds in (*parsed, mapped):
        len(ds)
    bad = n - 10  # in the last file
    _rot(paths[-1], default.indexes[-1], 50)
    everything = list(range(n))
    reads: list[Callable[[tfe.RecordDataset], object]] = [
        lambda ds: ds[bad],
        lambda ds: ds[[0, bad, 1]],
        lambda ds: ds[everything],
        lambda ds: list(ds.batches(16)),
        lambda ds: list(ds.batches(16, shuffle=True, seed=3)),
    ]
    for read in reads:
        assert _error(read, mapped) == _error(read, default)
        assert _error(read, parsed[1]) == _error(read, parsed[0])
    name, text = _error(reads[0], mapped)
    assert name == "CorruptedRecordError"
    assert paths[-1] in text
    assert re.search(r"record 50\b", text), text
    # on_damage="skip": the damaged record dropped from its batch, as by default
    skip = _pair(paths, on_damage="skip", on_damage_report=lambda r: None)
    assert list(skip[1].batches(16)) == list(skip[0].batches(16))
    assert sum(map(len, skip[1].batches(16))) == n - 1


def test_the_flag_survives_pickling_copies_and_views(
    shards: list[list[str]], tmp_path: Path
) -> None:
    files = shards[1]
    default, mapped = _pair(files)
    n = len(mapped)
    clone = pickle.loads(pickle.dumps(mapped))
    assert clone.mapped_reads is True
    assert clone[list(range(n))] == default[list(range(n))]
    assert pickle.loads(pickle.dumps(default)).mapped_reads is False
    picks = [5, 1, n - 1]
    for view in (
        mapped.select(picks),
        mapped.take(10),
        mapped.skip(3),
        mapped.with_format("numpy"),
        mapped.train_test_split(test_size=0.25, seed=0)[0],
        pickle.loads(pickle.dumps(mapped.select(picks))),
    ):
        assert view.mapped_reads is True
        assert view._opened().readers[0].mapped  # type: ignore[union-attr]
    assert mapped.select(picks)[[0, 1, 2]] == default[picks]
    assert default.select(picks).mapped_reads is False
    assert not default.select(picks)._opened().readers[0].mapped  # type: ignore[union-attr]
    # decode workers (other processes) open the files from the pickled state
    parsed = _pair([_examples(tmp_path / "w.tfrecord", 0, 300)], features=SPEC)
    got = [int(v) for b in parsed[1].batches(64, workers=2) for v in b["x"]]
    assert got == list(range(300))
    assert parsed[1].worker_init().state["mapped_reads"] is True
    mix = tfe.sample_from_datasets([mapped, default], weights=[0.5, 0.5], seed=0)
    assert sum(map(len, mix.batches(32))) > 0


def test_a_dataloader_with_workers_reads_mapped(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    paths = [_examples(tmp_path / f"l{s}.tfrecord", 1000 * s, 100) for s in range(2)]
    ds = tfe.RecordDataset(paths, SPEC, mapped_reads=True)
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, num_workers=2)
    got = sorted(int(v) for batch in loader for v in batch["x"])
    assert got == [*range(100), *range(1000, 1100)]


# ---- the default stays guarded (a child process: a regression is a signal, not a crash) --

_CHILD = """
import os, sys
import tfrecord_engine as tfe

path, other = sys.argv[1], sys.argv[1] + "-other"
for p in (path, other):
    with tfe.TFRecordWriter(p, index=True) as w:
        w.write_many([b"r%05d" % i + b"y" * 500 for i in range(20_000)])
mapped = tfe.RecordDataset([other], mapped_reads=True)  # another file, left whole
mapped[[0, 5, 9]]
for kw in ({}, {"mapped_reads": False}):
    ds = tfe.RecordDataset([path, other], **kw)
    ds[[0, 9000, 20_001]]  # mapped for gathers
    os.truncate(path, os.path.getsize(path) // 2)
    for read in (lambda: ds[19_999], lambda: ds[list(range(19_900, 20_100))],
                 lambda: [b for b in ds.batches(256, shuffle=True, seed=1)]):
        try:
            read()
        except tfe.StaleIndexError as exc:
            print("ERROR", exc)
        else:
            print("NO ERROR")
    for p in (path, path + ".tfeidx"):
        if os.path.exists(p):
            os.remove(p)
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([b"r%05d" % i + b"y" * 500 for i in range(20_000)])
print("mapped", mapped[[1, 2]] == [b"r00001" + b"y" * 500, b"r00002" + b"y" * 500])
"""


def test_the_default_stays_guarded_beside_a_mapped_dataset(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD), str(tmp_path / "data.tfrecord")],
        env={**os.environ, "PYTHONPATH": os.environ.get("TFE_UNDER_TEST", "")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode != -signal.SIGBUS, f"killed by SIGBUS\n{done.stderr}"
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "mapped True"
    errors = lines[:-1]
    assert len(errors) == 6
    for line in errors:
        assert line.startswith("ERROR "), line
        assert "data.tfrecord" in line
        assert re.search(r"record \d+ at offset \d+", line), line
