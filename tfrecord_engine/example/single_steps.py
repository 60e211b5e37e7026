"""How :class:`~.single.SingleDecoder` reads each requested key of one record.

Every requested key gets a :class:`KeyStep`: ``read(record, start, end)`` turns the
``Feature`` at ``record[start:end]`` into the key's value, and ``convert`` does the same
from the values :func:`~..example.wire.decode_feature` decoded (the feature-map tier).
Either returns ``None`` where the exact path must decide (a count or kind mismatch,
an encoding it does not read).

The lists writers emit (one packed run filling its list, filling the ``Feature``) are
read without a Python list: floats as one ``np.frombuffer`` copy, varints with the
compiled loop (:func:`~..kernels.single.packed_int64`) or, before it is loaded, numpy.
Anything else goes through ``decode_feature``, as the exact parser reads it.

A ``RaggedFeature`` requests its value key and one key per partition; its sample is
built from those keys' values by :func:`~..example.ragged.single_ragged`, the function
``parse_single_example`` uses, so values, row splits and their dtypes are the same.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import ExampleParseError, MalformedExampleError
from ..kernels.single import FLOATS, INTS, ONE_BYTES, OTHER, packed_int64
from ..kernels.varint import varint_reader
from .columns import object_array
from .ragged import single_ragged
from .records import KIND_OF
from .specs import (
    FeatureSpec,
    FixedLenFeature,
    RaggedFeature,
    RawFeature,
    RowLengths,
    UniformRowLength,
    VarLenFeature,
)
from .values import RaggedValue
from .varints import decode_packed
from .varlen import VarLenList, varlen_array
from .wire import KIND_BYTES, KIND_FLOAT, KIND_INT64, RawValues, decode_feature

__all__ = [
    "TAKE_ARRAY",
    "TAKE_BYTES",
    "TAKE_READ",
    "TAKE_SCALAR",
    "TAKE_VALUE",
    "TAKE_VARLEN",
    "Compiled",
    "KeyStep",
    "Output",
    "RawLayout",
    "RowLengthsTake",
    "plan",
    "read_varint",
]

#: A key's value from its decoded values, or ``None`` for the exact path.
Convert = Callable[[RawValues], Any]
#: A key's value from its ``Feature`` bytes ``record[start:end]``, or ``None``.
Read = Callable[[bytes, int, int], Any]
#: A feature's sample from the values of every key (by slot), or ``None``.
Finish = Callable[[list[Any]], Any]

TAG_OF = {KIND_BYTES: 0x0A, KIND_FLOAT: 0x12, KIND_INT64: 0x1A}
_NUMPY = {"int64": np.int64, "float32": np.float32}
_MASK64 = (1 << 64) - 1
#: Runs up to this many bytes are decoded by a Python loop (cheaper than any call).
_LOOP_MAX_BYTES = 12


#: How :class:`~.single.SingleDecoder` makes a key's value from the compiled decode
#: (:func:`~..kernels.single.decode_one`): its one number (a numpy scalar), its numbers
#: (an array, reshaped to ``Compiled.shape`` where that has two dimensions or more), its
#: numbers as a :class:`~.varlen.VarLenArray`, its one ``bytes`` value, that value
#: through ``Compiled.value`` (``RawFeature``), or ``read`` on its ``Feature``.
TAKE_SCALAR, TAKE_ARRAY, TAKE_VARLEN, TAKE_BYTES, TAKE_VALUE, TAKE_READ = range(6)
#: A value from the record and the span of its one ``bytes`` value, or ``None``.
Value = Callable[[bytes, int, int], Any]


class RawLayout(NamedTuple):
    """The values of a ``RawFeature`` of fixed size: ``nbytes`` bytes of ``wire``
    (the stored byte order) each, made ``dtype`` of ``shape``."""

    nbytes: int
    wire: np.dtype[Any]
    dtype: np.dtype[Any]
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Compiled:
    """How the compiled decode takes a key: its code there (``kernels.single``'s
    ``OTHER``, ``INTS``, ``FLOATS``, ``ONE_BYTES``), the values it must have (-1: any),
    and how the value is made from what it gives (a ``TAKE_*``)."""

    code: int = OTHER
    count: int = -1
    take: int = TAKE_READ
    shape: tuple[int, ...] | None = None
    value: Value | None = None
    #: A ``RawFeature``'s value (``TAKE_VALUE``): its bytes, stored and output dtypes
    #: and shape, so that a batch's values are cut from one gather of them.
    raw: RawLayout | None = None


_READ = Compiled()


@dataclass(frozen=True)
class KeyStep:
    """One requested key: its name and bytes, wire kind and tag, its readers, and how
    the compiled decode takes it."""

    name: str
    key: bytes
    kind: int
    tag: int
    convert: Convert
    read: Read
    compiled: Compiled = _READ


class RowLengthsTake(NamedTuple):
    """A ``RaggedFeature`` of one unvalidated ``RowLengths`` partition (the usual spec):
    the slots of its values and of its row lengths, the row splits' dtype, and whether
    the values are strings. A batch's row splits are then made in one pass."""

    values: int
    lengths: int
    dtype: type[np.integer[Any]]
    strings: bool


