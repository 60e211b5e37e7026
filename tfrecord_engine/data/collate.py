"""Batching per-record samples: :func:`collate`, :class:`PaddedValue`, and PyTorch's
``default_collate`` taught the variable-length kinds.

What a batch of samples becomes (``samples`` from ``RecordDataset.__getitems__``):

=========================================  ============================================
one record's value                         the batch's value
=========================================  ============================================
a number, or an array of the spec's shape  one array ``[batch, *shape]`` (stacked)
``bytes``, a list of ``bytes``             a list, one item per record
a variable-length value (``VarLenFeature``,  a :class:`PaddedValue`: ``values`` padded
``RaggedFeature``, ``FixedLenSequence-``   with ``pad_value`` to the batch's longest,
``Feature``, ``SparseFeature``)            ``lengths``, and a ``mask``
strings of a variable-length feature       a list of lists of ``bytes``
an image (``ImageFeature``)                stacked when all have one shape, else a list
a tensor (a transform's output)            stacked when all have one shape, else a list
a tuple (a transform's output)             a tuple of batches, one per position
=========================================  ============================================

Variable-length values are recognised by their type (see :mod:`.varlen`), so a batch
of them is padded even when its lengths agree: the batch's form depends on the spec,
never on which records it holds.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError
from ..example.values import RaggedValue, SparseValue
from ..example.varlen import VARIABLE, VarLenArray, VarLenList
from .formats import (
    auto_format,
    bytes_at,
    contents,
    framework,
    in_loader_worker,
    joint_torch,
    normalize_format,
    walk,
)
from .formats import convert as to_format

__all__ = ["PaddedValue", "WorkerSample", "collate", "teach_default_collate", "worker_samples"]


class PaddedValue(NamedTuple):
    """A batch of variable-length values as one padded array, with lengths and a mask.

    Attributes:
        values: ``[batch, *longest]``: each record's values at the start of its row,
            the rest ``pad_value``.
        lengths: int64 ``[batch]``: each record's size in the first dimension (values
            of a ``VarLenFeature`` or flat ``RaggedFeature``, rows of a
            ``FixedLenSequenceFeature`` or of a ``RaggedFeature`` with partitions,
            values set in a ``SparseFeature``).
        mask: bool, the shape of ``values``: True where a value is the record's own
            (exact for nested ragged and sparse values too).

    Unpack it (``values, lengths, mask = batch["tokens"]``) or use its fields; it is a
    named tuple, so ``pin_memory``, ``prefetch_to_device`` and ``tfe.torch.to_torch``
    move all three.
    """

    values: Any
    lengths: Any
    mask: Any


def collate(
    samples: Sequence[Any],
    *,
    format: str | None = "auto",
    pad_value: float | None = 0,
    convert: Callable[[npt.NDArray[Any]], Any] | None = None,
) -> Any:
    """Batches per-record samples (``RecordDataset.__getitems__`` output) of any feature kind.

    A ``collate_fn`` for ``torch.utils.data.DataLoader`` (or any loader): dicts are
    batched key by key; numbers and arrays of one shape are stacked; ``bytes`` stay
    lists; variable-length values (``VarLenFeature``, ``RaggedFeature``,
    ``FixedLenSequenceFeature``, ``SparseFeature``) become a :class:`PaddedValue`
    (``values`` padded with ``pad_value``, ``lengths``, ``mask``); see the module
    docstring for every kind.

    Args:
        samples: one sample per record, all of the same structure.
        format: ``"auto"`` (default): PyTorch tensors when PyTorch is importable, else
            numpy; or ``"torch"``, ``"numpy"``, ``"jax"``.
        pad_value: the padding of variable-length values (it must fit their dtype);
            ``None`` keeps them unpadded: a list of one array (tensor) per record, or of
            one ``RaggedValue``/``SparseValue`` per record.
        convert: applied to every numeric numpy array of the (numpy) result instead of
            ``format``, e.g. ``torch.from_numpy``; it must pickle for spawned
            DataLoader workers.

    Raises:
        InvalidArgumentError: no samples, samples of different structure, or a
            ``pad_value`` the values' dtype cannot hold.
        MissingDependencyError: ``format`` names a framework that is not installed.

    Example:
        >>> import numpy as np
        >>> from tfrecord_engine.example.varlen import varlen_array
        >>> batch = collate([{"x": np.int64(1), "v": varlen_array(np.array([1, 2]))},
        ...                  {"x": np.int64(2), "v": varlen_array(np.array([3]))}],
        ...                 format="numpy")
        >>> batch["x"].tolist(), batch["v"].values.tolist(), batch["v"].lengths.tolist()
        ([1, 2], [[1, 2], [3, 0]], [2, 1])
    """
    if convert is not None and format not in ("auto", "numpy", None):
        raise InvalidArgumentError(f"pass convert= or format={format!r}, not both")
    fmt = "numpy" if convert is not None else auto_format() if format == "auto" else format
    fmt = normalize_format(fmt)
    if len(samples) == 0:
        raise InvalidArgumentError("collate needs at least one sample")
    out = _collate(list(samples), pad_value)
    if convert is not None:
        return walk(out, convert)
    return to_format(out, fmt)


def _collate(samples: list[Any], pad: float | None) -> Any:
    first = samples[0]
    if isinstance(first, Mapping):
        keys = list(first)
        if any(not isinstance(s, Mapping) or list(s) != keys for s in samples):
            raise InvalidArgumentError(f"samples have different keys (the first has {keys})")
        return {k: _collate([s[k] for s in samples], pad) for k in keys}
    if isinstance(first, VarLenArray):
        arrays = [np.asarray(s) for s in samples]
        return arrays if pad is None else _pad_arrays(arrays, pad)
    if isinstance(first, VarLenList):
        return [list(s) for s in samples]
    if isinstance(first, (RaggedValue, SparseValue)):
        if pad is None:
            return samples
        return _ragged(samples, pad) if isinstance(first, RaggedValue) else _sparse(samples, pad)
    if _is_tensor(first):
        torch = framework("torch")
        if len({(tuple(t.shape), t.dtype) for t in samples}) == 1:
            return torch.stack(samples)
        return samples
    if isinstance(first, tuple):
        if any(not isinstance(s, tuple) or len(s) != len(first) for s in samples):
            raise InvalidArgumentError("samples are tuples of different lengths")
        columns = [_collate(list(c), pad) for c in zip(*samples, strict=True)]
        return type(first)(*columns) if hasattr(first, "_fields") else tuple(columns)
    if not all(_numeric(s) for s in samples):
        return samples  # bytes, lists of bytes, anything else: one item per record
    arrays = [np.asarray(s) for s in samples]
    if len({(a.shape, a.dtype) for a in arrays}) == 1:
        return np.stack(arrays)
    return arrays  # images (or a transform's arrays) of different shapes


def _is_tensor(value: object) -> bool:
    return type(value).__module__.split(".", 1)[0] == "torch" and hasattr(value, "shape")


def _numeric(value: Any) -> bool:
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.kind in "biufc"
    return isinstance(value, (int, float, bool))


def _full(shape: tuple[int, ...], pad: float, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    with np.errstate(all="ignore"):
        try:
            fill = np.asarray(pad).astype(dtype)
        except (OverflowError, ValueError):
            fill = None
    if fill is None or fill != pad:
        raise InvalidArgumentError(
            f"pad_value={pad!r} does not fit values of dtype {dtype}: pass one that does"
        )
    return np.full(shape, fill, dtype)


def _pad_arrays(arrays: list[npt.NDArray[Any]], pad: float) -> PaddedValue:
    ranks = {a.ndim for a in arrays}
    if len(ranks) != 1 or 0 in ranks:
        raise InvalidArgumentError(f"cannot pad values of different ranks {sorted(ranks)}")
    n = len(arrays)
    dtype = np.result_type(*arrays)
    lengths = np.fromiter((a.shape[0] for a in arrays), np.int64, n)
    inner = {a.shape[1:] for a in arrays}
    if len(inner) == 1:
        # One run of rows per record: a mask of rows, one assignment for all values.
        (rest,) = inner
        rows = np.arange(int(lengths.max())) < lengths[:, None]
        values = _full((n, rows.shape[1], *rest), pad, dtype)
        values[rows] = np.concatenate(arrays)
        mask = np.broadcast_to(rows.reshape(*rows.shape, *([1] * len(rest))), values.shape)
        return PaddedValue(values, lengths, mask.copy())
    shape = tuple(max(d) for d in zip(*(a.shape for a in arrays), strict=True))
    values = _full((n, *shape), pad, dtype)
    mask = np.zeros(values.shape, np.bool_)
    for i, a in enumerate(arrays):
        at: tuple[int | slice, ...] = (i, *(slice(0, d) for d in a.shape))
        values[at] = a
        mask[at] = True
    return PaddedValue(values, lengths, mask)


def _ragged(samples: list[Any], pad: float) -> Any:
    flat = [np.asarray(s.flat_values) for s in samples]
    if flat[0].dtype == object:
        return [s.to_list() for s in samples]  # strings: nested lists of bytes
    fast = _ragged_by_coordinates(samples, flat, pad)
    if fast is not None:
        return fast
    nested = [s.to_list() for s in samples]
    shape: list[int] = []
    for rows in nested:
        _max_shape(rows, 0, shape)
    depth = 0
    inner: Any = samples[0]
    while isinstance(inner, RaggedValue):
        depth, inner = depth + 1, inner.values
    # (Rows, levels and the values' own dimensions, whichever records the batch holds.)
    shape += [0] * max(0, depth + np.ndim(flat[0]) - len(shape))
    values = _full((len(samples), *shape), pad, np.result_type(*flat))
    mask = np.zeros(values.shape, np.bool_)
    for i, rows in enumerate(nested):
        _put(values, mask, rows, (i,))
    lengths = np.array([len(s.row_splits) - 1 for s in samples], np.int64)
    return PaddedValue(values, lengths, mask)


def _ragged_by_coordinates(
    samples: list[Any], flat: list[npt.NDArray[Any]], pad: float
) -> PaddedValue | None:
    """:func:`_ragged`'s padding with numpy: each flat value's position in the padded
    batch from the row splits of all samples at once, one assignment for all (the
    nested lists cost ~0.3 µs a value). ``None`` (the nested lists decide) unless every
    sample is well formed: 1-D flat values, as many ragged levels as the others, every
    level's splits from 0, non-decreasing, ending at the size of the level below."""
    levels_of: list[list[npt.NDArray[Any]]] = []
    for s, values in zip(samples, flat, strict=True):
        levels: list[npt.NDArray[Any]] = []
        v = s
        while isinstance(v, RaggedValue):
            levels.append(np.asarray(v.row_splits))
            v = v.values
        levels_of.append(levels)
        if values.ndim != 1 or len(levels) != len(levels_of[0]):
            return None
    n = len(samples)
    depth = len(levels_of[0])
    sizes = np.array([len(values) for values in flat], np.int64)  # the level below's
    starts: list[npt.NDArray[np.int64]] = [np.zeros(0, np.int64)] * depth  # row starts
    rows_of: list[npt.NDArray[np.int64]] = [np.zeros(0, np.int64)] * depth  # row of item
    counts_of: list[npt.NDArray[np.int64]] = [np.zeros(0, np.int64)] * depth
    nrows = sizes
    for d in reversed(range(depth)):
        parts = [levels[d] for levels in levels_of]
        if any(not len(splits) for splits in parts):
            return None
        joined = np.concatenate(parts).astype(np.int64, copy=False)
        ends = np.cumsum([len(splits) for splits in parts]) - 1
        firsts = ends - np.array([len(splits) - 1 for splits in parts], np.int64)
        if joined[firsts].any() or not np.array_equal(joined[ends], nrows):
            return None
        keep = np.ones(len(joined), np.bool_)
        keep[ends] = False
        counts = np.diff(joined)[keep[:-1]]
        if (counts < 0).any():
            return None
        counts_of[d] = counts
        starts[d] = np.cumsum(counts) - counts
        rows_of[d] = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        nrows = np.array([len(splits) - 1 for splits in parts], np.int64)
    # The padded shape: the rows, then a dimension per level (0 where no record has
    # any), so that its rank is the spec's whichever records the batch holds.
    shape = [int(nrows.max(initial=0))]
    shape += [int(counts_of[d].max(initial=0)) for d in range(depth)]
    values = _full((n, *shape), pad, np.result_type(*flat))
    mask = np.zeros(values.shape, np.bool_)
    if sizes.sum():
        ids = np.arange(int(sizes.sum()), dtype=np.int64)
        at: list[npt.NDArray[np.int64]] = []
        for d in reversed(range(depth)):
            row = rows_of[d][ids]
            at.insert(0, ids - starts[d][row])
            ids = row
        first_row = np.cumsum(nrows) - nrows
        sample = np.repeat(np.arange(n, dtype=np.int64), nrows)[ids]
        where = (sample, ids - first_row[sample], *at)
        values[where] = np.concatenate(flat)
        mask[where] = True
    return PaddedValue(values, nrows.astype(np.int64), mask)


