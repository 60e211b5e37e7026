"""``tfe.sample_from_datasets``: exact interleaves, exact epochs, shards, resume, Grain."""

from __future__ import annotations

import json
import os
import pickle
import re
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.data import epochs
from tfrecord_engine.data.interleave import MAX_DENOMINATOR, integer_weights, period, schedule
from tfrecord_engine.data.mixing import MixedDataset
from tfrecord_engine.data.sampler import ShardLayout
from tfrecord_engine.data.spans import Spans
from tfrecord_engine.testing.mixing import max_window_error, mix_plans, weight_lists
from tfrecord_engine.testing.resume import assert_resume_exactly_once

from .snippets import run

DOC = Path(__file__).resolve().parents[1] / "docs" / "mixing.md"
_FILES = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


# ---- the interleave alone (no files) ----------------------------------------------------


@given(
    sizes=st.lists(st.integers(0, 80), min_size=1, max_size=6),
    data=st.data(),
    seed=st.integers(0, 1000),
    stop=st.booleans(),
)
def test_every_prefix_of_a_phase_holds_floor_or_ceil_of_its_share(
    sizes: list[int], data: st.DataObject, seed: int, stop: bool
) -> None:
    units = integer_weights(data.draw(weight_lists(len(sizes))), len(sizes))
    rank = np.random.default_rng(seed).permutation(len(sizes)).tolist()
    plan = schedule(sizes, units, rank, stop_on_empty=stop)
    for phase in plan.phases:
        seg = plan.sources[phase.start : phase.stop]
        total = sum(phase.units.values())
        n = np.arange(len(seg) + 1)
        for j, a in phase.units.items():
            count = np.concatenate([[0], np.cumsum(seg == j)])
            assert np.all(count >= a * n // total), (j, units, sizes)
            assert np.all(count <= -(-a * n // total)), (j, units, sizes)
    # ...hence every window of every phase: |count - w W| < 2 (the bound proven).
    assert max_window_error(plan, plan.sources) < 2


@given(sizes=st.lists(st.integers(0, 50), min_size=1, max_size=6), data=st.data())
def test_a_pass_takes_each_record_at_most_once_and_all_unless_stopped(
    sizes: list[int], data: st.DataObject
) -> None:
    weights = data.draw(weight_lists(len(sizes)))
    units = integer_weights(weights, len(sizes))
    rank = list(range(len(sizes)))
    every = schedule(sizes, units, rank, stop_on_empty=False)
    # Weight 0 leaves a source out (as TensorFlow); the others give every record once.
    assert every.taken == tuple(n if w > 0 else 0 for n, w in zip(sizes, weights, strict=True))
    stopped = schedule(sizes, units, rank, stop_on_empty=True)
    assert all(t <= n for t, n in zip(stopped.taken, sizes, strict=True))
    # The pass ended because a source in the mix was due with nothing left.
    assert any(t == n and u > 0 for t, n, u in zip(stopped.taken, sizes, units, strict=True))
    if all(n > 0 for n, u in zip(sizes, units, strict=True) if u):
        # Until a source runs out, both rules run the same interleave (an empty source
        # is left out from the start when the pass goes on without it).
        assert stopped.sources.tolist() == every.sources[: len(stopped.sources)].tolist()


def test_stop_on_empty_ends_at_the_first_source_due_and_empty() -> None:
    # 1:1, sources of 3 and 10: a b a b a b, then a is due and empty.
    assert len(schedule([3, 10], [1, 1], [0, 1], stop_on_empty=True).sources) == 6
    # An empty source in the mix ends the pass at its first turn (TensorFlow's rule).
    assert len(schedule([5, 0], [1, 1], [0, 1], stop_on_empty=True).sources) == 1
    assert len(schedule([5, 0], [1, 1], [0, 1], stop_on_empty=False).sources) == 5


def test_a_phase_repeats_with_period_q() -> None:
    units = [5, 3, 2]
    one = period(units, [0, 1, 2], 10)
    plan = schedule([50, 30, 20], units, [0, 1, 2], stop_on_empty=True)
    assert plan.sources.tolist() == np.tile(one, 10).tolist()
    assert Counter(one.tolist()) == {0: 5, 1: 3, 2: 2}


def test_weights_are_exact_fractions_or_rounded_to_65536ths() -> None:
    assert integer_weights([0.7, 0.3], 2) == (7, 3)
    assert integer_weights(np.array([0.7, 0.3], np.float32).tolist(), 2) == (7, 3)
    assert integer_weights([1, 2, 3], 3) == (1, 2, 3)
    assert integer_weights([1 / 3, 2 / 3], 2) == (1, 2)
    sizes = integer_weights([123457, 987653], 2)  # sum above 65,536: rounded
    assert MAX_DENOMINATOR % sum(sizes) == 0
    share = Fraction(sizes[0], sum(sizes))
    assert abs(share - Fraction(123457, 1111110)) <= Fraction(1, MAX_DENOMINATOR)
    tiny = integer_weights([1.0, 1e-9], 2)  # a positive weight never rounds to 0
    assert tiny[1] >= 1


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([1.0], "2 datasets"),
        ([1.0, -1.0], ">= 0"),
        ([1.0, float("nan")], "finite"),
        ([0.0, 0.0], "all be zero"),
        (["x", 1.0], "number"),
    ],
)
def test_bad_weights_are_refused(weights: list[Any], message: str) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match=message):
        integer_weights(weights, 2)


