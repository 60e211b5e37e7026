"""``RecordDataset(storage_options=)`` on a real S3 store, with fsspec's global
configuration (and ``FSSPEC_S3``, which child processes read) pointing at a decoy (see
``s3_explicit`` in conftest.py): globs, indexes, reads, decode workers, DataLoader workers
and the node-local cache pass only if the dataset's own options reached the store."""

from __future__ import annotations

import pathlib
import pickle
from typing import Any, cast

import numpy as np
import pytest

import tfrecord_engine as tfe

from ..optional import require
from .conftest import S3Explicit

FEATURES = {"label": tfe.FixedLenFeature([], "int64")}
PER_SHARD = 60


def _write(s3: S3Explicit, shards: int = 3) -> str:
    """``shards`` indexed shards of Examples labelled 0, 1, ...; their glob."""
    for s in range(shards):
        url = f"{s3.url}/train-{s:05d}-of-{shards:05d}.tfrecord"
        with tfe.TFRecordWriter(url, index=True, storage_options=s3.options) as w:
            w.write_many(tfe.encode_example({"label": PER_SHARD * s + i}) for i in range(PER_SHARD))
    return f"{s3.url}/train-*"


def _labels(batches: Any) -> list[int]:
    got: list[int] = np.concatenate([b["label"] for b in batches]).tolist()
    return got


def test_a_dataset_reads_globs_and_indexes_with_its_options(s3_explicit: S3Explicit) -> None:
    s3 = s3_explicit
    ds = tfe.RecordDataset(_write(s3), features=FEATURES, storage_options=s3.options)
    assert len(ds.paths) == 3  # the glob was listed with the options
    assert len(ds) == 3 * PER_SHARD
    assert ds[[179, 0, 61]]["label"].tolist() == [179, 0, 61]
    assert int(ds[-1]["label"]) == 179
    assert _labels(ds.batches(32)) == list(range(180))
    assert all(dict(i.storage_options or {}) == s3.options for i in ds.indexes)
    # Never shown; a pickled copy (a worker's) reaches the store on its own.
    assert s3.endpoint.secret not in repr(ds)
    assert s3.endpoint.key not in repr(ds)
    copy = pickle.loads(pickle.dumps(ds))
    assert dict(copy.storage_options or {}) == s3.options
    assert copy[[5, 125]]["label"].tolist() == [5, 125]
    copy.close()
    ds.close()


def test_decode_workers_get_the_options(s3_explicit: S3Explicit) -> None:
    s3 = s3_explicit
    ds = tfe.RecordDataset(_write(s3), features=FEATURES, storage_options=s3.options)
    want = _labels(ds.batches(16, shuffle=True, seed=4, epoch=0))
    # The workers are fresh interpreters: FSSPEC_S3 names the decoy there.
    got = _labels(ds.batches(16, shuffle=True, seed=4, epoch=0, workers=2))
    assert got == want
    assert sorted(got) == list(range(180))
    ds.close()


@pytest.mark.parametrize("context", ["spawn", pytest.param("fork", marks=pytest.mark.slow)])
def test_dataloader_workers_get_the_options(s3_explicit: S3Explicit, context: str) -> None:
    require("torch")
    from torch.utils.data import DataLoader, Dataset

    s3 = s3_explicit
    ds = tfe.RecordDataset(_write(s3, shards=2), features=FEATURES, storage_options=s3.options)
    # spawn: each worker unpickles the dataset in a fresh interpreter (no indexes: it
    # opens them itself, with the pickled options).
    loader = DataLoader(
        cast("Dataset[dict[str, Any]]", ds),
        batch_size=16,
        shuffle=False,
        num_workers=2,
        multiprocessing_context=context,
    )
    labels = np.concatenate([b["label"].numpy() for b in loader])
    assert labels.tolist() == list(range(2 * PER_SHARD))
    ds.close()