@dataclass(frozen=True)
class Output:
    """One feature of the sample: a key's value as is (``finish`` None), or built from
    the values of several keys."""

    name: str
    slot: int
    finish: Finish | None = None
    #: What ``finish`` does, where it is a ``RowLengths`` partition's (see above).
    lengths: RowLengthsTake | None = None


def _fail(reason: str, offset: int) -> MalformedExampleError:
    return MalformedExampleError(reason, offset=offset)


#: ``read_varint(buf, pos, end) -> (value, position after it)``: the per-call decoders'
#: varints, read by the library's one reader (:func:`~..kernels.varint.varint_reader`);
#: a varint cut off by ``end`` or longer than 10 bytes raises
#: :class:`~..errors.MalformedExampleError` (the callers then leave the record to the
#: exact path).
read_varint = varint_reader(_fail)


def _payload(rec: bytes, start: int, end: int, tag: int) -> tuple[int, int] | None:
    """``(a, b)``: the packed run of the list ``tag`` filling ``rec[start:end]`` (both
    the list and the run filling), ``(end, end)`` for an empty list, else ``None``."""
    if rec[start] != tag:
        return None
    size = rec[start + 1]
    at = start + 2
    if size >= 0x80:
        size, at = read_varint(rec, start + 1, len(rec))
    if at + size != end:
        return None
    if size == 0:
        return end, end
    if rec[at] != 0x0A:
        return None  # unpacked values: the generic decoder
    size = rec[at + 1]
    at += 2
    if size >= 0x80:
        size, at = read_varint(rec, at - 1, len(rec))
    return (at, end) if at + size == end else None


def read_ints(rec: bytes, start: int, end: int) -> npt.NDArray[np.int64] | None:
    """The int64 values of the ``Feature`` at ``rec[start:end]`` (an owned array)."""
    run = _payload(rec, start, end, 0x1A)
    if run is None:
        if rec[start] != 0x1A:
            return None
        return np.array(decode_feature(rec, (start, end), KIND_INT64), np.int64)
    a, b = run
    if b - a > _LOOP_MAX_BYTES:
        if rec[a:b].isascii():  # every varint one byte (< 0x80): one C scan tells
            return np.frombuffer(rec, np.uint8, b - a, a).astype(np.int64)
        got = packed_int64(rec, a, b)
        if got is not None:
            return got
        return decode_packed(rec, a, b, _fail).view(np.int64)
    values = []
    pos = a
    while pos < b:
        v = rec[pos]
        if v < 0x80:
            pos += 1
        else:
            v, pos = read_varint(rec, pos, len(rec))
            if pos > b:
                return None  # torn at the run's end: the exact path reports it
            v &= _MASK64
            if v >> 63:
                v -= 1 << 64
        values.append(v)
    return np.array(values, np.int64)


def read_floats(rec: bytes, start: int, end: int) -> npt.NDArray[np.float32] | None:
    """The float32 values of the ``Feature`` at ``rec[start:end]`` (an owned array)."""
    run = _payload(rec, start, end, 0x12)
    if run is None or (run[1] - run[0]) % 4:
        if rec[start] != 0x12:
            return None
        return np.array(decode_feature(rec, (start, end), KIND_FLOAT), np.float32)
    a, b = run
    # astype copies: the sample owns writable memory (torch.from_numpy wants it).
    return np.frombuffer(rec, "<f4", (b - a) >> 2, a).astype(np.float32)


def read_strings(rec: bytes, start: int, end: int) -> list[bytes] | None:
    """The ``bytes`` values of the ``Feature`` at ``rec[start:end]``."""
    if rec[start] != 0x0A:
        return None
    got: list[bytes] = decode_feature(rec, (start, end), KIND_BYTES)  # type: ignore[assignment]
    return got


_READ_OF: dict[int, Read] = {KIND_INT64: read_ints, KIND_FLOAT: read_floats}


def _array_convert(kind: int) -> Convert:
    if kind == KIND_BYTES:
        return list
    dtype = np.int64 if kind == KIND_INT64 else np.float32
    return lambda v: np.array(v, dtype)