# ---- mixes of files --------------------------------------------------------------------


class Files:
    """Raw files ``s{j}-{n}`` of ``n`` records ``b"j:i"``, written on first request."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths: dict[tuple[int, int], str] = {}

    def dataset(self, j: int, n: int, **kwargs: Any) -> tfe.RecordDataset:
        key = (j, n)
        if key not in self.paths:
            path = str(self.root / f"s{j}-{n}.tfrecord")
            with tfe.TFRecordWriter(path, index=True) as w:
                w.write_many([b"%d:%d" % (j, i) for i in range(n)])
            self.paths[key] = path
        return tfe.RecordDataset(self.paths[key], **kwargs)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    return Files(tmp_path_factory.mktemp("mix"))


def make_mix(files: Files, plan: dict[str, Any]) -> MixedDataset:
    datasets = [files.dataset(j, n) for j, n in enumerate(plan["sizes"])]
    return tfe.sample_from_datasets(datasets, plan["weights"], plan["seed"], plan["stop"])


def source_of(record: bytes) -> int:
    return int(record.split(b":")[0])


def real(batch: Any) -> list[bytes]:
    if isinstance(batch, tfe.PaddedBatch):
        return [r for r, keep in zip(batch.records, batch.mask.tolist(), strict=True) if keep]
    return list(batch)


def epoch_kwargs(plan: dict[str, Any]) -> dict[str, Any]:
    return {
        "shuffle": plan["shuffle"],
        "seed": plan["batch_seed"],
        "epoch": plan["epoch"],
        "drop_remainder": plan["remainder"] == "drop",
        "pad_remainder": plan["remainder"] == "pad",
    }


@_FILES
@given(plan=mix_plans())
def test_shards_partition_an_exactly_mixed_pass_of_distinct_records(
    files: Files, plan: dict[str, Any]
) -> None:
    mix = make_mix(files, plan)
    whole = mix.epoch_view(plan["shuffle"], plan["batch_seed"], plan["epoch"])[:]
    assert len(whole) == len(mix) == sum(mix.counts)
    assert len(set(whole)) == len(whole)  # no record twice
    assert Counter(source_of(r) for r in whole) == {j: c for j, c in enumerate(mix.counts) if c}
    sources = np.array([source_of(r) for r in whole], dtype=np.int64)
    assert max_window_error(mix._plan().schedule, sources) < 2
    count = plan["shard_count"]
    shards = [
        [
            r
            for b in mix.batches(
                plan["batch_size"], shard_index=k, shard_count=count, **epoch_kwargs(plan)
            )
            for r in real(b)
        ]
        for k in range(count)
    ]
    for k, got in enumerate(shards):
        start, stop = ShardLayout(k, count).span(len(whole))
        mine = whole[start:stop]
        if plan["remainder"] == "drop":
            mine = mine[: len(mine) - len(mine) % plan["batch_size"]]
        assert got == mine  # a contiguous window of the pass: exactly mixed too


def test_a_shuffled_epoch_permutes_each_source_and_keeps_the_interleave(files: Files) -> None:
    mix = tfe.sample_from_datasets(
        [files.dataset(0, 40), files.dataset(1, 20)], [2, 1], seed=5, stop_on_empty_dataset=True
    )
    plain = mix[:]
    shuffled = mix.epoch_view(True, 3, 0)[:]
    again = mix.epoch_view(True, 3, 0)[:]
    other_epoch = mix.epoch_view(True, 3, 1)[:]
    assert shuffled == again  # deterministic
    assert shuffled != plain
    assert other_epoch != shuffled
    assert [source_of(r) for r in shuffled] == [source_of(r) for r in plain]
    # Unshuffled, each source gives its records in file order, as TensorFlow.
    assert [r for r in plain if source_of(r) == 0] == [b"0:%d" % i for i in range(40)]
    # The mix's seed chooses among equally exact interleaves.
    reseeded = tfe.sample_from_datasets(
        [files.dataset(0, 6), files.dataset(1, 6), files.dataset(2, 6)], seed=1
    )
    seeds = {tuple(source_of(r) for r in reseeded[:3])}
    for s in range(2, 8):
        mixed = tfe.sample_from_datasets(
            [files.dataset(0, 6), files.dataset(1, 6), files.dataset(2, 6)], seed=s
        )
        seeds.add(tuple(source_of(r) for r in mixed[:3]))
    assert len(seeds) > 1


@_FILES
@given(plan=mix_plans(max_sources=3, max_records=30), shard=st.integers(0, 3))
def test_resuming_from_any_state_gives_the_uninterrupted_rest(
    files: Files, plan: dict[str, Any], shard: int
) -> None:
    mix = make_mix(files, plan)
    count = plan["shard_count"]
    kwargs = {**epoch_kwargs(plan), "shard_index": shard % count, "shard_count": count}

    def make(state: Any) -> Any:
        return mix.batches(plan["batch_size"], state=state, **kwargs)

    assert_resume_exactly_once(make, real)


@_FILES
@given(plan=mix_plans(max_sources=3, max_records=40), data=st.data())
def test_resuming_on_another_number_of_shards_delivers_the_rest_once(
    files: Files, plan: dict[str, Any], data: st.DataObject
) -> None:
    mix = make_mix(files, plan)
    kwargs = {**epoch_kwargs(plan), "drop_remainder": False}
    whole = mix.epoch_view(plan["shuffle"], plan["batch_seed"], plan["epoch"])[:]
    count, size = plan["shard_count"], plan["batch_size"]
    head: list[bytes] = []
    states = []
    for k in range(count):
        it = mix.batches(size, shard_index=k, shard_count=count, **kwargs)
        for _ in range(data.draw(st.integers(0, len(it)))):
            head += real(next(it))
        states.append(json.loads(json.dumps(it.get_state())))
    merged = tfe.merge_states(states)
    new_count = data.draw(st.integers(1, 4))
    rest = []
    for k in range(new_count):
        got = [
            r
            for b in mix.batches(size, shard_index=k, shard_count=new_count, state=merged, **kwargs)
            for r in real(b)
        ]
        # Each new shard's records come in the order of the pass.
        assert sorted(got, key=whole.index) == got
        rest += got
    assert Counter(head + rest) == Counter(whole)


def test_a_state_of_another_mix_or_shuffle_is_refused(files: Files) -> None:
    a, b = files.dataset(0, 10), files.dataset(1, 10)
    mix = tfe.sample_from_datasets([a, b])
    it = mix.batches(3, shuffle=True, seed=1, epoch=0)
    next(it)
    state = it.get_state()
    with pytest.raises(tfe.InvalidArgumentError, match="mix_shuffle"):
        mix.batches(3, shuffle=False, seed=1, epoch=0, state=state)
    other = tfe.sample_from_datasets([a, b], [2, 1])
    with pytest.raises(tfe.InvalidArgumentError, match="cannot resume"):
        other.batches(3, shuffle=True, seed=1, epoch=0, state=state)
    with pytest.raises(tfe.InvalidArgumentError, match="seed"):
        mix.batches(3, shuffle=True, seed=2, state=state)
    # A resume without epoch= takes the state's epoch.
    assert list(mix.batches(3, shuffle=True, seed=1, state=state))


def test_shuffled_calls_without_epoch_run_the_next_epoch(files: Files) -> None:
    mix = tfe.sample_from_datasets([files.dataset(0, 12), files.dataset(1, 12)])
    first = [r for b in mix.batches(5, shuffle=True, seed=2) for r in b]
    second = [r for b in mix.batches(5, shuffle=True, seed=2) for r in b]
    assert first == mix.epoch_view(True, 2, 0)[:]
    assert second == mix.epoch_view(True, 2, 1)[:]
    copy = pickle.loads(pickle.dumps(mix))  # a copy goes on from the original's count
    assert [r for b in copy.batches(5, shuffle=True, seed=2) for r in b] == mix.epoch_view(
        True, 2, 2
    )[:]


def test_parsed_mix_random_access_batches_and_workers(tmp_path: Path) -> None:
    spec = {"src": tfe.FixedLenFeature([], "int64"), "i": tfe.FixedLenFeature([], "int64")}
    datasets = []
    for j, n in enumerate((30, 12)):
        path = str(tmp_path / f"p{j}.tfrecord")
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(tfe.encode_example({"src": [j], "i": [i]}) for i in range(n))
        datasets.append(tfe.RecordDataset(path, features=spec))
    with tfe.sample_from_datasets(datasets, [0.75, 0.25]) as mix:
        assert len(mix) == 42
        columns = mix[list(range(8))]
        assert columns["src"].tolist() == [0, 0, 0, 1, 0, 0, 0, 1]
        samples = mix.__getitems__([3, 0])
        assert [int(s["src"]) for s in samples] == [1, 0]
        assert int(mix[-1]["i"]) == 11 or int(mix[-1]["src"]) == 0
        plain = [(b["src"].tolist(), b["i"].tolist()) for b in mix.batches(8, shuffle=True, seed=4)]
        pooled = [
            (b["src"].tolist(), b["i"].tolist())
            for b in mix.batches(8, shuffle=True, seed=4, epoch=0, workers=2)
        ]
        assert pooled == plain
        dropped = next(iter(mix.batches(8, strings="drop")))
        assert set(dropped) == {"src", "i"}
    with pytest.raises(tfe.OutOfRangeError):
        mix[42]
    with pytest.raises(TypeError, match="positions"):
        mix["x"]  # type: ignore[index]


def _parsed_sources(tmp_path: Path, sizes: list[list[int]]) -> list[tfe.RecordDataset]:
    """Datasets of int64 "src", "i" and a VarLenFeature "v"; dataset j holds one file
    of each size in ``sizes[j]``."""
    spec = {
        "src": tfe.FixedLenFeature([], "int64"),
        "i": tfe.FixedLenFeature([], "int64"),
        "v": tfe.VarLenFeature("int64"),
    }
    out = []
    for j, files in enumerate(sizes):
        paths = []
        for k, n in enumerate(files):
            path = str(tmp_path / f"parsed{j}-{k}.tfrecord")
            with tfe.TFRecordWriter(path, index=True) as w:
                w.write_many(
                    tfe.encode_example({"src": [j], "i": [100 * k + i], "v": np.arange(i % 4)})
                    for i in range(n)
                )
            paths.append(path)
        out.append(tfe.RecordDataset(paths, features=spec))
    return out


def test_a_chunk_over_several_datasets_is_read_as_one_buffer_of_spans(tmp_path: Path) -> None:
    datasets = _parsed_sources(tmp_path, [[30, 25], [12], [40]])
    mix = tfe.sample_from_datasets(datasets, [2, 1, 1], seed=3)
    source = mix.leaf_source()
    idx = np.random.default_rng(0).permutation(len(source))[:60]
    spans = source.read_spans(idx)
    assert spans is not None
    assert spans.records() == source.read_raw(idx)
    # Only the records and their footers were copied, into a buffer of the call's own.
    assert spans.buf.shape[0] == int((spans.ends - spans.starts + 4).sum())
    # Every batch of an epoch, in order and shuffled, holds each record's own values.
    want = {}
    for ds in datasets:
        for sample in ds.__getitems__(list(range(len(ds)))):
            want[int(sample["src"]), int(sample["i"])] = np.asarray(sample["v"]).tolist()
    for shuffle in (False, True):
        seen = 0
        for batch in mix.batches(16, shuffle=shuffle, seed=1):
            v = batch["v"]
            keys = zip(batch["src"].tolist(), batch["i"].tolist(), strict=True)
            for row, key in enumerate(keys):
                assert v.values[v.indices[:, 0] == row].tolist() == want[key]
                seen += 1
        assert seen == len(want)


@pytest.mark.parametrize("compiled", [True, False])
def test_spans_of_one_shared_buffer_are_joined_without_a_copy(
    compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not compiled:  # (the kernels not loaded: the numpy gather)
        monkeypatch.setattr("tfrecord_engine.kernels.gather_spans", lambda *args: None)
    region = np.arange(100, dtype=np.uint8)
    a = Spans(region, np.array([0, 40]), np.array([10, 50]))
    b = Spans(region, np.array([20]), np.array([25]))
    joined = Spans.joined(3, [(np.array([0, 2]), a), (np.array([1]), b)])
    assert joined.buf is region
    assert (joined.starts.tolist(), joined.ends.tolist()) == ([0, 20, 40], [10, 25, 50])
    # Parts of separate buffers: each record and its 4-byte footer copied, in order.
    other = Spans(region.copy(), np.array([20]), np.array([25]))
    copied = Spans.joined(3, [(np.array([0, 2]), a), (np.array([1]), other)])
    assert copied.buf is not region
    assert copied.records() == [
        region[0:10].tobytes(),
        region[20:25].tobytes(),
        region[40:50].tobytes(),
    ]
    assert copied.buf.shape[0] == 25 + 3 * 4
    footers = [copied.buf[e : e + 4].tobytes() for e in copied.ends.tolist()]
    assert footers == [region[10:14].tobytes(), region[25:29].tobytes(), region[50:54].tobytes()]


def test_a_mix_reads_ahead_on_as_many_threads_as_a_dataset(tmp_path: Path) -> None:
    datasets = _parsed_sources(tmp_path, [[30], [30]])
    mix = tfe.sample_from_datasets(datasets, seed=0)
    source = mix.leaf_source()
    want = epochs.read_ahead_threads(2, mix.features, source.record_bytes)
    assert want == min(2, os.cpu_count() or 1)
    for it, records in ((mix.batches(8), 60), (datasets[0].batches(8), 30)):
        assert it._work is not None
        assert it._work._executor._max_workers == want  # type: ignore[attr-defined]
        assert sum(len(b["i"]) for b in it) == records
    assert (
        source.record_bytes == sum(int(i.lengths.sum()) for d in datasets for i in d.indexes) / 60
    )
    assert (
        source.record_bytes
        == tfe.RecordDataset([p for d in datasets for p in d.paths])._opened().record_bytes
    )


def _settings(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What ``epochs.start_epoch`` hands each epoch's iterator (chunk size, threads,
    files to hold, whether files are held as reached), one dict per epoch started."""
    seen: list[dict[str, Any]] = []

    class Recorded(epochs.RecordBatchIterator):
        def __init__(self, dataset: Any, sampler: Any, **kwargs: Any) -> None:
            seen.append(
                {
                    "chunk": kwargs["chunk_records"],
                    "threads": kwargs["threads"],
                    "hold": sorted(Path(r.path).name for r in kwargs["hold"]),
                    "as_reached": kwargs["hold_of"] is not None,
                }
            )
            super().__init__(dataset, sampler, **kwargs)

    monkeypatch.setattr(epochs, "RecordBatchIterator", Recorded)
    return seen


