"""SequenceExample datasets vs TensorFlow: every read path of a
``RecordDataset(paths, context_features=..., sequence_features=...)`` gives
``tf.io.parse_sequence_example``'s values for the same records (per batch, as one flat
dict), and every sample ``tf.io.parse_single_sequence_example``'s (per record).
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import tfrecord_engine as tfe
from tests.tf.convert import assert_array_same, assert_same_value, tf_specs
from tfrecord_engine.data.sampler import IndexBatchIterator
from tfrecord_engine.example.varlen import VarLenArray, VarLenList
from tfrecord_engine.testing.sequences import SequenceBatch, sequence_batches

CONTEXT = {
    "id": tfe.FixedLenFeature([], "int64"),
    "label": tfe.FixedLenFeature([2], "float32"),
    "name": tfe.VarLenFeature("string"),
    "tags": tfe.RaggedFeature("int64"),
}
SEQUENCE = {
    "tokens": tfe.FixedLenSequenceFeature([], "int64"),
    "frames": tfe.FixedLenSequenceFeature([2], "float32", allow_missing=True),
    "words": tfe.FixedLenSequenceFeature([], "string", allow_missing=True),
    "emb": tfe.VarLenFeature("float32"),
    "spans": tfe.RaggedFeature("int64"),
    "notes": tfe.VarLenFeature("string"),
}


def _records(n: int, seed: int = 0) -> list[bytes]:
    """Records of every kind, with missing and empty lists and empty steps."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        steps = int(rng.integers(0, 6))
        context: dict[str, Any] = {
            "id": i,
            "label": rng.random(2).astype(np.float32),
            "name": [b"r%d" % i] * int(rng.integers(0, 3)) or np.zeros(0, object),
            "tags": rng.integers(0, 9, int(rng.integers(0, 4))),
        }
        lists: dict[str, Any] = {"tokens": [[int(t)] for t in rng.integers(0, 1000, steps)]}
        if rng.random() < 0.8:
            lists["frames"] = [rng.random(2).astype(np.float32) for _ in range(steps)]
        if rng.random() < 0.7:
            lists["words"] = [[b"w%d" % j] for j in range(int(rng.integers(0, 4)))]
        if rng.random() < 0.8:
            lists["emb"] = [
                rng.random(int(rng.integers(0, 4))).astype(np.float32)
                for _ in range(int(rng.integers(0, 5)))
            ]
        lists["spans"] = [rng.integers(0, 50, int(rng.integers(0, 3))) for _ in range(steps)]
        if rng.random() < 0.5:
            lists["notes"] = [[b"n"] * int(rng.integers(1, 3)) for _ in range(2)]
        out.append(tfe.encode_sequence_example(context, lists))
    return out


def _write(folder: str, records: Sequence[bytes]) -> str:
    path = str(Path(folder, "seq.tfrecord"))
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    return path


