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
``FixedLenSequenceFeature``            an array ``[rows, *shape]`` (strings: nested lists)
``VarLenFeature``                      a 1-D array (strings: a list of ``bytes``)
``RaggedFeature`` without partitions   a 1-D array (strings: a list of ``bytes``)
``RaggedFeature`` with partitions      a :class:`RaggedValue`, as ``parse_single_example``
``SparseFeature``                      a :class:`SparseValue`, as ``parse_single_example``
=====================================  ===================================================

A batch's samples are cut from the columnar batch the batch decoder produced (row slices
and one ``tolist`` per string column), never by parsing record by record (except small
batches, which ``ds[i]``'s decoder takes one record at a time, see
:mod:`tfrecord_engine.data.single`).
``default_collate`` batches the fixed-size kinds; :func:`collate` batches all of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError
from ..example.columns import Column
from ..example.specs import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RawFeature,
    SparseFeature,
    VarLenFeature,
)
from ..example.values import RaggedValue, SparseValue

__all__ = ["collate", "sample_of", "samples_of"]

Sample = dict[str, Any]


def samples_of(
    features: Mapping[str, FeatureSpec],
    batch: Mapping[str, Any],
    columns: Mapping[str, Column],
    n: int,
) -> list[Sample]:
    """Splits a decoded batch of ``n`` records (``parse_example`` output) into samples.

    Args:
        features: the specs the batch was decoded with.
        batch: the batch outputs (``BatchDecoder.assemble``).
        columns: the decoded columns of the same records (for sequence lengths).
        n: the number of records.
    """
    out: list[Sample] = [{} for _ in range(n)]
    for name, spec in features.items():
        # Filled a key at a time: about half the cost of a dict(zip(...)) per record.
        for sample, value in zip(out, _split(spec, batch[name], columns.get(name), n), strict=True):
            sample[name] = value
    return out


def sample_of(features: Mapping[str, FeatureSpec], parsed: Mapping[str, Any]) -> Sample:
    """One record's sample from its ``parse_single_example`` output."""
    out: Sample = {}
    for name, spec in features.items():
        value = parsed[name]
        if isinstance(spec, (FixedLenFeature, RawFeature, FixedLenSequenceFeature)):
            out[name] = _dense_one(value)
        elif isinstance(spec, VarLenFeature) or (
            isinstance(spec, RaggedFeature) and not isinstance(value, RaggedValue)
        ):
            flat = value.values if isinstance(value, SparseValue) else value
            out[name] = flat.tolist() if flat.dtype == object else flat
        else:
            out[name] = value
    return out


def _dense_one(value: npt.NDArray[Any]) -> Any:
    if value.dtype == object:
        return value.tolist()  # bytes, or nested lists of bytes
    return value[()] if value.ndim == 0 else value


def _split(spec: FeatureSpec, value: Any, column: Column | None, n: int) -> list[Any]:
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
            return [nested[i][:r] for i, r in enumerate(rows)]
        return [value[i, :r] for i, r in enumerate(rows)]
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
    """Rows ``values[splits[i]:splits[i + 1]]``: arrays, or lists of bytes for strings."""
    if values.dtype == object:
        flat = values.tolist()
        return [flat[a:b] for a, b in _bounds(splits)]
    return np.split(values, np.asarray(splits[1:-1], dtype=np.int64))


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


def collate(
    samples: Sequence[Any],
    *,
    pad_value: float | None = None,
    convert: Callable[[npt.NDArray[Any]], Any] | None = None,
) -> Any:
    """Batches per-record samples (``RecordDataset.__getitems__`` output), any feature kind.

    A ``collate_fn`` for ``torch.utils.data.DataLoader`` (or any loader) that needs no
    PyTorch: dicts are batched key by key; numeric values of one shape are stacked into
    one numpy array; ``bytes`` and lists of ``bytes`` stay a list (one item per record);
    numeric arrays of different shapes (``VarLenFeature``, ``RaggedFeature``,
    ``FixedLenSequenceFeature``) become a list of arrays, or with ``pad_value`` one array
    padded at the end of every dimension to the batch's largest shape;
    :class:`RaggedValue`/:class:`SparseValue` values stay a list.

    Args:
        samples: one sample per record, all of the same structure.
        pad_value: pad numeric values of different shapes to one array with this value
            instead of returning a list of arrays.
        convert: applied to every numeric array of the result, e.g. ``torch.from_numpy``
            for tensors (it must pickle for spawned DataLoader workers).

    Raises:
        InvalidArgumentError: no samples, or samples of different structure.

    Example:
        >>> import numpy as np
        >>> batch = collate([{"x": np.int64(1), "v": np.array([1, 2])},
        ...                  {"x": np.int64(2), "v": np.array([3])}], pad_value=0)
        >>> batch["x"].tolist(), batch["v"].tolist()
        ([1, 2], [[1, 2], [3, 0]])
    """
    if len(samples) == 0:
        raise InvalidArgumentError("collate needs at least one sample")
    return _collate(list(samples), pad_value, convert)


def _collate(
    samples: list[Any], pad_value: float | None, convert: Callable[[npt.NDArray[Any]], Any] | None
) -> Any:
    first = samples[0]
    if isinstance(first, Mapping):
        keys = list(first)
        if any(not isinstance(s, Mapping) or list(s) != keys for s in samples):
            raise InvalidArgumentError(f"samples have different keys (the first has {keys})")
        return {k: _collate([s[k] for s in samples], pad_value, convert) for k in keys}
    if not all(_numeric(s) for s in samples):
        return samples  # bytes, lists of bytes, RaggedValue, SparseValue
    arrays = [np.asarray(s) for s in samples]
    if len({a.shape for a in arrays}) == 1 and len({a.dtype for a in arrays}) == 1:
        out = np.stack(arrays)
    elif pad_value is None:
        return [convert(a) for a in arrays] if convert is not None else arrays
    else:
        out = _pad(arrays, pad_value)
    return convert(out) if convert is not None else out


def _numeric(value: Any) -> bool:
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype != object
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _pad(arrays: list[npt.NDArray[Any]], pad_value: float) -> npt.NDArray[Any]:
    if len({a.ndim for a in arrays}) != 1:
        raise InvalidArgumentError(
            f"cannot pad values of different ranks {sorted({a.ndim for a in arrays})}"
        )
    shape = tuple(max(dims) for dims in zip(*(a.shape for a in arrays), strict=True))
    out = np.full((len(arrays), *shape), pad_value, dtype=np.result_type(*arrays))
    for row, a in zip(out, arrays, strict=True):
        row[tuple(slice(0, d) for d in a.shape)] = a
    return out
