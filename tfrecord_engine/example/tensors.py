"""``tf.io.serialize_tensor`` / ``tf.io.parse_tensor`` without TensorFlow.

A serialized tensor is a ``TensorProto`` (``tensorflow/core/framework/tensor.proto``)::

    1  dtype           enum DataType (DT_FLOAT = 1, ... see _DTYPES)
    2  tensor_shape    TensorShapeProto { repeated Dim dim = 2 { int64 size = 1;
                                          string name = 2 }; bool unknown_rank = 3 }
    4  tensor_content  bytes: the values, little-endian, row-major (numeric dtypes)
    5 ... 17           typed repeated fields (float_val, int_val, string_val, ...)

:func:`serialize_tensor` writes TensorFlow's bytes exactly: the dtype, the shape (always
present, a scalar's empty), numbers in ``tensor_content`` and strings as one
``string_val`` each. :func:`parse_tensor` reads whatever ``tf.io.parse_tensor`` reads:
``tensor_content`` when it is not empty, else the typed field of the dtype, whose last
value fills a tensor it is too short for (no value at all: zeros); fields of the wrong
wire type are skipped as unknown, repeated sub-messages merge, the last scalar wins. It
fails where TensorFlow fails, with TensorFlow's messages:

- ``Could not parse `serialized` as TensorProto, base64: ...`` (malformed bytes);
- ``Cannot parse tensor from proto: ...`` (a valid message that is no valid tensor: an
  unknown dtype, a negative dimension, ``tensor_content`` of the wrong size, a bool
  byte other than 0 or 1);
- ``Type mismatch between parsed tensor (int32) and dtype (float)``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import ExampleParseError, InvalidArgumentError, InvalidArgumentTypeError
from .varints import varint_reader

__all__ = ["TensorFeature", "decode_tensors", "parse_tensor", "serialize_tensor", "tensor_dtype"]


class _DType(NamedTuple):
    """One ``DataType``: its enum value, TensorFlow's name for it (as its messages print
    it), the numpy dtype (``None``: strings), and the typed field holding its values."""

    enum: int
    tf_name: str
    numpy: np.dtype[Any] | None
    field: int


def _bfloat16() -> np.dtype[Any] | None:
    # numpy has no bfloat16; ml_dtypes (which TensorFlow and JAX install) adds one.
    try:
        import ml_dtypes  # noqa: PLC0415  (optional, looked for once at import)
    except ImportError:
        return None
    found: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
    return found


_BF16 = _bfloat16()
_DTYPES: Final = [
    _DType(1, "float", np.dtype("<f4"), 5),
    _DType(2, "double", np.dtype("<f8"), 6),
    _DType(3, "int32", np.dtype("<i4"), 7),
    _DType(4, "uint8", np.dtype("u1"), 7),
    _DType(5, "int16", np.dtype("<i2"), 7),
    _DType(6, "int8", np.dtype("i1"), 7),
    _DType(7, "string", None, 8),
    _DType(8, "complex64", np.dtype("<c8"), 9),
    _DType(9, "int64", np.dtype("<i8"), 10),
    _DType(10, "bool", np.dtype("?"), 11),
    _DType(14, "bfloat16", _BF16, 13),
    _DType(17, "uint16", np.dtype("<u2"), 7),
    _DType(18, "complex128", np.dtype("<c16"), 12),
    _DType(19, "half", np.dtype("<f2"), 13),
    _DType(22, "uint32", np.dtype("<u4"), 16),
    _DType(23, "uint64", np.dtype("<u8"), 17),
]
_BY_ENUM: Final = {d.enum: d for d in _DTYPES}
# Every name a dtype goes by: TensorFlow's (tf.float32.name, DataTypeString) and numpy's.
_BY_NAME: Final = {
    **{d.tf_name: d for d in _DTYPES},
    **{d.numpy.name: d for d in _DTYPES if d.numpy is not None},
    "float16": _BY_ENUM[19],
    "float32": _BY_ENUM[1],
    "float64": _BY_ENUM[2],
    "bytes": _BY_ENUM[7],
    "bytes_": _BY_ENUM[7],
    "str_": _BY_ENUM[7],
    "object": _BY_ENUM[7],
}
# Dtypes TensorFlow has that we do not decode: (name, bytes per element in
# tensor_content). A valid tensor of one is a type mismatch for any dtype asked for here.
_OTHER: Final = {
    11: ("qint8", 1), 12: ("quint8", 1), 13: ("qint32", 4), 15: ("qint16", 2),
    16: ("quint16", 2), 20: ("resource", 0), 21: ("variant", 0), 24: ("float8_e5m2", 1),
    25: ("float8_e4m3fn", 1), 26: ("float8_e4m3fnuz", 1), 27: ("float8_e4m3b11fnuz", 1),
    28: ("float8_e5m2fnuz", 1), 29: ("int4", 1), 30: ("uint4", 1), 31: ("int2", 1),
    32: ("uint2", 1), 33: ("float4_e2m1fn", 1),
}  # fmt: skip
_MAX_DIMS: Final = 254  # TensorShape::MaxDimensions()
_INT64_MAX: Final = (1 << 63) - 1
_MASK64: Final = (1 << 64) - 1


def tensor_dtype(dtype: object) -> str:
    """TensorFlow's name for a dtype-like object (a name, a numpy dtype or type, or
    anything with ``.name`` such as ``tf.float32``): ``"float"``, ``"int32"``, ``"string"``...

    >>> tensor_dtype("float32"), tensor_dtype(np.uint8), tensor_dtype(bytes)
    ('float', 'uint8', 'string')
    """
    return _lookup(dtype).tf_name


def _lookup(dtype: object) -> _DType:
    name: object
    if isinstance(dtype, str):
        name = dtype
    elif isinstance(dtype, type) and issubclass(dtype, (bytes, str, np.bytes_, np.str_)):
        name = "string"
    elif isinstance(dtype, (type, np.dtype)):
        try:
            np_dtype = np.dtype(dtype)
        except TypeError:
            name = getattr(dtype, "name", None)
        else:
            name = "string" if np_dtype.kind in "SUO" else np_dtype.name
    else:
        name = getattr(dtype, "name", None)
    found = _BY_NAME.get(name) if isinstance(name, str) else None
    if found is None:
        raise InvalidArgumentError(
            f"unsupported tensor dtype {dtype!r}: use one of "
            f"{', '.join(sorted({d.numpy.name for d in _DTYPES if d.numpy is not None}))}, "
            f"or string"
        )
    if found.numpy is None and found.enum != 7:
        raise InvalidArgumentError(f"dtype {found.tf_name} needs the ml_dtypes package")
    return found


# ---- serialize ------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    value &= _MASK64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _as_array(value: object) -> np.ndarray[Any, Any]:
    """``value`` as an array, converted as ``tf.constant`` converts Python values (ints
    to int32 when they fit, else int64; floats to float32)."""
    numpy_method = getattr(value, "numpy", None)
    if callable(numpy_method) and not isinstance(value, np.ndarray):
        value = numpy_method()  # a tf.Tensor / EagerTensor: its value
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    try:
        array = np.asarray(value)
        if array.dtype.kind in "SU":
            # numpy's fixed-width strings drop trailing NUL bytes: keep the objects.
            array = np.array(value, dtype=object)
    except ValueError as exc:  # ragged nested lists
        raise InvalidArgumentError(f"cannot serialize {value!r}: {exc}") from exc
    if array.dtype == object and array.size and isinstance(array.flat[0], (bytes, str)):
        return array
    if array.dtype.kind == "i":
        fits = array.size == 0 or (array.min() >= -(1 << 31) and array.max() < 1 << 31)
        return array.astype(np.int32 if fits else np.int64)
    if array.dtype.kind == "f" or (array.dtype.kind == "O" and array.size == 0):
        return array.astype(np.float32)
    return array


def serialize_tensor(value: object) -> bytes:
    """The bytes ``tf.io.serialize_tensor`` gives for ``value``: a numpy array or scalar,
    a Python value or nested list (converted as ``tf.constant`` would), or an object with
    ``.numpy()`` such as a ``tf.Tensor``.

    >>> serialize_tensor(np.array([1, 2], np.int32)).hex()
    '080312041202080222080100000002000000'
    >>> parse_tensor(serialize_tensor(np.float32(1.5)), "float32")
    array(1.5, dtype=float32)

    Raises:
        InvalidArgumentError: the value's dtype has no TensorFlow counterpart here
            (e.g. datetime, object arrays of anything but ``bytes``/``str``).
    """
    array = _as_array(value)
    dtype = _BY_ENUM[7] if array.dtype.kind in "SUO" else _lookup(array.dtype)
    shape = b"".join(_field(2, _varint(1 << 3) + _varint(n) if n else b"") for n in array.shape)
    out = [_varint(1 << 3), _varint(dtype.enum), _field(2, shape)]
    if dtype.numpy is None:
        for item in array.reshape(-1).tolist():
            value = item.encode("utf-8") if isinstance(item, str) else item
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise InvalidArgumentTypeError(
                    f"cannot serialize a string tensor holding {type(item).__name__} "
                    f"({item!r}): its elements must all be bytes or str"
                )
            out.append(_field(8, bytes(value)))
    elif array.size:
        out.append(_field(4, np.ascontiguousarray(array, dtype=dtype.numpy).tobytes()))
    return b"".join(out)


# ---- parse ----------------------------------------------------------------------------


class _Malformed(Exception):
    """The bytes are no valid protobuf message (TensorFlow: 'Could not parse')."""


class _Invalid(Exception):
    """A valid message that is no valid tensor (TensorFlow: 'Cannot parse tensor')."""


def _malformed(reason: str, offset: int) -> _Malformed:
    del reason, offset  # TensorFlow says only 'Could not parse'
    return _Malformed()


#: One varint in ``buf[pos:end]``: ``(value, new pos)``, failing as :class:`_Malformed`.
_read_varint = varint_reader(_malformed)


def _read_tag(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """A tag as protobuf's C++ parser reads it: a varint of at most five bytes, of which
    only the low 32 bits count."""
    value = 0
    for i in range(5):
        if pos >= end:
            raise _Malformed
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            return value & 0xFFFFFFFF, pos
    raise _Malformed


def _fields(buf: bytes, pos: int, end: int) -> list[tuple[int, int, int, int]]:
    """Every field of a message: (number, wire type, value start, value end); for a
    varint the value itself is in the third slot (start) and the fourth is -1."""
    out: list[tuple[int, int, int, int]] = []
    while pos < end:
        tag, pos = _read_tag(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise _Malformed
        if wire == 0:
            value, pos = _read_varint(buf, pos, end)
            out.append((number, 0, value, -1))
        elif wire == 2:
            n, pos = _read_varint(buf, pos, end)
            if n > end - pos:
                raise _Malformed
            out.append((number, 2, pos, pos + n))
            pos += n
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if end - pos < size:
                raise _Malformed
            out.append((number, wire, pos, pos + size))
            pos += size
        elif wire == 3:
            pos = _skip_group(buf, pos, end, number)
        else:
            raise _Malformed
    return out


def _skip_group(buf: bytes, pos: int, end: int, number: int) -> int:
    stack = [number]
    while stack:
        if len(stack) > 100:  # protobuf's recursion limit
            raise _Malformed
        tag, pos = _read_tag(buf, pos, end)
        field, wire = tag >> 3, tag & 7
        if field == 0:
            raise _Malformed
        if wire == 3:
            stack.append(field)
        elif wire == 4:
            if stack.pop() != field:
                raise _Malformed
        elif wire == 0:
            pos = _read_varint(buf, pos, end)[1]
        elif wire == 2:
            n, pos = _read_varint(buf, pos, end)
            if n > end - pos:
                raise _Malformed
            pos += n
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            if pos > end:
                raise _Malformed
        else:
            raise _Malformed
    return pos


def _packed_varints(buf: bytes, start: int, end: int) -> list[int]:
    out = []
    while start < end:
        value, start = _read_varint(buf, start, end)
        out.append(value)
    return out


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


class _Message(NamedTuple):
    dtype: int
    dims: list[int]
    content: bytes
    values: list[tuple[int, int, int, int]]  # the typed fields, in order


def _message(buf: bytes) -> _Message:
    dtype = 0
    dims: list[int] = []
    content = b""
    values = []
    for number, wire, a, b in _fields(buf, 0, len(buf)):
        if number == 1 and wire == 0:
            dtype = _signed(a, 32)  # an enum is an int32
        elif number == 2 and wire == 2:
            for n, w, da, db in _fields(buf, a, b):
                if n == 2 and w == 2:
                    size = 0
                    for n2, w2, sa, sb in _fields(buf, da, db):
                        if n2 == 1 and w2 == 0:
                            size = _signed(sa, 64)
                        elif n2 == 2 and w2 == 2:
                            _utf8(buf[sa:sb])  # a name: no part of the value, but a string
                    dims.append(size)
        elif number == 4 and wire == 2:
            content = buf[a:b]
        elif 5 <= number <= 17:
            _check_packed(buf, number, wire, a, b)
            values.append((number, wire, a, b))
    return _Message(dtype, dims, content, values)


def _utf8(data: bytes) -> None:
    # protobuf refuses a proto3 ``string`` that is not UTF-8 as it parses.
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Malformed from None


def _check_packed(buf: bytes, number: int, wire: int, a: int, b: int) -> None:
    """Fails as protobuf's parser fails on a known repeated field, whatever the dtype:
    a packed run of fixed-size values of the wrong length, a broken varint in a packed
    run, a broken sub-message (resource handles, variants)."""
    if wire != 2 or number == 8:
        return
    if number in _FIXED:
        if (b - a) % (4 if _FIXED[number][0] == "<f4" else 8):
            raise _Malformed
    elif number in (14, 15):
        _fields(buf, a, b)
    else:
        _packed_varints(buf, a, b)


_FIXED: Final = {5: ("<f4", 5), 6: ("<f8", 1), 9: ("<f4", 5), 12: ("<f8", 1)}


def _typed_values(buf: bytes, msg: _Message, dtype: _DType) -> np.ndarray[Any, Any]:
    """The values of the dtype's typed field, packed and unpacked runs in order: floats
    bit for bit as stored, varints as uint64, strings as an object array."""
    field = dtype.field
    parts: list[Any] = []
    for number, wire, a, b in msg.values:
        if number != field:
            continue
        if field == 8:
            if wire == 2:
                parts.append(buf[a:b])
        elif field in _FIXED:
            if wire in (2, _FIXED[field][1]):  # packed, or one value
                parts.append(buf[a:b])
        elif wire == 2:
            parts.extend(_packed_varints(buf, a, b))
        elif wire == 0:
            parts.append(a)
    if field == 8:
        out = np.empty(len(parts), dtype=object)
        out[:] = parts
        return out
    if field in _FIXED:
        return np.frombuffer(b"".join(parts), _FIXED[field][0])
    return np.array(parts, dtype=np.uint64)


def _from_values(values: np.ndarray[Any, Any], dtype: _DType, n: int) -> np.ndarray[Any, Any]:
    """TensorFlow's FromProtoField: the first ``n`` values, the last repeated to fill,
    each cast as C++ casts the field's type to the dtype."""
    np_dtype = dtype.numpy
    field = dtype.field
    if field in (9, 12):  # complex: (real, imaginary) pairs; an odd last one is ignored
        values = values[: len(values) // 2 * 2].view(np_dtype)
    elif field == 7:  # int32 on the wire (wrapped to narrower dtypes as static_cast does)
        values = (values & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np_dtype)
    elif field == 13:  # half/bfloat16 bit patterns in int32s
        values = (values & 0xFFFF).astype(np.uint16).view(np_dtype)
    elif field == 10:
        values = values.view(np.int64)
    elif field == 16:  # a uint32 field keeps the low 32 bits
        values = (values & 0xFFFFFFFF).astype(np.uint32)
    elif field == 11:
        values = values != 0
    if len(values) == 0:
        if np_dtype is None:
            out = np.empty(n, dtype=object)
            out[:] = [b""] * n
            return out
        return np.zeros(n, dtype=np_dtype)
    return values[np.minimum(np.arange(n), len(values) - 1)]


def _strings_from_content(content: bytes, n: int) -> np.ndarray[Any, Any]:
    """DecodeStringList: ``n`` varint32 lengths, then the strings back to back."""
    pos = 0
    end = len(content)
    sizes = []
    for _ in range(n):
        try:
            size, pos = _read_varint(content, pos, end)
        except _Malformed:
            raise _Invalid("a broken string length in tensor_content") from None
        if size > 0xFFFFFFFF:
            raise _Invalid("a string length is over 32 bits")
        sizes.append(size)
    if sum(sizes) != end - pos:
        raise _Invalid("tensor_content holds a different number of string bytes")
    out = np.empty(n, dtype=object)
    for i, size in enumerate(sizes):
        out[i] = content[pos : pos + size]
        pos += size
    return out


def _tensor(buf: bytes, msg: _Message) -> tuple[_DType, np.ndarray[Any, Any]]:
    if msg.dtype == 0:
        raise _Invalid("the dtype is DT_INVALID (no dtype field)")
    if len(msg.dims) > _MAX_DIMS:
        raise _Invalid(f"{len(msg.dims)} dimensions, more than {_MAX_DIMS}")
    n = 1
    for size in msg.dims:
        if size < 0:
            raise _Invalid(f"a negative dimension ({size})")
        n *= size
        if n > _INT64_MAX:
            raise _Invalid("more elements than an int64 counts")
    dtype = _BY_ENUM.get(msg.dtype)
    if dtype is None or (dtype.numpy is None and dtype.enum != 7):
        other = _OTHER.get(msg.dtype)
        if other is not None:
            name, size = other
            if n and msg.content and size and len(msg.content) != n * size:
                raise _Invalid(f"tensor_content has {len(msg.content)} bytes for {n} x {name}")
            raise _Mismatch(name)  # no dtype a caller can ask for here
        raise _Invalid(f"unsupported or unknown dtype {msg.dtype}")
    if n == 0:
        flat = np.zeros(0, dtype=dtype.numpy if dtype.numpy is not None else object)
    elif msg.content:
        if dtype.numpy is None:
            flat = _strings_from_content(msg.content, n)
        else:
            if len(msg.content) != n * dtype.numpy.itemsize:
                raise _Invalid(
                    f"tensor_content has {len(msg.content)} bytes, "
                    f"{n} x {dtype.tf_name} needs {n * dtype.numpy.itemsize}"
                )
            flat = np.frombuffer(msg.content, dtype=dtype.numpy).copy()
            if dtype.enum == 10 and bool(np.any(flat.view(np.uint8) > 1)):
                raise _Invalid("a bool byte other than 0 or 1 in tensor_content")
    else:
        flat = _from_values(_typed_values(buf, msg, dtype), dtype, n)
    if dtype.numpy is not None:
        flat = flat.astype(dtype.numpy.newbyteorder("="), copy=False)
    return dtype, flat.reshape(msg.dims)


class _Mismatch(Exception):
    """A valid tensor of a dtype we do not decode (for the type-mismatch message)."""


def parse_tensor(data: object, dtype: object) -> npt.NDArray[Any]:
    """What ``tf.io.parse_tensor(data, dtype)`` gives, as a numpy array (strings: an
    object array of ``bytes``; a scalar: a 0-d array).

    Args:
        data: the serialized ``TensorProto`` (bytes-like, or an object with ``.numpy()``
            giving them, such as a scalar ``tf.Tensor``).
        dtype: the expected dtype (a name, a numpy dtype, or e.g. ``tf.float32``).

    >>> parse_tensor(bytes.fromhex("0801120022040000c03f"), "float32")
    array(1.5, dtype=float32)

    Raises:
        InvalidArgumentError: with TensorFlow's message: the bytes are no
            ``TensorProto``, no valid tensor, or one of another dtype.
    """
    want = _lookup(dtype)
    buf = _as_bytes(data)
    try:
        got, array = _tensor(buf, _message(buf))
    except _Malformed:
        raise InvalidArgumentError(
            "Could not parse `serialized` as TensorProto, base64: "
            + base64.b64encode(buf).decode("ascii")
        ) from None
    except _Invalid as exc:
        raise InvalidArgumentError(f"Cannot parse tensor from proto: {exc}") from None
    except _Mismatch as exc:
        got_name = str(exc)
        raise InvalidArgumentError(
            f"Type mismatch between parsed tensor ({got_name}) and dtype ({want.tf_name})"
        ) from None
    if got.enum != want.enum:
        raise InvalidArgumentError(
            f"Type mismatch between parsed tensor ({got.tf_name}) and dtype ({want.tf_name})"
        )
    return array


def _as_bytes(data: object) -> bytes:
    numpy_method: Callable[[], object] | None = getattr(data, "numpy", None)
    if numpy_method is not None and not isinstance(data, np.ndarray):
        data = numpy_method()
    if isinstance(data, np.ndarray):
        if data.shape != ():
            raise InvalidArgumentError(
                f"Expected `serialized` to be a scalar, got shape: {list(data.shape)}"
            )
        data = data.item()
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise InvalidArgumentTypeError(
        f"parse_tensor takes the serialized bytes, got {type(data).__name__}"
    )


# ---- a feature spec ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, init=False)
class TensorFeature:
    """A bytes feature holding one ``tf.io.serialize_tensor`` value per record, parsed
    into arrays (what ``tf.io.parse_tensor`` gives for each record).

    Args:
        dtype: the tensors' dtype (as :func:`parse_tensor` takes it); a tensor of another
            dtype fails with TensorFlow's type-mismatch message.
        shape: the shape every tensor must have (checked); ``None`` accepts any. A batch
            is one array ``[n, *shape]`` when every tensor has one shape, else a list.

    Example:
        >>> spec = TensorFeature("float32", shape=[2, 3])
        >>> spec.dtype, spec.shape
        ('float32', (2, 3))
    """

    dtype: str
    shape: tuple[int, ...] | None

    def __init__(self, dtype: object, shape: object = None) -> None:
        found = _lookup(dtype)
        name = "string" if found.numpy is None else found.numpy.name
        object.__setattr__(self, "dtype", name)
        if shape is None:
            object.__setattr__(self, "shape", None)
            return
        dims = getattr(shape, "as_list", None)
        items = dims() if callable(dims) else shape
        if isinstance(items, (int, np.integer)):
            items = [items]
        try:
            sizes = tuple(int(d) for d in items)  # type: ignore[union-attr]
        except TypeError:
            raise InvalidArgumentError(
                f"TensorFeature: shape must be a sequence of ints, got {shape!r}"
            ) from None
        if any(d < 0 for d in sizes):
            raise InvalidArgumentError(f"TensorFeature: dimensions must be >= 0, got {shape!r}")
        object.__setattr__(self, "shape", sizes)


def decode_tensors(
    name: str,
    spec: TensorFeature,
    values: npt.NDArray[Any],
    single: bool,
    prefix: Callable[[str, int | None], str],
) -> Any:
    """The tensors of ``values`` (one record's 0-d, or a batch's 1-d object array of bytes).

    Returns:
        one record: its array; a batch: one array ``[n, *shape]`` when every tensor has
        one shape (the spec's, or the first's), else a list of arrays.

    Raises:
        ExampleParseError: a value is no serialized tensor of the spec's dtype and shape
            (TensorFlow's message, ``.key`` and ``.index`` set).
    """
    if single:
        return _one_tensor(name, spec, values.item(), None, prefix)
    tensors = [_one_tensor(name, spec, v, i, prefix) for i, v in enumerate(values.tolist())]
    if not tensors:
        dtype = object if spec.dtype == "string" else spec.dtype
        return np.zeros((0, *(spec.shape or ())), dtype=dtype)
    first = tensors[0].shape
    if all(t.shape == first for t in tensors):
        return np.stack(tensors)
    return tensors


def _one_tensor(
    name: str,
    spec: TensorFeature,
    data: bytes,
    index: int | None,
    prefix: Callable[[str, int | None], str],
) -> npt.NDArray[Any]:
    try:
        array = parse_tensor(data, spec.dtype)
    except InvalidArgumentError as exc:
        raise ExampleParseError(
            f"{prefix(name, index)}TensorFeature: {exc}", key=name, index=index
        ) from None
    if spec.shape is not None and array.shape != spec.shape:
        raise ExampleParseError(
            f"{prefix(name, index)}TensorFeature: the tensor has shape {list(array.shape)}, "
            f"the spec says {list(spec.shape)}",
            key=name,
            index=index,
        )
    return array