def _sized_dataset(path: Path, n: int, size: int, *, verify: bool = True) -> tfe.RecordDataset:
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(b"%06d" % i + b"x" * (size - 6) for i in range(n))
    return tfe.RecordDataset(str(path), verify=verify)


def test_a_mix_epoch_is_settled_as_one_dataset_of_its_files_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Records of 16 KiB and of 1 KiB: each dataset's own chunk in order would be 512 and
    # 4,096 records; one dataset of both files, at their mean size, takes 964.
    big = _sized_dataset(tmp_path / "big.tfrecord", 20, 16 << 10)
    small = _sized_dataset(tmp_path / "small.tfrecord", 20, 1 << 10, verify=False)
    both = tfe.RecordDataset([big.paths[0], small.paths[0]], verify=False)
    seen = _settings(monkeypatch)
    for shuffle in (False, True):
        for ds in (tfe.sample_from_datasets([big, small], seed=0), both):
            assert len([r for b in ds.batches(8, shuffle=shuffle) for r in b]) == 40
    mix_in_order, one_in_order, mix_shuffled, one_shuffled = seen
    assert mix_in_order == one_in_order
    assert mix_in_order["chunk"] == epochs.chunk_records((16 << 10) / 2 + 1024 / 2) == 963
    assert mix_in_order["as_reached"]
    assert mix_shuffled == one_shuffled
    assert mix_shuffled["chunk"] == 963  # (shuffled: the same byte cap)
    # A dataset that skips its CRC checks does not keep the mix from holding its files.
    assert mix_shuffled["hold"] == ["big.tfrecord", "small.tfrecord"]


