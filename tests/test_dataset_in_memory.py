"""Shuffled epochs that read their files whole into memory (``batches(in_memory=...)``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data import dataset as dataset_module

SPEC = {"x": tfe.FixedLenFeature([], "int64"), "s": tfe.FixedLenFeature([], "string")}


def _write(path: Path, first: int, n: int) -> None:
    with tfe.TFRecordWriter(str(path)) as w:
        for i in range(first, first + n):
            w.write(tfe.encode_example({"x": [i], "s": [b"v" * (i % 50)]}))


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    paths = [tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"]
    _write(paths[0], 0, 700)
    _write(paths[1], 700, 301)
    return [str(p) for p in paths]


def _held(ds: tfe.RecordDataset) -> list[bool]:
    return [r._held is not None for r in ds._readers]  # type: ignore[union-attr]


def _flat(batches: Any) -> list[Any]:
    out: list[Any] = []
    for b in batches:
        out.extend(b["x"].tolist() if isinstance(b, dict) else b)
    return out


@pytest.mark.parametrize("features", [None, SPEC], ids=["raw", "parsed"])
@pytest.mark.parametrize("one_file", [True, False], ids=["one-file", "two-files"])
def test_the_same_batches_whether_held_or_not(
    files: list[str], features: dict[str, Any] | None, one_file: bool
) -> None:
    ds = tfe.RecordDataset(files[:1] if one_file else files, features=features)
    runs = {
        mode: _flat(ds.batches(64, shuffle=True, seed=5, epoch=2, in_memory=mode))
        for mode in (True, False, None)
    }
    assert runs[True] == runs[False] == runs[None]
    assert len(runs[True]) == len(ds)
    assert runs[True] != sorted(runs[True])  # really shuffled
    # Single records and other batches through a held reader read the same too.
    it = ds.batches(64, shuffle=True, in_memory=True)
    next(it)
    assert all(_held(ds))
    assert ds.read_raw([0, len(ds) - 1, 3]) == tfe.RecordDataset(files).read_raw(
        [0, len(ds) - 1, 3]
    )
    it.close()


def test_the_copy_lives_while_an_epoch_holds_it(files: list[str]) -> None:
    ds = tfe.RecordDataset(files)
    first = ds.batches(100, shuffle=True)
    second = ds.batches(100, shuffle=True)
    assert _held(ds) == [False, False]  # nothing read before the first batch
    next(first)
    next(second)
    assert _held(ds) == [True, True]
    first.close()
    assert _held(ds) == [True, True]  # the other epoch still holds it
    assert len(_flat(second)) == len(ds) - 100  # ran to its end
    assert _held(ds) == [False, False]


def test_which_epochs_hold(files: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    ds = tfe.RecordDataset(files, features=SPEC)
    cases: list[tuple[dict[str, Any], bool]] = [
        ({"shuffle": False}, False),  # sequential epochs read runs as they are
        ({"shuffle": True, "in_memory": False}, False),
        ({"shuffle": True}, True),
        ({"shuffle": True, "workers": 1}, False),  # workers read in their processes
    ]
    for kwargs, held in cases:
        it = ds.batches(100, **kwargs)
        next(it)
        assert _held(ds) == [held, held], kwargs
        it.close()
    # Over the limit: only when asked.
    monkeypatch.setattr(dataset_module, "IN_MEMORY_LIMIT", 1000)
    for mode, held in ((None, False), (True, True)):
        it = ds.batches(100, shuffle=True, in_memory=mode)
        next(it)
        assert _held(ds) == [held, held], mode
        it.close()
    ds.close()


def test_a_damaged_record_is_found_in_the_copy(files: list[str]) -> None:
    # Damaged after indexing (same size): the CRC check of the held copy finds it.
    at = int(tfe.Index.build(files[0]).offsets[123]) + 12 + 3
    ds = tfe.RecordDataset(files)
    assert len(ds) == 1001
    with open(files[0], "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(tfe.CorruptedRecordError, match="record 123 "):
        _flat(ds.batches(64, shuffle=True, seed=1, in_memory=True))


def test_a_file_cut_before_the_epoch_is_a_stale_index(files: list[str]) -> None:
    ds = tfe.RecordDataset(files)
    assert len(ds) == 1001
    size = Path(files[1]).stat().st_size
    with open(files[1], "r+b") as f:
        f.truncate(size // 2)
    with pytest.raises(tfe.StaleIndexError):
        _flat(ds.batches(64, shuffle=True, in_memory=True))


def test_the_default_limit_is_at_most_1_gib() -> None:
    assert 0 < dataset_module.IN_MEMORY_LIMIT <= 1 << 30
    assert np.int64(dataset_module.IN_MEMORY_LIMIT) == dataset_module._in_memory_limit()
