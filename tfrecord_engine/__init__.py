"""tfrecord-engine: a TensorFlow-free TFRecord engine.

Framing with masked CRC32C (uncompressed, GZIP, ZLIB), errors that name the file,
record and offset, and (in later modules) Example parsing, random access and exact
epochs. This package never imports TensorFlow.
"""

from __future__ import annotations

from .compression import Compression
from .errors import (
    CorruptedRecordError,
    DataLossError,
    ExampleParseError,
    InvalidArgumentError,
    MalformedExampleError,
    ParseError,
    TFRecordError,
    TruncatedRecordError,
    WriterClosedError,
)
from .example import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RaggedValue,
    SparseFeature,
    SparseValue,
    VarLenFeature,
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
    parse_example,
    parse_sequence_example,
    parse_single_example,
    parse_single_sequence_example,
)
from .reader import read_records
from .writer import TFRecordWriter

__version__ = "0.1.0"

__all__ = [
    "Compression",
    "CorruptedRecordError",
    "DataLossError",
    "ExampleParseError",
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "InvalidArgumentError",
    "MalformedExampleError",
    "ParseError",
    "RaggedFeature",
    "RaggedValue",
    "SparseFeature",
    "SparseValue",
    "TFRecordError",
    "TFRecordWriter",
    "TruncatedRecordError",
    "VarLenFeature",
    "WriterClosedError",
    "decode_example",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
    "parse_example",
    "parse_sequence_example",
    "parse_single_example",
    "parse_single_sequence_example",
    "read_records",
]
