"""Parsed-batch epochs of one shape, ours against TensorFlow's pipeline, in one process.

A quicker cut of the parsed-batch rows of ``benchmarks.bench_shapes`` for A/B work:
``RecordDataset(files, features).batches(B, shuffle=...)`` against
``TFRecordDataset[.shuffle(10000)].batch(B).map(parse, AUTOTUNE).prefetch``, each epoch
timed ``--reps`` times, ours and TensorFlow's alternating; prints best and median
seconds and their ratios (TensorFlow's time over ours).

Run: ``python -m benchmarks.bench_batches_quick --shapes wide,detection [--reps 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.shape_baselines import tf_parse
from benchmarks.shape_cases import SEED, TF_SHUFFLE_BUFFER, _tf_numpy, count, ours_for
from benchmarks.shapes import SHAPES, write_shape
from tfrecord_engine import kernels


def _time(fn: Callable[[], int]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="wide")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    import tensorflow as tf

    if not kernels.wait(300):
        raise SystemExit("the compiled kernels did not load")
    for name in args.shapes.split(","):
        shape = SHAPES[name]
        paths = write_shape(shape, 20000)
        parse = tf_parse(shape)
        for shuffle in (False, True):
            for size in (256, 4096):
                ours = ours_for(shape, paths)

                key = shape.count_key

                def mine(ours: Any = ours, size: int = size, shuffle: bool = shuffle) -> int:
                    batches = ours.ds.batches(size, shuffle=shuffle, seed=SEED)
                    return sum(count(ours.batch(b), key) for b in batches)  # noqa: B023

                raw = tf.data.TFRecordDataset(paths)
                if shuffle:
                    raw = raw.shuffle(TF_SHUFFLE_BUFFER, seed=SEED)
                pipe = (
                    raw.batch(size)
                    .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
                    .prefetch(tf.data.AUTOTUNE)
                )

                def theirs(pipe: Any = pipe) -> int:
                    return sum(count(_tf_numpy(b), key) for b in pipe)  # noqa: B023

                assert mine() == theirs()  # (and a warm-up of both)
                ours_t, tf_t = [], []
                for _ in range(args.reps):
                    ours_t.append(_time(mine))
                    tf_t.append(_time(theirs))
                best = min(tf_t) / min(ours_t)
                med = statistics.median(tf_t) / statistics.median(ours_t)
                order = "shuffled" if shuffle else "sequential"
                print(
                    f"{name:10s} {order:10s} B={size:5d} ours {min(ours_t):6.3f}/"
                    f"{statistics.median(ours_t):6.3f}s tf {min(tf_t):6.3f}/"
                    f"{statistics.median(tf_t):6.3f}s ratio {best:5.2f}/{med:5.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
