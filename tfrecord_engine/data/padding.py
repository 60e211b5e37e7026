"""Padded batches: ``tf.data``'s ``padded_batch`` for parsed batches.

A parsed batch holds a ``VarLenFeature`` as a :class:`~tfrecord_engine.SparseValue`
and a ``RaggedFeature`` as a :class:`~tfrecord_engine.RaggedValue` (TensorFlow's forms).
:func:`pad_batch` turns each into a :class:`~tfrecord_engine.PaddedValue`: one dense
array padded to the batch's longest record (or to a fixed size, as ``padded_shapes``
does in ``tf.data``), each record's length, and a mask. ``RecordDataset.batches(...,
padded=...)`` applies it to every batch.

A record longer than a fixed size is an error naming the feature and the record:
nothing is ever cut off (``tf.data``'s ``padded_batch`` raises there too; its
``RaggedTensor.to_tensor(shape=...)`` truncates silently, which this never does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TypeAlias

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError
from ..example.values import RaggedValue, SparseValue, filled
from .collate import PaddedValue

__all__ = ["PadShape", "Padded", "check_padded", "pad_batch"]

#: A padded size: ``None`` pads to the batch's longest record, an int to that size;
#: a tuple gives one per variable dimension of a nested ``RaggedFeature``.
PadShape: TypeAlias = "int | tuple[int | None, ...] | None"
#: ``batches(padded=...)``: ``True`` pads every variable-length feature to the batch's
#: longest record; a mapping gives some features a size (the others: the longest).
Padded: TypeAlias = "bool | Mapping[str, PadShape]"


def check_padded(padded: object, pad_value: object) -> None:
    """Raises :class:`InvalidArgumentError` for a malformed ``padded``/``pad_value``
    before any record is read."""
    if isinstance(padded, bool) or padded is None:
        sizes: Mapping[Any, Any] = {}
    elif isinstance(padded, Mapping):
        sizes = padded
    else:
        raise InvalidArgumentError(
            f"padded={padded!r}: pass True (every variable-length feature padded to the "
            "batch's longest record) or a dict of sizes such as {'tokens': 128}"
        )
    for name, size in sizes.items():
        _dims(str(name), size)  # raises for a malformed size
    if isinstance(pad_value, Mapping):
        for name, value in pad_value.items():
            _check_scalar(f"pad_value[{name!r}]", value)
    else:
        _check_scalar("pad_value", pad_value)


def _check_scalar(what: str, value: object) -> None:
    if isinstance(value, (bool, int, float, bytes, np.generic)):
        return
    raise InvalidArgumentError(
        f"{what}={value!r}: pass a number (or bytes for a string feature), as "
        "tf.data's padding_values"
    )


def _dims(name: str, size: object) -> tuple[int | None, ...]:
    items = size if isinstance(size, tuple) else (size,)
    for d in items:
        if d is not None and (isinstance(d, bool) or not isinstance(d, (int, np.integer))):
            raise InvalidArgumentError(
                f"padded[{name!r}]={size!r}: a size is an int, None (the batch's longest) "
                "or a tuple of them for nested ragged features"
            )
        if d is not None and int(d) < 0:
            raise InvalidArgumentError(
                f"padded[{name!r}]={size!r}: sizes are >= 0 (None pads to the longest)"
            )
    return tuple(None if d is None else int(d) for d in items)


def pad_batch(
    batch: Mapping[str, Any],
    padded: Padded = True,
    pad_value: Any = 0,
    *,
    indices: Sequence[int] | npt.NDArray[np.int64] | None = None,
) -> dict[str, Any]:
    """``batch`` with its variable-length features as :class:`PaddedValue`.

    Args:
        batch: a parsed batch (``parse_example`` output, a batch of ``batches()``).
        padded: ``True``: every ``SparseValue``/``RaggedValue`` padded to the batch's
            longest record; a mapping of feature name to a size (``None`` for the
            longest; a tuple for each variable dimension of a nested ragged feature):
            the features named padded to that size, the other variable-length
            features to the longest. ``False`` returns ``batch`` unchanged.
        pad_value: the padding: one number for every numeric feature (string
            features then pad with ``b""``), or a mapping of feature name to value
            (bytes for a string feature; features left out pad with 0 or ``b""``).
        indices: the records' dataset indices, to name a record in an error.

    Raises:
        InvalidArgumentError: a feature named in ``padded`` is not in the batch or
            not variable-length; a record longer than its feature's size; a
            ``pad_value`` its feature's dtype cannot hold.

    Example:
        >>> import numpy as np
        >>> tokens = SparseValue(np.array([[0, 0], [0, 1], [1, 0]]), np.array([7, 8, 9]),
        ...                      np.array([2, 2]))
        >>> p = pad_batch({"tokens": tokens}, {"tokens": 4})["tokens"]
        >>> p.values.tolist(), p.lengths.tolist()
        ([[7, 8, 0, 0], [9, 0, 0, 0]], [2, 1])
    """
    if padded is False:
        return dict(batch)
    check_padded(padded, pad_value)
    sizes: Mapping[str, PadShape] = padded if isinstance(padded, Mapping) else {}
    for name in sizes:
        if name not in batch:
            raise InvalidArgumentError(
                f"padded names {name!r}, which is not a feature of the batch "
                f"(its features: {sorted(batch)})"
            )
        if not isinstance(batch[name], (SparseValue, RaggedValue)):
            raise InvalidArgumentError(
                f"padded names {name!r}, which is not variable-length (only VarLenFeature, "
                "RaggedFeature and SparseFeature values are padded): leave it out"
            )
    out: dict[str, Any] = {}
    for name, value in batch.items():
        if not isinstance(value, (SparseValue, RaggedValue)):
            out[name] = value
            continue
        dims = _dims(name, sizes.get(name))
        own = isinstance(pad_value, Mapping) and name in pad_value
        fill = pad_value.get(name, 0) if isinstance(pad_value, Mapping) else pad_value
        pad = _Pad(fill, own)
        if isinstance(value, SparseValue):
            out[name] = _pad_sparse(name, value, dims, pad, indices)
        else:
            out[name] = _pad_ragged(name, value, dims, pad, indices)
    return out


class _Pad(NamedTuple):
    value: Any
    own: bool  # given for this feature by name (else the batch-wide pad_value)


def _fill(name: str, given: _Pad, dtype: np.dtype[Any]) -> Any:
    pad = given.value
    if dtype.kind == "O":
        if isinstance(pad, bytes):
            return pad
        if not given.own:
            return b""  # a batch-wide number pads the numeric features only
        raise InvalidArgumentError(
            f"pad_value {pad!r} for string feature {name!r}: pass bytes, e.g. "
            f"pad_value={{{name!r}: b''}}"
        )
    if isinstance(pad, bytes):
        if not given.own:
            return np.zeros((), dtype)  # a batch-wide bytes pads the string features only
        raise InvalidArgumentError(f"pad_value {pad!r} for numeric feature {name!r}: pass a number")
    with np.errstate(all="ignore"):
        try:
            fill = np.asarray(pad).astype(dtype)
        except (OverflowError, ValueError):
            fill = None
    if fill is None or fill != pad:
        raise InvalidArgumentError(
            f"pad_value={pad!r} does not fit feature {name!r} of dtype {dtype}: pass one that does"
        )
    return fill


def _target(
    name: str,
    longest: list[int],
    dims: tuple[int | None, ...],
    lengths: list[npt.NDArray[np.int64]],
    indices: Sequence[int] | npt.NDArray[np.int64] | None,
) -> list[int]:
    """The padded size of each variable dimension; raises for a record over its size."""
    if len(dims) > 1 and len(dims) != len(longest):
        raise InvalidArgumentError(
            f"padded[{name!r}] gives {len(dims)} sizes; the feature has {len(longest)} "
            "variable dimensions"
        )
    want = list(dims) if len(dims) == len(longest) else [dims[0]] + [None] * (len(longest) - 1)
    shape: list[int] = []
    for level, (size, most) in enumerate(zip(want, longest, strict=True)):
        if size is None:
            shape.append(most)
            continue
        if most > size:
            row = int(np.argmax(lengths[level] > size))
            where = f"the batch's record {row}" if level == 0 else f"a row of dimension {level + 1}"
            if level == 0 and indices is not None:
                where = f"record {int(indices[row])} (the batch's record {row})"
            raise InvalidArgumentError(
                f"feature {name!r}: {where} has {int(lengths[level][row])} values in dimension "
                f"{level + 1}, more than its padded size {size}; nothing is cut off: pass a "
                f"larger size, or None to pad to the batch's longest record"
            )
        shape.append(size)
    return shape


def _pad_sparse(
    name: str,
    value: SparseValue,
    dims: tuple[int | None, ...],
    pad: _Pad,
    indices: Sequence[int] | npt.NDArray[np.int64] | None,
) -> PaddedValue:
    dense = np.asarray(value.dense_shape, np.int64)
    coords = np.asarray(value.indices, np.int64).reshape(-1, len(dense))
    values = np.asarray(value.values)
    n = int(dense[0])
    rows = coords[:, 0]
    lengths = np.bincount(rows, minlength=n).astype(np.int64)
    extents = np.zeros(n, np.int64)
    if len(coords):
        np.maximum.at(extents, rows, coords[:, 1] + 1)
    # The longest extent in dimension 2 may be below dense_shape[1] (a SparseFeature's
    # declared size): the padded size is at least the declared one.
    shape = _target(name, [int(dense[1])], dims[:1], [extents], indices)
    out = filled((n, shape[0], *dense[2:].tolist()), _fill(name, pad, values.dtype), values.dtype)
    mask = np.zeros(out.shape, np.bool_)
    at = tuple(coords.T)
    out[at] = values
    mask[at] = True
    return PaddedValue(out, lengths, mask)


def _pad_ragged(
    name: str,
    value: RaggedValue,
    dims: tuple[int | None, ...],
    pad: _Pad,
    indices: Sequence[int] | npt.NDArray[np.int64] | None,
) -> PaddedValue:
    top = np.asarray(value.row_splits, np.int64)
    n = len(top) - 1
    coords: list[npt.NDArray[np.int64]] = [np.arange(n, dtype=np.int64)]
    longest: list[int] = []
    lengths: list[npt.NDArray[np.int64]] = []
    node: Any = value
    while isinstance(node, RaggedValue):
        splits = np.asarray(node.row_splits, np.int64)
        sizes = np.diff(splits)
        rows = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        pos = np.arange(int(splits[-1]), dtype=np.int64) - splits[:-1][rows]
        coords = [c[rows] for c in coords] + [pos]
        longest.append(int(sizes.max()) if len(sizes) else 0)
        lengths.append(sizes)
        node = node.values
    flat = np.asarray(node)[: len(coords[0])]  # (parsed values start at row_splits 0)
    shape = _target(name, longest, dims, lengths, indices)
    out = filled((n, *shape, *flat.shape[1:]), _fill(name, pad, flat.dtype), flat.dtype)
    mask = np.zeros(out.shape, np.bool_)
    at = tuple(coords)
    out[at] = flat
    mask[at] = True
    return PaddedValue(out, lengths[0], mask)