def _max_shape(value: Any, depth: int, shape: list[int]) -> None:
    if not isinstance(value, list):
        return
    if len(shape) <= depth:
        shape.append(0)
    shape[depth] = max(shape[depth], len(value))
    for item in value:
        _max_shape(item, depth + 1, shape)


def _put(
    values: npt.NDArray[Any], mask: npt.NDArray[np.bool_], rows: Any, at: tuple[int, ...]
) -> None:
    if isinstance(rows, list):
        for j, item in enumerate(rows):
            _put(values, mask, item, (*at, j))
    else:
        values[at] = rows
        mask[at] = True


def _sparse(samples: list[Any], pad: float) -> Any:
    if any(np.asarray(s.values).dtype == object for s in samples):
        return samples  # strings: one SparseValue per record
    shape = np.max(np.stack([np.asarray(s.dense_shape, np.int64) for s in samples]), axis=0)
    values = _full(
        (len(samples), *shape.tolist()), pad, np.result_type(*(s.values for s in samples))
    )
    mask = np.zeros(values.shape, np.bool_)
    for i, s in enumerate(samples):
        if len(s.values):
            at = (np.full(len(s.values), i), *np.asarray(s.indices).T)
            values[at] = s.values
            mask[at] = True
    lengths = np.array([len(s.values) for s in samples], np.int64)
    return PaddedValue(values, lengths, mask)


