"""The tf.data bridge on the record shapes of the matrix, alternating configurations.

    python -m benchmarks.bench_bridge_shapes --shapes detection,tokens --workers 0,1 --shuffled
    python -m benchmarks.bench_bridge_shapes --readahead 0,2

A focused A/B for the bridge rows of ``benchmarks.bench_shapes``: for each shape (20,000
records, ``benchmarks.shapes``), one process runs TensorFlow's pipeline
(``TFRecordDataset [-> shuffle(10000)] -> batch(256) -> map(parse, AUTOTUNE) ->
prefetch``), ``to_tf_dataset(ds, 256, workers=W, readahead=R)`` for each ``W`` and ``R``
and the engine's numpy
``batches(256)``, round after round, each consumed as the matrix does (a Python loop
touching every tensor of each batch). Prints each case's records/s and its ratio to
TensorFlow, best / median of the rounds: same-process ratios, which on a busy machine
move far less than absolute speeds.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.shape_baselines import tf_parse
from benchmarks.shape_cases import SEED, TF_SHUFFLE_BUFFER, count, ours_for
from benchmarks.shapes import SHAPES, write_shape

RECORDS = 20_000
BATCH = 256


def _loop(pipe: Any, key: str) -> int:
    n = 0
    for batch in pipe:
        n += count(batch, key)
        for part in batch if isinstance(batch, tuple) else (batch,):
            for value in part.values():
                _ = value.shape
    return n


def run_shape(
    name: str, workers: list[int], shuffle: bool, rounds: int, readahead: tuple[int, ...] = (0,)
) -> str:
    """One line: every case of shape ``name``, records/s and ratio to TensorFlow."""
    import tensorflow as tf

    from tfrecord_bridge import to_tf_dataset

    shape = SHAPES[name]
    paths = write_shape(shape, RECORDS)
    ds = ours_for(shape, paths).ds
    raw = tf.data.TFRecordDataset(paths)
    if shuffle:
        raw = raw.shuffle(TF_SHUFFLE_BUFFER, seed=SEED)
    theirs = (
        raw.batch(BATCH)
        .map(tf_parse(shape), num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )
    key = shape.count_key
    cases: dict[str, Callable[[], int]] = {"tf": lambda: _loop(theirs, key)}
    for w in workers:
        for r in readahead:
            bridge = to_tf_dataset(ds, BATCH, shuffle=shuffle, seed=SEED, workers=w, readahead=r)
            label = f"bridge workers={w}" + (f" readahead={r}" if len(readahead) > 1 else "")
            cases[label] = functools.partial(_loop, bridge, key)
    cases["numpy batches"] = lambda: sum(
        count(b, key) for b in ds.batches(BATCH, shuffle=shuffle, seed=SEED)
    )
    times: dict[str, list[float]] = {k: [] for k in cases}
    for run in cases.values():
        run()  # untimed: traces functions, starts decode workers
    for _ in range(rounds):
        for label, run in cases.items():
            start = time.perf_counter()
            got = run()
            times[label].append(time.perf_counter() - start)
            if got != len(ds):
                raise RuntimeError(f"{name}, {label}: {got} records, expected {len(ds)}")
    best, median = min(times["tf"]), statistics.median(times["tf"])
    cells = [
        f"{label}: {len(ds) / min(t) / 1e3:.0f}k/s "
        f"{best / min(t):.2f}/{median / statistics.median(t):.2f}"
        for label, t in times.items()
    ]
    order = "shuffled" if shuffle else "sequential"
    return f"{name} {order}: " + " | ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--workers", default="0", help="comma-separated, e.g. 0,1")
    parser.add_argument("--readahead", default="0", help="comma-separated, e.g. 0,2")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shuffled", action="store_true", help="also the shuffled epochs")
    args = parser.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    readahead = tuple(int(r) for r in args.readahead.split(","))
    for shuffle in (False, True) if args.shuffled else (False,):
        for name in args.shapes.split(","):
            print(run_shape(name, workers, shuffle, args.rounds, readahead), flush=True)


if __name__ == "__main__":
    main()
