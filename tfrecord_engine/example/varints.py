"""The Example decoders' varints: single ones, and packed runs decoded with numpy.

Single varints (tags, lengths, values) are read by :func:`varint_reader`'s readers, the
package's one pure-Python varint reader (:mod:`tfrecord_engine.kernels.varint`: it
lives in the bottom layer, so that the index columns' reader below the Example codec
uses it too). Each decoder makes its own, wording its errors.

Packed runs are decoded with numpy: one pass of array operations, not one per value.

Both Example decoders (:mod:`.pbwire`, protobuf's semantics, and :mod:`.wire`,
TensorFlow's) read an ``Int64List``'s packed run with this when it is long enough to
pay for numpy's per-call overhead (:data:`NUMPY_MIN_BYTES`); shorter runs keep their
per-varint loops, which are the reference these are tested against. The results and the
errors are the loops' exactly:

- a value is the 7-bit groups of its (at most 10) bytes, bits past 64 dropped (a 10th
  byte contributes only its lowest bit, as in protobuf and TensorFlow; negative int64
  values are 10-byte two's complement);
- a run of 10 continuation bytes is "varint longer than 10 bytes", a run that ends
  inside a varint is "truncated varint", each at the byte where that varint starts,
  and the first bad varint in the run is the one reported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import numpy as np
import numpy.typing as npt

from ..errors import MalformedExampleError
from ..kernels.varint import varint_reader

__all__ = ["NUMPY_MIN_BYTES", "decode_packed", "varint_reader"]

#: Packed runs of at least this many bytes are decoded with numpy. The array path costs
#: about a dozen numpy calls (~25 us) whatever the size, the loops ~0.3-1.5 us a value:
#: measured, they break even around 100-150 bytes for 2- to 6-byte varints.
NUMPY_MIN_BYTES: Final = 128
_MAX_VARINT: Final = 10

#: Builds the decoder's error for ``(reason, offset)``; each decoder words its own.
Fail = Callable[[str, int], MalformedExampleError]


def decode_packed(buf: bytes, pos: int, end: int, fail: Fail) -> npt.NDArray[np.uint64]:
    """Decodes every varint of the packed run ``buf[pos:end]`` (half-open) as uint64.

    Args:
        buf: the serialized record.
        pos: where the run starts.
        end: where it ends; no byte at or past it is read.
        fail: makes the error to raise from a reason and the varint's byte offset.

    Raises:
        MalformedExampleError: from ``fail``, for the first varint that is longer than
            10 bytes or cut off by ``end``.

    Example:
        >>> from tfrecord_engine.errors import MalformedExampleError
        >>> def fail(reason, offset):
        ...     return MalformedExampleError(f"{reason} at byte {offset}", offset=offset)
        >>> run = bytes([0x01, 0xAC, 0x02] + [0xFF] * 9 + [0x01])  # 1, 300, 2**64 - 1
        >>> decode_packed(run, 0, len(run), fail).tolist()
        [1, 300, 18446744073709551615]
        >>> decode_packed(run, 0, 5, fail)
        Traceback (most recent call last):
        ...
        tfrecord_engine.errors.MalformedExampleError: truncated varint at byte 3
    """
    raw = np.frombuffer(buf, dtype=np.uint8, count=end - pos, offset=pos)
    last = np.flatnonzero(raw < 0x80)  # each varint's final byte
    n = raw.size
    if last.size == n:  # every value fits in one byte (pixels, labels, flags)
        return raw.astype(np.uint64)
    first = np.empty_like(last)
    if last.size:
        first[0] = 0
        first[1:] = last[:-1] + 1
    size = last - first + 1
    over = np.flatnonzero(size > _MAX_VARINT)
    if over.size:
        raise fail("varint longer than 10 bytes", pos + int(first[over[0]]))
    tail = int(last[-1]) + 1 if last.size else 0
    if tail < n:
        # The run ends inside a varint: 10 continuation bytes are "too long" before the
        # end is noticed, as the loop sees them.
        reason = "varint longer than 10 bytes" if n - tail >= _MAX_VARINT else "truncated varint"
        raise fail(reason, pos + tail)
    # Byte k of a varint carries bits 7k..7k+6; numpy's uint64 shifts drop bits past 64.
    group = np.arange(n, dtype=np.uint64) - np.repeat(first, size).astype(np.uint64)
    parts = (raw & 0x7F).astype(np.uint64) << (group * np.uint64(7))
    out: npt.NDArray[np.uint64] = np.add.reduceat(parts, first)
    return out
