"""Errors that name their place in a dataset: the file, the record, its offset, and what
to do next.

The batch decoder knows only a failing record's position in its batch (TensorFlow's
``Index: 0``), which inside a shuffled batch locates nothing. Every dataset path (``ds[i]``,
``ds[list]``, ``__getitems__``, iteration, :meth:`~tfrecord_engine.RecordDataset.batches`
in this thread, on the read-ahead thread or in decode workers) hands its parse errors to
:func:`locate` with the dataset indices of the records it decoded, which turns the batch
position into the file, the record's index in it, its byte offset and its index in the
dataset, and adds a hint (the spec that fits, ``tfr schema``). Damage errors already name
their place; :func:`locate` adds what to do (``on_damage="skip"``, ``tfr repair``).

The error is changed in place and raised once: TensorFlow's text stays whole inside the
message (and in ``ParseError.reason``), and no second exception is chained to it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..errors import DataLossError, MalformedExampleError, ParseError, TFRecordError
from ..index.sidecar import Index

__all__ = ["damage_hint", "locate", "parse_hint"]

#: A batch whose error names no record is searched record by record up to this size.
_NARROW_AT_MOST = 1 << 16
_DTYPE_OF_TF_NAME = {"int64": "int64", "float": "float32", "string": "string"}
_STORED = re.compile(r"(?:Data type: (\w+) but expected|Actual type: (\w+))")
_SIZES = re.compile(r"Values size: (\d+) but output shape: (\[[^\]]*\])")


class LocatingSource(Protocol):
    """What locating an error needs of a dataset (a ``RecordDataset``)."""

    @property
    def indexes(self) -> list[Index]:
        """The index of every file, in file order."""

    @property
    def features(self) -> Mapping[str, Any] | None:
        """The feature specs, or ``None``."""

    @property
    def on_damage(self) -> str:
        """The damage policy."""

    @property
    def decoder(self) -> Any:
        """The batch decoder of the features."""

    def read_raw(self, indices: Sequence[int]) -> list[bytes]:
        """The records at ``indices``."""

    def __len__(self) -> int:
        """The number of records (of a view: those it selects)."""

    def _records(self, indices: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The numbers across the files of the records at (normalized) ``indices``."""


def locate(exc: BaseException, ds: LocatingSource, indices: object = ()) -> None:
    """Names the place of ``exc``, raised reading the records ``indices`` of ``ds``.

    Parse errors get the file, record, offset and dataset index of the failing record
    (its position in the batch, or for an error about the batch as a whole the first
    record that fails on its own) and a hint; damage errors get a hint. Other errors,
    and errors already located, are left as they are. Never raises.
    """
    try:
        if isinstance(exc, ParseError):
            if exc.path is None and ds.features is not None:
                _locate_parse(exc, ds, _as_list(indices))
        elif isinstance(exc, DataLossError) and exc.path is not None and exc.hint is None:
            exc.with_hint(damage_hint(exc.path, ds.on_damage))
            cause = exc.__cause__
            if cause is not None and str(cause) and str(cause) in exc.reason:
                # (e.g. the decompressor's error it was made from): shown once, not twice
                exc.__cause__ = None
                exc.__suppress_context__ = True
    except (TFRecordError, OSError, ValueError, TypeError, IndexError):
        # (A failing second read while locating: the error keeps its own text.)
        return


def _as_list(indices: object) -> list[int]:
    if isinstance(indices, (int, np.integer)):
        return [int(indices)]
    if isinstance(indices, np.ndarray):
        return [int(i) for i in indices.reshape(-1).tolist()]
    if isinstance(indices, Sequence) and not isinstance(indices, (str, bytes)):
        return [int(i) for i in indices]
    return []


