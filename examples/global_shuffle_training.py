"""Global shuffle vs TensorFlow's buffer shuffle on label-sorted shards, then exact evaluation.

    python examples/global_shuffle_training.py [--records 20000] [--shards 4]

1. Writes MNIST-like shards sorted by label (the worst case for a buffer shuffle, and
   what a naive export of a class-ordered dataset produces), with inline indexes.
2. Compares the first batches of one epoch: the engine's global shuffle
   (``to_tf_dataset(..., shuffle=True)``) against ``TFRecordDataset(files)
   .shuffle(buffer)``: how many of the 10 labels the first batches cover, and the
   Spearman rank correlation between a record's position in the files and its position
   in the epoch (0 for a uniform shuffle, near 1 when order survives).
3. Trains a tiny Keras model on the bridge for a few epochs (a new order each epoch),
   then runs an exact evaluation epoch under ``MirroredStrategy`` with two logical CPU
   devices: padded batches with a mask as the sample weight, so every record is counted
   exactly once, whatever the batch size and replica count.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

LABELS = 10
PIXELS = 784


def write_shards(directory: str, records: int, shards: int, seed: int = 0) -> list[str]:
    """Label-sorted MNIST-like Examples (index, label, image bytes) in ``shards`` files."""
    import tfrecord_engine as tfe

    rng = np.random.default_rng(seed)
    labels = np.sort(rng.integers(0, LABELS, size=records))
    # Learnable images: a bright band whose position encodes the label, plus noise.
    images = rng.integers(0, 64, size=(records, PIXELS), dtype=np.uint8)
    band = PIXELS // LABELS
    for label in range(LABELS):
        images[labels == label, label * band : (label + 1) * band] += 160
    paths = []
    bounds = np.linspace(0, records, shards + 1).astype(int)
    for s in range(shards):
        path = os.path.join(directory, f"mnist-train.tfrecord-{s:05d}-of-{shards:05d}")
        with tfe.TFRecordWriter(path, index=True) as w:
            for i in range(bounds[s], bounds[s + 1]):
                w.write(
                    tfe.encode_example(
                        {"index": [i], "label": [int(labels[i])], "image": images[i].tobytes()}
                    )
                )
        paths.append(path)
    return paths


def spearman(order: np.ndarray[Any, Any]) -> float:
    """Rank correlation between file positions ``order`` and output positions 0..n-1."""
    n = len(order)
    if n < 2:
        return 0.0
    ranks = np.argsort(np.argsort(order)).astype(np.float64)
    d = ranks - np.arange(n, dtype=np.float64)
    return float(1.0 - 6.0 * np.sum(d * d) / (n * (n * n - 1.0)))


def epoch_stats(tf: Any, batches: Any, first: int) -> dict[str, float]:
    """Label coverage of the first ``first`` batches and Spearman rho of the whole epoch."""
    indices, labels = [], []
    for batch in batches:
        indices.append(batch["index"].numpy())
        labels.append(batch["label"].numpy())
    per_batch = [len(set(lab.tolist())) for lab in labels[:first]]
    return {
        "labels_in_first_batches": len(set(np.concatenate(labels[:first]).tolist())),
        "mean_labels_per_batch": float(np.mean(per_batch)),
        "spearman": spearman(np.concatenate(indices)),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Runs the comparison, training and exact evaluation; prints and returns a summary."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--buffer", type=int, default=1_000, help="TF shuffle buffer")
    parser.add_argument("--first", type=int, default=5, help="batches to check coverage on")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--dir", default=None, help="where to write the shards")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)

    import tensorflow as tf

    # Two logical CPU devices so MirroredStrategy has two replicas (before TF starts).
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

    import tfrecord_engine as tfe
    from tfrecord_bridge import to_tf_dataset

    directory = args.dir or tempfile.mkdtemp(prefix="global-shuffle-")
    paths = write_shards(directory, args.records, args.shards)
    features = {
        "index": tfe.FixedLenFeature([], "int64"),
        "label": tfe.FixedLenFeature([], "int64"),
        "image": tfe.FixedLenFeature([], "string"),
    }
    ds = tfe.RecordDataset(paths, features=features)
    engine = to_tf_dataset(ds, args.batch, shuffle=True, seed=0)
    tf_specs = {
        "index": tf.io.FixedLenFeature([], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "image": tf.io.FixedLenFeature([], tf.string),
    }
    buffered = (
        tf.data.TFRecordDataset(paths)
        .shuffle(args.buffer, seed=0)
        .batch(args.batch)
        .map(lambda b: tf.io.parse_example(b, tf_specs))
    )
    summary: dict[str, Any] = {
        "records": len(ds),
        "engine_global_shuffle": epoch_stats(tf, engine, args.first),
        f"tf_shuffle_buffer_{args.buffer}": epoch_stats(tf, buffered, args.first),
    }

    def to_xy(b: dict[str, Any]) -> tuple[Any, Any]:
        image = tf.io.decode_raw(b["image"], tf.uint8)
        return tf.cast(image, tf.float32) / 255.0, b["label"]

    inputs = tf.keras.Input((PIXELS,))
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(LABELS)(inputs))
    model.compile(
        optimizer=tf.keras.optimizers.Adam(0.01),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    history = model.fit(engine.map(to_xy), epochs=args.epochs, verbose=0, shuffle=False)
    summary["train_accuracy"] = [float(a) for a in history.history["accuracy"]]

    # Exact evaluation under a strategy: every record counted once, with weight 1.
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

    def eval_pipeline(ctx: Any) -> Any:
        per_replica = ctx.get_per_replica_batch_size(args.batch)
        padded = to_tf_dataset(ds, per_replica, pad_remainder=True, input_context=ctx)
        return padded.map(lambda b: (*to_xy(b), tf.cast(b["mask"], tf.float32)))

    class Counted(tf.keras.metrics.Metric):  # type: ignore[misc]
        """Sums the sample weights: the number of real records evaluated."""

        def __init__(self) -> None:
            super().__init__(name="records")
            self.total = self.add_weight(name="total", shape=(), initializer="zeros")

        def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
            self.total.assign_add(tf.reduce_sum(tf.cast(sample_weight, tf.float32)))

        def result(self) -> Any:
            return tf.identity(self.total)

    with strategy.scope():
        eval_inputs = tf.keras.Input((PIXELS,))
        evaluator = tf.keras.Model(eval_inputs, tf.keras.layers.Dense(LABELS)(eval_inputs))
        evaluator.set_weights(model.get_weights())  # the trained model, mirrored
        evaluator.compile(
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            weighted_metrics=["accuracy", Counted()],
        )
    result = evaluator.evaluate(
        strategy.distribute_datasets_from_function(eval_pipeline), verbose=0, return_dict=True
    )
    summary["eval_replicas"] = strategy.num_replicas_in_sync
    summary["eval_records"] = round(float(result["records"]))
    summary["eval_accuracy"] = float(result["accuracy"])
    if args.json:
        print(json.dumps(summary))
    else:
        print(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    main()
