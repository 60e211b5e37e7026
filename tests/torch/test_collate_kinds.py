"""Every feature kind through PyTorch's default ``collate_fn`` and ``tfe.collate``.

A sample's variable-length values are typed (``VarLenArray``), and PyTorch's
``default_collate`` is taught to pad them: pasting ``tfr schema``'s
``VarLenFeature`` into the README's ``DataLoader`` example works as written.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.example.varlen import varlen_array

from ..optional import require
from ..snippets import run

torch = require("torch")
from torch.utils.data import ConcatDataset, DataLoader, Dataset  # noqa: E402 - after the skip

Image = pytest.importorskip("PIL.Image")

SPEC: dict[str, Any] = {
    "i": tfe.FixedLenFeature([], "int64"),
    "s": tfe.FixedLenFeature([], "string"),
    "img": tfe.ImageFeature(),
    "v": tfe.VarLenFeature("int64"),
    "vs": tfe.VarLenFeature("string"),
    "seq": tfe.FixedLenSequenceFeature([2], "float32", allow_missing=True),
    "r": tfe.RaggedFeature("int64"),
    "rp": tfe.RaggedFeature(
        "int64", value_key="rv", partitions=[tfe.RaggedFeature.RowLengths("rl")]
    ),
    "sp": tfe.SparseFeature("spi", "spv", "float32", [5]),
}


def png(i: int) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.full((3, 2, 3), i, np.uint8)).save(out, "PNG")
    return out.getvalue()


def record(i: int) -> bytes:
    k = i % 3
    return tfe.encode_example(
        {
            "i": i,
            "s": b"s%d" % i,
            "img": png(i),
            "v": np.arange(k, dtype=np.int64) + i,
            "vs": np.array([b"x%d" % j for j in range(k)], dtype=object),
            "seq": np.arange(2 * k, dtype=np.float32),
            "r": np.arange(i % 4, dtype=np.int64),
            "rv": np.arange(3, dtype=np.int64) + i,
            "rl": np.array([1, 2] if k else [3, 0], dtype=np.int64),
            "spi": np.array([k, 4], dtype=np.int64),
            "spv": np.array([1.5, float(i)], dtype=np.float32),
        }
    )


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Dataset[dict[str, Any]]:
    path = str(tmp_path_factory.mktemp("kinds") / "k.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(record(i) for i in range(200))
    return cast("Dataset[dict[str, Any]]", tfe.RecordDataset(path, features=SPEC))


def check(batch: dict[str, Any], ids: list[int]) -> None:
    """Every kind of a batch of records ``ids``, as the default collate now gives it."""
    assert batch["i"].tolist() == ids
    assert batch["s"] == [b"s%d" % i for i in ids]
    assert batch["img"].shape == (len(ids), 3, 2, 3)
    assert batch["img"][:, 0, 0, 0].tolist() == ids
    v = batch["v"]
    assert isinstance(v, tfe.PaddedValue)
    assert all(isinstance(t, torch.Tensor) for t in v)
    width = max(i % 3 for i in ids)
    assert v.values.tolist() == [[i + j if j < i % 3 else 0 for j in range(width)] for i in ids]
    assert v.lengths.tolist() == [i % 3 for i in ids]
    assert v.mask.tolist() == [[j < i % 3 for j in range(width)] for i in ids]
    assert batch["vs"] == [[b"x%d" % j for j in range(i % 3)] for i in ids]
    seq = batch["seq"]
    assert seq.values.shape == (len(ids), width, 2)
    assert seq.lengths.tolist() == [i % 3 for i in ids]
    assert batch["r"].lengths.tolist() == [i % 4 for i in ids]
    rp = batch["rp"]
    assert rp.lengths.tolist() == [2] * len(ids)  # two rows each, their lengths vary
    for row, mask, i in zip(rp.values.tolist(), rp.mask.tolist(), ids, strict=True):
        rows = [[i], [i + 1, i + 2]] if i % 3 else [[i, i + 1, i + 2], []]
        assert [
            [x for x, m in zip(r, ms, strict=True) if m] for r, ms in zip(row, mask, strict=True)
        ] == rows
    sp = batch["sp"]
    assert sp.values.shape == (len(ids), 5)
    for dense, i in zip(sp.values.tolist(), ids, strict=True):
        want = [0.0] * 5
        want[i % 3], want[4] = 1.5, float(i)
        assert dense == want


@pytest.mark.parametrize("workers", [0, 2])
def test_default_collate_batches_every_kind(ds: Dataset[dict[str, Any]], workers: int) -> None:
    loader = DataLoader(ds, batch_size=7, num_workers=workers)
    batches = list(loader)
    for n, batch in enumerate(batches[:3]):
        check(batch, list(range(7 * n, 7 * n + 7)))
    assert sum(len(b["i"]) for b in batches) == 200


def test_tfe_collate_gives_tensors_by_default_and_the_same_batches(
    ds: Dataset[dict[str, Any]],
) -> None:
    ids = [4, 9, 12, 3]
    samples = ds.__getitems__(ids)  # type: ignore[attr-defined]
    check(tfe.collate(samples), ids)
    plain = tfe.collate(samples, format="numpy")
    assert isinstance(plain["v"].values, np.ndarray)
    assert isinstance(plain["img"], np.ndarray)
    # a ConcatDataset's loader calls ds[i] per record: those samples collate the same
    (batch,) = DataLoader(ConcatDataset([ds]), batch_size=4, sampler=ids)
    check(batch, ids)


def test_a_batch_of_equal_lengths_is_still_padded(ds: Dataset[dict[str, Any]]) -> None:
    # Records 1, 4, 7 all hold one value: the form follows the spec, not the batch.
    batch = next(iter(DataLoader(ds, batch_size=3, sampler=[1, 4, 7])))
    assert isinstance(batch["v"], tfe.PaddedValue)
    assert batch["v"].values.tolist() == [[1], [4], [7]]


def test_pad_value_and_unpadded_lists() -> None:
    samples = [
        {"t": varlen_array(np.array([1, 2], np.uint8))},
        {"t": varlen_array(np.array([3], np.uint8))},
    ]
    assert tfe.collate(samples, pad_value=9)["t"].values.tolist() == [[1, 2], [3, 9]]
    unpadded = tfe.collate(samples, pad_value=None)["t"]
    assert [t.tolist() for t in unpadded] == [[1, 2], [3]]
    with pytest.raises(tfe.InvalidArgumentError, match="pad_value=-1 does not fit"):
        tfe.collate(samples, pad_value=-1)


def test_transform_outputs_collate_as_torch_does() -> None:
    pairs = [(torch.full((2, 2), float(i)), i) for i in range(3)]
    images, labels = tfe.collate(pairs)
    assert images.shape == (3, 2, 2)
    assert labels.tolist() == [0, 1, 2]
    sizes = tfe.collate([torch.zeros(2), torch.zeros(3)])
    assert [t.shape[0] for t in sizes] == [2, 3]  # different shapes: a list


def test_readme_dataloader_snippet_with_a_varlen_feature(tmp_path: Path) -> None:
    """README's DataLoader example with ``tfr schema``'s ``VarLenFeature`` pasted in, run
    as a user runs it: worker processes, the default collate_fn."""
    code = textwrap.dedent(
        """
        import numpy as np
        from torch.utils.data import DataLoader

        import tfrecord_engine as tfe

        with tfe.TFRecordWriter("train-0.tfrecord", index=True) as w:
            w.write_many(
                tfe.encode_example({"label": i % 10, "tags": np.arange(i % 4)}) for i in range(120)
            )
        features = {
            "label": tfe.FixedLenFeature([], "int64"),
            "tags": tfe.VarLenFeature("int64"),  # as `tfr schema` prints it
        }

        if __name__ == "__main__":
            loader = DataLoader(tfe.RecordDataset("train-*.tfrecord", features=features),
                                batch_size=64, shuffle=True, num_workers=2)
            for batch in loader:
                tags, lengths, mask = batch["tags"]
                assert int(mask.sum()) == int(lengths.sum())
            print(len(batch["label"]), tuple(tags.shape), lengths.dtype)
        """
    )
    assert run(code, tmp_path) == ["56 (56, 3) torch.int64"]
