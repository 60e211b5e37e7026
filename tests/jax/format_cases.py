"""``with_format("jax")`` and ``tfe.collate(format="jax")`` (run by tests/jax/test_formats.py
in a process of its own: JAX starts threads on import, see :mod:`tests.isolated`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.example.varlen import varlen_array

from ..optional import require

jax = require("jax")

SPEC = {
    "x": tfe.FixedLenFeature([3], "float32"),
    "y": tfe.FixedLenFeature([], "int64"),
    "name": tfe.FixedLenFeature([], "string"),
}


def test_with_format_jax(tmp_path: Path) -> None:
    path = tmp_path / "j.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(
            tfe.encode_example({"x": np.full(3, i, np.float32), "y": i, "name": b"n%d" % i})
            for i in range(40)
        )
    ds = tfe.RecordDataset(str(path), features=SPEC).with_format("jax")
    one = ds[3]
    assert isinstance(one["x"], jax.Array)
    assert one["name"] == b"n3"
    batch = next(iter(ds.batches(16)))
    assert isinstance(batch["y"], jax.Array)
    assert batch["y"].tolist() == list(range(16))
    assert batch["name"][:2] == [b"n0", b"n1"]


def test_collate_to_jax_and_int64_beyond_int32() -> None:
    out = tfe.collate(
        [{"v": varlen_array(np.array([1, 2]))}, {"v": varlen_array(np.array([3]))}], format="jax"
    )
    assert isinstance(out["v"].values, jax.Array)
    assert out["v"].values.tolist() == [[1, 2], [3, 0]]
    if not jax.config.jax_enable_x64:
        with pytest.raises(tfe.InvalidArgumentError, match="jax_enable_x64"):
            tfe.collate([np.int64(1 << 40)], format="jax")
