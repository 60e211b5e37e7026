"""Bytes values as spans of one buffer, and the Arrow arrays made from them.

The batch decoder finds every bytes value of a batch as a half-open span
``[start, end)`` of the chunk's buffer. An Arrow binary array is exactly offsets and
one data buffer, so a column is built with one gather of those spans (the compiled
kernel, else numpy) and one cumulative sum: no Python ``bytes`` object per value.

Values that do not live in the chunk's buffer (defaults, values decoded by the exact
per-record path) are appended to a copy of it with :meth:`Spans.extended`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ... import kernels
from ...errors import InvalidArgumentError

__all__ = [
    "BINARY_LIMIT",
    "Spans",
    "binary_array",
    "binary_from_objects",
    "gather",
    "offsets_array",
    "validity",
]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Bool = npt.NDArray[np.bool_]

#: The most data bytes a ``binary``/``string`` array (32-bit offsets) holds.
BINARY_LIMIT: Final = 2**31 - 1


@dataclass(frozen=True)
class Spans:
    """Values ``buf[starts[j]:ends[j]]`` (half-open), in order.

    Attributes:
        buf: the bytes the spans point into (not copied).
        starts, ends: int64 ``[m]``.
    """

    buf: U8
    starts: I64
    ends: I64

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    @property
    def lengths(self) -> I64:
        """Each value's size in bytes."""
        return self.ends - self.starts

    def take(self, which: npt.NDArray[Any]) -> Spans:
        """The values at positions ``which`` (an index or a mask), same buffer."""
        return Spans(self.buf, self.starts[which], self.ends[which])

    def extended(self, values: Sequence[bytes]) -> tuple[Spans, Spans]:
        """``(self, extra)`` over one new buffer: this one with ``values`` appended.

        ``extra`` holds the spans of ``values``. Copies the buffer once; only for the
        few values that come from elsewhere (defaults, the exact per-record path).
        """
        tail = b"".join(values)
        lengths = np.fromiter(map(len, values), np.int64, len(values))
        ends = np.cumsum(lengths) + self.buf.shape[0]
        both = np.concatenate([self.buf, np.frombuffer(tail, np.uint8)])
        return Spans(both, self.starts, self.ends), Spans(both, ends - lengths, ends)

    @staticmethod
    def concat(parts: Sequence[Spans]) -> Spans:
        """The values of ``parts`` in order (all over the same buffer)."""
        if not parts:
            return Spans(np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64))
        buf = parts[0].buf
        if any(p.buf is not buf for p in parts[1:]):
            raise ValueError("Spans.concat: the parts must share one buffer")
        return Spans(
            buf,
            np.concatenate([p.starts for p in parts]),
            np.concatenate([p.ends for p in parts]),
        )


def gather(buf: U8, starts: I64, ends: I64) -> U8:
    """``buf[starts[j]:ends[j]]`` for every j, back to back in one new array.

    The array lives in an Arrow buffer of Arrow's memory pool, which reuses freed
    memory: a fresh allocation per batch would pay a page fault per 4 KiB.
    """
    lengths = ends - starts
    total = int(lengths.sum())
    out: U8 = np.frombuffer(pa.allocate_buffer(total), np.uint8) if total else _EMPTY
    if total == 0 or kernels.gather_spans(buf, starts, ends, out) is not None:
        return out
    # Index of every output byte: +1 within a span, a jump at each span's first byte.
    nonempty = lengths > 0
    s, ln = starts[nonempty], lengths[nonempty]
    step = np.ones(total, np.int64)
    firsts = np.cumsum(ln) - ln
    step[firsts[1:]] = s[1:] - (s[:-1] + ln[:-1]) + 1
    step[0] = s[0]
    np.take(buf, np.cumsum(step), out=out)
    return out


_EMPTY: U8 = np.zeros(0, np.uint8)


def offsets_array(lengths: I64, *, large: bool) -> npt.NDArray[Any]:
    """``[m + 1]`` offsets of values of these sizes: int64 when ``large``, else int32."""
    out = np.zeros(lengths.shape[0] + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    return out if large else out.astype(np.int32)


def validity(present: Bool | None) -> Any:
    """An Arrow validity bitmap (``None`` when every slot is valid)."""
    if present is None or bool(present.all()):
        return None
    return pa.py_buffer(np.packbits(present, bitorder="little").tobytes())


def binary_array(values: Spans, arrow_type: Any, present: Bool | None = None) -> Any:
    """An Arrow binary-like array (``binary``, ``large_binary``, ``string``,
    ``large_string``) of ``values``; where ``present`` is False a null.

    ``values`` holds the non-null values only, in order. Strings are checked to be
    UTF-8 (an invalid array is never handed out).

    Raises:
        InvalidArgumentError: a 32-bit type would need more than ``BINARY_LIMIT`` bytes,
            or a string value is not UTF-8 (the caller names the column and record).
    """
    lengths = values.lengths
    n = len(values) if present is None else int(present.shape[0])
    if present is not None and len(values) != n:
        full = np.zeros(n, np.int64)
        full[present] = lengths
        lengths = full
    large = pa.types.is_large_binary(arrow_type) or pa.types.is_large_string(arrow_type)
    data = gather(values.buf, values.starts, values.ends)
    if not large and data.shape[0] > BINARY_LIMIT:
        raise InvalidArgumentError(
            f"{data.shape[0]} bytes of {arrow_type} values in one batch exceed Arrow's "
            f"32-bit offsets: read with a smaller batch_size or ask for large_{arrow_type}"
        )
    offsets = offsets_array(lengths, large=large)
    array = pa.Array.from_buffers(
        arrow_type,
        n,
        [validity(present), pa.py_buffer(offsets), _buffer(data)],
        null_count=-1 if present is None else int(n - present.sum()),
    )
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        try:
            array.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise InvalidArgumentError(f"a value is not UTF-8 text ({exc})") from None
    return array


def _buffer(data: U8) -> Any:
    """The Arrow buffer holding ``data`` (its own when it lives in one: no copy)."""
    return (
        data.base
        if isinstance(data.base, pa.Buffer) and data.base.size == data.shape[0]
        else pa.py_buffer(data)
    )


def binary_from_objects(values: npt.NDArray[Any], arrow_type: Any = None) -> Any:
    """An Arrow binary array of an object array of ``bytes`` (one join, no list)."""
    items = values.reshape(-1)
    lengths = np.fromiter(map(len, items), np.int64, items.shape[0])
    data = np.frombuffer(b"".join(items), np.uint8)
    ends = np.cumsum(lengths)
    return binary_array(Spans(data, ends - lengths, ends), arrow_type or pa.binary())
