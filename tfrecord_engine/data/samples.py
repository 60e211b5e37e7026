"""Per-record samples, the form map-style loaders hand to ``collate_fn``, and :func:`collate`.

PyTorch's ``DataLoader`` (and Grain) ask a random-access source for a *list of samples*,
one per record, and batch them with a collate function. A sample here is a dict of
numpy values and ``bytes``, the types PyTorch's ``default_collate`` batches:

=====================================  ===================================================
feature                                one record's value
=====================================  ===================================================
``FixedLenFeature`` / ``RawFeature``   a numpy scalar (shape ``[]``) or an array of the
                                       spec's shape; strings: ``bytes`` (shape ``[]``) or
                                       nested lists of ``bytes``
``ImageFeature``                       an array ``[height, width, channels]``
``FixedLenSequenceFeature``            an array ``[rows, *shape]`` (strings: nested lists)
``VarLenFeature``                      a 1-D array (strings: a list of ``bytes``)
``RaggedFeature`` without partitions   a 1-D array (strings: a list of ``bytes``)
``RaggedFeature`` with partitions      a :class:`RaggedValue`, as ``parse_single_example``
``SparseFeature``                      a :class:`SparseValue`, as ``parse_single_example``
=====================================  ===================================================

A batch's samples are cut from the columnar batch the batch decoder produced (row slices
and one ``tolist`` per string column), never by parsing record by record (except small
batches, which ``ds[i]``'s decoder takes one record at a time, see
:mod:`tfrecord_engine.example.single`).
The arrays (lists) of the variable-length kinds are typed as such
(:class:`~.varlen.VarLenArray`, a plain ``ndarray`` otherwise): :func:`collate`, and
PyTorch's ``default_collate`` once taught (:func:`~.collate.teach_default_collate`), pad
every batch of them into a :class:`~.collate.PaddedValue`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ExampleParseError
from ..example.assemble import varlen_values
from ..example.columns import Column
from ..example.image import ImageFeature
from ..example.records import KIND_OF
from ..example.specs import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RawFeature,
    RowSplits,
    SparseFeature,
    VarLenFeature,
)
from ..example.tensors import TensorFeature
from ..example.values import RaggedValue, SparseValue
from ..example.varlen import VarLenList, varlen_array
from .collate import PaddedValue, collate

__all__ = ["PaddedValue", "collate", "sample_of", "samples_of"]

Sample = dict[str, Any]


def samples_of(
    features: Mapping[str, FeatureSpec],
    batch: Mapping[str, Any],
    columns: Mapping[str, Column],
    n: int,
    one: Callable[[int], Sample],
) -> list[Sample]:
    """Splits a decoded batch of ``n`` records (``parse_example`` output) into samples.

    Args:
        features: the specs the batch was decoded with.
        batch: the batch outputs (``BatchDecoder.assemble``; with ``sparse=False``,
            without the ``VarLenFeature`` ones: those are cut from ``columns``).
        columns: the decoded columns of the same records (for sequence lengths, and
            each record's own values of a partitioned ``RaggedFeature``).
        n: the number of records.
        one: record ``i``'s sample by the per-record path (``parse_single_example``'s
            rules), which makes every sample of a batch holding a record whose cut
            from the batch would not be that sample:
            a ``RaggedFeature`` whose partitions disagree with each other in a record
            (TensorFlow checks nothing without ``validate``: the batch's rows of one
            record may then hold another's values), or a ``RowSplits`` partition empty
            or missing (``row_splits`` ``[]`` for one record, ``[0]`` in a batch).
    """
    out: list[Sample] = [{} for _ in range(n)]
    for name, spec in features.items():
        if name in batch:
            value = batch[name]
            wrong = (
                _not_cut_whole(spec, name, value, columns)
                if isinstance(spec, RaggedFeature) and isinstance(value, RaggedValue)
                else []
            )
            if wrong:
                # (Malformed records: the whole batch by the per-record path.)
                return per_record(one, n)
            values = _split(spec, value, columns.get(name), n)
        else:  # a VarLenFeature assembled without its sparse indices: cut from its column
            assert isinstance(spec, VarLenFeature)
            col = columns[name]
            values = _cut(varlen_values(col, KIND_OF[spec.dtype]), col.offsets)
        # Filled a key at a time: about half the cost of a dict(zip(...)) per record.
        for sample, value in zip(out, values, strict=True):
            sample[name] = value
    return out


def per_record(one: Callable[[int], Sample], n: int) -> list[Sample]:
    """``[one(0), ..., one(n - 1)]``; a parse error names the record's place in the
    batch (``index``), so that the dataset names its file and offset."""
    out: list[Sample] = []
    try:
        out.extend(map(one, range(n)))
    except ExampleParseError as exc:
        if exc.index is None:
            exc.index = len(out)
        raise
    return out


def _not_cut_whole(
    spec: RaggedFeature, name: str, ragged: RaggedValue, columns: Mapping[str, Column]
) -> list[int]:
    """The records whose rows of a batch's ``ragged`` value, followed down its levels,
    are not exactly their own values, or whose ``RowSplits`` partition is empty or
    missing: their samples must come from the per-record path (see :func:`samples_of`)."""
    if not isinstance(ragged.values, RaggedValue):
        return []  # (no partitions: a record's rows are its own values)
    own = columns.get(spec.value_key or name)
    pos = ragged.row_splits.astype(np.int64)
    bad = np.zeros(pos.shape[0], np.bool_)
    inner: Any = ragged.values
    while isinstance(inner, RaggedValue):
        splits = inner.row_splits
        outside = (pos < 0) | (pos >= splits.shape[0])
        bad |= outside
        pos = splits[np.where(outside, 0, pos)].astype(np.int64)
        inner = inner.values
    pos = pos * int(np.prod(np.shape(inner)[1:], dtype=np.int64))  # (rows of a uniform length)
    offsets = None if own is None else own.offsets  # (a property: computed per call)
    if offsets is None or offsets.shape != pos.shape:
        return list(range(pos.shape[0] - 1))  # (nothing to compare with: all per record)
    bad |= pos != offsets
    wrong = bad[:-1] | bad[1:]
    for part in spec.partitions:
        if isinstance(part, RowSplits):
            col = columns.get(part.key)
            if col is not None:
                wrong |= col.counts == 0
    return [int(i) for i in np.flatnonzero(wrong)]


def sample_of(features: Mapping[str, FeatureSpec], parsed: Mapping[str, Any]) -> Sample:
    """One record's sample from its ``parse_single_example`` output."""
    out: Sample = {}
    for name, spec in features.items():
        value = parsed[name]
        if isinstance(spec, (FixedLenFeature, RawFeature, ImageFeature, TensorFeature)):
            out[name] = _dense_one(value)
        elif isinstance(spec, FixedLenSequenceFeature):
            out[name] = _variable(value)
        elif isinstance(spec, VarLenFeature) or (
            isinstance(spec, RaggedFeature) and not isinstance(value, RaggedValue)
        ):
            out[name] = _variable(value.values if isinstance(value, SparseValue) else value)
        else:
            out[name] = value
    return out


def _variable(value: npt.NDArray[Any]) -> Any:
    """A variable-length value, typed so that collate functions pad it (see .varlen)."""
    return VarLenList(value.tolist()) if value.dtype == object else varlen_array(value)


def _dense_one(value: npt.NDArray[Any]) -> Any:
    if value.dtype == object:
        return value.tolist()  # bytes, or nested lists of bytes
    return value[()] if value.ndim == 0 else value


def _split(spec: FeatureSpec, value: Any, column: Column | None, n: int) -> list[Any]:
    if isinstance(spec, (ImageFeature, TensorFeature)):
        return list(value)  # one array's rows, or the list of differently shaped arrays
    if isinstance(spec, (FixedLenFeature, RawFeature)):
        arr: npt.NDArray[Any] = value
        # tolist: bytes (or nested lists of them); list(): numpy scalars or row views.
        return arr.tolist() if arr.dtype == object else list(arr)
    if isinstance(spec, FixedLenSequenceFeature):
        assert column is not None
        stride = int(np.prod(spec.shape, dtype=np.int64))
        rows = (column.counts // stride if stride else np.zeros(n, np.int64)).tolist()
        if value.dtype == object:
            nested = value.tolist()
            return [VarLenList(nested[i][:r]) for i, r in enumerate(rows)]
        tagged = varlen_array(value)
        return [tagged[i, :r] for i, r in enumerate(rows)]
    if isinstance(spec, VarLenFeature):
        sparse: SparseValue = value
        counts = np.bincount(sparse.indices[:, 0], minlength=n) if n else np.zeros(0, np.int64)
        return _cut(sparse.values, np.concatenate([[0], np.cumsum(counts)]))
    if isinstance(spec, SparseFeature):
        return _sparse_rows(value, n)
    ragged: RaggedValue = value
    if isinstance(ragged.values, RaggedValue):
        return [_ragged_rows(ragged.values, a, b) for a, b in _bounds(ragged.row_splits)]
    return _cut(ragged.values, ragged.row_splits)


def _bounds(splits: npt.NDArray[Any]) -> list[tuple[int, int]]:
    return list(itertools.pairwise(splits.tolist()))


def _cut(values: npt.NDArray[Any], splits: npt.NDArray[Any]) -> list[Any]:
    """Rows ``values[splits[i]:splits[i + 1]]``: arrays, or lists of bytes for strings
    (typed as variable-length values, see :mod:`.varlen`)."""
    if values.dtype == object:
        flat = values.tolist()
        return [VarLenList(flat[a:b]) for a, b in _bounds(splits)]
    # Slices of one typed view (np.split costs ~10x as much: a Python loop of its own).
    tagged = varlen_array(values)
    return [tagged[a:b] for a, b in _bounds(splits)]


def _ragged_rows(rt: RaggedValue | npt.NDArray[Any], a: int, b: int) -> Any:
    """Rows ``[a, b)`` of a ragged value, re-based (one record of a batched ragged)."""
    if not isinstance(rt, RaggedValue):
        return rt[a:b]
    splits = rt.row_splits[a : b + 1]
    lo, hi = int(splits[0]), int(splits[-1])
    return RaggedValue(_ragged_rows(rt.values, lo, hi), splits - splits[0])


def _sparse_rows(sparse: SparseValue, n: int) -> list[SparseValue]:
    counts = np.bincount(sparse.indices[:, 0], minlength=n) if n else np.zeros(0, np.int64)
    shape = sparse.dense_shape[1:]
    return [
        SparseValue(sparse.indices[a:b, 1:], sparse.values[a:b], shape.copy())
        for a, b in _bounds(np.concatenate([[0], np.cumsum(counts)]))
    ]
