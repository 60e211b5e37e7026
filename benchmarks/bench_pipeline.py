"""Parsed-batch pipelines: ours (RecordDataset.batches) vs TensorFlow's tf.data, one run.

    python -m benchmarks.bench_pipeline

Ours decodes in ``workers=2`` processes (both cores, as TensorFlow's AUTOTUNE map
uses them); the "one process" rows are the same pipeline on the read-ahead thread.
TensorFlow's anchor is the idiomatic fast pipeline: ``TFRecordDataset(path)
.batch(256).map(parse_example, AUTOTUNE).prefetch(AUTOTUNE)`` consumed as numpy; for the
shuffled case ``.shuffle(10000)`` goes before ``.batch``. For a ``RawFeature`` (the image
as a uint8 array) TensorFlow's map parses the bytes and applies ``tf.io.decode_raw``: the
same output, by TensorFlow's own means.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

import tfrecord_engine as tfe
from benchmarks.common import Measurement, compare, table
from benchmarks.data import MNIST_SPEC, mnist_like, ragged_text, tabular

BATCH = 256
#: Decode processes for our pipeline (TensorFlow's map runs on every core, AUTOTUNE).
WORKERS = int(os.environ.get("TFE_BENCH_WORKERS", "2"))


def _specs(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    import tensorflow as tf

    if name in ("mnist", "mnist_raw"):
        ours: dict[str, Any] = dict(MNIST_SPEC)  # (a copy: mnist_raw changes its image)
        if name == "mnist_raw":
            ours["image"] = tfe.RawFeature([784], "uint8")
    elif name == "tabular":
        ours = {
            "x": tfe.FixedLenFeature([64], "float32"),
            "ids": tfe.FixedLenFeature([16], "int64"),
            "label": tfe.FixedLenFeature([], "int64"),
        }
    else:
        ours = {
            "tokens": tfe.VarLenFeature("int64"),
            "tags": tfe.RaggedFeature("string"),
        }
    theirs: dict[str, Any] = {}
    for key, spec in ours.items():
        if isinstance(spec, tfe.RawFeature):
            theirs[key] = tf.io.FixedLenFeature([], tf.string)  # then decode_raw: _tf_parse
            continue
        dtype = {"int64": tf.int64, "float32": tf.float32, "string": tf.string}[spec.dtype]
        if isinstance(spec, tfe.FixedLenFeature):
            theirs[key] = tf.io.FixedLenFeature(list(spec.shape), dtype)
        elif isinstance(spec, tfe.VarLenFeature):
            theirs[key] = tf.io.VarLenFeature(dtype)
        else:
            theirs[key] = tf.io.RaggedFeature(dtype)
    return ours, theirs


def _count(batch: dict[str, Any]) -> int:
    first = next(iter(batch.values()))
    if hasattr(first, "dense_shape"):
        return int(first.dense_shape[0])
    if hasattr(first, "row_splits"):
        return len(first.row_splits) - 1
    return len(first)


def _tf_to_numpy(batch: dict[str, Any]) -> dict[str, Any]:
    """TF outputs as numpy through their component arrays.

    ``as_numpy_iterator()`` converts a ``SparseTensor`` element by element in Python,
    which would make TensorFlow look far slower than it is; this is the fast way.
    """
    out: dict[str, Any] = {}
    for key, value in batch.items():
        if hasattr(value, "dense_shape"):
            out[key] = tfe.SparseValue(
                value.indices.numpy(), value.values.numpy(), value.dense_shape.numpy()
            )
        elif hasattr(value, "row_splits"):
            out[key] = tfe.RaggedValue(value.flat_values.numpy(), value.row_splits.numpy())
        else:
            out[key] = value.numpy()
    return out


def _tf_parse(serialized: Any, tf_spec: dict[str, Any], raw: dict[str, Any]) -> Any:
    """TensorFlow's parse_example, then ``decode_raw`` + reshape for each RawFeature key."""
    import tensorflow as tf

    out = tf.io.parse_example(serialized, tf_spec)
    for key, spec in raw.items():
        values = tf.io.decode_raw(out[key], getattr(tf, spec.dtype))
        out[key] = tf.reshape(values, [-1, *spec.shape])
    return out


