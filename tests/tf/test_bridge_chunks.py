"""How the bridge hands batches to TensorFlow: chunks sized by the records' bytes, and
arrays placed where TensorFlow takes them without a copy."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.tf.bridge_helpers import assert_same_batch, native, write_file
from tfrecord_bridge import dataset as bridge_dataset
from tfrecord_bridge import to_tf_dataset
from tfrecord_bridge.layout import TF_ALIGN, Layout
from tfrecord_bridge.specs import element_spec
from tfrecord_engine.data.dataset import DEFAULT_CHUNK_RECORDS

FEATURES = {
    "blob": tfe.FixedLenFeature([], "string"),
    "ids": tfe.VarLenFeature("int64"),
    "x": tfe.FixedLenFeature([3], "float32"),
}


def _records(n: int, blob: int) -> list[bytes]:
    return [
        tfe.encode_example(
            {"blob": b"b" * blob, "ids": np.arange(i % 7, dtype=np.int64), "x": [i, 0.5, -i]}
        )
        for i in range(n)
    ]


def _dataset(tmp_path: pathlib.Path, n: int, blob: int, name: str = "d") -> tfe.RecordDataset:
    return tfe.RecordDataset(
        write_file(str(tmp_path), _records(n, blob), f"{name}.tfrecord"), features=FEATURES
    )


def test_small_records_travel_about_4096_to_a_call(tmp_path: pathlib.Path) -> None:
    ds = _dataset(tmp_path, 50, 10)
    assert bridge_dataset.default_chunk_batches(ds, 256) == DEFAULT_CHUNK_RECORDS // 256
    assert bridge_dataset.default_chunk_batches(ds, 10_000) == 1  # never less than a batch


def test_large_records_travel_at_most_chunk_call_bytes_to_a_call(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _dataset(tmp_path, 40, 20_000)
    mean = ds.indexes[0].data_size / 40
    per_call = bridge_dataset.default_chunk_batches(ds, 64)
    # 8 MB of 20 KB records: six batches of 64, where the count alone would give 64.
    assert per_call == int(bridge_dataset.CHUNK_CALL_BYTES // (mean * 64)) == 6
    mix = tfe.sample_from_datasets([ds, _dataset(tmp_path, 40, 10, "small")], seed=1)
    both = ds.indexes[0].data_size + mix.leaves[1].indexes[0].data_size
    assert bridge_dataset.default_chunk_batches(mix, 64) == int((8 << 20) // (both / 80 * 64))
    # The limit is read when the bridge is built (the next test lowers it).
    monkeypatch.setattr(bridge_dataset, "CHUNK_CALL_BYTES", 2 * 4 * mean)
    assert bridge_dataset.default_chunk_batches(ds, 4) == 2


def test_batches_of_large_strings_cross_one_per_call(tmp_path: pathlib.Path) -> None:
    ds = _dataset(tmp_path, 40, 20_000)
    mean = ds.indexes[0].data_size / 40
    at_least = int(-(-bridge_dataset.SINGLE_BATCH_BYTES // mean))  # batch of 1.25 MiB
    assert bridge_dataset.default_chunk_batches(ds, at_least) == 1
    assert bridge_dataset.default_chunk_batches(ds, 256) == 1
    assert bridge_dataset.default_chunk_batches(ds, at_least - 1) > 1
    # Without a string kept, the same records travel in chunks of up to 8 MB.
    numbers = ds._copy(features={k: v for k, v in FEATURES.items() if k != "blob"})
    assert bridge_dataset.default_chunk_batches(numbers, at_least) > 1
    mix = tfe.sample_from_datasets([ds, _dataset(tmp_path, 40, 20_000, "other")], seed=1)
    assert bridge_dataset.default_chunk_batches(mix, 256) == 1


def test_chunks_by_bytes_give_the_native_batches(
    tf: ModuleType, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _dataset(tmp_path, 30, 3_000)
    monkeypatch.setattr(bridge_dataset, "CHUNK_CALL_BYTES", 3 * 4 * 3_000)
    calls: list[int] = []
    chunk_pipeline = bridge_dataset._chunk_pipeline

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(int(kwargs["num_chunks"]))  # type: ignore[call-overload]
        return chunk_pipeline(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bridge_dataset, "_chunk_pipeline", counted)
    ours = list(to_tf_dataset(ds, 4))
    # 8 batches (7 full, 1 of 2) in chunks of at most 2 full ones: 4 + the partial one.
    assert calls == [5]
    theirs = list(native(tf, ds.paths[0], FEATURES, 4))
    assert len(ours) == len(theirs) == 8
    for a, b in zip(ours, theirs, strict=True):
        assert_same_batch(tf, a, b)


def test_packed_arrays_sit_where_tensorflow_shares_them(
    tf: ModuleType, tmp_path: pathlib.Path
) -> None:
    ds = _dataset(tmp_path, 64, 5)
    layout = Layout(tf, element_spec(tf, FEATURES, None))
    # Dense values copied out of the engine's chunk: they are stacked, not viewed.
    batches: list[Mapping[str, Any]] = [{**b, "x": b["x"].copy()} for b in ds.batches(8)]
    # ids (sparse first, as TensorFlow orders them): indices, values and dense_shape,
    # each with its row splits; then blob and x.
    indices, _, values, _, _, _, blob, x = layout.pack(batches)
    assert blob.dtype == object  # strings: TensorFlow copies them wherever they are
    for made in (indices, values, x):
        assert made.ctypes.data % TF_ALIGN == 0
    np.testing.assert_array_equal(x, np.stack([b["x"] for b in batches]))
    np.testing.assert_array_equal(values, np.concatenate([b["ids"].values for b in batches]))
    np.testing.assert_array_equal(indices, np.concatenate([b["ids"].indices for b in batches]))


def test_the_default_readahead_follows_the_spec(
    tf: ModuleType, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read-ahead thread pays where lists of numbers decode without the GIL beside
    # TensorFlow; strings and scalars alone (images, MNIST), records dominated by
    # strings, and decode workers get none.
    from tfrecord_bridge.source import EpochBatches

    def write(name: str, records: list[bytes]) -> str:
        path = tmp_path / name
        with tfe.TFRecordWriter(str(path), index=True) as w:
            w.write_many(records)
        return str(path)

    def example(i: int, image: int) -> bytes:
        return tfe.encode_example(
            {"img": [b"x" * image], "label": [i], "ids": np.arange(i % 9, dtype=np.int64)}
        )

    small = write("small.tfrecord", [example(i, 100) for i in range(30)])
    large = write("large.tfrecord", [example(i, 9000) for i in range(30)])
    scalars = {"img": tfe.FixedLenFeature([], "string"), "label": tfe.FixedLenFeature([], "int64")}
    lists = {**scalars, "ids": tfe.VarLenFeature("int64")}
    numbers = {"label": scalars["label"], "ids": lists["ids"]}
    cases = [
        (tfe.RecordDataset(small, features=lists), 0, bridge_dataset.AUTO_READAHEAD),
        (tfe.RecordDataset(small, features=numbers), 0, bridge_dataset.AUTO_READAHEAD),
        (tfe.RecordDataset(small, features=scalars), 0, 0),
        (tfe.RecordDataset(large, features=lists), 0, 0),  # (strings dominate)
        (tfe.RecordDataset(large, features=numbers), 0, bridge_dataset.AUTO_READAHEAD),
        (tfe.RecordDataset(small, features=lists), 1, 0),
    ]
    for ds, workers, want in cases:
        assert bridge_dataset.default_readahead(ds, workers) == want, (ds.features, workers)
    mix = tfe.sample_from_datasets([cases[0][0], tfe.RecordDataset(small, features=lists)], seed=0)
    assert bridge_dataset.default_readahead(mix) == bridge_dataset.AUTO_READAHEAD

    seen: list[int] = []
    real = EpochBatches.__init__

    def spy(self: EpochBatches, *args: Any, **kwargs: Any) -> None:
        seen.append(kwargs["readahead"])
        real(self, *args, **kwargs)

    monkeypatch.setattr(EpochBatches, "__init__", spy)
    ds = tfe.RecordDataset(small, features=lists)
    for readahead in (None, 0, 1):
        got = to_tf_dataset(ds, 4, readahead=readahead)
        assert sum(int(b["label"].shape[0]) for b in got) == 30
    assert seen == [bridge_dataset.AUTO_READAHEAD, 0, 1]
