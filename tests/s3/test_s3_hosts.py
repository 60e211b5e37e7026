"""The hosts over ``s3://``: PyTorch's DataLoader (worker processes open the store
themselves) and Ray Data (read and write tasks in Ray's worker processes, which get the
store's settings through ``FSSPEC_S3``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from types import ModuleType
from typing import Any, cast

import numpy as np
import pytest

import tfrecord_engine as tfe

from ..optional import require
from .conftest import S3

FEATURES = {"label": tfe.FixedLenFeature([], "int64")}


def _write(s3: S3, shards: int = 2, per_shard: int = 40) -> str:
    for s in range(shards):
        url = f"{s3.url}/train-{s:05d}-of-{shards:05d}.tfrecord"
        with tfe.TFRecordWriter(url, index=True) as w:
            w.write_many(tfe.encode_example({"label": per_shard * s + i}) for i in range(per_shard))
    return f"{s3.url}/train-*"


@pytest.mark.parametrize("context", ["fork", pytest.param("spawn", marks=pytest.mark.slow)])
def test_torch_dataloader_workers_read_s3(s3: S3, context: str) -> None:
    require("torch")
    from torch.utils.data import DataLoader, Dataset

    # A map-style Dataset by protocol, not by class.
    ds = cast("Dataset[dict[str, Any]]", tfe.RecordDataset(_write(s3), features=FEATURES))
    loader = DataLoader(
        ds, batch_size=16, shuffle=False, num_workers=2, multiprocessing_context=context
    )
    labels = np.concatenate([b["label"].numpy() for b in loader])
    assert labels.tolist() == list(range(80))


@pytest.fixture(scope="module")
def ray_s3() -> Iterator[ModuleType]:
    """Ray for this module; its workers reach the store through ``FSSPEC_S3`` (set by
    the session's S3 configuration)."""
    ray = require("ray")
    require("pyarrow")
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    yield ray
    if ray.is_initialized():
        ray.shutdown()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ray_reads_and_writes_s3(s3: S3, ray_s3: ModuleType) -> None:
    from tfrecord_engine import ray as tr

    env = {"FSSPEC_S3": os.environ["FSSPEC_S3"]}
    json.loads(env["FSSPEC_S3"])  # set by the session's configuration
    ray_s3.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
        runtime_env={"env_vars": env},
    )
    ctx = ray_s3.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.execution_options.preserve_order = True
    try:
        got = tr.read_tfrecords(_write(s3), features=FEATURES).take_all()
        assert [int(row["label"]) for row in got] == list(range(80))
        out = f"{s3.url}/out"
        items = ray_s3.data.from_items([{"record": b"r%d" % i} for i in range(30)])
        items.write_datasink(tr.TFRecordDatasink(out, num_rows_per_file=10))
        written = tfe.RecordDataset(f"{out}/part-*")
        assert sorted(written[list(range(len(written)))]) == sorted(b"r%d" % i for i in range(30))
    finally:
        ray_s3.shutdown()
