"""A mix (``tfe.sample_from_datasets``) under the PyTorch host: ranks x workers, epochs,
StatefulDataLoader resume, merged states on other layouts, and map-style loading."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data.mixing import MixedDataset

from ..optional import require

torch = require("torch")
from torch.utils.data import DataLoader, Dataset  # noqa: E402 - after the skip

from tfrecord_engine.torch import (  # noqa: E402
    EpochSampler,
    RecordIterableDataset,
    loader_states,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning"),
    pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning"),
]

SPEC: dict[str, Any] = {
    "src": tfe.FixedLenFeature([], "int64"),
    "i": tfe.FixedLenFeature([], "int64"),
}
SIZES = (90, 40, 17)


@pytest.fixture(scope="module")
def mix(tmp_path_factory: pytest.TempPathFactory) -> MixedDataset:
    root: Path = tmp_path_factory.mktemp("mix-torch")
    datasets = []
    for j, n in enumerate(SIZES):
        path = str(root / f"s{j}.tfrecord")
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(tfe.encode_example({"src": [j], "i": [i]}) for i in range(n))
        datasets.append(tfe.RecordDataset(path, features=SPEC))
    return tfe.sample_from_datasets(datasets, [0.5, 0.3, 0.2], seed=3)


def pairs(batches: Iterable[Any]) -> list[list[tuple[int, int]]]:
    out = []
    for b in batches:
        src, i = b["src"], b["i"]
        if isinstance(src, torch.Tensor):
            src, i = src.numpy(), i.numpy()
        out.append(list(zip(np.asarray(src).tolist(), np.asarray(i).tolist(), strict=True)))
    return out


def flat(batches: list[list[tuple[int, int]]]) -> list[tuple[int, int]]:
    return [p for b in batches for p in b]


def every_record() -> list[tuple[int, int]]:
    return sorted((j, i) for j, n in enumerate(SIZES) for i in range(n))


@pytest.mark.parametrize("workers", [0, 2])
def test_ranks_times_workers_deliver_the_mixs_shards(mix: MixedDataset, workers: int) -> None:
    seen: list[tuple[int, int]] = []
    for rank in range(2):
        it = RecordIterableDataset(mix, 8, shuffle=True, seed=4, rank=rank, world_size=2)
        got = pairs(DataLoader(it, batch_size=None, num_workers=workers))
        assert got == pairs(mix.batches(8, True, 4, 0, rank, 2))
        assert len(got) == len(it)
        seen += flat(got)
    assert sorted(seen) == every_record()
    # Exactly mixed: in the first 20 records of rank 0, 10, 6 and 4 of the sources.
    first = flat(pairs(mix.batches(20, True, 4, 0)))[:20]
    assert sorted(np.bincount([s for s, _ in first]).tolist()) == [4, 6, 10]


def test_each_iteration_runs_the_next_epoch(mix: MixedDataset) -> None:
    it = RecordIterableDataset(mix, 16, shuffle=True, seed=1)
    loader = DataLoader(it, batch_size=None, num_workers=2, persistent_workers=True)
    assert pairs(loader) == pairs(mix.batches(16, True, 1, 0))
    assert pairs(loader) == pairs(mix.batches(16, True, 1, 1))


def test_stateful_dataloader_resume_equals_the_uninterrupted_epoch(mix: MixedDataset) -> None:
    stateful = require("torchdata.stateful_dataloader")

    def loader(workers: int) -> Any:
        it = RecordIterableDataset(mix, 10, shuffle=True, seed=6)
        return stateful.StatefulDataLoader(it, batch_size=None, num_workers=workers)

    for workers in (0, 2):
        whole = pairs(loader(workers))
        assert sorted(flat(whole)) == every_record()
        for stop in (1, 6, len(whole) - 1):
            first = loader(workers)
            running = iter(first)
            head = pairs(next(running) for _ in range(stop))
            again = loader(workers)
            again.load_state_dict(first.state_dict())
            assert head + pairs(again) == whole, (workers, stop)


def test_merged_states_resume_on_other_ranks_and_workers(mix: MixedDataset) -> None:
    stateful = require("torchdata.stateful_dataloader")

    def make(rank: int, world: int) -> RecordIterableDataset:
        return RecordIterableDataset(mix, 6, shuffle=True, seed=11, rank=rank, world_size=world)

    seen: list[tuple[int, int]] = []
    saved: list[dict[str, Any]] = []
    for rank, stop in ((0, 5), (1, 2)):  # 2 ranks x 2 workers, stopped mid-epoch
        loader = stateful.StatefulDataLoader(make(rank, 2), batch_size=None, num_workers=2)
        running = iter(loader)
        seen += flat(pairs(next(running) for _ in range(stop)))
        saved += loader_states(loader.state_dict())
    merged = make(0, 1).merge_states(saved)
    for world, workers in ((3, 1), (1, 2)):
        rest: list[tuple[int, int]] = []
        for rank in range(world):
            it = make(rank, world)
            it.load_state_dict(merged)
            rest += flat(pairs(DataLoader(it, batch_size=None, num_workers=workers)))
        assert sorted(seen + rest) == every_record()


def test_map_style_loading_of_an_epoch_view(mix: MixedDataset) -> None:
    view = mix.epoch_view(shuffle=True, seed=2, epoch=0)
    # (A random-access source by protocol: PyTorch's Dataset is only a type here.)
    loader: DataLoader[Any] = DataLoader(
        cast("Dataset[Any]", view),
        batch_size=8,
        sampler=EpochSampler(view, shuffle=False),
        collate_fn=tfe.collate,
        num_workers=2,
    )
    assert pairs(loader) == pairs(mix.batches(8, True, 2, 0))