def _then(read: Read, shape: Callable[[Any], Any]) -> Read:
    def step(rec: bytes, start: int, end: int) -> Any:
        got = read(rec, start, end)
        return None if got is None else shape(got)

    return step


#: A key's readers and how the compiled decode takes it.
Steps = tuple[Convert, Read, Compiled]
_CODE_OF = {KIND_INT64: INTS, KIND_FLOAT: FLOATS}


def _fixed(spec: FixedLenFeature) -> Steps | None:
    count = math.prod(spec.shape)
    if count == 0:
        return None
    shape = spec.shape
    if spec.dtype == "string":
        if not shape:
            one: Convert = lambda v: v[0] if len(v) == 1 else None  # noqa: E731
            return one, _then(read_strings, one), Compiled(ONE_BYTES, 1, TAKE_BYTES)

        def strings(v: RawValues) -> Any:
            if len(v) != count:
                return None
            out = np.empty(count, dtype=object)
            out[:] = v
            return out.reshape(shape).tolist()

        return strings, _then(read_strings, strings), _READ
    scalar = _NUMPY[spec.dtype]
    kind = KIND_OF[spec.dtype]
    if not shape:
        first: Convert = lambda v: scalar(v[0]) if len(v) == 1 else None  # noqa: E731
        return first, _then(_READ_OF[kind], first), Compiled(_CODE_OF[kind], 1, TAKE_SCALAR)
    dtype = np.dtype(scalar)
    convert: Convert = lambda v: np.array(v, dtype).reshape(shape) if len(v) == count else None  # noqa: E731
    read = _then(_READ_OF[kind], lambda a: a.reshape(shape) if a.size == count else None)
    compiled = Compiled(_CODE_OF[kind], count, TAKE_ARRAY, shape if len(shape) > 1 else None)
    return convert, read, compiled


def _raw(spec: RawFeature) -> Steps | None:
    nbytes = spec.nbytes
    if nbytes == 0:
        return None
    dtype = np.dtype(spec.dtype)
    little = spec.wire_dtype  # the stored byte order, as tf.io.decode_raw's little_endian
    shape = spec.shape
    fit = spec.fit

    def raw(v: RawValues) -> Any:
        if len(v) != 1:
            return None
        data: bytes = fit(v[0])  # type: ignore[arg-type]  # a bytes list (KIND_BYTES)
        if len(data) != nbytes:
            return None
        # astype copies: the sample owns writable memory (torch.from_numpy wants it).
        out = np.frombuffer(data, little).astype(dtype)
        return out.reshape(shape) if shape else out[0]  # shape []: a numpy scalar

    count = nbytes // little.itemsize

    def value(rec: bytes, start: int, end: int) -> Any:
        if end - start != nbytes:
            return None  # cut or padded to fixed_length: the Python path
        out = np.frombuffer(rec, little, count, start).astype(dtype)
        return out.reshape(shape) if shape else out[0]

    layout = RawLayout(nbytes, little, dtype, tuple(shape))
    compiled = (
        _READ
        if spec.fixed_length is not None
        else Compiled(ONE_BYTES, 1, TAKE_VALUE, value=value, raw=layout)
    )
    return raw, _then(read_strings, raw), compiled


def _variable(kind: int) -> Steps:
    """A ``VarLenFeature`` (or unpartitioned ``RaggedFeature``) value, typed as
    variable-length values as :func:`~.samples.sample_of` gives them (see .varlen)."""
    if kind == KIND_BYTES:
        return VarLenList, _then(read_strings, VarLenList), _READ
    dtype = np.int64 if kind == KIND_INT64 else np.float32
    compiled = Compiled(_CODE_OF[kind], -1, TAKE_VARLEN)
    return (
        (lambda v: varlen_array(np.array(v, dtype))),
        _then(_READ_OF[kind], varlen_array),
        compiled,
    )


#: Up to this many rows, row splits are summed in Python (numpy's calls cost more);
#: with numpy 2 only, which refuses a Python int out of the dtype's range (numpy 1
#: wraps it with a DeprecationWarning).
_PY_SPLITS = 32 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 0


