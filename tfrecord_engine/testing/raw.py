"""Hypothesis strategies for :class:`~tfrecord_engine.RawFeature`: specs, batches, faults.

:func:`raw_cases` draws a spec and a batch of serialized Examples (written by the test
kit's own serializer, :func:`~.examples.serialize_example`) whose raw feature is valid
in every record, with the bytes each record must decode from (:meth:`RawCase.expected`
is ``np.frombuffer(value, dtype).reshape(shape)`` per record). ``uniform=True`` gives
records sharing one byte layout (template decoding); otherwise key order, the width of
a neighbouring int64 and a free-text neighbour vary per record, and some records are
written in forms only the exact path takes (concatenated Examples, unknown fields).

:func:`raw_error_cases` puts one faulty record into such a batch: a value of the wrong
size, a list of the wrong kind, zero or two values, or a missing feature without default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

from ..example.specs import FixedLenFeature, RawDType, RawFeature
from .examples import Entry, serialize_example

__all__ = [
    "RAW_DTYPES",
    "Fault",
    "RawCase",
    "RawErrorCase",
    "raw_cases",
    "raw_error_cases",
    "raw_specs",
]

RAW_DTYPES: tuple[RawDType, ...] = get_args(RawDType)
Fault = Literal["short", "long", "int64", "float", "empty", "two", "missing"]
_FAULTS: tuple[Fault, ...] = get_args(Fault)


@dataclass(frozen=True)
class RawCase:
    """A batch whose ``key`` parses with ``spec``.

    Attributes:
        key: the raw feature's key (the batch also holds ``"label"`` and maybe ``"note"``).
        spec: the RawFeature.
        records: the serialized Examples.
        values: per record, the raw value's bytes, or None where the feature is missing
            (then ``spec`` has a default).
    """

    key: str
    spec: RawFeature
    records: list[bytes]
    values: list[bytes | None]

    @property
    def default_bytes(self) -> bytes | None:
        """The default value's bytes (little-endian), or None."""
        if self.spec.default_value is None:
            return None
        return np.asarray(self.spec.default_value, self.spec.wire_dtype).tobytes()

    @property
    def string_spec(self) -> FixedLenFeature:
        """The ``FixedLenFeature([], "string")`` that reads the same values as bytes."""
        return FixedLenFeature([], "string", default_value=self.default_bytes)

    def expected(self) -> npt.NDArray[Any]:
        """``[batch, *shape]``: each record's value through ``np.frombuffer``."""
        rows = []
        for v in self.values:
            value = self.default_bytes if v is None else self.spec.fit(v)
            assert value is not None
            rows.append(np.frombuffer(value, self.spec.wire_dtype).reshape(self.spec.shape))
        # Stacked, not assigned: a bool byte other than 0 or 1 stays as stored (as
        # tf.io.decode_raw leaves it); the native byte order comes from astype.
        out = np.stack(rows) if rows else np.zeros((0, *self.spec.shape), self.spec.wire_dtype)
        return out.astype(np.dtype(self.spec.dtype), copy=False).reshape(
            len(rows), *self.spec.shape
        )


@dataclass(frozen=True)
class RawErrorCase:
    """A :class:`RawCase` batch with one faulty record at ``index``."""

    case: RawCase
    index: int
    fault: Fault


@st.composite
def raw_specs(
    draw: st.DrawFn,
    *,
    max_dims: int = 3,
    max_dim: int = 5,
    default: bool | None = None,
    fixed_length: bool = True,
) -> RawFeature:
    """A RawFeature of any supported dtype and a small shape (zero sizes included), in
    either byte order, with or without a ``fixed_length``.

    ``default``: True/False forces a default value or none; None draws either.
    ``fixed_length=False`` never draws one (values must then have the exact size).
    """
    shape = draw(st.lists(st.integers(0, max_dim), max_size=max_dims))
    dtype = draw(st.sampled_from(RAW_DTYPES))
    # Big-endian values and TensorFlow's fixed_length (values of any size, cut or padded).
    little = draw(st.booleans()) if np.dtype(dtype).itemsize > 1 else True
    padded = (
        math.prod(shape) * np.dtype(dtype).itemsize
        if fixed_length
        and math.prod(shape) > 0
        and dtype not in ("bool", "complex64", "complex128")
        and draw(st.booleans())
        else None
    )
    if default is None:
        default = draw(st.booleans())
    if not default:
        return RawFeature(shape, dtype, little_endian=little, fixed_length=padded)
    size = math.prod(shape)
    if dtype == "bool":
        values = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)), np.bool_)
    else:
        raw = draw(
            st.binary(
                min_size=size * np.dtype(dtype).itemsize, max_size=size * np.dtype(dtype).itemsize
            )
        )
        values = np.frombuffer(raw, np.dtype(dtype).newbyteorder("<")).astype(dtype)
    return RawFeature(
        shape, dtype, default_value=values.reshape(shape), little_endian=little, fixed_length=padded
    )


