"""tfrecord-engine: a TensorFlow-free TFRecord engine.

Framing with masked CRC32C (uncompressed, GZIP, ZLIB), errors that name the file,
record and offset, and (in later modules) Example parsing, random access and exact
epochs. This package never imports TensorFlow.
"""

from __future__ import annotations

from .compression import Compression
from .errors import (
    CorruptedRecordError,
    DamageWarning,
    DataLossError,
    InvalidArgumentError,
    ParseError,
    TFRecordError,
    TruncatedRecordError,
    WriterClosedError,
    WriterFailedError,
)
from .reader import read_records
from .recovery import DamageReport
from .writer import TFRecordWriter

__version__ = "0.1.0"

__all__ = [
    "Compression",
    "CorruptedRecordError",
    "DamageReport",
    "DamageWarning",
    "DataLossError",
    "InvalidArgumentError",
    "ParseError",
    "TFRecordError",
    "TFRecordWriter",
    "TruncatedRecordError",
    "WriterClosedError",
    "WriterFailedError",
    "read_records",
]
