"""Building :class:`RaggedValue` outputs for ``RaggedFeature`` with TensorFlow's semantics.

TensorFlow's parse op returns, per ragged key, the concatenated values and per-record row
splits; ``tf.io`` then applies the partitions innermost first
(``parsing_config._add_batched_ragged_partition`` / ``_add_ragged_partition``). This
module re-states those rules with numpy. As in TensorFlow, nothing is checked unless
``validate=True``; our only extra checks stop numpy from failing on impossible input
(negative row ids, a zero uniform length with values).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ExampleParseError
from .specs import RaggedFeature, RowLengths, RowLimits, RowSplits, RowStarts, UniformRowLength
from .values import RaggedValue

__all__ = ["batched_ragged", "single_ragged"]

Splits = npt.NDArray[np.integer[Any]]
Ragged = npt.NDArray[Any] | RaggedValue


def _nrows(values: Ragged) -> int:
    if isinstance(values, RaggedValue):
        return len(values.row_splits) - 1
    return int(values.shape[0])


def _fail(name: str, message: str) -> ExampleParseError:
    return ExampleParseError(f"Feature {name}: {message}", key=name)


def _make(values: Ragged, splits: Splits, name: str, validate: bool) -> RaggedValue:
    if validate:
        ok = (
            len(splits) >= 1
            and int(splits[0]) == 0
            and bool(np.all(np.diff(splits) >= 0))
            and int(splits[-1]) == _nrows(values)
        )
        if not ok:
            raise _fail(
                name,
                "Arguments to _from_row_partition do not form a valid RaggedTensor "
                f"(row_splits {splits.tolist()} for {_nrows(values)} values)",
            )
    return RaggedValue(values, splits)


def _check_starts(starts: Splits, nvals: int, name: str, validate: bool) -> None:
    """TensorFlow's ``from_row_starts`` checks (vacuous for empty starts)."""
    if (
        validate
        and starts.size
        and (int(starts[0]) != 0 or bool(np.any(np.diff(starts) < 0)) or int(starts[-1]) > nvals)
    ):
        raise _fail(
            name,
            "Arguments to _from_row_partition do not form a valid RaggedTensor "
            f"(row starts {starts.tolist()} for {nvals} values)",
        )


def _reshape(values: npt.NDArray[Any], length: int, name: str) -> npt.NDArray[Any]:
    inner = int(np.prod(values.shape[1:])) * length
    if inner == 0:
        if values.size:
            raise _fail(
                name,
                f"Input to reshape is a tensor with {values.size} values, "
                "but the requested shape has 0",
            )
        return values.reshape((0, length, *values.shape[1:]))
    if values.size % inner:
        raise _fail(
            name,
            f"Input to reshape is a tensor with {values.size} values, but the requested "
            f"shape requires a multiple of {inner}",
        )
    return values.reshape((-1, length, *values.shape[1:]))


def _uniform(
    values: RaggedValue, length: int, dtype: type[np.integer[Any]], name: str, validate: bool
) -> RaggedValue:
    """Rows of ``length`` of the ragged ``values``' rows. With ``validate`` their count
    must be a multiple of ``length`` (TensorFlow's ``from_uniform_row_length`` check);
    without, as in TensorFlow's eager parse, the rows that do not fill one are left
    out."""
    nvals = _nrows(values)
    nrows = nvals // length if length else 0
    if validate and nrows * length != nvals:
        raise _fail(
            name, f"uniform_row_length={length} times nrows={nrows} must equal nvals={nvals}"
        )
    return RaggedValue(values, np.arange(nrows + 1, dtype=dtype) * length)


def _rowids_splits(ids: Splits, nvals: int, name: str) -> Splits:
    """Row splits from value row ids (``nrows = ids[-1] + 1`` as in TensorFlow)."""
    if ids.size and int(ids.min()) < 0:
        raise _fail(name, f"value row ids must be non-negative, got {int(ids.min())}")
    nrows = int(ids[-1]) + 1 if ids.size else 0
    if ids.size != nvals:
        raise _fail(name, f"{ids.size} value row ids for {nvals} values")
    counts = np.bincount(ids.astype(np.int64), minlength=nrows)[:nrows]
    return np.concatenate([[0], np.cumsum(counts)]).astype(ids.dtype)


