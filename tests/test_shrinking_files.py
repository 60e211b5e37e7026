"""Files cut, rewritten or replaced while a reader has them open: an error, never SIGBUS.

Touching a page of a memory map past the end of its file kills the process with SIGBUS,
so the engine reads record bytes with ``pread`` (random access, epochs, read-ahead
threads, decode workers) and checks the file's size before each block of a sequential
read. Each scenario runs in a child process: a regression shows here as a failure
with the child's signal, not as a dead test runner.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

N = 20_000

# Written once per child: 20,000 Examples of ~540 bytes, indexed by the writer.
_PRELUDE = """
import os, sys
import numpy as np
import tfrecord_engine as tfe

path = sys.argv[1]

def write(p):
    with tfe.TFRecordWriter(p, index=True) as w:
        w.write_many(
            [tfe.encode_example({"x": [i], "pad": [b"y" * 500]}) for i in range(20_000)]
        )

write(path)
spec = {"x": tfe.FixedLenFeature([], "int64")}

def cut():
    os.truncate(path, os.path.getsize(path) // 2)

def outcome(fn):
    try:
        fn()
    except (tfe.StaleIndexError, tfe.DataLossError, tfe.WorkerError) as exc:
        print("ERROR", type(exc).__name__, exc)
    else:
        print("NO ERROR")
"""

SCENARIOS = {
    # Random access, raw and parsed, one record and a batch.
    "getitem raw": "ds = tfe.RecordDataset([path]); ds[0]; cut(); outcome(lambda: ds[N - 1])",
    "getitem parsed": (
        "ds = tfe.RecordDataset([path], features=spec); ds[0]; cut(); outcome(lambda: ds[N - 1])"
    ),
    "getitem list": (
        "ds = tfe.RecordDataset([path], features=spec); ds[[0, 1]]; cut();"
        " outcome(lambda: ds[list(range(N - 64, N))])"
    ),
    # A scattered batch maps the file for gathers: one record is then copied from the map.
    "getitem after a gather": (
        "ds = tfe.RecordDataset([path]); ds[[0, 5000, 9000]]; cut(); outcome(lambda: ds[N - 1])"
    ),
    "iteration": "ds = tfe.RecordDataset([path]); ds[0]; cut(); outcome(lambda: list(ds))",
    # One-process epochs: in order, globally shuffled, raw and parsed.
    "epoch": (
        "ds = tfe.RecordDataset([path], features=spec); ds[0]; cut();"
        " outcome(lambda: [b for b in ds.batches(256)])"
    ),
    "shuffled epoch": (
        "ds = tfe.RecordDataset([path]); ds[0]; cut();"
        " outcome(lambda: [b for b in ds.batches(256, shuffle=True, seed=1)])"
    ),
    # Read-ahead threads already running when the file is cut under them (reading it
    # in runs: with its in-memory copy, an epoch under way reads the file no more).
    "epoch under way": (
        "ds = tfe.RecordDataset([path], features=spec);"
        " it = iter(ds.batches(64, in_memory=False)); next(it); cut();"
        " outcome(lambda: [b for b in it])"
    ),
    # Decode workers (separate processes) and their parent.
    "workers": (
        "ds = tfe.RecordDataset([path], features=spec); ds[0]; cut();"
        " outcome(lambda: [b for b in ds.batches(256, workers=2)])"
    ),
    # (Chunks of one batch: with ~4,096-record chunks the epoch's 5 chunks could all be
    # queued, and read, before the cut, which then reads nothing more: a race under load.)
    "workers under way": (
        "from tfrecord_engine.data import epochs; epochs.CHUNK_BYTES = 1 << 16;"
        " ds = tfe.RecordDataset([path], features=spec); it = iter(ds.batches(64, workers=2));"
        " next(it); cut(); outcome(lambda: [b for b in it])"
    ),
    # Sequential reading of a mapped file, cut between two records it yields.
    "read_records": (
        "it = tfe.read_records(path); next(it); cut(); outcome(lambda: sum(1 for _ in it))"
    ),
    "read_records skip": (
        "it = tfe.read_records(path, on_damage='skip'); next(it); cut();"
        " outcome(lambda: sum(1 for _ in it))"
    ),
    # Several shards: the gather that reads one record per file.
    "shards": (
        "other = path + '-b'; write(other);"
        " ds = tfe.RecordDataset([path, other]); ds[[0, N]]; cut();"
        " outcome(lambda: ds[list(range(N - 8, N + 8))])"
    ),
}


# Batches are copied out of a map by process_vm_readv where the kernel allows it, and
# read with pread otherwise: both ways are run.
_NO_GATHER = "from tfrecord_engine.storage import safecopy\nsafecopy._readv = None\n"


def run_child(
    tmp_path: Path, body: str, *, gather: bool = True
) -> subprocess.CompletedProcess[str]:
    code = _PRELUDE + ("" if gather else _NO_GATHER) + f"\nN = {N}\n" + textwrap.dedent(body) + "\n"
    return subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "data.tfrecord")],
        env={**os.environ, "PYTHONPATH": os.environ.get("TFE_UNDER_TEST", "")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.parametrize("gather", [True, False], ids=["gather", "pread"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_file_cut_under_a_reader_raises_a_located_error(
    tmp_path: Path, name: str, gather: bool
) -> None:
    done = run_child(tmp_path, SCENARIOS[name], gather=gather)
    assert done.returncode != -signal.SIGBUS, f"{name}: killed by SIGBUS\n{done.stderr}"
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip().splitlines()[-1]
    assert line.startswith("ERROR "), line
    # Located: the file and where the missing bytes were expected.
    assert "data.tfrecord" in line
    assert re.search(r"record \d+ at offset \d+", line), line


def test_an_epoch_holding_its_copy_delivers_the_file_as_it_was(tmp_path: Path) -> None:
    # The epoch read the file whole (CRC-checked) when it reached it: cut afterwards, it
    # delivers every record of that snapshot, and the next epoch finds the file cut.
    done = run_child(
        tmp_path,
        """
        ds = tfe.RecordDataset([path], features=spec)
        it = iter(ds.batches(64))
        first = next(it)
        cut()
        xs = [int(x) for x in first["x"]] + [int(x) for b in it for x in b["x"]]
        print("HELD", xs == list(range(N)))
        outcome(lambda: [b for b in ds.batches(64)])
        """,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "HELD True"
    assert lines[1].startswith("ERROR StaleIndexError"), lines[1]
    assert "data.tfrecord" in lines[1]


def test_a_file_replaced_by_rename_keeps_the_open_one_or_says_it_changed(tmp_path: Path) -> None:
    # os.replace swaps the name: readers that opened the old file go on reading it (its
    # bytes are still whole); a dataset opened afterwards finds the sidecar stale and
    # indexes the new file.
    done = run_child(
        tmp_path,
        """
        ds = tfe.RecordDataset([path], features=spec)
        ds[0]
        new = path + ".new"
        with tfe.TFRecordWriter(new) as w:
            w.write_many([b"other"] * 10)
        os.replace(new, path)
        print("OLD", int(ds[N - 1]["x"]), sum(len(b["x"]) for b in ds.batches(1000)))
        fresh = tfe.RecordDataset([path])  # the old sidecar is stale: indexed again
        print("NEW", len(fresh), fresh[9])
        """,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines == [f"OLD {N - 1} {N}", "NEW 10 b'other'"]


def test_a_file_rewritten_in_place_to_the_same_size_fails_its_crc(tmp_path: Path) -> None:
    done = run_child(
        tmp_path,
        """
        ds = tfe.RecordDataset([path])
        ds[0]
        size = os.path.getsize(path)
        with open(path, "r+b") as f:  # another job rewriting the file in place
            f.write(b"\\x5a" * size)
        outcome(lambda: ds[N - 1])
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("ERROR CorruptedRecordError")


@pytest.mark.skipif(not hasattr(os, "truncate"), reason="needs os.truncate")
def test_the_scenarios_really_cut_the_file(tmp_path: Path) -> None:
    # Guards the test itself: the children read a file half its written size.
    done = run_child(
        tmp_path, "full = os.path.getsize(path); cut(); print(full, os.path.getsize(path))"
    )
    full, half = map(int, done.stdout.split())
    assert half == full // 2
    assert full > 10_000_000


def test_gathered_and_pread_batches_are_the_same_records(tmp_path: Path) -> None:
    body = """
    other = path + "-b"
    write(other)
    import hashlib
    for files in ([path], [path, other]):
        ds = tfe.RecordDataset(files)
        digest = hashlib.sha256()
        for batch in ds.batches(100, shuffle=True, seed=3):
            digest.update(b"".join(batch))
        digest.update(b"".join(ds[[5, 17, N - 1, 0]]))
        print(len(ds), digest.hexdigest())
    """
    one = run_child(tmp_path, body)
    other = run_child(tmp_path, body, gather=False)
    assert one.returncode == other.returncode == 0, one.stderr + other.stderr
    assert one.stdout == other.stdout
    assert one.stdout.split()[::2] == [str(N), str(2 * N)]


def test_shards_read_with_pread_after_their_maps_replaced_the_descriptors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A gather maps each shard and closes its own descriptor (the map keeps one); if
    # the kernel then refuses the copy, the reads fall back to pread through each
    # reader's fileno(), which opens the file again: no descriptor kept that was closed.
    import tfrecord_engine as tfe
    from tfrecord_engine.storage import safecopy

    paths = []
    for s in range(2):
        p = tmp_path / f"s{s}.tfrecord"
        with tfe.TFRecordWriter(p, index=True) as w:
            w.write_many([b"%d-%d" % (s, i) for i in range(50)])
        paths.append(str(p))
    ds = tfe.RecordDataset(paths)
    assert ds[[0, 50]] == [b"0-0", b"1-0"]
    monkeypatch.setattr(safecopy, "_readv", None)
    assert ds[[1, 51, 49, 99]] == [b"0-1", b"1-1", b"0-49", b"1-49"]
    ds.close()
