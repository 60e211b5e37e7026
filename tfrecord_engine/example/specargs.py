"""The arguments of feature specs, checked and normalized.

What the spec classes of :mod:`.specs` do with what they are given: a dtype-like object
to ``"int64"``/``"float32"``/``"string"`` (:func:`normalize_dtype`) or to a numpy
number type of a :class:`~.specs.RawFeature` (:func:`raw_dtype`); a shape-like object to
a tuple of ints (:func:`as_shape`); a default value to a flat tuple of Python scalars of
the dtype (:func:`flat_default`, :func:`raw_default`). Each error names the spec class
and what to pass instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, get_args

import numpy as np

from ..errors import InvalidArgumentError

__all__ = [
    "DType",
    "RawDType",
    "as_shape",
    "dtype_name",
    "flat_default",
    "normalize_dtype",
    "raw_default",
    "raw_dtype",
]

DType = Literal["int64", "float32", "string"]

_DTYPE_NAMES: dict[str, DType] = {
    "int64": "int64",
    "float32": "float32",
    "float": "float32",
    "string": "string",
    "bytes": "string",
    "bytes_": "string",
    "object": "string",
}


def normalize_dtype(dtype: object) -> DType:
    """Maps a dtype-like object to ``"int64"``, ``"float32"`` or ``"string"``.

    Example:
        >>> import numpy as np
        >>> normalize_dtype(np.float32), normalize_dtype("bytes")
        ('float32', 'string')
    """
    name: object
    if isinstance(dtype, str):
        name = dtype
    elif isinstance(dtype, type) and issubclass(dtype, (bytes, np.bytes_)):
        name = "string"
    elif isinstance(dtype, (type, np.dtype)):
        try:
            np_dtype = np.dtype(dtype)
        except TypeError:
            name = getattr(dtype, "name", None)
        else:
            name = "string" if np_dtype.kind in "SO" else np_dtype.name
    else:
        name = getattr(dtype, "name", None)
    if isinstance(name, str) and name in _DTYPE_NAMES:
        return _DTYPE_NAMES[name]
    raise InvalidArgumentError(
        f"Unsupported feature dtype {dtype!r}: must be int64, float32 or string (bytes)"
    )


def dtype_name(dtype: object) -> object:
    if isinstance(dtype, str):
        return dtype
    if isinstance(dtype, (type, np.dtype)):
        try:
            return np.dtype(dtype).name
        except TypeError:
            pass
    return getattr(dtype, "name", None)


def as_shape(shape: object, what: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        dims: Sequence[object] = [shape]
    elif hasattr(shape, "as_list"):  # a tf.TensorShape
        dims = list(getattr(shape, "as_list")())  # noqa: B009
    elif isinstance(shape, Sequence) and not isinstance(shape, (str, bytes)):
        dims = shape
    else:
        raise InvalidArgumentError(f"{what}: shape must be a sequence of ints, got {shape!r}")
    out = []
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
            raise InvalidArgumentError(
                f"{what}: shape must be fully defined non-negative ints, got {shape!r}"
            )
        out.append(int(d))
    return tuple(out)


def _scalar(value: object, dtype: DType, what: str) -> int | float | bytes:
    if dtype == "string":
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (bytes, np.bytes_)):
            return bytes(value)
    elif dtype == "int64":
        if (
            isinstance(value, (int, np.integer))
            and not isinstance(value, (bool, np.bool_))
            and -(1 << 63) <= int(value) < (1 << 63)
        ):
            return int(value)
    elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    ):
        with np.errstate(over="ignore"):
            return float(np.float32(value))
    raise InvalidArgumentError(f"{what}: default value {value!r} is not a valid {dtype}")


def flat_default(value: object, dtype: DType, what: str) -> tuple[Any, ...]:
    if isinstance(value, np.ndarray):
        items: list[object] = list(value.reshape(-1))
    elif isinstance(value, (list, tuple)):
        items = []
        stack: list[object] = [value]
        # Flatten nested lists row-major without recursion limits on odd input.
        while stack:
            top = stack.pop()
            if isinstance(top, (list, tuple)):
                stack.extend(reversed(top))
            else:
                items.append(top)
    else:
        items = [value]
    return tuple(_scalar(v, dtype, what) for v in items)


RawDType = Literal[
    "uint8",
    "int8",
    "uint16",
    "int16",
    "int32",
    "uint32",
    "int64",
    "float16",
    "float32",
    "float64",
    "bool",
    "complex64",
    "complex128",
]
_RAW_DTYPES: tuple[RawDType, ...] = get_args(RawDType)


def raw_dtype(dtype: object) -> RawDType:
    np_dtype: np.dtype[Any] | None = None
    if isinstance(dtype, (str, type, np.dtype)):
        try:
            np_dtype = np.dtype(dtype)
        except TypeError:
            np_dtype = None
    if np_dtype is None:
        name = getattr(dtype, "name", None)  # e.g. tf.uint8
        if isinstance(name, str) and name in _RAW_DTYPES:
            np_dtype = np.dtype(name)
    if np_dtype is None or np_dtype.name not in _RAW_DTYPES:
        raise InvalidArgumentError(
            f"RawFeature: unsupported dtype {dtype!r}: must be one of {', '.join(_RAW_DTYPES)}"
        )
    if np_dtype.byteorder == ">" or (np_dtype.byteorder == "=" and not np.little_endian):
        # The byte order is little_endian's to say (tf.io.decode_raw's argument): a
        # big-endian numpy dtype would silently mean something else.
        raise InvalidArgumentError(
            f"RawFeature: dtype {dtype!r} is big-endian: give the native dtype and "
            "little_endian=False to read big-endian values"
        )
    return _RAW_DTYPES[_RAW_DTYPES.index(np_dtype.name)]


def raw_default(value: object, shape: tuple[int, ...], dtype: RawDType) -> tuple[Any, ...]:
    try:
        given = np.asarray(value)
        if given.dtype.kind not in "biufc":
            raise TypeError(f"not numbers ({given.dtype})")
        if given.dtype.kind == "c" and np.dtype(dtype).kind != "c":
            raise TypeError(f"complex values for a {dtype} feature")
        with np.errstate(all="ignore"):
            cast = given.astype(dtype)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(
            f"RawFeature: default value {value!r} is not an array of {dtype}: {exc}"
        ) from None
    if cast.size != math.prod(shape):
        raise InvalidArgumentError(
            f"RawFeature: default value has {cast.size} values, but the requested shape "
            f"{list(shape)} has {math.prod(shape)}"
        )
    exact = np.array_equal(cast, given, equal_nan=cast.dtype.kind in "fc")
    if not exact:
        raise InvalidArgumentError(
            f"RawFeature: default value {value!r} does not fit {dtype} exactly"
        )
    return tuple(cast.reshape(-1).tolist())
