"""Datasets of more shards than the process may keep open (issue 29, item 1).

Each case runs in a child process whose soft ``RLIMIT_NOFILE`` is set low (256, or the
usual 1,024) before it opens more shards than that (or than half of that, the budget
its readers may keep open): every access pattern must deliver exactly its records, the
readers closing the least recently used files and reopening them on their next read
(:mod:`tfrecord_engine.storage.descriptors`). Before the budget, each shard kept a
descriptor or a map open and the first read past the limit failed with ``EMFILE``.
"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from .isolated import run_python

_SCRIPT = """
import os, resource, sys
import numpy as np

limit, shards, compression, folder, cases = (
    int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] or None, sys.argv[4], sys.argv[5]
)
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
import tfrecord_engine as tfe

PER = 3
paths = []
for k in range(shards):
    path = os.path.join(folder, f"part-{k:05d}.tfrecord")
    # "mixed": every other shard GZIP
    kind = ("GZIP" if k % 2 == 0 else None) if compression == "mixed" else compression
    with tfe.TFRecordWriter(path, compression=kind, index=True, durable=False) as w:
        w.write_many([tfe.encode_example({"k": [k], "j": [j]}) for j in range(PER)])
    paths.append(path)
n = shards * PER
want = np.arange(n)
spec = {"k": tfe.FixedLenFeature([], "int64"), "j": tfe.FixedLenFeature([], "int64")}
ds = tfe.RecordDataset(paths, features=spec)
raw = tfe.RecordDataset(paths)
rng = np.random.default_rng(0)


def global_index(batch):
    return np.asarray(batch["k"]) * PER + np.asarray(batch["j"])


def shuffled(**kw):
    got = np.concatenate([global_index(b) for b in ds.batches(64, shuffle=True, seed=1, **kw)])
    assert sorted(got.tolist()) == want.tolist()


def in_order():
    got = np.concatenate([global_index(b) for b in ds.batches(64)])
    assert got.tolist() == want.tolist()


def sharded():
    got = [
        global_index(b)
        for s in range(3)
        for b in ds.batches(64, shuffle=True, seed=2, shard_index=s, shard_count=3, in_memory=False)
    ]
    assert sorted(np.concatenate(got).tolist()) == want.tolist()


def getitem():
    order = rng.permutation(n)
    for i in order.tolist():
        got = ds[i]
        assert int(got["k"]) * PER + int(got["j"]) == i


def getitem_list():
    order = rng.permutation(n)
    assert global_index(ds[order.tolist()]).tolist() == order.tolist()
    assert raw[order] == [raw[int(i)] for i in order]


def getitems():
    order = rng.permutation(n)[:600]
    got = [int(s["k"]) * PER + int(s["j"]) for s in ds.__getitems__(order.tolist())]
    assert got == order.tolist()