def _tf_batch(
    tf: ModuleType,
    records: Sequence[bytes],
    context: Mapping[str, Any],
    sequence: Mapping[str, Any],
) -> dict[str, Any]:
    """TensorFlow's three outputs for ``records`` as the dataset's flat dict."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx, lists, lengths = tf.io.parse_sequence_example(
            tf.constant(list(records), tf.string),
            tf_specs(tf, context) or None,
            tf_specs(tf, sequence) or None,
        )
    return {**ctx, **lists, **{f"{k}_lengths": v for k, v in lengths.items()}}


def _assert_batch(
    tf: ModuleType, ours: Mapping[str, Any], theirs: Mapping[str, Any], padded: bool = False
) -> None:
    assert set(ours) - ({"mask"} if padded else set()) == set(theirs)
    for key, value in theirs.items():
        assert_same_value(tf, ours[key], value, key)


def _as_array(value: Any) -> np.ndarray[Any, Any]:
    if isinstance(value, VarLenList):
        nested = list(value)
        out = np.empty(np.shape(nested) if nested else (0,), dtype=object)
        out[...] = nested if nested else out
        return out
    return np.asarray(value)


def _assert_sample(
    tf: ModuleType,
    ours: Mapping[str, Any],
    record: bytes,
    context: Mapping[str, Any],
    sequence: Mapping[str, Any],
) -> None:
    """``ours`` is ``parse_single_sequence_example``'s output in the sample's form."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx, lists = tf.io.parse_single_sequence_example(
            tf.constant(record), tf_specs(tf, context) or None, tf_specs(tf, sequence) or None
        )
    dense = [k for k, s in sequence.items() if isinstance(s, tfe.FixedLenSequenceFeature)]
    assert list(ours) == [*context, *sequence, *(f"{k}_lengths" for k in dense)]
    for key, value in ctx.items():
        mine = ours[key]
        if isinstance(value, tf.SparseTensor):  # a context VarLenFeature: its values
            assert isinstance(mine, (VarLenArray, VarLenList)), key
            assert_same_value(tf, _as_array(mine), value.values, key)
        elif isinstance(mine, (VarLenArray, VarLenList)):  # a flat RaggedFeature
            assert_same_value(tf, _as_array(mine), value, key)
        elif isinstance(mine, (bytes, list)):  # strings of a FixedLenFeature
            assert_array_same(
                np.asarray(mine, dtype=object), np.asarray(value.numpy(), object), key
            )
        else:
            assert_same_value(tf, np.asarray(mine), value, key)
    for key, value in lists.items():
        mine = ours[key]
        if key in dense:
            assert isinstance(mine, (VarLenArray, VarLenList)), key
            theirs = value.numpy()
            if theirs.dtype == object:
                assert list(mine) == theirs.tolist(), key
            else:
                assert_same_value(tf, np.asarray(mine), value, key)
            assert ours[f"{key}_lengths"] == value.shape[0]
            assert isinstance(ours[f"{key}_lengths"], np.int64)
        else:
            assert_same_value(tf, mine, value, key)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[bytes]]:
    records = _records(700)
    return _write(str(tmp_path_factory.mktemp("seq")), records), records


def _dataset(path: str) -> tfe.RecordDataset:
    return tfe.RecordDataset(path, context_features=CONTEXT, sequence_features=SEQUENCE)


def test_random_access_matches_tensorflow(tf: ModuleType, mixed: tuple[str, list[bytes]]) -> None:
    path, records = mixed
    with _dataset(path) as ds:
        for i in [0, 1, 5, 17, 699, -3]:
            _assert_sample(tf, ds[i], records[i], CONTEXT, SEQUENCE)
        order = [9, 3, 650, 3, 0, 41]
        _assert_batch(tf, ds[order], _tf_batch(tf, [records[i] for i in order], CONTEXT, SEQUENCE))
        _assert_batch(tf, ds[100:400], _tf_batch(tf, records[100:400], CONTEXT, SEQUENCE))
        # __getitems__: one sample per record, cut from one batch decode.
        many = list(range(0, 700, 3))
        for i, sample in zip(many, ds.__getitems__(many), strict=True):
            _assert_sample(tf, sample, records[i], CONTEXT, SEQUENCE)
        assert ds.decoder.stats.exact_batches == 0


@pytest.mark.parametrize(("shuffle", "workers"), [(False, 0), (True, 0), (False, 2), (True, 2)])
def test_batches_match_tensorflow(
    tf: ModuleType, mixed: tuple[str, list[bytes]], shuffle: bool, workers: int
) -> None:
    path, records = mixed
    with _dataset(path) as ds:
        order = IndexBatchIterator(len(records), 64, shuffle=shuffle, seed=7, epoch=3)
        got = ds.batches(64, shuffle=shuffle, seed=7, epoch=3, workers=workers)
        count = 0
        for want, batch in zip(order, got, strict=True):
            picked = [records[i] for i in want.indices.tolist()]
            _assert_batch(tf, batch, _tf_batch(tf, picked, CONTEXT, SEQUENCE))
            count += 1
        assert count == 11


