"""Class-balanced epochs over an index column (issue 33, item 3).

The scheme of :mod:`tfrecord_engine.data.balance`: per epoch, ``m`` records of every
class (the smallest class's size by default), in rounds holding each class once; exact,
seeded, resumable, sharded like any epoch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.data.balance import balanced_order
from tfrecord_engine.testing.columns import labelled_records
from tfrecord_engine.testing.resume import assert_resume_exactly_once

FEATURES = {"i": tfe.FixedLenFeature([], "int64"), "label": tfe.FixedLenFeature([], "int64")}


def write(path: Path, records: list[bytes]) -> tfe.RecordDataset:
    with tfe.TFRecordWriter(path, index=True, index_columns=["label"]) as w:
        w.write_many(records)
    return tfe.RecordDataset(path, features=FEATURES)


def ids(batch: Mapping[str, Any]) -> list[int]:
    return [int(i) for i in batch["i"]]


@given(
    labels=st.lists(st.sampled_from([3, 7, -1, 12]), min_size=1, max_size=60),
    seed=st.integers(0, 1000),
    epoch=st.integers(0, 5),
    per_class=st.none() | st.integers(1, 20),
)
def test_every_round_holds_every_class_once(
    labels: list[int], seed: int, epoch: int, per_class: int | None
) -> None:
    values = np.array(labels)
    classes, counts = np.unique(values, return_counts=True)
    k = len(classes)
    m = int(counts.min()) if per_class is None else per_class
    order = balanced_order(values, seed=seed, epoch=epoch, per_class=per_class)
    assert len(order) == k * m
    for r in range(m):
        assert sorted(values[order[r * k : (r + 1) * k]].tolist()) == classes.tolist()
    # Within a class: no record twice before each of its records was drawn once.
    for c, size in zip(classes.tolist(), counts.tolist(), strict=True):
        seen = Counter(order[values[order] == c].tolist())
        assert set(seen) <= set(np.flatnonzero(values == c).tolist())
        assert max(seen.values()) - min(seen.values()) <= 1
        assert len(seen) == min(size, m)
    again = balanced_order(values, seed=seed, epoch=epoch, per_class=per_class)
    assert np.array_equal(order, again)


def test_epochs_draw_new_samples() -> None:
    values = np.repeat([0, 1, 2], [3, 50, 50])
    orders = [balanced_order(values, seed=1, epoch=e) for e in range(3)]
    assert len({tuple(o.tolist()) for o in orders}) == 3
    big = [set(o[values[o] == 1].tolist()) for o in orders]
    assert big[0] != big[1]  # a fresh sample of a large class each epoch


@given(records=labelled_records(min_records=4, max_records=30))
def test_balanced_batches_are_exact_resumable_and_shard(
    tmp_path_factory: pytest.TempPathFactory, records: list[bytes]
) -> None:
    ds = write(tmp_path_factory.mktemp("b") / "a.tfrecord", records)
    labels = [int(tfe.decode_example(r)["label"][0]) for r in records]
    counts = Counter(labels)
    k, m = len(counts), min(counts.values())
    epoch = [ids(b) for b in ds.batches(k, balance="label", seed=2, epoch=0)]
    assert len(epoch) == m
    assert all(len(b) == k for b in epoch)
    assert all(sorted(labels[i] for i in b) == sorted(counts) for b in epoch)
    assert_resume_exactly_once(
        lambda state: ds.batches(3, balance="label", seed=2, epoch=1, state=state), ids
    )
    shards = [
        i
        for s in range(3)
        for b in ds.batches(2, seed=2, epoch=1, shard_index=s, shard_count=3, balance="label")
        for i in ids(b)
    ]
    whole = [i for b in ds.batches(2, seed=2, epoch=1, balance="label") for i in ids(b)]
    assert shards == whole
    ds.close()


def test_balance_counts_epochs_works_on_views_and_in_workers(tmp_path: Path) -> None:
    ds = write(
        tmp_path / "a.tfrecord",
        [tfe.encode_example({"i": [i], "label": [i % 5 % 3]}) for i in range(40)],
    )
    first = [ids(b) for b in ds.batches(6, balance="label")]
    second = [ids(b) for b in ds.batches(6, balance="label")]
    assert first != second
    assert sorted(i for b in first for i in b) != sorted(i for b in second for i in b)
    assert first == [ids(b) for b in ds.batches(6, balance="label", epoch=0)]
    workers = [ids(b) for b in ds.batches(6, balance="label", epoch=0, workers=2)]
    assert workers == first
    view = ds.where(label=[0, 2])  # 16 and 8 records
    epoch = [i for b in view.batches(4, balance="label", seed=9, epoch=0) for i in ids(b)]
    assert Counter(i % 5 % 3 for i in epoch) == {0: 8, 2: 8}
    more = tfe.Balance("label", per_class=10)
    epoch = [i for b in view.batches(4, balance=more, shuffle=True) for i in ids(b)]
    assert Counter(i % 5 % 3 for i in epoch) == {0: 10, 2: 10}
    ds.close()


def test_a_state_resumes_only_its_balance(tmp_path: Path) -> None:
    ds = write(
        tmp_path / "a.tfrecord",
        [tfe.encode_example({"i": [i], "label": [i % 2]}) for i in range(10)],
    )
    it = ds.batches(2, balance="label", epoch=0)
    next(it)
    state = it.get_state()
    with pytest.raises(tfe.InvalidArgumentError, match="balance"):
        ds.batches(2, balance=tfe.Balance("label", per_class=2), state=state)
    with pytest.raises(tfe.InvalidArgumentError, match="balance"):
        ds.batches(2, balance="label", seed=1, state=state)
    for bad in ("", 3):
        with pytest.raises(tfe.InvalidArgumentError):
            ds.batches(2, balance=bad)  # type: ignore[arg-type]


def test_a_record_without_a_label_is_named(tmp_path: Path) -> None:
    ds = write(
        tmp_path / "a.tfrecord",
        [tfe.encode_example({"i": [0], "label": [1]}), tfe.encode_example({"i": [1]})],
    )
    with pytest.raises(tfe.ExampleParseError, match=r"a\.tfrecord: record 1 at offset"):
        ds.batches(2, balance="label")
    labelled = ds.filter(lambda v: v >= 0, "label", missing=-1)
    assert [ids(b) for b in labelled.batches(2, balance="label")] == [[0]]


def test_the_balanced_sampler_for_map_style_loaders(tmp_path: Path) -> None:
    ds = write(
        tmp_path / "a.tfrecord",
        [tfe.encode_example({"i": [i], "label": [int(i < 3)]}) for i in range(12)],
    )
    ranks = [tfe.BalancedSampler(ds, "label", seed=4, rank=r, world_size=2) for r in range(2)]
    both = [list(s) for s in ranks]
    assert [len(s) for s in ranks] == [3, 3]
    assert [i for part in both for i in part] == [
        i for b in ds.batches(6, seed=4, epoch=0, balance="label") for i in ids(b)
    ]
    sampler = ranks[0]
    it = iter(sampler)
    head = [next(it), next(it)]
    state = sampler.state_dict()
    fresh = tfe.BalancedSampler(ds, "label", seed=4, rank=0, world_size=2)
    fresh.load_state_dict(state)
    assert head + list(fresh) == both[0]
    fresh.set_epoch(1)
    one = ds.batches(6, seed=4, epoch=1, shard_index=0, shard_count=2, balance="label")
    assert list(fresh) == [i for b in one for i in ids(b)] != both[0]
