"""The tf.data bridge on SequenceExample datasets (``context_features=``/``sequence_features=``).

Every batch is ``tf.io.parse_sequence_example``'s three outputs as one flat dict (each
``FixedLenSequenceFeature``'s step counts under ``"<name>_lengths"``), with TensorFlow's
element spec, under every property of the bridge: shards, checkpoints, padded
remainders, shuffled epochs.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.tf.convert import tf_specs

CONTEXT = {
    "id": tfe.FixedLenFeature([], "int64"),
    "name": tfe.VarLenFeature("string"),
}
SEQUENCE = {
    "frames": tfe.FixedLenSequenceFeature([3], "float32"),
    "words": tfe.FixedLenSequenceFeature([], "string", allow_missing=True),
    "spans": tfe.RaggedFeature("int64"),
    "emb": tfe.VarLenFeature("float32"),
}
RECORDS = 230


def _records(n: int) -> list[bytes]:
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        steps = int(rng.integers(0, 9))
        context = {"id": i, "name": [b"n%d" % i] * int(rng.integers(0, 3)) or np.zeros(0, object)}
        lists: dict[str, Any] = {
            "frames": [rng.random(3).astype(np.float32) for _ in range(steps)],
            "spans": [rng.integers(0, 99, int(rng.integers(0, 4))) for _ in range(steps)],
            "emb": [rng.random(int(rng.integers(0, 3))).astype(np.float32) for _ in range(2)],
        }
        if rng.random() < 0.7:
            lists["words"] = [[b"w%d" % j] for j in range(int(rng.integers(0, 5)))]
        out.append(tfe.encode_sequence_example(context, lists))
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[bytes]]:
    records = _records(RECORDS)
    path = str(Path(tmp_path_factory.mktemp("seq"), "seq.tfrecord"))
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    return path, records


def _dataset(path: str) -> tfe.RecordDataset:
    return tfe.RecordDataset(path, context_features=CONTEXT, sequence_features=SEQUENCE)


def _theirs(tf: ModuleType, records: list[bytes]) -> dict[str, Any]:
    """TensorFlow's parse of ``records`` as the bridge's flat dict."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx, lists, lengths = tf.io.parse_sequence_example(
            tf.constant(records, tf.string), tf_specs(tf, CONTEXT), tf_specs(tf, SEQUENCE)
        )
    return {**ctx, **lists, **{f"{k}_lengths": v for k, v in lengths.items()}}


def _arrays(tf: ModuleType, value: Any) -> list[np.ndarray[Any, Any]]:
    """Every component array of a TF value (dense, sparse or ragged)."""
    if isinstance(value, tf.SparseTensor):
        return [value.indices.numpy(), value.values.numpy(), value.dense_shape.numpy()]
    if isinstance(value, tf.RaggedTensor):
        return [value.flat_values.numpy(), *(s.numpy() for s in value.nested_row_splits)]
    return [value.numpy()]


