"""``torch.utils.data.DataLoader`` over a map-style ``RecordDataset``, as users write it.

The loader calls ``RecordDataset.__getitems__`` with each batch of sampler indices and
hands the list of samples to ``collate_fn``; these tests run the default collate (and
``tfe.collate`` for variable-length features) under fork, spawn and forkserver workers,
with the samplers and wrappers users reach for, and compare every value with the
records written.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

import tfrecord_engine as tfe

from ..optional import require

torch = require("torch")
from torch.utils.data import (  # noqa: E402 - after the skip
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    RandomSampler,
    Subset,
    random_split,
)

N = 300  # two files of 150: batches cross the file boundary
SPEC: dict[str, Any] = {
    "i": tfe.FixedLenFeature([], "int64"),
    "f": tfe.FixedLenFeature([], "float32"),
    "s": tfe.FixedLenFeature([], "string"),
    "xy": tfe.FixedLenFeature([2, 3], "float32"),
    "ids": tfe.FixedLenFeature([3], "int64"),
    "tags": tfe.FixedLenFeature([2], "string"),
    "img": tfe.RawFeature([4, 4], "uint8"),
}
VAR_SPEC: dict[str, Any] = {
    "i": tfe.FixedLenFeature([], "int64"),
    "v": tfe.VarLenFeature("int64"),
    "vs": tfe.VarLenFeature("string"),
    "r": tfe.RaggedFeature("float32", value_key="rf"),
    "seq": tfe.FixedLenSequenceFeature([2], "int64", allow_missing=True),
}


def values(i: int) -> dict[str, Any]:
    """What record ``i`` holds."""
    k = i % 4
    return {
        "i": i,
        "f": i / 4,
        "s": b"s%d" % i,
        "xy": np.arange(6, dtype=np.float32).reshape(2, 3) + i,
        "ids": np.array([i, -i, 7], np.int64),
        "tags": [b"t%d" % i, b"u%d" % (i % 3)],
        "img": (np.arange(16, dtype=np.int64).reshape(4, 4) * i % 256).astype(np.uint8),
        "v": np.arange(k, dtype=np.int64) * i,
        "vs": [b"w%d" % j for j in range(k)],
        "rf": np.full(3 - k if k < 3 else 0, i, np.float32),
        "seq": np.arange(2 * (k % 3), dtype=np.int64) + i,
    }


def encode(i: int) -> bytes:
    v = values(i)
    return tfe.encode_example(
        {
            "i": [v["i"]],
            "f": [v["f"]],
            "s": [v["s"]],
            "xy": v["xy"].reshape(-1),
            "ids": v["ids"],
            "tags": v["tags"],
            "img": [v["img"].tobytes()],
            "v": v["v"],
            "vs": np.array(v["vs"], dtype=object) if v["vs"] else np.zeros(0, object),
            "rf": v["rf"],
            "seq": v["seq"],
        }
    )


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root: Path = tmp_path_factory.mktemp("torch")
    out = []
    for part, span in enumerate((range(150), range(150, N))):
        path = str(root / f"part-{part}.tfrecord")
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many([encode(i) for i in span])
        out.append(path)
    return out


def as_dataset(ds: tfe.RecordDataset) -> Dataset[dict[str, Any]]:
    """``ds`` typed as torch's map-style ``Dataset``: it is one by protocol, not by class."""
    return cast("Dataset[dict[str, Any]]", ds)


@pytest.fixture
def ds(paths: list[str]) -> Dataset[dict[str, Any]]:
    return as_dataset(tfe.RecordDataset(paths, features=SPEC))


def check_batch(batch: dict[str, Any]) -> list[int]:
    """Asserts every value of a default-collated batch; returns its record indices."""
    ids = batch["i"]
    assert isinstance(ids, torch.Tensor)
    assert ids.dtype == torch.int64
    got: list[int] = ids.tolist()
    n = len(got)
    want = [values(i) for i in got]
    assert batch["f"].dtype == torch.float32
    assert batch["f"].tolist() == [w["f"] for w in want]
    assert batch["s"] == [w["s"] for w in want]
    assert batch["xy"].dtype == torch.float32
    assert batch["xy"].shape == (n, 2, 3)
    assert np.array_equal(batch["xy"].numpy(), np.stack([w["xy"] for w in want]))
    assert batch["ids"].dtype == torch.int64
    assert batch["ids"].tolist() == [w["ids"].tolist() for w in want]
    # default_collate batches a list per position (its rule for sequences).
    assert [list(t) for t in batch["tags"]] == [[w["tags"][j] for w in want] for j in range(2)]
    assert batch["img"].dtype == torch.uint8
    assert np.array_equal(batch["img"].numpy(), np.stack([w["img"] for w in want]))
    return got


def epoch_indices(loader: Iterable[Any]) -> list[int]:
    out: list[int] = []
    for batch in loader:
        out += check_batch(batch)
    return out


def exactly_once(indices: list[int], n: int = N) -> None:
    assert sorted(indices) == list(range(n))


