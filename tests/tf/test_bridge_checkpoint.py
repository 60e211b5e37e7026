"""tf.train.Checkpoint of a bridge iterator: head + rest == the uninterrupted epoch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.tf.bridge_helpers import epoch_indices, write_file
from tfrecord_bridge import to_tf_dataset

N = 45
BATCH = 4


def _dataset(tmp: str, dense: bool = False) -> tfe.RecordDataset:
    features = {"index": tfe.FixedLenFeature([], "int64"), "v": tfe.VarLenFeature("int64")}
    if dense:
        # Every output a plain tensor: the pipeline has no rebuild step after unbatch.
        features["v"] = tfe.FixedLenFeature([2], "int64")
    records = [
        tfe.encode_example({"index": [i], "v": np.arange(2 if dense else i % 4, dtype=np.int64)})
        for i in range(N)
    ]
    return tfe.RecordDataset(write_file(tmp, records), features=features)


def _make(ds: tfe.RecordDataset, **kw: Any) -> Any:
    return to_tf_dataset(ds, BATCH, shuffle=True, seed=5, pad_remainder=True, **kw)


def _engine_epoch(ds: tfe.RecordDataset, epoch: int) -> list[list[int]]:
    return [
        b["index"][b["mask"]].tolist()
        for b in ds.batches(BATCH, shuffle=True, seed=5, epoch=epoch, pad_remainder=True)
    ]


@pytest.mark.parametrize(
    ("head", "chunk", "dense"),
    [
        (1, None, False),
        (5, None, False),
        (11, None, False),
        (12, None, False),
        (5, 2, False),
        (7, 3, False),
        (4, 1, False),
        (5, None, True),
        (7, 3, True),
        (4, 1, True),
    ],
)
def test_restore_mid_epoch_continues_the_same_epoch(
    tf: ModuleType, tmp_path: Any, head: int, chunk: int | None, dense: bool
) -> None:
    ds = _dataset(str(tmp_path), dense)
    tf_ds = _make(ds, chunk_batches=chunk)
    epoch0, epoch1, epoch2 = (_engine_epoch(ds, e) for e in range(3))
    assert epoch0 != epoch1
    assert epoch_indices(tf_ds) == epoch0
    # Interrupt the second iteration (epoch 1) after `head` batches.
    it = iter(tf_ds)
    got = epoch_indices(next(it) for _ in range(head))
    prefix = str(tmp_path / "ckpt" / "it")
    path = tf.train.Checkpoint(iterator=it).save(prefix)
    rest_same = epoch_indices(it)
    assert got + rest_same == epoch1
    # Restore into an iterator of a brand-new pipeline (fresh Python state) that is set
    # to start epoch 2 next, as after `fit(initial_epoch=2)`.
    fresh = _make(_dataset(str(tmp_path), dense), epoch=2, chunk_batches=chunk)
    it2 = iter(fresh)
    tf.train.Checkpoint(iterator=it2).restore(path).assert_consumed()
    rest = epoch_indices(it2)
    assert got + rest == epoch1, "head + rest == the uninterrupted epoch"
    # The restored iterator kept its own epoch; the pipeline's next iteration is epoch 2.
    assert epoch_indices(fresh) == epoch2


def test_restore_before_the_first_batch_starts_the_next_epoch(
    tf: ModuleType, tmp_path: Any
) -> None:
    # Nothing consumed, nothing decided: TensorFlow saves no epoch (it restores the
    # pipeline to its start), so the restored iterator starts the epoch its own pipeline
    # would start next -- here the `epoch` argument of a fresh pipeline.
    ds = _dataset(str(tmp_path))
    tf_ds = _make(ds)
    assert epoch_indices(tf_ds) == _engine_epoch(ds, 0)
    it = iter(tf_ds)
    path = tf.train.Checkpoint(iterator=it).save(str(tmp_path / "ckpt" / "it"))
    assert epoch_indices(it) == _engine_epoch(ds, 1)
    it2 = iter(_make(_dataset(str(tmp_path)), epoch=1))
    tf.train.Checkpoint(iterator=it2).restore(path)
    assert epoch_indices(it2) == _engine_epoch(ds, 1)


def test_restore_in_a_fresh_process(tf: ModuleType, tmp_path: Any) -> None:
    ds = _dataset(str(tmp_path))
    tf_ds = _make(ds)
    assert epoch_indices(tf_ds) == _engine_epoch(ds, 0)
    full = _engine_epoch(ds, 1)
    it = iter(tf_ds)
    head = epoch_indices(next(it) for _ in range(3))
    path = tf.train.Checkpoint(iterator=it).save(str(tmp_path / "ckpt" / "it"))
    script = textwrap.dedent(
        f"""
        import json
        import tfrecord_engine as tfe
        import tensorflow as tf
        from tests.tf.bridge_helpers import epoch_indices
        from tfrecord_bridge import to_tf_dataset
        ds = tfe.RecordDataset({ds.paths[0]!r}, features={{
            "index": tfe.FixedLenFeature([], "int64"), "v": tfe.VarLenFeature("int64")}})
        it = iter(to_tf_dataset(ds, {BATCH}, shuffle=True, seed=5, pad_remainder=True))
        tf.train.Checkpoint(iterator=it).restore({path!r}).assert_consumed()
        print(json.dumps(epoch_indices(it)))
        """
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rest = json.loads(done.stdout.strip().splitlines()[-1])
    assert head + rest == full


@pytest.mark.parametrize("dense", [False, True])
def test_restore_mid_epoch_with_decode_workers(tf: ModuleType, tmp_path: Any, dense: bool) -> None:
    # Decoding in worker processes: the same epochs, and a restore continues exactly.
    ds = _dataset(str(tmp_path), dense)
    try:
        tf_ds = _make(ds, workers=1, chunk_batches=3)
        assert epoch_indices(tf_ds) == _engine_epoch(ds, 0)
        it = iter(tf_ds)
        head = epoch_indices(next(it) for _ in range(5))
        path = tf.train.Checkpoint(iterator=it).save(str(tmp_path / "ckpt" / "it"))
        # (The same file: rewriting it would make the first dataset's file a replaced one.)
        with tfe.RecordDataset(ds.paths, features=ds.features) as again:
            fresh = _make(again, epoch=2, workers=1, chunk_batches=3)
            it2 = iter(fresh)
            tf.train.Checkpoint(iterator=it2).restore(path).assert_consumed()
            assert head + epoch_indices(it2) == _engine_epoch(ds, 1)
    finally:
        ds.close()
