"""RecordDataset with ``features=``: parsed records and batches (needs tfe.example)."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest

example = pytest.importorskip("tfrecord_engine.example")

import tfrecord_engine as tfe  # noqa: E402 - only once the example module exists


def _api(name: str) -> Any:
    """A public name of the Example API (top level once merged, else the module)."""
    return getattr(tfe, name, None) or getattr(example, name)


@pytest.fixture
def labelled(tmp_path: pathlib.Path) -> tfe.RecordDataset:
    with tfe.TFRecordWriter(tmp_path / "f.tfrecord", index=True) as w:
        w.write_many(
            _api("encode_example")({"label": i, "x": np.full(3, i, np.float32)}) for i in range(25)
        )
    features: dict[str, Any] = {
        "label": _api("FixedLenFeature")([], "int64"),
        "x": _api("FixedLenFeature")([3], "float32"),
    }
    return tfe.RecordDataset(tmp_path / "f.tfrecord", features=features)


def test_item_and_batch_are_parsed(labelled: tfe.RecordDataset) -> None:
    one = labelled[7]
    assert int(one["label"]) == 7
    np.testing.assert_array_equal(one["x"], np.full(3, 7, np.float32))
    batch = labelled[[3, 1, 24]]
    assert batch["label"].tolist() == [3, 1, 24]
    assert batch["x"].shape == (3, 3)


def test_parsed_batches_and_padding_mask(labelled: tfe.RecordDataset) -> None:
    labels = [b["label"].tolist() for b in labelled.batches(10, shuffle=True, seed=2)]
    assert sorted(i for b in labels for i in b) == list(range(25))
    padded = list(labelled.batches(10, pad_remainder=True))
    assert [b["label"].shape[0] for b in padded] == [10, 10, 10]
    mask = np.concatenate([b["mask"] for b in padded])
    got = np.concatenate([b["label"] for b in padded])[mask]
    assert got.tolist() == list(range(25))


def test_iteration_and_pickling_keep_features(labelled: tfe.RecordDataset) -> None:
    import pickle

    rows = list(pickle.loads(pickle.dumps(labelled)))
    assert [int(r["label"]) for r in rows] == list(range(25))
