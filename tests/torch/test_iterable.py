"""``tfrecord_engine.torch``: the iterable dataset under real DataLoaders (ranks x workers,
persistent workers, epochs, StatefulDataLoader resume), its length and padding, the
device path on CPU, and ``EpochSampler``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

import tfrecord_engine as tfe

from ..optional import require

torch = require("torch")
from torch.utils.data import DataLoader, Dataset  # noqa: E402 - after the skip

from tfrecord_engine.torch import (  # noqa: E402
    EpochSampler,
    RecordIterableDataset,
    loader_states,
    prefetch_to_device,
    to_torch,
)

# CI machines may have fewer cores than the 3 workers some tests start.
# torchdata 0.11 calls torch.set_vital, which torch 2.13 deprecated.
pytestmark = [
    pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning"),
    pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning"),
]

N = 203  # two files; not a multiple of any batch size or shard count used here
SPEC: dict[str, Any] = {
    "i": tfe.FixedLenFeature([], "int64"),
    "s": tfe.FixedLenFeature([], "string"),
    "xy": tfe.FixedLenFeature([2], "float32"),
}


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root: Path = tmp_path_factory.mktemp("iterable")
    out = []
    for part, span in enumerate((range(120), range(120, N))):
        path = str(root / f"part-{part}.tfrecord")
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(
                tfe.encode_example({"i": [i], "s": [b"s%d" % i], "xy": [i / 2, -i]}) for i in span
            )
        out.append(path)
    return out


@pytest.fixture
def ds(paths: list[str]) -> tfe.RecordDataset:
    return tfe.RecordDataset(paths, features=SPEC)


def ids(batches: Iterable[Any]) -> list[list[int]]:
    """The record ids of each batch (checking the other values on the way)."""
    out = []
    for b in batches:
        got: list[int] = b["i"].tolist()
        assert b["i"].dtype == torch.int64
        assert isinstance(b["s"], np.ndarray)
        assert b["s"].dtype == object
        assert b["s"].tolist() == [b"s%d" % i for i in got]
        assert b["xy"].dtype == torch.float32
        assert b["xy"].tolist() == [[i / 2, -i] for i in got]
        out.append(got)
    return out


def expected(ds: tfe.RecordDataset, *args: Any, **kwargs: Any) -> list[list[int]]:
    """What ``ds.batches`` gives for the same arguments (one rank, no workers)."""
    return [b["i"].tolist() for b in ds.batches(*args, **kwargs)]


def flat(batches: list[list[int]]) -> list[int]:
    return [i for b in batches for i in b]


@pytest.mark.parametrize("workers", [0, 2, 3])
def test_ranks_times_workers_deliver_every_record_once(ds: tfe.RecordDataset, workers: int) -> None:
    seen: list[int] = []
    for rank in range(3):
        it = RecordIterableDataset(ds, 8, shuffle=True, seed=4, rank=rank, world_size=3)
        got = ids(DataLoader(it, batch_size=None, num_workers=workers))
        # Each rank's sequence is the shard of batches(), whatever the worker count.
        assert got == expected(ds, 8, True, 4, 0, rank, 3)
        assert len(got) == len(it)
        seen += flat(got)
    assert sorted(seen) == list(range(N))


def test_persistent_workers_run_a_new_epoch_each_iteration(ds: tfe.RecordDataset) -> None:
    it = RecordIterableDataset(ds, 16, shuffle=True, seed=1)
    loader = DataLoader(it, batch_size=None, num_workers=2, persistent_workers=True)
    epochs = [ids(loader) for _ in range(3)]
    for e, got in enumerate(epochs):
        assert got == expected(ds, 16, True, 1, e)
        assert sorted(flat(got)) == list(range(N))
    assert flat(epochs[0]) != flat(epochs[1]) != flat(epochs[2])


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_set_epoch_reaches_persistent_workers(ds: tfe.RecordDataset, context: str) -> None:
    it = RecordIterableDataset(ds, 32, shuffle=True, seed=2)
    loader = DataLoader(
        it,
        batch_size=None,
        num_workers=2,
        persistent_workers=True,
        multiprocessing_context=context,
    )
    assert ids(loader) == expected(ds, 32, True, 2, 0)  # the workers exist from here on
    it.set_epoch(7)
    assert ids(loader) == expected(ds, 32, True, 2, 7)
    assert ids(loader) == expected(ds, 32, True, 2, 8)
    it.set_epoch(3)
    assert ids(loader) == expected(ds, 32, True, 2, 3)


def test_new_workers_and_the_main_process_advance_the_epoch(ds: tfe.RecordDataset) -> None:
    it = RecordIterableDataset(ds, 50, shuffle=True, seed=3, epoch=2)
    loader = DataLoader(it, batch_size=None, num_workers=2)  # new workers each epoch
    assert ids(loader) == expected(ds, 50, True, 3, 2)
    assert ids(loader) == expected(ds, 50, True, 3, 3)
    assert ids(it) == expected(ds, 50, True, 3, 2)  # the main process counts its own
    assert ids(it) == expected(ds, 50, True, 3, 3)
    it.set_epoch(0)
    assert ids(it) == expected(ds, 50, True, 3, 0)
    assert ids(loader) == expected(ds, 50, True, 3, 0)


def test_overlapping_iterations_each_run_a_whole_epoch(ds: tfe.RecordDataset) -> None:
    it = RecordIterableDataset(ds, 30, shuffle=True, seed=8)
    first, second = iter(it), iter(it)
    pairs = list(zip(first, second, strict=True))
    assert ids(p[0] for p in pairs) == expected(ds, 30, True, 8, 0)
    assert ids(p[1] for p in pairs) == expected(ds, 30, True, 8, 1)


@pytest.mark.parametrize(
    ("size", "drop", "pad"),
    [
        (8, False, False),
        (8, True, False),
        (8, False, True),
        (300, False, False),
        (300, True, False),
    ],
)
@pytest.mark.parametrize("world", [1, 3])
def test_len_is_batches_per_rank(
    ds: tfe.RecordDataset, size: int, drop: bool, pad: bool, world: int
) -> None:
    for rank in range(world):
        it = RecordIterableDataset(
            ds, size, drop_remainder=drop, pad_remainder=pad, rank=rank, world_size=world
        )
        loader = DataLoader(it, batch_size=None, num_workers=2)
        assert len(loader) == len(it) == len(list(loader))


def test_pad_remainder_masks_and_equal_counts(ds: tfe.RecordDataset) -> None:
    counts, real = [], []
    for rank in range(3):
        it = RecordIterableDataset(
            ds, 16, shuffle=True, seed=5, pad_remainder=True, rank=rank, world_size=3
        )
        batches = list(DataLoader(it, batch_size=None, num_workers=2))
        counts.append(len(batches))
        for b in batches:
            assert b["mask"].dtype == torch.bool
            assert len(b["i"]) == len(b["mask"]) == 16
            real += b["i"][b["mask"]].tolist()
    assert counts == [len(it)] * 3  # the same number of steps on every rank (DDP)
    assert sorted(real) == list(range(N))


def test_raw_records_and_padded_raw_batches(paths: list[str]) -> None:
    raw = tfe.RecordDataset(paths)
    got = list(DataLoader(RecordIterableDataset(raw, 64), batch_size=None, num_workers=2))
    assert [r for b in got for r in b] == raw[list(range(N))]
    padded = list(DataLoader(RecordIterableDataset(raw, 64, pad_remainder=True), batch_size=None))
    last = padded[-1]
    assert isinstance(last, tfe.PaddedBatch)
    assert last.mask.dtype == torch.bool
    assert int(last.mask.sum()) == N % 64
    assert [r for b in padded for r, m in zip(b.records, b.mask, strict=True) if m] == raw[
        list(range(N))
    ]


def test_stateful_dataloader_resume_equals_the_uninterrupted_epoch(
    ds: tfe.RecordDataset,
) -> None:
    stateful = require("torchdata.stateful_dataloader")

    def loader(workers: int) -> Any:
        it = RecordIterableDataset(ds, 10, shuffle=True, seed=6)
        return stateful.StatefulDataLoader(it, batch_size=None, num_workers=workers)

    for workers in (0, 2):
        whole = ids(loader(workers))
        assert sorted(flat(whole)) == list(range(N))
        for stop in (0, 1, 4, 7, len(whole) - 1, len(whole)):
            first = loader(workers)
            running = iter(first)
            head = ids(next(running) for _ in range(stop))
            state = first.state_dict()
            again = loader(workers)
            again.load_state_dict(state)
            rest = ids(again)
            if stop == len(whole):
                # Saved after the last batch: the next iteration is the next epoch.
                assert rest == []
                assert ids(again) == expected(ds, 10, True, 6, 1)
            else:
                assert head + rest == whole, (workers, stop)


def test_stateful_resume_in_a_later_epoch(ds: tfe.RecordDataset) -> None:
    stateful = require("torchdata.stateful_dataloader")
    it = RecordIterableDataset(ds, 20, shuffle=True, seed=7)
    first = stateful.StatefulDataLoader(it, batch_size=None, num_workers=2)
    ids(first)  # epoch 0
    running = iter(first)  # epoch 1, interrupted after 3 batches
    head = ids(next(running) for _ in range(3))
    state = first.state_dict()
    again = stateful.StatefulDataLoader(
        RecordIterableDataset(ds, 20, shuffle=True, seed=7), batch_size=None, num_workers=2
    )
    again.load_state_dict(state)
    assert head + ids(again) == expected(ds, 20, True, 7, 1)


def test_stateful_resume_with_persistent_workers_then_the_next_epoch(
    ds: tfe.RecordDataset,
) -> None:
    stateful = require("torchdata.stateful_dataloader")

    def loader() -> Any:
        it = RecordIterableDataset(ds, 7, shuffle=True, seed=1)
        return stateful.StatefulDataLoader(
            it, batch_size=None, num_workers=3, persistent_workers=True
        )

    first = loader()
    assert ids(first) == expected(ds, 7, True, 1, 0)
    running = iter(first)
    head = ids(next(running) for _ in range(5))
    again = loader()
    again.load_state_dict(first.state_dict())
    assert head + ids(again) == expected(ds, 7, True, 1, 1)
    assert ids(again) == expected(ds, 7, True, 1, 2)


@pytest.mark.parametrize("pad", [False, True])
def test_merged_states_resume_on_other_ranks_and_workers(ds: tfe.RecordDataset, pad: bool) -> None:
    stateful = require("torchdata.stateful_dataloader")
    args: dict[str, Any] = {"shuffle": True, "seed": 11, "pad_remainder": pad}

    def make(rank: int, world: int) -> RecordIterableDataset:
        return RecordIterableDataset(ds, 6, rank=rank, world_size=world, **args)

    def real(batches: list[Any]) -> list[int]:
        return [i for b in batches for i in (b["i"][b["mask"]] if pad else b["i"]).tolist()]

    seen: list[int] = []
    saved: list[dict[str, Any]] = []
    for rank, stop in ((0, 5), (1, 2)):  # 2 ranks x 2 workers, stopped mid-epoch
        loader = stateful.StatefulDataLoader(make(rank, 2), batch_size=None, num_workers=2)
        running = iter(loader)
        seen += real([next(running) for _ in range(stop)])
        saved += loader_states(loader.state_dict())
    merged = make(0, 1).merge_states(saved)
    assert merged["merged"]
    for world, workers in ((3, 1), (1, 3)):  # other ranks, other workers
        rest: list[int] = []
        for rank in range(world):
            it = make(rank, world)
            it.load_state_dict(merged)
            loader = DataLoader(it, batch_size=None, num_workers=workers)
            rest += real(list(loader))
            # The next iteration is the whole next epoch of this rank.
            assert real(list(loader)) == real(
                list(ds.batches(6, True, 11, 1, rank, world, pad_remainder=pad))
            )
        assert sorted(seen + rest) == list(range(N))
    with pytest.raises(tfe.InvalidArgumentError, match="one state per rank"):
        make(0, 1).merge_states(saved[:-1])


def test_state_from_another_layout_is_refused(ds: tfe.RecordDataset) -> None:
    it = RecordIterableDataset(ds, 10, rank=0, world_size=2)
    other = RecordIterableDataset(ds, 10, rank=1, world_size=2)
    with pytest.raises(tfe.InvalidArgumentError, match="rank"):
        other.load_state_dict(it.state_dict())
    state = it.state_dict()
    other2 = RecordIterableDataset(ds, 10, rank=0, world_size=2)
    other2.load_state_dict(state)
    assert other2.state_dict() == state
    # A main-process state does not fit DataLoader workers: refused, whether the workers
    # are forked (they inherit it) or spawned (it would be dropped on the way).
    for context in ("fork", "spawn"):
        loader = DataLoader(other2, batch_size=None, num_workers=2, multiprocessing_context=context)
        with pytest.raises(tfe.InvalidArgumentError, match="StatefulDataLoader"):
            list(loader)
    assert ids(other2) == expected(ds, 10, False, 0, 0, 0, 2)  # in this process it resumes


@pytest.mark.filterwarnings("ignore:.*pin_memory.*:UserWarning")
def test_pin_memory_and_device_cpu(ds: tfe.RecordDataset) -> None:
    it = RecordIterableDataset(ds, 64, device="cpu")
    got = list(DataLoader(it, batch_size=None, pin_memory=True))
    assert flat(ids(got)) == list(range(N))
    assert all(b["i"].device.type == "cpu" for b in got)
    pinned = DataLoader(RecordIterableDataset(ds, 64), batch_size=None, num_workers=2)
    moved = list(prefetch_to_device(pinned, torch.device("cpu"), depth=3))
    assert flat(ids(moved)) == list(range(N))
    with pytest.raises(tfe.InvalidArgumentError, match="prefetch_to_device"):
        list(DataLoader(it, batch_size=None, num_workers=1))


def test_bad_arguments(ds: tfe.RecordDataset) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="batch_size"):
        RecordIterableDataset(ds, 0)
    with pytest.raises(tfe.InvalidArgumentError, match="shard"):
        RecordIterableDataset(ds, 4, rank=3, world_size=3)
    with pytest.raises(tfe.InvalidArgumentError, match="exclude"):
        RecordIterableDataset(ds, 4, drop_remainder=True, pad_remainder=True)
    with pytest.raises(tfe.InvalidArgumentError, match="epoch"):
        RecordIterableDataset(ds, 4).set_epoch(-1)
    with pytest.raises(tfe.InvalidArgumentError, match="depth"):
        list(prefetch_to_device([], "cpu", depth=0))


def test_strings_drop(ds: tfe.RecordDataset) -> None:
    it = RecordIterableDataset(ds, 100, strings="drop")
    assert all(set(b) == {"i", "xy"} for b in it)


def test_to_torch_converts_arrays_and_keeps_bytes() -> None:
    ro = np.arange(4, dtype=np.float32)
    ro.flags.writeable = False
    sparse = tfe.SparseValue(np.zeros((1, 2), np.int64), np.array([3]), np.array([1, 1]))
    out = to_torch(
        {"ro": ro, "s": np.array([[b"a"], [b"b"]], dtype=object), "sp": sparse, "b": [b"x"]}
    )
    assert out["ro"].tolist() == [0, 1, 2, 3]
    assert isinstance(out["s"], np.ndarray)
    assert out["s"].tolist() == [[b"a"], [b"b"]]
    assert isinstance(out["sp"], tfe.SparseValue)
    assert out["sp"].values.tolist() == [3]
    assert out["b"] == [b"x"]


def test_the_loaders_default_convert_hands_string_columns_on_as_they_are(
    ds: tfe.RecordDataset,
) -> None:
    # DataLoader(it, batch_size=None) runs default_convert on each batch: a string column
    # as a list would be walked and copied value by value (~0.7 us a value, most of an
    # epoch of records with many string features); a numpy array of bytes passes whole.
    from torch.utils.data._utils.collate import default_convert

    batch = next(iter(RecordIterableDataset(ds, 64)))
    converted = default_convert(batch)  # type: ignore[no-untyped-call]  # (torch's)
    assert converted["s"] is batch["s"]
    assert converted["i"] is batch["i"]


def test_epoch_sampler_shards_the_engine_order(ds: tfe.RecordDataset) -> None:
    seen: list[int] = []
    for rank in range(3):
        sampler = EpochSampler(ds, seed=9, rank=rank, world_size=3)
        sampler.set_epoch(2)
        order = list(sampler)
        assert order == flat(expected(ds, 1000, True, 9, 2, rank, 3))
        assert len(sampler) == len(order)
        mapped = cast("Dataset[dict[str, Any]]", ds)  # a map-style dataset by protocol
        loader = DataLoader(mapped, batch_size=16, sampler=sampler, num_workers=2)
        assert [i for b in loader for i in b["i"].tolist()] == order
        seen += order
    assert sorted(seen) == list(range(N))
    s = EpochSampler(N, seed=9)
    first = list(s)
    assert list(s) == first  # the epoch changes only through set_epoch
    s.set_epoch(1)
    assert list(s) != first
    assert sorted(s) == list(range(N))


def test_epoch_sampler_pad_gives_every_rank_the_same_length() -> None:
    parts = [
        list(EpochSampler(10, shuffle=False, rank=r, world_size=4, pad=True)) for r in range(4)
    ]
    assert [len(p) for p in parts] == [3, 3, 3, 3]
    assert parts[0] == [0, 1, 0]  # spans of 2 and 3 records: the short ones repeat their first
    assert parts[1] == [2, 3, 4]
    assert sorted({i for p in parts for i in p}) == list(range(10))
    tiny = [list(EpochSampler(2, shuffle=False, rank=r, world_size=3, pad=True)) for r in range(3)]
    assert [len(p) for p in tiny] == [1, 1, 1]


def test_prefetch_moves_every_tensor_of_nested_batches() -> None:
    # Plain tuples, named tuples, lists and dicts: every tensor moves ("meta" stands for
    # another device; CI has no GPU), everything else stays as it is.
    indices, values, shape = cast(
        Any, (torch.zeros(2, 2, dtype=torch.int64), torch.ones(2), (3, 4))
    )
    sparse = tfe.SparseValue(indices, values, shape)
    batch: dict[str, Any] = {"pair": (torch.ones(3), [torch.zeros(2), b"raw"]), "sparse": sparse}
    batch["n"] = 7
    moved: Any
    (moved,) = prefetch_to_device([batch], "meta")
    assert moved["pair"][0].device.type == "meta"
    assert type(moved["pair"]) is tuple
    assert moved["pair"][1][0].device.type == "meta"
    assert moved["pair"][1][1] == b"raw"
    assert moved["sparse"].values.device.type == "meta"
    assert moved["sparse"].dense_shape == (3, 4)
    assert type(moved["sparse"]) is tfe.SparseValue
    assert moved["n"] == 7

    class Pair(tuple[Any, ...]):  # a tuple subclass whose constructor takes two arguments
        def __new__(cls, a: Any, b: Any) -> Pair:
            return super().__new__(cls, (a, b))

    (pair,) = prefetch_to_device([Pair(torch.ones(1), torch.zeros(1))], "meta")
    assert type(pair) is tuple
    assert [t.device.type for t in pair] == ["meta", "meta"]
