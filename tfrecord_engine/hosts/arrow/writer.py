"""Arrow tables, readers and Parquet files written as sharded, indexed TFRecords.

Rows become Examples (:mod:`.flatten` then :mod:`.encode`: whole columns at once),
SequenceExamples (``record_type="SequenceExample"``: list-of-list columns are feature
lists, :mod:`.sequence_encode`), or, for a table of one binary column
(``record_type="ByteArray"``), the bytes are the records. Shards are written one after another with
:class:`~tfrecord_engine.TFRecordWriter` (each with its index) into a hidden staging
folder and renamed to their final names only once all are written: a failed write
publishes nothing (:mod:`tfrecord_engine.hosts.staging`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.dataset as pads

from ...errors import InvalidArgumentError
from ...example.batch import join_records
from ...records.compression import Compression, normalize_compression
from ...storage.options import StorageOptionsArg
from ...writing.writer import TFRecordWriter
from ..staging import Staging
from .decode import RAW_COLUMN
from .encode import encode_columns
from .flatten import flatten_column
from .leaf import write_leaf
from .plan import unwrap
from .sequence_encode import encode_sequence_batch, is_feature_list
from .spans import Spans

__all__ = [
    "DEFAULT_WRITE_BATCH",
    "Batches",
    "Written",
    "encode_batch",
    "open_batches",
    "record_views",
    "shard_names",
    "write_batches",
]

#: Rows read from a Parquet file (or cut from a table) and encoded together.
DEFAULT_WRITE_BATCH: Final = 8192
_EXTENSIONS: Final = {Compression.NONE: "", Compression.GZIP: ".gz", Compression.ZLIB: ".zz"}
U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Written:
    """What a write published: the shards, their record counts, and per column the
    rows that held a null (written without that feature)."""

    paths: list[str]
    counts: list[int]
    schema: Any
    nulls: dict[str, int]


class Batches:
    """Record batches to write: their schema, how many rows (``None``: unknown until
    the end), and the batches."""

    def __init__(self, schema: Any, rows: int | None, batches: Iterable[pa.RecordBatch]) -> None:
        self.schema = schema
        self.rows = rows
        self.batches = batches


def _is_parquet_path(data: object) -> bool:
    if isinstance(data, (str, os.PathLike)):
        return True
    return (
        isinstance(data, (list, tuple))
        and bool(data)
        and all(isinstance(p, (str, os.PathLike)) for p in data)
    )


def open_batches(data: Any, columns: Sequence[str] | None, batch_size: int) -> Batches:
    """The record batches of ``data``: a ``pyarrow.Table``, ``RecordBatch``,
    ``RecordBatchReader``, ``pyarrow.dataset.Dataset``, Parquet file(s) or folder(s) (a
    path or a list of paths), a pandas DataFrame, or any object exporting an Arrow
    stream (``__arrow_c_stream__``: Polars, DuckDB results ...); only ``columns`` when
    given.

    Raises:
        InvalidArgumentError: anything else, or a column that is not there.
    """
    cols = None if columns is None else list(columns)
    if _is_parquet_path(data):
        paths = [os.fspath(p) for p in (data if isinstance(data, (list, tuple)) else [data])]
        parts = [pads.dataset(p, format="parquet") for p in paths]  # files or folders
        data = parts[0] if len(parts) == 1 else pads.dataset(parts)
    if type(data).__module__.startswith("pyarrow._dataset") or hasattr(data, "count_rows"):
        schema = data.schema if cols is None else pa.schema([data.schema.field(c) for c in cols])
        batches = data.to_batches(columns=cols, batch_size=batch_size)
        return Batches(schema, int(data.count_rows()), batches)
    if type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pandas"):
        data = pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        table = data if cols is None else data.select(cols)
        return Batches(table.schema, table.num_rows, table.to_batches(max_chunksize=batch_size))
    if not isinstance(data, pa.RecordBatchReader) and hasattr(data, "__arrow_c_stream__"):
        data = pa.RecordBatchReader.from_stream(data)
    if isinstance(data, pa.RecordBatchReader):
        reader = data
        schema = (
            reader.schema if cols is None else pa.schema([reader.schema.field(c) for c in cols])
        )
        stream = (b if cols is None else b.select(cols) for b in reader)
        return Batches(schema, None, stream)
    raise InvalidArgumentError(
        f"cannot write {type(data).__name__}: pass a pyarrow Table, RecordBatch or "
        "RecordBatchReader, a pyarrow dataset, Parquet path(s), a pandas DataFrame, or an "
        "object with __arrow_c_stream__ (Polars, DuckDB)"
    )


def check_schema(schema: Any, record_type: str) -> None:
    """Refuses a schema the records cannot hold before anything is written."""
    if record_type == "ByteArray":
        if schema.names != [RAW_COLUMN] and len(schema.names) != 1:
            raise InvalidArgumentError(
                f"raw records are one binary column, the table has {schema.names}"
            )
        t = schema.field(0).type
        if not (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
            raise InvalidArgumentError(f"raw records must be a binary column, not {t}")
        return
    if not schema.names:
        raise InvalidArgumentError("the table has no column to write")
    twice = sorted({n for n in schema.names if schema.names.count(n) > 1})
    if twice:
        # (Each column is a feature key: a record holding a key twice keeps only the
        # last value in TensorFlow's parse, so the others would be lost.)
        raise InvalidArgumentError(
            f"the table has columns of the same name: {twice}; each column is a feature "
            "key of the records, so rename or drop one (table.rename_columns([...]))"
        )
    for f in schema:
        if pa.types.is_null(f.type):
            continue  # only nulls: no row holds the feature
        if record_type == "SequenceExample" and is_feature_list(f.type):
            unwrap(f.type.value_type, f"column {f.name!r}")
        else:
            unwrap(f.type, f"column {f.name!r}")


def encode_batch(
    batch: pa.RecordBatch, record_type: str = "Example", nulls: dict[str, int] | None = None
) -> tuple[U8, I64, I64]:
    """The records of one batch: ``(buf, starts, ends)`` (record ``i`` is
    ``buf[starts[i]:ends[i]]``); ``nulls`` counts each column's null rows (Examples)."""
    if record_type == "SequenceExample":
        return join_records(encode_sequence_batch(batch))
    if record_type == "ByteArray":
        column = batch.column(0)
        if column.null_count:
            raise InvalidArgumentError(
                f"the raw column {batch.schema.names[0]!r} holds nulls: a record needs bytes"
            )
        spans = write_leaf(column, "raw records")
        assert isinstance(spans, Spans)
        return spans.buf, spans.starts, spans.ends
    names = batch.schema.names
    flats = [flatten_column(batch.column(i), f"column {n!r}") for i, n in enumerate(names)]
    if nulls is not None:
        for name, flat in zip(names, flats, strict=True):
            nulls[name] = nulls.get(name, 0) + int((~flat.present).sum())
    return encode_columns(names, flats, batch.num_rows)