def _assert_equal(tf: ModuleType, ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert set(ours) == set(theirs)
    for key, want in theirs.items():
        got = ours[key]
        assert type(got) is type(want), key
        assert got.dtype == want.dtype, key
        for a, b in zip(_arrays(tf, got), _arrays(tf, want), strict=True):
            assert a.shape == b.shape, key
            np.testing.assert_array_equal(a, b, err_msg=key)


def _ids(batch: dict[str, Any]) -> list[int]:
    return [int(i) for i in batch["id"].numpy()]


@pytest.mark.parametrize("chunk", [None, 1])
def test_batches_and_element_spec_are_parse_sequence_examples(
    tf: ModuleType, data: tuple[str, list[bytes]], chunk: int | None
) -> None:
    from tfrecord_bridge import to_tf_dataset

    path, records = data
    ours = to_tf_dataset(_dataset(path), 32, chunk_batches=chunk)
    want = tf.data.TFRecordDataset(path).batch(32).map(lambda b: _theirs_graph(tf, b)).element_spec
    assert ours.element_spec == want
    assert "frames_lengths" in ours.element_spec
    assert "words_lengths" in ours.element_spec
    batches = list(ours)
    assert len(batches) == -(-RECORDS // 32)
    for k, batch in enumerate(batches):
        _assert_equal(tf, batch, _theirs(tf, records[32 * k : 32 * (k + 1)]))


def test_context_varlen_features_cross_as_ragged_rows(data: tuple[str, list[bytes]]) -> None:
    # A context VarLenFeature (2-D) crosses as values and row splits, TensorFlow making
    # the SparseTensor (the test above: the same batches as parse_sequence_example); a
    # feature list's (3-D) keeps the engine's sparse output.
    from tfrecord_bridge.dataset import _varlen_as_ragged

    ds = _dataset(data[0])
    copy, keys = _varlen_as_ragged(ds)
    assert keys == {"name"}
    assert isinstance(copy.features["name"], tfe.RaggedFeature)
    assert isinstance(copy.features["emb"], tfe.VarLenFeature)
    assert ds.features is not None
    assert ds.features["name"] == CONTEXT["name"]
    batch = next(iter(copy.batches(16)))
    assert isinstance(batch["name"], tfe.RaggedValue)


def _theirs_graph(tf: ModuleType, serialized: Any) -> dict[str, Any]:
    ctx, lists, lengths = tf.io.parse_sequence_example(
        serialized, tf_specs(tf, CONTEXT), tf_specs(tf, SEQUENCE)
    )
    return {**ctx, **lists, **{f"{k}_lengths": v for k, v in lengths.items()}}


def test_shards_cover_every_record_once(tf: ModuleType, data: tuple[str, list[bytes]]) -> None:
    from tfrecord_bridge import to_tf_dataset

    path, records = data
    seen: list[int] = []
    for shard in range(3):
        context = tf.distribute.InputContext(
            num_input_pipelines=3, input_pipeline_id=shard, num_replicas_in_sync=3
        )
        for batch in to_tf_dataset(_dataset(path), 16, input_context=context):
            ids = _ids(batch)
            _assert_equal(tf, batch, _theirs(tf, [records[i] for i in ids]))
            seen += ids
    assert sorted(seen) == list(range(RECORDS))


def test_checkpoint_restores_the_same_shuffled_epoch(
    tf: ModuleType, data: tuple[str, list[bytes]], tmp_path: Path
) -> None:
    from tfrecord_bridge import to_tf_dataset

    path, records = data
    pipe = to_tf_dataset(_dataset(path), 16, shuffle=True, seed=5, chunk_batches=3)
    it = iter(pipe)
    for _ in range(4):
        next(it)
    ckpt = tf.train.Checkpoint(iterator=it)
    saved = ckpt.write(str(tmp_path / "it"))
    rest = list(it)
    assert len(rest) == pipe.cardinality().numpy() - 4
    it2 = iter(pipe)
    tf.train.Checkpoint(iterator=it2).read(saved).assert_consumed()
    again = list(it2)
    assert len(again) == len(rest)
    for mine, want in zip(again, rest, strict=True):
        _assert_equal(tf, mine, want)
        _assert_equal(tf, mine, _theirs(tf, [records[i] for i in _ids(mine)]))


def test_pad_remainder_masks_the_padding(tf: ModuleType, data: tuple[str, list[bytes]]) -> None:
    from tfrecord_bridge import to_tf_dataset

    path, records = data
    ours = to_tf_dataset(_dataset(path), 64, pad_remainder=True)
    assert ours.element_spec["frames"].shape.as_list() == [64, None, 3]
    assert ours.element_spec["mask"] == tf.TensorSpec([64], tf.bool)
    seen = []
    for batch in ours:
        mask = batch.pop("mask").numpy()
        assert mask.shape == (64,)
        real = int(mask.sum())
        assert mask[:real].all()
        assert not mask[real:].any()
        assert batch["frames"].shape[0] == 64
        assert batch["frames_lengths"].shape == (64,)
        ids = _ids(batch)[:real]
        want = _theirs(tf, [records[i] for i in ids])
        for key in ("id", "frames_lengths", "words_lengths"):
            np.testing.assert_array_equal(batch[key].numpy()[:real], want[key].numpy())
        seen += ids
    assert seen == list(range(RECORDS))
