"""Feature specs with ``tf.io``'s names, arguments and meaning.

``FixedLenFeature``, ``VarLenFeature``, ``FixedLenSequenceFeature``, ``RaggedFeature``
(with the partitions ``RowSplits``, ``RowLengths``, ``RowStarts``, ``RowLimits``,
``ValueRowIds``, ``UniformRowLength``, also reachable as ``RaggedFeature.RowSplits`` ...)
and ``SparseFeature``. Each is a frozen, slotted dataclass that validates and normalizes
itself: ``dtype`` becomes one of ``"int64"``, ``"float32"``, ``"string"``; ``shape`` a
tuple; a default value a flat tuple of Python scalars (the checks and conversions of
these arguments are in :mod:`.specargs`).

:class:`RawFeature` has no ``tf.io`` twin: one bytes value per record read as a numeric
array, what ``tf.io.decode_raw`` does after parsing. Its dtype is a numpy number type
(uint8 ... float64) and its default value a flat tuple of numbers.

``dtype`` may be ``"int64"``/``"float32"``/``"string"`` (alias ``"bytes"``), a numpy dtype
(``np.int64``, ``np.float32``, ``np.bytes_``/``object``), or any object with a ``.name``
among those (so ``tf.int64`` works unchanged).

``tf.io``'s own spec objects (``tf.io.FixedLenFeature`` ... ``tf.io.SparseFeature``, and
``tf.io.RaggedFeature`` with its partitions) are converted to these by duck typing
(:func:`as_feature_specs`: their class name and fields), without importing TensorFlow,
so the same features dict works with ``tf.io.parse_example`` and with ours.

Deliberate difference: a default value that does not fit ``shape`` is rejected when the
spec is built; TensorFlow rejects it later, at parse time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from ..errors import InvalidArgumentError
from .image import ImageFeature
from .specargs import (
    DType,
    RawDType,
    as_shape,
    dtype_name,
    flat_default,
    normalize_dtype,
    raw_default,
    raw_dtype,
)
from .tensors import TensorFeature

__all__ = [
    "DType",
    "DTypeLike",
    "FeatureSpec",
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "Partition",
    "RaggedFeature",
    "RawDType",
    "RawFeature",
    "RowLengths",
    "RowLimits",
    "RowSplits",
    "RowStarts",
    "ShapeLike",
    "SparseFeature",
    "UniformRowLength",
    "ValueRowIds",
    "VarLenFeature",
    "as_feature_spec",
    "as_feature_specs",
    "normalize_dtype",
]

DTypeLike = object
"""A dtype name, a numpy dtype/type, or any object with a ``.name`` (e.g. ``tf.int64``)."""
ShapeLike = object
"""An int, a sequence of ints, or an object with ``.as_list()`` (e.g. ``tf.TensorShape``)."""


@dataclass(frozen=True, slots=True, init=False)
class FixedLenFeature:
    """A fixed-size feature: exactly ``prod(shape)`` values, reshaped row-major.

    Args:
        shape: the output shape per record (``[]`` for a scalar).
        dtype: int64, float32 or string.
        default_value: used when the feature is missing; must have ``shape``
            (a scalar default is accepted for shape ``[]``). ``None``: required.

    Example:
        >>> FixedLenFeature([2], "int64", default_value=[0, 0]).default_value
        (0, 0)
    """

    shape: tuple[int, ...]
    dtype: DType
    default_value: tuple[Any, ...] | None = None

    def __init__(self, shape: ShapeLike, dtype: DTypeLike, default_value: object = None) -> None:
        shape = as_shape(shape, "FixedLenFeature")
        dtype = normalize_dtype(dtype)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "default_value", None)
        if default_value is not None:
            flat = flat_default(default_value, dtype, "FixedLenFeature")
            if len(flat) != math.prod(shape):
                raise InvalidArgumentError(
                    f"FixedLenFeature: default value has {len(flat)} values, but the "
                    f"requested shape {list(shape)} has {math.prod(shape)}"
                )
            object.__setattr__(self, "default_value", flat)


@dataclass(frozen=True, slots=True, init=False)
class VarLenFeature:
    """A variable-length feature, parsed into a :class:`~tfrecord_engine.SparseValue`.

    Example:
        >>> VarLenFeature("bytes").dtype
        'string'
    """

    dtype: DType

    def __init__(self, dtype: DTypeLike) -> None:
        object.__setattr__(self, "dtype", normalize_dtype(dtype))


@dataclass(frozen=True, slots=True, init=False)
class FixedLenSequenceFeature:
    """A feature with a variable number of fixed-shape rows, padded in a batch.

    Args:
        shape: the shape of one row.
        dtype: int64, float32 or string.
        allow_missing: in ``parse_example`` this must be True (as in TensorFlow); in
            ``parse_sequence_example`` it allows a missing feature list.
        default_value: the scalar padding value (0 or b"" when ``None``).

    Example:
        >>> FixedLenSequenceFeature([2], "float32", allow_missing=True).shape
        (2,)
    """

    shape: tuple[int, ...]
    dtype: DType
    allow_missing: bool = False
    default_value: Any = None

    def __init__(
        self,
        shape: ShapeLike,
        dtype: DTypeLike,
        allow_missing: bool = False,
        default_value: object = None,
    ) -> None:
        dtype = normalize_dtype(dtype)
        object.__setattr__(self, "shape", as_shape(shape, "FixedLenSequenceFeature"))
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "allow_missing", bool(allow_missing))
        object.__setattr__(self, "default_value", None)
        if default_value is not None:
            flat = flat_default(default_value, dtype, "FixedLenSequenceFeature")
            if len(flat) != 1:
                raise InvalidArgumentError(
                    "FixedLenSequenceFeature: default_value must be a scalar padding value"
                )
            object.__setattr__(self, "default_value", flat[0])


@dataclass(frozen=True, slots=True)
class RowSplits:
    """Partition by row splits read from the int64 feature ``key``."""

    key: str


@dataclass(frozen=True, slots=True)
class RowLengths:
    """Partition by row lengths read from the int64 feature ``key``."""

    key: str


@dataclass(frozen=True, slots=True)
class RowStarts:
    """Partition by row starts read from the int64 feature ``key``."""

    key: str


@dataclass(frozen=True, slots=True)
class RowLimits:
    """Partition by row limits read from the int64 feature ``key``."""

    key: str


@dataclass(frozen=True, slots=True)
class ValueRowIds:
    """Partition by the row id of each value, read from the int64 feature ``key``."""

    key: str


@dataclass(frozen=True, slots=True)
class UniformRowLength:
    """Partition into rows of ``length`` values each."""

    length: int

    def __post_init__(self) -> None:
        if not isinstance(self.length, (int, np.integer)) or self.length < 0:
            raise InvalidArgumentError(
                f"UniformRowLength: length must be a non-negative int, got {self.length!r}"
            )
        object.__setattr__(self, "length", int(self.length))


Partition = RowSplits | RowLengths | RowStarts | RowLimits | ValueRowIds | UniformRowLength
_KEYED = (RowSplits, RowLengths, RowStarts, RowLimits, ValueRowIds)


@dataclass(frozen=True, slots=True, init=False)
class RaggedFeature:
    """A ragged feature, parsed into a :class:`~tfrecord_engine.RaggedValue`.

    Args:
        dtype: int64, float32 or string.
        value_key: the feature holding the values (default: the spec's own key).
        partitions: partitions of the values, outermost first.
        row_splits_dtype: ``"int32"`` (default) or ``"int64"``.
        validate: check that partitions are consistent.

    Example:
        >>> spec = RaggedFeature("int64", value_key="v",
        ...                      partitions=[RaggedFeature.RowLengths("lens")])
        >>> spec.partitions
        (RowLengths(key='lens'),)
    """

    RowSplits: ClassVar[type[RowSplits]] = RowSplits
    RowLengths: ClassVar[type[RowLengths]] = RowLengths
    RowStarts: ClassVar[type[RowStarts]] = RowStarts
    RowLimits: ClassVar[type[RowLimits]] = RowLimits
    ValueRowIds: ClassVar[type[ValueRowIds]] = ValueRowIds
    UniformRowLength: ClassVar[type[UniformRowLength]] = UniformRowLength

    dtype: DType
    value_key: str | None = None
    partitions: tuple[Partition, ...] = field(default=())
    row_splits_dtype: Literal["int32", "int64"] = "int32"
    validate: bool = False

    def __init__(
        self,
        dtype: DTypeLike,
        value_key: str | None = None,
        partitions: Iterable[Partition] = (),
        row_splits_dtype: DTypeLike = "int32",
        validate: bool = False,
    ) -> None:
        object.__setattr__(self, "value_key", value_key)
        object.__setattr__(self, "validate", bool(validate))
        try:
            dtype = normalize_dtype(dtype)
        except InvalidArgumentError:
            raise InvalidArgumentError(
                f"RaggedFeature: Argument dtype must be int64, float32, or bytes; got {dtype!r}"
            ) from None
        object.__setattr__(self, "dtype", dtype)
        parts = tuple(partitions)
        for p in parts:
            if not isinstance(p, (*_KEYED, UniformRowLength)):
                raise InvalidArgumentError(f"RaggedFeature: unsupported partition {p!r}")
        object.__setattr__(self, "partitions", parts)
        name = dtype_name(row_splits_dtype)
        if name not in ("int32", "int64"):
            raise InvalidArgumentError(
                f"RaggedFeature: row_splits_dtype must be int32 or int64, got {row_splits_dtype!r}"
            )
        object.__setattr__(self, "row_splits_dtype", "int64" if name == "int64" else "int32")


@dataclass(frozen=True, slots=True, init=False)
class SparseFeature:
    """A sparse feature built from index feature(s) and a value feature.

    Args:
        index_key: the int64 feature(s) holding the indices (one per dimension).
        value_key: the feature holding the values.
        dtype: int64, float32 or string.
        size: the dense size of each dimension (an int or one per index key).
        already_sorted: skip sorting by index (TensorFlow's flag). When sorting, values
            whose indices are equal (a record that repeats an index) keep their record
            order; TensorFlow's order among them is unspecified (an unstable sort).

    Example:
        >>> SparseFeature("idx", "val", "float32", 10).index_key
        ('idx',)
    """

    index_key: tuple[str, ...]
    value_key: str
    dtype: DType
    size: tuple[int, ...]
    already_sorted: bool = False

    def __init__(
        self,
        index_key: str | Sequence[str],
        value_key: str,
        dtype: DTypeLike,
        size: ShapeLike,
        already_sorted: bool = False,
    ) -> None:
        keys = (index_key,) if isinstance(index_key, str) else tuple(index_key)
        sizes = as_shape(size, "SparseFeature")
        object.__setattr__(self, "value_key", value_key)
        object.__setattr__(self, "already_sorted", bool(already_sorted))
        if not keys or len(keys) != len(sizes):
            raise InvalidArgumentError(
                f"SparseFeature: index_key {keys!r} and size {sizes!r} must have the same length"
            )
        object.__setattr__(self, "index_key", keys)
        object.__setattr__(self, "size", sizes)
        object.__setattr__(self, "dtype", normalize_dtype(dtype))


@dataclass(frozen=True, slots=True, init=False)
class RawFeature:
    """One bytes value per record, read as a fixed-shape numeric array (``decode_raw``).

    The feature must be a ``bytes_list`` holding exactly one value of
    ``prod(shape) * itemsize`` bytes in every record; the output is ``[batch, *shape]``
    of ``dtype``, the value's bytes read row-major (little-endian unless told otherwise),
    exactly what ``tf.io.decode_raw(value, dtype, little_endian, fixed_length)`` then a
    reshape give. This is the usual way arrays are stored in TFRecords
    (``array.tobytes()``); decoding straight into the array spares a bytes object and an
    ``np.frombuffer`` per record.

    Args:
        shape: the output shape per record (``[]`` for one value).
        dtype: uint8 (default), int8, uint16, int16, int32, uint32, int64, float16,
            float32, float64, bool, complex64 or complex128: a name, a numpy dtype/type,
            or an object with ``.name`` (``tf.uint8``). Big-endian numpy dtypes are
            refused: say ``little_endian=False`` instead.
        default_value: used when the feature is missing: an array-like with
            ``prod(shape)`` values that ``dtype`` holds exactly. ``None``: required.
        little_endian: the values' byte order (``decode_raw``'s argument; each part of a
            complex value is swapped on its own, as TensorFlow does).
        fixed_length: ``decode_raw``'s ``fixed_length``: each value is cut to this many
            bytes or padded with zero bytes, so values of any size are accepted. It
            must be ``prod(shape) * itemsize`` (the bytes the output holds); not for
            bool or complex dtypes (TensorFlow has none for them).

    Example:
        >>> spec = RawFeature([2, 2], "uint16")
        >>> spec.dtype, spec.nbytes
        ('uint16', 8)
        >>> RawFeature([3], "int32", little_endian=False, fixed_length=12).wire_dtype.str
        '>i4'
    """

    shape: tuple[int, ...]
    dtype: RawDType
    default_value: tuple[Any, ...] | None = None
    little_endian: bool = True
    fixed_length: int | None = None

    def __init__(
        self,
        shape: ShapeLike,
        dtype: DTypeLike = "uint8",
        default_value: object = None,
        *,
        little_endian: bool = True,
        fixed_length: int | None = None,
    ) -> None:
        shape = as_shape(shape, "RawFeature")
        name = raw_dtype(dtype)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", name)
        object.__setattr__(self, "default_value", None)
        if not isinstance(little_endian, (bool, np.bool_)):
            raise InvalidArgumentError(
                f"RawFeature: little_endian must be True or False, got {little_endian!r}"
            )
        object.__setattr__(self, "little_endian", bool(little_endian))
        object.__setattr__(self, "fixed_length", None)
        if fixed_length is not None:
            if isinstance(fixed_length, bool) or not isinstance(fixed_length, (int, np.integer)):
                raise InvalidArgumentError(
                    f"RawFeature: fixed_length must be an int, got {fixed_length!r}"
                )
            if name in ("bool", "complex64", "complex128"):
                raise InvalidArgumentError(
                    f"RawFeature: fixed_length is not offered for {name} (as in "
                    "tf.io.decode_raw): store values of the exact size instead"
                )
            if int(fixed_length) <= 0:
                raise InvalidArgumentError(
                    f"RawFeature: fixed_length ({fixed_length}) must be greater than zero"
                )
            if int(fixed_length) != self.nbytes:
                raise InvalidArgumentError(
                    f"RawFeature: fixed_length={fixed_length} but shape {list(shape)} of "
                    f"{name} holds {self.nbytes} bytes: they must agree"
                )
            object.__setattr__(self, "fixed_length", int(fixed_length))
        if default_value is not None:
            object.__setattr__(self, "default_value", raw_default(default_value, shape, name))

    @property
    def nbytes(self) -> int:
        """Bytes of one record's value: ``prod(shape) * itemsize``."""
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    @property
    def wire_dtype(self) -> np.dtype[Any]:
        """The dtype the stored bytes are read as (``dtype`` in the stored byte order)."""
        dtype: np.dtype[Any] = np.dtype(self.dtype).newbyteorder("<" if self.little_endian else ">")
        return dtype

    def fit(self, value: bytes) -> bytes:
        """``value`` cut or zero-padded to ``fixed_length`` (unchanged without one)."""
        size = self.fixed_length
        if size is None or len(value) == size:
            return value
        return value[:size] if len(value) > size else value + bytes(size - len(value))


FeatureSpec = (
    FixedLenFeature
    | VarLenFeature
    | FixedLenSequenceFeature
    | RaggedFeature
    | SparseFeature
    | RawFeature
    | ImageFeature
    | TensorFeature
)


_OURS: tuple[type, ...] = (
    FixedLenFeature,
    VarLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    RawFeature,
    ImageFeature,
    TensorFeature,
)
_PARTITIONS: dict[str, type] = {
    cls.__name__: cls
    for cls in (RowSplits, RowLengths, RowStarts, RowLimits, ValueRowIds, UniformRowLength)
}


def _plain(value: object) -> object:
    # A tf.Tensor default value (anything array-like but not a list): as numpy.
    if value is None or isinstance(value, (list, tuple, np.ndarray, str, bytes)):
        return value
    if hasattr(value, "__array__"):
        return np.asarray(value)
    return value


def _fields(spec: object, names: tuple[str, ...]) -> dict[str, Any] | None:
    try:
        return {n: getattr(spec, n) for n in names}
    except AttributeError:
        return None


def _partition(part: object) -> object:
    if isinstance(part, tuple(_PARTITIONS.values())):
        return part
    cls = _PARTITIONS.get(type(part).__name__)
    if cls is UniformRowLength and hasattr(part, "length"):
        return UniformRowLength(getattr(part, "length"))  # noqa: B009
    if cls is not None and hasattr(part, "key"):
        return cls(getattr(part, "key"))  # noqa: B009
    return part  # refused by RaggedFeature with its own message


def as_feature_spec(spec: object) -> object:
    """One of our specs for ``spec``: ours unchanged, ``tf.io``'s converted.

    A ``tf.io`` spec is recognised by its class name (``FixedLenFeature``,
    ``VarLenFeature``, ``FixedLenSequenceFeature``, ``RaggedFeature``, ``SparseFeature``)
    and fields, never by importing TensorFlow; its dtypes convert by name (``tf.int64``
    -> ``"int64"``), its ``TensorShape`` by ``as_list()``, a tensor default value through
    numpy. Anything else is returned as given (the parser then refuses it).

    Example:
        >>> from collections import namedtuple
        >>> TfFixed = namedtuple("FixedLenFeature", "shape dtype default_value")
        >>> as_feature_spec(TfFixed([2], "int64", None))
        FixedLenFeature(shape=(2,), dtype='int64', default_value=None)
    """
    if isinstance(spec, _OURS):
        return spec
    name = type(spec).__name__
    if name == "FixedLenFeature":
        f = _fields(spec, ("shape", "dtype", "default_value"))
        if f is not None:
            return FixedLenFeature(f["shape"], f["dtype"], _plain(f["default_value"]))
    elif name == "VarLenFeature":
        f = _fields(spec, ("dtype",))
        if f is not None:
            return VarLenFeature(f["dtype"])
    elif name == "FixedLenSequenceFeature":
        f = _fields(spec, ("shape", "dtype", "allow_missing", "default_value"))
        if f is not None:
            return FixedLenSequenceFeature(
                f["shape"], f["dtype"], f["allow_missing"], _plain(f["default_value"])
            )
    elif name == "RaggedFeature":
        f = _fields(spec, ("dtype", "value_key", "partitions", "row_splits_dtype", "validate"))
        if f is not None:
            return RaggedFeature(
                f["dtype"],
                f["value_key"],
                [_partition(p) for p in f["partitions"]],  # type: ignore[misc]
                f["row_splits_dtype"],
                f["validate"],
            )
    elif name == "SparseFeature":
        f = _fields(spec, ("index_key", "value_key", "dtype", "size", "already_sorted"))
        if f is not None:
            return SparseFeature(
                f["index_key"], f["value_key"], f["dtype"], f["size"], f["already_sorted"]
            )
    return spec


def as_feature_specs(features: Any) -> Any:
    """``features`` with every ``tf.io`` spec converted (:func:`as_feature_spec`).

    A mapping of our own specs only is returned as is; anything that is not a mapping
    too (the parser then says what it expected).
    """
    if not isinstance(features, Mapping) or all(isinstance(v, _OURS) for v in features.values()):
        return features
    return {key: as_feature_spec(spec) for key, spec in features.items()}
