"""Protobuf wire bytes written by hand, for building records the encoder never would.

A reference writer independent of :mod:`tfrecord_engine.example.encode`: test kits and
tests use it to assemble Examples field by field (unpacked lists, duplicate keys,
unknown fields, damage) and to check the engine's encoder against it.
"""

from __future__ import annotations

__all__ = ["field", "varint"]

_MASK64 = (1 << 64) - 1


def varint(value: int) -> bytes:
    """The canonical varint of ``value`` (negative values as their 64-bit two's complement).

    Example:
        >>> varint(1), varint(300), len(varint(-1))
        (b'\\x01', b'\\xac\\x02', 10)
    """
    value &= _MASK64
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field: the tag byte, the payload's length, the payload.

    Example:
        >>> field(0x0A, b"ab")
        b'\\n\\x02ab'
    """
    return bytes([tag]) + varint(len(payload)) + payload