def test_padded_remainder_and_resume_match_tensorflow(
    tf: ModuleType, mixed: tuple[str, list[bytes]]
) -> None:
    path, records = mixed
    with _dataset(path) as ds:
        it = ds.batches(128, shuffle=True, seed=1, epoch=0, pad_remainder=True)
        first = next(it)
        state = it.get_state()
        rest = list(it)
        resumed = list(ds.batches(128, shuffle=True, seed=1, state=state, pad_remainder=True))
        order = list(
            IndexBatchIterator(len(records), 128, shuffle=True, seed=1, pad_remainder=True)
        )
        for want, batch in zip(order, [first, *rest], strict=True):
            picked = [records[i] for i in want.indices.tolist()]
            _assert_batch(tf, batch, _tf_batch(tf, picked, CONTEXT, SEQUENCE), padded=True)
            assert want.mask is not None
            assert batch["mask"].tolist() == want.mask.tolist()
        assert len(resumed) == len(rest)
        for a, b in zip(resumed, rest, strict=True):
            assert a["id"].tolist() == b["id"].tolist()
            assert a["tokens"].tolist() == b["tokens"].tolist()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequence_batches(max_batch=12, max_steps=20))
def test_drawn_datasets_match_tensorflow(tf: ModuleType, case: SequenceBatch) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, case.records)
        ds = tfe.RecordDataset(
            path,
            context_features=case.context_features or None,
            sequence_features=case.sequence_features,
        )
        with ds:
            n = len(case.records)
            for i in range(n):
                _assert_sample(
                    tf, ds[i], case.records[i], case.context_features, case.sequence_features
                )
            for i, sample in enumerate(ds.__getitems__(list(range(n)))):
                _assert_sample(
                    tf, sample, case.records[i], case.context_features, case.sequence_features
                )
            want = _tf_batch(tf, case.records, case.context_features, case.sequence_features)
            _assert_batch(tf, ds[list(range(n))], want)
            for k, batch in enumerate(ds.batches(5)):
                picked = case.records[5 * k : 5 * k + 5]
                _assert_batch(
                    tf,
                    batch,
                    _tf_batch(tf, picked, case.context_features, case.sequence_features),
                )


