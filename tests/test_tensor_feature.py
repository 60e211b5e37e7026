"""``tfe.TensorFeature``: a bytes feature of ``serialize_tensor`` values, parsed into
arrays on every path (parse functions, every dataset path, decode workers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.example.specs import FeatureSpec


def _write(path: Path, arrays: list[np.ndarray]) -> None:
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(
            tfe.encode_example({"id": i, "t": tfe.serialize_tensor(a)})
            for i, a in enumerate(arrays)
        )


def test_fixed_shapes_batch_into_one_array_on_every_path(tmp_path: Path) -> None:
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3) + i for i in range(300)]
    _write(tmp_path / "t.tfrecord", arrays)
    spec: dict[str, FeatureSpec] = {
        "id": tfe.FixedLenFeature([], "int64"),
        "t": tfe.TensorFeature("float32", shape=[2, 3]),
    }
    ds = tfe.RecordDataset(tmp_path / "t.tfrecord", features=spec)
    want = np.stack(arrays)
    assert np.array_equal(ds[7]["t"], arrays[7])
    assert np.array_equal(ds[[5, 1]]["t"], want[[5, 1]])
    samples = ds.__getitems__([3, 9])
    assert np.array_equal(samples[1]["t"], arrays[9])
    for workers in (0, 2):
        got = [b["t"] for b in ds.batches(64, workers=workers)]
        assert np.array_equal(np.concatenate(got), want)
    ds.close()


def test_varying_shapes_give_a_list_and_strings_work(tmp_path: Path) -> None:
    arrays = [np.arange(i, dtype=np.int64) for i in range(1, 5)]
    records = [tfe.encode_example({"t": tfe.serialize_tensor(a)}) for a in arrays]
    out = tfe.parse_example(records, {"t": tfe.TensorFeature("int64")})["t"]
    assert isinstance(out, list)
    assert [a.tolist() for a in out] == [a.tolist() for a in arrays]
    words = tfe.serialize_tensor(np.array([b"a", b"bc"], dtype=object))
    got = tfe.parse_single_example(
        tfe.encode_example({"w": words}), {"w": tfe.TensorFeature(bytes)}
    )
    assert got["w"].tolist() == [b"a", b"bc"]


def test_a_wrong_dtype_or_shape_names_the_key_and_record() -> None:
    records = [
        tfe.encode_example({"t": tfe.serialize_tensor(np.zeros(2, np.float32))}),
        tfe.encode_example({"t": tfe.serialize_tensor(np.zeros(2, np.int32))}),
    ]
    with pytest.raises(tfe.ExampleParseError, match=r"Index: 1.*Type mismatch") as exc:
        tfe.parse_example(records, {"t": tfe.TensorFeature("float32")})
    assert (exc.value.key, exc.value.index) == ("t", 1)
    with pytest.raises(tfe.ExampleParseError, match=r"shape \[2\], the spec says \[3\]"):
        tfe.parse_example(records[:1], {"t": tfe.TensorFeature("float32", shape=[3])})
    with pytest.raises(tfe.InvalidArgumentError, match="dimensions"):
        tfe.TensorFeature("float32", shape=[-1])
