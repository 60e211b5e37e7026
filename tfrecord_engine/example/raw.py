"""``RawFeature`` outputs: one bytes value per record read as a fixed-shape numeric array.

A raw feature's :class:`~.columns.Column` holds its values in one of two forms:

- an object array of ``bytes`` (the exact per-record path, :func:`~.columns.from_rows`);
- a ``uint8`` array ``[values, nbytes]``, one row per value (the lockstep and template
  paths, which gather the value bytes straight from the record buffer and only ever
  keep values of exactly ``nbytes`` bytes: a record holding another size is handed to
  the exact path, which raises).

:func:`assemble_raw` turns either into ``[batch, *shape]`` of the spec's dtype; from
rows that is a view, no copy: no ``bytes`` object per record, no ``np.frombuffer``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ExampleParseError
from .columns import Column
from .records import error_prefix
from .specs import RawFeature

__all__ = ["as_rows", "assemble_raw", "empty_rows"]

U8 = npt.NDArray[np.uint8]


def empty_rows(nbytes: int) -> U8:
    """No values, in the rows form."""
    return np.zeros((0, nbytes), np.uint8)


def as_rows(values: npt.NDArray[Any], nbytes: int) -> U8 | None:
    """Raw values as ``uint8`` rows ``[len(values), nbytes]``, or None if a size differs."""
    if values.dtype != object:
        return values if values.shape[1:] == (nbytes,) else None
    if any(len(v) != nbytes for v in values.tolist()):
        return None
    # A bytearray join keeps the result writable (np.frombuffer of bytes is read-only).
    joined = bytearray().join(values.tolist())
    return np.frombuffer(joined, np.uint8).reshape(values.shape[0], nbytes)


def _sizes(values: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    if values.dtype != object:
        return np.full(values.shape[0], values.shape[1], np.int64)
    return np.fromiter(map(len, values.tolist()), np.int64, values.shape[0])


def _check(name: str, spec: RawFeature, col: Column, single: bool) -> None:
    """Raises for the first record (in order) whose value is missing or not one value of
    ``nbytes`` bytes, with the wording of the FixedLenFeature errors."""
    nbytes = spec.nbytes
    one = col.counts == 1
    bad = col.present & ~one
    if spec.default_value is None:
        bad |= ~col.present
    # Rows (the fast paths) hold only values of nbytes bytes; bytes objects are measured
    # (any size fits a fixed_length, which cuts or pads it).
    if spec.fixed_length is None and (
        col.values.dtype == object or col.values.shape[1:] != (nbytes,)
    ):
        sizes = _sizes(col.values)
        take = col.present & one
        bad[take] |= sizes[col.offsets[:-1][take]] != nbytes
    if not bad.any():
        return
    i = int(np.argmax(bad))
    index = None if single else i
    if not col.present[i]:
        where = "" if single else "Name: <unknown>, "
        raise ExampleParseError(
            f"{where}Feature: {name} (data type: string) is required but could not be found.",
            key=name,
            index=index,
        )
    if not one[i]:
        message = (
            f"Number of bytes values != expected.  Values size: {int(col.counts[i])} but "
            "a RawFeature takes exactly 1"
        )
    else:
        size = int(_sizes(col.values)[col.offsets[i]])
        shape = "[" + ",".join(str(d) for d in spec.shape) + "]"
        message = (
            f"Number of raw bytes != expected.  Value size: {size} bytes but output shape "
            f"{shape} of {spec.dtype} takes {nbytes}"
        )
    raise ExampleParseError(error_prefix(name, index) + message, key=name, index=index)


def assemble_raw(name: str, spec: RawFeature, col: Column, single: bool) -> npt.NDArray[Any]:
    """A RawFeature's output: ``[batch, *shape]`` (single: ``shape``) of ``spec.dtype``.

    Raises:
        ExampleParseError: a record lacks the feature (and there is no default), or
            holds other than one bytes value of ``spec.nbytes`` bytes.
    """
    _check(name, spec, col, single)
    n = col.counts.shape[0]
    nbytes = spec.nbytes
    values = col.values
    if spec.fixed_length is not None and values.dtype == object:
        values = np.array([spec.fit(v) for v in values.tolist()] or [], dtype=object)
    rows = as_rows(values, nbytes)
    assert rows is not None  # sizes were checked (or fitted)
    # In the stored byte order (tf.io.decode_raw's little_endian); astype to the native
    # order is a no-op for little-endian values on little-endian machines.
    dtype = np.dtype(spec.dtype)
    little = spec.wire_dtype
    if nbytes == 0:
        out: npt.NDArray[Any] = np.zeros((n, 0), dtype)
    elif col.present.all():
        out = np.ascontiguousarray(rows).view(little).astype(dtype, copy=False)
    else:
        out = np.empty((n, nbytes // dtype.itemsize), dtype)
        out[col.present] = np.ascontiguousarray(rows).view(little)
        assert spec.default_value is not None
        out[~col.present] = np.asarray(spec.default_value, dtype)
    return out.reshape(spec.shape if single else (n, *spec.shape))
