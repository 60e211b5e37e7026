"""tfrecord-engine: a TensorFlow-free TFRecord engine.

Framing with masked CRC32C (uncompressed, GZIP, ZLIB), errors that name the file,
record and offset, and (in later modules) Example parsing, random access and exact
epochs. This package never imports TensorFlow.
"""

from __future__ import annotations

from .data.balance import Balance, BalancedSampler
from .data.collate import PaddedValue, collate
from .data.dataset import PaddedBatch, RecordDataset
from .data.explain import DecodePath, explain_decode
from .data.infer import UninferredFeatureWarning, infer_features, infer_sequence_features
from .data.mixing import sample_from_datasets
from .data.sampler import BlockShuffle, merge_states
from .errors import (
    CorruptedRecordError,
    DamageWarning,
    DataLossError,
    ExampleParseError,
    IndexFormatError,
    IndexPublishError,
    InvalidArgumentError,
    MalformedExampleError,
    MissingDependencyError,
    OutOfRangeError,
    ParseError,
    RangeIgnoredWarning,
    ReadOnlyStorageError,
    RecordTooLargeError,
    RemoteAccessDeniedError,
    RemoteChangedError,
    RemoteNotFoundError,
    RemoteReadError,
    StaleIndexError,
    TFRecordError,
    TruncatedRecordError,
    WorkerError,
    WriterClosedError,
    WriterFailedError,
)
from .example import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    ImageFeature,
    RaggedFeature,
    RaggedValue,
    RawFeature,
    SparseFeature,
    SparseValue,
    TensorFeature,
    VarLenFeature,
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
    parse_example,
    parse_sequence_example,
    parse_single_example,
    parse_single_sequence_example,
    parse_tensor,
    serialize_tensor,
)
from .index.sidecar import Index
from .records.compression import Compression
from .records.follow import RecordFollower
from .records.options import TFRecordCompressionType, TFRecordOptions
from .records.random_reader import RandomRecordReader
from .records.reader import read_records
from .records.recovery import DamageReport
from .storage.retry import RetryPolicy, set_default_retry_policy
from .writing.writer import TFRecordWriter

__version__ = "0.1.0"

__all__ = [
    "Balance",
    "BalancedSampler",
    "BlockShuffle",
    "Compression",
    "CorruptedRecordError",
    "DamageReport",
    "DamageWarning",
    "DataLossError",
    "DecodePath",
    "ExampleParseError",
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "ImageFeature",
    "Index",
    "IndexFormatError",
    "IndexPublishError",
    "InvalidArgumentError",
    "MalformedExampleError",
    "MissingDependencyError",
    "OutOfRangeError",
    "PaddedBatch",
    "PaddedValue",
    "ParseError",
    "RaggedFeature",
    "RaggedValue",
    "RandomRecordReader",
    "RangeIgnoredWarning",
    "RawFeature",
    "ReadOnlyStorageError",
    "RecordDataset",
    "RecordFollower",
    "RecordTooLargeError",
    "RemoteAccessDeniedError",
    "RemoteChangedError",
    "RemoteNotFoundError",
    "RemoteReadError",
    "RetryPolicy",
    "SparseFeature",
    "SparseValue",
    "StaleIndexError",
    "TFRecordCompressionType",
    "TFRecordError",
    "TFRecordOptions",
    "TFRecordWriter",
    "TensorFeature",
    "TruncatedRecordError",
    "UninferredFeatureWarning",
    "VarLenFeature",
    "WorkerError",
    "WriterClosedError",
    "WriterFailedError",
    "collate",
    "decode_example",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
    "explain_decode",
    "infer_features",
    "infer_sequence_features",
    "merge_states",
    "parse_example",
    "parse_sequence_example",
    "parse_single_example",
    "parse_single_sequence_example",
    "parse_tensor",
    "read_records",
    "sample_from_datasets",
    "serialize_tensor",
    "set_default_retry_policy",
]
