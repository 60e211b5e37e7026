"""Padded batches (``tf.data``'s ``padded_batch``): ``pad_batch`` and ``batches(padded=)``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.snippets import run, section
from tfrecord_engine.data.padding import pad_batch
from tfrecord_engine.errors import InvalidArgumentError

FEATURES: dict[str, Any] = {
    "label": tfe.FixedLenFeature([], "int64"),
    "tokens": tfe.VarLenFeature("int64"),
    "words": tfe.VarLenFeature("string"),
    "boxes": tfe.RaggedFeature(
        "float32", value_key="box", partitions=[tfe.RaggedFeature.UniformRowLength(4)]
    ),
}


def _record(i: int) -> bytes:
    n = i % 5
    return tfe.encode_example(
        {
            "label": np.array([i], np.int64),
            "tokens": np.arange(n, dtype=np.int64) + 100 * i,
            "words": np.array([b"w%d" % j for j in range(i % 3)], dtype=object),
            "box": np.arange(4 * (i % 4), dtype=np.float32),
        }
    )


def test_varlen_and_ragged_become_padded_values() -> None:
    batch = pad_batch(tfe.parse_example([_record(i) for i in range(5)], FEATURES))
    tokens = batch["tokens"]
    assert isinstance(tokens, tfe.PaddedValue)
    assert tokens.values.tolist() == [
        [0, 0, 0, 0],
        [100, 0, 0, 0],
        [200, 201, 0, 0],
        [300, 301, 302, 0],
        [400, 401, 402, 403],
    ]
    assert tokens.lengths.tolist() == [0, 1, 2, 3, 4]
    assert tokens.mask.sum(axis=1).tolist() == [0, 1, 2, 3, 4]
    assert batch["words"].values.tolist() == [
        [b"", b""],
        [b"w0", b""],
        [b"w0", b"w1"],
        [b"", b""],
        [b"w0", b""],
    ]
    boxes = batch["boxes"]
    assert boxes.values.shape == (5, 3, 4)  # rows of 4 boxes, the longest record has 3
    assert boxes.lengths.tolist() == [0, 1, 2, 3, 0]
    assert batch["label"].tolist() == [0, 1, 2, 3, 4]


def test_a_fixed_size_pads_beyond_the_longest_and_a_longer_record_is_an_error() -> None:
    records = [_record(i) for i in range(4)]
    batch = pad_batch(tfe.parse_example(records, FEATURES), {"tokens": 6}, pad_value=-1)
    assert batch["tokens"].values.shape == (4, 6)
    assert batch["tokens"].values[1].tolist() == [100, -1, -1, -1, -1, -1]
    assert batch["boxes"].values.shape == (4, 3, 4)  # unnamed: the batch's longest
    with pytest.raises(
        InvalidArgumentError,
        match=r"'tokens': record 13 \(the batch's record 3\) has 3 values.*nothing is cut off",
    ):
        pad_batch(tfe.parse_example(records, FEATURES), {"tokens": 2}, indices=[10, 11, 12, 13])


@pytest.mark.parametrize(
    ("padded", "pad_value", "message"),
    [
        ({"nope": 3}, 0, "not a feature of the batch"),
        ({"label": 3}, 0, "not variable-length"),
        ({"tokens": -1}, 0, "sizes are >= 0"),
        ({"tokens": 2.5}, 0, "a size is an int"),
        ("yes", 0, "pass True"),
        (True, 1.5, "does not fit feature 'tokens'"),
        (True, {"words": 1}, "pass bytes"),
        (True, [0], "pass a number"),
    ],
)
def test_bad_arguments_say_what_to_pass(padded: Any, pad_value: Any, message: str) -> None:
    batch = tfe.parse_example([_record(i) for i in range(3)], FEATURES)
    with pytest.raises(InvalidArgumentError, match=message):
        pad_batch(batch, padded, pad_value)


def test_false_leaves_the_batch_as_tensorflow_parses_it() -> None:
    batch = tfe.parse_example([_record(i) for i in range(3)], FEATURES)
    assert isinstance(pad_batch(batch, False)["tokens"], tfe.SparseValue)


def _dataset(tmp_path: Path, n: int = 23) -> tfe.RecordDataset:
    path = str(tmp_path / "pad.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(_record(i) for i in range(n))
    return tfe.RecordDataset(path, features=FEATURES)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("shuffle", [False, True])
def test_batches_padded_equal_padding_each_plain_batch(
    tmp_path: Path, shuffle: bool, workers: int
) -> None:
    ds = _dataset(tmp_path)
    plain = list(ds.batches(5, shuffle=shuffle, epoch=0, workers=workers))
    padded = list(ds.batches(5, shuffle=shuffle, epoch=0, workers=workers, padded=True))
    assert len(plain) == len(padded) == 5
    for p, q in zip(plain, padded, strict=True):
        want = pad_batch(p)
        for name in ("tokens", "words", "boxes"):
            assert isinstance(q[name], tfe.PaddedValue)
            for got, exp in zip(q[name], want[name], strict=True):
                np.testing.assert_array_equal(got, exp)
        np.testing.assert_array_equal(q["label"], p["label"])
    ds.close()


def test_a_record_over_its_size_names_it_and_the_state_stays_at_its_batch(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    it = ds.batches(4, padded={"tokens": 3})  # records 4, 9, 14, 19 have 4 tokens
    assert next(it)["tokens"].values.shape == (4, 3)
    with pytest.raises(InvalidArgumentError, match=r"record 4 \(the batch's record 0\)"):
        next(it)
    state = it.get_state()
    resumed = ds.batches(4, state=state, padded={"tokens": None})
    assert next(resumed)["label"].tolist() == [4, 5, 6, 7]  # the failed batch, not skipped


def test_padded_batches_with_a_format_and_with_pad_remainder(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    ds = _dataset(tmp_path, n=7).with_format("torch")
    batches = list(ds.batches(4, padded={"tokens": 6}, pad_value=-1, pad_remainder=True))
    last = batches[-1]
    assert isinstance(last["tokens"].values, torch.Tensor)
    assert last["tokens"].values.shape == (4, 6)
    assert last["mask"].tolist() == [True, True, True, False]
    assert last["tokens"].values[0].tolist() == [400, 401, 402, 403, -1, -1]


def test_padded_needs_features_and_good_arguments_before_any_read(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    raw = tfe.RecordDataset(ds.paths)
    with pytest.raises(InvalidArgumentError, match="pass features="):
        raw.batches(4, padded=True)
    with pytest.raises(InvalidArgumentError, match="a size is an int"):
        ds.batches(4, padded={"tokens": "long"})  # type: ignore[dict-item]


def test_the_docs_example_runs_as_written(tmp_path: Path) -> None:
    (code,) = section("Padded batches")
    lines = run(code, tmp_path)
    assert lines == ["(4, 5, 4) [0, 1, 2, 0]", "(4, 5, 4) [1, 2, 0, 1]", "(2, 5, 4) [2, 0]"]