def test_a_held_mix_still_checks_the_crcs_of_the_datasets_that_verify(tmp_path: Path) -> None:
    # The files are read whole without checks (one dataset has verify=False); the
    # records of the dataset that verifies are checked as they are read.
    checked = tmp_path / "checked.tfrecord"
    _sized_dataset(checked, 20, 100)
    raw = bytearray(checked.read_bytes())
    raw[5 * (100 + 16) + 12 + 50] ^= 0xFF  # record 5's data
    checked.write_bytes(bytes(raw))
    unchecked = _sized_dataset(tmp_path / "unchecked.tfrecord", 20, 100, verify=False)
    mix = tfe.sample_from_datasets([tfe.RecordDataset(str(checked)), unchecked], seed=0)
    for shuffle in (False, True):
        with pytest.raises(tfe.DataLossError, match=r"checked\.tfrecord: record 5 "):
            list(mix.batches(8, shuffle=shuffle))
    # The damaged record, read through the dataset that skips checks, is delivered.
    loose = tfe.RecordDataset(str(checked), verify=False)
    got = [r for b in tfe.sample_from_datasets([loose, unchecked]).batches(8) for r in b]
    assert len(got) == 40


def test_nested_mixes_and_one_dataset_twice(files: Files) -> None:
    a, b, c = files.dataset(0, 20), files.dataset(1, 20), files.dataset(2, 8)
    inner = tfe.sample_from_datasets([a, b], [1, 1])
    outer = tfe.sample_from_datasets([inner, c], [3, 1])
    assert len(outer) == 48
    assert outer.counts == (40, 8)
    got = outer.epoch_view(True, 1, 0)[:]
    assert sorted(got) == sorted(a[:] + b[:] + c[:])
    # The inner mix's order is kept: its own records alternate a, b.
    inner_part = [source_of(r) for r in got if source_of(r) != 2]
    assert inner_part == [0, 1] * 20
    twice = tfe.sample_from_datasets([a, a])
    assert len(twice) == 40
    assert Counter(twice[:]) == Counter(a[:] * 2)


