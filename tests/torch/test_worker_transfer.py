"""Batches made in ``DataLoader`` workers cross to the main process as one block.

A worker hands each tensor's memory over as a shared-memory block of its own (~0.2 ms
each, more than decoding a batch), so the engine cuts every number of a batch made in
a worker from one block (``formats.joint_torch``): map-style samples there are
``WorkerSample`` s, which the taught ``default_collate`` batches as it batches plain
dicts; ``tfe.torch.RecordIterableDataset`` converts its batches so. These tests check
that the batches are the same as without workers, value for value and type for type,
and that their tensors share one block (``bytes`` values cross in it too, as a
``BytesColumn`` that arrives as a plain list).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data.collate import BytesColumn, WorkerSample

from ..optional import require
from ..test_samples import SPEC, record, write

torch = require("torch")
from torch.utils.data import DataLoader, Dataset, default_collate  # noqa: E402 - after the skip

from tfrecord_engine.torch import RecordIterableDataset  # noqa: E402

N = 40


@pytest.fixture(scope="module")
def path() -> str:
    return write([record(i) for i in range(N)])


def _same(a: Any, b: Any) -> bool:
    """Equal batches: the same types throughout, tensors of one dtype, shape and values."""
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return bool(a.dtype == b.dtype and a.shape == b.shape and a.tolist() == b.tolist())
    return bool(a == b)


def _tensors(batch: Any) -> Iterator[Any]:
    if isinstance(batch, torch.Tensor):
        yield batch
    elif isinstance(batch, dict):
        for v in batch.values():
            yield from _tensors(v)
    elif isinstance(batch, (list, tuple)):
        for v in batch:
            yield from _tensors(v)


def _blocks(batch: Any) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in _tensors(batch)}


def test_worker_samples_collate_as_plain_dicts_into_one_block(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In a worker (simulated: get_worker_info answers), __getitems__ gives WorkerSamples;
    # default_collate batches them exactly as it batches the plain dicts given outside
    # one, every kind of SPEC included, with every tensor one view of one block.
    ds = tfe.RecordDataset(path, features=SPEC)
    idx = [5, 0, 17, 33, 2, 8]
    plain = ds.__getitems__(idx)
    assert all(type(s) is dict for s in plain)
    want = default_collate(plain)
    assert len(_blocks(want)) > 1
    monkeypatch.setattr(torch.utils.data, "get_worker_info", object)
    samples = ds.__getitems__(idx)
    assert all(type(s) is WorkerSample for s in samples)
    assert all(dict(s).keys() == p.keys() for s, p in zip(samples, plain, strict=True))
    made = default_collate(samples)
    assert type(made) is dict
    assert len(_blocks(made)) == 1
    # (Made in shared memory: the hand-over sends it as it is, with no copy of its own.)
    assert all(t.is_shared() for t in _tensors(made))
    # (bytes values cross in the block too, and arrive as a plain list: a round trip
    # through pickle, as the worker's hand-over does.)
    assert type(made["s"]) is BytesColumn
    assert made["s"] == want["s"]
    got = pickle.loads(pickle.dumps(made))
    assert type(got["s"]) is list
    assert _same(got, want)
    # Samples converted one by one in a worker (a torch-format dataset) stay in the
    # worker (default_collate copies them): private memory, not a shared segment each
    # (one file descriptor apiece while they live: a big batch ran out of them).
    converted = ds.with_format("torch").__getitems__(idx)
    assert not any(t.is_shared() for t in _tensors(converted))
    # The torch host's batches: converted into one block in a worker too.
    it = RecordIterableDataset(ds, 8)
    first = next(iter(it))
    assert len(_blocks(first)) == 1
    assert all(t.is_shared() for t in _tensors(first))


def test_loader_workers_give_the_batches_of_the_main_process(path: str) -> None:
    # Real worker processes: map-style with the default collate, and the torch host's
    # iterable dataset; the same batches as without workers, each crossing as one block.
    ds = tfe.RecordDataset(path, features=SPEC)
    mapped = cast("Dataset[dict[str, Any]]", ds)  # (a map-style Dataset by protocol)
    alone = list(DataLoader(mapped, batch_size=8))
    crossed = list(DataLoader(mapped, batch_size=8, num_workers=2))
    assert len(alone) == len(crossed) == N // 8
    for a, b in zip(alone, crossed, strict=True):
        assert _same(b, a)
        assert len(_blocks(b)) == 1
    it = RecordIterableDataset(ds, 8)
    alone = list(DataLoader(it, batch_size=None))
    crossed = list(DataLoader(it, batch_size=None, num_workers=2))

    def key(batch: dict[str, Any]) -> list[int]:
        got: list[int] = batch["i"].tolist()
        return got

    # (The workers' batches interleave.)
    assert sorted(map(key, crossed)) == sorted(map(key, alone))
    by_first = {key(b)[0]: b for b in alone}
    for b in crossed:
        assert _same(b, by_first[key(b)[0]])
        assert len(_blocks(b)) == 1
    # (Kept apart from the batch: one clone owns its memory.)
    kept = crossed[0]["f"].clone()
    assert kept.untyped_storage().nbytes() == kept.numel() * kept.element_size()
    assert np.array_equal(kept.numpy(), crossed[0]["f"].numpy())


def test_the_worker_transfer_benchmark_runs_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # benchmarks.bench_worker_transfer on a few batches: its lines, and its "before"
    # side really hands plain samples and tensor-by-tensor batches over (then restored).
    from benchmarks import bench_worker_transfer, shapes
    from tfrecord_engine.data import formats, output_methods

    monkeypatch.setattr(shapes, "DATA_DIR", tmp_path)
    monkeypatch.setattr(bench_worker_transfer, "RECORDS", 600)
    monkeypatch.setattr(bench_worker_transfer, "BATCHES", 8)
    (line,) = bench_worker_transfer.tensors([3], epochs=1)
    assert line.startswith("   3 tensors a batch: separate")
    got = bench_worker_transfer.shape("tabular", epochs=1)
    assert got.startswith("tabular: block ")
    assert "over protobuf: block " in got
    assert "tensors " in got
    before = vars(output_methods)["worker_samples"]
    with bench_worker_transfer._per_tensor():
        assert vars(output_methods)["worker_samples"] is not before
        assert formats.in_loader_worker() is False
    assert vars(output_methods)["worker_samples"] is before


def test_the_dense_decode_keeps_to_the_calling_thread_in_a_loader_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A loader's workers decode side by side already: the dense decode's thread pool
    # would only hand chunks between threads competing for the same cores.
    from tfrecord_engine import kernels
    from tfrecord_engine.example import dense

    assert kernels.available()  # (loads them, as the decode needs them here)
    spec = {"blob": tfe.FixedLenFeature([], "string"), "y": tfe.FixedLenFeature([], "int64")}
    records = [tfe.encode_example({"blob": [bytes(8000)], "y": [i]}) for i in range(400)]
    asked: list[int] = []
    real = dense._pool

    def pool() -> Any:
        asked.append(1)
        return real()

    monkeypatch.setattr(dense, "_pool", pool)
    monkeypatch.setattr(dense, "POOL_MIN_KERNEL_S", 0.0)  # (the pool whatever the cost)
    want = tfe.parse_example(records, spec)
    assert asked  # (3 MB of records: chunks for the pool, outside a worker)
    asked.clear()
    monkeypatch.setattr(torch.utils.data, "get_worker_info", object)
    got = tfe.parse_example(records, spec)
    assert not asked
    assert got["y"].tolist() == want["y"].tolist() == list(range(400))
    assert got["blob"].tolist() == want["blob"].tolist()