def _locate_parse(exc: ParseError, ds: LocatingSource, indices: list[int]) -> None:
    indexes = ds.indexes
    counts = [len(idx) for idx in indexes]
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    n = len(ds)  # a view's own numbering (its records map to files through _records)
    indices = [i + n if i < 0 else i for i in indices]
    if not indices or not all(0 <= i < n for i in indices):
        return
    position = getattr(exc, "index", None)
    if len(indices) == 1:
        j: int | None = 0
    elif isinstance(position, int) and 0 <= position < len(indices):
        j = position
    else:
        j = _first_failing(ds, indices)
    records = ds._records(np.asarray(indices, np.int64))
    if j is None:
        files = sorted({int(np.searchsorted(starts, r, "right")) - 1 for r in records.tolist()})
        names = ", ".join(indexes[f].data_path for f in files[:3])
        more = f" and {len(files) - 3} more file(s)" if len(files) > 3 else ""
        exc.locate(
            None,
            None,
            hint=(
                f"The error is about a batch of {len(indices)} records as a whole (from "
                f"{names}{more}); none of them fails on its own."
            ),
        )
        return
    i = indices[j]
    record = int(records[j])
    f = int(np.searchsorted(starts, record, "right")) - 1
    index = indexes[f]
    local = record - int(starts[f])
    path = index.data_path
    exc.locate(
        path,
        local,
        int(index.offsets[local]),
        dataset_index=i,
        hint=parse_hint(exc, ds.features, path),
    )


def _first_failing(ds: LocatingSource, indices: list[int]) -> int | None:
    """The position of the first record that fails to decode on its own, if any."""
    if len(indices) > _NARROW_AT_MOST:
        return None
    decoder = ds.decoder
    for j, record in enumerate(ds.read_raw(indices)):
        try:
            decoder.decode_exact([record])
        except ParseError:  # noqa: PERF203 - the error path, record by record
            return j
    return None


def parse_hint(exc: ParseError, features: Mapping[str, Any] | None, path: str) -> str:
    """What to do about a parse error of a record of ``path`` (a sentence or two).

    >>> from tfrecord_engine.errors import ExampleParseError
    >>> err = ExampleParseError("Key: y.  Data types don't match. Data type: int64 but "
    ...                         "expected type: float", key="y")
    >>> parse_hint(err, None, "a.tfrecord")
    "The file stores 'y' as int64 values: give its spec dtype 'int64'; ..."
    """
    schema = f"`tfr schema {shlex.quote(path)}` prints specs that fit the file."
    text = exc.reason
    key = getattr(exc, "key", None)
    if isinstance(exc, MalformedExampleError):
        return (
            "The record is not a valid tf.train.Example (a SequenceExample file needs its "
            "own specs: context_features= and sequence_features=; features=None reads the "
            "raw bytes): " + schema
        )
    if key is None:
        return schema
    if "is required but could not be found" in text:
        return (
            f"This record has no feature {key!r}: give its spec a default_value, or use "
            f"VarLenFeature if some records lack it; check the file belongs to this "
            f"dataset: {schema}"
        )
    stored = _STORED.search(text)
    if stored is not None:
        dtype = _DTYPE_OF_TF_NAME.get(stored[1] or stored[2], stored[1] or stored[2])
        return f"The file stores {key!r} as {dtype} values: give its spec dtype {dtype!r}; {schema}"
    sizes = _SIZES.search(text)
    spec = None if features is None else features.get(key)
    shape = getattr(spec, "shape", None)
    if sizes is not None or ("values" in text.lower() and shape is not None) or "slice" in text:
        have = f"{sizes[1]} values" if sizes is not None else "a number of values"
        want = sizes[2] if sizes is not None else list(shape or [])
        return (
            f"This record has {have} for {key!r} where the spec's shape {want} needs "
            "another count: use VarLenFeature (or RaggedFeature) if the count varies from "
            f"record to record, else FixedLenFeature with the right shape; {schema}"
        )
    return schema


def damage_hint(path: str, on_damage: str) -> str:
    """What to do about a damaged record of ``path`` read under ``on_damage``.

    >>> damage_hint("a.tfrecord", "raise")
    "To read past damaged records, pass on_damage='skip' (or 'stop': ...
    """
    repair = f"`tfr repair {shlex.quote(path)}` writes a copy without the damaged records."
    if on_damage == "raise":
        return (
            "To read past damaged records, pass on_damage='skip' (or 'stop': only the "
            f"records before the damage) to RecordDataset; {repair}"
        )
    return (
        "Random access (ds[i], ds[list]) raises under every on_damage policy: a requested "
        f"record cannot be dropped; {repair}"
    )