def test_damage_in_one_source_names_its_file(tmp_path: Path) -> None:
    paths = []
    for j in range(2):
        path = tmp_path / f"d{j}.tfrecord"
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many([b"%d:%d" % (j, i) for i in range(10)])
        paths.append(path)
    raw = bytearray(paths[1].read_bytes())
    raw[19 + 12] ^= 0xFF  # record 1 of d1.tfrecord: its data (after 19 + 12 bytes)
    paths[1].write_bytes(bytes(raw))
    mix = tfe.sample_from_datasets([tfe.RecordDataset(str(p)) for p in paths])
    with pytest.raises(tfe.DataLossError, match=r"d1\.tfrecord"):
        list(mix.batches(4))
    reports: list[tfe.DamageReport] = []
    skip = [
        tfe.RecordDataset(str(p), on_damage="skip", on_damage_report=reports.append) for p in paths
    ]
    delivered = [r for b in tfe.sample_from_datasets(skip).batches(4) for r in b]
    assert len(delivered) == 19
    assert b"1:1" not in delivered
    assert [(Path(str(r.path)).name, r.record_index) for r in reports] == [("d1.tfrecord", 1)]


def test_damage_in_a_parsed_mix_names_its_file_and_record(tmp_path: Path) -> None:
    datasets = _parsed_sources(tmp_path, [[20], [20]])
    path = Path(datasets[1].paths[0])
    raw = bytearray(path.read_bytes())
    record = tfe.encode_example({"src": [1], "i": [10], "v": np.arange(2)})
    raw[bytes(raw).index(record) + len(record) - 1] ^= 0xFF  # record 10's data
    path.write_bytes(bytes(raw))
    fresh = [tfe.RecordDataset(d.paths, features=d.features) for d in datasets]
    mix = tfe.sample_from_datasets(fresh, seed=0)
    it = mix.batches(8)
    delivered = [next(it)["i"].tolist(), next(it)["i"].tolist()]
    with pytest.raises(tfe.DataLossError, match=r"parsed1-0\.tfrecord: record 10 .*data CRC"):
        next(it)  # the batch of the bad record (the mix's 21st): the two before delivered
    assert delivered == [[0, 0, 1, 1, 2, 2, 3, 3], [4, 4, 5, 5, 6, 6, 7, 7]]
    reports: list[tfe.DamageReport] = []
    skip = [
        tfe.RecordDataset(
            d.paths, features=d.features, on_damage="skip", on_damage_report=reports.append
        )
        for d in datasets
    ]
    got = [i for b in tfe.sample_from_datasets(skip, seed=0).batches(8) for i in b["i"].tolist()]
    assert len(got) == 39
    assert [Path(str(r.path)).name for r in reports] == ["parsed1-0.tfrecord"]


