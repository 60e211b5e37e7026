"""Epochs with glibc's default malloc thresholds and with fixed ones: an A/B in processes.

glibc hands freed memory back to the kernel (its *trim* and *mmap* thresholds, which it
moves as a program runs), and the next allocation faults those pages in again: ~2.8 µs a
page on the 2-core VM. An epoch's batches are large arrays allocated and freed over and
over, on several threads, so how many of their pages fault varies from epoch to epoch.
This tool runs the same epochs in child processes started with the defaults and with
fixed thresholds (``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_THRESHOLD_``: environment
variables glibc reads at start-up), two of each, alternating, and prints best and median
epoch times with the median of the epochs' minor page faults::

    python -m benchmarks.bench_malloc                        # tokens, ragged, detection, image
    python -m benchmarks.bench_malloc --shapes tokens --rounds 12

Neither the library nor the other benchmarks set these variables: a process's allocator
is its owner's choice. Shapes: the matrix's (``benchmarks.shapes``, 20,000 records, their
cached files). Epochs: parsed batches of 256 and 4,096 in order, and of 256 shuffled,
with ``batches``' defaults.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys

from benchmarks.common import timed_with_faults
from benchmarks.shape_cases import count, ours_for
from benchmarks.shapes import SHAPES, write_shape
from tfrecord_engine import RecordDataset

RECORDS = 20_000
EPOCHS = ((256, False), (4096, False), (256, True))
#: The fixed thresholds: freed memory stays with the process up to 1 GiB at the top of
#: a heap, and blocks up to 32 MiB (glibc's largest) come from the heaps, not from mmap.
TUNED = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}


def _records(ds: RecordDataset, key: str, batch: int, shuffle: bool, seed: int) -> int:
    """Records in an epoch of ``ds`` (``key`` counts them), every batch read."""
    return sum(count(b, key) for b in ds.batches(batch, shuffle=shuffle, seed=seed))


def child(name: str, rounds: int, records: int) -> dict[str, list[list[float]]]:
    """``{epoch label: [[seconds, faults], ...]}`` of ``rounds`` epochs of each kind."""
    shape = SHAPES[name]
    ds = ours_for(shape, write_shape(shape, records)).ds
    key = shape.count_key
    out: dict[str, list[list[float]]] = {}
    for batch, shuffle in EPOCHS:
        label = f"{batch} {'shuffled' if shuffle else 'in order'}"
        _records(ds, key, batch, shuffle, 0)  # untimed
        for r in range(rounds):
            epoch = functools.partial(_records, ds, key, batch, shuffle, r)
            got, seconds, faults = timed_with_faults(epoch)
            if got != len(ds):
                raise RuntimeError(f"{name}, {label}: {got} records, expected {len(ds)}")
            out.setdefault(label, []).append([seconds, faults])
    ds.close()
    return out


def _run_child(name: str, rounds: int, records: int, tuned: bool) -> dict[str, list[list[float]]]:
    env = {k: v for k, v in os.environ.items() if k not in TUNED}
    if tuned:
        env.update(TUNED)
    args = [sys.executable, "-m", "benchmarks.bench_malloc", "--child", name]
    result = subprocess.run(
        [*args, "--rounds", str(rounds), "--records", str(records)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    parsed: dict[str, list[list[float]]] = json.loads(result.stdout.strip().splitlines()[-1])
    return parsed


def compare(name: str, rounds: int, records: int = RECORDS) -> list[str]:
    """Table rows for shape ``name``: each epoch, default and fixed thresholds."""
    write_shape(SHAPES[name], records)  # written once, before the children read it
    runs: dict[bool, dict[str, list[list[float]]]] = {False: {}, True: {}}
    for _ in range(2):
        for tuned in (False, True):
            for label, got in _run_child(name, rounds, records, tuned).items():
                runs[tuned].setdefault(label, []).extend(got)
    rows = []
    for label in runs[False]:
        cells = []
        for tuned in (False, True):
            seconds = [s for s, _ in runs[tuned][label]]
            faults = statistics.median(f for _, f in runs[tuned][label])
            cells.append(
                f"{min(seconds) * 1e3:.1f} / {statistics.median(seconds) * 1e3:.1f} ms, "
                f"{faults:,.0f} faults"
            )
        medians = [statistics.median(s for s, _ in runs[t][label]) for t in (False, True)]
        rows.append(
            f"| {name} | {label} | {cells[0]} | {cells[1]} | {medians[0] / medians[1]:.2f}x |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="*", default=["tokens", "ragged", "detection", "image"])
    parser.add_argument("--rounds", type=int, default=6, help="epochs of each kind per child")
    parser.add_argument("--records", type=int, default=RECORDS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.rounds, args.records)))
        return
    print(
        "| shape | epoch (batch, order) | default: best / median, faults | fixed thresholds |"
        " median speed-up |"
    )
    print("|---|---|---|---|---:|")
    for name in args.shapes:
        for row in compare(name, args.rounds, args.records):
            print(row, flush=True)


if __name__ == "__main__":
    main()