def record_views(spans: tuple[U8, I64, I64]) -> list[memoryview]:
    """The records as views of their buffer (no copy; one list for the whole batch)."""
    buf, starts, ends = spans
    view = memoryview(buf)  # type: ignore[arg-type]  # numpy arrays are buffers
    return [view[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]


def _plan(rows: int | None, num_shards: int | None, per_shard: int | None) -> list[int] | None:
    """Shard sizes; ``None``: cut every ``per_shard`` records as they come."""
    if num_shards is not None and per_shard is not None:
        raise InvalidArgumentError("give num_shards or records_per_shard, not both")
    if num_shards is not None and (isinstance(num_shards, bool) or num_shards < 1):
        raise InvalidArgumentError(f"num_shards must be an int >= 1, got {num_shards!r}")
    if per_shard is not None and (isinstance(per_shard, bool) or per_shard < 1):
        raise InvalidArgumentError(f"records_per_shard must be an int >= 1, got {per_shard!r}")
    if rows is None:
        if num_shards not in (None, 1):
            raise InvalidArgumentError(
                "a stream of unknown length cannot be cut into a number of equal shards: "
                "pass records_per_shard=, or a table or Parquet file (their row count is "
                "known)"
            )
        return None if per_shard is not None else [-1]
    if per_shard is not None:
        full, rest = divmod(rows, per_shard)
        return [per_shard] * full + ([rest] if rest else []) or [0]
    k = num_shards or 1
    return [(i + 1) * rows // k - i * rows // k for i in range(k)]


def shard_names(prefix: str, count: int, compression: Compression) -> list[str]:
    """``prefix-00000-of-00004.tfrecord[.gz|.zz]`` (at least five digits)."""
    width = max(5, len(str(count)))
    ext = ".tfrecord" + _EXTENSIONS[compression]
    return [f"{prefix}-{i:0{width}d}-of-{count:0{width}d}{ext}" for i in range(count)]


def write_batches(
    batches: Batches,
    file_path_prefix: str,
    *,
    num_shards: int | None = None,
    records_per_shard: int | None = None,
    compression: object = None,
    index: bool = True,
    record_type: str = "Example",
    storage_options: StorageOptionsArg = None,
) -> Written:
    """Writes the rows as shards named after ``file_path_prefix`` (see the module); a
    URL prefix is reached with ``storage_options`` (fsspec keyword arguments)."""
    check_schema(batches.schema, record_type)
    kind = normalize_compression(compression)  # type: ignore[arg-type]
    sizes = _plan(batches.rows, num_shards, records_per_shard)
    folder, base = os.path.split(file_path_prefix)
    if not base or base.startswith((".", "_")):
        raise InvalidArgumentError(
            f"file_path_prefix must end in a visible file name prefix, got {file_path_prefix!r}"
        )
    staging = Staging(folder or ".", storage_options=storage_options)
    staging.create()
    staged: list[str] = []
    counts: list[int] = []
    nulls: dict[str, int] = {}
    writer: TFRecordWriter | None = None
    in_shard = 0
    written = 0

    def room() -> int | None:
        if sizes is None:
            return records_per_shard
        want = sizes[len(staged)] if len(staged) < len(sizes) else 0
        return None if want < 0 else want

    def close() -> None:
        nonlocal writer, in_shard
        if writer is None:
            writer = TFRecordWriter(
                staging.staged(f"{len(staged):06d}"),
                kind,
                index=index,
                storage_options=staging.storage_options,
            )
        writer.close()
        staged.append(f"{len(staged):06d}")
        counts.append(in_shard)
        writer = None
        in_shard = 0

    try:
        for batch in batches.batches:
            records = record_views(encode_batch(batch, record_type, nulls))
            done = 0
            left = batch.num_rows
            while left:
                limit = room()
                take = left if limit is None else min(left, limit - in_shard)
                if take <= 0:
                    if sizes is not None and len(staged) >= len(sizes):
                        raise InvalidArgumentError(f"more rows than the {batches.rows} announced")
                    close()
                    continue
                if writer is None:
                    writer = TFRecordWriter(
                        staging.staged(f"{len(staged):06d}"),
                        kind,
                        index=index,
                        storage_options=staging.storage_options,
                    )
                writer.write_many(records[done : done + take])
                done += take
                in_shard += take
                written += take
                left -= take
                if limit is not None and in_shard == limit:
                    close()
        if writer is not None or not staged:
            close()
        while sizes is not None and len(staged) < len(sizes):
            close()  # shards that get no row (more shards than rows) are written empty
        if batches.rows is not None and written != batches.rows:
            raise InvalidArgumentError(
                f"{written} rows came, the source announced {batches.rows}: it changed "
                "while it was read; nothing was published"
            )
        finals = shard_names(base, len(staged), kind)
        # Final paths as the caller named the folder (relative stays relative).
        moves = [
            (name, staging.join(folder, final) if folder else final)
            for name, final in zip(staged, finals, strict=True)
        ]
        paths = staging.publish(moves, index=index)
        return Written(paths, counts, batches.schema, nulls)
    except BaseException:
        if writer is not None:
            writer.abort()
        staging.abort()
        raise