def single_ragged(
    name: str,
    spec: RaggedFeature,
    values: npt.NDArray[Any],
    partitions: dict[str, npt.NDArray[np.int64]],
) -> Ragged:
    """One record's ragged output: ``values`` partitioned (innermost partition first)."""
    dtype = np.int64 if spec.row_splits_dtype == "int64" else np.int32
    rt: Ragged = values
    for part in reversed(spec.partitions):
        if isinstance(rt, RaggedValue) and rt.row_splits.size == 0:
            # Empty row splits mean -1 rows; TensorFlow's shape check fails as soon as
            # such a ragged value is partitioned again.
            raise _fail(name, "row splits are empty: Dimension -1 must be >= 0")
        if isinstance(part, UniformRowLength):
            if isinstance(rt, RaggedValue):
                rt = _uniform(rt, part.length, dtype, name, spec.validate)
            else:
                rt = _reshape(rt, part.length, name)
            continue
        p: npt.NDArray[Any] = partitions[part.key].astype(dtype)
        n = _nrows(rt)
        if isinstance(part, RowSplits):
            splits = p
        elif isinstance(part, RowLengths):
            splits = np.concatenate([[0], np.cumsum(p)]).astype(dtype)
        elif isinstance(part, RowStarts):
            _check_starts(p, n, name, spec.validate)
            rt = RaggedValue(rt, np.concatenate([p, [n]]).astype(dtype))
            continue
        elif isinstance(part, RowLimits):
            splits = np.concatenate([[0], p]).astype(dtype)
        else:
            splits = _rowids_splits(p, n, name)
        rt = _make(rt, splits, name, spec.validate)
    return rt


def batched_ragged(
    name: str,
    spec: RaggedFeature,
    values: RaggedValue,
    partitions: dict[str, RaggedValue],
) -> RaggedValue:
    """A batch's ragged output; ``values``/``partitions`` are ``[batch, None]`` ragged."""
    dtype = values.row_splits.dtype.type
    rt = values
    for part in reversed(spec.partitions):
        if isinstance(part, UniformRowLength):
            length = part.length
            outer = rt.row_splits // length if length else np.zeros_like(rt.row_splits)
            if isinstance(rt.values, RaggedValue):
                inner: Ragged = _uniform(rt.values, length, dtype, name, spec.validate)
            else:
                inner = _reshape(rt.values, length, name)
            rt = _make(inner, outer, name, spec.validate)
            continue
        pt = partitions[part.key]
        pvals = np.asarray(pt.values).astype(dtype)
        psplits = pt.row_splits.astype(dtype)
        if isinstance(part, RowSplits):
            # Drop the leading split of every non-empty row ("partition_t[:, 1:]").
            lengths = np.diff(psplits)
            keep = np.ones(pvals.size, dtype=bool)
            keep[psplits[:-1][lengths > 0]] = False
            pvals = pvals[keep]
            psplits = np.concatenate([[0], np.cumsum(np.maximum(lengths - 1, 0))]).astype(dtype)
        row_lengths = np.diff(psplits)
        nvals = _nrows(rt.values)
        if isinstance(part, (RowSplits, RowLimits, RowStarts)):
            # TensorFlow repeats each row's start by the partition's row lengths, which
            # broadcast when there is one: one empty partition row fits any row count.
            broadcast = len(row_lengths) == 1 and not row_lengths[0]
            if len(row_lengths) != len(rt.row_splits) - 1 and not broadcast:
                raise _fail(name, "values and partitions have different batch sizes")
            adjusted = pvals + np.repeat(rt.row_splits[:-1], row_lengths).astype(dtype)
            if isinstance(part, RowStarts):
                _check_starts(adjusted, nvals, name, spec.validate)
                inner = RaggedValue(rt.values, np.concatenate([adjusted, [nvals]]).astype(dtype))
                rt = _make(inner, psplits, name, spec.validate)
                continue
            splits = np.concatenate([[0], adjusted]).astype(dtype)
            rt = _make(_make(rt.values, splits, name, spec.validate), psplits, name, spec.validate)
        elif isinstance(part, RowLengths):
            splits = np.concatenate([[0], np.cumsum(pvals)]).astype(dtype)
            rt = _make(_make(rt.values, splits, name, spec.validate), psplits, name, spec.validate)
        else:
            nrows = np.zeros(len(row_lengths), dtype=dtype)
            for i, (a, b) in enumerate(itertools.pairwise(psplits)):
                if b > a:
                    nrows[i] = max(int(pvals[a:b].max()) + 1, 0)
            offsets = (np.cumsum(nrows) - nrows).astype(dtype)
            adjusted = pvals + np.repeat(offsets, row_lengths).astype(dtype)
            inner_splits = _rowids_splits(adjusted, nvals, name)
            outer = np.concatenate([[0], np.cumsum(nrows)]).astype(dtype)
            rt = _make(
                _make(rt.values, inner_splits, name, spec.validate), outer, name, spec.validate
            )
    return rt
