"""What each output column is: from ``tfe`` feature specs, or from an Arrow schema.

A :class:`ColumnPlan` says which feature key a column reads, the Example list kind, the
Arrow type (leaf values under at most one variable-length list level and any number of
fixed-size list levels), and what a record without the feature gives.

Two ways to ask:

- **feature specs** (``tfe.FixedLenFeature`` ..., ``tf.io``'s too): TensorFlow's
  semantics, exactly. ``FixedLenFeature([])`` is a plain column, ``[k]`` a fixed-size
  list, ``[k, m]`` nested fixed-size lists; a missing feature takes the default or fails
  as ``tf.io.parse_example`` fails. ``VarLenFeature`` and ``RaggedFeature`` are lists
  (empty where missing), ``FixedLenSequenceFeature`` lists of fixed-size rows (unpadded:
  TensorFlow pads to the longest record of a batch, a table needs no padding).
  ``SparseFeature``, ``RawFeature`` and partitioned ``RaggedFeature`` are decoded by the
  numpy batch decoder and converted (:class:`NumpyPlan`).
- **an Arrow schema**: table semantics. Each field's type gives the shape (a plain
  type: one value; ``fixed_size_list``: exactly that many; ``list``: any number); a
  missing feature is null in a nullable field and an error in another. This is how a
  table written by :func:`tfrecord_engine.arrow.write` reads back identical.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa

from ...errors import InvalidArgumentError
from ...example.specs import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    VarLenFeature,
    as_feature_specs,
)
from ...example.wire import KIND_BYTES, KIND_FLOAT, KIND_INT64
from .leaf import kind_of
from .walk import Role

__all__ = [
    "ColumnPlan",
    "Missing",
    "NullPlan",
    "NumpyPlan",
    "Plan",
    "is_schema",
    "plan_of",
    "unwrap",
]

#: What a record without the feature gives: a null, the spec's default, an empty list,
#: or an error.
Missing = Literal["null", "default", "empty", "error"]

_LEAF = {KIND_INT64: pa.int64(), KIND_FLOAT: pa.float32(), KIND_BYTES: pa.binary()}
_KIND = {"int64": KIND_INT64, "float32": KIND_FLOAT, "string": KIND_BYTES}


@dataclass(frozen=True)
class ColumnPlan:
    """One output column decoded from the walked values of one key.

    Attributes:
        name: the column's name.
        key: the feature key it reads.
        kind: the Example list kind.
        arrow_type: the column's Arrow type.
        leaf: the type of its values (under the list levels).
        dims: the fixed-size list levels, outermost first (``()``: none).
        variable: an outermost list level of any length.
        missing: what a record without the feature gives.
        default: the flat default values (``missing == "default"``).
        role: TensorFlow's role of the key (its wording of a type mismatch).
        spec: the ``tfe`` spec it follows (TensorFlow's errors are raised), or ``None``
            for a column of an Arrow schema.
    """

    name: str
    key: str
    kind: int
    arrow_type: Any
    leaf: Any
    dims: tuple[int, ...]
    variable: bool
    missing: Missing
    default: tuple[Any, ...] | None = None
    role: Role = "dense"
    spec: Any = None

    @property
    def width(self) -> int:
        """Values per row of the fixed part (1 for a plain column)."""
        return math.prod(self.dims)


@dataclass(frozen=True)
class NumpyPlan:
    """A column decoded by the numpy batch decoder (``spec``) and converted."""

    name: str
    spec: Any


@dataclass(frozen=True)
class NullPlan:
    """A column of Arrow's ``null`` type: every row is a null (nothing is decoded)."""

    name: str


Plan = ColumnPlan | NumpyPlan | NullPlan


def is_schema(features: object) -> bool:
    """Whether ``features`` is an Arrow schema (table semantics) rather than specs."""
    return isinstance(features, pa.Schema)


def unwrap(t: Any, where: str) -> tuple[Any, tuple[int, ...], bool, Any]:
    """``(leaf, fixed dims, variable, storage type)`` of a column type.

    A fixed-shape tensor extension type counts as its fixed-size list storage.

    Raises:
        InvalidArgumentError: a shape an Example cannot hold (a list inside a list, a
            struct, a map ...).
    """
    storage = t.storage_type if isinstance(t, pa.BaseExtensionType) else t
    inner = storage
    variable = False
    if (
        pa.types.is_list(inner)
        or pa.types.is_large_list(inner)
        or pa.types.is_list_view(inner)
        or pa.types.is_large_list_view(inner)
    ):
        variable = True
        inner = inner.value_type
    dims: list[int] = []
    while pa.types.is_fixed_size_list(inner):
        dims.append(inner.list_size)
        inner = inner.value_type
    if isinstance(inner, pa.BaseExtensionType):
        inner = inner.storage_type
        while pa.types.is_fixed_size_list(inner):
            dims.append(inner.list_size)
            inner = inner.value_type
    if pa.types.is_list(inner) or pa.types.is_large_list(inner):
        raise InvalidArgumentError(
            f"{where}: type {t} nests a list inside a list; an Example feature is one "
            "flat list, so only the outermost level may vary (fixed-size lists inside "
            "are fine): use fixed-size inner lists, or write a SequenceExample"
        )
    kind_of(inner, where)
    return inner, tuple(dims), variable, storage


def _from_field(f: Any) -> ColumnPlan:
    where = f"column {f.name!r}"
    leaf, dims, variable, _ = unwrap(f.type, where)
    return ColumnPlan(
        name=f.name,
        key=f.name,
        kind=kind_of(leaf, where),
        arrow_type=f.type,
        leaf=leaf,
        dims=dims,
        variable=variable,
        missing="null" if f.nullable else "error",
    )


def _nested(leaf: Any, dims: tuple[int, ...]) -> Any:
    out = leaf
    for d in reversed(dims):
        out = pa.list_(out, d)
    return out


def _from_spec(name: str, spec: Any) -> Plan:
    if isinstance(spec, FixedLenFeature):
        kind = _KIND[spec.dtype]
        has_default = bool(spec.default_value)  # TensorFlow: no elements, no default
        return ColumnPlan(
            name=name,
            key=name,
            kind=kind,
            arrow_type=_nested(_LEAF[kind], spec.shape),
            leaf=_LEAF[kind],
            dims=spec.shape,
            variable=False,
            missing="default" if has_default else "error",
            default=spec.default_value if has_default else None,
            spec=spec,
        )
    if isinstance(spec, FixedLenSequenceFeature):
        kind = _KIND[spec.dtype]
        return ColumnPlan(
            name=name,
            key=name,
            kind=kind,
            arrow_type=pa.list_(_nested(_LEAF[kind], spec.shape)),
            leaf=_LEAF[kind],
            dims=spec.shape,
            variable=True,
            missing="empty",
            spec=spec,
        )
    if isinstance(spec, VarLenFeature) or (isinstance(spec, RaggedFeature) and not spec.partitions):
        kind = _KIND[spec.dtype]
        large = isinstance(spec, RaggedFeature) and spec.row_splits_dtype == "int64"
        key = (spec.value_key or name) if isinstance(spec, RaggedFeature) else name
        return ColumnPlan(
            name=name,
            key=key,
            kind=kind,
            arrow_type=(pa.large_list if large else pa.list_)(_LEAF[kind]),
            leaf=_LEAF[kind],
            dims=(),
            variable=True,
            missing="empty",
            role="sparse" if isinstance(spec, VarLenFeature) else "ragged",
            spec=spec,
        )
    return NumpyPlan(name, spec)


def plan_of(features: Any, columns: list[str] | None = None) -> list[Plan]:
    """The plans of the columns of ``features`` (specs or an Arrow schema), projected
    to ``columns`` (in that order) when given.

    Raises:
        InvalidArgumentError: a column not in ``features``, a type an Example cannot
            hold, or two columns that read one key with different kinds.
    """
    if is_schema(features):
        fields = {f.name: f for f in features}
        names = list(fields) if columns is None else columns
        _check_names(names, fields)
        plans: list[Plan] = [
            NullPlan(c) if pa.types.is_null(fields[c].type) else _from_field(fields[c])
            for c in names
        ]
    else:
        specs = as_feature_specs(dict(features))
        names = list(specs) if columns is None else columns
        _check_names(names, specs)
        plans = [_from_spec(c, specs[c]) for c in names]
    kinds: dict[str, tuple[int, str]] = {}
    for p in plans:
        if isinstance(p, ColumnPlan):
            seen = kinds.setdefault(p.key, (p.kind, p.name))
            if seen[0] != p.kind:
                raise InvalidArgumentError(
                    f"columns {seen[1]!r} and {p.name!r} read feature {p.key!r} with two "
                    "different value types"
                )
    return plans


def _check_names(names: list[str], known: Mapping[str, Any]) -> None:
    if not names:
        raise InvalidArgumentError("no column to read: name at least one")
    missing = [c for c in names if c not in known]
    if missing:
        raise InvalidArgumentError(
            f"columns {missing} are not among the features ({sorted(known)[:20]})"
        )
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"a column is named twice in {names}")
