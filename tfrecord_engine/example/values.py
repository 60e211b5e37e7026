"""Output containers for sparse and ragged features: :class:`SparseValue`, :class:`RaggedValue`."""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["RaggedValue", "SparseValue", "filled"]


def filled(shape: tuple[int, ...], value: Any, dtype: Any) -> npt.NDArray[Any]:
    """``np.full(shape, value, dtype)``, except that a ``bytes`` value fills an object
    array as it is: ``np.full`` goes through a fixed-width ``S`` array first, which
    drops its trailing NUL bytes (``b"a\\x00"`` would pad as ``b"a"``)."""
    if np.dtype(dtype) == object:
        out = np.empty(shape, object)
        out.fill(value)
        return out
    return np.full(shape, value, dtype)


class SparseValue(NamedTuple):
    """A sparse tensor in COO form, like ``tf.SparseTensor``.

    Attributes:
        indices: int64 array ``[N, rank]``, one row per value.
        values: array ``[N]`` (int64, float32, or an object array of bytes).
        dense_shape: int64 array ``[rank]``.

    Example:
        >>> import numpy as np
        >>> s = SparseValue(np.array([[0, 1]]), np.array([5]), np.array([1, 3]))
        >>> s.to_dense().tolist()
        [[0, 5, 0]]
    """

    indices: npt.NDArray[np.int64]
    values: npt.NDArray[Any]
    dense_shape: npt.NDArray[np.int64]

    def to_dense(self, default_value: Any = None) -> npt.NDArray[Any]:
        """The dense array (later duplicates win), filled with ``default_value`` or 0/b""."""
        if default_value is None:
            default_value = b"" if self.values.dtype == object else 0
        out = filled(tuple(int(d) for d in self.dense_shape), default_value, self.values.dtype)
        if len(self.values):
            out[tuple(self.indices.T)] = self.values
        return out


class RaggedValue(NamedTuple):
    """A ragged tensor as ``values`` partitioned by ``row_splits``, like ``tf.RaggedTensor``.

    Row ``i`` is ``values[row_splits[i]:row_splits[i + 1]]``. ``values`` is itself a
    :class:`RaggedValue` for several ragged dimensions, or an array (2-D or more when
    trailing ``UniformRowLength`` partitions make the inner dimensions uniform).

    Example:
        >>> import numpy as np
        >>> r = RaggedValue(np.array([1, 2, 3]), np.array([0, 2, 2, 3]))
        >>> r.to_list()
        [[1, 2], [], [3]]
    """

    values: npt.NDArray[Any] | RaggedValue
    row_splits: npt.NDArray[np.integer[Any]]

    @property
    def flat_values(self) -> npt.NDArray[Any]:
        """The innermost values array."""
        inner = self.values
        while isinstance(inner, RaggedValue):
            inner = inner.values
        return inner

    def to_list(self) -> list[Any]:
        """Nested Python lists, like ``tf.RaggedTensor.to_list()``."""
        bounds = list(itertools.pairwise(self.row_splits.tolist()))
        if isinstance(self.values, RaggedValue):
            inner = self.values.to_list()
            return [inner[a:b] for a, b in bounds]
        arr: npt.NDArray[Any] = np.asarray(self.values)
        return [arr[a:b].tolist() for a, b in bounds]
