"""``parse_sequence_example`` / ``parse_single_sequence_example`` with TensorFlow's semantics.

Context features (``FixedLenFeature``, ``VarLenFeature``, ``RaggedFeature``, and the
engine's own ``RawFeature``) come out as in :func:`~tfrecord_engine.parse_example`.
Sequence features (``FixedLenSequenceFeature``, ``VarLenFeature``, ``RaggedFeature``)
gain a step dimension:

- ``FixedLenSequenceFeature`` -> ``[batch, max_steps, *shape]`` padded with 0/b"", and its
  step counts in the third dict (``lengths``);
- ``VarLenFeature`` -> :class:`SparseValue` with indices ``[N, 3]`` (record, step, pos);
- ``RaggedFeature`` -> :class:`RaggedValue` ``[batch, steps, values]``.

TensorFlow's SequenceExample parser differs from its Example parser, and so does this one:
a map entry must be key then value; an empty ``Feature`` in the context is a present
feature with no values (an error for a ``FixedLenFeature`` of non-zero size), not a
missing one; an empty ``Feature`` as a step is a step with no values.

Batches go through :class:`~.seqbatch.SequenceDecoder` (a compiled walk of the whole
batch where the kernels are loaded), single records and batches it does not take
through the exact per-record path (:mod:`.seqexact`); both give the same outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgumentError
from .names import example_name_list, named_errors
from .records import tensor_value, to_records
from .seqbatch import SequenceDecoder
from .seqexact import Result3, parse_records
from .specs import FeatureSpec, as_feature_specs

__all__ = ["parse_sequence_example", "parse_single_sequence_example"]


def parse_sequence_example(
    serialized: Any,
    context_features: Mapping[str, FeatureSpec] | None = None,
    sequence_features: Mapping[str, FeatureSpec] | None = None,
    example_names: Any = None,
    name: object = None,
) -> Result3:
    """Parses a batch of serialized SequenceExamples like ``tf.io.parse_sequence_example``.

    Args:
        serialized: a list, tuple or 1-D array of serialized SequenceExamples (a single
            ``bytes`` is parsed without a batch dimension, as TensorFlow does).
        context_features: key -> ``FixedLenFeature``/``VarLenFeature``/``RaggedFeature``/
            ``RawFeature``.
        sequence_features: key -> ``FixedLenSequenceFeature``/``VarLenFeature``/
            ``RaggedFeature``. Both may hold ``tf.io``'s own spec objects (converted by
            duck typing, see :func:`~.specs.as_feature_specs`).
        example_names: one name per record (or ``None``): an error about a record
            names it instead of ``<unknown>``, as in TensorFlow.
        name: TensorFlow's op name; accepted and unused.

    Returns:
        ``(context, feature_lists, lengths)``; ``lengths`` holds the step counts of each
        ``FixedLenSequenceFeature``.

    Raises:
        ExampleParseError: a record does not match the specs.
        MalformedExampleError: a record is not a valid SequenceExample.
        InvalidArgumentError: the specs are invalid.

    Example:
        >>> from tfrecord_engine.example.encode import encode_sequence_example
        >>> from tfrecord_engine.example.specs import FixedLenSequenceFeature
        >>> data = [encode_sequence_example({}, {"s": [[1], [2]]})]
        >>> spec = {"s": FixedLenSequenceFeature([], "int64")}
        >>> ctx, lists, lengths = parse_sequence_example(data, None, spec)
        >>> lists["s"].tolist(), lengths["s"].tolist()
        ([[1, 2]], [2])
    """
    del name  # TensorFlow's op name
    context = dict(as_feature_specs(context_features or {}))
    sequence = dict(as_feature_specs(sequence_features or {}))
    serialized, example_names = tensor_value(serialized), tensor_value(example_names)
    if isinstance(serialized, (bytes, bytearray, memoryview)):
        with named_errors(None, example_names):
            return parse_records([bytes(serialized)], context, sequence, single=True)
    records = to_records(serialized)
    with named_errors(example_name_list(example_names, len(records))):
        return SequenceDecoder(context, sequence).decode_records(records)


def parse_single_sequence_example(
    serialized: Any,
    context_features: Mapping[str, FeatureSpec] | None = None,
    sequence_features: Mapping[str, FeatureSpec] | None = None,
    example_name: Any = None,
    name: object = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Parses one SequenceExample like ``tf.io.parse_single_sequence_example``.

    ``example_name`` names the record in error texts (instead of ``<unknown>``), as in
    TensorFlow; ``name`` (TensorFlow's op name) is accepted and unused. The specs may
    be ``tf.io``'s own objects.

    Returns:
        ``(context, feature_lists)`` without a batch dimension.

    Example:
        >>> from tfrecord_engine.example.encode import encode_sequence_example
        >>> from tfrecord_engine.example.specs import VarLenFeature
        >>> data = encode_sequence_example({"id": 3}, {"t": [[1, 2], [3]]})
        >>> ctx, lists = parse_single_sequence_example(data, None, {"t": VarLenFeature("int64")})
        >>> lists["t"].dense_shape.tolist()
        [2, 2]
    """
    serialized, example_name = tensor_value(serialized), tensor_value(example_name)
    if not isinstance(serialized, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(f"serialized must be bytes, got {type(serialized).__name__}")
    del name  # TensorFlow's op name
    context = dict(as_feature_specs(context_features or {}))
    sequence = dict(as_feature_specs(sequence_features or {}))
    with named_errors(None, example_name):
        ctx_out, lists, _ = parse_records([bytes(serialized)], context, sequence, True)
    return ctx_out, lists
