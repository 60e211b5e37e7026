"""Keras on the bridge: fit over epochs in new orders, exact evaluate (also distributed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from types import ModuleType
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from tests.tf.bridge_helpers import write_file
from tfrecord_bridge import to_tf_dataset

N = 70
DIM = 3


def _dataset(tmp: str) -> tfe.RecordDataset:
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((N, DIM)).astype(np.float32)
    records = [
        tfe.encode_example({"index": [i], "x": xs[i], "y": [float(i % 2)]}) for i in range(N)
    ]
    features = {
        "index": tfe.FixedLenFeature([], "int64"),
        "x": tfe.FixedLenFeature([DIM], "float32"),
        "y": tfe.FixedLenFeature([1], "float32"),
    }
    return tfe.RecordDataset(write_file(tmp, records), features=features)


def test_fit_sees_every_record_once_per_epoch_in_new_orders(tf: ModuleType, tmp_path: Any) -> None:
    keras = tf.keras
    ds = _dataset(str(tmp_path))
    log: list[list[int]] = []

    class Logged(keras.Model):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, x: Any) -> Any:
            return self.dense(x)

        def train_step(self, data: Any) -> Any:
            x, y, index = data
            log.append(index.numpy().tolist())  # eager: the batches really trained on
            return super().train_step((x, y))

    boundaries: list[int] = []
    marker = keras.callbacks.LambdaCallback(on_epoch_end=lambda *_: boundaries.append(len(log)))
    model = Logged()
    model.compile(optimizer="sgd", loss="mse", run_eagerly=True)
    train = to_tf_dataset(ds, 16, shuffle=True, seed=9).map(lambda b: (b["x"], b["y"], b["index"]))
    model.fit(train, epochs=2, verbose=0, callbacks=[marker], shuffle=False)
    epochs = [log[: boundaries[0]], log[boundaries[0] : boundaries[1]]]
    orders = [[i for batch in e for i in batch] for e in epochs]
    assert [sorted(o) for o in orders] == [list(range(N))] * 2, "each record once per epoch"
    assert orders[0] != orders[1], "a new order each epoch"
    engine = [
        [i for b in ds.batches(16, shuffle=True, seed=9, epoch=e) for i in b["index"].tolist()]
        for e in range(2)
    ]
    assert orders == engine, "Keras epochs 0 and 1 are the engine's epochs 0 and 1"


class _Count:
    """Builds a weighted metric that sums the weights and weighted record indices."""

    @staticmethod
    def make(keras: Any) -> Any:
        class IndexSums(keras.metrics.Metric):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__(name="sums")
                self.count = self.add_weight(name="count", shape=(), initializer="zeros")
                self.total = self.add_weight(name="total", shape=(), initializer="zeros")

            def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
                w = keras.ops.reshape(keras.ops.cast(sample_weight, "float32"), (-1,))
                idx = keras.ops.reshape(keras.ops.cast(y_true, "float32"), (-1,))
                self.count.assign_add(keras.ops.sum(w))
                self.total.assign_add(keras.ops.sum(w * (idx + 1.0)))

            def result(self) -> Any:
                return keras.ops.stack([self.count.value, self.total.value])

        return IndexSums()


def test_evaluate_counts_each_record_once(tf: ModuleType, tmp_path: Any) -> None:
    keras = tf.keras
    ds = _dataset(str(tmp_path))
    inputs = keras.Input((DIM,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(loss="mse", weighted_metrics=[_Count.make(keras)])
    # 70 records in batches of 16: the last batch is padded with 10 masked records.
    ev = to_tf_dataset(ds, 16, pad_remainder=True).map(
        lambda b: (b["x"], tf.cast(b["index"], tf.float32), tf.cast(b["mask"], tf.float32))
    )
    result = model.evaluate(ev, verbose=0, return_dict=True)
    count, total = np.asarray(result["sums"]).tolist()
    assert count == N
    assert total == N * (N + 1) / 2


DISTRIBUTED = """
import json, sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import tfrecord_engine as tfe
from tfrecord_bridge import to_tf_dataset
from tests.tf.test_bridge_keras import DIM, _Count
ds = tfe.RecordDataset(sys.argv[1], features={
    "index": tfe.FixedLenFeature([], "int64"), "x": tfe.FixedLenFeature([DIM], "float32")})
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
GLOBAL = 16
def make(ctx):
    bs = ctx.get_per_replica_batch_size(GLOBAL)
    out = to_tf_dataset(ds, bs, pad_remainder=True, input_context=ctx)
    return out.map(lambda b: (b["x"], tf.cast(b["index"], tf.float32),
                              tf.cast(b["mask"], tf.float32)))
seen = []
dist = strategy.distribute_datasets_from_function(make)
for x, idx, w in dist:
    for i, m in zip(strategy.experimental_local_results(idx),
                    strategy.experimental_local_results(w)):
        seen += [int(v) for v, keep in zip(i.numpy(), m.numpy()) if keep]
with strategy.scope():
    inputs = tf.keras.Input((DIM,))
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(inputs))
    model.compile(loss="mse", weighted_metrics=[_Count.make(tf.keras)])
result = model.evaluate(strategy.distribute_datasets_from_function(make), verbose=0,
                        return_dict=True)
print(json.dumps({"replicas": strategy.num_replicas_in_sync, "seen": seen,
                  "sums": [float(v) for v in result["sums"]]}))
"""


def test_distributed_evaluate_counts_each_record_once(tf: ModuleType, tmp_path: Any) -> None:
    # Logical devices must be configured before TensorFlow initializes: a fresh process.
    ds = _dataset(str(tmp_path))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(DISTRIBUTED), ds.paths[0]],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["replicas"] == 2
    assert sorted(out["seen"]) == list(range(N)), "each record once across replicas"
    assert out["sums"] == [N, N * (N + 1) / 2]


def test_only_weighted_metrics_are_exact_the_loss_counts_the_padding(
    tf: ModuleType, tmp_path: Any
) -> None:
    """What docs/bridge.md says of masked evaluation: a metric given as a weighted
    metric is the exact mean over the real records; the loss Keras reports is not
    (it divides each batch's weighted loss by the batch size, padding included)."""
    keras = tf.keras
    ds = _dataset(str(tmp_path))
    inputs = keras.Input((DIM,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(
        loss="mse",
        weighted_metrics=[keras.metrics.MeanSquaredError(name="weighted_mse")],
        metrics=[keras.metrics.MeanSquaredError(name="plain_mse")],
    )
    # 70 records in batches of 16: 80 slots, the last 10 masked.
    ev = to_tf_dataset(ds, 16, pad_remainder=True).map(
        lambda b: (b["x"], b["y"], tf.cast(b["mask"], tf.float32))
    )
    result = model.evaluate(ev, verbose=0, return_dict=True)
    xs = np.stack([b["x"] for b in ds.batches(N)])[0]
    ys = np.stack([b["y"] for b in ds.batches(N)])[0]
    exact = float(np.mean((np.asarray(model(xs)) - ys) ** 2))
    slots = 80
    assert np.isclose(result["weighted_mse"], exact, rtol=1e-5)
    assert np.isclose(result["loss"], exact * N / slots, rtol=1e-5)
    assert not np.isclose(result["loss"], exact, rtol=1e-3)
    assert not np.isclose(result["plain_mse"], exact, rtol=1e-3)  # no weights: padding counts
