"""``collate``'s padding of ``RaggedValue`` samples: the numpy path (coordinates from the
row splits) against the nested lists it replaces, on generated ragged values of one to
three ragged levels, empty rows and empty samples included."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.data import collate as collate_module


@st.composite
def ragged_values(draw: st.DrawFn, depth: int, dtype: str) -> tfe.RaggedValue:
    rows = draw(st.integers(0, 4))
    counts = [draw(st.lists(st.integers(0, 3), min_size=rows, max_size=rows))]
    for _ in range(depth - 1):
        n = sum(counts[-1])
        counts.append(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    values: Any = np.arange(sum(counts[-1]), dtype=dtype) * 3 - 5
    for level in reversed(counts):
        values = tfe.RaggedValue(values, np.concatenate([[0], np.cumsum(level)]).astype(np.int32))
    assert isinstance(values, tfe.RaggedValue)
    return values


@st.composite
def batches(draw: st.DrawFn) -> list[tfe.RaggedValue]:
    depth = draw(st.integers(1, 3))
    dtype = draw(st.sampled_from(["int64", "float32"]))
    return draw(st.lists(ragged_values(depth, dtype), min_size=1, max_size=5))


def _nested(samples: list[tfe.RaggedValue], pad: float) -> Any:
    nested = [s.to_list() for s in samples]
    shape: list[int] = []
    for rows in nested:
        collate_module._max_shape(rows, 0, shape)
    shape += [0] * (_depth(samples[0]) + 1 - len(shape))  # (the rank is the spec's)
    flat = [np.asarray(s.flat_values) for s in samples]
    values = collate_module._full((len(samples), *shape), pad, np.result_type(*flat))
    mask = np.zeros(values.shape, np.bool_)
    for i, rows in enumerate(nested):
        collate_module._put(values, mask, rows, (i,))
    return values, mask


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, tfe.RaggedValue):
        depth, value = depth + 1, value.values
    return depth


@given(batches(), st.sampled_from([0, -1]))
def test_ragged_padding_by_coordinates_equals_the_nested_lists(
    samples: list[tfe.RaggedValue], pad: int
) -> None:
    flat = [np.asarray(s.flat_values) for s in samples]
    got = collate_module._ragged_by_coordinates(samples, flat, pad)
    assert got is not None
    values, mask = _nested(samples, pad)
    assert got.values.dtype == values.dtype
    assert got.values.shape == values.shape
    assert np.array_equal(got.values, values)
    assert np.array_equal(got.mask, mask)
    assert got.lengths.tolist() == [len(s.row_splits) - 1 for s in samples]
    assert got.values.ndim == 2 + _depth(samples[0])


def test_a_batch_without_rows_keeps_the_specs_rank() -> None:
    # [batch, rows, values] whichever records the batch holds, as padded batches and
    # TensorFlow's to_tensor() give it (the rank was 2 where no record had a row).
    empty = tfe.RaggedValue(np.zeros(0, np.int64), np.zeros(1, np.int32))
    full = tfe.RaggedValue(np.arange(3), np.array([0, 2, 3], np.int32))
    assert tfe.collate([{"r": empty}, {"r": empty}], format="numpy")["r"].values.shape == (2, 0, 0)
    assert tfe.collate([{"r": empty}, {"r": full}], format="numpy")["r"].values.shape == (2, 2, 2)
    deep = tfe.RaggedValue(empty, np.zeros(1, np.int32))
    assert tfe.collate([{"r": deep}], format="numpy")["r"].values.shape == (1, 0, 0, 0)
    # Malformed splits take the nested lists: the same rank.
    bad = tfe.RaggedValue(np.zeros(0, np.int64), np.array([0, 1], np.int32))
    assert collate_module._ragged_by_coordinates([bad], [np.zeros(0, np.int64)], 0) is None
    assert tfe.collate([{"r": bad}], format="numpy")["r"].values.ndim == 3


def test_inconsistent_row_splits_take_the_nested_lists() -> None:
    bad = tfe.RaggedValue(np.arange(3), np.array([0, 1, 5], np.int32))  # (validate=False)
    good = tfe.RaggedValue(np.arange(2), np.array([0, 2], np.int32))
    flat = [np.asarray(s.flat_values) for s in (bad, good)]
    assert collate_module._ragged_by_coordinates([bad, good], flat, 0) is None
    out = tfe.collate([{"r": bad}, {"r": good}])["r"]
    values, mask = _nested([bad, good], 0)
    assert np.array_equal(out.values, values)
    assert np.array_equal(out.mask, mask)
