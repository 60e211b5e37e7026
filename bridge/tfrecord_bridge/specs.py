"""Feature specs -> ``tf.io`` specs, and the bridge's static element spec.

The element spec of the bridge is, by construction, the element spec of TensorFlow's
own pipeline (``TFRecordDataset -> batch -> parse_example``) for the same specs: it is
read off a trace of ``tf.io.parse_example`` on a string vector of the batch size
(fixed when every batch is full, ``None`` otherwise).

A :class:`~tfrecord_engine.RawFeature` has no ``tf.io`` twin: TensorFlow's pipeline for
it parses ``FixedLenFeature([], tf.string)`` and applies ``tf.io.decode_raw`` and a
reshape (:func:`tf_decode_raw`), and its element spec is traced through both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from tfrecord_engine.example import specs as S
from tfrecord_engine.example.seqspecs import SequenceFeatures, flat_batch

__all__ = ["element_spec", "tf_decode_raw", "tf_feature_spec"]

# TensorFlow ships no complete type stubs: every TF object is ``Any`` at this boundary.
TF = Any


def _tf_dtype(tf: TF, name: str) -> Any:
    return {"int64": tf.int64, "float32": tf.float32, "string": tf.string}[name]


def _tf_partition(tf: TF, part: Any) -> Any:
    R = tf.io.RaggedFeature
    if isinstance(part, S.UniformRowLength):
        return R.UniformRowLength(part.length)
    kinds = {
        S.RowSplits: R.RowSplits,
        S.RowLengths: R.RowLengths,
        S.RowStarts: R.RowStarts,
        S.RowLimits: R.RowLimits,
        S.ValueRowIds: R.ValueRowIds,
    }
    return kinds[type(part)](part.key)


def tf_feature_spec(tf: TF, spec: Any) -> Any:
    """The ``tf.io`` feature spec with the same meaning as one of ours.

    For a :class:`~tfrecord_engine.RawFeature`: the string feature that
    :func:`tf_decode_raw` then turns into its values (the default, if any, as its bytes).

    Raises:
        InvalidArgumentError: ``spec`` is not one of the engine's feature specs.
    """
    if isinstance(spec, S.RawFeature):
        raw_default: bytes | None = None
        if spec.default_value is not None:
            raw_default = np.asarray(spec.default_value, spec.wire_dtype).tobytes()
        return tf.io.FixedLenFeature([], tf.string, default_value=raw_default)
    dt = _tf_dtype(tf, spec.dtype) if hasattr(spec, "dtype") else None
    if isinstance(spec, S.FixedLenFeature):
        default = None
        if spec.default_value is not None:
            np_dtype = {"int64": np.int64, "float32": np.float32, "string": object}[spec.dtype]
            default = np.array(spec.default_value, dtype=np_dtype).reshape(spec.shape)
        return tf.io.FixedLenFeature(list(spec.shape), dt, default_value=default)
    if isinstance(spec, S.VarLenFeature):
        return tf.io.VarLenFeature(dt)
    if isinstance(spec, S.FixedLenSequenceFeature):
        return tf.io.FixedLenSequenceFeature(
            list(spec.shape), dt, allow_missing=spec.allow_missing, default_value=spec.default_value
        )
    if isinstance(spec, S.SparseFeature):
        return tf.io.SparseFeature(
            list(spec.index_key), spec.value_key, dt, list(spec.size), spec.already_sorted
        )
    if isinstance(spec, S.RaggedFeature):
        return tf.io.RaggedFeature(
            dt,
            value_key=spec.value_key,
            partitions=[_tf_partition(tf, p) for p in spec.partitions],
            row_splits_dtype=tf.int64 if spec.row_splits_dtype == "int64" else tf.int32,
            validate=spec.validate,
        )
    raise tfe.InvalidArgumentError(f"not a tfrecord_engine feature spec: {spec!r}")


def tf_decode_raw(tf: TF, spec: S.RawFeature, strings: Any) -> Any:
    """``[batch, *shape]`` values of a RawFeature from TensorFlow's parsed strings ``[batch]``.

    ``tf.io.decode_raw`` (with the spec's byte order and ``fixed_length``) then a
    reshape; uint32, which ``decode_raw`` does not offer, is decoded as int32 and bitcast.
    """
    name = "int32" if spec.dtype == "uint32" else spec.dtype
    values = tf.io.decode_raw(
        strings,
        getattr(tf, name),
        little_endian=spec.little_endian,
        fixed_length=spec.fixed_length,
    )
    if spec.dtype == "uint32":
        values = tf.bitcast(values, tf.uint32)
    shape = tf.constant(list(spec.shape), tf.int32)
    return tf.reshape(values, tf.concat([tf.shape(strings), shape], axis=0))


def element_spec(tf: TF, features: Mapping[str, Any], batch_size: int | None) -> dict[str, Any]:
    """TensorFlow's own element spec for ``parse_example`` of batches of ``batch_size``.

    ``batch_size=None`` leaves the batch dimension unknown (a partial last batch).
    The specs of a SequenceExample dataset (a ``SequenceFeatures``) are traced through
    ``tf.io.parse_sequence_example``, its three outputs flattened as the engine's
    batches are (``"<name>_lengths"`` for the step counts).
    """
    if isinstance(features, SequenceFeatures):
        return _sequence_element_spec(tf, features, batch_size)
    tf_specs = {k: tf_feature_spec(tf, v) for k, v in features.items()}

    def parse(serialized: Any) -> dict[str, Any]:
        out = dict(tf.io.parse_example(serialized, tf_specs))
        for key, spec in features.items():
            if isinstance(spec, S.RawFeature):
                out[key] = tf_decode_raw(tf, spec, out[key])
        return out

    return _traced(tf, parse, batch_size)


def _sequence_element_spec(
    tf: TF, features: SequenceFeatures, batch_size: int | None
) -> dict[str, Any]:
    context = {k: tf_feature_spec(tf, v) for k, v in features.context.items()}
    sequence = {k: tf_feature_spec(tf, v) for k, v in features.sequence.items()}

    def parse(serialized: Any) -> dict[str, Any]:
        ctx, lists, lengths = tf.io.parse_sequence_example(
            serialized, context or None, sequence or None
        )
        ctx = dict(ctx)
        for key, spec in features.context.items():
            if isinstance(spec, S.RawFeature):
                ctx[key] = tf_decode_raw(tf, spec, ctx[key])
        return flat_batch(features, ctx, lists, lengths)

    return _traced(tf, parse, batch_size)


def _traced(tf: TF, parse: Any, batch_size: int | None) -> dict[str, Any]:
    """The type spec of every output of ``parse`` on a string vector of ``batch_size``."""

    traced = tf.function(parse, autograph=False)
    outputs = traced.get_concrete_function(tf.TensorSpec([batch_size], tf.string))
    return {k: tf.type_spec_from_value(v) for k, v in outputs.structured_outputs.items()}
