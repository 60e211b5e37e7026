"""TFRecords as Arrow tables: a ``pyarrow.RecordBatchReader`` over TFRecord files, and
Arrow tables, readers and Parquet files written as sharded, indexed TFRecords.

Needs the ``arrow`` extra (pyarrow); importing this module without it raises
:class:`~tfrecord_engine.MissingDependencyError`. TensorFlow is never needed.

Reading (:func:`reader`, :func:`batches`, :func:`read_table`): Examples become one
column per feature, SequenceExamples context columns and list-of-steps columns, raw
records one binary column. The columns come from ``tfe`` feature specs (TensorFlow's
parsing, exactly: defaults, errors), from an Arrow schema (table semantics: a missing
feature is a null), or from a schema inferred from the first records
(:func:`infer_schema`). Only the columns asked for are decoded. Bytes and strings are
built as Arrow builds them, offsets and one data buffer (never a Python object per
value); fixed-size values are fixed-size lists. Any epoch of a dataset (shuffled,
sharded, resumed) comes as Arrow batches.

Writing (:func:`write`): rows are encoded into Examples a whole column at a time, with
TensorFlow's bytes for the same values (a null is a missing feature); shards and their
indexes are published together, or not at all.

docs/tables.md has the recipes (DuckDB, Polars, Hugging Face ``datasets``, Spark).

Example:
    >>> import os, tempfile
    >>> import pyarrow as pa
    >>> import tfrecord_engine.arrow as tfa
    >>> table = pa.table({"id": [1, 2, 3], "name": ["a", "b", None]})
    >>> paths = tfa.write(table, os.path.join(tempfile.mkdtemp(), "t"), num_shards=2)
    >>> [os.path.basename(p) for p in paths]
    ['t-00000-of-00002.tfrecord', 't-00001-of-00002.tfrecord']
    >>> tfa.read_table(paths, table.schema).equals(table)
    True
    >>> tfa.read_table(paths).column("name").to_pylist()  # schema inferred
    ['a', 'b', None]
"""

from __future__ import annotations

import importlib.util

from .errors import MissingDependencyError, install_hint


def _installed(name: str) -> bool:
    # find_spec, not an import: cheap, and it never half-imports pyarrow.
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


if not _installed("pyarrow"):
    raise MissingDependencyError(f"tfrecord_engine.arrow needs pyarrow: {install_hint('arrow')}")

import os  # noqa: E402 - only once pyarrow is known to be there
from collections.abc import Mapping, Sequence  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from .data.dataset import RecordDataset  # noqa: E402
from .data.sampler import Shuffle  # noqa: E402
from .errors import InvalidArgumentError  # noqa: E402
from .example.seqspecs import SequenceFeatures  # noqa: E402
from .hosts.arrow.decode import RAW_COLUMN  # noqa: E402
from .hosts.arrow.infer import DEFAULT_SAMPLE  # noqa: E402
from .hosts.arrow.infer import infer_schema as _infer  # noqa: E402
from .hosts.arrow.reader import (  # noqa: E402
    DEFAULT_BATCH_SIZE,
    ArrowBatches,
    check_batch_size,
    epoch_order,
    make_decoder,
    record_type_of,
)
from .hosts.arrow.writer import DEFAULT_WRITE_BATCH, open_batches, write_batches  # noqa: E402
from .hosts.splits import expand_paths  # noqa: E402
from .records.recovery import DamageCallback  # noqa: E402
from .storage.options import StorageOptionsArg  # noqa: E402

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "ArrowBatches",
    "batches",
    "infer_schema",
    "read_table",
    "reader",
    "write",
]


PathArg = str | os.PathLike[str]


def _dataset(
    source: PathArg | Sequence[PathArg] | RecordDataset,
    compression: object,
    on_damage: str,
    on_damage_report: DamageCallback | None,
    storage_options: StorageOptionsArg = None,
) -> tuple[RecordDataset, Any]:
    """A raw dataset over the files, and the features of a dataset given as source
    (whose own storage options the raw one keeps)."""
    if isinstance(source, RecordDataset):
        if source.features is None:
            return source, None
        raw = RecordDataset(
            source.paths,
            compression=source.compression,
            verify=source.verify,
            on_damage=source.on_damage,
            on_damage_report=source.on_damage_report,
            storage_options=source.storage_options,
        )
        return raw, source.features
    ds = RecordDataset(
        expand_paths(source, storage_options),  # folders too: their visible files
        compression=compression,  # type: ignore[arg-type]
        on_damage=on_damage,  # type: ignore[arg-type]
        on_damage_report=on_damage_report,
        storage_options=storage_options,
    )
    return ds, None