def _cases(path: str, name: str, shuffle: bool) -> list[tuple[str, Callable[[], tuple[int, int]]]]:
    import tensorflow as tf

    ours_spec, tf_spec = _specs(name)
    ds = tfe.RecordDataset(path, features=ours_spec)
    raw_specs = {k: v for k, v in ours_spec.items() if isinstance(v, tfe.RawFeature)}
    nbytes = 0  # payload bytes are not reported for parsed pipelines

    def epoch(workers: int) -> Callable[[], tuple[int, int]]:
        def run() -> tuple[int, int]:
            n = 0
            for batch in ds.batches(BATCH, shuffle=shuffle, seed=1, workers=workers):
                n += _count(batch)
            return n, nbytes

        return run

    def theirs() -> tuple[int, int]:
        raw = tf.data.TFRecordDataset(path)
        if shuffle:
            raw = raw.shuffle(10_000, seed=1)
        pipe = (
            raw.batch(BATCH)
            .map(lambda b: _tf_parse(b, tf_spec, raw_specs), num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )
        n = 0
        for batch in pipe:
            n += _count(_tf_to_numpy(batch))
        return n, nbytes

    return [
        (f"RecordDataset.batches(workers={WORKERS})", epoch(WORKERS)),
        ("tf.data parse_example", theirs),
        ("RecordDataset.batches (one process)", epoch(0)),
    ]


def _raw_epochs(path: str) -> list[tuple[str, Callable[[], tuple[int, int]]]]:
    """Raw batches of one epoch in one process, in file order and globally shuffled:
    later epochs of one dataset (a shuffled one takes the copy of the file kept from the
    epoch before), and the first epoch of a new dataset each time (it reads the file)."""
    ds = tfe.RecordDataset(path)

    def epoch(shuffle: bool, new: bool) -> Callable[[], tuple[int, int]]:
        def run() -> tuple[int, int]:
            n = b = 0
            with tfe.RecordDataset(path) if new else contextlib.nullcontext(ds) as d:
                for batch in d.batches(BATCH, shuffle=shuffle, seed=1):
                    n += len(batch)
                    b += sum(map(len, batch))
            return n, b

        return run

    return [
        ("raw batches, global shuffle", epoch(True, False)),
        ("raw batches, in order", epoch(False, False)),
        ("raw batches, global shuffle, new dataset", epoch(True, True)),
        ("raw batches, in order, new dataset", epoch(False, True)),
    ]


def run() -> str:
    """Runs the parsed-pipeline benchmarks; returns Markdown tables."""
    rows: list[tuple[str, Measurement, Measurement | None]] = []
    for label, path, name, shuffle in (
        ("MNIST-like, batches of 256", mnist_like(), "mnist", False),
        ("MNIST-like, image as uint8 [784]", mnist_like(), "mnist_raw", False),
        ("tabular, batches of 256", tabular(), "tabular", False),
        ("MNIST-like, global shuffle vs shuffle(10000)", mnist_like(), "mnist", True),
        ("VarLen/Ragged text-like, batches of 256", ragged_text(), "ragged", False),
    ):
        ours, theirs, one_process = compare(_cases(path, name, shuffle))
        rows.append((f"{label}, workers={WORKERS}", ours, theirs))
        rows.append((f"{label}, one process", one_process, theirs))
    shuffled, in_order, first_shuffled, first_in_order = compare(_raw_epochs(mnist_like()))
    raw_rows: list[tuple[str, Measurement, Measurement | None]] = [
        ("MNIST-like raw epoch, shuffled against in order (one process)", shuffled, in_order),
        (
            "the same, first epoch of a new dataset (the shuffled one reads the file whole)",
            first_shuffled,
            first_in_order,
        ),
    ]
    return (
        table("Parsed numpy batches", rows)
        + "\n\n"
        + table(
            "Raw epochs: global shuffle vs file order (ratio: shuffled / in-order speed)",
            raw_rows,
        )
    )


if __name__ == "__main__":
    print(run())
