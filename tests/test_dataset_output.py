"""``RecordDataset(transform=)``, ``with_transform`` and ``with_format``: what a dataset
hands out, sample by sample and batch by batch (numpy here; tensors in tests/torch/)."""

from __future__ import annotations

import pickle
import sys
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.example.varlen import VarLenArray

SPEC = {
    "y": tfe.FixedLenFeature([], "int64"),
    "name": tfe.FixedLenFeature([], "string"),
    "tags": tfe.VarLenFeature("int64"),
}


def doubled(sample: dict[str, Any]) -> dict[str, Any]:
    """A module-level transform (it pickles)."""
    return {"y2": sample["y"] * 2, "n": len(sample["tags"])}


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = str(tmp_path_factory.mktemp("out") / "o.tfrecord")
    with tfe.TFRecordWriter(out, index=True) as w:
        w.write_many(
            tfe.encode_example({"y": i, "name": b"r%d" % i, "tags": np.arange(i % 3)})
            for i in range(300)
        )
    return out


def test_transform_applies_to_every_sample_handed_out(path: str) -> None:
    ds = tfe.RecordDataset(path, features=SPEC, transform=doubled)
    assert ds[5] == {"y2": 10, "n": 2}
    assert ds[-1] == {"y2": 598, "n": 2}
    small, large = ds.__getitems__([3, 1]), ds.__getitems__(list(range(200)))  # both paths
    assert small == [{"y2": 6, "n": 0}, {"y2": 2, "n": 1}]
    assert large == [{"y2": 2 * i, "n": i % 3} for i in range(200)]
    assert list(ds)[:3] == [{"y2": 0, "n": 0}, {"y2": 2, "n": 1}, {"y2": 4, "n": 2}]
    # columnar batches have no samples: not transformed
    assert set(ds[[0, 1]]) == set(SPEC)
    assert set(next(iter(ds.batches(4)))) == set(SPEC)
    raw = tfe.RecordDataset(path, transform=len)  # a raw record is its sample
    assert raw[0] == len(tfe.RecordDataset(path)[0])
    assert raw.__getitems__([0, 1]) == [len(r) for r in tfe.RecordDataset(path)[[0, 1]]]


def test_transform_travels_with_the_dataset(path: str) -> None:
    plain = tfe.RecordDataset(path, features=SPEC)
    len(plain)  # opened: the copy reuses the indexes
    ds = plain.with_transform(doubled)
    assert plain.transform is None
    assert isinstance(plain[0]["tags"], VarLenArray)
    assert ds.transform is doubled
    copy = pickle.loads(pickle.dumps(ds))  # as DataLoader workers get it
    assert copy[4] == {"y2": 8, "n": 1}
    assert copy.with_transform(None)[4]["y"] == 4
    with pytest.raises(tfe.InvalidArgumentError, match="transform must be a function"):
        tfe.RecordDataset(path, transform="y")  # type: ignore[arg-type]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11+")
def test_a_failing_transform_says_which_record(path: str) -> None:
    def fails_on_seven(sample: dict[str, Any]) -> Any:
        if sample["y"] == 7:
            raise KeyError("boom")
        return sample

    ds = tfe.RecordDataset(path, features=SPEC, transform=fails_on_seven)
    with pytest.raises(KeyError, match="boom") as err:
        ds.__getitems__([5, 6, 7])
    assert "applied to record 7" in " ".join(getattr(err.value, "__notes__", []))
    with pytest.raises(KeyError) as err:
        ds[-293]  # record 7, from the end
    assert "applied to record 7" in " ".join(getattr(err.value, "__notes__", []))


def test_with_format_numpy_is_as_decoded_and_names_are_checked(path: str) -> None:
    ds = tfe.RecordDataset(path, features=SPEC)
    same = ds.with_format("numpy")
    assert same.format == "numpy" == ds.with_format(None).format
    assert same[[0, 2]]["y"].tolist() == [0, 2]
    assert isinstance(same[[0, 2]]["tags"], tfe.SparseValue)
    with pytest.raises(tfe.InvalidArgumentError, match="format must be 'numpy', 'torch', 'jax'"):
        ds.with_format("tensorflow")
