"""to_tf_dataset vs TensorFlow's own pipeline: values, order, element spec, sharding, device."""

from __future__ import annotations

import itertools
import tempfile
from collections import Counter
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.tf.bridge_helpers import assert_same_batch, epoch_indices, native, write_file
from tfrecord_bridge import to_tf_dataset
from tfrecord_engine.data.procpool import DecodePool
from tfrecord_engine.testing.bridge import BridgeCase, bridge_cases, layouts

# Each example builds two tf.data pipelines (~0.1 s): fewer examples than the profile.
TF_EXAMPLES = 20


@settings(max_examples=TF_EXAMPLES)
@given(bridge_cases(), st.integers(1, 8), st.booleans(), st.sampled_from([None, 1, 3]))
def test_same_values_and_order_as_native(
    tf: ModuleType, case: BridgeCase, batch_size: int, drop_remainder: bool, chunk: int | None
) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = write_file(d, case.records)
        ds = tfe.RecordDataset(path, features=case.features)
        ours = to_tf_dataset(ds, batch_size, drop_remainder=drop_remainder, chunk_batches=chunk)
        theirs = native(tf, path, case.features, batch_size, drop_remainder)
        assert ours.element_spec == theirs.element_spec
        ours_batches, their_batches = list(ours), list(theirs)
        assert len(ours_batches) == len(their_batches) == int(ours.cardinality())
        for a, b in zip(ours_batches, their_batches, strict=True):
            assert_same_batch(tf, a, b)
        ds.close()


def test_element_spec_is_static(tf: ModuleType, tmp_path: Any) -> None:
    features = {
        "index": tfe.FixedLenFeature([], "int64"),
        "x": tfe.FixedLenFeature([3], "float32"),
        "v": tfe.VarLenFeature("string"),
        "r": tfe.RaggedFeature("int64", row_splits_dtype="int64"),
    }
    records = [
        tfe.encode_example(
            {"index": [i], "x": np.ones(3, np.float32), "v": [b"a"], "r": np.arange(i)}
        )
        for i in range(1, 6)
    ]
    ds = tfe.RecordDataset(write_file(str(tmp_path), records), features=features)
    spec = to_tf_dataset(ds, 2, drop_remainder=True).element_spec
    assert spec["x"] == tf.TensorSpec([2, 3], tf.float32)
    assert spec["index"] == tf.TensorSpec([2], tf.int64)
    assert isinstance(spec["v"], tf.SparseTensorSpec)
    assert spec["v"].dtype == tf.string
    assert spec["r"] == tf.RaggedTensorSpec([2, None], tf.int64, 1, tf.int64)
    padded = to_tf_dataset(ds, 2, pad_remainder=True).element_spec
    assert padded["x"].shape.as_list() == [2, 3]
    assert padded["mask"] == tf.TensorSpec([2], tf.bool)
    loose = to_tf_dataset(ds, 2).element_spec
    assert loose["x"].shape.as_list() == [None, 3]
    assert loose["r"] == tf.RaggedTensorSpec([None, None], tf.int64, 1, tf.int64)
    # The element spec is what the batches really are.
    for batch in to_tf_dataset(ds, 2, pad_remainder=True):
        assert tf.type_spec_from_value(batch["r"]).is_compatible_with(padded["r"])
        assert batch["x"].shape == (2, 3)


def test_dense_features_match_native_across_many_batches_per_chunk(
    tf: ModuleType, tmp_path: Any
) -> None:
    # All-dense specs take the short path: chunks of the engine's own arrays (no copy
    # when its batches are views of one array) and no rebuild step after unbatch.
    features = {
        "index": tfe.FixedLenFeature([], "int64"),
        "x": tfe.FixedLenFeature([2, 3], "float32"),
        "s": tfe.FixedLenFeature([], "string"),
    }
    records = [
        tfe.encode_example(
            {"index": [i], "x": np.arange(6, dtype=np.float32) * i, "s": [b"r%d" % i]}
        )
        for i in range(300)
    ]
    path = write_file(str(tmp_path), records)
    ds = tfe.RecordDataset(path, features=features)
    for batch_size, chunk, drop in [(7, None, False), (16, 4, True), (300, None, False)]:
        ours = to_tf_dataset(ds, batch_size, drop_remainder=drop, chunk_batches=chunk)
        theirs = native(tf, path, features, batch_size, drop)
        assert ours.element_spec == theirs.element_spec
        ours_batches, their_batches = list(ours), list(theirs)
        assert len(ours_batches) == len(their_batches) == int(ours.cardinality())
        for a, b in zip(ours_batches, their_batches, strict=True):
            assert_same_batch(tf, a, b)
    # The bridge turns tf.data's autotuning model off (it costs every iteration a wait),
    # and the default graph rewrites (redone at every new iterator, for nothing here).
    assert ours.options().autotune.enabled is False
    assert ours.options().experimental_optimization.apply_default_optimizations is False


def _index_file(tmp: str, n: int) -> tfe.RecordDataset:
    records = [tfe.encode_example({"index": [i]}) for i in range(n)]
    return tfe.RecordDataset(
        write_file(tmp, records), features={"index": tfe.FixedLenFeature([], "int64")}
    )