def test_bad_arguments(files: Files, tmp_path: Path) -> None:
    a = files.dataset(0, 5)
    with pytest.raises(tfe.InvalidArgumentError, match="at least one"):
        tfe.sample_from_datasets([])
    with pytest.raises(TypeError, match="list of datasets"):
        tfe.sample_from_datasets(a)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dataset 1"):
        tfe.sample_from_datasets([a, [b"x"]])  # type: ignore[list-item]
    with pytest.raises(tfe.InvalidArgumentError, match="2 datasets"):
        tfe.sample_from_datasets([a, a], [1.0])
    with pytest.raises(tfe.InvalidArgumentError, match="seed"):
        tfe.sample_from_datasets([a], seed=-1)
    parsed = tfe.RecordDataset(a.paths, features={"x": tfe.FixedLenFeature([], "int64")})
    with pytest.raises(tfe.InvalidArgumentError, match="other features"):
        tfe.sample_from_datasets([a, parsed])
    with pytest.raises(tfe.InvalidArgumentError, match="strings"):
        tfe.sample_from_datasets([a]).batches(2, strings="drop")


# ---- Grain, and the docs page ----------------------------------------------------------


def test_grain_reads_a_mix_as_a_random_access_source(files: Files) -> None:
    from .optional import require

    grain = require("grain")
    mix = tfe.sample_from_datasets([files.dataset(0, 21), files.dataset(1, 7)], [3, 1])
    view = mix.epoch_view(shuffle=True, seed=2, epoch=0)
    got = [r for b in grain.MapDataset.source(view).batch(5) for r in b]
    assert got == [r for b in mix.batches(5, shuffle=True, seed=2, epoch=0) for r in b]
    assert [source_of(r) for r in got[:8]] == [0, 0, 0, 1, 0, 0, 0, 1]
    assert list(grain.MapDataset.source(mix)) == mix[:]
    assert repr(pickle.loads(pickle.dumps(view))) == repr(view)


def test_docs_page_example_prints_what_it_says(tmp_path: Path) -> None:
    text = DOC.read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)
    printed = re.search(r"It prints:\n\n```\n(.*?)```", text, re.S)
    assert printed is not None, "docs/mixing.md lost its output block"
    assert run(code[0], tmp_path) == printed.group(1).splitlines()