_KEYS = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=12)


@st.composite
def raw_cases(
    draw: st.DrawFn,
    *,
    min_records: int = 1,
    max_records: int = 12,
    uniform: bool | None = None,
    spec: RawFeature | None = None,
) -> RawCase:
    """A batch whose raw feature is valid in every record (see the module docstring)."""
    key = draw(_KEYS.filter(lambda k: k not in ("label", "note")))
    if spec is None:
        spec = draw(raw_specs())
    if uniform is None:
        uniform = draw(st.booleans())
    n = draw(st.integers(min_records, max_records))
    size = spec.nbytes
    records: list[bytes] = []
    values: list[bytes | None] = []
    label_of = st.integers(0, 127) if uniform else st.integers(-(1 << 63), (1 << 63) - 1)
    for _ in range(n):
        if spec.fixed_length is not None and not uniform:  # any size: cut or padded
            value: bytes | None = draw(st.binary(max_size=size + 6))
        else:
            value = draw(st.binary(min_size=size, max_size=size))
        if spec.default_value is not None and not uniform and draw(st.integers(0, 4)) == 0:
            value = None
        entries: list[Entry] = [("label", ("int64", [draw(label_of)]))]
        if value is not None:
            entries.insert(0, (key, ("string", [value])))
        odd: dict[str, Any] = {}
        if not uniform:
            if draw(st.booleans()):
                entries.append(("note", ("string", [draw(st.binary(max_size=20))])))
            entries = draw(st.permutations(entries))
            choice = draw(st.integers(0, 7))
            if choice == 0 and len(entries) > 1:
                odd["split_at"] = 1
            elif choice == 1:
                odd["unknown_field"] = True
        records.append(serialize_example(entries, **odd))
        values.append(value)
    return RawCase(key, spec, records, values)


def _faulty_entry(draw: st.DrawFn, key: str, size: int, fault: Fault) -> Entry | None:
    if fault == "short":
        return (key, ("string", [draw(st.binary(max_size=size - 1))]))
    if fault == "long":
        return (key, ("string", [draw(st.binary(min_size=size + 1, max_size=size + 9))]))
    if fault == "int64":
        return (key, ("int64", draw(st.lists(st.integers(0, 1000), min_size=1, max_size=3))))
    if fault == "float":
        return (key, ("float32", [0.5]))
    if fault == "empty":
        return (key, ("string", []))
    if fault == "two":
        value = draw(st.binary(min_size=size, max_size=size))
        return (key, ("string", [value, value]))
    return None  # missing


@st.composite
def raw_error_cases(
    draw: st.DrawFn, *, min_records: int = 1, max_records: int = 12, uniform: bool | None = None
) -> RawErrorCase:
    """A valid :func:`raw_cases` batch with one record replaced by a faulty one."""
    spec = draw(raw_specs(default=False, fixed_length=False))
    case = draw(
        raw_cases(min_records=min_records, max_records=max_records, uniform=uniform, spec=spec)
    )
    faults = [f for f in _FAULTS if not (f == "short" and spec.nbytes == 0)]
    fault = draw(st.sampled_from(faults))
    index = draw(st.integers(0, len(case.records) - 1))
    entry = _faulty_entry(draw, case.key, spec.nbytes, fault)
    entries: list[Entry] = [("label", ("int64", [1]))]
    if entry is not None:
        entries.insert(0, entry)
    records = list(case.records)
    records[index] = serialize_example(entries)
    values = list(case.values)
    values[index] = None
    return RawErrorCase(RawCase(case.key, spec, records, values), index, fault)