# ---- PyTorch's default_collate -------------------------------------------------------

_TAUGHT: list[bool] = []


def teach_default_collate() -> None:
    """Makes PyTorch's ``default_collate`` batch the variable-length kinds as
    :func:`collate` does (a :class:`PaddedValue` of tensors), once PyTorch is loaded.

    ``default_collate`` dispatches on ``default_collate_fn_map`` (PyTorch's documented
    way to extend it); only this package's own types are added, so nothing else
    changes. Without it a ``VarLenFeature`` failed inside ``torch.stack`` with a message
    naming neither the feature nor a way out. PyTorch is never imported here: the
    datasets call this as they hand out samples, in the process (DataLoader worker)
    that collates them, where PyTorch is already loaded.
    """
    if _TAUGHT:
        return
    module = sys.modules.get("torch.utils.data._utils.collate")
    if module is None:
        return
    table = getattr(module, "default_collate_fn_map", None)
    if isinstance(table, dict):
        for kind in VARIABLE:
            table.setdefault(kind, _default_collate_variable)
        table.setdefault(WorkerSample, _default_collate_samples)
    _TAUGHT.append(True)


def _default_collate_variable(batch: Sequence[Any], *, collate_fn_map: object = None) -> Any:
    del collate_fn_map  # (the values inside are ours: no other type to dispatch)
    return collate(batch, format="torch")


