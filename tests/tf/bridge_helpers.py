"""Helpers shared by the bridge tests: files, the native pipeline, TF values as numpy."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from tests.tf.convert import tf_specs, ties_in_order
from tfrecord_engine.testing.bridge import INDEX_KEY


def write_file(directory: str, records: Sequence[bytes], name: str = "data.tfrecord") -> str:
    """Writes ``records`` with an inline index; returns the path."""
    path = os.path.join(directory, name)
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    return path


def native(
    tf: ModuleType,
    path: str,
    features: Mapping[str, Any],
    batch_size: int,
    drop_remainder: bool = False,
) -> Any:
    """TensorFlow's own pipeline: TFRecordDataset -> batch -> parse_example."""
    specs = tf_specs(tf, features)
    return (
        tf.data.TFRecordDataset(path)
        .batch(batch_size, drop_remainder=drop_remainder)
        .map(lambda b: tf.io.parse_example(b, specs))
    )


def as_numpy(tf: ModuleType, value: Any) -> Any:
    """A TF value as comparable numpy/lists: dense arrays, sparse triples, ragged lists."""
    if isinstance(value, tf.SparseTensor):
        return ("sparse", value.indices.numpy(), value.values.numpy(), value.dense_shape.numpy())
    if isinstance(value, tf.RaggedTensor):
        splits = [s.numpy() for s in value.nested_row_splits]
        return ("ragged", value.flat_values.numpy(), *splits)
    return ("dense", value.numpy())


def assert_same_batch(tf: ModuleType, ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> None:
    """Two batches hold the same keys, kinds, dtypes and values (NaN-free data)."""
    assert list(ours) == list(theirs)
    for key in theirs:
        a, b = as_numpy(tf, ours[key]), as_numpy(tf, theirs[key])
        assert a[0] == b[0], key
        assert len(a) == len(b), key
        if a[0] == "sparse":
            # Values among equal indices: TensorFlow's order is unspecified (see
            # ``ties_in_order``); the indices themselves must be the same.
            assert a[1].tolist() == b[1].tolist(), key
            a = (*a[:2], ties_in_order(a[1], a[2]), a[3])
            b = (*b[:2], ties_in_order(b[1], b[2]), b[3])
        for x, y in zip(a[1:], b[1:], strict=True):
            assert x.dtype == y.dtype, f"{key}: {x.dtype} != {y.dtype}"
            assert x.shape == y.shape, f"{key}: {x.shape} != {y.shape}"
            assert x.tolist() == y.tolist(), key


def indices_of(batch: Mapping[str, Any]) -> list[int]:
    """The ``"index"`` values of the real records of a batch (padding masked out)."""
    idx = np.asarray(batch[INDEX_KEY])
    if "mask" in batch:
        idx = idx[np.asarray(batch["mask"])]
    return [int(i) for i in idx]


def epoch_indices(batches: Iterable[Mapping[str, Any]]) -> list[list[int]]:
    """The record indices of each batch of an epoch."""
    return [indices_of({k: b[k].numpy() for k in (INDEX_KEY, "mask") if k in b}) for b in batches]