def batches(
    paths_or_globs: PathArg | Sequence[PathArg] | RecordDataset,
    features: Mapping[str, Any] | Any = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    columns: Sequence[str] | None = None,
    record_type: str | None = None,
    sequence_features: Mapping[str, Any] | None = None,
    compression: object = "auto",
    sample: int = DEFAULT_SAMPLE,
    shuffle: Shuffle = False,
    seed: int = 0,
    epoch: int | None = None,
    shard_index: int = 0,
    shard_count: int = 1,
    drop_remainder: bool = False,
    state: Mapping[str, Any] | None = None,
    on_damage: str = "raise",
    on_damage_report: DamageCallback | None = None,
    record_column: str = RAW_COLUMN,
    storage_options: StorageOptionsArg = None,
) -> ArrowBatches:
    """One epoch as Arrow record batches, with ``get_state()`` to resume it.

    Takes :func:`reader`'s arguments; the iterator yields ``pyarrow.RecordBatch`` es of
    ``batch_size`` rows (the last one fewer unless ``drop_remainder``), and
    ``get_state()`` returns a small dict after each: ``batches(..., state=s)`` goes on
    with the next batch (the same dicts as :meth:`tfrecord_engine.RecordDataset.batches`).

    Example:
        >>> import os, tempfile
        >>> import pyarrow as pa
        >>> import tfrecord_engine.arrow as tfa
        >>> prefix = os.path.join(tempfile.mkdtemp(), "t")
        >>> paths = tfa.write(pa.table({"x": list(range(10))}), prefix)
        >>> it = tfa.batches(paths, batch_size=4, shuffle=True, seed=1)
        >>> first = next(it)
        >>> rest = tfa.batches(paths, batch_size=4, shuffle=True, seed=1, state=it.get_state())
        >>> sorted(first["x"].to_pylist() + [v for b in rest for v in b["x"].to_pylist()])
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """
    size = check_batch_size(batch_size)
    kind = record_type_of(record_type)
    ds, own = _dataset(paths_or_globs, compression, on_damage, on_damage_report, storage_options)
    if features is None and sequence_features is None and own is not None:
        # A SequenceExample dataset's specs are its context and its feature lists.
        if isinstance(own, SequenceFeatures):
            features, sequence_features = own.context, own.sequence
        else:
            features = own
    decoder = make_decoder(
        ds,
        features,
        sequence_features=sequence_features,
        columns=columns,
        record_type=kind,
        sample=sample,
        record_column=record_column,
    )
    if epoch is None:
        resumed = None if state is None else state.get("epoch")
        epoch = resumed if isinstance(resumed, int) and not isinstance(resumed, bool) else 0
    order = epoch_order(
        len(ds),
        size,
        shuffle=shuffle,
        seed=seed,
        epoch=epoch,
        shard_index=shard_index,
        shard_count=shard_count,
        drop_remainder=drop_remainder,
        state=state,
    )
    return ArrowBatches(ds, decoder, order, on_damage_report=on_damage_report)


