"""Hypothesis strategies: large batches of Examples that share a few byte layouts.

Real files hold many records written from one schema, so most records of a chunk have
the same layout and differ only in their values. :func:`layout_batches` draws such
batches — a few layouts (key order, value counts, int64 varint widths, bytes lengths),
many records per layout with fresh values of the same widths, and some odd records —
to exercise the template decoder (:mod:`tfrecord_engine.example.template`) next to
the lockstep walk and the exact path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..example.encode import encode_example
from ..example.specs import FeatureSpec, FixedLenFeature, VarLenFeature

__all__ = ["LayoutBatch", "layout_batches"]

# Varint width classes of int64 values: [lo, hi] per width; width 10 is negative.
_WIDTH_RANGES = [(0, 127)] + [(1 << (7 * w), (1 << (7 * (w + 1))) - 1) for w in range(1, 9)]
_DTYPES = ("int64", "float32", "string")


@dataclass(frozen=True)
class LayoutBatch:
    """Feature specs and serialized Examples (most sharing one of a few layouts)."""

    features: dict[str, FeatureSpec]
    records: list[bytes]


@dataclass(frozen=True)
class _Layout:
    order: tuple[str, ...]
    shapes: dict[str, tuple[str, tuple[int, ...]]]  # key -> (dtype, widths or lengths)
    jitter: str | None  # an int64 key whose varint widths are drawn afresh per record


def _int_of_width(draw: st.DrawFn, width: int) -> int:
    if width == 10:
        return draw(st.integers(-(2**63), -1))
    lo, hi = _WIDTH_RANGES[width - 1]
    return draw(st.integers(lo, min(hi, 2**63 - 1)))


def _values(draw: st.DrawFn, dtype: str, shape: tuple[int, ...]) -> Any:
    if dtype == "int64":
        return np.array([_int_of_width(draw, w) for w in shape], np.int64)
    if dtype == "float32":
        floats = st.floats(width=32, allow_nan=False)
        return np.array([draw(floats) for _ in shape], np.float32)
    out = np.empty(len(shape), dtype=object)  # typed even when empty
    out[:] = [draw(st.binary(min_size=n, max_size=n)) for n in shape]
    return out


@st.composite
def _layout(draw: st.DrawFn, features: dict[str, FeatureSpec], noise: bool) -> _Layout:
    shapes: dict[str, tuple[str, tuple[int, ...]]] = {}
    for key, spec in features.items():
        if isinstance(spec, FixedLenFeature):
            count = int(np.prod(spec.shape))
        elif draw(st.integers(0, 5)) == 0:
            continue  # a VarLen key may be missing
        else:
            count = draw(st.integers(0, 6))
        if spec.dtype == "int64":
            widths = st.integers(1, 10) | st.sampled_from([1, 1, 2, 6])
            shape: tuple[int, ...] = tuple(draw(widths) for _ in range(count))
        elif spec.dtype == "string":
            shape = tuple(draw(st.sampled_from([0, 1, 3, 8, 40])) for _ in range(count))
        else:
            shape = (0,) * count
        shapes[key] = (spec.dtype, shape)
    if noise:
        shapes["zz_noise"] = ("int64", (draw(st.integers(1, 3)),))
    order = tuple(draw(st.permutations(sorted(shapes))))
    ints = sorted(k for k, (dtype, shape) in shapes.items() if dtype == "int64" and shape)
    jitter = draw(st.none() | st.sampled_from(ints)) if ints else None
    return _Layout(order, shapes, jitter)


@st.composite
def layout_batches(
    draw: st.DrawFn, *, min_records: int = 64, max_records: int = 160
) -> LayoutBatch:
    """A batch of ``min_records..max_records`` Examples drawn from 1-3 layouts.

    About one record in ten is drawn from a layout of its own (another key order,
    other counts or widths), so chunks mix template groups with walked records. A
    layout may "jitter" one int64 list: its varint widths are drawn per record, as
    for ids spread over a large range (flexible templates).
    """
    names = draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=4, unique=True))
    features: dict[str, FeatureSpec] = {}
    for name in names:
        dtype = draw(st.sampled_from(_DTYPES))
        if draw(st.booleans()):
            size = draw(st.integers(1, 4)) if dtype != "string" else 1
            dims: list[int] = [] if size == 1 and draw(st.booleans()) else [size]
            features[name] = FixedLenFeature(dims, dtype)
        else:
            features[name] = VarLenFeature(dtype)
    noise = draw(st.booleans())
    layouts = draw(st.lists(_layout(features, noise), min_size=1, max_size=3))
    n = draw(st.integers(min_records, max_records))
    records = []
    for _ in range(n):
        odd = draw(st.integers(0, 9)) == 0
        layout = draw(_layout(features, noise)) if odd else draw(st.sampled_from(layouts))
        record: dict[str, Any] = {}
        for key in layout.order:
            dtype, shape = layout.shapes[key]
            if key == layout.jitter:
                shape = tuple(draw(st.sampled_from([5, 6, 6, 6, 2])) for _ in shape)
            record[key] = _values(draw, dtype, shape)
        records.append(encode_example(record))
    return LayoutBatch(features, records)
