"""Parse throughput: ``tfe.parse_example`` vs ``tf.io.parse_example`` in tf.data.

Both sides read the same TFRecord file of MNIST-like records (int64 ``index``, int64
``label``, 784-byte ``image``) and parse it in batches into numpy / tensors:

- ``tfrecord_engine``: ``read_records`` -> batches of ``batch_size`` -> ``parse_example``;
- ``tf.data``: ``TFRecordDataset`` -> ``batch`` -> ``map(tf.io.parse_example)``.

A second pair of rows parses records already in memory (no file reading) to isolate the
parser; a third measures the exact per-record path (``example.parse.parse_example``)
that the lockstep decoder falls back to.
Run: ``python -m benchmarks.bench_parse [--records N] [--batch-size B]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.data import MNIST_SPEC
from tfrecord_engine.example.parse import parse_example as parse_example_exact

SPEC = MNIST_SPEC


def make_records(n: int, seed: int = 0) -> list[bytes]:
    """``n`` serialized MNIST-like Examples."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 784), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n)
    return [
        tfe.encode_example({"index": i, "label": int(labels[i]), "image": images[i].tobytes()})
        for i in range(n)
    ]


def _best_of(repeats: int, fn: Callable[[], int]) -> float:
    """Best wall time of ``repeats`` runs; ``fn`` returns the records it parsed."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _ours_file(path: Path, batch_size: int) -> int:
    count = 0
    batch: list[bytes] = []
    for record in tfe.read_records(path):
        batch.append(record)
        if len(batch) == batch_size:
            count += len(tfe.parse_example(batch, SPEC)["label"])
            batch = []
    if batch:
        count += len(tfe.parse_example(batch, SPEC)["label"])
    return count


def _ours_memory(
    records: list[bytes], batch_size: int, parse: Callable[..., dict[str, Any]]
) -> int:
    count = 0
    for i in range(0, len(records), batch_size):
        count += len(parse(records[i : i + batch_size], SPEC)["label"])
    return count


def main(argv: list[str] | None = None) -> None:
    """Prints a table of records/s for both sides and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    records = make_records(args.records)
    tf_spec = {
        "index": tf.io.FixedLenFeature([], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "image": tf.io.FixedLenFeature([], tf.string),
    }

    def tf_run(ds: tf.data.Dataset) -> int:
        count = 0
        for batch in ds:
            count += int(batch["label"].shape[0])
        return count

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mnist_like.tfrecord"
        with tfe.TFRecordWriter(path) as writer:
            for record in records:
                writer.write(record)
        tf_file = (
            tf.data.TFRecordDataset(str(path))
            .batch(args.batch_size)
            .map(lambda x: tf.io.parse_example(x, tf_spec), num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )
        tf_memory = (
            tf.data.Dataset.from_tensor_slices(records)
            .batch(args.batch_size)
            .map(lambda x: tf.io.parse_example(x, tf_spec), num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )
        # Sanity: both sides parse the same values.
        ours = tfe.parse_example(records[:8], SPEC)
        theirs = next(iter(tf_memory.take(1)))
        assert ours["label"].tolist() == theirs["label"].numpy()[:8].tolist()
        assert ours["image"].tolist() == theirs["image"].numpy()[:8].tolist()

        rows = [
            (
                "file",
                "tfrecord_engine",
                _best_of(args.repeats, lambda: _ours_file(path, args.batch_size)),
            ),
            (
                "file",
                "tf.data + tf.io.parse_example",
                _best_of(args.repeats, lambda: tf_run(tf_file)),
            ),
            (
                "memory",
                "tfrecord_engine (lockstep)",
                _best_of(
                    args.repeats,
                    lambda: _ours_memory(records, args.batch_size, tfe.parse_example),
                ),
            ),
            (
                "memory",
                "tf.data + tf.io.parse_example",
                _best_of(args.repeats, lambda: tf_run(tf_memory)),
            ),
            (
                "memory",
                "tfrecord_engine (exact path)",
                _best_of(
                    args.repeats,
                    lambda: _ours_memory(records, args.batch_size, parse_example_exact),
                ),
            ),
        ]
        rows.append(rows[3])

    n = args.records
    print(
        f"parse throughput: {n} MNIST-like records ({len(records[0])} bytes each), "
        f"batch {args.batch_size}, best of {args.repeats}, {os.cpu_count()} CPUs"
    )
    print(f"{'source':<8} {'engine':<32} {'records/s':>12} {'vs tf':>8}")
    for i, (source, engine, seconds) in enumerate(rows):
        tf_seconds = rows[i | 1][2]
        print(f"{source:<8} {engine:<32} {n / seconds:>12,.0f} {tf_seconds / seconds:>7.2f}x")


if __name__ == "__main__":
    main()
