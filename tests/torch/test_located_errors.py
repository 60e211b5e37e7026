"""Parse errors through the PyTorch host name the file, the record and its offset.

``RecordIterableDataset`` (batches prepared by ``RecordDataset.batches``) and a map-style
``DataLoader`` (``__getitems__`` with the sampler's indices) raise the same located
error as ``ds[i]`` (issue 34, item 1): not TensorFlow's ``Index: j`` within a shuffled
batch alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

import tfrecord_engine as tfe

from ..optional import require

torch = require("torch")
from torch.utils.data import DataLoader  # noqa: E402 - after the skip

from tfrecord_engine.torch import RecordIterableDataset  # noqa: E402

SPEC = {"label": tfe.FixedLenFeature([], "int64")}


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> tfe.RecordDataset:
    root = tmp_path_factory.mktemp("located")
    with tfe.TFRecordWriter(root / "a.tfrecord", index=True) as w:
        w.write_many(tfe.encode_example({"label": [i]}) for i in range(100))
    with tfe.TFRecordWriter(root / "b.tfrecord", index=True) as w:
        w.write_many(tfe.encode_example({"other": [i]}) for i in range(100))
    return tfe.RecordDataset(sorted(root.glob("*.tfrecord")), SPEC)


def _check(err: tfe.ExampleParseError, ds: tfe.RecordDataset) -> None:
    b = ds.indexes[1]
    assert err.path == b.data_path
    assert err.record_index is not None
    assert err.dataset_index == 100 + err.record_index
    assert err.record_offset == int(b.offsets[err.record_index])
    assert str(err).startswith(f"{Path(b.data_path)}: record {err.record_index} at offset ")
    assert "is required but could not be found" in err.reason


def test_iterable_dataset(ds: tfe.RecordDataset) -> None:
    loader = DataLoader(RecordIterableDataset(ds, 16, shuffle=True), batch_size=None)
    with pytest.raises(tfe.ExampleParseError) as err:
        list(loader)
    _check(err.value, ds)


def test_map_style_loader(ds: tfe.RecordDataset) -> None:
    loader: DataLoader[Any] = DataLoader(
        cast(Any, ds), batch_size=16, shuffle=True, collate_fn=tfe.collate
    )
    with pytest.raises(tfe.ExampleParseError) as err:
        list(loader)
    _check(err.value, ds)
