"""``RecordDataset(storage_options=)`` without a store: every filesystem the dataset asks
fsspec for (globs, indexes, reads, the cache's version queries) gets the options, which
pickle with the dataset and never show in its ``repr`` (``memory://``, which keeps what
it is given). tests/s3/test_s3_dataset_options.py runs the same against a real store."""

from __future__ import annotations

import pathlib
import pickle
from typing import Any

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data.remote_cache import DatasetCache
from tfrecord_engine.errors import InvalidArgumentTypeError
from tfrecord_engine.storage import remote

pytest.importorskip("fsspec")

SECRET = "wJalrXUtnFEMI-s3cr3t"
OPTIONS = {"marker": "per-call", "secret": SECRET}
FEATURES = {"label": tfe.FixedLenFeature([], "int64")}


def _write(mem: str, shards: int = 2) -> str:
    for s in range(shards):
        with tfe.TFRecordWriter(f"{mem}/train-{s}.tfrecord", index=True) as w:
            w.write_many(tfe.encode_example({"label": 10 * s + i}) for i in range(5))
    return f"{mem}/train-*"


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every ``remote.filesystem`` call from here on: ``(url, options given)``."""
    calls: list[tuple[str, dict[str, Any]]] = []
    real = remote.filesystem

    def spy(url: str, storage_options: Any = None) -> tuple[Any, str]:
        calls.append((url, dict(storage_options or {})))
        return real(url, storage_options)

    monkeypatch.setattr(remote, "filesystem", spy)
    return calls


@pytest.mark.parametrize("save_index", [True, "hidden"])
def test_every_request_of_a_dataset_carries_its_options(
    mem: str, asked: list[tuple[str, dict[str, Any]]], save_index: bool | str
) -> None:
    pattern = _write(mem)
    asked.clear()
    ds = tfe.RecordDataset(
        pattern, features=FEATURES, storage_options=OPTIONS, save_index=save_index
    )
    assert ds[[9, 0]]["label"].tolist() == [14, 0]
    assert [b["label"].tolist() for b in ds.batches(4)] == [[0, 1, 2, 3], [4, 10, 11, 12], [13, 14]]
    assert {u for u, _ in asked} >= {pattern, f"{mem}/train-0.tfrecord"}
    assert all(given == OPTIONS for _, given in asked), [u for u, g in asked if g != OPTIONS]
    assert all(dict(i.storage_options or {}) == OPTIONS for i in ds.indexes)
    ds.close()


def test_the_options_pickle_with_the_dataset_and_stay_hidden(mem: str) -> None:
    ds = tfe.RecordDataset(_write(mem), storage_options=OPTIONS)
    assert dict(ds.storage_options or {}) == OPTIONS
    assert SECRET not in repr(ds)
    assert SECRET not in repr(ds.__getstate__()["storage_options"])
    copy = pickle.loads(pickle.dumps(ds))
    assert dict(copy.storage_options or {}) == OPTIONS
    assert dict(ds.with_format("numpy").storage_options or {}) == OPTIONS
    assert copy[[0, -1]] == ds[[0, -1]]
    # A worker's copy (procpool) carries them in its state too.
    assert dict(ds.worker_init().state["storage_options"] or {}) == OPTIONS
    # The caller's mapping can change after: the dataset keeps its own copy.
    given = dict(OPTIONS)
    kept = tfe.RecordDataset(_write(mem), storage_options=given)
    given["marker"] = "changed"
    assert dict(kept.storage_options or {}) == OPTIONS
    ds.close()
    copy.close()
    kept.close()


def test_the_cache_state_carries_the_options(
    mem: str, tmp_path: pathlib.Path, asked: list[tuple[str, dict[str, Any]]]
) -> None:
    pattern = _write(mem)
    asked.clear()
    ds = tfe.RecordDataset(pattern, cache_dir=tmp_path, storage_options=OPTIONS)
    assert len(ds) == 10  # memory:// names no version: read from the store, uncached
    assert asked
    assert all(given == OPTIONS for _, given in asked)
    state = ds.__getstate__()["cache"]
    back = DatasetCache.from_state(pickle.loads(pickle.dumps(state)))
    assert back is not None
    assert dict(back.storage_options or {}) == OPTIONS
    assert SECRET not in repr(state)
    ds.close()


def test_bad_storage_options_fail_at_construction(mem: str) -> None:
    with pytest.raises(InvalidArgumentTypeError, match="mapping"):
        tfe.RecordDataset(_write(mem), storage_options=["key"])  # type: ignore[arg-type]
