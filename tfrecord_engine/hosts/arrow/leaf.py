"""Arrow value types and the three kinds of Example lists, both ways.

An Example holds int64, float32 or bytes values. An Arrow column's values (its leaf
type, under any list levels) map to one of them:

=============================================  ===========  ==============================
Arrow leaf type                                Example      read back
=============================================  ===========  ==============================
int8 ... int64, uint8 ... uint64               Int64List    cast, checked to fit
bool                                           Int64List    0 or 1, else an error
date32/64, time32/64, timestamp, duration      Int64List    the same count of units
float16, float32, float64                      FloatList    checked to be exact
binary, large_binary, fixed_size_binary        BytesList    sizes checked (fixed size)
string, large_string                           BytesList    checked to be UTF-8
=============================================  ===========  ==============================

Writing never loses a value silently: a uint64 above the int64 range, or a float64
that float32 does not hold exactly, is an error that says what to cast to.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import InvalidArgumentError
from ...example.wire import KIND_BYTES, KIND_FLOAT, KIND_INT64
from .spans import Spans, binary_array

__all__ = ["LeafError", "kind_of", "read_leaf", "write_leaf"]


class LeafError(Exception):
    """Internal: value ``position`` (in the column's flat values) does not fit the type.

    The builders turn it into an error naming the column and the record.
    """

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(position, reason)
        self.position = position
        self.reason = reason


_TEMPORAL_STORAGE = {32: pa.int32(), 64: pa.int64()}


def _is_temporal(t: Any) -> bool:
    return bool(
        pa.types.is_date(t)
        or pa.types.is_time(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_duration(t)
    )


def kind_of(t: Any, where: str) -> int:
    """The Example list kind that holds values of Arrow type ``t``.

    Raises:
        InvalidArgumentError: no Example list holds it (``where`` names the column).
    """
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or _is_temporal(t):
        return KIND_INT64
    if pa.types.is_floating(t):
        return KIND_FLOAT
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_string_view(t)
    ):
        return KIND_BYTES
    raise InvalidArgumentError(
        f"{where}: Arrow type {t} has no Example equivalent (int64, float32 or bytes "
        "values, in lists or fixed-size lists): cast the column first (e.g. decimals to "
        "float64 or string, dictionaries with .dictionary_decode(), structs flattened "
        "with table.flatten())"
    )


def _first(bad: npt.NDArray[np.bool_]) -> int:
    return int(np.argmax(bad))


def read_leaf(values: npt.NDArray[Any] | Spans, t: Any, valid: Any = None) -> Any:
    """The Arrow array of type ``t`` holding decoded ``values`` (``valid``: a bool mask
    of the non-null slots, for a flat column with nulls; values then fill only those).

    Raises:
        LeafError: a value does not fit ``t`` exactly.
    """
    if isinstance(values, Spans):
        if pa.types.is_fixed_size_binary(t):
            bad = values.lengths != t.byte_width
            if valid is not None and len(values) == valid.shape[0]:
                bad &= valid  # (a null's slot holds no value)
            if bad.any():
                at = _first(bad)
                raise LeafError(
                    at, f"a value of {int(values.lengths[at])} bytes, not {t.byte_width}"
                )
            array = binary_array(values, pa.binary(), valid)
            return array.cast(t)
        storage = t
        if pa.types.is_binary_view(t):
            storage = pa.binary()
        elif pa.types.is_string_view(t):
            storage = pa.string()
        try:
            array = binary_array(values, storage, valid)
        except InvalidArgumentError as exc:
            if "UTF-8" not in str(exc):
                raise
            at = next(j for j in range(len(values)) if not _utf8(values, j))
            raise LeafError(at, "a value is not UTF-8 text (read the column as binary)") from None
        return array if storage is t else array.cast(t)
    mask = None if valid is None else ~valid
    if valid is not None and values.shape[0] != valid.shape[0]:
        full = np.zeros(valid.shape[0], values.dtype)
        full[valid] = values
        values = full
    if values.dtype == np.float32:
        return _floats(values, t, mask)
    return _ints(values, t, mask)


def _utf8(values: Spans, j: int) -> bool:
    try:
        values.buf[int(values.starts[j]) : int(values.ends[j])].tobytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _floats(values: npt.NDArray[np.float32], t: Any, mask: Any) -> Any:
    if not pa.types.is_floating(t):
        raise InvalidArgumentError(f"float values cannot be read as {t}")
    if t == pa.float32():
        return pa.array(values, t, mask=mask)
    out = values.astype(t.to_pandas_dtype())
    back = out.astype(np.float32)
    bad = ~((back == values) | (np.isnan(back) & np.isnan(values)))
    if bad.any():
        at = _first(bad)
        raise LeafError(at, f"the float32 value {values[at]!r} does not fit {t} exactly")
    return pa.array(out, t, mask=mask)


def _ints(values: npt.NDArray[np.int64], t: Any, mask: Any) -> Any:
    if pa.types.is_boolean(t):
        bad = (values != 0) & (values != 1)
        if bad.any():
            at = _first(bad)
            raise LeafError(at, f"the value {int(values[at])} is not a bool (0 or 1)")
        return pa.array(values.astype(np.bool_), t, mask=mask)
    if _is_temporal(t):
        storage = _TEMPORAL_STORAGE[t.bit_width]
        return _ints(values, storage, mask).view(t)
    if not pa.types.is_integer(t):
        raise InvalidArgumentError(f"int64 values cannot be read as {t}")
    dtype = np.dtype(t.to_pandas_dtype())
    if dtype == np.int64:
        return pa.array(values, t, mask=mask)
    if dtype == np.uint64:
        bad = values < 0
    else:
        info = np.iinfo(dtype)
        bad = (values < info.min) | (values > info.max)
    if bad.any():
        at = _first(bad)
        raise LeafError(at, f"the value {int(values[at])} does not fit {t}")
    return pa.array(values.astype(dtype), t, mask=mask)


def write_leaf(array: Any, where: str) -> npt.NDArray[Any] | Spans:
    """The values of a flat, null-free Arrow array as Example values: int64 or float32
    numbers, or bytes spans.

    Raises:
        InvalidArgumentError: a value that an Example list would not hold exactly (the
            message names ``where`` and the value's position, and what to cast to).
    """
    t = array.type
    kind = kind_of(t, where)
    if kind == KIND_BYTES:
        return _bytes_spans(array, t)
    if kind == KIND_FLOAT:
        values: npt.NDArray[Any] = array.to_numpy(zero_copy_only=False)
        if values.dtype == np.float32:
            return values
        narrow: npt.NDArray[Any] = values.astype(np.float32)
        bad = ~((narrow == values) | (np.isnan(values)))
        if bad.any():
            at = _first(bad)
            raise InvalidArgumentError(
                f"{where}: value {at} ({values[at]!r}) is not exactly a float32, and an "
                "Example stores float32: cast the column to float32 first (accepting the "
                "rounding) or store it as strings"
            )
        return narrow
    if pa.types.is_boolean(t):
        bools: npt.NDArray[Any] = array.to_numpy(zero_copy_only=False)
        return bools.astype(np.int64)
    if _is_temporal(t):
        array = array.view(_TEMPORAL_STORAGE[t.bit_width])
    values = array.to_numpy(zero_copy_only=False)
    if values.dtype == np.uint64:
        bad = values > np.uint64(2**63 - 1)
        if bad.any():
            at = _first(bad)
            raise InvalidArgumentError(
                f"{where}: value {at} ({int(values[at])}) is above the int64 range an "
                "Example stores: cast the column to float64 or string first"
            )
    out: npt.NDArray[np.int64] = values.astype(np.int64, copy=False)
    return out


def _bytes_spans(array: Any, t: Any) -> Spans:
    """The values of a binary-like array as spans of its data buffer (no copy for
    binary and string arrays)."""
    if pa.types.is_fixed_size_binary(t):
        width = t.byte_width
        data = array.buffers()[1]
        buf = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
        starts = (np.arange(len(array), dtype=np.int64) + array.offset) * width
        return Spans(buf, starts, starts + width)
    if pa.types.is_binary_view(t) or pa.types.is_string_view(t):
        array = array.cast(pa.large_binary())
        t = array.type
    large = pa.types.is_large_binary(t) or pa.types.is_large_string(t)
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], np.int64 if large else np.int32)
    offsets = offsets[array.offset : array.offset + len(array) + 1].astype(np.int64)
    data = buffers[2]
    buf = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return Spans(buf, offsets[:-1], offsets[1:])