@pytest.mark.parametrize("context", ["fork", "spawn", "forkserver"])
def test_default_collate_shuffled_workers(ds: Dataset[dict[str, Any]], context: str) -> None:
    loader = DataLoader(
        ds,
        batch_size=64,
        shuffle=True,
        num_workers=2,
        multiprocessing_context=context,
        generator=torch.Generator().manual_seed(0),
    )
    got = epoch_indices(loader)
    exactly_once(got)
    assert got != sorted(got)
    assert len(loader) == 5


def test_persistent_workers_two_epochs_differ(ds: Dataset[dict[str, Any]]) -> None:
    loader = DataLoader(
        ds,
        batch_size=64,
        shuffle=True,
        num_workers=2,
        persistent_workers=True,
        multiprocessing_context="fork",
        generator=torch.Generator().manual_seed(1),
    )
    first, second = epoch_indices(loader), epoch_indices(loader)
    exactly_once(first)
    exactly_once(second)
    assert first != second


def test_batch_sampler(ds: Dataset[dict[str, Any]]) -> None:
    sampler = BatchSampler(
        RandomSampler(range(N), generator=torch.Generator().manual_seed(2)), 48, drop_last=False
    )
    loader = DataLoader(ds, batch_sampler=sampler)
    sizes = [len(b["i"]) for b in loader]
    assert sizes == [48] * 6 + [12]
    exactly_once(epoch_indices(loader))


def test_subset_and_random_split(ds: Dataset[dict[str, Any]]) -> None:
    picks = [299, 0, 150, 149, 7]
    (batch,) = DataLoader(Subset(ds, picks), batch_size=8)
    assert check_batch(batch) == picks
    parts = random_split(ds, [0.7, 0.3], generator=torch.Generator().manual_seed(3))
    seen = [epoch_indices(DataLoader(p, batch_size=32, shuffle=True)) for p in parts]
    assert [len(s) for s in seen] == [210, 90]
    exactly_once(seen[0] + seen[1])


def test_distributed_sampler_three_ranks(ds: Dataset[dict[str, Any]]) -> None:
    seen: list[int] = []
    for rank in range(3):
        sampler: DistributedSampler[int] = DistributedSampler(
            ds, num_replicas=3, rank=rank, shuffle=True, seed=4
        )
        sampler.set_epoch(1)
        loader = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=1)
        got = epoch_indices(loader)
        assert len(got) == N // 3
        seen += got
    exactly_once(seen)


def test_per_sample_access_collates_too(ds: Dataset[dict[str, Any]]) -> None:
    # ConcatDataset has no __getitems__: the loader calls ds[i] once per record.
    both: ConcatDataset[dict[str, Any]] = ConcatDataset([ds, ds])
    got = epoch_indices(DataLoader(both, batch_size=100, shuffle=True))
    assert Counter(got) == dict.fromkeys(range(N), 2)
    # batch_size=None: samples one by one, converted (not collated).
    one = next(iter(DataLoader(ds, batch_size=None)))
    assert one["i"].item() == 0
    assert one["s"] == b"s0"


def check_var_batch(batch: dict[str, Any], padded: bool) -> list[int]:
    got: list[int] = batch["i"].tolist()
    want = [values(i) for i in got]
    assert batch["vs"] == [w["vs"] for w in want]
    for key, field in (("v", "v"), ("r", "rf"), ("seq", "seq")):
        rows = [w[field].reshape(-1, 2) if key == "seq" else w[field] for w in want]
        if padded:
            assert isinstance(batch[key], tfe.PaddedValue)
            out = batch[key].values
            assert isinstance(out, torch.Tensor)
            assert batch[key].lengths.tolist() == [len(r) for r in rows]
            width = max(len(r) for r in rows)
            for row, r in zip(out.numpy(), rows, strict=True):
                assert np.array_equal(row[: len(r)], r)
                assert (row[len(r) :] == -1).all()
            assert out.shape[1] == width
        else:
            assert all(isinstance(t, torch.Tensor) for t in batch[key])
            assert all(np.array_equal(t.numpy(), r) for t, r in zip(batch[key], rows, strict=True))
    return got


@pytest.mark.parametrize("padded", [False, True])
def test_variable_length_with_tfe_collate(paths: list[str], padded: bool) -> None:
    ds = as_dataset(tfe.RecordDataset(paths, features=VAR_SPEC))
    collate = functools.partial(
        tfe.collate, pad_value=-1 if padded else None, convert=torch.from_numpy
    )
    loader = DataLoader(
        ds,
        batch_size=64,
        shuffle=True,
        num_workers=2,
        collate_fn=collate,
        multiprocessing_context="spawn" if padded else "fork",
        generator=torch.Generator().manual_seed(5),
    )
    got: list[int] = []
    for batch in loader:
        got += check_var_batch(batch, padded)
    exactly_once(got)


def test_variable_length_padded_by_default_collate(paths: list[str]) -> None:
    # (It used to fail inside torch.stack, naming neither the feature nor tfe.collate.)
    ds = as_dataset(tfe.RecordDataset(paths, features=VAR_SPEC))
    batch = next(iter(DataLoader(ds, batch_size=8)))
    assert isinstance(batch["v"], tfe.PaddedValue)
    assert isinstance(batch["v"].values, torch.Tensor)
    assert batch["v"].lengths.tolist() == [len(values(i)["v"]) for i in range(8)]
