"""The one reader of single protobuf varints for the pure-Python decoders.

Every pure-Python reader of the wire format reads its varints with a function made
here: the Example codecs (:mod:`tfrecord_engine.example.wire`, TensorFlow's parsing,
and :mod:`tfrecord_engine.example.pbwire`, protobuf's), serialized tensors
(:mod:`tfrecord_engine.example.tensors`), the per-call decoders of ``ds[i]`` and small
batches (:mod:`tfrecord_engine.example.single_steps`) and the index columns' scalar reader
(:mod:`tfrecord_engine.index.scalars`, a layer below the Example codec, which is why
the reader lives in this bottom layer). Each decoder words its own errors, so it gets
its own reader from :func:`varint_reader`, with its error factory bound in a closure:
one definition, and the call costs what a module-level function costs.

What it reads, as protobuf and TensorFlow do: a value is the 7-bit groups of its at
most 10 bytes, bits past 64 dropped (a 10th byte contributes only its lowest bit;
negative int64 values are 10-byte two's complement). A varint of 10 continuation bytes
is "varint longer than 10 bytes", one cut off by ``end`` is "truncated varint", each
reported at the byte where the varint starts.

The other varint decoders work on many values at once and stay where they are: packed
runs with numpy (:func:`tfrecord_engine.example.varints.decode_packed`), a batch of
records in lockstep (:mod:`tfrecord_engine.example.lockstep`), and the compiled loops
(:mod:`._numba`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

__all__ = ["Buffer", "Fail", "VarintReader", "varint_reader"]

Buffer = bytes | bytearray | memoryview
#: Builds the error a reader raises from ``(reason, byte offset of the varint)``.
Fail = Callable[[str, int], Exception]
#: ``(buf, pos, end) -> (value, position after the varint)``; reads no byte at or past
#: ``end``.
VarintReader = Callable[[Buffer, int, int], tuple[int, int]]

_MASK64: Final = (1 << 64) - 1


def varint_reader(fail: Fail) -> VarintReader:
    """A reader of one varint in ``buf[pos:end]`` that raises ``fail(reason, start)``.

    Args:
        fail: makes the exception for a varint longer than 10 bytes or cut off by
            ``end``, from the reason and the byte offset where the varint starts.

    Returns:
        ``read(buf, pos, end) -> (value, new pos)``, the value as an unsigned 64-bit int.

    Example:
        >>> read = varint_reader(lambda reason, at: ValueError(f"{reason} at byte {at}"))
        >>> read(bytes([0xAC, 0x02, 0x05]), 0, 3)  # 300, then the next varint at 2
        (300, 2)
        >>> read(bytes([0xFF] * 9 + [0x7F]), 0, 10)[0] == 2**64 - 1  # bits past 64 dropped
        True
        >>> read(bytes([0x80, 0x80]), 0, 2)
        Traceback (most recent call last):
        ...
        ValueError: truncated varint at byte 0
    """

    def read_varint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
        # One and two bytes (tags, lengths, small values) are nearly every varint of a
        # record: read them without the loop.
        if pos + 1 < end:
            b = buf[pos]
            if b < 0x80:
                return b, pos + 1
            b2 = buf[pos + 1]
            if b2 < 0x80:
                return (b & 0x7F) | (b2 << 7), pos + 2
        result = 0
        shift = 0
        start = pos
        while pos < end:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result & _MASK64, pos
            shift += 7
            if shift >= 70:
                raise fail("varint longer than 10 bytes", start)
        raise fail("truncated varint", start)

    return read_varint
