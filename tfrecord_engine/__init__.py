"""tfrecord-engine: a TensorFlow-free TFRecord engine.

Framing with masked CRC32C (uncompressed, GZIP, ZLIB), errors that name the file,
record and offset, and (in later modules) Example parsing, random access and exact
epochs. This package never imports TensorFlow.
"""

from __future__ import annotations

from .compression import Compression
from .dataset import PaddedBatch, RecordDataset
from .errors import (
    CorruptedRecordError,
    DamageWarning,
    DataLossError,
    IndexFormatError,
    InvalidArgumentError,
    OutOfRangeError,
    ParseError,
    StaleIndexError,
    TFRecordError,
    TruncatedRecordError,
    WriterClosedError,
    WriterFailedError,
)
from .index import Index
from .reader import read_records
from .recovery import DamageReport
from .sampler import BlockShuffle, merge_states
from .writer import TFRecordWriter

__version__ = "0.1.0"

__all__ = [
    "BlockShuffle",
    "Compression",
    "CorruptedRecordError",
    "DamageReport",
    "DamageWarning",
    "DataLossError",
    "Index",
    "IndexFormatError",
    "InvalidArgumentError",
    "OutOfRangeError",
    "PaddedBatch",
    "ParseError",
    "RecordDataset",
    "StaleIndexError",
    "TFRecordError",
    "TFRecordWriter",
    "TruncatedRecordError",
    "WriterClosedError",
    "WriterFailedError",
    "merge_states",
    "read_records",
]
