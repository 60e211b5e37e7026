"""Hypothesis strategies for Arrow tables that TFRecords hold: every column type and shape
:func:`tfrecord_engine.arrow.write` takes, with null rows.

Column types: the integers (``uint64`` within int64's range), bool, the floats (float64
and float16 values that float32 holds exactly), strings and binaries (large and fixed-
size too) and temporal types. Shapes: a plain value, a list, a fixed-size list, nested
fixed-size lists, and a list of fixed-size lists. Floats are finite or infinite, never
NaN (``Table.equals`` counts NaN unequal to itself).

Needs pyarrow (the ``arrow`` extra) besides Hypothesis.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ..errors import MissingDependencyError, install_hint

if importlib.util.find_spec("pyarrow") is None:
    raise MissingDependencyError(
        f"tfrecord_engine.testing.arrow_tables needs pyarrow: {install_hint('arrow')}"
    )

import pyarrow as pa
from hypothesis import strategies as st

__all__ = ["LEAF_TYPES", "SHAPES", "arrow_tables", "column_types"]

#: Every leaf type the writer takes.
LEAF_TYPES: tuple[Any, ...] = (
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.bool_(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.binary(3),
    pa.date32(),
    pa.timestamp("us"),
    pa.duration("ms"),
)
#: The shapes a column takes (see :func:`column_types`).
SHAPES = ("plain", "list", "fixed", "fixed2", "list_of_fixed")


def _values(t: Any) -> st.SearchStrategy[Any]:
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_integer(t):
        if t == pa.uint64():
            return st.integers(0, 2**63 - 1)
        bits = t.bit_width
        if pa.types.is_signed_integer(t):
            return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        return st.integers(0, 2**bits - 1)
    if pa.types.is_floating(t):
        if t == pa.float16():
            floats = st.floats(width=16, allow_nan=False)
            import numpy as np  # noqa: PLC0415 - float16 values go in as numpy scalars

            return floats.map(np.float16)
        return st.floats(width=32, allow_nan=False)
    if pa.types.is_fixed_size_binary(t):
        return st.binary(min_size=t.byte_width, max_size=t.byte_width)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return st.text(max_size=6)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return st.binary(max_size=6)
    # date32 (days), timestamp (us), duration (ms): their integer storage.
    return st.integers(-(2**31), 2**31 - 1)


@st.composite
def column_types(draw: st.DrawFn) -> tuple[Any, Any, str, tuple[int, ...]]:
    """``(column type, leaf type, shape, fixed dims)``."""
    leaf = draw(st.sampled_from(LEAF_TYPES))
    shape = draw(st.sampled_from(SHAPES))
    k = draw(st.integers(1, 3))
    m = draw(st.integers(1, 2))
    if shape == "plain":
        return leaf, leaf, shape, ()
    if shape == "list":
        large = draw(st.booleans())
        return (pa.large_list if large else pa.list_)(leaf), leaf, shape, ()
    if shape == "fixed":
        return pa.list_(leaf, k), leaf, shape, (k,)
    if shape == "fixed2":
        return pa.list_(pa.list_(leaf, m), k), leaf, shape, (k, m)
    return pa.list_(pa.list_(leaf, k)), leaf, shape, (k,)


def _nest(flat: list[Any], dims: tuple[int, ...]) -> list[Any]:
    for d in reversed(dims[1:]):
        flat = [flat[i : i + d] for i in range(0, len(flat), d)]
    return flat


@st.composite
def _cell(draw: st.DrawFn, leaf: Any, shape: str, dims: tuple[int, ...], nulls: bool) -> Any:
    if nulls and draw(st.integers(0, 4)) == 0:
        return None
    values = _values(leaf)
    if shape == "plain":
        return draw(values)
    if shape == "list":
        return draw(st.lists(values, max_size=4))
    if shape in ("fixed", "fixed2"):
        count = 1
        for d in dims:
            count *= d
        return _nest(draw(st.lists(values, min_size=count, max_size=count)), dims)
    rows = draw(st.integers(0, 3))
    flat = draw(st.lists(values, min_size=rows * dims[0], max_size=rows * dims[0]))
    return [flat[i : i + dims[0]] for i in range(0, len(flat), dims[0])]


@st.composite
def arrow_tables(draw: st.DrawFn, *, max_rows: int = 8, max_columns: int = 4) -> Any:
    """A ``pyarrow.Table`` of 0 to ``max_rows`` rows and 1 to ``max_columns`` columns of
    any type and shape the writer takes; some columns have null rows."""
    names = draw(
        st.lists(
            st.text("abcdefgh_", min_size=1, max_size=5),
            min_size=1,
            max_size=max_columns,
            unique=True,
        )
    )
    n = draw(st.integers(0, max_rows))
    arrays = []
    for _ in names:
        t, leaf, shape, dims = draw(column_types())
        nulls = draw(st.booleans())
        cells = [draw(_cell(leaf, shape, dims, nulls)) for _ in range(n)]
        if pa.types.is_temporal(leaf):
            storage = pa.int32() if leaf == pa.date32() else pa.int64()
            arrays.append(pa.array(cells, _retype(t, storage)).cast(t))
        else:
            arrays.append(pa.array(cells, t))
    return pa.table(dict(zip(names, arrays, strict=True)))


def _retype(t: Any, leaf: Any) -> Any:
    """``t`` with its leaf type replaced by ``leaf``."""
    if pa.types.is_fixed_size_list(t):
        return pa.list_(_retype(t.value_type, leaf), t.list_size)
    if pa.types.is_large_list(t):
        return pa.large_list(_retype(t.value_type, leaf))
    if pa.types.is_list(t):
        return pa.list_(_retype(t.value_type, leaf))
    return leaf
