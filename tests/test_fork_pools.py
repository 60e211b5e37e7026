"""Thread pools made before a fork: a forked child (a PyTorch DataLoader worker, a
multiprocessing pool) has none of the parent's threads, so it must make its own.

The dense decoder walks a large batch's chunks on a thread pool. A child forked after
the parent had used it waited forever on the parent's pool (found by the benchmark
matrix: a DataLoader with workers hung after ``ds[indices]`` in the parent).
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine import kernels
from tfrecord_engine.example import dense

SPEC = {"x": tfe.FixedLenFeature([256], "float32"), "y": tfe.FixedLenFeature([], "int64")}


def _decode_all(ds: tfe.RecordDataset) -> None:
    out = ds[np.arange(len(ds))]
    assert out["y"].tolist() == list(range(len(ds)))
    os._exit(0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_decodes_with_its_own_pool(tmp_path: Path) -> None:
    kernels.wait()
    if not kernels.enabled() or dense._pool() is None:
        pytest.skip("the dense plan's pool needs the kernels and two cores")
    path = tmp_path / "t.tfrecord"
    rng = np.random.default_rng(0)
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(
            tfe.encode_example({"x": rng.random(256, np.float32), "y": [i]}) for i in range(3000)
        )
    ds = tfe.RecordDataset(path, features=SPEC)
    ds[np.arange(len(ds))]  # ~3 MB: its chunks are walked on the pool, in this process
    assert dense._POOL
    child = multiprocessing.get_context("fork").Process(target=_decode_all, args=(ds,))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the forked child hung on the parent's thread pool")
    assert child.exitcode == 0
