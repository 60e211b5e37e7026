"""SequenceExample datasets under PyTorch: map-style loaders (default collate, worker
processes, ``tfe.collate``) and the iterable host give the batches' keys and values."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pytest

import tfrecord_engine as tfe

from ..optional import require

torch = require("torch")
from torch.utils.data import DataLoader  # noqa: E402 - after the skip

from tfrecord_engine.torch import RecordIterableDataset  # noqa: E402

CONTEXT = {"id": tfe.FixedLenFeature([], "int64"), "name": tfe.FixedLenFeature([], "string")}
SEQUENCE = {
    "tokens": tfe.FixedLenSequenceFeature([], "int64", allow_missing=True),
    "emb": tfe.VarLenFeature("float32"),
}
KEYS = ["id", "name", "tokens", "emb", "tokens_lengths"]


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = str(tmp_path_factory.mktemp("seq") / "s.tfrecord")
    rng = np.random.default_rng(0)
    with tfe.TFRecordWriter(out, index=True) as w:
        for i in range(90):
            lists: dict[str, Any] = {"tokens": [[t] for t in range(i % 7)]}
            if i % 3:
                lists["emb"] = [rng.random(j % 4).astype(np.float32) for j in range(i % 5)]
            w.write(tfe.encode_sequence_example({"id": i, "name": b"r%d" % i}, lists))
    return out


def _dataset(path: str) -> tfe.RecordDataset:
    return tfe.RecordDataset(path, context_features=CONTEXT, sequence_features=SEQUENCE)


def test_map_style_loader_with_workers(path: str) -> None:
    ds = _dataset(path)
    loader: DataLoader[Any] = DataLoader(cast(Any, ds), batch_size=16, shuffle=True, num_workers=2)
    seen: list[int] = []
    for batch in loader:
        assert list(batch) == KEYS
        ids = batch["id"].tolist()
        seen += ids
        want = ds[ids]
        tokens = batch["tokens"]  # a PaddedValue of tensors
        assert tokens.lengths.tolist() == want["tokens_lengths"].tolist()
        assert batch["tokens_lengths"].tolist() == want["tokens_lengths"].tolist()
        width = want["tokens"].shape[1]
        np.testing.assert_array_equal(tokens.values.numpy()[:, :width], want["tokens"])
        emb = batch["emb"]  # padded [batch, steps, values], as TensorFlow's to_dense
        dense = np.zeros(want["emb"].dense_shape, np.float32)
        dense[tuple(want["emb"].indices.T)] = want["emb"].values
        got = emb.values.numpy()
        np.testing.assert_array_equal(got[:, : dense.shape[1], : dense.shape[2]], dense)
        assert batch["name"] == want["name"].tolist()
    assert sorted(seen) == list(range(90))


def test_collate_and_transform(path: str) -> None:
    ds = _dataset(path).with_transform(lambda s: {"n": s["tokens_lengths"], "t": s["tokens"]})
    batch = tfe.collate(ds.__getitems__([3, 4, 5]), format="numpy")
    assert batch["n"].tolist() == [3, 4, 5]
    assert batch["t"].values.tolist() == [[0, 1, 2, 0, 0], [0, 1, 2, 3, 0], [0, 1, 2, 3, 4]]


def test_iterable_host_gives_the_engines_batches(path: str) -> None:
    ds = _dataset(path)
    it = RecordIterableDataset(ds, 20, shuffle=True, seed=5)
    loader = DataLoader(it, batch_size=None, num_workers=2)
    got = {int(b["id"][0]): b for b in loader}
    want = list(ds.batches(20, shuffle=True, seed=5, epoch=0))
    assert len(got) == len(want)
    for batch in want:
        mine = got[int(batch["id"][0])]
        assert list(mine) == KEYS
        assert mine["id"].tolist() == batch["id"].tolist()
        assert mine["tokens"].tolist() == batch["tokens"].tolist()
        assert mine["tokens_lengths"].tolist() == batch["tokens_lengths"].tolist()
        assert mine["emb"].indices.tolist() == batch["emb"].indices.tolist()
        assert mine["emb"].values.tolist() == batch["emb"].values.tolist()


def test_string_drop(path: str) -> None:
    ds = _dataset(path)
    batch = next(iter(RecordIterableDataset(ds, 8, strings="drop")))
    assert list(batch) == ["id", "tokens", "emb", "tokens_lengths"]
