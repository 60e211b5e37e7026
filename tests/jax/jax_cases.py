"""JAX on ``ds.batches`` output: ``strings="drop"`` makes a batch a numeric pytree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe

from ..optional import require
from ..snippets import run, section

jax = require("jax")
jnp = require("jax.numpy")

SPEC: dict[str, Any] = {
    "x": tfe.FixedLenFeature([3], "float32"),
    "y": tfe.FixedLenFeature([], "int64"),
    "name": tfe.FixedLenFeature([], "string"),
    "tags": tfe.VarLenFeature("string"),
}


@pytest.fixture
def ds(tmp_path: Path) -> tfe.RecordDataset:
    path = tmp_path / "j.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(
            tfe.encode_example(
                {
                    "x": np.array([i, 2 * i, -i], np.float32),
                    "y": i % 5,
                    "name": [b"n%d" % i],
                    "tags": np.array([b"t"] * (i % 3), dtype=object),
                }
            )
            for i in range(96)
        )
    return tfe.RecordDataset(str(path), features=SPEC)


def test_jitted_step_on_batches(ds: tfe.RecordDataset) -> None:
    with pytest.raises(TypeError):
        jax.device_put(next(ds.batches(32)))  # object arrays of bytes

    def add(total: Any, batch: dict[str, Any]) -> Any:
        return total + jnp.sum(batch["x"], axis=0) + jnp.sum(batch["y"])

    step = jax.jit(add)

    total = jnp.zeros(3)
    seen: list[int] = []
    for batch in ds.batches(32, shuffle=True, seed=1, strings="drop"):
        assert sorted(batch) == ["x", "y"]
        on_device = jax.device_put(batch)
        total = step(total, on_device)
        seen += (np.asarray(on_device["x"])[:, 0]).astype(int).tolist()
    assert sorted(seen) == list(range(96))
    ys = sum(i % 5 for i in range(96))
    expected = [sum(range(96)) + ys, 2 * sum(range(96)) + ys, -sum(range(96)) + ys]
    assert np.asarray(total).tolist() == expected


def test_jax_snippet(tmp_path: Path) -> None:
    (code,) = section("JAX")
    assert run(code, tmp_path) == ["['x', 'y'] (4,)"]