def threads():
    # Four threads sharing the dataset: readers closed for the budget by one thread
    # while another reads them (never closed under a read: pinned, or read again).
    import threading

    failures = []

    def work(seed):
        r = np.random.default_rng(seed)
        try:
            for it in range(12):
                idx = r.integers(0, n, 150)
                if it % 3 == 0:
                    assert [raw[i] for i in idx.tolist()] == raw[idx]
                    assert all(int(ds[i]["k"]) == i // PER for i in idx.tolist()[:50])
                elif it % 3 == 1:
                    assert global_index(ds[idx]).tolist() == idx.tolist()
                else:
                    got = ds.batches(64, shuffle=True, seed=it, shard_index=seed % 2, shard_count=2)
                    assert len(np.concatenate([global_index(b) for b in got])) == n // 2
        except Exception as exc:
            failures.append(exc)

    pool = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if failures:
        raise failures[0]


CASES = {
    "threads": threads,
    "in_order": in_order,
    "shuffled": shuffled,
    "shuffled_not_in_memory": lambda: shuffled(in_memory=False),
    "sharded": sharded,
    "getitem": getitem,
    "getitem_list": getitem_list,
    "getitems": getitems,
    "workers": lambda: shuffled(workers=2),
}
for name in cases.split(","):
    try:
        CASES[name]()
    except Exception as exc:
        print(name, "FAILED", type(exc).__name__, exc)
    else:
        print(name, "OK")
print("OPEN", len(os.listdir("/proc/self/fd")))
"""

ALL = (
    "in_order,shuffled,shuffled_not_in_memory,sharded,getitem,getitem_list,getitems,workers,threads"
)


def _hard_limit() -> int:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return 1 << 30 if hard == resource.RLIM_INFINITY else hard


def _run(tmp_path: Path, limit: int, shards: int, compression: str, cases: str) -> list[str]:
    if _hard_limit() < limit:
        pytest.skip(f"the hard limit of open files is below {limit}")
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("counts descriptors in /proc/self/fd (Linux)")
    done = run_python(
        _SCRIPT, str(limit), str(shards), compression, str(tmp_path), cases, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[:-1] == [f"{name} OK" for name in cases.split(",")], done.stdout
    # The readers kept about their budget open (half the limit), clear of the limit.
    assert int(lines[-1].split()[1]) <= limit // 2 + 32, lines[-1]
    return lines


def test_every_access_pattern_over_more_shards_than_the_descriptor_limit(tmp_path: Path) -> None:
    _run(tmp_path, 256, 600, "", ALL)


def test_more_shards_than_the_usual_limit_of_1024(tmp_path: Path) -> None:
    # (The cases that touch every shard in one pass, to stay quick.)
    _run(tmp_path, 1024, 1100, "", "in_order,shuffled_not_in_memory,getitem_list,workers")


def test_gzip_shards_share_the_budget(tmp_path: Path) -> None:
    # GZIP readers now keep their file open between block reads (they opened it for
    # every block before, so alone they never ran out): they share the budget with
    # the uncompressed shards' readers. Every other shard is GZIP: a batch is then
    # read file by file, not gathered across files.
    _run(tmp_path, 256, 600, "mixed", ALL.removesuffix(",threads"))


_EXHAUSTED = """
import os, resource, sys
import tfrecord_engine as tfe

def dataset(name):
    paths = []
    for k in range(3):
        path = os.path.join(sys.argv[1], f"{name}-{k}.tfrecord")
        with tfe.TFRecordWriter(path, index=True, durable=False) as w:
            w.write_many([b"a", b"b"])
        paths.append(path)
    return tfe.RecordDataset(paths)


# Every read once, on other files: what they import on first use is imported now, and
# the compiled kernels' background load is done (it opens files of its own, and the
# reads below take other paths while it runs).
warm = dataset("warm")
warm[0], warm[[0, 2, 4]], list(warm.batches(4))
warm.close()
from tfrecord_engine import kernels
kernels.wait()
ds = dataset("part")
assert len(ds) == 6  # the indexes are loaded; no data file is open yet
free = os.dup(0)  # the lowest free descriptor number: the limit makes it the last
os.close(free)
resource.setrlimit(resource.RLIMIT_NOFILE, (free, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
for name, read in [
    ("getitem", lambda: ds[0]),
    ("getitem_list", lambda: ds[[0, 2, 4]]),
    ("batches", lambda: list(ds.batches(4))),
]:
    try:
        read()
    except OSError as exc:
        print(name, exc.errno, exc)
    else:
        print(name, "NO ERROR")
"""


def test_no_descriptor_left_names_the_file_and_what_to_do(tmp_path: Path) -> None:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("Linux")
    done = run_python(_EXHAUSTED, str(tmp_path), timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["getitem", "getitem_list", "batches"]
    for line in lines:
        assert line.split()[1] == "24", line  # EMFILE
        assert str(tmp_path / "part-0.tfrecord") in line, line
        assert "ulimit -n" in line, line
        assert "fewer shards" in line, line
