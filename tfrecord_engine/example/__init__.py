"""Example / SequenceExample: wire codec, builders, feature specs and tf.io-style parsing."""

from __future__ import annotations

from .batch import parse_example
from .decode import decode_example, decode_sequence_example
from .encode import encode_example, encode_sequence_example
from .image import ImageFeature
from .parse import parse_single_example
from .sequence import parse_sequence_example, parse_single_sequence_example
from .specs import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RawFeature,
    RowLengths,
    RowLimits,
    RowSplits,
    RowStarts,
    SparseFeature,
    UniformRowLength,
    ValueRowIds,
    VarLenFeature,
)
from .tensors import TensorFeature, parse_tensor, serialize_tensor
from .values import RaggedValue, SparseValue

__all__ = [
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "ImageFeature",
    "RaggedFeature",
    "RaggedValue",
    "RawFeature",
    "RowLengths",
    "RowLimits",
    "RowSplits",
    "RowStarts",
    "SparseFeature",
    "SparseValue",
    "TensorFeature",
    "UniformRowLength",
    "ValueRowIds",
    "VarLenFeature",
    "decode_example",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
    "parse_example",
    "parse_sequence_example",
    "parse_single_example",
    "parse_single_sequence_example",
    "parse_tensor",
    "serialize_tensor",
]
