"""The tf.data bridge vs TensorFlow's native pipeline, both consumed as tensors, one run.

    python -m benchmarks.bench_bridge

Ours: ``to_tf_dataset(RecordDataset(path, features), 256, workers=W)`` (decoding in W
worker processes, one per core but one: 1 on 2 cores; ``TFE_BENCH_WORKERS`` overrides;
the "one process" rows decode in the ``numpy_function`` call).
TensorFlow's anchor is the idiomatic fast pipeline
``TFRecordDataset(path).batch(256).map(parse_example, AUTOTUNE).prefetch(AUTOTUNE)``;
for the shuffled case ``.shuffle(10000)`` goes before ``.batch`` (ours is a true
global shuffle). Both run in the same process, alternating, best of five runs after
one untimed run of each (``TFE_BENCH_REPEATS`` changes the five); with
``--device /GPU:0`` both end with ``prefetch_to_device``.

Each pipeline is consumed three ways:

- **in a tf.function**: one ``tf.function`` iterates the whole epoch, as Keras' ``fit``
  and custom training loops consume a dataset (``next`` on the iterator is a graph
  op): the pipeline's own throughput, with no Python between batches.
- **Python loop**: ``for batch in dataset`` in eager mode; each batch becomes Python
  ``EagerTensor`` objects (~150-250 µs per batch of three tensors on the 2-core
  machine, paid by both sides).
- **per-step calls**: a Python loop calling a ``tf.function`` step that takes
  ``next(iterator)`` (Keras' loop with ``steps_per_execution=1`` and no model): the
  step call's own overhead, under the GIL, then bounds both sides, and whatever the
  bridge does under the GIL adds to it.

A second table compares the bridge with the engine's own numpy iterator
(``RecordDataset.batches``): the bridge cannot be faster than the decoder that feeds it.
A third runs the bridge's own pipeline on chunks decoded in advance: its TensorFlow
side alone.
"""

from __future__ import annotations

import argparse
import itertools
import os
from collections.abc import Callable
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.bench_pipeline import _specs, _tf_parse
from benchmarks.common import Measurement, compare, repeats, table
from benchmarks.data import mnist_like, tabular
from tfrecord_engine.data.dataset import DEFAULT_CHUNK_RECORDS

BATCH = 256
#: Timed runs of each case (best kept), after one untimed run of every case: the first
#: call of each pipeline traces its ``tf.function`` (both sides) and starts the decode
#: processes (ours), one-time costs that a training job pays once, not per epoch.
REPEATS = repeats(5)
#: Decode processes for the bridge: one per core but one, which this process keeps for
#: TensorFlow's side (the hand-off, unbatch, the consumer's loop). On 2 cores, two runs
#: of this module gave MNIST-like 413k records/s with 1 worker, 265k with 2.
WORKERS = int(os.environ.get("TFE_BENCH_WORKERS", str(max(1, (os.cpu_count() or 2) - 1))))


def _first_dim(batch: dict[str, Any]) -> int:
    return int(next(iter(batch.values())).shape[0])


def _counting(dataset: Any) -> Callable[[], tuple[int, int]]:
    """A benchmark case: one pass over a ``tf.data`` dataset in a Python loop."""

    def run() -> tuple[int, int]:
        n = 0
        for batch in dataset:
            n += _first_dim(batch)
        return n, 0

    return run


def _in_graph(tf: Any, dataset: Any) -> Callable[[], tuple[int, int]]:
    """A benchmark case: one pass inside one ``tf.function`` (no Python per batch)."""

    def count() -> Any:
        n = tf.constant(0, tf.int64)
        for batch in dataset:
            n += tf.shape(next(iter(batch.values())), out_type=tf.int64)[0]
        return n

    traced = tf.function(count)
    return lambda: (int(traced()), 0)


def _per_step(tf: Any, dataset: Any, steps: int) -> Callable[[], tuple[int, int]]:
    """A benchmark case: ``steps`` calls of a ``tf.function`` step taking the next batch."""

    def step(iterator: Any) -> Any:
        return tf.shape(next(iter(next(iterator).values())), out_type=tf.int64)[0]

    traced = tf.function(step)

    def run() -> tuple[int, int]:
        iterator = iter(dataset)
        n = tf.constant(0, tf.int64)
        for _ in range(steps):
            n += traced(iterator)
        return int(n), 0

    return run