def test_torch_dataloader_default_collate(tf: ModuleType, mixed: tuple[str, list[bytes]]) -> None:
    torch = pytest.importorskip("torch")
    path, records = mixed
    loader = torch.utils.data.DataLoader(_dataset(path), batch_size=50, shuffle=False)
    for k, batch in enumerate(loader):
        want = _tf_batch(tf, records[50 * k : 50 * k + 50], CONTEXT, SEQUENCE)
        assert list(batch) == [
            *CONTEXT,
            *SEQUENCE,
            "tokens_lengths",
            "frames_lengths",
            "words_lengths",
        ]
        assert batch["id"].tolist() == want["id"].numpy().tolist()
        np.testing.assert_array_equal(batch["label"].numpy(), want["label"].numpy())
        for key in ("tokens", "frames"):
            padded = batch[key]
            np.testing.assert_array_equal(padded.values.numpy(), want[key].numpy())
            assert padded.lengths.tolist() == want[f"{key}_lengths"].numpy().tolist()
            assert batch[f"{key}_lengths"].tolist() == want[f"{key}_lengths"].numpy().tolist()
        # Sequence VarLen and ragged values: padded to the batch's longest, as TF's dense.
        emb = batch["emb"]
        np.testing.assert_array_equal(emb.values.numpy(), tf.sparse.to_dense(want["emb"]).numpy())
        spans = batch["spans"]
        np.testing.assert_array_equal(spans.values.numpy(), want["spans"].to_tensor().numpy())
        assert batch["words"] == [
            row[:n]
            for row, n in zip(
                want["words"].numpy().tolist(), want["words_lengths"].numpy().tolist(), strict=True
            )
        ]


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_bridge_matches_tensorflows_own_pipeline(
    tf: ModuleType, mixed: tuple[str, list[bytes]], drop_remainder: bool
) -> None:
    from tfrecord_bridge import to_tf_dataset

    path, _ = mixed
    context, sequence = tf_specs(tf, CONTEXT), tf_specs(tf, SEQUENCE)

    def parse(serialized: Any) -> dict[str, Any]:
        ctx, lists, lengths = tf.io.parse_sequence_example(serialized, context, sequence)
        return {**ctx, **lists, **{f"{k}_lengths": v for k, v in lengths.items()}}

    theirs = tf.data.TFRecordDataset(path).batch(64, drop_remainder=drop_remainder).map(parse)
    ours = to_tf_dataset(_dataset(path), 64, drop_remainder=drop_remainder)
    assert ours.element_spec == theirs.element_spec
    count = 0
    for mine, want in zip(ours, theirs, strict=True):
        assert set(mine) == set(want)
        for key, value in want.items():
            assert_same_value(tf, _engine_value(tf, mine[key]), value, key)
        count += 1
    assert count == (700 // 64 if drop_remainder else -(-700 // 64))
    # Shuffled, with worker processes: the same records (by id) as the engine's batches.
    ds = _dataset(path)
    shuffled = to_tf_dataset(ds, 100, shuffle=True, seed=3, epoch=2, workers=2)
    engine = ds.batches(100, shuffle=True, seed=3, epoch=2)
    for mine, want in zip(shuffled, engine, strict=True):
        assert mine["id"].numpy().tolist() == want["id"].tolist()
        assert mine["tokens"].numpy().tolist() == want["tokens"].tolist()
    ds.close()


def _engine_value(tf: ModuleType, value: Any) -> Any:
    """A TF value of the bridge as the engine's numpy form (to compare with TF's own)."""
    if isinstance(value, tf.SparseTensor):
        return tfe.SparseValue(
            value.indices.numpy(), _engine_value(tf, value.values), value.dense_shape.numpy()
        )
    if isinstance(value, tf.RaggedTensor):
        return tfe.RaggedValue(_engine_value(tf, value.values), value.row_splits.numpy())
    array = value.numpy()
    return array.astype(object) if value.dtype == tf.string else array


def test_a_context_list_past_its_feature_is_refused_as_tensorflow_refuses_it(
    tf: ModuleType, tmp_path: Path
) -> None:
    """An Int64List whose length runs past its Feature: TensorFlow's Example parser reads
    it as empty, its SequenceExample parser refuses the record. ``ds[i]`` (the per-record
    path) and ``ds[list]`` refuse it too."""
    context = {"label": tfe.FixedLenFeature([], "int64"), "score": tfe.VarLenFeature("int64")}
    lists = {"frames": tfe.FixedLenSequenceFeature([], "int64")}
    features = b"\n\x0b\n\x05score\x12\x02\x1a\x01\n\x0e\n\x05label\x12\x05\x1a\x03\n\x01\x00"
    record = b"\n\x1d" + features + b"\x12\x0c\n\n\n\x06frames\x12\x00"
    tf_context = {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "score": tf.io.VarLenFeature(tf.int64),
    }
    assert tf.io.parse_single_example(b"\n\x1d" + features, tf_context)["score"].values.shape == (
        0,
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="Context feature: score"):
        tf.io.parse_single_sequence_example(
            record,
            context_features=tf_context,
            sequence_features={"frames": tf.io.FixedLenSequenceFeature([], tf.int64)},
        )
    path = str(tmp_path / "s.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write(record)
    with tfe.RecordDataset(path, context_features=context, sequence_features=lists) as ds:
        for key in (0, [0]):
            with pytest.raises(tfe.MalformedExampleError, match="Context feature: score"):
                ds[key]
