"""``RecordDataset(paths, context_features=..., sequence_features=...)`` without
TensorFlow: arguments and key clashes, ``tfr schema``'s specs pasted in, the flat
batches against ``tfe.parse_sequence_example``, samples, pickling, errors, damage,
views, mixes and ``padded=``. (tests/tf/test_sequence_dataset_tf.py compares every read
path with TensorFlow.)"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.cli.helpers import invoke
from tfrecord_engine.example.seqspecs import SequenceFeatures
from tfrecord_engine.example.varlen import VarLenArray

CONTEXT: dict[str, Any] = {"id": tfe.FixedLenFeature([], "int64")}
SEQUENCE: dict[str, Any] = {
    "tok": tfe.FixedLenSequenceFeature([], "int64"),
    "emb": tfe.VarLenFeature("float32"),
    "w": tfe.RaggedFeature("string"),
}


def _record(i: int) -> bytes:
    return tfe.encode_sequence_example(
        {"id": i},
        {
            "tok": [[j] for j in range(i % 4)],
            "emb": [np.full(j % 3, i, np.float32) for j in range(i % 5)],
            "w": [np.array([b"a"] * (j % 2), dtype=object) for j in range(i % 3)],
        },
    )


@pytest.fixture
def path(tmp_path: Path) -> str:
    out = str(tmp_path / "s.tfrecord")
    with tfe.TFRecordWriter(out, index=True) as w:
        w.write_many(_record(i) for i in range(40))
    return out


def _dataset(path: str, **kw: Any) -> tfe.RecordDataset:
    return tfe.RecordDataset(path, context_features=CONTEXT, sequence_features=SEQUENCE, **kw)


def _same(a: Any, b: Any) -> None:
    if isinstance(b, tuple):  # SparseValue, RaggedValue
        assert type(a) is type(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    else:
        assert np.asarray(a).dtype == np.asarray(b).dtype
        assert np.asarray(a).tolist() == np.asarray(b).tolist()


def _expected(records: list[bytes]) -> dict[str, Any]:
    ctx, lists, lengths = tfe.parse_sequence_example(records, CONTEXT, SEQUENCE)
    return {**ctx, **lists, "tok_lengths": lengths["tok"]}


def test_batches_are_parse_sequence_example_as_one_dict(path: str) -> None:
    records = list(tfe.read_records(path))
    ds = _dataset(path)
    batch = ds[[5, 2, 9]]
    assert list(batch) == ["id", "tok", "emb", "w", "tok_lengths"]
    want = _expected([records[i] for i in (5, 2, 9)])
    for key in want:
        _same(batch[key], want[key])
    for k, got in enumerate(ds.batches(16)):
        want = _expected(records[16 * k : 16 * k + 16])
        for key in want:
            _same(got[key], want[key])
    assert ds.features == SequenceFeatures(CONTEXT, SEQUENCE)
    assert ds["tok_lengths"].tolist() == [i % 4 for i in range(40)]
    assert ds["id"].tolist() == list(range(40))
    assert [len(v) for v in ds["tok"]] == [i % 4 for i in range(40)]
    with pytest.raises(tfe.InvalidArgumentError, match="no key of this dataset's batches"):
        ds["nope"]


def test_samples_and_iteration(path: str) -> None:
    ds = _dataset(path)
    sample = ds[7]
    assert list(sample) == ["id", "tok", "emb", "w", "tok_lengths"]
    assert isinstance(sample["tok"], VarLenArray)
    assert sample["tok"].tolist() == [0, 1, 2]
    assert sample["tok_lengths"] == 3
    assert sample["emb"].dense_shape.tolist() == [2, 1]  # 2 steps, the longest of 1 value
    assert sample["w"].to_list() == [[]]  # one step, empty
    assert ds[5]["w"].to_list() == [[], [b"a"]]
    cut = ds.__getitems__(list(range(40)))  # cut from one batch decode
    for i, (one, mine) in enumerate(zip(cut, ds, strict=True)):
        assert list(one) == list(mine)
        for key in one:
            _same(one[key], mine[key])
        assert one["id"] == i


def test_pickled_dataset_and_workers(path: str) -> None:
    ds = pickle.loads(pickle.dumps(_dataset(path)))
    assert ds[3]["tok"].tolist() == [0, 1, 2]
    plain = [b["id"].tolist() for b in _dataset(path).batches(8, shuffle=True, seed=2)]
    with ds:
        pooled = [b["id"].tolist() for b in ds.batches(8, shuffle=True, seed=2, workers=2)]
    assert pooled == plain


def test_arguments_and_key_clashes(path: str) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="not both"):
        tfe.RecordDataset(path, CONTEXT, sequence_features=SEQUENCE)
    with pytest.raises(tfe.InvalidArgumentError, match="both a context and a sequence feature"):
        tfe.RecordDataset(
            path, context_features={"x": CONTEXT["id"]}, sequence_features={"x": SEQUENCE["tok"]}
        )
    with pytest.raises(tfe.InvalidArgumentError, match="'tok_lengths' entry"):
        tfe.RecordDataset(
            path, context_features={"tok_lengths": CONTEXT["id"]}, sequence_features=SEQUENCE
        )
    with pytest.raises(tfe.InvalidArgumentError, match="at least one should have values"):
        tfe.RecordDataset(path, context_features={}, sequence_features={})
    with pytest.raises(tfe.InvalidArgumentError, match="Unsupported FixedLenSequenceFeature"):
        tfe.RecordDataset(path, context_features={"c": SEQUENCE["tok"]})
    with pytest.raises(tfe.InvalidArgumentError, match="must be a mapping"):
        tfe.RecordDataset(path, sequence_features=[SEQUENCE["tok"]])  # type: ignore[arg-type]
    # The first-hour mistake: a SequenceExample's specs given as features=.
    with pytest.raises(tfe.InvalidArgumentError, match="pass its two spec dicts"):
        tfe.RecordDataset(path, {**CONTEXT, **SEQUENCE})
    # Either part may be left out, as in TensorFlow.
    only = tfe.RecordDataset(path, sequence_features={"tok": SEQUENCE["tok"]})
    assert list(only[[3]]) == ["tok", "tok_lengths"]
    assert list(tfe.RecordDataset(path, context_features=CONTEXT)[[3]]) == ["id"]
    # A context and a sequence spec of one name are different specs.
    assert SequenceFeatures({"a": CONTEXT["id"]}, None) != SequenceFeatures(
        None, {"a": tfe.VarLenFeature("int64")}
    )


def test_specs_printed_by_tfr_schema_work(path: str) -> None:
    out = invoke("schema", "--all", path)
    assert out.exit_code == 0, out.stderr
    scope: dict[str, Any] = {}
    exec(out.stdout, scope)  # the output is meant to be pasted into Python
    context, sequence = scope["context_features"], scope["sequence_features"]
    assert isinstance(sequence["tok"], tfe.FixedLenSequenceFeature)
    ds = tfe.RecordDataset(path, context_features=context, sequence_features=sequence)
    records = list(tfe.read_records(path))
    ctx, lists, lengths = tfe.parse_sequence_example(records, context, sequence)
    batch = ds[list(range(len(ds)))]
    for key, value in {**ctx, **lists, **{f"{k}_lengths": v for k, v in lengths.items()}}.items():
        _same(batch[key], value)
    assert sum(len(b["id"]) for b in ds.batches(7, shuffle=True)) == 40


def test_parse_errors_name_the_record(tmp_path: Path) -> None:
    out = str(tmp_path / "bad.tfrecord")
    with tfe.TFRecordWriter(out, index=True) as w:
        w.write_many([_record(i) for i in range(20)])
        w.write(tfe.encode_sequence_example({"id": 1.5}, {"tok": [[1]]}))  # id: a float
    ds = _dataset(out)
    with pytest.raises(tfe.ParseError, match="record 20"):
        ds[20]
    batches = ds.batches(8)
    assert [len(next(batches)["id"]) for _ in range(2)] == [8, 8]  # before the bad one
    with pytest.raises(tfe.ParseError, match="record 20"):
        next(batches)


def test_views_mixes_and_padding(path: str) -> None:
    ds = _dataset(path)
    assert ds.take(5)[[0, 4]]["id"].tolist() == [0, 4]
    mix = tfe.sample_from_datasets([ds, _dataset(path)], seed=0)
    batch = next(iter(mix.batches(10)))
    assert list(batch) == ["id", "tok", "emb", "w", "tok_lengths"]
    padded = next(iter(ds.batches(6, padded=True)))
    assert isinstance(padded["emb"], tfe.PaddedValue)
    assert padded["emb"].values.shape == (6, 4, 2)
    assert isinstance(padded["w"], tfe.PaddedValue)
    assert padded["tok"].tolist()[3] == [0, 1, 2]
    assert padded["tok_lengths"].tolist() == [0, 1, 2, 3, 0, 1]


def test_a_sequence_dataset_explains_its_own_decode_path(path: str) -> None:
    # It used to be explained as an Example dataset (its specs are a Mapping too).
    said = _dataset(path).explain_decode(64)
    assert said.tier == "sequence walk"
    assert said.features == {}