def _cases(
    path: str, name: str, shuffle: bool, device: str | None
) -> list[tuple[str, Callable[[], tuple[int, int]]]]:
    import tensorflow as tf

    from tfrecord_bridge import to_tf_dataset

    ours_spec, tf_spec = _specs(name)
    raw_specs = {k: v for k, v in ours_spec.items() if isinstance(v, tfe.RawFeature)}
    ds = tfe.RecordDataset(path, features=ours_spec)
    ours_ds = to_tf_dataset(ds, BATCH, shuffle=shuffle, seed=1, device=device, workers=WORKERS)
    one_process_ds = to_tf_dataset(ds, BATCH, shuffle=shuffle, seed=1, device=device)

    raw = tf.data.TFRecordDataset(path)
    if shuffle:
        raw = raw.shuffle(10_000, seed=1)
    theirs_ds = (
        raw.batch(BATCH)
        .map(lambda b: _tf_parse(b, tf_spec, raw_specs), num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )
    if device is not None:
        theirs_ds = theirs_ds.apply(tf.data.experimental.prefetch_to_device(device))

    def engine() -> tuple[int, int]:
        n = 0
        for batch in ds.batches(BATCH, shuffle=shuffle, seed=1, workers=WORKERS):
            n += len(batch["label"])
        return n, 0

    standin_ds = _standin(tf, ds, ours_spec, shuffle)
    steps = -(-len(ds) // BATCH)

    # Each run of a bridge dataset is its next epoch (a new order when shuffled).
    return [
        (f"to_tf_dataset(workers={WORKERS}), in a tf.function", _in_graph(tf, ours_ds)),
        ("tf.data parse_example, in a tf.function", _in_graph(tf, theirs_ds)),
        ("to_tf_dataset (one process), in a tf.function", _in_graph(tf, one_process_ds)),
        (f"to_tf_dataset(workers={WORKERS}), Python loop", _counting(ours_ds)),
        ("tf.data parse_example, Python loop", _counting(theirs_ds)),
        ("to_tf_dataset (one process), Python loop", _counting(one_process_ds)),
        (f"to_tf_dataset(workers={WORKERS}), per-step calls", _per_step(tf, ours_ds, steps)),
        ("tf.data parse_example, per-step calls", _per_step(tf, theirs_ds, steps)),
        (f"RecordDataset.batches(workers={WORKERS}) (numpy)", engine),
        ("bridge pipeline on precomputed chunks, in a tf.function", _in_graph(tf, standin_ds)),
    ]


def _standin(tf: Any, ds: tfe.RecordDataset, features: dict[str, Any], shuffle: bool) -> Any:
    """The bridge's own pipeline fed one epoch's chunks decoded in advance.

    What it costs is the TensorFlow side alone (the ``numpy_function`` hand-off, unbatch,
    prefetch, the consumer's loop): the bridge's speed with a decoder that needs no
    time under the GIL (e.g. one in worker processes).
    """
    from tfrecord_bridge.dataset import _chunk_pipeline
    from tfrecord_bridge.layout import Layout
    from tfrecord_bridge.source import EpochBatches
    from tfrecord_bridge.specs import element_spec

    source = EpochBatches(ds, BATCH, shuffle=shuffle, seed=1, readahead=0)
    layout = Layout(tf, element_spec(tf, features, None))
    bounds = source.chunks(max(1, DEFAULT_CHUNK_RECORDS // BATCH))
    chunks = [
        layout.pack([source.get(0, k) for k in range(a, b)]) for a, b in itertools.pairwise(bounds)
    ]
    source.close()
    return _chunk_pipeline(
        tf,
        layout,
        num_chunks=len(chunks),
        num_batches=source.num_batches,
        fetch=lambda e, c: chunks[int(c)],
        next_epoch=lambda: np.array(0, np.int64),
    )


def run(device: str | None = None) -> str:
    """Runs the bridge benchmarks; returns a Markdown table."""
    graph: list[tuple[str, Measurement, Measurement | None]] = []
    loop: list[tuple[str, Measurement, Measurement | None]] = []
    stepped: list[tuple[str, Measurement, Measurement | None]] = []
    overhead: list[tuple[str, Measurement, Measurement | None]] = []
    tf_side: list[tuple[str, Measurement, Measurement | None]] = []
    for label, path, name, shuffle in (
        ("MNIST-like, batches of 256", mnist_like(), "mnist", False),
        (
            "MNIST-like, image as uint8 [784] (RawFeature / decode_raw)",
            mnist_like(),
            "mnist_raw",
            False,
        ),
        ("tabular, batches of 256", tabular(), "tabular", False),
        ("MNIST-like, global shuffle vs shuffle(10000)", mnist_like(), "mnist", True),
    ):
        (ours_g, theirs_g, one_g, ours_l, theirs_l, one_l, ours_s, theirs_s, engine, standin) = (
            compare(_cases(path, name, shuffle, device), REPEATS, warmup=1)
        )
        graph += [(f"{label}, workers={WORKERS}", ours_g, theirs_g)]
        graph += [(f"{label}, one process", one_g, theirs_g)]
        loop += [(f"{label}, workers={WORKERS}", ours_l, theirs_l)]
        loop += [(f"{label}, one process", one_l, theirs_l)]
        stepped.append((f"{label}, workers={WORKERS}", ours_s, theirs_s))
        overhead.append((label, ours_l, engine))
        tf_side.append((label, standin, ours_g))
    where = f", prefetch_to_device({device!r})" if device else ""
    return "\n\n".join(
        [
            table(f"Bridge vs native pipeline, consumed in a tf.function{where}", graph),
            table(f"Bridge vs native pipeline, consumed in a Python loop{where}", loop),
            table(f"Bridge vs native pipeline, per-step tf.function calls{where}", stepped),
            # How much of the engine's own speed survives the trip into tf.data.
            table("Bridge (Python loop) vs the engine's numpy batches", overhead),
            # The ceiling for the bridge once decoding leaves the GIL.
            table(
                "The bridge's TensorFlow side alone (chunks decoded in advance), "
                "vs the bridge, both in a tf.function",
                tf_side,
            ),
        ]
    )


def main() -> None:
    """Command line: ``--device`` adds ``prefetch_to_device`` to both pipelines."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default=None, help='e.g. "/GPU:0"')
    print(run(parser.parse_args().device))


if __name__ == "__main__":
    main()
