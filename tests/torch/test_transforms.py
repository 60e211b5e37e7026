"""PyTorch habits: ``transform=`` in DataLoader workers, ``with_format("torch")``, and the
iterable host's per-sample ``transform=`` and per-batch ``batch_transform=``."""

from __future__ import annotations

import functools
import sys
from typing import Any, cast

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.example.varlen import VarLenArray

from ..optional import require

torch = require("torch")
from torch.utils.data import DataLoader, Dataset  # noqa: E402 - after the skip

from tfrecord_engine.torch import RecordIterableDataset  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")

N = 150
SPEC = {
    "y": tfe.FixedLenFeature([], "int64"),
    "name": tfe.FixedLenFeature([], "string"),
    "tags": tfe.VarLenFeature("int64"),
    "x": tfe.FixedLenFeature([2], "float32"),
}


def as_pair(sample: dict[str, Any]) -> tuple[Any, Any]:
    """A torchvision-style transform: a tensor and a label (module level: it pickles)."""
    return torch.from_numpy(sample["x"]) * 10, int(sample["y"])


def with_count(sample: dict[str, Any]) -> dict[str, Any]:
    return {"y": sample["y"], "n": len(sample["tags"]), "name": sample["name"]}


def counts(sample: dict[str, Any]) -> dict[str, Any]:
    assert "name" not in sample  # (strings="drop": left out before the transform)
    return {"y": sample["y"], "n": len(sample["tags"])}


def plus_one(batch: dict[str, Any]) -> dict[str, Any]:
    return {**batch, "y1": batch["y"] + 1}


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = str(tmp_path_factory.mktemp("tr") / "t.tfrecord")
    with tfe.TFRecordWriter(out, index=True) as w:
        w.write_many(
            tfe.encode_example(
                {"y": i, "name": b"r%d" % i, "tags": np.arange(i % 3), "x": [i, -i * 1.0]}
            )
            for i in range(N)
        )
    return out


def test_transform_runs_in_dataloader_workers(path: str) -> None:
    ds = tfe.RecordDataset(path, features=SPEC, transform=as_pair)
    loader = DataLoader(cast("Dataset[Any]", ds), batch_size=32, shuffle=True, num_workers=2)
    seen: list[int] = []
    for x, y in loader:
        assert x.dtype == torch.float32
        assert x.tolist() == [[10.0 * i, -10.0 * i] for i in y.tolist()]
        seen += y.tolist()
    assert sorted(seen) == list(range(N))


def test_with_format_torch_samples_and_batches(path: str) -> None:
    ds = tfe.RecordDataset(path, features=SPEC).with_format("torch")
    one = ds[4]
    assert isinstance(one["y"], torch.Tensor)
    assert one["y"].item() == 4
    assert one["name"] == b"r4"
    assert isinstance(one["tags"], VarLenArray)  # kept for the collate to pad
    cols = ds[[1, 2]]
    assert cols["x"].tolist() == [[1.0, -1.0], [2.0, -2.0]]
    assert isinstance(cols["tags"].values, torch.Tensor)
    for epoch in (ds.batches(64), ds.batches(64, workers=2)):
        got = [b["y"] for b in epoch]
        assert all(isinstance(t, torch.Tensor) for t in got)
        assert torch.cat(got).tolist() == list(range(N))
    batch = next(iter(DataLoader(cast("Dataset[Any]", ds), batch_size=5, num_workers=2)))
    assert batch["y"].tolist() == [0, 1, 2, 3, 4]
    assert batch["tags"].lengths.tolist() == [0, 1, 2, 0, 1]
    ds.close()


def test_host_per_sample_transform_and_batch_transform(path: str) -> None:
    ds = tfe.RecordDataset(path, features=SPEC)
    it = RecordIterableDataset(
        ds, 16, shuffle=True, seed=3, transform=with_count, batch_transform=plus_one
    )
    loader = DataLoader(it, batch_size=None, num_workers=2)
    seen: list[int] = []
    for batch in loader:
        ys = batch["y"].tolist()
        assert batch["n"].tolist() == [i % 3 for i in ys]
        assert batch["y1"].tolist() == [i + 1 for i in ys]
        assert batch["name"] == [b"r%d" % i for i in ys]
        seen += ys
    assert sorted(seen) == list(range(N))
    # the same order as without a transform (the epoch is the engine's)
    plain = [b["y"].tolist() for b in RecordIterableDataset(ds, 16, shuffle=True, seed=3)]
    again = [b["y"].tolist() for b in it]
    assert again == plain


def test_host_transform_resumes_pads_and_drops_strings(path: str) -> None:
    ds = tfe.RecordDataset(path, features=SPEC)
    make = functools.partial(
        RecordIterableDataset, ds, 40, transform=counts, strings="drop", pad_remainder=True
    )
    it = make()
    run = iter(it)
    first = next(run)
    assert sorted(first) == ["mask", "n", "y"]
    assert first["mask"].dtype == torch.bool
    state = it.state_dict()
    rest = [b["y"].tolist() for b in run]
    assert len(rest) == 3
    again = make()
    again.load_state_dict(state)
    resumed = list(again)
    assert [b["y"].tolist() for b in resumed] == rest
    assert resumed[-1]["mask"].tolist() == [True] * (N % 40) + [False] * (40 - N % 40)


def _boom(sample: dict[str, Any]) -> Any:
    if int(sample["y"]) == 20:
        raise ValueError("bad sample")
    return sample


def test_host_transform_error_surfaces_at_its_batch(path: str) -> None:
    it = iter(RecordIterableDataset(tfe.RecordDataset(path, features=SPEC), 8, transform=_boom))
    assert [next(it)["y"].tolist()[0] for _ in range(2)] == [0, 8]
    with pytest.raises(ValueError, match="bad sample") as err:
        next(it)
    if sys.version_info >= (3, 11):
        assert "record 20" in " ".join(err.value.__notes__)


def test_host_collate_fn_and_refusals(path: str) -> None:
    ds = tfe.RecordDataset(path, features=SPEC)
    pairs = RecordIterableDataset(
        ds, 50, transform=as_pair, collate_fn=functools.partial(tfe.collate, format="torch")
    )
    x, y = next(iter(pairs))
    assert x.shape == (50, 2)
    assert y.tolist() == list(range(50))
    with pytest.raises(tfe.InvalidArgumentError, match="batch_transform must be a function"):
        RecordIterableDataset(ds, 8, batch_transform=3)  # type: ignore[arg-type]
    padded = RecordIterableDataset(ds, 40, transform=as_pair, pad_remainder=True)
    with pytest.raises(tfe.InvalidArgumentError, match="not a dict"):
        next(iter(padded))