def test_the_cache_fills_and_reads_with_the_options(
    s3_explicit: S3Explicit, tmp_path: pathlib.Path
) -> None:
    s3 = s3_explicit
    pattern = _write(s3)
    cache = tmp_path / "cache"
    ds = tfe.RecordDataset(pattern, features=FEATURES, cache_dir=cache, storage_options=s3.options)
    assert _labels(ds.batches(50, shuffle=True, seed=2)) != list(range(180))
    # Every shard was copied (version queries, fills and the store's sidecars all
    # reached the store), and is read from its local copy.
    copies = [i.data_path for i in ds.indexes]
    assert len(set(copies)) == 3
    assert all(pathlib.Path(c).parent == cache for c in copies)
    copy = pickle.loads(pickle.dumps(ds))  # a worker's: the cache state carries them
    assert _labels(copy.batches(64)) == list(range(180))
    copy.close()
    got = _labels(ds.batches(40, workers=2))
    assert got == list(range(180))
    ds.close()


def test_arrow_writes_and_reads_with_the_options(s3_explicit: S3Explicit) -> None:
    require("pyarrow")
    import pyarrow as pa

    import tfrecord_engine.arrow as tfa

    s3 = s3_explicit
    paths = tfa.write(
        pa.table({"label": list(range(30))}),
        f"{s3.url}/arrow/t",
        num_shards=2,
        storage_options=s3.options,
    )
    assert [p.rsplit("/", 1)[-1] for p in paths] == [
        "t-00000-of-00002.tfrecord",
        "t-00001-of-00002.tfrecord",
    ]
    table = tfa.read_table(f"{s3.url}/arrow/t-*", storage_options=s3.options)
    assert table.to_pydict() == {"label": list(range(30))}
    assert tfa.infer_schema(paths, storage_options=s3.options).names == ["label"]
    # A dataset given as the source keeps its own options (its raw copy too).
    ds = tfe.RecordDataset(paths, features=FEATURES, storage_options=s3.options)
    assert tfa.read_table(ds)["label"].to_pylist() == list(range(30))
    ds.close()


def test_torch_iterable_workers_get_the_options(s3_explicit: S3Explicit) -> None:
    require("torch")
    from torch.utils.data import DataLoader

    from tfrecord_engine.torch import RecordIterableDataset

    s3 = s3_explicit
    ds = tfe.RecordDataset(_write(s3, shards=2), features=FEATURES, storage_options=s3.options)
    it = RecordIterableDataset(ds, batch_size=10)
    loader = DataLoader(it, batch_size=None, num_workers=2, multiprocessing_context="spawn")
    labels = sorted(int(x) for b in loader for x in b["label"])
    assert labels == list(range(2 * PER_SHARD))
    ds.close()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ray_reads_and_writes_with_the_options(s3_explicit: S3Explicit) -> None:
    ray = require("ray")
    require("pyarrow")
    from tfrecord_engine import ray as tr

    s3 = s3_explicit
    # Ray's workers inherit FSSPEC_S3, which names the decoy: only the options given
    # reach the store.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.execution_options.preserve_order = True
    try:
        pattern = _write(s3, shards=2)
        got = tr.read_tfrecords(pattern, features=FEATURES, storage_options=s3.options).take_all()
        assert [int(row["label"]) for row in got] == list(range(2 * PER_SHARD))
        assert tr.count(pattern, storage_options=s3.options) == 2 * PER_SHARD
        out = f"{s3.url}/out"
        items = ray.data.from_items([{"record": b"r%d" % i} for i in range(30)])
        written = tr.write_tfrecords(items, out, num_rows_per_file=10, storage_options=s3.options)
        assert len(written) == 3
        back = tfe.RecordDataset(f"{out}/part-*", storage_options=s3.options)
        assert sorted(back[list(range(len(back)))]) == sorted(b"r%d" % i for i in range(30))
        back.close()
    finally:
        ray.shutdown()