def _row_splits(lengths: npt.NDArray[np.int64], dtype: type[np.signedinteger[Any]]) -> Any:
    """The row splits of row ``lengths``, as TensorFlow makes them: each length cast to
    ``dtype``, summed in int64, the sums cast back to ``dtype`` (casts wrap).

    A few rows are summed in Python: where every sum fits ``dtype`` (else
    ``OverflowError``, and numpy's casts decide), it equals the wrapped one (casts and
    sums agree modulo 2**32, or 2**64).

    >>> _row_splits(np.array([2, 0, 3]), np.int32).tolist()
    [0, 2, 2, 5]
    >>> _row_splits(np.array([2**31, 2**31, 1]), np.int32).tolist()
    [0, -2147483648, 0, 1]
    """
    n = len(lengths)
    if n <= _PY_SPLITS:
        try:
            return np.fromiter(itertools.accumulate(lengths.tolist(), initial=0), dtype, n + 1)
        except OverflowError:
            pass  # (a sum past the dtype's range: the wrapping casts below)
    splits = np.zeros(n + 1, np.int64)
    np.cumsum(lengths.astype(dtype), out=splits[1:])
    return splits.astype(dtype, copy=False)


def _ragged_finish(
    name: str, spec: RaggedFeature, slots: dict[str, int]
) -> tuple[Finish, RowLengthsTake | None]:
    value_slot = slots[spec.value_key or name]
    strings = spec.dtype == "string"
    parts = [(key, slot) for key, slot in slots.items() if slot != value_slot]

    # One RowLengths partition, unvalidated (the usual spec): single_ragged's steps,
    # inline (the row lengths cast to the splits' dtype, summed in int64, cast back).
    lengths_slot = -1
    if (
        len(spec.partitions) == 1
        and isinstance(spec.partitions[0], RowLengths)
        and not spec.validate
    ):
        lengths_slot = parts[0][1]
    dtype = np.int64 if spec.row_splits_dtype == "int64" else np.int32

    def finish(vals: list[Any]) -> Any:
        values = vals[value_slot]
        if strings:
            values = object_array(values)
        if lengths_slot >= 0:
            return RaggedValue(values, _row_splits(vals[lengths_slot], dtype))
        try:
            got = single_ragged(name, spec, values, {key: vals[s] for key, s in parts})
        except ExampleParseError:
            return None  # the exact path raises it, with its own wording
        if isinstance(got, RaggedValue):
            return got
        # Only uniform partitions: an array, typed as samples.sample_of types it.
        return VarLenList(got.tolist()) if got.dtype == object else varlen_array(got)

    if lengths_slot < 0:
        return finish, None
    return finish, RowLengthsTake(value_slot, lengths_slot, dtype, strings)


def plan(features: Mapping[str, FeatureSpec]) -> tuple[list[KeyStep], list[Output]] | None:
    """The steps of every requested key and the sample's outputs, or ``None`` where some
    spec (or a key requested twice) always takes the exact path."""
    steps: list[KeyStep] = []
    outputs: list[Output] = []
    slots: dict[str, int] = {}

    def add(
        key: str, kind: int, convert: Convert, read: Read, compiled: Compiled = _READ
    ) -> int | None:
        if key in slots:
            return None  # a key shared by two specs: the exact path
        slots[key] = len(steps)
        steps.append(KeyStep(key, key.encode("utf-8"), kind, TAG_OF[kind], convert, read, compiled))
        return slots[key]

    for name, spec in features.items():
        pair: Steps | None
        if isinstance(spec, FixedLenFeature):
            pair, kind = _fixed(spec), KIND_OF[spec.dtype]
        elif isinstance(spec, RawFeature):
            pair, kind = _raw(spec), KIND_BYTES
        elif isinstance(spec, VarLenFeature) or (
            isinstance(spec, RaggedFeature) and not spec.partitions
        ):
            kind = KIND_OF[spec.dtype]
            pair = _variable(kind)
            if isinstance(spec, RaggedFeature):
                key = spec.value_key or name
                slot = add(key, kind, *pair)
                if slot is None:
                    return None
                outputs.append(Output(name, slot))
                continue
        elif isinstance(spec, RaggedFeature):
            kind = KIND_OF[spec.dtype]
            mine: dict[str, int] = {}
            keys = [(spec.value_key or name, kind)] + [
                (p.key, KIND_INT64) for p in spec.partitions if not isinstance(p, UniformRowLength)
            ]
            for key, k in keys:
                if k == KIND_BYTES:
                    slot = add(key, k, _array_convert(k), read_strings)
                else:
                    array = Compiled(_CODE_OF[k], -1, TAKE_ARRAY)
                    slot = add(key, k, _array_convert(k), _READ_OF[k], array)
                if slot is None:
                    return None
                mine[key] = slot
            outputs.append(Output(name, -1, *_ragged_finish(name, spec, mine)))
            continue
        else:
            return None
        if pair is None:
            return None
        slot = add(name, kind, *pair)
        if slot is None:
            return None
        outputs.append(Output(name, slot))
    return steps, outputs