@settings(max_examples=TF_EXAMPLES)
@given(st.integers(0, 40), layouts())
def test_exactly_once_over_input_pipelines(tf: ModuleType, n: int, layout: dict[str, Any]) -> None:
    count = layout["num_pipelines"]
    replicas = count * layout["replicas_per_pipeline"]
    with tempfile.TemporaryDirectory() as d:
        ds = _index_file(d, n)
        per_pipeline = []
        for i in range(count):
            ctx = tf.distribute.InputContext(
                num_input_pipelines=count, input_pipeline_id=i, num_replicas_in_sync=replicas
            )
            tf_ds = to_tf_dataset(
                ds,
                layout["batch_size"],
                shuffle=layout["shuffle"],
                seed=layout["seed"],
                drop_remainder=layout["drop_remainder"],
                pad_remainder=layout["pad_remainder"],
                input_context=ctx,
            )
            batches = epoch_indices(tf_ds)
            assert len(batches) == int(tf_ds.cardinality())
            per_pipeline.append(batches)
        sizes = [sum(len(b) for b in p) for p in per_pipeline]
        seen = Counter(i for p in per_pipeline for b in p for i in b)
        if layout["drop_remainder"]:
            assert all(v == 1 for v in seen.values())
            assert all(s % layout["batch_size"] == 0 for s in sizes)
        else:
            assert seen == Counter(range(n)), "every record in exactly one pipeline"
            assert max(sizes) - min(sizes) <= 1, "pipeline sizes within one record"
        if layout["pad_remainder"]:
            counts = {len(p) for p in per_pipeline}
            assert len(counts) == 1, "same batch count everywhere"
            assert counts.pop() % layout["replicas_per_pipeline"] == 0, "a batch per replica"
        ds.close()


def test_iterations_are_the_engine_epochs(tf: ModuleType, tmp_path: Any) -> None:
    ds = _index_file(str(tmp_path), 50)
    tf_ds = to_tf_dataset(ds, 8, shuffle=True, seed=3)
    first, second = epoch_indices(tf_ds), epoch_indices(tf_ds)
    for epoch, got in enumerate([first, second]):
        want = [b["index"].tolist() for b in ds.batches(8, shuffle=True, seed=3, epoch=epoch)]
        assert got == want
    assert first != second
    # Seeded and reproducible: a new dataset replays the same sequence of epochs.
    again = to_tf_dataset(ds, 8, shuffle=True, seed=3)
    assert [epoch_indices(again), epoch_indices(again)] == [first, second]
    assert epoch_indices(to_tf_dataset(ds, 8, shuffle=True, seed=3, epoch=1)) == second
    assert epoch_indices(to_tf_dataset(ds, 8, shuffle=True, seed=4)) != first


@pytest.mark.parametrize("parallel", [1, 4])
def test_device_path_on_cpu(tf: ModuleType, tmp_path: Any, parallel: int) -> None:
    ds = _index_file(str(tmp_path), 37)
    plain = epoch_indices(to_tf_dataset(ds, 5, shuffle=True))
    on_device = to_tf_dataset(ds, 5, shuffle=True, device="/CPU:0", num_parallel_calls=parallel)
    batches = list(on_device)
    assert all("CPU:0" in b["index"].device for b in batches)
    assert epoch_indices(batches) == plain


def test_device_path_cannot_be_checkpointed(tf: ModuleType, tmp_path: Any) -> None:
    # TensorFlow's prefetch_to_device is built on a GeneratorDataset (documented limit).
    it = iter(to_tf_dataset(_index_file(str(tmp_path), 9), 4, device="/CPU:0"))
    next(it)
    with pytest.raises(tf.errors.UnimplementedError, match="does not support checkpointing"):
        tf.train.Checkpoint(iterator=it).save(str(tmp_path / "ckpt"))


def test_rejects_raw_datasets_and_bad_arguments(tmp_path: Any) -> None:
    path = write_file(str(tmp_path), [b"raw"])
    with pytest.raises(tfe.InvalidArgumentError, match="features="):
        to_tf_dataset(tfe.RecordDataset(path), 2)
    (tmp_path / "ok").mkdir()
    ds = _index_file(str(tmp_path / "ok"), 3)
    with pytest.raises(tfe.InvalidArgumentError, match="batch_size"):
        to_tf_dataset(ds, 0)
    with pytest.raises(tfe.InvalidArgumentError, match="exclude"):
        to_tf_dataset(ds, 2, drop_remainder=True, pad_remainder=True)
    with pytest.raises(tfe.InvalidArgumentError, match="num_parallel_calls"):
        to_tf_dataset(ds, 2, num_parallel_calls=0)
    with pytest.raises(tfe.InvalidArgumentError, match="chunk_batches"):
        to_tf_dataset(ds, 2, chunk_batches=0)


