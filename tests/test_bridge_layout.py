"""The bridge's chunk packing without copies: consecutive batch views become one view."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

if importlib.util.find_spec("tensorflow") is None:  # tfrecord_bridge refuses to import
    pytest.skip("the bridge needs TensorFlow", allow_module_level=True)

from tfrecord_bridge.layout import _rows_of_one_array

DTYPES = [np.int64, np.float32, np.bool_, object]


def _chunk(dtype: Any, rows: int, inner: list[int]) -> np.ndarray[Any, Any]:
    flat = np.arange(rows * int(np.prod(inner)))
    if dtype is object:
        return np.array([str(i).encode() for i in flat], dtype=object).reshape(rows, *inner)
    return flat.astype(dtype).reshape(rows, *inner)


@given(
    st.sampled_from(DTYPES),
    st.integers(1, 5),
    st.integers(1, 6),
    st.lists(st.integers(0, 3), max_size=2),
    st.integers(0, 3),
)
def test_consecutive_batches_are_one_view(
    dtype: Any, batches: int, size: int, inner: list[int], skip: int
) -> None:
    whole = _chunk(dtype, skip + batches * size, inner)
    parts = tuple(whole[skip + i * size : skip + (i + 1) * size] for i in range(batches))
    got = _rows_of_one_array(parts)
    if whole.size == 0:
        assert got is None  # nothing to save: stacking empty arrays costs nothing
        return
    assert got is not None
    assert got.shape == (batches, size, *inner)
    assert got.dtype == whole.dtype
    assert got.tolist() == np.stack(parts).tolist()
    assert np.shares_memory(got, whole), "no copy"
    assert not got.flags.writeable


@given(st.sampled_from(DTYPES), st.integers(2, 5), st.integers(1, 4), st.data())
def test_anything_else_is_left_to_stack(
    dtype: Any, batches: int, size: int, data: st.DataObject
) -> None:
    whole = _chunk(dtype, batches * size + 1, [2])
    parts = [whole[i * size : (i + 1) * size] for i in range(batches)]
    how = data.draw(st.sampled_from(["gap", "order", "other_base", "copy", "shape"]))
    i = data.draw(st.integers(1, batches - 1))
    if how == "gap":  # a row left out between two batches
        parts[i:] = [whole[j * size + 1 : (j + 1) * size + 1] for j in range(i, batches)]
    elif how == "order":
        parts[i - 1], parts[i] = parts[i], parts[i - 1]
    elif how == "other_base":
        parts[i] = _chunk(dtype, size, [2])[:size]
    elif how == "copy":
        parts[0] = parts[0].copy()
    else:
        parts[i] = whole[i * size : (i + 1) * size + 1]
    assert _rows_of_one_array(tuple(parts)) is None


def test_views_of_memory_the_array_does_not_own_are_copied() -> None:
    # E.g. values read straight from a mapped file: the file may be closed while
    # TensorFlow still holds the tensor, so those are never handed over as views.
    buf = bytearray(np.arange(8, dtype=np.int64).tobytes())
    whole = np.frombuffer(buf, dtype=np.int64)
    parts = (whole[0:4], whole[4:8])
    assert parts[0].base is parts[1].base
    assert _rows_of_one_array(parts) is None
