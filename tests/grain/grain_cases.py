"""Grain over a ``RecordDataset``: ``MapDataset.source`` and ``DataLoader``, with checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe

from ..optional import require
from ..snippets import run, section

grain = require("grain")

N = 120
SPEC: dict[str, Any] = {
    "i": tfe.FixedLenFeature([], "int64"),
    "name": tfe.FixedLenFeature([], "string"),
    "xy": tfe.FixedLenFeature([2], "float32"),
}


def write(path: Path, start: int, stop: int) -> str:
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(
            tfe.encode_example({"i": [i], "name": [b"n%d" % i], "xy": [i / 2, -i]})
            for i in range(start, stop)
        )
    return str(path)


@pytest.fixture
def paths(tmp_path: Path) -> list[str]:
    return [write(tmp_path / "a.tfrecord", 0, 70), write(tmp_path / "b.tfrecord", 70, N)]


def check(batch: dict[str, Any]) -> list[int]:
    ids: list[int] = batch["i"].tolist()
    assert [bytes(n) for n in batch["name"]] == [b"n%d" % i for i in ids]
    assert np.array_equal(batch["xy"], np.array([[i / 2, -i] for i in ids], np.float32))
    return ids


def test_map_dataset_shuffled_batches_and_resume(paths: list[str]) -> None:
    source = grain.MapDataset.source(tfe.RecordDataset(paths, features=SPEC))
    pipeline = source.shuffle(seed=3).batch(16).to_iter_dataset()
    whole = [check(b) for b in pipeline]
    seen = [i for b in whole for i in b]
    assert sorted(seen) == list(range(N))
    assert seen != sorted(seen)
    for stop in (0, 3, len(whole) - 1):
        it = iter(pipeline)
        for _ in range(stop):
            next(it)
        state = it.get_state()
        resumed = iter(pipeline)
        resumed.set_state(state)
        assert [check(b) for b in resumed] == whole[stop:]


def loader(ds: tfe.RecordDataset, workers: int) -> Any:
    sampler = grain.samplers.IndexSampler(
        num_records=len(ds),
        shard_options=grain.sharding.NoSharding(),
        shuffle=True,
        num_epochs=1,
        seed=5,
    )
    return grain.DataLoader(
        data_source=ds,
        sampler=sampler,
        operations=[grain.transforms.Batch(batch_size=16)],
        worker_count=workers,
    )


@pytest.fixture
def absl_flags() -> None:
    """Grain's worker processes read absl flags, which only ``absl.app.run`` parses."""
    flags = require("absl.flags")
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()


@pytest.mark.usefixtures("absl_flags")
def test_dataloader_two_workers_resumes_from_a_checkpoint(paths: list[str]) -> None:
    ds = tfe.RecordDataset(paths, features=SPEC)
    whole = [check(b) for b in loader(ds, 2)]
    assert sorted(i for b in whole for i in b) == list(range(N))
    it = iter(loader(ds, 2))
    for _ in range(3):
        next(it)
    state = it.get_state()
    resumed = iter(loader(tfe.RecordDataset(paths, features=SPEC), 2))
    resumed.set_state(state)
    assert [check(b) for b in resumed] == whole[3:]


def test_checkpoint_refused_on_other_files(paths: list[str], tmp_path: Path) -> None:
    ds = tfe.RecordDataset(paths, features=SPEC)
    it = iter(loader(ds, 0))
    next(it)
    state = it.get_state()
    write(Path(paths[1]), 200, 200 + N - 70)  # same record count, other content
    other = iter(loader(tfe.RecordDataset(paths, features=SPEC), 0))
    with pytest.raises(ValueError, match="repr"):
        other.set_state(state)


def test_grain_snippet(tmp_path: Path) -> None:
    require("grain")
    (code,) = section("Grain")
    assert run(code, tmp_path) == ["RecordDataset(1 files", "(32, 2) 68 True"]
