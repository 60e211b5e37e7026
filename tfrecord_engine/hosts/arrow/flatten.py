"""An Arrow column as an Example feature per row: presence, value counts, flat values.

A null row is a record without the feature (it reads back as a null). Lists and
fixed-size lists are flattened row-major into the row's one value list, the way an
Example holds a tensor. A null *inside* a list has no place in an Example and is an
error that names the column and the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidArgumentError
from ...example.wire import KIND_INT64
from .leaf import kind_of, write_leaf
from .plan import unwrap
from .spans import Spans

__all__ = ["Flat", "flatten_column"]

I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Flat:
    """One column of a batch of ``n`` rows, as Example features.

    Attributes:
        kind: the Example list kind.
        present: bool ``[n]``: the row has the feature (its value is not null).
        counts: int64 ``[n]``: values per row (0 where not present).
        values: every value of the present rows, in order: int64 or float32 numbers, or
            bytes spans.
    """

    kind: int
    present: Bool
    counts: I64
    values: npt.NDArray[Any] | Spans


def _valid(array: Any) -> Bool:
    if array.null_count == 0:
        return np.ones(len(array), np.bool_)
    mask: Bool = array.is_valid().to_numpy(zero_copy_only=False)
    return mask


def _no_nulls(array: Any, where: str) -> None:
    if array.null_count:
        raise InvalidArgumentError(
            f"{where}: a null inside a list (at flat position "
            f"{int(np.argmin(_valid(array)))}): an Example list cannot hold one; fill it "
            "(pyarrow.compute.fill_null) or drop it first"
        )


def _fixed(array: Any, keep: Bool | None, where: str) -> tuple[int, npt.NDArray[Any] | Spans]:
    """``(values per row, flat values)`` of a null-free stack of fixed-size lists; only
    the rows where ``keep`` is True (all when ``None``)."""
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
    if not pa.types.is_fixed_size_list(array.type):
        if keep is not None and not keep.all():
            array = array.filter(pa.array(keep))
        _no_nulls(array, where)
        return 1, write_leaf(array, where)
    k = array.type.list_size
    if keep is not None:
        array = array.filter(pa.array(keep))
    _no_nulls(array, where)
    child = array.values.slice(array.offset * k, len(array) * k)
    inner, values = _fixed(child, None, where)
    return k * inner, values


def _without_views(t: Any) -> Any:
    """``t`` with string/binary/list views as their large (offset) types."""
    if pa.types.is_string_view(t):
        return pa.large_string()
    if pa.types.is_binary_view(t):
        return pa.large_binary()
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.large_list(_without_views(t.value_type))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(_without_views(t.value_type), t.list_size)
    if pa.types.is_list(t):
        return pa.list_(_without_views(t.value_type))
    if pa.types.is_large_list(t):
        return pa.large_list(_without_views(t.value_type))
    return t


def _plain(array: Any, plain: Any) -> Any:
    """``array`` as the type ``plain`` (:func:`_without_views` of its type). List views
    are rebuilt from their values in row order and their lengths: pyarrow 25's cast of
    a list view to a large list gave offsets such as ``[0, 2, 0]`` for ``[[1, 2], [3]]``."""
    t = array.type
    if not (pa.types.is_list_view(t) or pa.types.is_large_list_view(t)):
        return array.cast(plain)
    if isinstance(array, pa.ChunkedArray):
        return pa.chunked_array([_plain(c, plain) for c in array.chunks], plain)
    values = pc.list_flatten(array)
    values = _plain(values, plain.value_type) if values.type != plain.value_type else values
    lengths = pc.list_value_length(array).fill_null(0).to_numpy(zero_copy_only=False)
    offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    mask = pc.is_null(array) if array.null_count else None
    return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), values, mask=mask)


def flatten_column(array: Any, where: str) -> Flat:
    """The Example features of one column (an Arrow array of ``n`` rows).

    Raises:
        InvalidArgumentError: a type an Example cannot hold, or a null inside a list
            (``where`` names the column).
    """
    plain = _without_views(array.type)
    if plain != array.type:
        array = _plain(array, plain)  # Polars and others export views: their offsets differ
    if pa.types.is_null(array.type):
        # Every row is a null: no row holds the feature.
        n = len(array)
        return Flat(KIND_INT64, np.zeros(n, np.bool_), np.zeros(n, np.int64), np.zeros(0, np.int64))
    leaf, _, variable, _ = unwrap(array.type, where)
    kind = kind_of(leaf, where)
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
    present = _valid(array)
    if not variable:
        width, values = _fixed(array, None if present.all() else present, where)
        return Flat(kind, present, np.where(present, width, 0).astype(np.int64), values)
    offsets = array.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    counts = np.diff(offsets)
    counts[~present] = 0
    child = array.values
    lo, hi = int(offsets[0]), int(offsets[-1])
    if lo != 0 or hi != len(child) or not present.all():
        keep = np.zeros(len(child), np.bool_)
        keep[lo:hi] = np.repeat(present, np.diff(offsets))
        child = child.filter(pa.array(keep)) if not keep.all() else child
    width, values = _fixed(child, None, where)
    if width == 0 and bool(counts.any()):
        # (A row of k empty fixed-size lists holds no value: its k would be lost.)
        raise InvalidArgumentError(
            f"{where}: a list of fixed-size lists of size 0 ({array.type}): an Example's "
            "flat list cannot say how many such items a row holds; drop the column or "
            "store the counts in a column of their own"
        )
    return Flat(kind, present, counts * width, values)
