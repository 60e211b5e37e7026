"""One ``RecordDataset`` shared by threads: random access and whole epochs at once.

The readers open, map and copy lazily; the first uses race each other here (every
thread starts on a dataset nothing has read yet), and every thread must get exactly
the records it asked for.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import cast

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data.source import LocalFileRecords

from .shards import settle

N = 6_000
SPEC = {"i": tfe.FixedLenFeature([], "int64"), "pad": tfe.FixedLenFeature([], "string")}


def _write(folder: Path, shards: int) -> list[str]:
    paths = []
    per = N // shards
    for s in range(shards):
        path = folder / f"c-{s}.tfrecord"
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(
                tfe.encode_example({"i": [i], "pad": [b"p" * (i % 300)]})
                for i in range(s * per, (s + 1) * per)
            )
        paths.append(str(path))
    return paths


def _run_all(jobs: list[Callable[[], None]]) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(len(jobs))

    def wrap(job: Callable[[], None]) -> None:
        try:
            start.wait()
            job()
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


@pytest.mark.parametrize("copies", [False, True], ids=["files", "copies"])
@pytest.mark.parametrize("shards", [1, 4])
def test_threads_reading_one_dataset_get_exactly_their_records(
    tmp_path: Path, shards: int, copies: bool
) -> None:
    # Random reads from the files only (random_holds=False), or from settled files
    # whose whole-file copies (data/random_holds.py) are made while the threads race,
    # between reads of the files and of the copies.
    paths = _write(tmp_path, shards)
    for path in paths if copies else []:
        settle(path)
    ds = tfe.RecordDataset(paths, features=SPEC, random_holds=copies)
    raw = tfe.RecordDataset(ds.paths, random_holds=copies)

    def random_access(seed: int) -> Callable[[], None]:
        def job() -> None:
            rng = np.random.default_rng(seed)
            for _ in range(200):
                i = int(rng.integers(N))
                assert int(ds[i]["i"]) == i
                pick = rng.integers(0, N, 32)
                assert ds[pick]["i"].tolist() == pick.tolist()
                got = [int(tfe.parse_single_example(r, SPEC)["i"]) for r in raw[pick]]
                assert got == pick.tolist()  # the raw records too

        return job

    def epoch(seed: int) -> Callable[[], None]:
        def job() -> None:
            seen = np.concatenate([b["i"] for b in ds.batches(100, shuffle=True, seed=seed)])
            assert sorted(seen.tolist()) == list(range(N))
            assert seen.tolist() != list(range(N))

        return job

    _run_all([random_access(s) for s in range(4)] + [epoch(s) for s in range(4)])
    readers = [*(ds._readers or []), *(raw._readers or [])]
    copied = [isinstance(r, LocalFileRecords) and r._auto for r in readers]
    assert all(copied) if copies else not any(copied)


# The interleavings the threads above hit only sometimes, made to happen: a gather maps
# the file (closing the descriptor the reader used for pread) while another read is
# between taking that descriptor and reading through it.


def _reader(tmp_path: Path) -> tuple[tfe.RecordDataset, LocalFileRecords]:
    ds = tfe.RecordDataset(_write(tmp_path, 1))
    assert ds[0] == ds[0]  # opens the descriptor (pread), not mapped yet
    return ds, cast("LocalFileRecords", ds._readers[0])  # type: ignore[index]


def test_a_map_taken_during_a_single_read_does_not_break_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds, reader = _reader(tmp_path)
    expected = tfe.RecordDataset(ds.paths)[1234]
    real = os.pread
    mapped: list[int | None] = []

    def pread_after_a_map(fd: int, n: int, at: int) -> bytes:
        if not mapped:  # another thread maps the file just now
            mapped.append(reader.base_address(np.array([0])))
        return real(fd, n, at)

    monkeypatch.setattr(os, "pread", pread_after_a_map)
    assert ds[1234] == expected
    assert mapped == [reader._base]
    assert mapped[0] is not None


def test_a_descriptor_in_use_outlives_the_map_that_retires_it(tmp_path: Path) -> None:
    _, reader = _reader(tmp_path)
    fd = reader.acquire()
    assert reader.base_address(np.array([0])) is not None
    assert os.pread(fd, 4, 0) == Path(reader.path).read_bytes()[:4]
    reader.unacquire()
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(fd)
