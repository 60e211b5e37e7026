"""The data source's options: spark-tfrecord's names, so that its users' code ports
unchanged, and a few of ours.

=====================  ========================================================
option                 meaning
=====================  ========================================================
``path`` / ``paths``   files, folders or globs (``load(...)``/``save(...)`` set them)
``recordType``         ``Example`` (default), ``SequenceExample``, ``ByteArray``
``codec``              writing: ``gzip``/``zlib``/``none``, or Hadoop's codec class
                       names (``org.apache.hadoop.io.compress.GzipCodec`` ...);
                       reading: each file's own compression, from its bytes
``compression``        the same as ``codec``
``sampleRecords``      records read to infer a schema (default 1000)
``onDamage``           ``raise`` (default) or ``skip`` damaged records (reported)
``maxPartitionBytes``  record bytes per read task at most (default 128 MiB)
``numPartitions``      read tasks at least (a large file is cut into this many)
``batchSize``          rows per Arrow batch a read task yields (default 4096)
``partitionBy``        writing: comma-separated columns, one ``col=value`` folder
                       level each (Spark's own ``partitionBy`` is not offered to
                       Python data sources)
``saveMode``           writing with ``mode("append")``: ``errorifexists`` or
                       ``ignore`` when the folder already holds data (Spark refuses
                       those modes for Python data sources)
``storageOptions``     a JSON object of fsspec keyword arguments for URLs
                       (``storage_options`` elsewhere in the package, also
                       accepted as the option's name): listing, indexes, reads
                       and writes on the driver and in the tasks use them
=====================  ========================================================

Names are case-insensitive, as Spark's. An unknown option is an error (a typo would
otherwise be ignored silently).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ...errors import InvalidArgumentError
from ...records.compression import Compression, normalize_compression
from ...storage.options import StorageOptions, normalize_storage_options
from ..arrow.reader import RecordType, record_type_of

__all__ = ["MAX_PARTITION_BYTES", "SourceOptions", "parse_options"]

#: Spark's own default for ``spark.sql.files.maxPartitionBytes``.
MAX_PARTITION_BYTES: Final = 128 << 20
_KNOWN: Final = {
    "path",
    "paths",
    "recordtype",
    "codec",
    "compression",
    "samplerecords",
    "ondamage",
    "maxpartitionbytes",
    "numpartitions",
    "batchsize",
    "partitionby",
    "savemode",
    "storageoptions",
    "storage_options",
}


@dataclass(frozen=True)
class SourceOptions:
    """The parsed options of one read or write (see the module)."""

    paths: tuple[str, ...]
    record_type: RecordType = "Example"
    codec: Compression | None = None
    sample: int = 1000
    on_damage: str = "raise"
    max_partition_bytes: int = MAX_PARTITION_BYTES
    num_partitions: int = 1
    batch_size: int = 4096
    partition_by: tuple[str, ...] = ()
    save_mode: str = "append"
    storage_options: StorageOptions | None = None


def _codec(value: str) -> Compression:
    text = value.strip().lower()
    if text in ("", "none", "uncompressed"):
        return Compression.NONE
    if "gzip" in text or text == "gz":
        return Compression.GZIP
    if text in ("zlib", "deflate") or text.endswith(("defaultcodec", "deflatecodec")):
        return Compression.ZLIB
    try:
        return normalize_compression(value)
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"codec {value!r}: use gzip, zlib or none (or Hadoop's GzipCodec, DefaultCodec)"
        ) from None


def _positive(options: Mapping[str, str], name: str, default: int) -> int:
    text = options.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidArgumentError(f"option {name!r} must be an integer >= 1, got {text!r}")
    return value


def _storage_options(options: Mapping[str, str]) -> StorageOptions | None:
    """The ``storageOptions`` JSON object (``storage_options`` also names it)."""
    given = [options[k] for k in ("storageoptions", "storage_options") if k in options]
    if not given:
        return None
    if len(given) > 1:
        raise InvalidArgumentError("give storageOptions once (storage_options is the same option)")
    try:
        value = json.loads(given[0])
    except ValueError:
        value = None
    if not isinstance(value, dict):
        # (The text is not repeated: it may hold a secret.)
        raise InvalidArgumentError(
            "option storageOptions must be a JSON object of fsspec keyword arguments, e.g. "
            '.option("storageOptions", json.dumps({"key": ..., "secret": ..., '
            '"client_kwargs": {"endpoint_url": ...}}))'
        )
    return normalize_storage_options(value)


def parse_options(raw: Mapping[str, str]) -> SourceOptions:
    """The options Spark hands the data source (any case).

    Raises:
        InvalidArgumentError: an unknown option or a bad value.
    """
    options = {str(k).lower(): str(v) for k, v in raw.items()}
    unknown = sorted(set(options) - _KNOWN)
    if unknown:
        raise InvalidArgumentError(
            f"unknown tfrecord options {unknown}: the options are {sorted(_KNOWN)} (any case)"
        )
    paths: list[str] = []
    if "paths" in options:
        got = (
            json.loads(options["paths"]) if options["paths"].startswith("[") else [options["paths"]]
        )
        paths += [str(p) for p in got]
    if "path" in options:
        paths.append(options["path"])
    on_damage = options.get("ondamage", "raise").lower()
    if on_damage not in ("raise", "skip"):
        raise InvalidArgumentError(
            f"option onDamage must be 'raise' or 'skip', got {on_damage!r} ('stop' would end "
            "one read task, not the file: the tasks of a file run independently)"
        )
    save_mode = options.get("savemode", "append").lower().replace("_", "")
    if save_mode == "error":
        save_mode = "errorifexists"
    if save_mode not in ("append", "errorifexists", "ignore"):
        raise InvalidArgumentError(
            f"option saveMode must be 'errorifexists' or 'ignore', got {options['savemode']!r}"
        )
    codec = options.get("codec", options.get("compression"))
    return SourceOptions(
        paths=tuple(paths),
        record_type=record_type_of(options.get("recordtype", "Example")) or "Example",
        codec=None if codec is None else _codec(codec),
        sample=_positive(options, "samplerecords", 1000),
        on_damage=on_damage,
        max_partition_bytes=_positive(options, "maxpartitionbytes", MAX_PARTITION_BYTES),
        num_partitions=_positive(options, "numpartitions", 1),
        batch_size=_positive(options, "batchsize", 4096),
        partition_by=tuple(
            c.strip() for c in options.get("partitionby", "").split(",") if c.strip()
        ),
        save_mode=save_mode,
        storage_options=_storage_options(options),
    )
