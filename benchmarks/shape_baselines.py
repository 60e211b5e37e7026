"""The anchors of the shape matrix that are not TensorFlow pipelines, and spec conversions.

- :class:`ProtobufDataset`: the per-record map-style dataset a PyTorch user writes by
  hand: each record's bytes (read by a raw ``tfe.RecordDataset``, our fast reader, so the
  anchor's reading costs no more than ours), parsed with protobuf's ``FromString`` of
  the TensorFlow-free message classes of :mod:`tfrecord_engine.example.protos` (the same
  ``upb`` runtime as TensorFlow's ``tf.train.Example.FromString``), and numpy per
  feature. It imports neither torch nor TensorFlow (the ``DataLoader`` takes any object
  with ``__len__`` and ``__getitem__``).
- :func:`padding_collate`: PyTorch's ``default_collate`` where the batch's values share
  one shape; variable-length arrays padded to the longest (values, lengths), lists of
  ``bytes`` kept as lists (``default_collate`` alone refuses both).
- :func:`tf_specs`: a shape's spec as ``tf.io`` specs (``RawFeature`` becomes a string
  feature, then ``tf.io.decode_raw`` in :func:`tf_parse`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.shapes import Shape

Convert = Callable[[Any], Any]
_NP = {"int64": np.int64, "float32": np.float32}
_LIST = {"int64": "int64_list", "float32": "float_list", "string": "bytes_list"}


def _converter(spec: Any) -> Convert:
    """numpy from one protobuf ``Feature``, as the spec's kind asks."""
    if isinstance(spec, tfe.RawFeature):
        dtype = np.dtype(spec.dtype)
        return lambda f: np.frombuffer(f.bytes_list.value[0], dtype)
    field = _LIST[spec.dtype]
    if spec.dtype == "string":
        if isinstance(spec, tfe.FixedLenFeature) and not spec.shape:
            return lambda f: f.bytes_list.value[0]
        return lambda f: list(f.bytes_list.value)
    kind = _NP[spec.dtype]
    if isinstance(spec, tfe.FixedLenFeature) and not spec.shape:
        return lambda f: kind(getattr(f, field).value[0])
    return lambda f: np.asarray(getattr(f, field).value, kind)


def _partition_key(partition: Any) -> str:
    key = getattr(partition, "key", None)
    if not isinstance(key, str):
        raise TypeError(f"{partition!r}: only partitions read from a feature are benchmarked")
    return key


def _example_fields(features: Mapping[str, Any]) -> dict[str, Convert]:
    fields: dict[str, Convert] = {}
    for key, spec in features.items():
        if isinstance(spec, tfe.RaggedFeature):
            fields[spec.value_key or key] = _converter(spec)
            for p in spec.partitions:  # the row lengths as one more int64 array
                fields[_partition_key(p)] = _converter(tfe.VarLenFeature("int64"))
        else:
            fields[key] = _converter(spec)
    return fields


class ProtobufDataset:
    """Map-style, one record at a time: raw bytes -> protobuf ``FromString`` -> numpy."""

    def __init__(self, paths: list[str], shape: Shape) -> None:
        from tfrecord_engine.example import protos

        self.raw = tfe.RecordDataset(paths)
        self.sequence = shape.is_sequence
        self.from_string = (protos.SequenceExample if self.sequence else protos.Example).FromString
        self.fields = _example_fields(shape.features)
        self.lists = list(shape.sequence_features or {})

    def __len__(self) -> int:
        return len(self.raw)

    def __getitem__(self, i: int) -> dict[str, Any]:
        msg = self.from_string(self.raw[i])
        feature = (msg.context if self.sequence else msg.features).feature
        out = {key: convert(feature[key]) for key, convert in self.fields.items()}
        for key in self.lists:  # FixedLenSequenceFeature float32 rows
            steps = msg.feature_lists.feature_list[key].feature
            out[key] = np.asarray([s.float_list.value for s in steps], np.float32)
        return out


def padding_collate(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """``default_collate`` per key, variable-length arrays padded, ``bytes`` lists kept."""
    import torch
    from torch.utils.data import default_collate

    out: dict[str, Any] = {}
    for key, first in samples[0].items():
        values = [s[key] for s in samples]
        if isinstance(first, list):
            out[key] = values
        elif isinstance(first, np.ndarray) and any(v.shape != first.shape for v in values):
            lengths = np.array([len(v) for v in values], np.int64)
            padded = np.zeros((len(values), int(lengths.max()), *first.shape[1:]), first.dtype)
            for row, v in zip(padded, values, strict=True):
                row[: len(v)] = v
            out[key] = (torch.from_numpy(padded), torch.from_numpy(lengths))
        else:
            out[key] = default_collate(values)
    return out


def tf_specs(features: Mapping[str, Any]) -> dict[str, Any]:
    """``tf.io`` specs for ours (a ``RawFeature`` becomes ``FixedLenFeature([], string)``)."""
    import tensorflow as tf

    dtypes = {"int64": tf.int64, "float32": tf.float32, "string": tf.string}
    out: dict[str, Any] = {}
    for key, spec in features.items():
        if isinstance(spec, tfe.RawFeature):
            out[key] = tf.io.FixedLenFeature([], tf.string)
        elif isinstance(spec, tfe.FixedLenFeature):
            out[key] = tf.io.FixedLenFeature(list(spec.shape), dtypes[spec.dtype])
        elif isinstance(spec, tfe.VarLenFeature):
            out[key] = tf.io.VarLenFeature(dtypes[spec.dtype])
        elif isinstance(spec, tfe.FixedLenSequenceFeature):
            out[key] = tf.io.FixedLenSequenceFeature(list(spec.shape), dtypes[spec.dtype])
        elif isinstance(spec, tfe.RaggedFeature):
            parts = [
                getattr(tf.io.RaggedFeature, type(p).__name__)(_partition_key(p))
                for p in spec.partitions
            ]
            out[key] = tf.io.RaggedFeature(
                dtypes[spec.dtype],
                value_key=spec.value_key,
                partitions=parts,
                row_splits_dtype=getattr(tf, spec.row_splits_dtype),
            )
        else:
            raise TypeError(f"{key}: no tf.io spec for {spec!r} in this benchmark")
    return out


def tf_parse(shape: Shape) -> Callable[[Any], Any]:
    """TensorFlow's batch parse of ``shape``: ``parse_example`` (+ ``decode_raw`` for each
    RawFeature) or ``parse_sequence_example``."""
    import tensorflow as tf

    features = tf_specs(shape.features)
    if shape.sequence_features is not None:
        sequence = tf_specs(shape.sequence_features)
        return lambda b: tf.io.parse_sequence_example(b, features, sequence)
    raw = {k: v for k, v in shape.features.items() if isinstance(v, tfe.RawFeature)}

    def parse(serialized: Any) -> Any:
        out = tf.io.parse_example(serialized, features)
        for key, spec in raw.items():
            values = tf.io.decode_raw(out[key], getattr(tf, spec.dtype))
            out[key] = tf.reshape(values, [-1, *spec.shape])
        return out

    return parse