def reader(
    paths_or_globs: PathArg | Sequence[PathArg] | RecordDataset,
    features: Mapping[str, Any] | Any = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    columns: Sequence[str] | None = None,
    record_type: str | None = None,
    sequence_features: Mapping[str, Any] | None = None,
    compression: object = "auto",
    sample: int = DEFAULT_SAMPLE,
    shuffle: Shuffle = False,
    seed: int = 0,
    epoch: int | None = None,
    shard_index: int = 0,
    shard_count: int = 1,
    drop_remainder: bool = False,
    state: Mapping[str, Any] | None = None,
    on_damage: str = "raise",
    on_damage_report: DamageCallback | None = None,
    record_column: str = RAW_COLUMN,
    storage_options: StorageOptionsArg = None,
) -> pa.RecordBatchReader:
    """TFRecord files (or a ``RecordDataset``'s epoch) as a ``pyarrow.RecordBatchReader``.

    Args:
        paths_or_globs: paths, globs or folders (their visible files, sorted; indexes,
            hidden and ``_`` names left out), or a :class:`~tfrecord_engine.RecordDataset`
            (its ``features``, or its ``context_features`` and ``sequence_features``,
            are the default ones).
        features: ``tfe``/``tf.io`` feature specs (TensorFlow's semantics: a missing
            required feature is TensorFlow's error), a ``pyarrow.Schema`` (one field per
            feature; a missing feature is a null, in a nullable field), or ``None``: a
            schema inferred from the first ``sample`` records (:func:`infer_schema`).
            With ``sequence_features``, the context features of SequenceExamples.
        batch_size: rows per record batch.
        columns: only these columns, in this order (only their features are decoded).
        record_type: ``"Example"``, ``"SequenceExample"`` or ``"ByteArray"`` (raw
            records: one binary column, ``record_column``); ``None``: Examples, or
            SequenceExamples where given ``sequence_features`` or found by inference.
        sequence_features: the feature lists of SequenceExamples
            (``FixedLenSequenceFeature``, ``VarLenFeature``, ``RaggedFeature``): each a
            column of per-record lists of steps.
        compression: ``"auto"`` (each file's own), ``None``/``""``, ``"GZIP"``, ``"ZLIB"``.
        sample: records read to infer a schema.
        shuffle, seed, epoch, shard_index, shard_count, drop_remainder, state: the
            epoch, as :meth:`tfrecord_engine.RecordDataset.batches` takes them
            (``epoch=None``: the state's epoch, else 0).
        on_damage: ``"raise"``, ``"stop"`` or ``"skip"`` (docs/reliability.md).
        on_damage_report: receives each :class:`~tfrecord_engine.DamageReport`.
        record_column: the name of the raw records' column.
        storage_options: for URLs, fsspec keyword arguments for their filesystem (see
            :mod:`tfrecord_engine.storage.options`; a ``RecordDataset`` given keeps its
            own).

    Raises:
        ExampleParseError: a record breaks the specs or the schema; the error names the
            file, the record and its offset (raised at the batch that holds it).
        InvalidArgumentError: a column that is not there, a type no Example holds.

    Example:
        >>> import os, tempfile
        >>> import tfrecord_engine as tfe, tfrecord_engine.arrow as tfa
        >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
        >>> with tfe.TFRecordWriter(path, index=True) as w:
        ...     w.write_many(tfe.encode_example({"label": i, "text": f"r{i}"}) for i in range(3))
        3
        >>> spec = {"label": tfe.FixedLenFeature([], "int64")}
        >>> tfa.reader(path, spec).read_all().to_pydict()
        {'label': [0, 1, 2]}
        >>> tfa.reader(path, columns=["text"]).read_all().to_pydict()
        {'text': ['r0', 'r1', 'r2']}
    """
    return batches(
        paths_or_globs,
        features,
        batch_size=batch_size,
        columns=columns,
        record_type=record_type,
        sequence_features=sequence_features,
        compression=compression,
        sample=sample,
        shuffle=shuffle,
        seed=seed,
        epoch=epoch,
        shard_index=shard_index,
        shard_count=shard_count,
        drop_remainder=drop_remainder,
        state=state,
        on_damage=on_damage,
        on_damage_report=on_damage_report,
        record_column=record_column,
        storage_options=storage_options,
    ).reader()


def read_table(
    paths_or_globs: PathArg | Sequence[PathArg] | RecordDataset,
    features: Mapping[str, Any] | Any = None,
    **options: Any,
) -> pa.Table:
    """:func:`reader`'s rows as one ``pyarrow.Table`` (same arguments).

    Example:
        >>> import os, tempfile
        >>> import pyarrow as pa, tfrecord_engine.arrow as tfa
        >>> paths = tfa.write(pa.table({"v": [[1, 2], [3]]}), os.path.join(tempfile.mkdtemp(), "t"))
        >>> tfa.read_table(paths).to_pydict()
        {'v': [[1, 2], [3]]}
    """
    return reader(paths_or_globs, features, **options).read_all()


