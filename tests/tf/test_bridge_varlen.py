"""``VarLenFeature`` outputs cross the bridge as values and row splits (``Layout`` kind
``"varlen"``): the engine decodes them as a ``RaggedFeature`` and TensorFlow makes the
``SparseTensor``. The batches must equal TensorFlow's own ``parse_example`` (indices,
values, dense shape, dtypes), with keys missing from records, empty lists, batches with
no value at all, padding, shuffling and every value type; the engine must not build the
sparse indices itself; errors must still name the feature as the user declared it."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.tf.bridge_helpers import assert_same_batch, native, write_file
from tfrecord_bridge import to_tf_dataset
from tfrecord_bridge.dataset import _varlen_as_ragged
from tfrecord_engine.example import assemble

FEATURES: dict[str, Any] = {
    "index": tfe.FixedLenFeature([], "int64"),
    "ids": tfe.VarLenFeature("int64"),
    "scores": tfe.VarLenFeature("float32"),
    "names": tfe.VarLenFeature("string"),
}


def _record(i: int) -> bytes:
    fields: dict[str, Any] = {"index": [i]}
    n = (i * 7) % 5
    if i % 6 != 3:  # (every sixth record lacks the keys: no values, as an empty list)
        fields["ids"] = np.arange(n, dtype=np.int64) * 1000 - i
        fields["scores"] = np.linspace(0, 1, (i * 3) % 4, dtype=np.float32)
        fields["names"] = np.array([b"n%d" % j for j in range(i % 3)], dtype=object)
    return tfe.encode_example(fields)


@pytest.fixture
def path(tmp_path: Path) -> str:
    # Records 12..17 hold no value of any list (a batch of them has a [6, 0] shape).
    records = [
        tfe.encode_example({"index": [i]}) if 12 <= i < 18 else _record(i) for i in range(40)
    ]
    return write_file(str(tmp_path), records)


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the engine built sparse indices for the bridge")


@pytest.fixture
def no_engine_indices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails any engine batch that builds a VarLenFeature's sparse indices."""
    monkeypatch.setattr(assemble, "varlen", _refuse)


@pytest.mark.parametrize("batch_size", [1, 6, 7, 40])
@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_same_batches_as_parse_example(
    tf: ModuleType, path: str, batch_size: int, chunk: int | None, no_engine_indices: None
) -> None:
    ds = tfe.RecordDataset(path, features=FEATURES)
    ours = to_tf_dataset(ds, batch_size, chunk_batches=chunk)
    theirs = native(tf, path, FEATURES, batch_size)
    assert ours.element_spec == theirs.element_spec
    got, want = list(ours), list(theirs)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert_same_batch(tf, a, b)


def test_padding_and_shuffling_keep_each_record_its_values(
    tf: ModuleType, path: str, no_engine_indices: None
) -> None:
    ds = tfe.RecordDataset(path, features=FEATURES)
    want = {int(b["index"][0]): b for b in native(tf, path, FEATURES, 1)}
    seen = []
    for batch in to_tf_dataset(ds, 6, shuffle=True, seed=3, pad_remainder=True):
        assert batch["ids"].dense_shape.numpy()[0] == 6
        dense = {k: tf.sparse.to_dense(batch[k]).numpy() for k in ("ids", "scores", "names")}
        rows = zip(batch["index"].numpy(), batch["mask"].numpy(), strict=True)
        for row, (i, real) in enumerate(rows):
            if not real:
                continue  # (padding: masked; its values are the engine's to choose)
            seen.append(int(i))
            for k in dense:
                own = want[int(i)][k].values.numpy().tolist()
                assert dense[k][row][: len(own)].tolist() == own, (i, k)
                sliced = tf.sparse.slice(batch[k], [row, 0], [1, 1 << 30])
                assert sliced.values.numpy().tolist() == own, (i, k)
    assert sorted(seen) == list(range(40))


def test_only_datasets_without_a_transform_are_decoded_as_ragged(path: str) -> None:
    ds = tfe.RecordDataset(path, features=FEATURES)
    copy, keys = _varlen_as_ragged(ds)
    assert keys == {"ids", "scores", "names"}
    assert copy is not ds
    assert isinstance(copy.features["ids"], tfe.RaggedFeature)
    assert ds.features == FEATURES  # (the user's dataset is left as it was)
    # A transform or output format expects the engine's own kinds: left alone.
    for other in (ds.with_transform(lambda s: s), ds.with_format("torch")):
        assert _varlen_as_ragged(other) == (other, frozenset())
    # A mix is copied dataset by dataset (nested mixes too), unless one of them has a
    # transform or format.
    inner = tfe.sample_from_datasets([ds, ds], weights=[1, 2], seed=4)
    mix = tfe.sample_from_datasets([inner, ds], seed=0)
    copy, keys = _varlen_as_ragged(mix)
    assert keys == {"ids", "scores", "names"}
    assert all(isinstance(leaf.features["names"], tfe.RaggedFeature) for leaf in copy.leaves)
    assert (copy.weights, copy.seed, copy.datasets[0].weights) == (mix.weights, 0, inner.weights)
    assert all(leaf.features == FEATURES for leaf in mix.leaves)
    transformed = tfe.sample_from_datasets([ds, ds.with_transform(lambda s: s)], seed=0)
    assert _varlen_as_ragged(transformed) == (transformed, frozenset())


def test_a_mix_gives_the_engine_batches(
    tf: ModuleType, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = tfe.RecordDataset(path, features=FEATURES)
    mix = tfe.sample_from_datasets([ds, ds], weights=[1, 3], seed=2)
    want = list(mix.batches(7, shuffle=True, seed=1))
    monkeypatch.setattr(assemble, "varlen", _refuse)
    got = list(to_tf_dataset(mix, 7, shuffle=True, seed=1))
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a["index"].numpy().tolist() == b["index"].tolist()
        for k in ("ids", "scores", "names"):
            assert isinstance(a[k], tf.SparseTensor)
            np.testing.assert_array_equal(a[k].indices.numpy(), b[k].indices, err_msg=k)
            np.testing.assert_array_equal(a[k].values.numpy(), b[k].values, err_msg=k)
            assert a[k].dense_shape.numpy().tolist() == list(b[k].dense_shape), k


def test_a_wrong_kind_still_names_the_feature(tf: ModuleType, tmp_path: Path) -> None:
    records = [_record(0), tfe.encode_example({"index": [1], "ids": np.ones(2, np.float32)})]
    ds = tfe.RecordDataset(write_file(str(tmp_path), records), features=FEATURES)
    with pytest.raises(tf.errors.OpError) as err:
        list(to_tf_dataset(ds, 2))
    message = str(err.value)
    assert "ids" in message
    assert "record 1" in message