class WorkerSample(dict):  # type: ignore[type-arg]  # (a dict of any feature's values)
    """A sample as ``__getitems__`` returns it in a ``DataLoader`` worker process: a plain
    ``dict`` of the same items, whose type tells ``default_collate`` (taught by
    :func:`teach_default_collate`) to batch the samples as it would plain dicts but with
    every number cut from one block of memory: the batch then crosses to the main
    process in one shared-memory transfer instead of one per tensor (~0.2 ms each; see
    :func:`~.formats.joint_torch`). The main process receives a plain ``dict``."""

    __slots__ = ()


def worker_samples(samples: list[Any]) -> list[Any]:
    """``samples`` as :class:`WorkerSample` s where this is a ``DataLoader`` worker and
    PyTorch's ``default_collate`` is taught them; as they are elsewhere."""
    if not _TAUGHT or not in_loader_worker():
        return samples
    return [WorkerSample(s) if type(s) is dict else s for s in samples]


def _default_collate_samples(batch: Sequence[Any], *, collate_fn_map: Any = None) -> Any:
    """``default_collate`` of :class:`WorkerSample` s: each key batched as
    ``default_collate`` batches it (numbers and arrays of one shape stacked, ``bytes``
    listed, the variable-length kinds padded as :func:`collate` pads them; any other
    value by ``default_collate`` itself), the numeric results then cut from one block."""
    torch_collate = sys.modules["torch.utils.data._utils.collate"].collate
    out: dict[str, Any] = {}
    for key in batch[0]:
        values = [s[key] for s in batch]
        first = values[0]
        kind = type(first)
        if kind in VARIABLE:
            out[key] = _collate(values, 0)
        elif isinstance(first, np.generic) and first.dtype.kind in "biufc":
            out[key] = np.array(values)  # (as torch.as_tensor makes them: one dtype)
        elif (
            kind is np.ndarray
            and first.dtype.kind in "biufc"
            and all(type(v) is np.ndarray and v.shape == first.shape for v in values)
            and len({v.dtype for v in values}) == 1
        ):
            out[key] = np.stack(values)
        elif kind is bytes and all(type(v) is bytes for v in values):
            out[key] = _packed(values)
        else:
            out[key] = torch_collate(values, collate_fn_map=collate_fn_map)
    got = joint_torch(out, shared=True)
    for key, value in got.items():
        if isinstance(value, _PackedBytes):
            got[key] = BytesColumn(value.values, value.data, value.ends)
    return got