def infer_schema(
    paths_or_globs: PathArg | Sequence[PathArg] | RecordDataset,
    *,
    sample: int = DEFAULT_SAMPLE,
    record_type: str | None = None,
    compression: object = "auto",
    storage_options: StorageOptionsArg = None,
) -> pa.Schema:
    """The Arrow schema inferred from the first ``sample`` records (in file order).

    The statistics are ``tfr schema``'s: a key with one value in every record holding
    it is a plain column, one with always ``L >= 2`` values a ``fixed_size_list``,
    otherwise a ``list``; bytes are ``string`` when every sampled value is printable
    UTF-8, else ``binary``; a SequenceExample's feature lists are ``list<list<T>>``.
    Every field is nullable (a record without the key reads as a null). Keys come
    sorted. A key with conflicting types is left out: pass a schema to read it.

    Example:
        >>> import os, tempfile
        >>> import pyarrow as pa, tfrecord_engine.arrow as tfa
        >>> t = pa.table({"id": [1, 2], "xy": [[0.5, 1.0], [2.0, 3.0]]})
        >>> paths = tfa.write(t, os.path.join(tempfile.mkdtemp(), "t"))
        >>> print(tfa.infer_schema(paths))
        id: int64
        xy: fixed_size_list<item: float>[2]
          child 0, item: float
    """
    kind = record_type_of(record_type)
    if kind == "ByteArray":
        return pa.schema([pa.field(RAW_COLUMN, pa.binary(), nullable=False)])
    ds, _ = _dataset(paths_or_globs, compression, "raise", None, storage_options)
    if sample < 1:
        raise InvalidArgumentError(f"sample must be >= 1, got {sample}")
    head = ds.read_raw(np.arange(min(sample, len(ds)), dtype=np.int64))
    mode = {"Example": "example", "SequenceExample": "sequence"}.get(kind or "", "auto")
    schema: pa.Schema = _infer(head, mode, where=ds.paths[0] if ds.paths else "sample").schema
    return schema


def write(
    table_or_reader: Any,
    file_path_prefix: str | os.PathLike[str],
    *,
    num_shards: int | None = None,
    records_per_shard: int | None = None,
    compression: object = None,
    index: bool = True,
    columns: Sequence[str] | None = None,
    record_type: str | None = None,
    batch_size: int = DEFAULT_WRITE_BATCH,
    storage_options: StorageOptionsArg = None,
) -> list[str]:
    """Writes rows as sharded, indexed TFRecord files; returns their paths.

    Each row becomes a ``tf.train.Example`` with one feature per column (entries in
    column order; TensorFlow's bytes for the same values); a null is a feature left
    out, and reads back as a null with the table's schema. Lists and fixed-size lists
    (of any depth, one variable level at most) are stored flat, row-major, as an
    Example holds tensors. Integer, bool and temporal columns are Int64Lists, floats
    FloatLists (a float64 that float32 does not hold exactly is an error: cast it
    first), binary and strings BytesLists.

    Args:
        table_or_reader: a ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``,
            a ``pyarrow.dataset.Dataset``, Parquet file(s) or folder(s) (a path or a list
            of paths), a pandas DataFrame, or anything with ``__arrow_c_stream__``
            (Polars, DuckDB).
        file_path_prefix: shards are ``<prefix>-00000-of-00004.tfrecord`` (``.gz``/``.zz``
            added for GZIP/ZLIB); the folder is created.
        num_shards: shards of sizes within one row of each other (default: one).
        records_per_shard: instead, this many rows in every shard but the last (the
            only way to shard a stream of unknown length).
        compression: ``None``/``""``, ``"GZIP"`` or ``"ZLIB"``.
        index: write each shard's index (random access, exact epochs).
        columns: only these columns.
        record_type: ``"Example"`` (default), ``"SequenceExample"`` (each
            ``list<list<T>>`` column a feature list, one step per inner list; the other
            columns context features) or ``"ByteArray"`` (one binary column whose values
            are the records).
        batch_size: rows encoded together (memory: about that many encoded rows).
        storage_options: for a URL prefix, fsspec keyword arguments for its filesystem
            (see :mod:`tfrecord_engine.storage.options`).

    Raises:
        InvalidArgumentError: a type an Example cannot hold exactly, a null inside a
            list; nothing is published then.

    Example:
        >>> import os, tempfile
        >>> import pyarrow as pa, tfrecord_engine as tfe, tfrecord_engine.arrow as tfa
        >>> (path,) = tfa.write(pa.table({"label": [7]}), os.path.join(tempfile.mkdtemp(), "x"))
        >>> tfe.decode_example(next(iter(tfe.read_records(path))))
        {'label': array([7])}
    """
    kind = record_type_of(record_type) or "Example"
    data = open_batches(table_or_reader, columns, check_batch_size(batch_size))
    written = write_batches(
        data,
        os.fspath(file_path_prefix),
        num_shards=num_shards,
        records_per_shard=records_per_shard,
        compression=compression,
        index=index,
        record_type=kind,
        storage_options=storage_options,
    )
    return written.paths