def test_damage_surfaces_as_a_tensorflow_error(tf: ModuleType, tmp_path: Any) -> None:
    ds = _index_file(str(tmp_path), 20)
    path = ds.paths[0]
    ds.close()
    with open(path, "r+b") as f:  # flip a payload byte of a late record
        data = bytearray(f.read())
        data[-10] ^= 0xFF
        f.seek(0)
        f.write(data)
    ds = tfe.RecordDataset(path, features=ds.features)
    # One batch per call: the error surfaces at the batch that holds the bad record.
    it = iter(to_tf_dataset(ds, 4, chunk_batches=1))
    head = [next(it)["index"].numpy().tolist() for _ in range(4)]
    assert head == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    with pytest.raises(tf.errors.OpError, match=r"CorruptedRecordError: .*record 19"):
        next(it)
    # Chunked: the chunk that holds it fails as a whole (nothing is skipped silently).
    with pytest.raises(tf.errors.OpError, match=r"CorruptedRecordError: .*record 19"):
        list(to_tf_dataset(ds, 4))


@pytest.mark.parametrize("shuffle", [False, True])
def test_decode_workers_give_the_same_batches(
    tf: ModuleType, tmp_path: Any, shuffle: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _index_file(str(tmp_path), 300)
    started: list[int] = []
    start_pool = DecodePool.__init__

    def counting(pool: DecodePool, *args: Any, **kwargs: Any) -> None:
        start_pool(pool, *args, **kwargs)
        started.append(pool.workers)

    monkeypatch.setattr(DecodePool, "__init__", counting)
    try:
        one = epoch_indices(to_tf_dataset(ds, 16, shuffle=shuffle, seed=3, chunk_batches=4))
        got = epoch_indices(
            to_tf_dataset(ds, 16, shuffle=shuffle, seed=3, chunk_batches=4, workers=2)
        )
        assert got == one
        assert sorted(i for b in got for i in b) == list(range(300))
        assert started == [2]  # the epoch was decoded by one pool of workers
    finally:
        ds.close()


def test_zero_size_dense_features(tf: ModuleType, tmp_path: Any) -> None:
    # TensorFlow 2.21's Dataset.unbatch() kills the process (SIGSEGV) on a tensor with a
    # zero inner dimension; the bridge rebuilds such outputs after unbatch instead.
    features = {
        "i": tfe.FixedLenFeature([], "int64"),
        "e": tfe.FixedLenFeature([0], "int64"),
        "s": tfe.FixedLenFeature([2, 0], "string"),
    }
    records = [
        tfe.encode_example({"i": [k], "e": np.zeros(0, np.int64), "s": np.zeros(0, object)})
        for k in range(11)
    ]
    path = write_file(str(tmp_path), records)
    ds = tfe.RecordDataset(path, features=features)
    for pad, chunk in itertools.product((False, True), (None, 1)):
        got = list(to_tf_dataset(ds, 4, pad_remainder=pad, chunk_batches=chunk))
        want = list(native(tf, path, features, 4))
        assert len(got) == len(want) == 3
        for a, b in zip(got, want, strict=True):
            n = int(b["i"].shape[0])
            assert a["i"].numpy()[:n].tolist() == b["i"].numpy().tolist()
            assert a["e"].shape[1:] == (0,)
            assert a["s"].shape[1:] == (2, 0)
            assert a["s"].dtype == tf.string
            assert a["e"].shape[0] == a["i"].shape[0]


def _dataset_ops(tf: ModuleType, pipe: Any) -> set[str]:
    """The op names in ``pipe``'s dataset graph."""
    graph_def = tf.compat.v1.GraphDef()
    serialized = tf.raw_ops.DatasetToGraphV2(input_dataset=pipe._variant_tensor)
    graph_def.ParseFromString(serialized.numpy())
    ops = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        ops |= {node.op for node in function.node_def}
    return ops


def test_chunks_of_one_batch_are_the_batches_without_unbatch(tf: ModuleType, tmp_path: Any) -> None:
    # unbatch copies every string of a chunk into its batch; a chunk of one batch is
    # the batch already (reshape shares the memory), strings, ragged rows and all.
    features = {
        "i": tfe.FixedLenFeature([], "int64"),
        "s": tfe.FixedLenFeature([], "string"),
        "v": tfe.VarLenFeature("float32"),
        "r": tfe.RaggedFeature("string"),
    }
    records = [
        tfe.encode_example(
            {
                "i": [k],
                "s": [b"x" * k],
                "v": np.ones(k % 3, np.float32),
                "r": np.array([b"a"] * (k % 4), object),
            }
        )
        for k in range(13)
    ]
    path = write_file(str(tmp_path), records)
    ds = tfe.RecordDataset(path, features=features)
    single = to_tf_dataset(ds, 4, chunk_batches=1)
    chunked = to_tf_dataset(ds, 4, chunk_batches=2)
    assert "UnbatchDataset" not in _dataset_ops(tf, single)
    assert "UnbatchDataset" in _dataset_ops(tf, chunked)
    assert single.element_spec == chunked.element_spec
    want = list(native(tf, path, features, 4))
    for pipe in (single, chunked):
        got = list(pipe)
        assert len(got) == len(want) == 4
        for a, b in zip(got, want, strict=True):
            assert_same_batch(tf, a, b)
