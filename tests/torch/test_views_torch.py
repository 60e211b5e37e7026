"""PyTorch over views of a dataset and balanced epochs (issue 33, item 3).

A view (``ds.where(...)``, ``ds.select(...)``) is a dataset: the iterable host runs its
epochs across DataLoader workers, a map-style loader reads its records, and
``tfe.BalancedSampler`` feeds a map-style loader balanced epochs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

import tfrecord_engine as tfe

from ..optional import require

torch = require("torch")
from torch.utils.data import DataLoader, Dataset  # noqa: E402 - after the skip

from tfrecord_engine.torch import RecordIterableDataset  # noqa: E402 - after the skip

SPEC = {"i": tfe.FixedLenFeature([], "int64"), "label": tfe.FixedLenFeature([], "int64")}


def map_style(ds: tfe.RecordDataset) -> Dataset[dict[str, Any]]:
    """A dataset (or a view) as PyTorch's map-style ``Dataset`` type, which it is by
    duck typing."""
    return cast("Dataset[dict[str, Any]]", ds)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tfe.RecordDataset:
    folder = tmp_path_factory.mktemp("views")
    for f in range(2):
        with tfe.TFRecordWriter(
            folder / f"s{f}.tfrecord", index=True, index_columns=["label"]
        ) as w:
            w.write_many(
                tfe.encode_example({"i": [i], "label": [i % 3]}) for i in range(30 * f, 30 * f + 30)
            )
    return tfe.RecordDataset(str(folder / "s*.tfrecord"), features=SPEC)


def test_the_iterable_host_runs_a_views_epochs(dataset: tfe.RecordDataset) -> None:
    view = dataset.where(label=[0, 2])
    wanted = [i for i in range(60) if i % 3 != 1]
    host = RecordIterableDataset(view, 4, shuffle=True, seed=7)
    alone = [b["i"].tolist() for b in host]
    loader = DataLoader(
        RecordIterableDataset(view, 4, shuffle=True, seed=7), batch_size=None, num_workers=2
    )
    assert [b["i"].tolist() for b in loader] == alone
    assert sorted(i for b in alone for i in b) == wanted
    assert len(host) == 10


def test_a_map_style_loader_reads_a_view(dataset: tfe.RecordDataset) -> None:
    train, test = dataset.train_test_split(test_size=0.25, seed=1)
    loader = DataLoader(map_style(test), batch_size=4, num_workers=2, shuffle=True)
    got = sorted(torch.cat([b["i"] for b in loader]).tolist())
    assert got == test["i"].tolist()
    assert len(got) == 15
    assert not set(got) & set(train["i"].tolist())


def test_the_balanced_sampler_feeds_a_map_style_loader(dataset: tfe.RecordDataset) -> None:
    view = dataset.where(label=[0, 1]).skip(5)  # label 0: 18 records, label 1: 17
    sampler = tfe.BalancedSampler(view, "label", seed=3)
    loader = DataLoader(map_style(view), batch_size=2, sampler=sampler, num_workers=2)
    labels = [b["label"].tolist() for b in loader]
    assert len(labels) == 17
    assert all(sorted(b) == [0, 1] for b in labels)


def test_a_view_of_the_iterable_host_resumes(dataset: tfe.RecordDataset, tmp_path: Path) -> None:
    view = dataset.select(list(range(59, -1, -2)))
    host = RecordIterableDataset(view, 4, shuffle=True, seed=2)
    it = iter(host)
    head = [next(it)["i"].tolist() for _ in range(3)]
    state = host.state_dict()
    again = RecordIterableDataset(view, 4, shuffle=True, seed=2)
    again.load_state_dict(state)
    rest = [b["i"].tolist() for b in again]
    full = [b["i"].tolist() for b in RecordIterableDataset(view, 4, shuffle=True, seed=2)]
    assert head + rest == full