class _PackedBytes(NamedTuple):
    """A batch's ``bytes`` values with their contents joined (``data``, ``uint8``) and
    where each ends (``ends``): :func:`joint_torch` cuts both from the batch's block."""

    data: Any
    ends: Any
    values: list[bytes]


def _packed(values: list[bytes]) -> _PackedBytes:
    ends = np.cumsum(np.fromiter(map(len, values), np.int64, len(values)))
    return _PackedBytes(contents(values), ends, values)


class BytesColumn(list):  # type: ignore[type-arg]  # (of bytes)
    """A batch's ``bytes`` values as a ``DataLoader`` worker hands them over: a plain
    list of them, whose contents cross to the main process in the batch's block of
    shared memory (see :class:`WorkerSample`) rather than through the worker's pipe,
    and arrive there as a plain ``list`` of ``bytes``."""

    __slots__ = ("_data", "_ends")

    def __init__(self, values: list[bytes], data: Any, ends: Any) -> None:
        super().__init__(values)
        self._data = data  # (uint8 tensors: views of the batch's block)
        self._ends = ends

    def __reduce__(self) -> tuple[Any, ...]:
        return (_bytes_from_block, (self._data, self._ends))


def _bytes_from_block(data: Any, ends: Any) -> list[bytes]:
    """The values of a :class:`BytesColumn` in the receiving process."""
    return bytes_at(data.numpy(), ends.tolist())
