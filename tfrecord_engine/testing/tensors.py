"""Hypothesis strategies for serialized tensors (``tf.io.serialize_tensor`` bytes).

:func:`tensor_arrays` draws numpy arrays of every dtype :func:`~tfrecord_engine.
serialize_tensor` takes (strings as object arrays of ``bytes``), of up to four small
dimensions, zero-sized ones included. :func:`tensor_protos` draws ``TensorProto`` bytes
that no serializer writes: typed ``*_val`` fields packed and unpacked, too few or too
many values, ``tensor_content`` of the wrong size, unknown fields, wrong wire types,
repeated and merged shape fields, negative dimensions, unknown dtypes, and cut or
flipped bytes. Every tensor they describe holds at most a few hundred elements, so a
reader that believes a dimension cannot allocate much.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
from hypothesis import strategies as st

__all__ = ["TENSOR_DTYPES", "tensor_arrays", "tensor_protos"]

#: The dtype names :func:`tensor_arrays` draws (numpy's names; "string": bytes objects).
TENSOR_DTYPES = (
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
    "uint16", "uint32", "uint64", "bool", "complex64", "complex128", "string",
)  # fmt: skip


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _tag(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _delimited(number: int, payload: bytes) -> bytes:
    return _tag(number, 2) + _varint(len(payload)) + payload


@st.composite
def tensor_arrays(draw: st.DrawFn, dtypes: tuple[str, ...] = TENSOR_DTYPES) -> Any:
    """A numpy array (or 0-d array) of one of ``dtypes``, any values (NaNs too)."""
    name = draw(st.sampled_from(dtypes))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=4)))
    n = int(np.prod(shape, dtype=np.int64))
    if name == "string":
        items = draw(st.lists(st.binary(max_size=12), min_size=n, max_size=n))
        out = np.empty(n, dtype=object)
        out[:] = items
        return out.reshape(shape)
    dtype = np.dtype(name)
    raw = draw(st.binary(min_size=n * dtype.itemsize, max_size=n * dtype.itemsize))
    array = np.frombuffer(raw, dtype=dtype).copy()
    if name == "bool":
        array = array.view(np.uint8) & 1
        array = array.astype(np.bool_)
    return array.reshape(shape)


_ENUMS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 17, 18, 19, 22, 23)


@st.composite
def _shape_field(draw: st.DrawFn) -> bytes:
    dims = b""
    for size in draw(st.lists(st.integers(-2, 4), max_size=3)):
        dim = b"" if size == 0 and draw(st.booleans()) else _tag(1, 0) + _varint(size)
        if draw(st.integers(0, 5)) == 0:
            dim += _delimited(2, b"name")
        dims += _delimited(2, dim)
    if draw(st.integers(0, 8)) == 0:
        dims += _tag(3, 0) + _varint(1)  # unknown_rank
    return _delimited(2, dims)


@st.composite
def _typed_field(draw: st.DrawFn) -> bytes:
    number = draw(st.sampled_from([5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17]))
    count = draw(st.integers(0, 5))
    if number == 8:
        return b"".join(_delimited(8, draw(st.binary(max_size=6))) for _ in range(count))
    if number in (5, 9, 6, 12):
        fmt, wire = ("<f", 5) if number in (5, 9) else ("<d", 1)
        values = [
            struct.pack(fmt, v)
            for v in draw(st.lists(st.floats(width=32), min_size=count, max_size=count))
        ]
        if draw(st.booleans()):
            return _delimited(number, b"".join(values))
        return b"".join(_tag(number, wire) + v for v in values)
    ints = draw(st.lists(st.integers(-(1 << 63), (1 << 64) - 1), min_size=count, max_size=count))
    if draw(st.booleans()):
        return _delimited(number, b"".join(_varint(v) for v in ints))
    return b"".join(_tag(number, 0) + _varint(v) for v in ints)


@st.composite
def tensor_protos(draw: st.DrawFn) -> bytes:
    """``TensorProto``-like bytes, valid or not (see the module's docstring)."""
    fields: list[bytes] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            enum = draw(st.one_of(st.sampled_from(_ENUMS), st.integers(-1, 120)))
            fields.append(_tag(1, 0) + _varint(enum))
        elif kind == 1:
            fields.append(draw(_shape_field()))
        elif kind in (2, 3):
            fields.append(_delimited(4, draw(st.binary(max_size=40))))
        elif kind in (4, 5, 6):
            fields.append(draw(_typed_field()))
        elif kind == 7:  # an unknown field, or a known one with the wrong wire type
            number = draw(st.sampled_from([1, 2, 3, 4, 5, 8, 10, 99]))
            wire = draw(st.sampled_from([0, 1, 2, 5]))
            payload = {0: _varint(7), 1: b"\x00" * 8, 2: _varint(2) + b"ab", 5: b"\x00" * 4}
            fields.append(_tag(number, wire) + payload[wire])
        else:
            fields.append(_tag(1, 0) + _varint(draw(st.sampled_from(_ENUMS))))
    data = b"".join(draw(st.permutations(fields)))
    fault = draw(st.integers(0, 9))
    if fault == 0 and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif fault == 1 and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1 :]
    return data
